"""``qd.BufferView``: a sub-range of a 1-d ``qd.ndarray`` passed to a kernel, as Quadrants
has it: ``data[16:48]``, ``qd.BufferView(data, offset=16, size=32)``, ``view[4:12]`` (a
subview), and ``v: qd.BufferView`` / ``qd.BufferView[qd.f32]`` as a kernel parameter, where
``v[i]`` is ``data[offset + i]`` and ``v.size`` / ``v.shape[0]`` the view's length.

A kernel gets the view as the 1-d array it is (the runtime binds the range of the backing
storage), so every target sees a plain ndarray parameter."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike

    from ..ir.types import DType
    from .matrix import MatrixType
    from .types import Tensor

from . import host
from .field import host_value
from .kernel import NdarrayAnnotation


class BufferView:
    """``size`` elements of the 1-d ndarray ``ndarray`` from ``offset`` on, sharing its memory."""

    _qd_view_annotation = True  # bare, as a kernel parameter's annotation: a 1-d ndarray

    def __init__(self, ndarray: Tensor | BufferView, offset: int = 0, size: int | None = None):
        if isinstance(ndarray, BufferView):  # a view of a view: offsets add up
            offset, base = ndarray.offset + offset, ndarray
            ndarray, limit = ndarray.ndarray, base.offset + base.size
        else:
            limit = None
        if not host.is_ndarray(ndarray) or ndarray.ndim != 1:
            raise ValueError("a BufferView is a range of a 1-d qd.ndarray")
        if ndarray.__dict__.get("_grad") is not None:
            raise TypeError("a BufferView of an ndarray made with needs_grad=True is not supported")
        limit = ndarray.shape[0] if limit is None else limit
        size = limit - offset if size is None else size
        if offset < 0 or size < 0 or offset + size > limit:
            raise ValueError(f"BufferView(offset={offset}, size={size}) does not fit in the {limit} elements it views")
        self.ndarray, self.offset, self.size = ndarray, int(offset), int(size)

    @property
    def shape(self) -> tuple[int]:
        return (self.size,)

    @property
    def dtype(self) -> DType | MatrixType:
        return self.ndarray.dtype

    def subview(self, offset: int, size: int | None = None) -> BufferView:
        return BufferView(self, offset, size)

    def data(self) -> np.ndarray:
        """The viewed range of the backing storage (a NumPy view, up to date on the host)."""
        whole = self.ndarray._read()
        return whole[self.offset:self.offset + self.size]

    def __getitem__(self, index: int | slice):
        if isinstance(index, slice):
            return BufferView(self, *_range(index, self.size))
        return host_value(self.data()[index], self.ndarray.element_shape)

    def __setitem__(self, index: int | slice, value: object) -> None:
        self.data()[index] = value
        self.ndarray._written()

    def to_numpy(self) -> np.ndarray:
        return self.data().copy()

    def from_numpy(self, array: ArrayLike) -> None:
        self.data()[...] = array
        self.ndarray._written()

    def fill(self, value: object) -> None:
        self.data()[...] = value
        self.ndarray._written()

    def __class_getitem__(cls, dtype: DType | MatrixType | type):
        """``qd.BufferView[qd.f32]``: the parameter annotation with its element type."""
        return NdarrayAnnotation(dtype, 1)

    def __repr__(self) -> str:
        return f"qd.BufferView({self.ndarray!r}, offset={self.offset}, size={self.size})"


def _range(index: slice, n: int) -> tuple[int, int]:
    """A slice of n elements as (offset, size); only step 1, as Quadrants allows."""
    start, stop, step = index.indices(n)
    if step != 1:
        raise ValueError(f"a BufferView is a contiguous range: a slice with step {step} is not one")
    return start, max(stop - start, 0)

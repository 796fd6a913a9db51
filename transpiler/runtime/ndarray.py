"""``qd.ndarray``: an array a kernel can take. On Vulkan its storage is device memory the
host sees mapped, which kernels bind in place; on CUDA, device memory mirrored by a host
array, copied across only when the other side reads it; elsewhere host memory each runtime
copies to and from its device around a launch."""
from __future__ import annotations

import weakref

import numpy as np

from ..errors import TranspileError
from ..ir.types import DType
from ..lang.buffer_view import BufferView
from ..lang.external import from_torch, to_dlpack, to_torch
from ..lang.field import ElementDims, _index, companion, current_program, host_value, wrapped
from ..lang.matrix import MatrixType

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    import torch
    from numpy.typing import ArrayLike, DTypeLike


class NdarrayIndexError(TranspileError, IndexError):
    """``x[i]`` of a 2-d ndarray in Python scope: an IndexError, and Quadrants' index error
    class (TranspileError here)."""


_live: weakref.WeakSet = weakref.WeakSet()  # every ndarray alive (Ndarray.count_live)


class Ndarray(ElementDims):
    """``qd.ndarray(dtype, shape)``: ``dtype`` a scalar type or a vector/matrix type (then the
    data is NumPy's ``(*shape, *element_shape)``, and ``shape`` the outer shape). As in
    Quadrants, ``.dtype`` is the scalar type, ``.element_type`` what it was made with, and a
    vector / matrix ndarray has ``.n`` / ``.m``."""

    def __init__(self, dtype: DType | MatrixType, shape: int | Sequence[int], needs_grad: bool = False,
                 needs_dual: bool = False):
        from . import array_storage, python_dtype  # noqa: PLC0415 - runtime/__init__ imports this module first

        element_shape: tuple[int, ...] = ()
        scalar = dtype
        if isinstance(dtype, MatrixType):  # (vector(2, float): the float of qd.init's default_fp)
            element_shape = dtype.shape
            scalar = python_dtype(dtype.dtype)
        if not isinstance(scalar, DType):
            raise TypeError(f"qd.ndarray needs a qd dtype such as qd.f32 or qd.math.vec3, got {dtype!r}")
        dims = (shape,) if not isinstance(shape, (tuple, list)) else tuple(shape)
        if not all(hasattr(n, "__index__") and not isinstance(n, bool) and 1 <= n.__index__() < 2**31 for n in dims):
            # (as Quadrants: a zero, fractional or 2**31 extent is refused, not rounded or wrapped)
            raise RuntimeError(f"{shape!r} is not a valid shape for ndarray: each extent is an int from 1 to 2**31 - 1")
        shape = tuple(n.__index__() for n in dims)
        self.dtype = scalar
        self.element_type = dtype
        self.shape = shape
        self.element_shape = element_shape
        self.data, self._owner = array_storage(shape + element_shape, scalar.np_dtype)
        self._program = current_program()
        _live.add(self)
        for kind, wanted in (("grad", needs_grad), ("dual", needs_dual)):
            if wanted and scalar.is_float:  # an ndarray of the same shape and type (see lang.field.companion)
                self.__dict__["_" + kind] = Ndarray(dtype, shape)

    grad, dual = companion("grad", "qd.ndarray"), companion("dual", "qd.ndarray")

    @staticmethod
    def count_live() -> int:
        """How many ndarrays made since the last qd.init are still alive (Quadrants' program
        counts them: ``prog._get_num_ndarrays()``)."""
        program = current_program()
        return sum(1 for a in list(_live) if a._program == program)

    # Met as a Python value in a kernel (an attribute of a data-oriented instance), it is bound
    # like a field: these say how (see frontend/fields.py).
    _qd_bound_like_field = True
    placed = True
    name = None

    def storage(self) -> np.ndarray:
        return self.data

    def _read(self) -> np.ndarray:
        if self._owner is not None:
            self._owner.host_read(self.data)
        return self.data

    def _written(self) -> None:
        if self._owner is not None:
            self._owner.host_written(self.data)

    @property
    def ndim(self) -> int:
        return len(self.shape)


    def from_numpy(self, arr: ArrayLike) -> None:
        arr = np.asarray(arr)
        if arr.shape != self.data.shape:
            raise ValueError(f"shape {arr.shape} does not match the ndarray's {self.data.shape}")
        self.data[...] = arr.astype(self.data.dtype, copy=False)
        self._written()

    def to_numpy(self, dtype: DType | DTypeLike = None, *, copy: bool | None = True) -> np.ndarray:
        """The elements (``dtype``: converted): a copy; with ``copy=False`` the ndarray's own
        memory, which an executor that keeps it on its device (Vulkan) refuses; ``None``: that
        memory where it can be, else a copy."""
        data = self._read()
        if copy is not True and self._owner is None and dtype is None:
            return data
        if copy is False:
            raise ValueError("qd.ndarray.to_numpy(copy=False): this executor keeps the ndarray on its device "
                             "(or a dtype conversion was asked for): use copy=True (the default) or copy=None")
        out = data.copy()
        return out if dtype is None else out.astype(getattr(dtype, "np_dtype", dtype))

    def to_torch(self, device: str | torch.device | None = None, *, copy: bool | None = True) -> torch.Tensor:
        """The elements as a torch tensor: ``copy=True`` an independent copy, ``False`` the
        ndarray's own memory (a CPU tensor; not where the executor keeps it on its device),
        ``None`` that where it can be."""
        return to_torch(self._read(), device, copy, self._owner is None, "qd.ndarray")

    def from_torch(self, tensor: torch.Tensor) -> None:
        self.from_numpy(from_torch(tensor))

    def to_dlpack(self, versioned: bool = False) -> object:
        """A DLPack capsule of the ndarray's memory (v0 unless ``versioned``)."""
        if self._owner is not None:
            raise ValueError("qd.ndarray.to_dlpack(): this executor keeps the ndarray on its device, where DLPack "
                             "cannot reach it: use to_numpy() or to_torch()")
        return to_dlpack(self.data, versioned)

    def fill(self, value: object) -> None:
        """Every element set to ``value``: a scalar, or a vector / matrix of the element's shape."""
        value = value if np.isscalar(value) else np.asarray(value, dtype=self.data.dtype)
        if np.shape(value) not in ((), self.element_shape):
            raise ValueError(f"qd.ndarray.fill(): the value's shape {np.shape(value)} is not the element's "
                             f"{self.element_shape}")
        self.data[...] = wrapped(value, self.data.dtype)
        self._written()

    def copy_from(self, other: Ndarray) -> None:
        """The elements of ``other`` (an ndarray of the same shape and element type) copied in."""
        if not isinstance(other, Ndarray) or (other.shape, other.element_type) != (self.shape, self.element_type):
            raise ValueError(f"qd.ndarray.copy_from(): {self!r} cannot copy from {other!r}: the shapes and "
                             "element types must be the same")
        self.data[...] = other._read()
        self._written()

    def __deepcopy__(self, memo: dict) -> Ndarray:
        """A new ndarray with this one's elements (and a copy of its grad / dual): made by the
        current executor, as ``qd.ndarray`` makes one, since the storage may be its device
        memory, which the executor that owns it (not a picklable value) must allocate."""
        out = Ndarray(self.element_type, self.shape)
        out.copy_from(self)
        for kind in ("_grad", "_dual"):
            if kind in self.__dict__:
                out.__dict__[kind] = self.__dict__[kind].__deepcopy__(memo)
        memo[id(self)] = out
        return out

    def __getitem__(self, idx: object):
        """An element (``x[i, j]``, ``x[None]`` of a 0-d one, ``x[I]`` with an index vector) as
        a Python scalar, or a vector / matrix view that writes through; a range of a 1-d one
        (``x[16:48]``) a qd.BufferView a kernel can take, as in Quadrants; another slice NumPy's."""
        if isinstance(idx, slice) and self.ndim == 1:
            return BufferView(self)[idx]
        return host_value(self._read()[self._element(idx)], self.element_shape)

    def __setitem__(self, idx: object, value: object):
        data = self._read()
        data[self._element(idx)] = wrapped(value, data.dtype)  # the rest of the array stays as the device has it
        self._written()

    def _element(self, idx: object) -> object:
        """The NumPy index of one element: integer indices, one per dimension, as Quadrants
        takes them (``x[0]`` of a 2-d ndarray is refused, not a row); slices are NumPy's."""
        index = _index(idx)
        items = index if isinstance(index, tuple) else (index,)
        if all(hasattr(i, "__index__") for i in items) and len(items) != self.ndim:
            raise NdarrayIndexError(f"{self.ndim}d ndarray indexed with {len(items)}d indices: {idx!r}; "
                                    f"give one index per dimension of {self.shape}")
        return index

    def __repr__(self) -> str:
        return f"qd.ndarray({self.element_type!r}, {self.shape})"


def ndarray(dtype: DType | MatrixType, shape: int | Sequence[int]) -> Ndarray:
    return Ndarray(dtype, shape)

"""``qd.ndarray``: an array a kernel can take, backed by host memory that every runtime
copies to and from its device around a launch."""
from __future__ import annotations

import numpy as np

from ..ir.types import DType


class Ndarray:
    def __init__(self, dtype: DType, shape):
        if not isinstance(dtype, DType):
            raise TypeError(f"qd.ndarray needs a qd dtype such as qd.f32, got {dtype!r}")
        shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
        self.dtype = dtype
        self.shape = shape
        self.data = np.zeros(shape, dtype=dtype.np_dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def from_numpy(self, arr) -> None:
        arr = np.asarray(arr)
        if arr.shape != self.shape:
            raise ValueError(f"shape {arr.shape} does not match the ndarray's {self.shape}")
        self.data[...] = arr.astype(self.dtype.np_dtype, copy=False)

    def to_numpy(self) -> np.ndarray:
        return self.data.copy()

    def fill(self, value) -> None:
        self.data.fill(value)

    def __getitem__(self, idx):
        return self.data[idx]

    def __setitem__(self, idx, value):
        self.data[idx] = value

    def __repr__(self) -> str:
        return f"qd.ndarray({self.dtype!r}, {self.shape})"


def ndarray(dtype: DType, shape) -> Ndarray:
    return Ndarray(dtype, shape)

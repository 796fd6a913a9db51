"""The NumPy array subclass a vector or matrix built in Python scope is (``V =
qd.math.vec2(1, 0)``, ``qd.Vector([0, -9.8])``): arithmetic on it stays NumPy's, and a kernel
that names it reads it as a constant vector or matrix, as Quadrants does. Imported on first
use (``matrix.host_matrix_class``), as NumPy is only imported when a value is built."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import StaticValueError, TranspileError
from ..ir.types import python_type
from .swizzle import SWIZZLE_SETS

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


class HostMatrix(np.ndarray):
    """A vector (1-d) or matrix (2-d) value of Python scope, with Quadrants' swizzles and
    Matrix methods."""

    _qd_host_matrix = True
    qd_dtype = None  # the dtype it was declared with; None: its values' (as literals in a kernel)

    # Swizzles, as Quadrants' Python-scope vectors have them: v.x, v.xy = ..., v.zyx += w
    def __getattr__(self, name: str):
        picked = self._swizzle(name)
        if picked is None:
            raise AttributeError(f"a vector or matrix has no attribute `{name}`")
        return self[picked[0]] if len(picked) == 1 else self[picked]

    def __setattr__(self, name: str, value: object) -> None:
        picked = self._swizzle(name)
        if picked is None:
            object.__setattr__(self, name, value)
            return
        if len(picked) > 1 and np.size(value) not in (1, len(picked)):
            raise RuntimeError(f"value len does not match the swizzle pattern={name}")
        self[picked[0] if len(picked) == 1 else picked] = value

    def _swizzle(self, name: str) -> list[int] | None:
        """The components a swizzle names (None: ``name`` is no swizzle)."""
        letters = next((s for s in SWIZZLE_SETS if name and all(c in s for c in name)), None)
        if letters is None or self.ndim != 1:
            return None
        if any(letters.index(c) >= self.shape[0] for c in name):
            have = tuple(letters[:self.shape[0]])
            raise TranspileError(f"vec{self.shape[0]} only has attributes={have}, got={tuple(name)}")
        return [letters.index(c) for c in name]

    def __array_finalize__(self, obj: object) -> None:
        self.qd_dtype = getattr(obj, "qd_dtype", None)

    def __bool__(self) -> bool:
        # `assert v == [1, 2]`, `list(m) == rows`: every component (NumPy refuses to
        # choose; Quadrants' Python-scope Matrix is always true, whatever it holds).
        return bool(np.asarray(self).all())

    # Quadrants' Python-scope Matrix methods, on the values.
    def norm(self, eps: float = 0) -> np.generic:
        return np.sqrt((self * self).sum() + eps)

    def norm_sqr(self) -> np.generic:
        return (self * self).sum()

    def norm_inv(self, eps: float = 0) -> np.generic:
        return 1 / self.norm(eps)

    def normalized(self, eps: float = 0) -> HostMatrix:
        # Quadrants' definition: eps added to the norm, not under the root as in norm(eps).
        with np.errstate(divide="ignore", invalid="ignore"):  # the zero vector: NaN, as in a kernel
            return (1 / (self.norm() + eps)) * self

    # Python's bool, as Quadrants' (NumPy's would be a 0-d array of this class); NumPy's own
    # arguments (np.all(m, axis=...), np.testing) still reach NumPy's reduction.
    def any(self, *args: Any, **kwargs: Any) -> Any:
        got = np.asarray(self).any(*args, **kwargs)
        return bool(got) if np.ndim(got) == 0 else got

    def all(self, *args: Any, **kwargs: Any) -> Any:
        got = np.asarray(self).all(*args, **kwargs)
        return bool(got) if np.ndim(got) == 0 else got

    def dot(self, other: ArrayLike) -> Any:
        return np.dot(self, other)

    def cross(self, other: ArrayLike) -> int | float | HostMatrix:
        a, b = np.asarray(self), np.asarray(other)
        if a.shape == b.shape == (2,):  # 2-d vectors: the scalar
            return (a[0] * b[1] - a[1] * b[0]).item()
        return np.cross(a, b).view(type(self))

    def outer_product(self, other: ArrayLike) -> HostMatrix:
        return np.outer(np.asarray(self), np.asarray(other)).view(type(self))

    def trace(self) -> int | float:
        if self.ndim != 2 or self.shape[0] != self.shape[1]:  # (NumPy would sum the diagonal it has)
            raise StaticValueError(f"`.trace()` expected a square matrix, got shape {self.shape}")
        return np.asarray(self).trace().item()

    def determinant(self) -> float:
        return np.linalg.det(np.asarray(self)).item()

    def inverse(self) -> HostMatrix:
        return np.linalg.inv(np.asarray(self)).view(type(self))

    def frobenius_inner(self, other: ArrayLike) -> int | float:
        return (np.asarray(self) * np.asarray(other)).sum().item()

    def cast(self, dtype: Any) -> HostMatrix:
        t = python_type(dtype) or dtype
        out = np.asarray(self).astype(t.np_dtype).view(type(self))
        out.qd_dtype = t
        return out

    def get_shape(self) -> tuple[int, ...]:
        return self.shape

    @property
    def n(self) -> int:
        return self.shape[0]

    @property
    def m(self) -> int:
        return self.shape[1] if self.ndim == 2 else 1

    @property
    def entries(self) -> np.ndarray:
        return np.asarray(self)

    def to_list(self) -> list:
        return np.asarray(self).tolist()

    def to_numpy(self) -> np.ndarray:
        return np.asarray(self).copy()

"""Small vectors, matrices and structs as Quadrants spells them: ``qd.types.vector(n, dtype)``,
``qd.types.matrix(n, m, dtype)``, ``qd.math.vec3`` and friends, ``qd.Vector([...])``,
``qd.Matrix([[...]])``, ``qd.types.struct(...)`` and ``@qd.dataclass``.

In a kernel a vector or matrix is its scalars (the frontend lowers every operation on them
component by component, ``frontend/matrices.py``), so every target gets plain scalar code
and an ndarray of them is laid out as NumPy lays out its ``(..., n, m)`` array. In Python
scope the types build NumPy arrays, so a value can be handed to a kernel.
"""
from __future__ import annotations

import inspect
from typing import Any

from ..ir.types import DType
from .kernel import Func, builtin, comptime


class MatrixType:
    """``qd.types.vector(n, dtype)`` (shape ``(n,)``) or ``qd.types.matrix(n, m, dtype)``
    (shape ``(n, m)``). ``dtype`` may be Python's ``float`` or ``int`` (qd.init's defaults);
    ``None`` leaves it to the values. Calling it builds a value: ``vec3(1, 2, 3)``,
    ``vec3(0)`` (every component), ``mat2([[1, 0], [0, 1]])``."""

    _qd_builtin = "matrix_type"

    def __init__(self, shape: tuple[int, ...], dtype: Any = None, name: str | None = None):
        if not 1 <= len(shape) <= 2 or not all(isinstance(k, int) and 1 <= k <= 32 for k in shape):
            raise ValueError(f"a vector or matrix has 1 to 32 rows and columns, not {shape}")
        self.shape = tuple(shape)
        self.dtype = dtype
        self.name = name

    @property
    def n(self) -> int:
        return self.shape[0]

    @property
    def m(self) -> int:
        return self.shape[1] if len(self.shape) == 2 else 1

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __call__(self, *args):  # Python scope: a NumPy value of this type
        import numpy as np

        from ..ir.types import python_type

        dt = python_type(self.dtype) or self.dtype
        data = np.array(args[0] if len(args) == 1 and not np.isscalar(args[0]) else args,
                        dtype=dt.np_dtype if isinstance(dt, DType) else None)
        data = np.broadcast_to(data, self.shape).copy() if data.size == 1 else data.reshape(self.shape)
        out = data.view(host_matrix_class())
        out.qd_dtype = dt if isinstance(dt, DType) else None
        return out

    def field(self, shape=None, name: str | None = None, needs_grad: bool = False, needs_dual: bool = False,
              **_options):
        """A field of this vector / matrix type."""
        from .field import Field

        return Field(self.dtype or float, shape, self.shape, name, needs_grad=needs_grad, needs_dual=needs_dual)

    def __eq__(self, other) -> bool:
        return isinstance(other, MatrixType) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))

    def __repr__(self) -> str:
        if self.name:
            return f"qd.math.{self.name}"
        dt = getattr(self.dtype, "__name__", None) or repr(self.dtype)
        if len(self.shape) == 1:
            return f"qd.types.vector({self.n}, {dt})"
        return f"qd.types.matrix({self.n}, {self.m}, {dt})"


_HOST_MATRIX = None


def host_matrix_class() -> type:
    """The NumPy array subclass a vector or matrix built in Python scope is (``V =
    qd.math.vec2(1, 0)``, ``qd.Vector([0, -9.8])``): arithmetic on it stays NumPy's, and a
    kernel that names it reads it as a constant vector or matrix, as Quadrants does. Made on
    first use, as NumPy is only imported when a value is built."""
    global _HOST_MATRIX
    if _HOST_MATRIX is None:
        import numpy as np

        def component(k: int) -> property:
            def get(self):
                return self[k]

            def put(self, value) -> None:
                self[k] = value

            return property(get, put)

        class HostMatrix(np.ndarray):
            _qd_host_matrix = True
            qd_dtype = None  # the dtype it was declared with; None: its values' (as literals in a kernel)
            x, y, z, w = (component(k) for k in range(4))  # as Quadrants' Python-scope vectors have them

            def __array_finalize__(self, obj) -> None:
                self.qd_dtype = getattr(obj, "qd_dtype", None)

            def norm(self):
                return np.sqrt((self * self).sum())

            def norm_sqr(self):
                return (self * self).sum()

            def normalized(self):
                return self / self.norm()

            def dot(self, other):
                return np.dot(self, other)

            def to_numpy(self) -> np.ndarray:
                return np.asarray(self).copy()

        _HOST_MATRIX = HostMatrix
    return _HOST_MATRIX


@comptime
def vector(n: int, dtype: Any = None) -> MatrixType:
    return MatrixType((n,), dtype)


@comptime
def matrix(n: int, m: int, dtype: Any = None) -> MatrixType:
    return MatrixType((n, m), dtype)


# The constructors and factories of qd.Vector / qd.Matrix, lowered by the frontend.
class Vector:
    """``qd.Vector([x, y, z], dt=None)``; ``qd.Vector.zero(dt, n)``, ``.one``, ``.unit(n, i, dt)``."""

    _qd_builtin = "Vector"

    def __new__(cls, values, dt=None):  # Python scope
        return vector(len(values), dt)(list(values))

    zero = staticmethod(builtin("Vector.zero")(lambda dt, n: None))

    @staticmethod
    def field(n: int, dtype, shape=None, name: str | None = None, needs_grad: bool = False,
              needs_dual: bool = False, **_options):
        """``qd.Vector.field(n, dtype, shape)``: a field of n-vectors."""
        from .field import Field

        return Field(dtype, shape, (n,), name, needs_grad=needs_grad, needs_dual=needs_dual)
    one = staticmethod(builtin("Vector.one")(lambda dt, n: None))
    unit = staticmethod(builtin("Vector.unit")(lambda n, i, dt=None: None))

    @staticmethod
    def ndarray(n: int, dtype, shape, needs_grad: bool = False, needs_dual: bool = False, **_options):
        """``qd.Vector.ndarray(n, dtype, shape)``: a qd.ndarray of n-vectors."""
        from .. import ndarray

        return ndarray(vector(n, dtype), shape, needs_grad=needs_grad, needs_dual=needs_dual)


class Matrix:
    """``qd.Matrix([[a, b], [c, d]], dt=None)``; ``qd.Matrix.zero(dt, n, m)``, ``.one``,
    ``.identity(dt, n)``, ``.diag(n, value)``, ``.rows([...])``, ``.cols([...])``."""

    _qd_builtin = "Matrix"

    def __new__(cls, rows, dt=None):  # Python scope
        import numpy as np

        data = np.array(rows)
        return (vector(data.shape[0], dt) if data.ndim == 1 else matrix(*data.shape, dt))(rows)

    zero = staticmethod(builtin("Matrix.zero")(lambda dt, n, m=None: None))

    @staticmethod
    def field(n: int, m: int, dtype, shape=None, name: str | None = None, needs_grad: bool = False,
              needs_dual: bool = False, **_options):
        """``qd.Matrix.field(n, m, dtype, shape)``: a field of n x m matrices."""
        from .field import Field

        return Field(dtype, shape, (n, m), name, needs_grad=needs_grad, needs_dual=needs_dual)
    one = staticmethod(builtin("Matrix.one")(lambda dt, n, m=None: None))
    identity = staticmethod(builtin("Matrix.identity")(lambda dt, n: None))
    diag = staticmethod(builtin("Matrix.diag")(lambda dim, val: None))
    rows = staticmethod(builtin("Matrix.rows")(lambda rows: None))
    cols = staticmethod(builtin("Matrix.cols")(lambda cols: None))

    @staticmethod
    def ndarray(n: int, m: int, dtype, shape, needs_grad: bool = False, needs_dual: bool = False, **_options):
        """``qd.Matrix.ndarray(n, m, dtype, shape)``: a qd.ndarray of n x m matrices."""
        from .. import ndarray

        return ndarray(matrix(n, m, dtype), shape, needs_grad=needs_grad, needs_dual=needs_dual)


class StructType:
    """``qd.types.struct(name=type, ...)`` or a ``@qd.dataclass``: named members, each a
    scalar dtype, a vector/matrix type or another struct. Calling it in a kernel builds a
    value (positional or keyword members; the rest zero)."""

    _qd_builtin = "struct_type"

    def __init__(self, members: dict[str, Any], name: str = "struct", methods: dict[str, Func] | None = None):
        self.members = dict(members)
        self.name = name
        self.methods = dict(methods or {})
        for member, t in self.members.items():
            if not (isinstance(t, (DType, MatrixType, StructType)) or t in (int, float, bool)):
                raise TypeError(f"struct member `{member}` has type {t!r}: use a dtype, a vector/matrix type "
                                "or another struct")

    def __call__(self, *args, **kwargs):  # Python scope: a dict of the members
        values = dict(zip(self.members, args))
        values.update(kwargs)
        return {k: values.get(k, 0) for k in self.members}

    def field(self, shape=None, name: str | None = None, needs_grad: bool = False, needs_dual: bool = False,
              **_options):
        """A field of this struct (one field per member)."""
        from .field import StructField

        return StructField(self, shape, name, needs_grad=needs_grad, needs_dual=needs_dual)

    def __repr__(self) -> str:
        return f"qd.types.struct({self.name})"


@comptime
def struct(**members) -> StructType:
    return StructType(members)


class Struct:
    """``qd.Struct.field({"pos": vec2, "mass": qd.f32}, shape=n)``: a field of structs, as
    Quadrants (and Taichi) spell it; the same as ``qd.types.struct(**members).field(...)``.
    ``qd.Struct(a=1, b=2.0)`` / ``qd.Struct({"a": 1, "b": 2.0})`` is a struct value whose
    members' types are their values' (in a kernel; in Python scope a dict of them)."""

    _qd_builtin = "Struct"

    def __new__(cls, *args, **kwargs):
        from .field import HostStruct

        members = dict(args[0]) if args else {}
        members.update(kwargs)
        return HostStruct(members)

    @staticmethod
    def field(members: dict, shape=None, name: str | None = None, **options):
        return StructType(members).field(shape, name, **options)


def dataclass_members(cls) -> list[tuple[str, Any]]:
    """A Python ``@dataclasses.dataclass`` kernel parameter's members: (name, annotation)."""
    import dataclasses as _dc

    hints = inspect.get_annotations(cls, eval_str=True)
    return [(f.name, hints.get(f.name, f.type)) for f in _dc.fields(cls)]


def dataclass(cls) -> StructType:
    """``@qd.dataclass``: the class's annotated members make a struct type; its ``@qd.func``
    methods take the struct as ``self``."""
    members = inspect.get_annotations(cls, eval_str=True)
    methods = {k: v for k, v in vars(cls).items() if isinstance(v, Func)}
    st = StructType(members, cls.__name__, methods)
    st.__doc__ = cls.__doc__
    return st

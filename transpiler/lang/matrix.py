"""Small vectors, matrices and structs as Quadrants spells them: ``qd.types.vector(n, dtype)``,
``qd.types.matrix(n, m, dtype)``, ``qd.math.vec3`` and friends, ``qd.Vector([...])``,
``qd.Matrix([[...]])``, ``qd.types.struct(...)`` and ``@qd.dataclass``.

In a kernel a vector or matrix is its scalars (the frontend lowers every operation on them
component by component, ``frontend/matrices.py``), so every target gets plain scalar code
and an ndarray of them is laid out as NumPy lays out its ``(..., n, m)`` array. In Python
scope the types build NumPy arrays, so a value can be handed to a kernel.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from ..ir.types import DType, python_type
from .kernel import Func, builtin, comptime

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .field import Field, StructField


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
        import numpy as np  # noqa: PLC0415 - NumPy only for a value made in Python scope

        dt = python_type(self.dtype) or self.dtype
        np_dtype = dt.np_dtype if isinstance(dt, DType) else None
        if len(args) == 1:
            data = np.array(args[0], dtype=np_dtype)
        else:  # scalars and vectors, concatenated: vec3(v2, z)
            data = np.concatenate([np.ravel(np.asarray(a)) for a in args])
            data = data if np_dtype is None else data.astype(np_dtype)
        data = np.broadcast_to(data, self.shape).copy() if data.size == 1 else data.reshape(self.shape)
        out = data.view(host_matrix_class())
        out.qd_dtype = dt if isinstance(dt, DType) else None
        return out

    def field(self, shape: int | tuple[int, ...] | None = None, name: str | None = None, needs_grad: bool = False,
              needs_dual: bool = False, offset: int | Sequence[int] | None = None, **_options: object) -> Field:
        """A field of this vector / matrix type."""
        from .field import Field  # noqa: PLC0415 - lang.field imports this module

        return Field(self.dtype or float, shape, self.shape, name, needs_grad=needs_grad, needs_dual=needs_dual,
                     offset=offset)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MatrixType) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self) -> int:
        # (not the dtype: qd.init changes qd.math.vec3's, an object cache keys may hold)
        return hash(self.shape)

    def __repr__(self) -> str:
        if self.name:
            return f"qd.math.{self.name}"
        dt = getattr(self.dtype, "__name__", None) or repr(self.dtype)
        if len(self.shape) == 1:
            return f"qd.types.vector({self.n}, {dt})"
        return f"qd.types.matrix({self.n}, {self.m}, {dt})"




def host_matrix_class() -> type:
    """The NumPy array subclass a vector or matrix built in Python scope is (``host_matrix``)."""
    from .host_matrix import HostMatrix  # noqa: PLC0415 - NumPy is imported only when a value is built

    return HostMatrix


@comptime
def vector(n: int, dtype: Any = None, unpacked: bool = False) -> MatrixType:
    """``unpacked=True`` (Quadrants: a dataclass member stored as n scalar slots, so that
    registers spill one at a time) is how every vector is kept here: its scalars are
    locals of their own (``t_r_0``, ...), so the flag changes nothing."""
    return MatrixType((n,), dtype)


@comptime
def matrix(n: int, m: int, dtype: Any = None) -> MatrixType:
    return MatrixType((n, m), dtype)


class _HostMatrixCheck(type):
    """``isinstance(v, qd.Matrix)`` (and ``qd.Vector`` for a 1-d one) holds for a vector or
    matrix built in Python scope, as for Quadrants' Matrix objects."""

    def __instancecheck__(cls, obj: object) -> bool:
        if getattr(type(obj), "_qd_host_matrix", False):
            return cls is Matrix or obj.ndim == 1
        return type.__instancecheck__(cls, obj)


# The constructors and factories of qd.Vector / qd.Matrix, lowered by the frontend.
class Vector(metaclass=_HostMatrixCheck):
    """``qd.Vector([x, y, z], dt=None)``; ``qd.Vector.zero(dt, n)``, ``.one``, ``.unit(n, i, dt)``."""

    _qd_builtin = "Vector"

    def __new__(cls, values: Sequence[object], dt: DType | None = None):  # Python scope
        return vector(len(values), dt)(list(values))

    zero = staticmethod(builtin("Vector.zero")(lambda dt, n: None))

    @staticmethod
    def field(n: int, dtype: DType | type, shape: int | tuple[int, ...] | None = None, name: str | None = None,
              needs_grad: bool = False, needs_dual: bool = False, offset: int | Sequence[int] | None = None,
              **_options: object) -> Field:
        """``qd.Vector.field(n, dtype, shape)``: a field of n-vectors."""
        from .field import Field  # noqa: PLC0415 - lang.field imports this module

        return Field(dtype, shape, (n,), name, needs_grad=needs_grad, needs_dual=needs_dual, offset=offset)
    one = staticmethod(builtin("Vector.one")(lambda dt, n: None))
    unit = staticmethod(builtin("Vector.unit")(lambda n, i, dt=None: None))

    @staticmethod
    def tensor(n: int, dtype: DType | type, shape: int | tuple[int, ...], **options: object):
        """``qd.Vector.tensor(n, dtype, shape, backend=...)``: qd.tensor of n-vectors."""
        from .field import tensor  # noqa: PLC0415 - lang.field imports this module

        return tensor(vector(n, dtype), shape, **options)

    @staticmethod
    def ndarray(n: int, dtype: DType | type, shape: int | tuple[int, ...], needs_grad: bool = False,
                needs_dual: bool = False, **_options: object):
        """``qd.Vector.ndarray(n, dtype, shape)``: a qd.ndarray of n-vectors."""
        from .field import ndarray  # noqa: PLC0415 - lang.field imports this module

        return ndarray(vector(n, dtype), shape, needs_grad=needs_grad, needs_dual=needs_dual)


class Matrix(metaclass=_HostMatrixCheck):
    """``qd.Matrix([[a, b], [c, d]], dt=None)``; ``qd.Matrix.zero(dt, n, m)``, ``.one``,
    ``.identity(dt, n)``, ``.diag(n, value)``, ``.rows([...])``, ``.cols([...])``."""

    _qd_builtin = "Matrix"

    def __new__(cls, rows: Sequence[object], dt: DType | None = None):  # Python scope
        import numpy as np  # noqa: PLC0415 - NumPy only for a value made in Python scope

        data = np.array(rows)
        return (vector(data.shape[0], dt) if data.ndim == 1 else matrix(*data.shape, dt))(rows)

    zero = staticmethod(builtin("Matrix.zero")(lambda dt, n, m=None: None))

    @staticmethod
    def field(n: int, m: int, dtype: DType | type, shape: int | tuple[int, ...] | None = None, name: str | None = None,
              needs_grad: bool = False, needs_dual: bool = False, offset: int | Sequence[int] | None = None,
              **_options: object) -> Field:
        """``qd.Matrix.field(n, m, dtype, shape)``: a field of n x m matrices."""
        from .field import Field  # noqa: PLC0415 - lang.field imports this module

        return Field(dtype, shape, (n, m), name, needs_grad=needs_grad, needs_dual=needs_dual, offset=offset)
    @staticmethod
    def tensor(n: int, m: int, dtype: DType | type, shape: int | tuple[int, ...], **options: object):
        """``qd.Matrix.tensor(n, m, dtype, shape, backend=...)``: qd.tensor of n x m matrices."""
        from .field import tensor  # noqa: PLC0415 - lang.field imports this module

        return tensor(matrix(n, m, dtype), shape, **options)

    one = staticmethod(builtin("Matrix.one")(lambda dt, n, m=None: None))
    identity = staticmethod(builtin("Matrix.identity")(lambda dt, n: None))
    diag = staticmethod(builtin("Matrix.diag")(lambda dim, val: None))
    rows = staticmethod(builtin("Matrix.rows")(lambda rows: None))
    cols = staticmethod(builtin("Matrix.cols")(lambda cols: None))

    @staticmethod
    def ndarray(n: int, m: int, dtype: DType | type, shape: int | tuple[int, ...], needs_grad: bool = False,
                needs_dual: bool = False, **_options: object):
        """``qd.Matrix.ndarray(n, m, dtype, shape)``: a qd.ndarray of n x m matrices."""
        from .field import ndarray  # noqa: PLC0415 - lang.field imports this module

        return ndarray(matrix(n, m, dtype), shape, needs_grad=needs_grad, needs_dual=needs_dual)


class StructType:
    """``qd.types.struct(name=type, ...)`` or a ``@qd.dataclass``: named members, each a
    scalar dtype, a vector/matrix type or another struct. Calling it builds a value
    (positional or keyword members; the rest zero), in a kernel or in Python scope."""

    _qd_builtin = "struct_type"

    def __init__(self, members: dict[str, Any], name: str = "struct", methods: dict[str, Func] | None = None,
                 py_methods: dict[str, Any] | None = None):
        self.members = dict(members)
        self.name = name
        self.methods = dict(methods or {})
        self.py_methods = dict(py_methods or {})  # a @qd.dataclass's plain Python methods
        for member, t in self.members.items():
            if not (isinstance(t, (DType, MatrixType, StructType)) or t in (int, float, bool)):
                raise TypeError(f"struct member `{member}` has type {t!r}: use a dtype, a vector/matrix type "
                                "or another struct")

    def __call__(self, *args, **kwargs) -> HostStruct:
        """Python scope, as Quadrants builds one: the n-th argument is the n-th member, the
        rest are keywords or 0; a scalar for a vector member fills it, for a struct member
        it is that struct's first argument (``mystruct(1)``: line = line3f(1)); every
        member is cast to its type (``structi(2.5)``: a = 2)."""
        if len(args) > len(self.members):
            raise TypeError(f"{self.name} has {len(self.members)} member(s), given {len(args)} values")
        unknown = set(kwargs) - set(self.members)
        if unknown:
            raise TypeError(f"{self.name} has no member `{sorted(unknown)[0]}`; its members: {', '.join(self.members)}")
        values = {}
        for k, (name, t) in enumerate(self.members.items()):
            values[name] = member_value(t, args[k] if k < len(args) else kwargs.get(name, 0))
        return HostStruct(values, self)

    def field(self, shape: int | tuple[int, ...] | None = None, name: str | None = None, needs_grad: bool = False,
              needs_dual: bool = False, offset: int | Sequence[int] | None = None, **_options: object) -> StructField:
        """A field of this struct (one field per member)."""
        from .field import StructField  # noqa: PLC0415 - lang.field imports this module

        return StructField(self, shape, name, needs_grad=needs_grad, needs_dual=needs_dual, offset=offset)

    def __repr__(self) -> str:
        return f"qd.types.struct({self.name})"


def member_value(t: object, value: object) -> object:
    """``value`` as a Python-scope member of type ``t`` (None: a member of an anonymous
    ``qd.Struct``, which takes its value's type)."""
    if t is None:
        if isinstance(value, dict):
            return HostStruct({k: member_value(None, v) for k, v in value.items()})
        return Matrix(value) if isinstance(value, (list, tuple)) else value
    if isinstance(t, StructType):
        return t(**value) if isinstance(value, dict) else t(value)
    if isinstance(t, MatrixType):
        return t(value)
    dt = python_type(t) or t
    return float(value) if dt.is_float else bool(value) if dt.name == "bool" else int(value)


class HostStruct(dict):
    """A struct value in Python scope, as Quadrants' ``qd.Struct`` is there: its members as
    attributes or keys (``s.pos``, ``s["pos"]``), its type's Python methods bound to it. A
    struct field's element (``x[i]``) is a view: setting a member writes the field
    (``x[i].b = 1``, ``x[i].line = y[i]``), and a nested struct or vector member of it is a
    view too."""

    def __init__(self, members: dict, type_: StructType | None = None, source: tuple | None = None):
        super().__init__(members)
        self.__dict__["_qd_type"] = type_
        self.__dict__["_qd_source"] = source  # (the StructField, the index) it views

    def __getattr__(self, name: str):
        if name.startswith("_qd_"):  # (not yet set while copy / pickle rebuild it)
            raise AttributeError(name)
        if name in self:
            return self[name]
        method = self._qd_type.py_methods.get(name) if self._qd_type is not None else None
        if method is not None:
            return method.__get__(self)
        raise AttributeError(f"the struct has no member `{name}`")

    def __setattr__(self, name: str, value: object) -> None:
        if name not in self:
            raise AttributeError(f"the struct has no member `{name}`; its members: {', '.join(self)}")
        self[name] = value

    def __setitem__(self, name: str, value: object) -> None:
        source, t = self.__dict__.get("_qd_source"), self.__dict__.get("_qd_type")
        if source is not None:
            field, index = source
            field.members[name][index] = value
            value = field.members[name][index]  # the stored value (cast, or a view of it)
        elif t is not None:
            if name not in t.members:
                raise KeyError(f"{t.name} has no member `{name}`")
            value = member_value(t.members[name], value)
        super().__setitem__(name, value)

    def to_dict(self) -> dict:
        """Its members, nested structs as dicts and vectors / matrices as lists (Quadrants')."""
        return {k: v.to_dict() if isinstance(v, HostStruct) else v.tolist() if hasattr(v, "tolist") else v
                for k, v in self.items()}


@comptime
def struct(**members) -> StructType:
    return StructType(members)


class Struct:
    """``qd.Struct.field({"pos": vec2, "mass": qd.f32}, shape=n)``: a field of structs, as
    Quadrants (and Taichi) spell it; the same as ``qd.types.struct(**members).field(...)``.
    ``qd.Struct(a=1, b=2.0)`` / ``qd.Struct({"a": 1, "b": 2.0})`` is a struct value whose
    members' types are their values' (lists are vectors, dicts nested structs)."""

    _qd_builtin = "Struct"

    def __new__(cls, *args, **kwargs):
        members = dict(args[0]) if args else {}
        members.update(kwargs)
        return member_value(None, members)

    @staticmethod
    def field(members: dict, shape: int | tuple[int, ...] | None = None, name: str | None = None,
              **options: object) -> StructField:
        return StructType(members).field(shape, name, **options)


def dataclass_members(cls: type) -> list[tuple[str, Any]]:
    """A Python ``@dataclasses.dataclass`` kernel parameter's members: (name, annotation)."""
    hints = inspect.get_annotations(cls, eval_str=True)
    return [(f.name, hints.get(f.name, f.type)) for f in dataclasses.fields(cls)]


def dataclass(cls: type) -> StructType:
    """``@qd.dataclass``: the class's annotated members make a struct type; its ``@qd.func``
    methods take the struct as ``self``."""
    members = inspect.get_annotations(cls, eval_str=True)
    methods = {k: v for k, v in vars(cls).items() if isinstance(v, Func)}
    py_methods = {k: v for k, v in vars(cls).items() if inspect.isfunction(v) and not k.startswith("__")}
    st = StructType(members, cls.__name__, methods, py_methods)
    st.__doc__ = cls.__doc__
    return st

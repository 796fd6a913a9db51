"""``qd.types``: parameter annotations and the primitive dtypes, as Quadrants' ``qd.types`` has them."""
from __future__ import annotations

from ..ir.types import (  # noqa: F401
    bool_ as u1, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64,
)
from .kernel import Template, _NdarrayFactory, template  # noqa: F401
from .matrix import matrix, struct, vector  # noqa: F401
from .names import missing as _missing  # underscored: not a qd.types name

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ..ir.types import DType

_T = TypeVar("_T")

ndarray = _NdarrayFactory()
NDArray = ndarray


class _TensorType(type):
    """The type of ``qd.Tensor``: a class, so that ``isinstance(x, qd.Tensor)`` holds for a
    field or an ndarray, as it does for Quadrants' wrapper; called or subscripted, an ndarray
    annotation, as ``qd.types.ndarray``."""

    _factory = _NdarrayFactory()

    def __instancecheck__(cls, obj: object) -> bool:
        return hasattr(type(obj), "_unwrap")

    def __call__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and hasattr(type(args[0]), "_unwrap"):
            return args[0]  # Quadrants' qd.Tensor(x) wrapper of a field or an ndarray: here x itself
        return cls._factory(*args, **kwargs)

    def __getitem__(cls, item: Any):
        return cls._factory[item]

    def __repr__(cls) -> str:
        return "qd.Tensor"


class Tensor(metaclass=_TensorType):
    """``qd.Tensor``: as an annotation, a field or an ndarray (typed by the call)."""

    _qd_tensor_annotation = True


def is_tensor(obj: object) -> bool:
    """``qd.is_tensor(x)``: whether ``x`` is a field or an ndarray."""
    return isinstance(obj, Tensor)


def wrap(impl: _T) -> _T:
    """``qd.wrap(x)``: Quadrants' Tensor wrapper of a field or an ndarray, which is ``x`` here."""
    if not hasattr(type(impl), "_unwrap"):
        raise TypeError(f"qd.wrap() takes a field or an ndarray, got {type(impl).__name__}")
    return impl
int8, int16, int32, int64 = i8, i16, i32, i64
uint8, uint16, uint32, uint64 = u8, u16, u32, u64
float16, float32, float64 = f16, f32, f64


def sparse_matrix_builder(*_args, **_kwargs) -> type:
    """``qd.types.sparse_matrix_builder()``: a ``qd.linalg.SparseMatrixBuilder`` parameter."""
    from .sparse import builder_annotation  # noqa: PLC0415 - lang.sparse imports this module (via lang.qd)

    return builder_annotation()


class primitive_types:  # noqa: N801 - Quadrants' spelling: qd.types.primitive_types.all_types
    """The primitive dtypes in sets, as Quadrants' ``qd.types.primitive_types`` has them (with
    Python's float, int and bool, which stand for qd.init's defaults)."""

    f16, f32, f64, i8, i16, i32, i64, u1, u8, u16, u32, u64 = f16, f32, f64, i8, i16, i32, i64, u1, u8, u16, u32, u64
    real_types = {f16, f32, f64, float}
    integer_types = {i8, i16, i32, i64, u1, u8, u16, u32, u64, int, bool}
    all_types = real_types | integer_types
    real_type_ids = {id(t) for t in real_types}
    integer_type_ids = {id(t) for t in integer_types}
    type_ids = {id(t) for t in all_types}


def is_signed(dtype: DType) -> bool:
    return dtype.is_signed or dtype.is_float


def is_integral(dtype: DType) -> bool:
    return dtype.is_int


def is_real(dtype: DType) -> bool:
    return dtype.is_float


def __getattr__(name: str):
    raise AttributeError(_missing("qd.types", name, globals()))

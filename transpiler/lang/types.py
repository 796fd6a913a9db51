"""``qd.types``: parameter annotations and the primitive dtypes, as Quadrants' ``qd.types`` has them."""
from __future__ import annotations

from ..ir.types import (  # noqa: F401
    bool_ as u1, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64,
)
from .kernel import Template, _NdarrayFactory, template  # noqa: F401
from .matrix import matrix, struct, vector  # noqa: F401
from .names import missing as _missing  # underscored: not a qd.types name
from .sparse_builder import builder_annotation as _builder_annotation
from .tensor_type import Tensor, is_tensor, wrap  # noqa: F401

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ir.types import DType

ndarray = _NdarrayFactory()
NDArray = ndarray


int8, int16, int32, int64 = i8, i16, i32, i64
uint8, uint16, uint32, uint64 = u8, u16, u32, u64
float16, float32, float64 = f16, f32, f64


def sparse_matrix_builder(*_args, **_kwargs) -> type:
    """``qd.types.sparse_matrix_builder()``: a ``qd.linalg.SparseMatrixBuilder`` parameter."""
    return _builder_annotation()


class primitive_types:  # noqa: N801 - Quadrants' spelling: qd.types.primitive_types.all_types
    """The primitive dtypes in sets, as Quadrants' ``qd.types.primitive_types`` has them (with
    Python's float, int and bool, which stand for qd.init's defaults)."""

    f16, f32, f64, i8, i16, i32, i64, u1, u8, u16, u32, u64 = f16, f32, f64, i8, i16, i32, i64, u1, u8, u16, u32, u64
    float16, float32, float64, int8, int16, int32, int64 = f16, f32, f64, i8, i16, i32, i64
    uint1, uint8, uint16, uint32, uint64 = u1, u8, u16, u32, u64
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

"""Spellings shared by the C++-family targets (CUDA, HIP, MSL): keywords, literals, casts,
and the values the shared C++ helper templates (``templates/cxx/helpers.j2``) read."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..ir import types as T
from .dialect import Dialect, f32_repr, float_text

if TYPE_CHECKING:
    from .renderer import Renderer

CXX_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t
class compl const const_cast constexpr continue decltype default delete do double dynamic_cast
else enum explicit export extern false float for friend goto if inline int long mutable
namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast return short signed sizeof static static_assert static_cast struct switch
template this thread_local throw true try typedef typeid typename union unsigned using virtual
void volatile wchar_t while xor xor_eq main min max abs
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t
""".split())

# The typedef each fixed-width name stands for in a C++ prelude with no <cstdint>.
FIXED_WIDTH = {
    "i8": ("int8_t", "signed char"), "i16": ("int16_t", "short"), "i32": ("int32_t", "int"),
    "i64": ("int64_t", "long long"), "u8": ("uint8_t", "unsigned char"),
    "u16": ("uint16_t", "unsigned short"), "u32": ("uint32_t", "unsigned int"),
    "u64": ("uint64_t", "unsigned long long"),
}


class CxxDialect(Dialect):
    """Literals and casts as C++ writes them; subclasses add their own spellings."""

    signed_overflow_undefined = True
    int_suffix = {"i32": "", "u32": "u", "i64": "ll", "u64": "ull"}
    inline = "inline"              # a helper function's specifiers
    fmod: dict[str, str] = {}      # dtype -> the float remainder function (Python's % on floats)
    copysign: dict[str, str] = {}  # dtype -> copysign (a zero remainder takes the divisor's sign)

    def compute_type(self, t: T.DType) -> T.DType:
        if t.is_int and t.bits < 32:
            return T.i32
        return t

    def literal(self, value: bool | int | float, t: T.DType) -> str:
        if t is T.bool_:
            return "true" if value else "false"
        if t.is_float:
            return self.float_literal(float(value), t)
        if t.bits < 32:
            return self.cast(str(int(value)), t)
        if t.name == "i32" and value == -(2**31):
            return "(-2147483647 - 1)"
        if t.name == "i64" and value == -(2**63):
            return "(-9223372036854775807ll - 1)"
        return f"{int(value)}{self.int_suffix[t.name]}"

    def float_literal(self, v: float, t: T.DType) -> str:
        if math.isinf(v) or math.isnan(v):
            return self.special_float(v, t)
        if t.name == "f64":
            return float_text(repr(v))
        text = float_text(f32_repr(v)) + "f"
        return text if t.name == "f32" else self.cast(text, t)

    def special_float(self, v: float, t: T.DType) -> str:
        raise NotImplementedError

    def subgroup_helper(self, r: Renderer, fn: str, t: T.DType, value: str) -> str:
        """A subgroup reduction or scan through its helper, ``subgroup_<fn>``: an exclusive
        scan's is built on the inclusive one and takes the operator's identity."""
        kind, op = fn.split("_")
        extra = {}
        if kind == "exclusive":
            r.helper(f"subgroup_inclusive_{op}", t)
            extra["identity"] = self.literal(T.identity(op, t), t)
        return f"{r.helper('subgroup_' + fn, t, **extra)}({value})"

    def helper_values(self, subgroup_size: int | None) -> dict:
        """What ``templates/cxx/helpers.j2`` reads besides the helper itself."""
        return {"qd_inline": self.inline, "fmod": self.fmod, "copysign": self.copysign}

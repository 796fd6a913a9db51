"""The scalar types of the kernel language and the typing rules the fuzzer's kernels rely on,
written out here from the language's documentation (Quadrants' promotion, Python literals
adapting to the other operand) so the reference never borrows the transpiler's own code."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DT:
    name: str
    kind: str  # "int", "uint", "float"
    bits: int

    def __repr__(self) -> str:
        return self.name

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind != "float"

    @property
    def signed(self) -> bool:
        return self.kind == "int"

    @property
    def mantissa(self) -> int:
        """Bits of an f32/f64 significand: integers below 2**mantissa are exact."""
        return 24 if self.bits == 32 else 53

    @property
    def np(self):
        return np.dtype(_NP[self.name])

    @property
    def lo(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1


_NP = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u16": np.uint16,
       "u32": np.uint32, "u64": np.uint64, "f32": np.float32, "f64": np.float64}

I8, I16, I32, I64 = DT("i8", "int", 8), DT("i16", "int", 16), DT("i32", "int", 32), DT("i64", "int", 64)
U8, U16, U32, U64 = DT("u8", "uint", 8), DT("u16", "uint", 16), DT("u32", "uint", 32), DT("u64", "uint", 64)
F32, F64 = DT("f32", "float", 32), DT("f64", "float", 64)
BOOL = DT("bool", "bool", 1)
INTS = [I8, I16, I32, I64, U8, U16, U32, U64]
FLOATS = [F32, F64]
ALL = INTS + FLOATS


def promote(a: DT, b: DT) -> DT:
    """Quadrants' common type: floats win (the wider one), then the wider integer, then at
    equal width the unsigned one. bool counts as i32."""
    if a == b:
        return I32 if a == BOOL else a
    a, b = (I32 if a == BOOL else a), (I32 if b == BOOL else b)
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            return a if a.bits >= b.bits else b
        return a if a.is_float else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return a if a.kind == "uint" else b


def fits(v: int, t: DT) -> bool:
    return t.lo <= v <= t.hi


def literal_type(v: int | float) -> DT:
    """A Python literal on its own: i32 (i64 when it does not fit), f32."""
    if isinstance(v, float):
        return F32
    return I32 if fits(v, I32) else I64


def adapted(v: int | float, other: DT) -> DT:
    """The type a literal takes beside a typed operand: the operand's, when it holds the value."""
    if isinstance(v, int) and other.is_int and other != BOOL and fits(v, other):
        return other
    if other.is_float:
        return other
    return literal_type(v)


def wrap(v: int, t: DT) -> int:
    """Fixed-width two's complement wrap-around (the transpiler's integers wrap, as GPUs do)."""
    v &= (1 << t.bits) - 1
    if t.signed and v >= 1 << (t.bits - 1):
        v -= 1 << t.bits
    return v


def convert(v, src: DT, dst: DT):
    """A value of type ``src`` converted to ``dst`` as C converts (float -> int truncates;
    the generator only converts floats that are in range)."""
    if dst == BOOL:
        return bool(v)
    if dst.is_float:
        return dst.np.type(v if src.is_float else int(v))
    if src.is_float:
        return wrap(int(float(v)), dst)
    return wrap(int(v), dst)


# ----------------------------------------------------------------------------- composite types

@dataclass(frozen=True)
class VT:
    """A vector of ``n`` (``m == 0``) or an ``n x m`` matrix of scalars of type ``elem``,
    rendered as a module-level alias (``vec3_i32 = qd.types.vector(3, qd.i32)``)."""
    elem: DT
    n: int
    m: int = 0

    kind = "vec"
    is_float = False
    is_int = False

    def __repr__(self) -> str:
        return self.name

    @property
    def name(self) -> str:
        return f"vec{self.n}_{self.elem.name}" if not self.m else f"mat{self.n}x{self.m}_{self.elem.name}"

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.n,) if not self.m else (self.n, self.m)

    @property
    def size(self) -> int:
        return self.n * (self.m or 1)

    def declaration(self) -> str:
        if self.m:
            return f"{self.name} = qd.types.matrix({self.n}, {self.m}, qd.{self.elem.name})"
        return f"{self.name} = qd.types.vector({self.n}, qd.{self.elem.name})"


@dataclass(frozen=True)
class ST:
    """A struct type (``qd.types.struct``): members of scalar or vector types, in order."""
    name: str
    members: tuple

    kind = "struct"
    is_float = False
    is_int = False

    def __repr__(self) -> str:
        return self.name

    def member(self, name: str):
        return dict(self.members)[name]

    def declaration(self) -> str:
        ms = ", ".join(f"{k}={t.name if isinstance(t, VT) else 'qd.' + t.name}" for k, t in self.members)
        return f"{self.name} = qd.types.struct({ms})"

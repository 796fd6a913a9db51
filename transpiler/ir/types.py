"""IR types: scalar dtypes, ndarrays, shared arrays, and the promotion rules.

The promotion rules follow Quadrants (and so Taichi): a float wins over an int, the
wider type wins, and at equal width an unsigned int wins over a signed one. Untyped
Python literals adapt to the other operand (``x_u8 + 1`` stays ``u8``).
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .records import record

if TYPE_CHECKING:  # for annotations only: emitting text must not pay for numpy
    import numpy as np


@record(frozen=True, slots=True)
class DType:
    """A scalar type. Also usable as a value constructor inside kernels: ``qd.u32(x)``."""

    name: str   # "i32", "f16", "bool", ...
    kind: str   # "int", "uint", "float", "bool"
    bits: int

    def __repr__(self) -> str:
        return f"qd.{self.name}"

    # A dtype is one object per name: code recognizes qd.f32 by identity (a call in a kernel, an
    # annotation), and qd.init's options may arrive deep-copied (Quadrants' test runner does so).
    def __copy__(self) -> DType:
        return self

    def __deepcopy__(self, memo: dict) -> DType:
        return self

    def __call__(self, value: float) -> np.generic:
        """Host-side use (a kernel argument, ``qd.i16(x)`` in Python scope): a NumPy scalar of
        this type, converted as C converts, as Quadrants passes arguments: an integer wraps
        (65537 as i16 is 1), a float truncates toward zero."""
        if self.is_int:
            v = int(value) & ((1 << self.bits) - 1)
            return self.np_dtype.type(v - (1 << self.bits) if self.is_signed and v >> (self.bits - 1) else v)
        return self.np_dtype.type(value)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind == "int"

    @property
    def np_dtype(self) -> np.dtype:
        import numpy as np  # noqa: PLC0415 - emitting text must not pay for numpy

        return np.dtype(_NP_NAMES[self.name])

    @property
    def nbytes(self) -> int:
        return max(self.bits // 8, 1)


_NP_NAMES = {
    "bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64",
}

bool_ = DType("bool", "bool", 1)
i8, i16, i32, i64 = (DType(f"i{b}", "int", b) for b in (8, 16, 32, 64))
u8, u16, u32, u64 = (DType(f"u{b}", "uint", b) for b in (8, 16, 32, 64))
f16, f32, f64 = (DType(f"f{b}", "float", b) for b in (16, 32, 64))

SCALARS: dict[str, DType] = {t.name: t for t in (bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, f32, f64)}


@record(frozen=True)
class Defaults:
    """The types Python's ``int`` and ``float`` stand for (literals, annotations, ``int(x)``):
    ``qd.init(default_ip=..., default_fp=...)``, i32 and f32 unless asked otherwise."""

    ip: DType = i32
    fp: DType = f32
    # qd.init(debug=True): kernels check their asserts (frontend/debug_checks.py)
    debug: bool = False


class _ThreadDefaults(threading.local):
    # Per thread: a backend translates a warm-up kernel in the background while the caller's
    # thread lowers its first kernel, each under its own defaults (qd.init(default_fp=qd.f64,
    # debug=True) must not read the warm-up's f32 halfway through).
    current = Defaults()


_state = _ThreadDefaults()


def defaults() -> Defaults:
    return _state.current


@contextlib.contextmanager
def using_defaults(d: Defaults) -> Iterator[None]:
    """Lower with ``d`` as the default int and float types (in this thread)."""
    saved, _state.current = _state.current, d
    try:
        yield
    finally:
        _state.current = saved


def python_type(t: object) -> DType | None:
    """The dtype Python's ``int``, ``float`` or ``bool`` stands for (None for anything else)."""
    if t is int:
        return _state.current.ip
    if t is float:
        return _state.current.fp
    if t is bool:
        return bool_
    return None


def from_numpy(dt: np.dtype | type) -> DType:
    """The DType of a numpy dtype (or numpy scalar type)."""
    import numpy as np  # noqa: PLC0415 - emitting text must not pay for numpy

    name = np.dtype(dt).name
    for key, np_name in _NP_NAMES.items():
        if np_name == name:
            return SCALARS[key]
    raise TypeError(f"numpy dtype {name} has no kernel equivalent")


@record(frozen=True, slots=True)
class NdarrayType:
    """A global-memory array parameter: ``qd.types.ndarray(dtype=..., ndim=...)``. Its
    elements are scalars, or vectors / matrices of ``element_shape`` stored as NumPy stores
    an array of shape ``(*shape, *element_shape)``: the element's scalars last, packed."""

    dtype: DType
    ndim: int
    element_shape: tuple[int, ...] = ()
    # Known at translation time (a field's): the extents are constants in the code and are
    # not passed; None: passed with the array, one i32 per dimension.
    static_shape: tuple[int, ...] | None = None
    # Declared qd.u1 (NumPy's bool, one byte each): stored as u8, read as `!= 0`, written as 0 / 1.
    bool_elements: bool = False

    @property
    def passed_extents(self) -> int:
        """How many extents travel with the array as parameters."""
        return 0 if self.static_shape is not None else self.ndim

    @property
    def element_size(self) -> int:
        """Scalars per element."""
        n = 1
        for k in self.element_shape:
            n *= k
        return n

    def __repr__(self) -> str:
        es = f", element {'x'.join(map(str, self.element_shape))}" if self.element_shape else ""
        return f"ndarray({'u1' if self.bool_elements else self.dtype.name}, {self.ndim}d{es})"


@record(frozen=True, slots=True)
class SharedArrayType:
    """A block-shared array with a shape fixed at compile time. ``shape`` is its storage's
    (scalars of ``dtype``); a shared array of vectors or matrices ends it with their
    ``element_shape``, and is indexed by the outer ``ndim`` indices, as an ndarray of them."""

    dtype: DType
    shape: tuple[int, ...]
    element_shape: tuple[int, ...] = ()

    @property
    def ndim(self) -> int:
        return len(self.shape) - len(self.element_shape)

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * self.dtype.nbytes

    def __repr__(self) -> str:
        return f"shared({self.dtype.name}, {list(self.shape)})"


def promote(a: DType, b: DType) -> DType:
    """The common type of a binary arithmetic operation on ``a`` and ``b``."""
    if a is b or a == b:
        return i32 if a is bool_ else a
    if a is bool_:
        a = i32
    if b is bool_:
        b = i32
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            return a if a.bits >= b.bits else b
        return a if a.is_float else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return a if a.kind == "uint" else b


def literal_type(value: bool | int | float) -> DType:
    """The type an untyped Python literal gets when nothing else decides it."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        d = _state.current
        return d.ip if fits(value, d.ip) else i64
    return _state.current.fp


def unsigned(t: DType) -> DType:
    """The unsigned integer type of ``t``'s width."""
    return {8: u8, 16: u16, 32: u32, 64: u64}[t.bits]


def fits(value: int, t: DType) -> bool:
    """Whether the Python int ``value`` is representable in the integer type ``t``."""
    if t.kind == "uint":
        return 0 <= value < 2**t.bits
    return -(2 ** (t.bits - 1)) <= value < 2 ** (t.bits - 1)


def identity(op: str, t: DType) -> int | float:
    """The identity of ``op`` ("add", "mul", "min", "max", "and", "or", "xor") on ``t``: what
    an exclusive scan gives its first lane."""
    if op in ("add", "or", "xor"):
        return 0.0 if t.is_float else 0
    if op == "mul":
        return 1.0 if t.is_float else 1
    if op == "and":
        return -1 if t.is_signed else (1 << t.bits) - 1
    if t.is_float:
        return float("inf") if op == "min" else float("-inf")
    if op == "min":
        return (1 << (t.bits - 1)) - 1 if t.is_signed else (1 << t.bits) - 1
    return -(1 << (t.bits - 1)) if t.is_signed else 0

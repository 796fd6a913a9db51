"""What a target language's spellings look like to the shared renderer: one ``Dialect``
subclass per target, mostly tables (types, reserved words, thread indices, math functions,
atomics, barriers, fences), plus the few spellings that need a function.

A dialect is an immutable description: nothing it does depends on, or changes, any state
of its own. What a translation learns while rendering (helpers, types, requirements) goes
into the renderer's ``Usage``.
"""
from __future__ import annotations

import struct
from typing import Protocol

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.records import record, field


class Rendering(Protocol):
    """What a dialect's spellings ask of the renderer that calls them (renderer.py's
    ``Renderer``, which renders with a dialect and so sits above it)."""

    def text(self, e: ir.Expr, min_prec: int = 0) -> str: ...
    def narrow(self, text: str, prec: int, t: T.DType) -> tuple[str, int]: ...
    def helper(self, name: str, t: T.DType, **extra) -> str: ...
    def array_name(self, array: ir.Array) -> str: ...

# C operator precedence (higher binds tighter).
PREC_PRIMARY, PREC_UNARY, PREC_MUL, PREC_ADD, PREC_SHIFT = 16, 15, 13, 12, 11
PREC_REL, PREC_EQ, PREC_BITAND, PREC_BITXOR, PREC_BITOR = 10, 9, 8, 7, 6
PREC_AND, PREC_OR, PREC_COND = 5, 4, 3

BINARY = {  # IR op -> (C operator, precedence)
    "add": ("+", PREC_ADD), "sub": ("-", PREC_ADD), "mul": ("*", PREC_MUL),
    "truediv": ("/", PREC_MUL), "truncdiv": ("/", PREC_MUL), "truncmod": ("%", PREC_MUL),
    "lshift": ("<<", PREC_SHIFT), "rshift": (">>", PREC_SHIFT),
    "bitand": ("&", PREC_BITAND), "bitxor": ("^", PREC_BITXOR), "bitor": ("|", PREC_BITOR),
}
# IR math function -> its name in C's math library (the double overload), as the C++ family
# (CUDA, HIP, MSL) spells it; a dialect with other names keeps only those (GLSL).
MATH_FUNCS = {
    "sqrt": "sqrt", "rsqrt": "rsqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos",
    "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "floor": "floor", "ceil": "ceil", "round": "rint", "trunc": "trunc",
    "abs": "fabs", "atan2": "atan2", "pow": "pow", "min": "fmin", "max": "fmax",
}
BITWISE = ("lshift", "rshift", "bitand", "bitxor", "bitor")
COMPOUND = ("add", "sub", "mul", "truediv", "lshift", "rshift", "bitand", "bitxor", "bitor")
COMPARE = {"lt": ("<", PREC_REL), "le": ("<=", PREC_REL), "gt": (">", PREC_REL),
           "ge": (">=", PREC_REL), "eq": ("==", PREC_EQ), "ne": ("!=", PREC_EQ)}


def shortest_repr(value: float, fmt: str, max_digits: int) -> str:
    """The shortest decimal that reads back as the same value of the ``struct`` format ``fmt``
    ("<f": float32, "<e": half), of at most ``max_digits`` digits (enough for any value of it);
    OverflowError beyond the format's range."""
    bits = struct.pack(fmt, value)
    for digits in range(1, max_digits + 1):
        text = f"{value:.{digits}g}"
        try:
            if struct.pack(fmt, float(text)) == bits:
                return text
        except OverflowError:  # rounded past the largest value (65504 -> 7e+04 in half)
            continue
    return repr(value)


def f32_repr(value: float) -> str:
    """The shortest decimal that reads back as the same float32."""
    return shortest_repr(value, "<f", 9)


def float_text(text: str) -> str:
    """Make a decimal read as a floating literal in C (``1`` -> ``1.0``)."""
    return text if any(c in text for c in ".en") else text + ".0"


@record
class Helper:
    """A helper function a module needs, rendered by the template macro ``name``."""

    name: str
    dtype: str   # the dtype name it is instantiated for
    ctype: str   # its spelling in the target
    extra: dict = field(default_factory=dict, compare=False)  # e.g. a typed identity literal

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.dtype)


class Dialect:
    """Spellings of one C-like target language. Subclasses fill in the tables."""

    # C++ (CUDA, HIP, MSL) leaves signed overflow undefined and its compilers optimize on it:
    # signed +, -, *, negation and << that may overflow (narrow types by the int C computes them
    # in) are then written in unsigned arithmetic (Renderer.wraps).
    signed_overflow_undefined = False
    # dtypes whose negation is a helper call (qd_neg): a compiler that gets it wrong.
    negated_by_helper: frozenset[str] = frozenset()

    name = ""
    types: dict[str, str] = {}
    reserved: frozenset[str] = frozenset()
    thread_index: dict[str, str] = {}
    # Thread indices spelled with the entry point's block size as a constant (a parallel
    # task is launched with exactly its block_dim threads); None: always ``thread_index``.
    thread_index_fixed_block: dict[str, str] | None = None
    # Every statement a barrier / fence of each scope is spelled with, one per line.
    barriers: dict[str, tuple[str, ...]] = {}
    fences: dict[str, tuple[str, ...]] = {}
    # A @qd.real_func: what its definition starts with, and how it receives one of the
    # kernel's ndarrays (None: kernel parameters are globals every function sees, as in GLSL;
    # otherwise it gets them, and the extents and scalars it uses, as extra parameters).
    function_qualifier = ""
    buffer_param: str | None = "{type}* {name}"
    out_param = "{type}& {name}"  # a function's result scalar, written through (a vector / struct result)
    inout_param = "{type}& {name}"  # a caller's local the function reads and updates (its random stream)

    def helper_values(self, subgroup_size: int | None) -> dict:
        """What the target's helper templates read besides the helper itself."""
        return {}

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is an immutable description; per-translation state "
                             "belongs in the TranslationContext or the renderer's Usage")

    # ---------------------------------------------------------------- names

    def identifier(self, name: str) -> str:
        """A user's name as an identifier of this language: reserved words and the prefixes
        the generated code keeps for itself get a ``_`` suffix."""
        if name in self.reserved or name.startswith(("qd_", "gl_", "__")):
            return name + "_"
        return name

    # Whether shared memory can be read as another type in place (a pointer cast): GLSL's
    # cannot, so its float CAS loops on shared arrays need the arrays to hold bits.
    shared_views = True

    def entry_identifier(self, name: str) -> str:
        """An entry point's name for a task named ``name`` (the manifest lists it)."""
        return self.identifier(name)

    def type_name(self, t: T.DType, loc: ir.Loc | None = None) -> str:
        try:
            return self.types[t.name]
        except KeyError:
            raise TranspileError(f"{t.name} is not supported on the {self.name} target", loc) from None

    # ---------------------------------------------------------------- values

    def literal(self, value: bool | int | float, t: T.DType) -> str:
        raise NotImplementedError

    def cast(self, text: str, t: T.DType) -> str:
        return f"{self.types[t.name]}({text})"

    def math(self, r: Rendering, e: ir.Math, args: list[str]) -> str:
        raise NotImplementedError

    def compute_type(self, t: T.DType) -> T.DType:
        """The type arithmetic on ``t`` is carried out in (C promotes narrow ints)."""
        return t

    def bitcast(self, text: str, src: T.DType, dst: T.DType) -> str:
        raise NotImplementedError

    def binop_special(self, r: Rendering, e: ir.BinOp) -> tuple[str, int] | None:
        """Python's floor division, modulo and integer power, as helper calls."""
        t = e.type
        if e.op == "floordiv" and t.kind == "uint":
            return r.narrow(f"{r.text(e.a, PREC_MUL)} / {r.text(e.b, PREC_MUL + 1)}", PREC_MUL, t)
        if e.op == "mod" and t.kind == "uint":
            return r.narrow(f"{r.text(e.a, PREC_MUL)} % {r.text(e.b, PREC_MUL + 1)}", PREC_MUL, t)
        name = {"floordiv": "floordiv", "mod": "mod", "pow": "ipow"}.get(e.op)
        if name is None:
            return None
        # A float kept in a storage-only type (f16 as a struct) computes in its compute type.
        ht = self.compute_type(t) if t.is_float else t
        return r.narrow(f"{r.helper(name, ht)}({r.text(e.a)}, {r.text(e.b)})", PREC_PRIMARY, t)

    # ---------------------------------------------------------------- memory

    def array_ref(self, r: Rendering, array: ir.Array, index: str) -> str:
        return f"{r.array_name(array)}[{index}]"

    def shared_decl(self, r: Rendering, array: ir.SharedArray, name: str) -> str:
        """The declaration of a block-shared array in an entry point's body."""
        raise TranspileError(f"shared arrays are not supported on the {self.name} target yet", array.loc)

    def volatile_load(self, r: Rendering, e: ir.VolatileLoad, ref: str) -> str:
        raise NotImplementedError

    def vector_lane(self, r: Rendering, e: ir.VectorLane, index: str) -> str:
        """A lane of a vector load; only a target with the vector_loads capability sees one."""
        raise NotImplementedError

    def aligned(self, r: Rendering, e: ir.Aligned) -> str:
        raise NotImplementedError

    def clock(self, r: Rendering, e: ir.Clock) -> str:
        """``qd.clock_counter()``: the target's cycle counter as an i64."""
        raise TranspileError(f"qd.clock_counter() has no equivalent on the {self.name} target: it has no cycle "
                             "counter a kernel can read", e.loc,
                             hint="time the kernel from the host (qd.sync() and time.perf_counter()) instead")

    # ---------------------------------------------------------------- atomics and memory order

    def atomic_table(self, op: str, t: T.DType, space: str) -> str | None:
        """"native", "bits" (native on the same-width unsigned int), "cas", or None."""
        return "native"

    def atomic_support(self, op: str, t: T.DType, space: str, loc: ir.Loc | None) -> str:
        """How ``qd.atomic_<op>`` on a ``t`` element in ``space`` memory lowers here; what no
        target supports is refused first (elements under 32 bits but for a 16-bit CAS, float
        exchange of f16 or in shared memory), then this target's table decides."""
        what = f"qd.atomic_{op} on {t.name}"
        if t is T.bool_ or t.bits < 16 or (t.is_int and t.bits == 16 and op != "cas"):
            raise TranspileError(f"{what} is not supported on the {self.name} target: atomics need 32- or "
                                 "64-bit elements", loc, hint="use an i32 / u32 (or i64 / u64) array")
        if op == "exchange" and t is T.f16:
            raise TranspileError(f"{what} is not supported on any target", loc, hint="use an f32 element")
        if op == "exchange" and t.is_float and space == "shared":
            raise TranspileError(f"{what} in shared memory is not supported on any target", loc,
                                 hint="exchange an integer slot holding the value's bits")
        form = self.atomic_table(op, t, space)
        if form is None:
            raise TranspileError(f"{what} ({space} memory) is not supported on the {self.name} target", loc)
        return form

    def atomic_name(self, op: str, t: T.DType, space: str, loc: ir.Loc | None = None) -> str:
        """The function a native atomic ``op`` on ``t`` in ``space`` memory is spelled with
        (what ``atomic`` calls, and what the lowering tables show)."""
        raise NotImplementedError

    def atomic(self, r: Rendering, e: ir.Atomic, ref: str, value: str, expected: str | None) -> str:
        raise NotImplementedError

    def fence(self, scope: str, loc: ir.Loc) -> tuple[str, ...]:
        return self.fences[scope]

    # ---------------------------------------------------------------- block and subgroup

    def barrier(self, scope: str, loc: ir.Loc) -> tuple[str, ...]:
        if scope not in self.barriers:
            raise TranspileError(f"{scope} barriers are not supported on the {self.name} target yet", loc)
        return self.barriers[scope]

    def block_vote(self, r: Rendering, e: ir.BlockVote, pred: str) -> str:
        raise TranspileError(f"block.sync_{e.op}_nonzero is not supported on the {self.name} target yet", e.loc)

    def subgroup(self, r: Rendering, e: ir.SubgroupOp, args: list[str]) -> str:
        raise TranspileError(f"subgroup.{e.op} is not supported on the {self.name} target yet", e.loc)

    def warp(self, r: Rendering, e: ir.WarpOp, args: list[str]) -> str:
        raise TranspileError(f"qd.simt.warp.{e.name}() is not supported on the {self.name} target", e.loc)

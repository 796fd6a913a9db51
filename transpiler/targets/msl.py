"""Metal Shading Language: spellings, the entry-point signature and the params buffer.

Metal binds every ndarray as a ``device T*`` buffer and takes scalars only through
buffers, so every scalar and every shape goes into one ``constant Params&`` struct; each
entry point copies the members it reads into locals named like the CUDA parameters, so
the bodies read the same on every C++ target. Metal has no double and almost no 64-bit
atomics: both are located errors.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from .base import Helper, Renderer, f32_repr, float_text
from .cuda import identity_value
from .cxx import CXX_KEYWORDS, CxxDialect
from .emit import EntryPoint, Target, shape_arg_names

TYPES = {"bool": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long", "u8": "uchar",
         "u16": "ushort", "u32": "uint", "u64": "ulong", "f16": "half", "f32": "float"}
# IR math function -> Metal's name; the same overloads serve float and half.
FLOAT_FUNCS = {
    "sqrt": "sqrt", "rsqrt": "rsqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos",
    "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "floor": "floor", "ceil": "ceil", "round": "rint", "trunc": "trunc",
    "abs": "fabs", "atan2": "atan2", "pow": "pow", "min": "fmin", "max": "fmax",
}
# Integer functions return their argument's type; popcnt and clz are i32 in the IR.
INT_FUNCS = {"min": "min", "max": "max", "abs": "abs", "popcnt": "popcount", "clz": "clz"}
ATOMIC_FUNCS = {"add": "atomic_fetch_add_explicit", "min": "atomic_fetch_min_explicit",
                "max": "atomic_fetch_max_explicit", "and": "atomic_fetch_and_explicit",
                "or": "atomic_fetch_or_explicit", "xor": "atomic_fetch_xor_explicit",
                "exchange": "atomic_exchange_explicit"}
ATOMIC_TYPES = {"i32": "atomic_int", "u32": "atomic_uint", "f32": "atomic_float"}
# atomic_float (MSL 3.0) adds and exchanges, and only in device memory.
FLOAT_ATOMIC_OPS = ("add", "exchange")
# The built-in thread positions every entry point takes, one uint each (the x dimension).
THREAD_ATTRIBUTES = ("thread_position_in_threadgroup", "threadgroup_position_in_grid",
                     "threads_per_threadgroup", "threadgroups_per_grid")
BASE_MSL_VERSION, FLOAT_ATOMIC_MSL_VERSION = "2.1", "3.0"
# atomic_thread_fence(mem_flags, memory_order, thread_scope), the only fence that is not also
# a barrier (threadgroup_barrier in divergent code is undefined), came with Metal 3.2.
FENCE_MSL_VERSION = "3.2"
# The lane's index in its SIMD-group, added to an entry point's signature when it is read.
LANE_ATTRIBUTE = "thread_index_in_simdgroup"

# Subgroups are SIMD-groups. Lane and offset arguments are ushort in Metal.
SIMD_FUNCS = {
    "shuffle": "simd_shuffle", "shuffle_up": "simd_shuffle_up", "shuffle_down": "simd_shuffle_down",
    "shuffle_xor": "simd_shuffle_xor", "all": "simd_all", "any": "simd_any",
    "reduce_add": "simd_sum", "reduce_min": "simd_min", "reduce_max": "simd_max",
    "inclusive_add": "simd_prefix_inclusive_sum", "exclusive_add": "simd_prefix_exclusive_sum",
}
# Both memory kinds: block.sync() makes device writes visible to the block too, as
# __syncthreads() does, and a SIMD-group barrier does the same for its lanes.
BARRIERS = {"block": "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);",
            "subgroup": "simdgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);"}
# Metal has no system scope (no host-coherent device memory to order against).
FENCE_SCOPES = {"subgroup": "thread_scope_simdgroup", "block": "thread_scope_threadgroup",
                "device": "thread_scope_device", "system": "thread_scope_device"}

_VECTOR_BASES = "bool char uchar short ushort int uint long ulong half float bfloat".split()
METAL_WORDS = frozenset("""
    kernel vertex fragment visible device constant threadgroup threadgroup_imageblock thread
    ray_data object_data half bfloat uchar ushort uint ulong metal as_type texture sampler buffer
    texture1d texture1d_array texture2d texture2d_array texture3d texturecube texturecube_array
    texture2d_ms texture2d_ms_array texture_buffer depth2d depth2d_array depthcube depthcube_array
    depth2d_ms depth2d_ms_array array packed_float2 packed_float3 packed_float4 atomic atomic_int
    atomic_uint atomic_bool atomic_float atomic_ulong memory_order memory_order_relaxed mem_flags
    threadgroup_barrier simdgroup_barrier INFINITY NAN MAXFLOAT HUGE_VALF HUGE_VALH
    fmod popcount clz ctz params Params
""".split()) | frozenset(f"{b}{n}" for b in _VECTOR_BASES for n in (2, 3, 4)) \
    | frozenset(f"{b}{n}x{m}" for b in ("half", "float") for n in (2, 3, 4) for m in (2, 3, 4))


def f16_repr(value: float) -> str | None:
    """The shortest decimal that reads back as the same half, or None beyond half's range."""
    try:
        bits = struct.pack("<e", value)
    except OverflowError:
        return None
    for digits in range(1, 8):
        text = f"{value:.{digits}g}"
        if struct.pack("<e", float(text)) == bits:
            return text
    return repr(value)


class MslDialect(CxxDialect):
    name = "msl"
    file_ext = ".metal"
    subgroup_size = 32  # the SIMD-group width of every Apple GPU
    types = TYPES
    int_suffix = {"i32": "", "u32": "u", "i64": "l", "u64": "ul"}
    reserved = CXX_KEYWORDS | METAL_WORDS | frozenset(THREAD_ATTRIBUTES + (LANE_ATTRIBUTE,)) \
        | frozenset(FLOAT_FUNCS.values())
    thread_index = {
        "thread_idx": "int(thread_position_in_threadgroup)",
        "block_idx": "int(threadgroup_position_in_grid)",
        "block_dim": "int(threads_per_threadgroup)",
        "grid_dim": "int(threadgroups_per_grid)",
        "global_thread_idx": "int(threadgroup_position_in_grid * threads_per_threadgroup + "
                             "thread_position_in_threadgroup)",
        "grid_stride": "int(threads_per_threadgroup * threadgroups_per_grid)",
    }

    def literal(self, value, t: T.DType) -> str:
        if t.name == "i64" and value == -(2**63):
            return "(-9223372036854775807l - 1)"
        return super().literal(value, t)

    def float_literal(self, v: float, t: T.DType) -> str:
        if t.name == "f16" and not (v != v or v in (float("inf"), float("-inf"))):
            text = f16_repr(v)
            if text is not None:
                return float_text(text) + "h"
            return f"half({float_text(f32_repr(v))}f)"  # overflows to infinity, as in C
        return super().float_literal(v, t)

    def special_float(self, v: float, t: T.DType) -> str:
        text = {"inf": "INFINITY", "-inf": "-INFINITY", "nan": "NAN"}[repr(v)]
        return text if t.name == "f32" else f"half({text})"

    def math(self, r: Renderer, e: ir.Math, args: list[str]) -> str:
        t = e.args[0].type
        if e.fn == "isnan":
            return f"isnan({args[0]})"
        if t.is_float:
            return f"{FLOAT_FUNCS[e.fn]}({', '.join(args)})"
        if e.fn == "ffs":
            return f"{r.helper('ffs', t)}({args[0]})"
        text = f"{INT_FUNCS[e.fn]}({', '.join(args)})"
        if e.fn in ("popcnt", "clz") and t.name != "i32":
            text = f"int({text})"
        return text

    def bitcast(self, text: str, src: T.DType, dst: T.DType) -> str:
        return f"as_type<{self.types[dst.name]}>({text})"

    def barrier(self, scope: str, loc: ir.Loc) -> str:
        return BARRIERS[scope]

    def fence(self, scope: str, loc: ir.Loc) -> str:
        # Ordering device memory for other threadgroups also covers their threadgroup memory
        # (they have none of ours), so both kinds for every scope.
        return (f"atomic_thread_fence(mem_flags::mem_device | mem_flags::mem_threadgroup, memory_order_seq_cst, "
                f"{FENCE_SCOPES[scope]});")

    def shared_decl(self, r: Renderer, array: ir.SharedArray, name: str) -> str:
        size = " * ".join(str(n) for n in array.type.shape)
        return f"threadgroup {r.type(array.type.dtype)} {name}[{size}];"

    def volatile_load(self, r: Renderer, e: ir.VolatileLoad, ref: str) -> str:
        return f"{r.helper('volatile_load', e.type)}(&{ref})"

    def subgroup(self, r: Renderer, e: ir.SubgroupOp, args: list[str]) -> str:
        t = e.type
        if e.op == "invocation_id":
            r.features.add("simd_lane")
            return f"int({LANE_ATTRIBUTE})"
        if e.op == "ballot":
            # simd_ballot gives a simd_vote; its vote_t is the 64-bit lane mask.
            return f"ulong(simd_vote::vote_t(simd_ballot({args[0]})))"
        if e.op in ("all", "any"):
            return f"{SIMD_FUNCS[e.op]}({args[0]})"
        if t.bits == 64:
            raise TranspileError(f"subgroup.{e.op} on {t.name} is not supported on the msl target: SIMD-group "
                                 "functions take 8-, 16- and 32-bit values", e.loc, hint="use a 32-bit type")
        ct = self.compute_type(t)
        value = args[0] if ct == t else self.cast(args[0], ct)
        if e.op == "broadcast":
            # simd_broadcast wants a lane the whole SIMD-group agrees on; a run-time one may not be.
            fn = "simd_broadcast" if isinstance(e.args[1], ir.Const) else "simd_shuffle"
            return f"{fn}({value}, ushort({args[1]}))"
        if e.op.startswith("shuffle"):
            return f"{SIMD_FUNCS[e.op]}({value}, ushort({args[1]}))"
        if e.op in SIMD_FUNCS:
            return f"{SIMD_FUNCS[e.op]}({value})"
        # Metal has prefix sums only: min and max scans are helpers over shuffles.
        kind, op = e.op.split("_")
        extra = {}
        if kind == "exclusive":
            r.helper(f"subgroup_inclusive_{op}", ct)
            extra["identity"] = self.literal(identity_value(op, ct), ct)
        return f"{r.helper('subgroup_' + e.op, ct, **extra)}({value})"

    def atomic_table(self, op: str, t: T.DType, space: str) -> str | None:
        if t.bits != 32:
            return "native"  # atomic() names what Metal lacks (64-bit atomics, f16)
        if t.is_int:
            return "native" if op in ATOMIC_FUNCS or op == "cas" else "cas"
        if op in FLOAT_ATOMIC_OPS and space == "global":
            return "native"
        # Float min / max / mul, and anything on threadgroup floats: a loop over the 32-bit
        # compare-exchange on the value's bits.
        return "cas" if op in ("add", "mul", "min", "max") else None

    def atomic(self, r: Renderer, e: ir.Atomic, ref: str, value: str, expected: str | None) -> str:
        t = e.type
        shared = isinstance(e.array, ir.SharedArray)
        if t.is_int and t.bits == 64:
            raise TranspileError(f"qd.atomic_{e.op} on {t.name} is not supported on the msl target: Metal has no "
                                 "64-bit integer read-modify-write atomics", e.loc, hint="use i32 or u32")
        supported = t.name in ATOMIC_TYPES and (
            (t.is_int and (e.op in ATOMIC_FUNCS or e.op == "cas"))
            or (t.is_float and e.op in FLOAT_ATOMIC_OPS and not shared))
        if not supported:
            where = " on a shared array" if shared else ""
            raise TranspileError(f"qd.atomic_{e.op} on {t.name}{where} is not supported on the msl target", e.loc)
        if t.is_float:
            r.features.add("atomic_float")
        space = "threadgroup" if shared else "device"
        # reinterpret_cast, unlike a C cast, refuses to change the address space: a mistake
        # here fails the compile check instead of passing silently.
        pointer = f"reinterpret_cast<{space} {ATOMIC_TYPES[t.name]}*>(&{ref})"
        if e.op == "cas":
            return f"{r.helper('atomic_cas_' + space, t)}({pointer}, {expected}, {value})"
        return f"{ATOMIC_FUNCS[e.op]}({pointer}, {value}, memory_order_relaxed)"


@dataclass
class Member:
    """One member of the params struct: a scalar parameter or one extent of an ndarray."""

    name: str      # the C name, also the entry point's local copy
    dtype: T.DType
    offset: int
    loc: ir.Loc
    param: str     # the Python parameter it belongs to
    dim: int | None = None


def first_f64(kernel: ir.Kernel) -> ir.Loc | None:
    """The earliest place in the source where the kernel uses f64."""
    found: list[ir.Loc] = []

    def expr(e: ir.Expr) -> None:
        stack = [e]
        while stack:
            n = stack.pop()
            if n.type is T.f64:
                found.append(n.loc)
            for f in ("a", "b", "cond", "value", "expected"):
                sub = getattr(n, f, None)
                if isinstance(sub, ir.Expr):
                    stack.append(sub)
            stack.extend(getattr(n, "indices", None) or [])
            stack.extend(getattr(n, "args", None) or [])

    def block(stmts: list[ir.Stmt]) -> None:
        for st in stmts:
            for f in ("init", "value", "cond", "start", "stop", "step", "expr"):
                sub = getattr(st, f, None)
                if isinstance(sub, ir.Expr):
                    expr(sub)
            for sub in getattr(st, "indices", None) or []:
                expr(sub)
            var = getattr(st, "var", None)
            if var is not None and var.type is T.f64:
                found.append(st.loc)
            if isinstance(st, ir.DeclareShared) and st.array.type.dtype is T.f64:
                found.append(st.loc)
            for f in ("then", "orelse", "body"):
                block(getattr(st, f, None) or [])

    for p in kernel.params:
        if (p.type.dtype if p.is_array else p.type) is T.f64:
            found.append(p.loc)
    for task in kernel.tasks:
        for begin, end in task.ranges:
            expr(begin)
            expr(end)
        for s in task.shared:
            if s.type.dtype is T.f64:
                found.append(s.loc)
        block(task.body)
    return min(found, key=lambda loc: (loc.line, loc.col)) if found else None


def _strip_comment(line: str) -> str:
    return line.split("//", 1)[0]


class MslRenderer(Renderer):
    def stmt_Fence(self, st: ir.Fence, depth: int) -> None:
        self.features.add("fence")
        super().stmt_Fence(st, depth)


class MslTarget(Target):
    name = "msl"
    dialect = MslDialect()
    renderer_class = MslRenderer
    template = "msl/module.metal.j2"
    file_ext = ".metal"

    def __init__(self) -> None:
        self.members: list[Member] = []
        self.params_buffer_index = 0
        self.features: set[str] = set()

    @property
    def msl_version(self) -> str:
        if "fence" in self.features:
            return FENCE_MSL_VERSION
        return FLOAT_ATOMIC_MSL_VERSION if "atomic_float" in self.features else BASE_MSL_VERSION

    @property
    def language(self) -> str:  # type: ignore[override]
        return f"Metal Shading Language {self.msl_version}"

    def translate(self, kernel: ir.Kernel, options: dict) -> tuple[dict[str, str], dict]:
        loc = first_f64(kernel)
        if loc is not None:
            raise TranspileError("f64 is not supported on the msl target: Metal has no 64-bit floating-point type",
                                 loc, hint="use qd.f32")
        from ..shmem import reject_unsupported

        # Metal's fences reach the device at most (mem_flags::mem_device): no system fence, no NVSHMEM.
        reject_unsupported(kernel, self.name, system_scope=False)
        sources, manifest = super().translate(kernel, options)
        size, align = self.params_size()
        buffer = None
        if self.members:
            buffer = {"struct": "Params", "buffer_index": self.params_buffer_index,
                      "size": size, "alignment": align,
                      "members": [{"name": m.name, "dtype": m.dtype.name, "offset": m.offset} for m in self.members]}
        out = {}
        for key, value in manifest.items():  # keep the params buffer next to the params
            out[key] = value
            if key == "params":
                out["params_buffer"] = buffer
        return sources, out

    # ---------------------------------------------------------------- layout

    def params_size(self) -> tuple[int, int]:
        align = max((m.dtype.nbytes for m in self.members), default=1)
        end = max((m.offset + m.dtype.nbytes for m in self.members), default=0)
        return -(-end // align) * align, align

    def layout(self, r: Renderer, kernel: ir.Kernel) -> list[Member]:
        """Members in parameter order, each at its natural alignment (C++ struct rules)."""
        members, offset = [], 0

        def add(name: str, dtype: T.DType, loc: ir.Loc, param: str, dim: int | None = None) -> None:
            nonlocal offset
            offset = -(-offset // dtype.nbytes) * dtype.nbytes
            members.append(Member(name, dtype, offset, loc, param, dim))
            offset += dtype.nbytes

        for p in kernel.params:
            if p.is_array:
                for d in range(p.type.ndim):
                    add(r.shape_names[(id(p), d)], T.i32, p.loc, p.name, d)
            else:
                add(r.param_name(p), p.type, p.loc, p.name)
        return members

    # ---------------------------------------------------------------- per target

    def signature(self, r: Renderer, kernel: ir.Kernel, task: ir.Task) -> list[str]:
        out, buffer = [], 0
        for p in kernel.params:
            name = r.declare_name(p, p.name)
            if p.is_array:
                out.append(f"device {r.type(p.type.dtype, p.loc)}* {name} [[buffer({buffer})]]")
                buffer += 1
                for d, shape in enumerate(shape_arg_names(p)):
                    r.shape_names[(id(p), d)] = r.declare_name((p, d), shape)
            else:
                r.type(p.type, p.loc)
        self.members = self.layout(r, kernel)
        self.params_buffer_index = buffer
        if self.members:
            out.append(f"constant Params& params [[buffer({buffer})]]")
        out.extend(f"uint {a} [[{a}]]" for a in THREAD_ATTRIBUTES)
        return out

    def render_entry(self, kernel: ir.Kernel, task: ir.Task, options: dict) -> tuple[EntryPoint, Renderer]:
        entry, r = super().render_entry(kernel, task, options)
        if "simd_lane" in r.features:
            entry.params.append(f"uint {LANE_ATTRIBUTE} [[{LANE_ATTRIBUTE}]]")
        self.features |= r.features
        body = "\n".join(_strip_comment(line) for line in entry.lines)
        copies = [f"const {self.dialect.types[m.dtype.name]} {m.name} = params.{m.name};{r.comment(m.loc)}"
                  for m in self.members if re.search(rf"\b{re.escape(m.name)}\b", body)]
        entry.lines[:0] = copies
        return entry, r

    def param_manifest(self, kernel: ir.Kernel) -> list[dict]:
        out, buffer = [], 0
        by_param: dict[str, list[Member]] = {}
        for m in self.members:
            by_param.setdefault(m.param, []).append(m)
        for p in kernel.params:
            if p.is_array:
                out.append({"name": p.name, "kind": "ndarray", "dtype": p.type.dtype.name, "ndim": p.type.ndim,
                            "buffer_index": buffer, "shape_params_offsets": [m.offset for m in by_param[p.name]],
                            "shape_dtype": "i32"})
                buffer += 1
            else:
                out.append({"name": p.name, "kind": "scalar", "dtype": p.type.name,
                            "params_offset": by_param[p.name][0].offset})
        return out

    def requirements(self, features: set[str], used_types: set[str]) -> dict:
        # Metal compiles with fast math by default, which drops the IEEE semantics of inf,
        # nan and signed zero that the other targets keep: hosts should turn it off.
        return {"msl_version": self.msl_version, "fast_math": False, "extensions": []}

    def module_context(self, entries: list[EntryPoint], helpers: list[Helper], features: set[str],
                       used_types: set[str]) -> dict:
        size, align = self.params_size()
        members = [{"name": m.name, "ctype": self.dialect.types[m.dtype.name], "offset": m.offset}
                   for m in self.members]
        return {"dialect_dir": "msl", "qd_inline": "inline", "fmod": {"f16": "fmod", "f32": "fmod"},
                "params_struct": members, "params_size": size, "params_buffer_index": self.params_buffer_index,
                "atomic_types": ATOMIC_TYPES}

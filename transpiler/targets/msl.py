"""Metal Shading Language: spellings, the entry-point signature and the params buffer.

Metal binds every ndarray as a ``device T*`` buffer and takes scalars only through
buffers, so every scalar and every shape goes into one ``constant Params&`` struct; each
entry point copies the members it reads into locals named like the CUDA parameters, so
the bodies read the same on every C++ target. Metal has no double and almost no 64-bit
atomics: both are located errors.
"""
from __future__ import annotations

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.records import record
from .context import EntryPoint, Needs, TranslationContext, Usage
from .cxx import CXX_KEYWORDS, CxxDialect
from .dialect import MATH_FUNCS, f32_repr, float_text, shortest_repr
from .host_abi import HOST_SIZES, HOST_TYPES, buffer_table, struct_layout
from .renderer import Renderer
from .target import Capabilities, Target, element_entry, param_role

TYPES = {"bool": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long", "u8": "uchar",
         "u16": "ushort", "u32": "uint", "u64": "ulong", "f16": "half", "f32": "float"}
# Integer functions return their argument's type; popcnt and clz are i32 in the IR.
INT_FUNCS = {"min": "min", "max": "max", "abs": "abs", "popcnt": "popcount", "clz": "clz"}
ATOMIC_FUNCS = {"add": "atomic_fetch_add_explicit", "min": "atomic_fetch_min_explicit",
                "max": "atomic_fetch_max_explicit", "and": "atomic_fetch_and_explicit",
                "or": "atomic_fetch_or_explicit", "xor": "atomic_fetch_xor_explicit",
                "exchange": "atomic_exchange_explicit"}
ATOMIC_TYPES = {"i32": "atomic_int", "u32": "atomic_uint", "f32": "atomic_float"}
ADDRESS_SPACES = {"global": "device", "shared": "threadgroup"}
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
    "inclusive_mul": "simd_prefix_inclusive_product", "exclusive_mul": "simd_prefix_exclusive_product",
}
# Both memory kinds: block.sync() makes device writes visible to the block too, as
# __syncthreads() does, and a SIMD-group barrier does the same for its lanes.
BARRIERS = {"block": ("threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);",),
            "subgroup": ("simdgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);",)}
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


EVIDENCE = (
    "Metal's device-scope fence orders only atomic accesses (the Metal Shading Language's `atomic_thread_fence`, "
    "as Quadrants' grid.mem_fence guide warns): data another block reads after a "
    "`grid.mem_fence()` handshake must itself be published with an atomic on Metal.",
    "64-bit integer atomics do not exist on Metal; f64 does not exist at all: both are located errors.",
)


@record
class MslNeeds(Needs):
    fence: bool = False         # atomic_thread_fence: MSL 3.2
    atomic_float: bool = False  # atomic_float: MSL 3.0
    simd_lane: bool = False     # the entry point takes [[thread_index_in_simdgroup]]


def f16_repr(value: float) -> str | None:
    """The shortest decimal that reads back as the same half, or None beyond half's range."""
    try:
        return shortest_repr(value, "<e", 7)
    except OverflowError:
        return None


class MslDialect(CxxDialect):
    name = "msl"
    types = TYPES
    buffer_param = "device {type}* {name}"
    out_param = "thread {type}& {name}"
    inout_param = "thread {type}& {name}"
    barriers = BARRIERS
    fmod = {"f16": "fmod", "f32": "fmod"}
    copysign = {"f16": "copysign", "f32": "copysign"}
    int_suffix = {"i32": "", "u32": "u", "i64": "l", "u64": "ul"}
    reserved = CXX_KEYWORDS | METAL_WORDS | frozenset(THREAD_ATTRIBUTES + (LANE_ATTRIBUTE,)) \
        | frozenset(MATH_FUNCS.values())
    thread_index = {
        "thread_idx": "int(thread_position_in_threadgroup)",
        "block_idx": "int(threadgroup_position_in_grid)",
        "block_dim": "int(threads_per_threadgroup)",
        "grid_dim": "int(threadgroups_per_grid)",
        "global_thread_idx": "int(threadgroup_position_in_grid * threads_per_threadgroup + "
                             "thread_position_in_threadgroup)",
        "grid_stride": "int(threads_per_threadgroup * threadgroups_per_grid)",
    }

    def literal(self, value: bool | int | float, t: T.DType) -> str:
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
        if t.is_float:  # (the same overloads serve float and half)
            return f"{MATH_FUNCS[e.fn]}({', '.join(args)})"
        if e.fn == "ffs" or (e.fn == "abs" and r.helper_wraps(t)):
            return f"{r.helper(e.fn, t)}({args[0]})"
        text = f"{INT_FUNCS[e.fn]}({', '.join(args)})"
        if e.fn in ("popcnt", "clz") and t.name != "i32":
            text = f"int({text})"
        return text

    def bitcast(self, text: str, src: T.DType, dst: T.DType) -> str:
        return f"as_type<{self.types[dst.name]}>({text})"

    def fence(self, scope: str, loc: ir.Loc) -> tuple[str, ...]:
        # Ordering device memory for other threadgroups also covers their threadgroup memory
        # (they have none of ours), so both kinds for every scope.
        return (f"atomic_thread_fence(mem_flags::mem_device | mem_flags::mem_threadgroup, memory_order_seq_cst, "
                f"{FENCE_SCOPES[scope]});",)

    def shared_decl(self, r: Renderer, array: ir.SharedArray, name: str) -> str:
        size = " * ".join(str(n) for n in array.type.shape)
        return f"threadgroup {r.type(array.type.dtype)} {name}[{size}];"

    def volatile_load(self, r: Renderer, e: ir.VolatileLoad, ref: str) -> str:
        return f"{r.helper('volatile_load', e.type)}(&{ref})"

    def subgroup(self, r: Renderer, e: ir.SubgroupOp, args: list[str]) -> str:
        t = e.type
        if e.op == "invocation_id":
            r.needs.simd_lane = True
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
        return self.subgroup_helper(r, e.op, ct, value)

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

    def atomic_name(self, op: str, t: T.DType, space: str, loc: ir.Loc | None = None) -> str:
        if t.is_int and t.bits == 64:
            raise TranspileError(f"qd.atomic_{op} on {t.name} is not supported on the msl target: Metal has no "
                                 "64-bit integer read-modify-write atomics", loc, hint="use i32 or u32")
        shared = space == "shared"
        supported = t.name in ATOMIC_TYPES and (
            (t.is_int and (op in ATOMIC_FUNCS or op == "cas"))
            or (t.is_float and op in FLOAT_ATOMIC_OPS and not shared))
        if not supported:
            where = " on a shared array" if shared else ""
            raise TranspileError(f"qd.atomic_{op} on {t.name}{where} is not supported on the msl target", loc)
        if op == "cas":
            return f"qd_atomic_cas_{ADDRESS_SPACES[space]}"
        return ATOMIC_FUNCS[op]

    def atomic(self, r: Renderer, e: ir.Atomic, ref: str, value: str, expected: str | None) -> str:
        t, space = e.type, ir.space_of(e.array)
        fn = self.atomic_name(e.op, t, space, e.loc)
        if t.is_float:
            r.needs.atomic_float = True
        # reinterpret_cast, unlike a C cast, refuses to change the address space: a mistake
        # here fails the compile check instead of passing silently.
        pointer = f"reinterpret_cast<{ADDRESS_SPACES[space]} {ATOMIC_TYPES[t.name]}*>(&{ref})"
        if e.op == "cas":
            return f"{r.helper(fn[3:], t)}({pointer}, {expected}, {value})"
        return f"{fn}({pointer}, {value}, memory_order_relaxed)"


@record
class Member:
    """One member of the params struct: a scalar parameter or one extent of an ndarray."""

    name: str      # the C name, also the entry point's local copy
    dtype: T.DType
    offset: int
    loc: ir.Loc
    param: str     # the Python parameter it belongs to
    param_id: int  # ... and its identity
    dim: int | None = None


class MslRenderer(Renderer):
    def stmt_Fence(self, st: ir.Fence, depth: int) -> None:
        self.needs.fence = True
        super().stmt_Fence(st, depth)


@record
class Layout:
    """Every scalar and extent in one params struct (C++ rules: each member at its natural
    alignment, in parameter order), bound after the ndarrays' buffers."""

    members: list[Member]
    buffer_index: int   # the params struct's [[buffer(k)]]: after every ndarray's

    @classmethod
    def of(cls, ctx: TranslationContext) -> Layout:
        members, offset = [], 0

        def add(name: str, dtype: T.DType, loc: ir.Loc, param: ir.Param, dim: int | None = None) -> None:
            nonlocal offset
            offset = -(-offset // dtype.nbytes) * dtype.nbytes
            members.append(Member(name, dtype, offset, loc, param.name, id(param), dim))
            offset += dtype.nbytes

        for p in ctx.kernel.params:
            if p.is_array:
                for d in range(p.type.passed_extents):
                    add(ctx.names.shape(p, d), T.i32, p.loc, p, d)
            else:
                add(ctx.names.of(p), p.type, p.loc, p)
        return cls(members, sum(1 for p in ctx.kernel.params if p.is_array))

    def size(self) -> tuple[int, int]:
        align = max((m.dtype.nbytes for m in self.members), default=1)
        end = max((m.offset + m.dtype.nbytes for m in self.members), default=0)
        return -(-end // align) * align, align


class MslTarget(Target):
    name = "msl"
    title = "Metal"
    dialect = MslDialect()
    # Metal's fences reach the device at most (mem_flags::mem_device): no system fence, no NVSHMEM.
    caps = Capabilities(f64=False, fence_orders_plain_stores=False)
    why_not = {"f64": "Metal has no 64-bit floating-point type",
               "system_scope": "it has no system (host and peer device) memory scope for device code",
               "warp_api": "qd.simt.warp is CUDA's warp API (explicit lane masks), native on CUDA and HIP only",
               "recursion": "Metal Shading Language forbids recursive functions"}
    renderer_class = MslRenderer
    needs_class = MslNeeds
    file_ext = ".metal"
    module_template = "msl/module.metal.j2"
    helper_templates = ("msl/helpers.j2", "cxx/helpers.j2")
    header_template = "msl/header.h.j2"
    default_subgroup_size = 32  # the SIMD-group width of every Apple GPU
    checker = "transpiler.toolchains.msl_check"
    evidence = EVIDENCE

    def msl_version(self, needs: MslNeeds) -> str:
        if needs.fence:
            return FENCE_MSL_VERSION
        return FLOAT_ATOMIC_MSL_VERSION if needs.atomic_float else BASE_MSL_VERSION

    def language(self, ctx: TranslationContext) -> str:
        return f"Metal Shading Language {self.msl_version(ctx.needs)}"

    def layout(self, ctx: TranslationContext) -> Layout:
        return Layout.of(ctx)

    def signature(self, r: Renderer, ctx: TranslationContext, task: ir.Task) -> list[str]:
        out, buffer = [], 0
        for p in ctx.kernel.params:
            if p.is_array:
                out.append(f"device {r.type(p.type.dtype, p.loc)}* {ctx.names.of(p)} [[buffer({buffer})]]")
                buffer += 1
            else:
                r.type(p.type, p.loc)
        if ctx.layout.members:
            out.append(f"constant Params& params [[buffer({ctx.layout.buffer_index})]]")
        out.extend(f"uint {a} [[{a}]]" for a in THREAD_ATTRIBUTES)
        return out

    def finish_entry(self, r: Renderer, ctx: TranslationContext, entry: EntryPoint) -> None:
        if r.needs.simd_lane:
            entry.params.append(f"uint {LANE_ATTRIBUTE} [[{LANE_ATTRIBUTE}]]")
        # Each entry point copies the members its body reads into locals named like the CUDA
        # parameters, so the bodies read the same on every C++ target.
        copies = [f"const {self.dialect.types[m.dtype.name]} {m.name} = params.{m.name};{r.comment(m.loc)}"
                  for m in ctx.layout.members if (m.param_id, m.dim) in r.referenced]
        entry.lines[:0] = copies

    def param_manifest(self, ctx: TranslationContext) -> list[dict]:
        out, buffer = [], 0
        by_param: dict[str, list[Member]] = {}
        for m in ctx.layout.members:
            by_param.setdefault(m.param, []).append(m)
        for p in ctx.kernel.params:
            if p.is_array:
                out.append({"name": p.name, "kind": "ndarray", "dtype": p.type.dtype.name, "ndim": p.type.ndim,
                            **element_entry(p), "buffer_index": buffer,
                            "shape_params_offsets": [m.offset for m in by_param.get(p.name, [])],
                            "shape_dtype": "i32", **param_role(p)})
                buffer += 1
            else:
                out.append({"name": p.name, "kind": "scalar", "dtype": p.type.name,
                            "params_offset": by_param[p.name][0].offset, **param_role(p)})
        return out

    def requirements(self, ctx: TranslationContext) -> dict:
        # Metal compiles with fast math by default, which drops the IEEE semantics of inf,
        # nan and signed zero that the other targets keep: hosts should turn it off.
        return {"msl_version": self.msl_version(ctx.needs), "fast_math": False, "extensions": []}

    def finish_manifest(self, ctx: TranslationContext, manifest: dict) -> dict:
        layout = ctx.layout
        size, align = layout.size()
        buffer = None
        if layout.members:
            buffer = {"struct": "Params", "buffer_index": layout.buffer_index, "size": size, "alignment": align,
                      "members": [{"name": m.name, "dtype": m.dtype.name, "offset": m.offset}
                                  for m in layout.members]}
        out = {}
        for key, value in manifest.items():  # keep the params buffer next to the params
            out[key] = value
            if key == "params":
                out["params_buffer"] = buffer
        return out

    def module_context(self, ctx: TranslationContext, entries: list[EntryPoint], usage: Usage) -> dict:
        size, _ = ctx.layout.size()
        members = [{"name": m.name, "ctype": self.dialect.types[m.dtype.name], "offset": m.offset}
                   for m in ctx.layout.members]
        return {"params_struct": members, "params_size": size, "params_buffer_index": ctx.layout.buffer_index}

    def helper_context(self, ctx: TranslationContext) -> dict:
        return {**super().helper_context(ctx), "atomic_types": ATOMIC_TYPES}

    def header_context(self, manifest: dict, common: dict) -> dict:
        fields = []
        for p in common["params"]:
            if p["kind"] == "ndarray":
                for name, off in zip(p["shapes"], p["shape_params_offsets"], strict=True):
                    fields.append((name, HOST_TYPES["i32"], 4, off))
            else:
                fields.append((p["cxx"], HOST_TYPES[p["dtype"]], HOST_SIZES[p["dtype"]], p["params_offset"]))
        return {"struct": "Params", "fields": struct_layout(fields), "buffers": buffer_table(common, "buffer_index"),
                "params_buffer": manifest.get("params_buffer")}

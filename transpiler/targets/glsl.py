"""GLSL 4.50 compute shaders for Vulkan 1.2 (glslang -> SPIR-V): spellings (the dialect) and
the target: the entry points' resources, and the manifest a Vulkan host binds against. What
the renderer does differently for GLSL is in ``glsl_render``, the push-constant layout in
``glsl_layout``.

Vulkan runs one SPIR-V module per pipeline, so each task is its own ``<task>.comp`` file
whose entry point is ``main``. Every file declares every ndarray parameter (binding k is
the k-th ndarray parameter) and the same push-constant block, so one descriptor set and
one pipeline layout serve all of a kernel's tasks.
"""
from __future__ import annotations

import re
import warnings

from ..errors import Diagnostic, TranslationWarning, TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.records import record, field
from ..ir.walk import all_exprs, iter_expr, task_node_kinds
from ..passes.legalize import UINT_OF_WIDTH
from .context import EntryPoint, Needs, TranslationContext, Usage
from .dialect import (
    MATH_FUNCS, PREC_AND, PREC_EQ, PREC_OR, PREC_PRIMARY, Dialect, f32_repr, float_text,
)
from . import glsl_f64
from .glsl_layout import Layout
from .glsl_render import FENCE_WORD, GlslRenderer
from .host_abi import GLSL_PUSH_SIZES, GLSL_PUSH_TYPES, buffer_table, struct_layout
from .renderer import Renderer
from .target import Capabilities, Target, element_entry, param_role

GLSL_VERSION = "450"
VULKAN_VERSION = "1.2"
TARGET_ENV = f"vulkan{VULKAN_VERSION}"  # glslang's and spirv-val's --target-env
SPIRV_VERSION = "1.5"  # what glslang emits for --target-env vulkan1.2
# The subgroup width shaders are specialized to when the caller names none: NVIDIA's, and
# what Metal (through MoltenVK) and most desktop drivers report.
DEFAULT_SUBGROUP_SIZE = 32
# The widest SIMD vector lavapipe runs a workgroup in (AVX-512's 16 lanes of 32 bits): a
# workgroup size not a multiple of it leaves lanes past the workgroup (see finish_entry).
SIMD_LANES = 16

TYPES = {"bool": "bool", "i8": "int8_t", "i16": "int16_t", "i32": "int", "i64": "int64_t",
         "u8": "uint8_t", "u16": "uint16_t", "u32": "uint", "u64": "uint64_t",
         "f16": "float16_t", "f32": "float", "f64": "double"}

# GLSL 4.60 keywords and words reserved for future use, the explicit-arithmetic type names,
# and every built-in function: a local named `min` would hide the function for the rest of
# its scope, so it is renamed like a keyword.
GLSL_KEYWORDS = frozenset("""
const uniform buffer shared attribute varying coherent volatile restrict readonly writeonly
atomic_uint layout centroid flat smooth noperspective patch sample invariant precise break
continue do for while switch case default if else subroutine in out inout int void bool true
false float double discard return uint lowp mediump highp precision struct
common partition active asm class union enum typedef template this resource goto inline
noinline public static extern external interface long short half fixed unsigned superp input
output filter sizeof cast namespace using main
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t float16_t float32_t float64_t
""".split())
GLSL_BUILTINS = frozenset("""
radians degrees sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh pow exp log exp2
log2 sqrt inversesqrt abs sign floor trunc round roundEven ceil fract mod modf min max clamp
mix step smoothstep isnan isinf floatBitsToInt floatBitsToUint intBitsToFloat uintBitsToFloat
fma frexp ldexp packUnorm2x16 packSnorm2x16 packUnorm4x8 packSnorm4x8 unpackUnorm2x16
unpackSnorm2x16 unpackUnorm4x8 unpackSnorm4x8 packHalf2x16 unpackHalf2x16 packDouble2x32
unpackDouble2x32 packUint2x32 unpackUint2x32 packInt2x32 unpackInt2x32 length distance dot
cross normalize faceforward reflect refract matrixCompMult outerProduct transpose determinant
inverse lessThan lessThanEqual greaterThan greaterThanEqual equal notEqual any all not
uaddCarry usubBorrow umulExtended imulExtended bitfieldExtract bitfieldInsert bitfieldReverse
bitCount findLSB findMSB atomicAdd atomicMin atomicMax atomicAnd atomicOr atomicXor
atomicExchange atomicCompSwap atomicCounter atomicCounterIncrement atomicCounterDecrement
barrier memoryBarrier memoryBarrierShared memoryBarrierBuffer memoryBarrierImage
memoryBarrierAtomicCounter groupMemoryBarrier texture textureSize texelFetch imageLoad
imageStore imageSize
""".split())
# Vector, matrix, sampler, image and texture type names form families too large to list.
_RESERVED_PATTERN = re.compile(
    r"^((i|u|b|d|f16|f32|f64|i8|i16|i32|i64|u8|u16|u32|u64)?vec[234]"
    r"|(d|f16|f32|f64)?mat[234](x[234])?"
    r"|[iu]?(sampler|image|texture|subpassInput)\w*)$")

# IR math function -> GLSL built-in (one overloaded name serves every float width): C's names
# but for these.
FLOAT_FUNCS = {**MATH_FUNCS, "rsqrt": "inversesqrt", "round": "roundEven", "abs": "abs", "atan2": "atan",
               "min": "min", "max": "max"}
# GLSL declares these for double too; the rest (exp, sin, pow, ...) exist for 16- and 32-bit
# floats only: on f64 they are the f64 library's (glsl_f64).
F64_NATIVE = frozenset({"sqrt", "rsqrt", "floor", "ceil", "round", "trunc", "abs", "min", "max"})

# Vulkan features (VkPhysicalDevice*Features member names) -> the GLSL extension that gives
# the shader access, and the device extension needed beyond Vulkan 1.2 core.
_ATOMIC_FLOAT = ("GL_EXT_shader_atomic_float", "VK_EXT_shader_atomic_float")
FEATURES = {
    "shaderInt8": ("GL_EXT_shader_explicit_arithmetic_types_int8", None),
    "shaderInt16": ("GL_EXT_shader_explicit_arithmetic_types_int16", None),
    "shaderFloat16": ("GL_EXT_shader_explicit_arithmetic_types_float16", None),
    "shaderInt64": ("GL_EXT_shader_explicit_arithmetic_types_int64", None),
    "shaderFloat64": (None, None),
    "storageBuffer8BitAccess": (None, None),
    "storageBuffer16BitAccess": (None, None),
    "shaderBufferInt64Atomics": ("GL_EXT_shader_atomic_int64", None),
    "shaderSharedInt64Atomics": ("GL_EXT_shader_atomic_int64", None),
    "shaderBufferFloat32AtomicAdd": _ATOMIC_FLOAT,
    "shaderSharedFloat32AtomicAdd": _ATOMIC_FLOAT,
    # 64-bit integers in subgroup operations (Vulkan 1.2 core feature).
    "shaderSubgroupExtendedTypes": ("GL_EXT_shader_subgroup_extended_types_int64", None),
    # qd.clock_counter(): the device's real-time clock (Quadrants' spirv_has_shader_clock)
    "shaderDeviceClock": ("GL_EXT_shader_realtime_clock", "VK_KHR_shader_clock"),
}
# What using a dtype anywhere in a shader needs.
TYPE_FEATURES = {"i8": "shaderInt8", "u8": "shaderInt8", "i16": "shaderInt16", "u16": "shaderInt16",
                 "f16": "shaderFloat16", "i64": "shaderInt64", "u64": "shaderInt64", "f64": "shaderFloat64"}
# What a dtype needs as the element of a storage buffer, beyond its arithmetic.
STORAGE_FEATURES = {8: "storageBuffer8BitAccess", 16: "storageBuffer16BitAccess"}

ATOMIC_FUNCS = {"add": "atomicAdd", "min": "atomicMin", "max": "atomicMax", "and": "atomicAnd",
                "or": "atomicOr", "xor": "atomicXor", "exchange": "atomicExchange", "cas": "atomicCompSwap"}
# The capability table: (op, dtype) -> the Vulkan features a native GLSL atomic on a storage
# buffer needs (on shared memory: the same names with Shared for Buffer). Every device has
# the 32-bit integer ones; f32 add is in nearly every desktop driver. Float exchange goes
# through the bits (see atomic_table); float min/max and f64 add are CAS loops, as
# Quadrants has them on SPIR-V: their extensions (atomic_float2, Float64AtomicAdd) are rare.
NATIVE_ATOMICS: dict[tuple[str, str], tuple[str, ...]] = {
    **{(op, t): () for op in ATOMIC_FUNCS for t in ("i32", "u32")},
    **{(op, t): ("shaderBufferInt64Atomics",) for op in ATOMIC_FUNCS for t in ("i64", "u64")},
    ("add", "f32"): ("shaderBufferFloat32AtomicAdd",),
}
# Reinterpretations of a value's bits: (from, to) -> GLSL function.
BITCASTS = {
    ("f32", "u32"): "floatBitsToUint", ("u32", "f32"): "uintBitsToFloat",
    ("f32", "i32"): "floatBitsToInt", ("i32", "f32"): "intBitsToFloat",
    ("f64", "u64"): "doubleBitsToUint64", ("u64", "f64"): "uint64BitsToDouble",
    ("f64", "i64"): "doubleBitsToInt64", ("i64", "f64"): "int64BitsToDouble",
    ("f16", "u16"): "float16BitsToUint16", ("u16", "f16"): "uint16BitsToFloat16",
    ("f16", "i16"): "float16BitsToInt16", ("i16", "f16"): "int16BitsToFloat16",
}
# Fences by scope. GLSL's barriers order every memory kind; Vulkan has no system scope for
# storage buffers, so "system" is the device-scope one (what Quadrants emits for
# grid.mem_fence: OpMemoryBarrier(Device, AcquireRelease | UniformMemory ...)).
FENCES = {"subgroup": ("groupMemoryBarrier();",), "block": ("groupMemoryBarrier();",),
          "device": ("memoryBarrier();",), "system": ("memoryBarrier();",)}
# barrier() alone makes only shared memory visible to the workgroup; block.sync() promises it
# for buffer writes too, as __syncthreads() does.
BARRIERS = {"block": ("groupMemoryBarrier();", "barrier();"), "subgroup": ("subgroupBarrier();",)}
# Subgroup operations by the GL_KHR_shader_subgroup_<class> extension that declares them; the
# same classes name the VkSubgroupFeatureFlagBits a device must report for compute.
SUBGROUP_CLASSES = {
    "invocation_id": "basic", "shuffle": "shuffle", "shuffle_xor": "shuffle",
    "shuffle_up": "shuffle_relative", "shuffle_down": "shuffle_relative", "broadcast": "ballot",
    "ballot": "ballot", "all": "vote", "any": "vote",
    **{f"{kind}_{op}": "arithmetic" for kind in ("reduce", "inclusive", "exclusive") for op in ("add", "min", "max")},
    **{f"{kind}_{op}": "arithmetic" for kind in ("inclusive", "exclusive") for op in ("mul", "and", "or", "xor")},
}
SUBGROUP_FUNCS = {
    "shuffle": "subgroupShuffle", "shuffle_xor": "subgroupShuffleXor", "all": "subgroupAll", "any": "subgroupAny",
    "reduce_add": "subgroupAdd", "reduce_min": "subgroupMin", "reduce_max": "subgroupMax",
    **{f"{kind}_{op}": f"subgroup{kind.title()}{op.title()}" for kind in ("inclusive", "exclusive")
       for op in ("add", "min", "max", "mul", "and", "or", "xor")},
}
# The 32-bit type subgroup operations on a narrower value go through: the 8- and 16-bit
# forms would need shaderSubgroupExtendedTypes and a GL_EXT extension per type.
SUBGROUP_WIDE = {"i8": T.i32, "i16": T.i32, "u8": T.u32, "u16": T.u32, "f16": T.f32}
EVIDENCE = (
    "Atomics are SPIR-V `OpAtomic*` at device scope. f32 add needs `GL_EXT_shader_atomic_float` "
    "(recorded in the manifest); f32/f64 exchange goes through a uint view of the buffer "
    "(`OpAtomicExchange` on the bits); other float ops are CAS loops over `atomicCompSwap` on that view.",
    "Buffers that a fence or volatile load touches are declared `coherent`, so that device-scope "
    "availability/visibility applies to them (GLSL's rule for cross-workgroup communication).",
    "`grid.mem_fence()` is `memoryBarrier()`; `block.mem_fence()` is `groupMemoryBarrier()`.",
)


@record
class GlslNeeds(Needs):
    features: set[str] = field(default_factory=set)          # Vulkan features (VkPhysicalDevice*Features members)
    subgroup_classes: set[str] = field(default_factory=set)  # GL_KHR_shader_subgroup_<class> used
    f64_via_f32: set[str] = field(default_factory=set)       # f64 functions computed in f32
    coherent: bool = False  # a device-scope fence or a volatile load needs coherent buffers


class GlslDialect(Dialect):
    buffer_param = None  # buffers and push constants are globals
    out_param = "out {type} {name}"
    inout_param = "inout {type} {name}"
    name = "glsl"
    types = TYPES
    reserved = GLSL_KEYWORDS | GLSL_BUILTINS

    shared_views = False

    def entry_identifier(self, name: str) -> str:
        # Every shader's entry point is main(): the task's name only names the file.
        return name
    thread_index = {
        "thread_idx": "int(gl_LocalInvocationID.x)",
        "block_idx": "int(gl_WorkGroupID.x)",
        "block_dim": "int(gl_WorkGroupSize.x)",
        "grid_dim": "int(gl_NumWorkGroups.x)",
        "global_thread_idx": "int(gl_GlobalInvocationID.x)",
        "grid_stride": "int(gl_WorkGroupSize.x * gl_NumWorkGroups.x)",
    }
    atomics = NATIVE_ATOMICS
    bitcasts = BITCASTS
    barriers = BARRIERS
    fences = FENCES

    def identifier(self, name: str) -> str:
        if _RESERVED_PATTERN.match(name):
            return name + "_"
        return super().identifier(name)

    def literal(self, value: bool | int | float, t: T.DType) -> str:
        if t is T.bool_:
            return "true" if value else "false"
        if t.is_float:
            return self.float_literal(float(value), t)
        value = int(value)
        if t.bits < 32:  # no literal suffix exists for 8-bit ints; a constructor reads the same for all
            return f"{TYPES[t.name]}({value})"
        if t.name == "i32":
            return "(-2147483647 - 1)" if value == -(2**31) else str(value)
        if t.name == "i64":
            return "(-9223372036854775807l - 1l)" if value == -(2**63) else f"{value}l"
        return f"{value}{'u' if t.bits == 32 else 'ul'}"

    def float_literal(self, v: float, t: T.DType) -> str:
        if v != v or v in (float("inf"), float("-inf")):
            return self.special_float(v, t)
        if t.name == "f64":
            return float_text(repr(v)) + "lf"
        text = float_text(f32_repr(v))
        return text if t.name == "f32" else text + "hf"

    def special_float(self, v: float, t: T.DType) -> str:
        # GLSL has no literal for infinities or NaN; build them from their bit patterns.
        if t.name == "f64":
            high = {"inf": "0x7ff00000u", "-inf": "0xfff00000u", "nan": "0x7ff80000u"}[repr(v)]
            return f"packDouble2x32(uvec2(0u, {high}))"
        bits = {"inf": "0x7f800000u", "-inf": "0xff800000u", "nan": "0x7fc00000u"}[repr(v)]
        text = f"uintBitsToFloat({bits})"
        return text if t.name == "f32" else f"float16_t({text})"

    def math(self, r: Renderer, e: ir.Math, args: list[str]) -> str:
        t = e.args[0].type
        if e.fn == "isnan":
            return f"isnan({args[0]})"
        if t.name == "f64" and e.fn not in F64_NATIVE:
            return self.f64_math(r, e, args)
        if t.is_float:
            # GLSL's pow is undefined for a base <= 0, where C's (and so CUDA's) is not.
            fn = r.helper(e.fn, t) if e.fn in ("pow", "atan2") else FLOAT_FUNCS[e.fn]
            return f"{fn}({', '.join(args)})"
        if e.fn in ("min", "max", "abs"):
            if t.is_int and t.bits < 32:
                # In 32 bits, as C promotes: lavapipe's 16-bit abs(int16_t(-3)) gave -3.
                wide = "int" if t.is_signed else "uint"
                return f"{r.type(t)}({e.fn}({', '.join(f'{wide}({a})' for a in args)}))"
            if e.fn == "abs" and t.name == "i64":  # glslang folds abs(-4l) to -4l (fuzz seed 2037)
                return f"{r.helper('abs', t)}({args[0]})"
            return f"{e.fn}({', '.join(args)})"
        if e.fn == "popcnt" and t.bits == 32:
            return f"bitCount({args[0]})"
        if e.fn in ("popcnt", "clz", "ffs") and t.bits in (32, 64):
            return f"{r.helper(e.fn, t)}({args[0]})"
        raise TranspileError(f"{e.fn} on {t.name} is not supported on the {self.name} target", e.loc)

    def f64_math(self, r: Renderer, e: ir.Math, args: list[str]) -> str:
        """An f64 function GLSL declares for 32-bit floats only: the f64 library's helper
        (glsl_f64), else computed in f32, with a located warning and the manifest saying so."""
        helpers = glsl_f64.helpers_of(e.fn)
        if helpers is not None:
            for name in helpers:
                fn = r.helper(name, T.f64)
            return f"{fn}({', '.join(args)})"
        if e.fn not in r.needs.f64_via_f32:
            warnings.warn(str(Diagnostic("warning", "f64-in-f32", f"{e.fn} on f64 is computed in f32 on the GLSL "
                                         "target (about 7 significant digits)", e.loc,
                                         "compute it in f32 explicitly, or run it on another target")),
                          TranslationWarning, stacklevel=2)
        r.needs.f64_via_f32.add(e.fn)
        fn = r.helper(e.fn, T.f32) if e.fn in ("pow", "atan2") else FLOAT_FUNCS[e.fn]
        return f"double({fn}({', '.join(f'float({a})' for a in args)}))"

    def atomic_table(self, op: str, t: T.DType, space: str) -> str | None:
        if (op, t.name) in self.atomics:
            return "native"
        if t.bits == 16:
            # GLSL has no 16-bit atomics: an f16 update is a CAS loop on its 32-bit word in a
            # storage buffer; shared memory cannot be viewed as words, so a shared f16 array some
            # atomic updates holds each element in a 32-bit word of its own ("wide").
            if not (t.is_float and op in ("add", "mul", "min", "max")):
                return None
            return "word" if space == "global" else "wide"
        if op == "exchange" and t.name in ("f32", "f64"):
            return "bits"  # atomicExchange on the uint of the same width: no float extension needed
        if op in ("add", "mul", "min", "max") and (t.is_float or t.bits >= 32):
            return "cas"
        return None

    def atomic_name(self, op: str, t: T.DType, space: str, loc: ir.Loc | None = None) -> str:
        if (op, t.name) not in self.atomics:  # legalize_atomics turns every other combination into a native one
            raise TranspileError(f"qd.atomic_{op} on {t.name} is not supported on the {self.name} target", loc)
        return ATOMIC_FUNCS[op]

    def atomic(self, r: Renderer, e: ir.Atomic, ref: str, value: str, expected: str | None) -> str:
        t = e.type
        fn = self.atomic_name(e.op, t, ir.space_of(e.array), e.loc)
        shared = isinstance(e.array, ir.SharedArray)
        r.needs.features.update(f.replace("Buffer", "Shared") if shared else f for f in self.atomics[(e.op, t.name)])
        # A CAS loop on an f32 array works on its bits through a uint view of the buffer (a
        # shared array some such loop updates holds uint already).
        if e.reinterpreted and id(e.array) not in r.bits_shared:
            ref = r.alias_ref(e.array, t, "", r.linear_index(e.array, e.indices))
        args = [value] if expected is None else [expected, value]
        return f"{fn}({ref}, {', '.join(args)})"

    def bitcast(self, text: str, src: T.DType, dst: T.DType) -> str:
        return f"{self.bitcasts[(src.name, dst.name)]}({text})"

    def subgroup(self, r: Renderer, e: ir.SubgroupOp, args: list[str]) -> str:
        # subgroupBroadcast wants a constant lane; a run-time one is a shuffle.
        runtime_broadcast = e.op == "broadcast" and not isinstance(e.args[1], ir.Const)
        r.needs.subgroup_classes.add("shuffle" if runtime_broadcast else SUBGROUP_CLASSES[e.op])
        if e.op == "invocation_id":
            return "int(gl_SubgroupInvocationID)"
        if e.op == "ballot":
            # subgroupBallot gives one bit per lane in a uvec4; lanes 0-63 are .x and .y.
            return f"packUint2x32(subgroupBallot({args[0]}).xy)"
        if e.op in ("all", "any"):
            return f"{SUBGROUP_FUNCS[e.op]}({args[0]})"
        t = e.type
        value = args[0]
        wide = SUBGROUP_WIDE.get(t.name)
        if wide is not None:
            value = f"{TYPES[wide.name]}({value})"
        elif t.is_int and t.bits == 64:
            r.needs.features.add("shaderSubgroupExtendedTypes")
        ht = wide or t
        if runtime_broadcast:
            text = f"subgroupShuffle({value}, {args[1]})"
        elif e.op == "broadcast":
            text = f"subgroupBroadcast({value}, {args[1]})"
        elif e.op in ("shuffle_up", "shuffle_down"):
            text = f"{r.helper(e.op, ht)}({value}, {args[1]})"
        elif e.op in ("shuffle", "shuffle_xor"):
            text = f"{SUBGROUP_FUNCS[e.op]}({value}, {args[1]})"
        else:
            text = f"{SUBGROUP_FUNCS[e.op]}({value})"
        return text if wide is None else f"{TYPES[t.name]}({text})"

    def binop_special(self, r: Renderer, e: ir.BinOp) -> tuple[str, int] | None:
        t = e.type
        if t is T.bool_ and e.op in ("bitand", "bitor", "bitxor"):
            # GLSL has no &, | or ^ on bool. The logical forms short-circuit, which only
            # matters when the right side has an effect: then go through uint.
            if e.op == "bitxor":
                return f"{r.text(e.a, PREC_EQ + 1)} != {r.text(e.b, PREC_EQ + 1)}", PREC_EQ
            if _has_atomic(e.b):
                op = "&" if e.op == "bitand" else "|"
                return f"bool(uint({r.text(e.a)}) {op} uint({r.text(e.b)}))", PREC_PRIMARY
            if e.op == "bitand":
                return f"{r.text(e.a, PREC_AND)} && {r.text(e.b, PREC_AND + 1)}", PREC_AND
            return f"{r.text(e.a, PREC_AND + 1)} || {r.text(e.b, PREC_AND + 1)}", PREC_OR
        if t.is_float and e.op == "mod":
            # GLSL's mod is x - y * floor(x / y): its result already takes the divisor's sign,
            # all but a zero one (qd_mod).
            return f"{r.helper('mod', t)}({r.text(e.a)}, {r.text(e.b)})", PREC_PRIMARY
        if t.is_float and e.op == "floordiv":
            return f"floor({r.text(e.a)} / {r.text(e.b)})", PREC_PRIMARY
        if r.ctx.options.lavapipe and t is T.i32 and e.op in ("truncdiv", "truncmod") and \
                not isinstance(e.b, ir.Const):
            # Both sides known non-negative (what makes // and % C's): through doubles, as
            # llvmpipe has no vector integer division (an ndarray's 2-D stencil, its index
            # split by the row length: 22 -> 19 ms over 4M elements, min of 30 calls).
            name = r.helper("index_div" if e.op == "truncdiv" else "index_mod", t)
            return f"{name}({r.text(e.a)}, {r.text(e.b)})", PREC_PRIMARY
        return super().binop_special(r, e)


def _has_atomic(e: ir.Expr) -> bool:
    return any(isinstance(n, ir.Atomic) for n in iter_expr(e))



class GlslTarget(Target):
    name = "glsl"
    title = "Vulkan (GLSL)"
    dialect = GlslDialect()
    # Vulkan's widest scope for a storage buffer is the device: no system fence, no NVSHMEM.
    caps = Capabilities()
    why_not = {"system_scope": "it has no system (host and peer device) memory scope for device code",
               "warp_api": "qd.simt.warp is CUDA's warp API (explicit lane masks), native on CUDA and HIP only",
               "recursion": "GLSL forbids recursion, even through other functions"}
    renderer_class = GlslRenderer
    needs_class = GlslNeeds
    file_ext = ".comp"
    one_file_per_task = True
    module_template = "glsl/module.comp.j2"
    helper_templates = ("glsl/helpers.j2", "glsl/f64.j2")
    header_template = "glsl/header.h.j2"
    checker = "transpiler.toolchains.glsl_check"
    evidence = EVIDENCE

    def language(self, ctx: TranslationContext) -> str:
        return f"GLSL {GLSL_VERSION} compute shader for Vulkan {VULKAN_VERSION} (glslangValidator -V)"

    def subgroup_size(self, options: dict) -> int:
        """The subgroup width the shaders are specialized to: the ``subgroup_size`` option
        (the device's, e.g. 8 on lavapipe, 32 on NVIDIA, 64 on AMD wave64), else 32."""
        size = options.get("subgroup_size")
        if size is None:
            return DEFAULT_SUBGROUP_SIZE
        if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= 128 or size & (size - 1):
            raise TranspileError(f"subgroup_size={size!r}: Vulkan subgroup sizes are powers of two from 1 to 128")
        return size

    def stepped_indices(self, ctx: TranslationContext) -> bool:
        # lavapipe: the runtime caps a grid-stride launch, so each invocation loops (4M elements:
        # 8 times or more), and llvmpipe divides by a run-time value per lane. The 2-D stencil
        # over 4M elements, median of 30 calls: 18.6-22.4 -> 16.4-18.0 ms.
        return ctx.options.lavapipe

    def layout(self, ctx: TranslationContext) -> Layout:
        return Layout.of(ctx.kernel)

    def signature(self, r: GlslRenderer, ctx: TranslationContext, task: ir.Task) -> list[str]:
        layout = ctx.layout
        # Declare in parameter order, shapes right after their array, as the CUDA signature
        # does, so a name that needs a suffix gets the same one in every target.
        for p in ctx.kernel.params:
            name = ctx.names.of(p)
            if p.is_array:
                elem = p.type.dtype
                if elem.bits in STORAGE_FEATURES:
                    r.needs.features.add(STORAGE_FEATURES[elem.bits])
                ctype = r.type(elem, p.loc)
                r.buffers.append({"binding": layout.bindings[id(p)], "block": f"qd_buffer_{name}",
                                  "ctype": f"precise {ctype}" if r.precise and elem.is_float else ctype, "name": name})
                for dim, m in layout.members_of(p):
                    r.push_constants.append({"offset": m.offset, "ctype": r.type(T.i32),
                                             "name": ctx.names.shape(p, dim), "note": ""})
            else:
                ((_, m),) = layout.members_of(p)
                r.type(p.type, p.loc)
                note = f"{p.type.name}, widened to {m.dtype}" if m.dtype != p.type.name else ""
                r.push_constants.append({"offset": m.offset, "ctype": r.type(T.SCALARS[m.dtype]), "name": name,
                                         "note": note})
        return ([f"{b['ctype']} {b['name']}[]" for b in r.buffers]
                + [f"{m['ctype']} {m['name']}" for m in r.push_constants])

    def declare_shared(self, r: GlslRenderer, task: ir.Task) -> None:
        # GLSL allows `shared` variables only at global scope.
        # (A task without shared arrays or without atomics, most of them, is not walked: its
        # shared arrays and node classes are known.)
        r.bits_shared = {id(e.array) for e in all_exprs(task.code()) if isinstance(e, ir.Atomic)
                         and isinstance(e.array, ir.SharedArray) and e.reinterpreted} \
            if task.shared and ir.Atomic in task_node_kinds(task) else set()
        for array in task.shared:
            name = r.declare_name(array, array.name)
            size = " * ".join(str(n) for n in array.type.shape)
            # A 16-bit float one holds each element in a uint of its own: GLSL's smallest atomics.
            bits = max(array.type.dtype.bits, 32)
            dtype = UINT_OF_WIDTH[bits] if id(array) in r.bits_shared else array.type.dtype
            r.shared_decls.append(f"shared {r.type(dtype, array.loc)} {name}[{size}];{r.comment(array.loc)}")

    def finish_entry(self, r: GlslRenderer, ctx: TranslationContext, entry: EntryPoint) -> None:
        bindings = ctx.layout.bindings
        qualifier = "coherent " if r.needs.coherent else ""
        buffers = [dict(b, qualifier=qualifier) for b in r.buffers]
        aliases = [dict(a, binding=bindings[id(a["param"])],
                        qualifier=a["qualifier"] + " " if a["qualifier"] else qualifier)
                   for a in sorted(r.aliases.values(), key=lambda a: (bindings[id(a["param"])], a["name"]))]
        # A 16-bit float shared array held one element per uint (declare_shared) takes twice its bytes.
        entry.shared_bytes += sum(a.type.nbytes for a in entry.task.shared
                                  if id(a) in r.bits_shared and a.type.dtype.bits == 16)
        if r.fence_word:
            r.shared_decls.append(f"shared uint {FENCE_WORD};  // what fences and pauses are atomics on (lavapipe)")
            entry.shared_bytes += 4
        entry.extras.update(buffers=buffers, aliases=aliases, push_constants=r.push_constants, shared=r.shared_decls)
        if entry.block_dim % SIMD_LANES:
            # lavapipe runs a workgroup in SIMD vectors (4, 8 or 16 lanes) and the lanes past
            # its end along with it, masked only where they touch memory: a loop whose
            # condition reads memory the loop writes (`while y[0] < 5: y[0] += 1`) never ends
            # for them (their loads read 0), so it runs to llvmpipe's iteration limit, which
            # is one budget for the whole shader, and every later loop then stops after one
            # iteration (the fuzzer's seed 1528: `w ** 2` after such a loop gave 1). The
            # return masks those lanes for good; on any other device it is never taken.
            entry.lines[:0] = ["if (gl_LocalInvocationIndex >= gl_WorkGroupSize.x) {  // SIMD lanes past the workgroup",
                               "    return;", "}"]

    def param_manifest(self, ctx: TranslationContext) -> list[dict]:
        layout = ctx.layout
        out = []
        for p in ctx.kernel.params:
            members = [m for _, m in layout.members_of(p)]
            if p.is_array:
                out.append({"name": p.name, "kind": "ndarray", "dtype": p.type.dtype.name, "ndim": p.type.ndim,
                            **element_entry(p), "set": 0, "binding": layout.bindings[id(p)],
                            "shape_push_constant_offsets": [m.offset for m in members],
                            "shape_dtype": "i32", **param_role(p)})
            else:
                (m,) = members
                entry = {"name": p.name, "kind": "scalar", "dtype": p.type.name, "push_constant_offset": m.offset,
                         **param_role(p)}
                if m.dtype != p.type.name:
                    entry["push_constant_dtype"] = m.dtype
                out.append(entry)
        return out

    def requirements(self, ctx: TranslationContext) -> dict:
        needs = ctx.needs
        vk = vulkan_features(needs, ctx.usage.types)
        return {
            "vulkan": VULKAN_VERSION,
            "glsl": GLSL_VERSION,
            "spirv": SPIRV_VERSION,
            "extensions": glsl_extensions(vk, needs),
            "device_extensions": sorted({FEATURES[f][1] for f in vk if FEATURES[f][1]}),
            "features": vk,
            "f64_functions_in_f32": sorted(needs.f64_via_f32),
            # VkPhysicalDeviceSubgroupProperties::supportedOperations must include these
            # (VK_SUBGROUP_FEATURE_<NAME>_BIT) with supportedStages including compute.
            "subgroup_operations": [c.upper() for c in subgroup_classes(needs)],
        }

    def finish_manifest(self, ctx: TranslationContext, manifest: dict) -> dict:
        req = manifest["requirements"]
        if ctx.kernel.subgroup_size is not None or req["subgroup_operations"]:
            # The shaders are correct only at this width: a host must run them with it (Vulkan
            # 1.3 / VK_EXT_subgroup_size_control: requiredSubgroupSize on the stage, and full
            # subgroups), or on a device whose subgroupSize it is.
            req["required_subgroup_size"] = ctx.options.subgroup_size
        else:
            manifest["subgroup_size"] = None
        # Vulkan guarantees only 128 bytes of push constants (maxPushConstantsSize).
        req["push_constant_bytes"] = ctx.layout.push_bytes
        for e in manifest["entry_points"]:
            e["entry"] = "main"
        return manifest

    def module_context(self, ctx: TranslationContext, entries: list[EntryPoint], usage: Usage) -> dict:
        extensions = glsl_extensions(vulkan_features(usage.needs, usage.types), usage.needs)
        if usage.line_directives:
            # Core GLSL's #line takes a source-string number; a file name needs this extension.
            extensions = sorted(extensions + ["GL_GOOGLE_cpp_style_line_directive"])
        return {"extensions": extensions}

    def helper_context(self, ctx: TranslationContext) -> dict:
        return {"lit": self.template_literal, "f64": glsl_f64.VALUES}

    def template_literal(self, value: bool | int | float | str, dtype: str) -> str:
        """A typed constant for the helper templates; "inf" and "nan" come as strings."""
        return self.dialect.literal(float(value) if isinstance(value, str) else value, T.SCALARS[dtype])

    def header_context(self, manifest: dict, common: dict) -> dict:
        fields = []
        for p in common["params"]:
            if p["kind"] == "ndarray":
                for name, off in zip(p["shapes"], p["shape_push_constant_offsets"], strict=True):
                    fields.append((name, GLSL_PUSH_TYPES["i32"], 4, off))
            else:
                dtype = p.get("push_constant_dtype", p["dtype"])
                fields.append((p["cxx"], GLSL_PUSH_TYPES[dtype], GLSL_PUSH_SIZES[dtype], p["push_constant_offset"]))
        req = manifest["requirements"]
        return {"struct": "PushConstants", "push": struct_layout(fields),
                "push_constant_bytes": req["push_constant_bytes"], "buffers": buffer_table(common, "binding"),
                "descriptor_set": 0,
                "spirv_files": [e["file"].rsplit(".", 1)[0] + ".spv" for e in manifest["entry_points"]]}


def vulkan_features(needs: GlslNeeds, used_types: set[str]) -> list[str]:
    out = {f for f in needs.features if f in FEATURES}
    out |= {TYPE_FEATURES[t] for t in used_types if t in TYPE_FEATURES}
    return sorted(out)


def glsl_extensions(vk_features: list[str], needs: GlslNeeds) -> list[str]:
    return sorted({FEATURES[f][0] for f in vk_features if FEATURES[f][0]}
                  | {f"GL_KHR_shader_subgroup_{c}" for c in subgroup_classes(needs)})


def subgroup_classes(needs: GlslNeeds) -> list[str]:
    """The subgroup operation classes used; every other class builds on "basic"."""
    used = needs.subgroup_classes
    return sorted(used | {"basic"}) if used else []

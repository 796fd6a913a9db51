"""CUDA C++ for NVRTC: spellings, and the entry-point signature.

Self-contained: NVRTC gets no include paths, so the fixed-width integer typedefs and the
f16 type come from the template's prelude rather than from headers.
"""
from __future__ import annotations

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from .context import EntryPoint, TranslationContext, Usage
from .cuda_nvshmem import NVSHMEM_MIN_SM, ShmemRenderer, requirement
from .cxx import CXX_KEYWORDS, FIXED_WIDTH, CxxDialect
from .dialect import MATH_FUNCS
from .host_abi import HOST_TYPES, buffer_table
from .renderer import Renderer
from .target import Capabilities, Target, element_entry, param_role

# (fn, bits) -> spelling, for integer arguments.
INT_FUNCS = {
    ("min", 32): "min", ("min", 64): "min", ("max", 32): "max", ("max", 64): "max",
    ("abs", 32): "abs", ("abs", 64): "llabs",
    ("popcnt", 32): "__popc", ("popcnt", 64): "__popcll", ("clz", 32): "__clz",
    ("clz", 64): "__clzll", ("ffs", 32): "__ffs", ("ffs", 64): "__ffsll",
}
# Atomics CUDA has as single instructions: (op, dtype) -> (function, the type its pointer
# must have when it differs from the element's, e.g. i64 adds through unsigned long long).
NATIVE_ATOMICS = {
    **{("add", t): ("atomicAdd", None) for t in ("i32", "u32", "u64", "f32", "f64")},
    ("add", "i64"): ("atomicAdd", "u64"),
    **{(op, t): (fn, None) for op, fn in (("min", "atomicMin"), ("max", "atomicMax"))
       for t in ("i32", "u32", "i64", "u64")},
    **{(op, t): (fn, None) for op, fn in (("and", "atomicAnd"), ("or", "atomicOr"), ("xor", "atomicXor"))
       for t in ("i32", "u32", "u64")},
    **{(op, "i64"): (fn, "u64") for op, fn in (("and", "atomicAnd"), ("or", "atomicOr"), ("xor", "atomicXor"))},
    **{("exchange", t): ("atomicExch", None) for t in ("i32", "u32", "u64", "f32")},
    ("exchange", "i64"): ("atomicExch", "u64"),
    **{("cas", t): ("atomicCAS", None) for t in ("i32", "u32", "u64")},
    ("cas", "i64"): ("atomicCAS", "u64"),
    ("cas", "u16"): ("atomicCAS", None),   # sm_70+: what f16 CAS loops are built on
}
# Reinterpretations between a float and the unsigned int of its width.
BITCASTS = {
    ("f32", "u32"): "__float_as_uint({})", ("u32", "f32"): "__uint_as_float({})",
    ("f32", "i32"): "__float_as_int({})", ("i32", "f32"): "__int_as_float({})",
    ("f64", "i64"): "(int64_t)__double_as_longlong({})", ("i64", "f64"): "__longlong_as_double((long long)({}))",
    ("f64", "u64"): "(uint64_t)__double_as_longlong({})", ("u64", "f64"): "__longlong_as_double((long long)({}))",
    ("f16", "u16"): "qd_half({}).bits", ("u16", "f16"): "qd_half_from_bits({})",
}
# The oldest architecture NVRTC 13 compiles for; everything emitted here (warp-synchronous
# intrinsics, 16-bit atomicCAS) needs sm_70 at least anyway.
MIN_SM = 75
# The vector types of CUDA's 16-byte loads, by element type (a VectorLane's width follows).
VECTOR_TYPES = {"f32": "float", "i32": "int", "u32": "uint", "f64": "double", "i64": "longlong", "u64": "ulonglong"}
# qd.simt.warp: CUDA's masked intrinsics as they are ({0} the mask, but for ballot and active_mask);
# match_all is a helper, its intrinsic reporting through a pointer too.
WARP = {"all": "__all_sync({0}, {1})", "any": "__any_sync({0}, {1})", "uni": "__uni_sync({0}, {1})",
        "ballot": "(int32_t)__ballot_sync(0xffffffffu, {0})", "active_mask": "__activemask()",
        "shfl": "__shfl_sync({0}, {1}, {2})", "shfl_up": "__shfl_up_sync({0}, {1}, (unsigned){2})",
        "shfl_down": "__shfl_down_sync({0}, {1}, (unsigned){2})", "shfl_xor": "__shfl_xor_sync({0}, {1}, {2})",
        "match_any": "__match_any_sync({0}, {1})", "match_all": "{helper}({0}, {1})", "sync": "__syncwarp({0})"}

# A warp's lane, and its collectives: every lane takes part (the full-warp mask).
# {mask}: the warp width less one (31; narrower only for the CPU emulator).
LANE = "(threadIdx.x & {mask}u)"
SHUFFLES = {
    "shuffle": "__shfl_sync(0xffffffffu, {v}, {k})", "broadcast": "__shfl_sync(0xffffffffu, {v}, {k})",
    "shuffle_up": "__shfl_up_sync(0xffffffffu, {v}, {k})", "shuffle_down": "__shfl_down_sync(0xffffffffu, {v}, {k})",
    "shuffle_xor": "__shfl_xor_sync(0xffffffffu, {v}, {k})",
}
VOTES = {"ballot": "(uint64_t)__ballot_sync(0xffffffffu, {p})",
         "all": "__all_sync(0xffffffffu, {p})", "any": "__any_sync(0xffffffffu, {p})"}
BARRIERS = {"block": ("__syncthreads();",), "subgroup": ("__syncwarp();",)}
BLOCK_VOTES = {"all": "__syncthreads_and({p})", "any": "__syncthreads_or({p})", "count": "__syncthreads_count({p})"}
FENCES = {  # see docs/lowering.md for the SASS each one becomes
    "subgroup": ("__threadfence_block();",), "block": ("__threadfence_block();",),
    "device": ("__threadfence();",), "system": ("__threadfence_system();",),
}
EVIDENCE = (
    "`qd.volatile_load` is `__nv_atomic_load(p, &v, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE)`: "
    "sm_90 SASS `LD.E.STRONG.GPU` (device scope), where a C `volatile` read is `LDG.E.STRONG.SYS` "
    "(system scope, heavier); it is what CUB's look-back uses.",
    "`grid.mem_fence()` is `__threadfence()`: `MEMBAR.SC.GPU` + `ERRBAR` + `CGAERRBAR` + `CCTL.IVALL`. "
    "An acq_rel device fence (`__nv_atomic_thread_fence`) is `MEMBAR.ALL.GPU` with the same three "
    "companions, so it saves nothing measurable and loses sequential consistency; we keep `__threadfence()`.",
    "`block.mem_fence()` is `__threadfence_block()`: one `MEMBAR.SC.CTA`.",
    "`system.mem_fence()` is `__threadfence_system()`: `MEMBAR.SC.SYS` + `ERRBAR` + `CGAERRBAR` + `CCTL.IVALL` "
    "(HIP: `__threadfence_system()` too; GLSL and Metal have no system scope: a located error).",
    "`qd.shmem` routines are NVSHMEM device calls typed per dtype (`nvshmem_float_put`, "
    "`nvshmem_int_atomic_fetch_add`, `nvshmem_int_wait_until`, ...); CUDA only, with -rdc=true (see docs/manifest.md).",
    "Float min/max, `atomic_mul` and f16 add are CAS loops over `atomicCAS` on the same-width unsigned "
    "integer (16-bit `atomicCAS` needs sm_70); the new value follows minNum/maxNum (a NaN operand loses).",
)


class CudaDialect(CxxDialect):
    name = "cuda"
    types = {"bool": "bool", "f16": "qd_half", "f32": "float", "f64": "double",
             **{k: v[0] for k, v in FIXED_WIDTH.items()}}
    reserved = CXX_KEYWORDS | frozenset("""
        threadIdx blockIdx blockDim gridDim warpSize half kernel device shared
        __global__ __device__ __shared__ __host__ __restrict__
    """.split()) | frozenset(MATH_FUNCS.values()) | frozenset(v + "f" for v in MATH_FUNCS.values())
    thread_index = {
        "thread_idx": "(int32_t)threadIdx.x",
        "block_idx": "(int32_t)blockIdx.x",
        "block_dim": "(int32_t)blockDim.x",
        "grid_dim": "(int32_t)gridDim.x",
        "global_thread_idx": "(int32_t)(blockIdx.x * blockDim.x + threadIdx.x)",
        "grid_stride": "(int32_t)(blockDim.x * gridDim.x)",
    }
    # A parallel task is launched with exactly its block_dim threads per block (the
    # manifest's contract, as __launch_bounds__ says): the task loop's index and stride use
    # the constant, a shift instead of a load of blockDim and a multiply.
    thread_index_fixed_block = {
        "global_thread_idx": "(int32_t)(blockIdx.x * {block_dim}u + threadIdx.x)",
        "grid_stride": "(int32_t)({block_dim}u * gridDim.x)",
    }
    inline = "__device__ __forceinline__"
    function_qualifier = "__device__ "
    # ptxas 12.9 takes neg.s16's result as still sign-extended: -(-32768) became +32768 in a
    # later shift, compare or widening (an H100; fuzz seeds 102471, 102700, 102794, 104195).
    negated_by_helper = frozenset({"i16"})
    fmod = {"f16": "fmodf", "f32": "fmodf", "f64": "fmod"}
    copysign = {"f16": "copysignf", "f32": "copysignf", "f64": "copysign"}
    atomics = NATIVE_ATOMICS
    bitcasts = BITCASTS
    barriers = BARRIERS
    fences = FENCES
    block_votes = BLOCK_VOTES
    lane = LANE
    shuffles = SHUFFLES
    votes = VOTES
    warps = WARP
    # The preprocessor condition under which __reduce_*_sync exists ("" where it never does),
    # and whether inline PTX may build the scans (CUB's predicated shfl.sync.up).
    native_subgroup_reduce = "__CUDA_ARCH__ >= 800"
    ptx_scans = True

    def lane_of(self, subgroup_size: int | None) -> str:
        return self.lane.format(mask=(subgroup_size or 32) - 1)

    def helper_values(self, subgroup_size: int | None) -> dict:
        return {**super().helper_values(subgroup_size), "warp_size": subgroup_size,
                "lane_id": f"(int){self.lane_of(subgroup_size)}",
                "shuffles": self.shuffles, "native_warp_reduce": self.native_subgroup_reduce,
                "ptx_shfl_up_pred": self.ptx_scans}

    def atomic_table(self, op: str, t: T.DType, space: str) -> str | None:
        if (op, t.name) in self.atomics:
            return "native"
        if op == "exchange" and t.name == "f64":
            return "bits"
        if op in ("add", "mul", "min", "max") and (t.is_float or t.bits >= 32):
            return "cas"
        return None

    def atomic_name(self, op: str, t: T.DType, space: str, loc: ir.Loc | None = None) -> str:
        native = self.atomics.get((op, t.name))
        if native is None:
            raise TranspileError(f"qd.atomic_{op} on {t.name} is not supported on the {self.name} target", loc)
        return native[0]

    def bitcast(self, text: str, src: T.DType, dst: T.DType) -> str:
        return self.bitcasts[(src.name, dst.name)].format(text)

    def block_vote(self, r: Renderer, e: ir.BlockVote, pred: str) -> str:
        return self.block_votes[e.op].format(p=pred)

    def shared_decl(self, r: Renderer, array: ir.SharedArray, name: str) -> str:
        size = " * ".join(str(n) for n in array.type.shape)
        return f"__shared__ {r.type(array.type.dtype)} {name}[{size}];"

    def warp(self, r: Renderer, e: ir.WarpOp, args: list[str]) -> str:
        spelling = self.warps[e.op]
        helper = r.helper(f"warp_{e.op}", T.u32) if "{helper}" in spelling else ""
        return spelling.format(*args, helper=helper)

    def subgroup(self, r: Renderer, e: ir.SubgroupOp, args: list[str]) -> str:
        if e.op in self.shuffles:
            value = args[0]
            if e.type is T.f16:
                value = f"float({value})"  # warp shuffles move 32- and 64-bit values
            return self.shuffles[e.op].format(v=value, k=args[1])
        if e.op in self.votes:
            return self.votes[e.op].format(p=args[0])
        if e.op == "invocation_id":
            return f"(int32_t){self.lane_of(r.ctx.options.subgroup_size)}"
        # Reductions and scans: helper functions (native __reduce_*_sync where the hardware has it).
        t = self.compute_type(e.type)
        if t != e.type:  # e.g. f16: the helper is the float one, and qd_half converts to several types
            args = [self.cast(args[0], t)]
        return self.subgroup_helper(r, e.op, t, args[0])

    def volatile_load(self, r: Renderer, e: ir.VolatileLoad, ref: str) -> str:
        return f"{r.helper('volatile_load', e.type)}(&{ref})"

    def vector_lane(self, r: Renderer, e: ir.VectorLane, index: str) -> str:
        # Each lane reads its member of the 16-byte vector; NVVM merges the lanes of one vector
        # into one LDG.128 (the pointer is 16-byte aligned by the vector type).
        vec = f"{VECTOR_TYPES[e.type.name]}{e.width}"
        return f"reinterpret_cast<const {vec}*>({r.array_name(e.array)})[{index}].{'xyzw'[e.lane]}"

    def aligned(self, r: Renderer, e: ir.Aligned) -> str:
        return f"((reinterpret_cast<unsigned long long>({r.array_name(e.array)}) & {e.bytes - 1}ull) == 0ull)"

    def clock(self, r: Renderer, e: ir.Clock) -> str:
        # the SM's (HIP: the compute unit's) 64-bit cycle counter, as Quadrants reads it
        return "(int64_t)clock64()"

    def compute_type(self, t: T.DType) -> T.DType:
        return T.f32 if t is T.f16 else super().compute_type(t)

    def special_float(self, v: float, t: T.DType) -> str:
        if t.name == "f64":
            bits = {"inf": "0x7ff0000000000000ll", "-inf": "0xfff0000000000000ll",
                    "nan": "0x7ff8000000000000ll"}[repr(v)]
            return f"__longlong_as_double({bits})"
        bits = {"inf": "0x7f800000", "-inf": "0xff800000", "nan": "0x7fc00000"}[repr(v)]
        text = f"__int_as_float({bits})"
        return text if t.name == "f32" else self.cast(text, t)

    def math(self, r: Renderer, e: ir.Math, args: list[str]) -> str:
        t = e.args[0].type
        if e.fn == "isnan":
            return f"isnan({'float(' + args[0] + ')' if t.name == 'f16' else args[0]})"
        if t.is_float:
            if e.fn == "rsqrt" and t.name == "f64":
                return f"rsqrt({args[0]})"
            base = MATH_FUNCS[e.fn]  # the f64 spelling; f32 adds an "f" suffix (sqrt -> sqrtf)
            return f"{base}{'' if t.name == 'f64' else 'f'}({', '.join(args)})"
        if e.fn == "abs" and r.helper_wraps(t):
            return f"{r.helper('abs', t)}({args[0]})"
        bits = 64 if t.bits == 64 else 32
        fn = INT_FUNCS.get((e.fn, bits))
        if fn is None:
            raise TranspileError(f"{e.fn} on {t.name} is not supported on the {self.name} target", e.loc)
        return f"{fn}({', '.join(args)})"

    def atomic(self, r: Renderer, e: ir.Atomic, ref: str, value: str, expected: str | None) -> str:
        t = e.type
        fn = self.atomic_name(e.op, t, ir.space_of(e.array), e.loc)
        as_type = self.atomics[(e.op, t.name)][1]
        args = [value] if expected is None else [expected, value]
        if as_type is None and not e.reinterpreted:
            return f"{fn}(&{ref}, {', '.join(args)})"
        if as_type is None:  # a float element updated through its bits
            return f"{fn}(({self.types[t.name]}*)&{ref}, {', '.join(args)})"
        ct = self.types[as_type]
        r.usage.types.add(as_type)
        cast_args = ", ".join(f"({ct})({a})" for a in args)
        return f"({self.types[t.name]}){fn}(({ct}*)&{ref}, {cast_args})"


class CudaTarget(Target):
    name = "cuda"
    title = "CUDA"
    dialect = CudaDialect()
    caps = Capabilities(system_scope=True, nvshmem=True, block_votes=True, recursion=True, warp_api=True,
                        vector_loads=True)
    renderer_class = ShmemRenderer
    file_ext = ".cu"
    module_template = "cuda/module.cu.j2"
    helper_templates = ("cuda/helpers.j2", "cxx/helpers.j2")
    header_template = "cuda/header.h.j2"
    default_subgroup_size = 32
    checker = "transpiler.toolchains.nvrtc_check"
    evidence = EVIDENCE
    emulator_defines = ()

    def subgroup_size(self, options: dict) -> int:
        """32, the warp. ``emulated_subgroup_size`` (4, 8 or 16; the CPU emulator's option,
        not the command line's) specializes the text to a narrower warp, which no NVIDIA GPU
        has: the emulator runs the width-generic library at the widths other devices have."""
        size = options.get("emulated_subgroup_size")
        if size is None:
            return self.default_subgroup_size
        if size not in (4, 8, 16, 32):
            raise TranspileError(f"emulated_subgroup_size={size!r}: the emulator runs CUDA text at 4, 8, 16 or 32 "
                                 "lanes")
        return size

    def language(self, ctx: TranslationContext) -> str:
        nvshmem = requirement(ctx.kernel)
        if nvshmem is not None:
            return f"CUDA C++ with NVSHMEM {nvshmem['version']}, relocatable device code (sm_{NVSHMEM_MIN_SM}+)"
        return f"CUDA C++ for NVRTC (sm_{MIN_SM}+)"

    def signature(self, r: Renderer, ctx: TranslationContext, task: ir.Task) -> list[str]:
        out = []
        for p in ctx.kernel.params:
            if p.is_array:
                out.append(f"{r.type(p.type.dtype, p.loc)}* {ctx.names.of(p)}")
                out.extend(f"{r.type(T.i32)} {ctx.names.shape(p, d)}" for d in range(p.type.passed_extents))
            else:
                out.append(f"{r.type(p.type, p.loc)} {ctx.names.of(p)}")
        return out

    def param_manifest(self, ctx: TranslationContext) -> list[dict]:
        out, arg = [], 0
        for p in ctx.kernel.params:
            if p.is_array:
                shape_args = list(range(arg + 1, arg + 1 + p.type.passed_extents))
                out.append({"name": p.name, "kind": "ndarray", "dtype": p.type.dtype.name, "ndim": p.type.ndim,
                            **element_entry(p), "arg_index": arg, "shape_arg_indices": shape_args,
                            "shape_dtype": "i32"})
                if p.symmetric:
                    out[-1]["symmetric"] = True  # on NVSHMEM's symmetric heap: nvshmem_malloc
                out[-1].update(param_role(p))
                arg += 1 + p.type.passed_extents
            else:
                out.append({"name": p.name, "kind": "scalar", "dtype": p.type.name, "arg_index": arg, **param_role(p)})
                arg += 1
        return out

    def requirements(self, ctx: TranslationContext) -> dict:
        # NVRTC fuses a * b + c into an fma by default; unfused, a float result is the one the
        # other targets compute (GLSL's `precise`, Metal without fast math, the CPU executors).
        exact = [] if ctx.options.fast_math else ["--fmad=false"]
        nvshmem = requirement(ctx.kernel)
        if nvshmem is not None:
            return {"min_sm": NVSHMEM_MIN_SM, "nvrtc_options": ["-std=c++17", "-rdc=true", *exact], "extensions": [],
                    "nvshmem": nvshmem}
        return {"min_sm": MIN_SM, "nvrtc_options": ["-std=c++17", *exact], "extensions": []}

    def module_context(self, ctx: TranslationContext, entries: list[EntryPoint], usage: Usage) -> dict:
        typedefs = [FIXED_WIDTH[t] for t in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64") if t in usage.types]
        return {"typedefs": typedefs, "uses_half": "f16" in usage.types, "nvshmem": requirement(ctx.kernel) is not None}

    def header_context(self, manifest: dict, common: dict) -> dict:
        args = []
        for p in common["params"]:
            if p["kind"] == "ndarray":
                note = f"{p['dtype']}[{p['ndim']}-d], device memory" if "role" not in p else \
                    f"the .{p['role']} of `{p['of']}`: {p['dtype']}[{p['ndim']}-d], device memory" if "of" in p else \
                    f"one {p['dtype']}, the kernel's {p['role']} buffer: device memory you allocate"
                args.append({"name": p["cxx"], "ctype": HOST_TYPES[p["dtype"]] + "*", "index": p["arg_index"],
                             "note": note})
                for name, index in zip(p["shapes"], p["shape_arg_indices"], strict=True):
                    args.append({"name": name, "ctype": HOST_TYPES["i32"], "index": index, "note": ""})
            else:
                note = "IEEE binary16 bits" if p["dtype"] == "f16" else ""
                args.append({"name": p["cxx"], "ctype": HOST_TYPES[p["dtype"]], "index": p["arg_index"], "note": note})
        args.sort(key=lambda a: a["index"])
        if [a["index"] for a in args] != list(range(len(args))):
            raise ValueError(f"{manifest['kernel']}: argument indices are not 0..{len(args) - 1}")
        return {"struct": "Args", "args": args, "buffers": buffer_table(common, "arg_index")}

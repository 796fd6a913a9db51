"""HIP C++ for hipcc and hipRTC: the CUDA dialect with AMD's differences.

One source compiles both ways: hipcc needs ``<hip/hip_runtime.h>``, hipRTC supplies the same
declarations itself and rejects the include, so the prelude guards it with ``__HIPCC_RTC__``.
Both provide the 32- and 64-bit fixed-width integer typedefs, but disagree on them (``int64_t``
is ``long`` under hipcc and ``long long`` under hipRTC), so the source never redefines those,
and every call whose overload depends on that difference spells its argument type out.
"""
from __future__ import annotations

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.records import record
from .context import EntryPoint, Needs, TranslationContext, Usage
from .cuda import CudaDialect, CudaTarget
from .cxx import FIXED_WIDTH
from .renderer import Renderer
from .target import Capabilities

# ROCm 5.2 has no atomicMin/atomicMax for signed 64-bit ints: the clang builtins do.
BUILTIN_ATOMICS = {("min", "i64"): "__hip_atomic_fetch_min", ("max", "i64"): "__hip_atomic_fetch_max"}

# HIP (ROCm 5.2) has no *_sync warp functions: its shuffles, votes and ballot act on the
# whole wavefront (width warpSize), which is what a subgroup is here.
LANE = "__lane_id()"
SHUFFLES = {
    "shuffle": "__shfl({v}, {k})", "broadcast": "__shfl({v}, {k})", "shuffle_up": "__shfl_up({v}, {k})",
    "shuffle_down": "__shfl_down({v}, {k})", "shuffle_xor": "__shfl_xor({v}, {k})",
}
VOTES = {"ballot": "(uint64_t)__ballot({p})",  # 64 bits on wave64 and wave32 alike
         "all": "__all({p})", "any": "__any({p})"}
# qd.simt.warp: CUDA's 32-lane warps, each half of a wave64 one of them. Shuffles stay within
# 32 lanes (HIP's width argument); votes, ballots and matches read this half's bits of a
# wavefront ballot, restricted to the mask and the active lanes, as CUDA's masked forms do.
WARP = {"shfl": "__shfl({1}, {2}, 32)", "shfl_up": "__shfl_up({1}, (unsigned){2}, 32)",
        "shfl_down": "__shfl_down({1}, (unsigned){2}, 32)", "shfl_xor": "__shfl_xor({1}, {2}, 32)",
        "ballot": "(int32_t)(__ballot({0}) >> (__lane_id() & 32u))",
        "active_mask": "(uint32_t)(__ballot(1) >> (__lane_id() & 32u))",
        "sync": '(__builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront"), __builtin_amdgcn_wave_barrier(), '
                '__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront"))'}
WARP_VOTES = {"all": 0, "any": 1, "uni": 2}  # the kind argument of the qd_warp_vote helper

# A wavefront executes in lockstep, but the compiler may still move memory accesses across
# the lanes' convergence point: the fences pin them (__syncwarp's memory ordering).
BARRIERS = {
    "block": ("__syncthreads();",),
    "subgroup": ('__builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");', "__builtin_amdgcn_wave_barrier();",
                 '__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");'),
}

# Architectures each wavefront size is compiled and checked for. GCN/CDNA (gfx9) runs wave64
# only; ROCm's HIP headers refuse wave64 on RDNA (gfx10+), so RDNA means wave32.
CHECK_ARCHS = {64: ["gfx90a"], 32: ["gfx1030"]}
ARCH_FAMILY = {64: "gfx9 (GCN, CDNA)", 32: "gfx10+ (RDNA)"}
EVIDENCE = (
    "f32/f64 `atomic_add` on global memory calls `__builtin_amdgcn_global_atomic_fadd_*` on gfx90a/gfx94x: "
    "`global_atomic_add_f32` in `llvm-objdump` (ROCm's plain `atomicAdd(float*)` is a "
    "`global_atomic_cmpswap` loop under both hipcc and hipRTC); elsewhere it falls back to `atomicAdd`.",
    "i64 min/max are `__hip_atomic_fetch_min/max` at agent scope (`global_atomic_smin_x2`): ROCm 5.2 has "
    "no signed 64-bit `atomicMin`.",
    "Fences: `__threadfence()` is `buffer_wbinvl1_vol` (agent scope) on gfx90a.",
)


@record
class HipNeeds(Needs):
    # Native float atomics on global memory (gfx90a / gfx94x), which do not work on
    # fine-grained (host-coherent) memory: such arrays must come from hipMalloc.
    global_float_atomic_add: bool = False


class HipDialect(CudaDialect):
    name = "hip"
    negated_by_helper = frozenset()  # CUDA's qd_neg works around ptxas; hipcc negates i16 right
    # blockDim.x, not the constant: with it hipcc -O3 emitted 10-20% more gfx90a instructions
    # for the block collectives (bench section 3).
    thread_index_fixed_block = None
    reserved = CudaDialect.reserved | frozenset("_Float16 __fp16 hipThreadIdx_x hipBlockIdx_x".split())
    lane = LANE
    shuffles = SHUFFLES
    votes = VOTES
    warps = WARP
    barriers = BARRIERS
    native_subgroup_reduce = ""
    ptx_scans = False

    # qd_half is clang's _Float16 here, not the CUDA prelude's struct: reinterpret with the builtin.
    bitcasts = {**CudaDialect.bitcasts, ("f16", "u16"): "__builtin_bit_cast(uint16_t, {})",
                ("u16", "f16"): "__builtin_bit_cast(qd_half, (uint16_t)({}))"}

    def literal(self, value: bool | int | float, t: T.DType) -> str:
        if t.name not in ("i64", "u64"):
            return super().literal(value, t)
        # hipcc's int64_t is `long` (hipRTC's `long long`): a suffixed literal would make a
        # `cond ? x : 5ll` or min(u64, 7ull) ambiguous between the overloads of either.
        text = str(int(value)) if -2**31 <= int(value) < 2**31 else super().literal(value, t)
        return f"{self.type_name(t)}({text})"

    def warp(self, r: Renderer, e: ir.WarpOp, args: list[str]) -> str:
        if e.op in WARP_VOTES:
            return f"{r.helper('warp_vote', T.i32)}({args[0]}, {args[1]}, {WARP_VOTES[e.op]})"
        if e.op in ("match_any", "match_all"):
            return f"{r.helper('warp_' + e.op, T.u32)}({args[0]}, {args[1]})"
        return self.warps[e.op].format(*args)

    def math(self, r: Renderer, e: ir.Math, args: list[str]) -> str:
        t = e.args[0].type
        if e.fn == "ffs" and t.bits == 64:
            # HIP overloads __ffsll for long long and unsigned long long; hipcc's int64_t is
            # long, which matches neither better, so name the type.
            return f"__ffsll((unsigned long long)({args[0]}))"
        return super().math(r, e, args)

    def atomic_name(self, op: str, t: T.DType, space: str, loc: ir.Loc | None = None) -> str:
        if op == "add" and t.name in ("f32", "f64") and space == "global":
            return "qd_atomic_add"
        if op == "cas" and t.bits == 16:
            return "qd_atomic_cas"
        return BUILTIN_ATOMICS.get((op, t.name)) or super().atomic_name(op, t, space, loc)

    def atomic(self, r: Renderer, e: ir.Atomic, ref: str, value: str, expected: str | None) -> str:
        t, space = e.type, ir.space_of(e.array)
        fn = self.atomic_name(e.op, t, space, e.loc)
        if fn == "qd_atomic_add":
            r.needs.global_float_atomic_add = True
            return f"{r.helper('atomic_add', t)}(&{ref}, {value})"
        if fn == "qd_atomic_cas":
            return f"{r.helper('atomic_cas', t)}(({r.type(t)}*)&{ref}, {expected}, {value})"
        if (e.op, t.name) in BUILTIN_ATOMICS:
            scope = "__HIP_MEMORY_SCOPE_WORKGROUP" if space == "shared" else "__HIP_MEMORY_SCOPE_AGENT"
            return f"{fn}(&{ref}, {value}, __ATOMIC_RELAXED, {scope})"
        return super().atomic(r, e, ref, value, expected)


class HipTarget(CudaTarget):
    name = "hip"
    title = "HIP"
    dialect = HipDialect()
    # No rocSHMEM; __threadfence_system() exists.
    caps = Capabilities(system_scope=True, block_votes=True, recursion=True, warp_api=True)
    needs_class = HipNeeds
    file_ext = ".hip"
    module_template = "hip/module.hip.j2"
    helper_templates = ("hip/helpers.j2", "cxx/helpers.j2")
    header_template = "hip/header.h.j2"
    default_subgroup_size = 64
    checker = "transpiler.toolchains.hip_check"
    evidence = EVIDENCE
    emulator_defines = ("QD_EMU_HIP",)

    def language(self, ctx: TranslationContext) -> str:
        return f"HIP C++ for hipcc and hipRTC (ROCm 5.2+, wave{ctx.options.subgroup_size})"

    def subgroup_size(self, options: dict) -> int:
        """The wavefront width: 32 with ``wave32`` (RDNA), else 64 (GCN/CDNA). A
        ``subgroup_size`` option of 32 or 64 picks it too."""
        size = options.get("subgroup_size")
        if size is not None:
            if size not in (32, 64) or (options.get("wave32") and size != 32):
                raise TranspileError(f"subgroup_size={size} is not possible on the hip target: wavefronts are "
                                     "64 lanes (GCN/CDNA) or 32 (RDNA, wave32)")
            return size
        return 32 if options.get("wave32") else 64

    def requirements(self, ctx: TranslationContext) -> dict:
        wave = ctx.options.subgroup_size
        req = {"wavefront_size": wave, "arch_family": ARCH_FAMILY[wave], "offload_arch": CHECK_ARCHS[wave],
               "compile_options": ["-O3"] + ([] if ctx.options.fast_math else ["-ffp-contract=off"]),
               "extensions": []}
        if ctx.needs.global_float_atomic_add:
            req["coarse_grained_memory"] = True
        return req

    def module_context(self, ctx: TranslationContext, entries: list[EntryPoint], usage: Usage) -> dict:
        values = super().module_context(ctx, entries, usage)
        # hipRTC declares the 32- and 64-bit fixed-width integers but not the narrow ones.
        narrow = {FIXED_WIDTH[t][0] for t in ("i8", "i16", "u8", "u16")}
        values["rtc_typedefs"] = [(name, ctype) for name, ctype in values["typedefs"] if name in narrow]
        return values

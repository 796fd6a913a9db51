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
from .base import Helper, Renderer
from .cuda import CudaDialect, CudaTarget
from .cxx import FIXED_WIDTH
from .emit import EntryPoint

# ROCm 5.2 has no atomicMin/atomicMax for signed 64-bit ints: the clang builtins do.
BUILTIN_ATOMICS = {("min", "i64"): "__hip_atomic_fetch_min", ("max", "i64"): "__hip_atomic_fetch_max"}

# HIP (ROCm 5.2) has no *_sync warp functions: its shuffles, votes and ballot act on the
# whole wavefront (width warpSize), which is what a subgroup is here.
SHUFFLES = {
    "shuffle": "__shfl({v}, {k})", "broadcast": "__shfl({v}, {k})", "shuffle_up": "__shfl_up({v}, {k})",
    "shuffle_down": "__shfl_down({v}, {k})", "shuffle_xor": "__shfl_xor({v}, {k})",
}
SUBGROUP = {
    "invocation_id": "(int32_t)__lane_id()",
    "ballot": "(uint64_t)__ballot({p})",  # 64 bits on wave64 and wave32 alike
    "all": "__all({p})", "any": "__any({p})",
}
# A wavefront executes in lockstep, but the compiler may still move memory accesses across
# the lanes' convergence point: the fences pin them (__syncwarp's memory ordering).
BARRIERS = {
    "block": "__syncthreads();",
    "subgroup": '__builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront"); __builtin_amdgcn_wave_barrier(); '
                '__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");',
}

# Architectures each wavefront size is compiled and checked for. GCN/CDNA (gfx9) runs wave64
# only; ROCm's HIP headers refuse wave64 on RDNA (gfx10+), so RDNA means wave32.
CHECK_ARCHS = {64: ["gfx90a"], 32: ["gfx1030"]}
ARCH_FAMILY = {64: "gfx9 (GCN, CDNA)", 32: "gfx10+ (RDNA)"}


class HipDialect(CudaDialect):
    name = "hip"
    file_ext = ".hip"
    # blockDim.x, not the constant: with it hipcc -O3 emitted 10-20% more gfx90a instructions
    # for the block collectives (bench section 3).
    thread_index_fixed_block = None
    reserved = CudaDialect.reserved | frozenset("_Float16 __fp16 hipThreadIdx_x hipBlockIdx_x".split())
    shuffles = SHUFFLES
    subgroup_ops = SUBGROUP
    barriers = BARRIERS

    # qd_half is clang's _Float16 here, not the CUDA prelude's struct: reinterpret with the builtin.
    bitcasts = {**CudaDialect.bitcasts, ("f16", "u16"): "__builtin_bit_cast(uint16_t, {})",
                ("u16", "f16"): "__builtin_bit_cast(qd_half, (uint16_t)({}))"}

    def __init__(self, subgroup_size: int = 64):
        self.subgroup_size = subgroup_size

    def math(self, r: Renderer, e: ir.Math, args: list[str]) -> str:
        t = e.args[0].type
        if e.fn == "ffs" and t.bits == 64:
            # HIP overloads __ffsll for long long and unsigned long long; hipcc's int64_t is
            # long, which matches neither better, so name the type.
            return f"__ffsll((unsigned long long)({args[0]}))"
        return super().math(r, e, args)

    def atomic(self, r: Renderer, e: ir.Atomic, ref: str, value: str, expected: str | None) -> str:
        t = e.type
        if e.op == "add" and t.name in ("f32", "f64") and isinstance(e.array, ir.Param):
            r.features.add("global_float_atomic_add")
            return f"{r.helper('atomic_add', t)}(&{ref}, {value})"
        if e.op == "cas" and t.bits == 16:
            return f"{r.helper('atomic_cas', t)}(({r.type(t)}*)&{ref}, {expected}, {value})"
        builtin = BUILTIN_ATOMICS.get((e.op, t.name))
        if builtin is not None:
            scope = "__HIP_MEMORY_SCOPE_WORKGROUP" if isinstance(e.array, ir.SharedArray) else \
                "__HIP_MEMORY_SCOPE_AGENT"
            return f"{builtin}(&{ref}, {value}, __ATOMIC_RELAXED, {scope})"
        return super().atomic(r, e, ref, value, expected)


class HipTarget(CudaTarget):
    name = "hip"
    dialect = HipDialect(64)
    template = "hip/module.hip.j2"
    file_ext = ".hip"

    @property
    def language(self) -> str:  # type: ignore[override]
        return f"HIP C++ for hipcc and hipRTC (ROCm 5.2+, wave{self.dialect.subgroup_size})"

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

    def translate(self, kernel: ir.Kernel, options: dict) -> tuple[dict[str, str], dict]:
        from ..shmem import reject_unsupported

        reject_unsupported(kernel, self.name, system_scope=True)  # no rocSHMEM; __threadfence_system() exists
        self.dialect = HipDialect(self.subgroup_size(options))
        return super().translate(kernel, options)

    def requirements(self, features: set[str], used_types: set[str]) -> dict:
        wave = self.dialect.subgroup_size
        req = {"wavefront_size": wave, "arch_family": ARCH_FAMILY[wave], "offload_arch": CHECK_ARCHS[wave],
               "compile_options": ["-O3"], "extensions": []}
        if "global_float_atomic_add" in features:
            # The native float atomics of gfx90a / gfx94x do not work on fine-grained
            # (host-coherent) memory: such arrays must come from hipMalloc, not hipHostMalloc.
            req["coarse_grained_memory"] = True
        return req

    def module_context(self, entries: list[EntryPoint], helpers: list[Helper], features: set[str],
                       used_types: set[str]) -> dict:
        ctx = super().module_context(entries, helpers, features, used_types)
        ctx["dialect_dir"] = "hip"
        ctx.update(warp_size=self.dialect.subgroup_size, lane_id="(int)__lane_id()",
                   shfl_xor="__shfl_xor({}, {})", shfl_up="__shfl_up({}, {})", native_warp_reduce="",
                   ptx_shfl_up_pred=False)
        # hipRTC declares the 32- and 64-bit fixed-width integers but not the narrow ones.
        narrow = {FIXED_WIDTH[t][0] for t in ("i8", "i16", "u8", "u16")}
        ctx["rtc_typedefs"] = [(name, ctype) for name, ctype in ctx["typedefs"] if name in narrow]
        return ctx


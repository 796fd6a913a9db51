"""``qd.shmem`` on the CUDA target: NVSHMEM device calls, and what the host must do.

The spellings are NVSHMEM's typed device routines (``nvshmem_<TYPENAME>_<op>``). Which
TYPENAME exists for which routine differs per family; the tables below are the ones the
NVRTC headers of NVSHMEM 3.8 (the ``nvidia-nvshmem-cu13`` wheel) declare, checked by
``tests/test_nvshmem.py``. Where a routine lacks a dtype but an equivalent exists on the
same bits, the call goes through it (i64 add as u64: two's complement); otherwise the
dtype is a located error naming routine, dtype and target.

The generated module includes ``<nvshmem.h>`` only when a kernel uses NVSHMEM, so every
other module stays self-contained; that header also brings the fixed-width integers (from
``<cuda/std/cstdint>`` under NVRTC, ``<stdint.h>`` under nvcc), so the module does not
typedef its own (``int64_t`` is ``long`` under nvcc and a prelude typedef would clash).
"""
from __future__ import annotations

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..passes.capabilities import barrier_all_used, nvshmem_uses
from .dialect import PREC_PRIMARY, PREC_UNARY
from .renderer import Renderer

# The NVSHMEM release the spellings and the host notes were validated against.
NVSHMEM_VERSION = "3.8.0"
# libnvshmem_device ships SASS for sm_75 and newer (sm_75, 80, 89, 90, 100, 120).
NVSHMEM_MIN_SM = 75

# dtype -> TYPENAME of the RMA routines (p, g, put, get, put_nbi, get_nbi). f16 moves as its
# bits (the module's qd_half is not CUDA's __half): nvshmem_put16 / nvshmem_uint16_p.
RMA_TYPES = {"i8": "int8", "i16": "int16", "i32": "int", "i64": "int64", "u8": "uint8", "u16": "uint16",
             "u32": "uint", "u64": "uint64", "f32": "float", "f64": "double"}
# p and g: libnvshmem_device has no signed-char instantiation of its remote single-element
# transfer, so i8 goes through uint8 (the same bits).
ELEMENT_TYPES = {**RMA_TYPES, "i8": ("uint8", "u8")}
_STANDARD_AMO = {"i32": "int", "u32": "uint", "i64": "int64", "u64": "uint64"}
_EXTENDED_AMO = {**_STANDARD_AMO, "f32": "float", "f64": "double"}
# atomic op -> dtype -> TYPENAME, or (TYPENAME, dtype it operates on) for a reinterpretation.
# NVSHMEM 3.8 has no int64 fetch-add / add on the device: i64 adds through uint64.
ATOMIC_TYPES = {
    "fetch_add": {"i32": "int", "u32": "uint", "u64": "uint64", "i64": ("uint64", "u64")},
    "add": {"i32": "int", "u32": "uint", "u64": "uint64", "i64": ("uint64", "u64")},
    "compare_swap": _STANDARD_AMO,
    "swap": _EXTENDED_AMO, "fetch": _EXTENDED_AMO, "set": _EXTENDED_AMO,
}
WAIT_TYPES = {"i16": "short", "u16": "ushort", "i32": "int", "u32": "uint", "i64": "int64", "u64": "uint64"}
CMP_NAMES = {c: f"NVSHMEM_CMP_{c.upper()}" for c in ir.SHMEM_CMPS}
ORDERING = {ir.ShmemFence: "nvshmem_fence();", ir.ShmemQuiet: "nvshmem_quiet();",
            ir.ShmemBarrierAll: "nvshmem_barrier_all();"}


def _supported(table: dict) -> str:
    order = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64")
    return ", ".join(k for k in order if k in table)


class ShmemRenderer(Renderer):
    """The renderer of CUDA entry points, with the NVSHMEM routines. The pipeline lets a
    kernel that uses them reach only a target whose capabilities include NVSHMEM."""

    def shmem_dialect(self, loc: ir.Loc) -> None:
        if not self.ctx.target.caps.nvshmem:
            raise TranspileError(f"internal error: qd.shmem reached the {self.ctx.target.name} target", loc)

    def typename(self, table: dict, what: str, t: T.DType, loc: ir.Loc) -> str:
        name = table.get(t.name)
        if name is None:
            raise TranspileError(f"qd.shmem.{what} on {t.name} is not supported on the cuda target: NVSHMEM's "
                                 f"{what} takes {_supported(table)}", loc)
        return name

    def expr_ShmemMyPe(self, e: ir.ShmemMyPe) -> tuple[str, int]:
        self.shmem_dialect(e.loc)
        return "nvshmem_my_pe()", PREC_PRIMARY

    def expr_ShmemNPes(self, e: ir.ShmemNPes) -> tuple[str, int]:
        self.shmem_dialect(e.loc)
        return "nvshmem_n_pes()", PREC_PRIMARY

    def expr_ShmemElement(self, e: ir.ShmemElement) -> tuple[str, int]:
        return "&" + self.dialect.array_ref(self, e.array, self.linear_index(e.array, e.indices)), PREC_UNARY

    def address(self, e: ir.ShmemElement, as_type: str | None = None, const: bool = False) -> str:
        text = self.text(e, PREC_UNARY)
        return f"({'const ' if const else ''}{as_type}*){text}" if as_type else text

    def expr_ShmemPut(self, e: ir.ShmemPut) -> tuple[str, int]:
        return self.range_copy(e, "put"), PREC_PRIMARY

    def expr_ShmemGet(self, e: ir.ShmemGet) -> tuple[str, int]:
        return self.range_copy(e, "get"), PREC_PRIMARY

    def range_copy(self, e: ir.ShmemPut | ir.ShmemGet, op: str) -> str:
        self.shmem_dialect(e.loc)
        suffix = "_nbi" if e.nbi else ""
        count, pe = self.text(e.args[2]), self.text(e.args[3])
        if e.dest.type is T.f16:  # the bits: the sized routine takes void pointers
            return f"nvshmem_{op}16{suffix}({self.address(e.dest)}, {self.address(e.source)}, {count}, {pe})"
        name = self.typename(RMA_TYPES, op + suffix, e.dest.type, e.loc)
        return f"nvshmem_{name}_{op}{suffix}({self.address(e.dest)}, {self.address(e.source)}, {count}, {pe})"

    def expr_ShmemP(self, e: ir.ShmemP) -> tuple[str, int]:
        self.shmem_dialect(e.loc)
        value, pe = self.text(e.args[1]), self.text(e.pe)
        if e.dest.type is T.f16:
            return f"nvshmem_uint16_p({self.address(e.dest, 'uint16_t')}, qd_half({value}).bits, {pe})", PREC_PRIMARY
        name = self.typename(ELEMENT_TYPES, "p", e.dest.type, e.loc)
        if isinstance(name, tuple):  # the same bits as another type
            name, ctype = name[0], self.dialect.type_name(T.SCALARS[name[1]])
            return f"nvshmem_{name}_p({self.address(e.dest, ctype)}, ({ctype})({value}), {pe})", PREC_PRIMARY
        return f"nvshmem_{name}_p({self.address(e.dest)}, {value}, {pe})", PREC_PRIMARY

    def expr_ShmemG(self, e: ir.ShmemG) -> tuple[str, int]:
        self.shmem_dialect(e.loc)
        pe = self.text(e.pe)
        if e.type is T.f16:
            return f"qd_half_from_bits(nvshmem_uint16_g({self.address(e.source, 'uint16_t', const=True)}, {pe}))", \
                PREC_PRIMARY
        name = self.typename(ELEMENT_TYPES, "g", e.type, e.loc)
        if isinstance(name, tuple):
            name, ctype = name[0], self.dialect.type_name(T.SCALARS[name[1]])
            call = f"nvshmem_{name}_g({self.address(e.source, ctype, const=True)}, {pe})"
            return self.dialect.cast(call, e.type), PREC_PRIMARY
        return f"nvshmem_{name}_g({self.address(e.source)}, {pe})", PREC_PRIMARY

    def expr_ShmemAtomic(self, e: ir.ShmemAtomic) -> tuple[str, int]:
        self.shmem_dialect(e.loc)
        t = e.target.type
        name = self.typename(ATOMIC_TYPES[e.op], f"atomic_{e.op}", t, e.loc)
        operands = [self.text(x) for x in e.operands]
        if isinstance(name, tuple):  # the same bits as another type: cast in and out
            name, as_dtype = name
            ctype = self.dialect.type_name(T.SCALARS[as_dtype])
            args = [self.address(e.target, ctype)] + [f"({ctype})({x})" for x in operands] + [self.text(e.pe)]
            call = f"nvshmem_{name}_atomic_{e.op}({', '.join(args)})"
            if e.type is ir.VOID:
                return call, PREC_PRIMARY
            return self.dialect.cast(call, t), PREC_PRIMARY
        args = [self.address(e.target), *operands, self.text(e.pe)]
        return f"nvshmem_{name}_atomic_{e.op}({', '.join(args)})", PREC_PRIMARY

    def expr_ShmemWaitUntil(self, e: ir.ShmemWaitUntil) -> tuple[str, int]:
        self.shmem_dialect(e.loc)
        name = self.typename(WAIT_TYPES, "wait_until", e.ivar.type, e.loc)
        return f"nvshmem_{name}_wait_until({self.address(e.ivar)}, {CMP_NAMES[e.cmp]}, {self.text(e.args[1])})", \
            PREC_PRIMARY

    def stmt_ShmemFence(self, st: ir.ShmemFence, depth: int) -> None:
        self.ordering(st, depth)

    def stmt_ShmemQuiet(self, st: ir.ShmemQuiet, depth: int) -> None:
        self.ordering(st, depth)

    def stmt_ShmemBarrierAll(self, st: ir.ShmemBarrierAll, depth: int) -> None:
        self.ordering(st, depth)

    def ordering(self, st: ir.Stmt, depth: int) -> None:
        self.shmem_dialect(st.loc)
        self.put(depth, ORDERING[type(st)], st.loc)


# ----------------------------------------------------------------------------- the manifest

def requirement(kernel: ir.Kernel) -> dict | None:
    """The manifest's ``requirements.nvshmem`` for ``kernel``; None when it uses no NVSHMEM."""
    if not nvshmem_uses(kernel):
        return None
    collective = barrier_all_used(kernel)
    symmetric = [p.name for p in kernel.params if p.symmetric]
    return {
        "version": NVSHMEM_VERSION,
        "headers": ["nvshmem.h"],
        "relocatable_device_code": True,
        "nvcc_options": ["-rdc=true"],
        "include_dirs": ["$NVSHMEM_HOME/include", "$CUDA_HOME/include", "$CUDA_HOME/include/cccl"],
        "libraries": ["nvshmem_host", "nvshmem_device"],
        "collective_launch": collective,
        "symmetric_params": symmetric,
        "host_notes": host_notes(symmetric, collective),
    }


def host_notes(symmetric: list[str], collective: bool) -> list[str]:
    """What a C++ host must do around an NVSHMEM kernel, one step a line (the header repeats them)."""
    sym = ", ".join(symmetric) if symmetric else "(none)"
    launch = ("Launch every entry point with nvshmemx_collective_launch (it calls nvshmem_barrier_all on the device, "
              "so all its blocks must be resident at once): cap the grid with "
              "nvshmemx_collective_launch_query_gridsize; the grid-stride loop covers the rest."
              if collective else
              "Launch with any API (cudaLaunchKernel, cuLaunchKernel): no device-side collective is used, so "
              "nvshmemx_collective_launch is not needed.")
    return [
        "Run one process (PE) per GPU: nvshmrun -np N ./app, mpirun -np N ./app, or the unique-id bootstrap "
        "(nvshmemx_init_attr with NVSHMEMX_INIT_WITH_UNIQUEID); cudaSetDevice(node-local rank) before nvshmem_init().",
        f"Allocate the symmetric parameters ({sym}) with nvshmem_malloc / nvshmem_calloc on every PE, with the same "
        "sizes in the same order (collective calls); other ndarrays may be any device memory (over InfiniBand the "
        "local side of a put/get must be symmetric or registered with nvshmemx_buffer_register).",
        "Build with relocatable device code and NVSHMEM's device library: nvcc -rdc=true -I$NVSHMEM_HOME/include "
        "... -L$NVSHMEM_HOME/lib -lnvshmem_host -lnvshmem_device.",
        "With NVRTC: compile with -rdc=true and -I for $NVSHMEM_HOME/include, $CUDA_HOME/include and "
        "$CUDA_HOME/include/cccl; link the cubin with libnvshmem_device.a (cuLinkAddFile, or nvJitLink; "
        "libnvshmem_device_sm_XY.bc for LTO), load it, then call nvshmemx_cumodule_init(module) "
        "(nvshmemx_culibrary_init for a CUlibrary) before the first launch.",
        launch,
        "Call nvshmem_barrier_all() on the host after initializing symmetric buffers and before launching, so no "
        "PE writes into a peer that is still setting up.",
        "Operations the kernel leaves incomplete (no qd.shmem.quiet() after them) complete only with "
        "nvshmemx_quiet_on_stream or a barrier: cudaStreamSynchronize alone does not complete them.",
    ]

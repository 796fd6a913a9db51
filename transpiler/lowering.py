"""The lowering tables (`cli.py targets`, `docs/lowering.md`): for every atomic op, dtype and
memory space, and for fences and volatile loads, what each target emits. Every cell is
produced by translating a one-statement kernel through the real code path, so the table
cannot drift from the code."""
from __future__ import annotations

import re

from .errors import TranspileError
from .ir import nodes as ir
from .ir import types as T

OPS = ("add", "sub", "mul", "min", "max", "and", "or", "xor", "exchange", "cas")
DTYPES = (T.i32, T.u32, T.i64, T.u64, T.f16, T.f32, T.f64)
SPACES = ("global", "shared")
LOC = ir.Loc("lowering.py", 1, 0)

# Why each memory-order lowering was chosen: the disassembly it was checked against.
EVIDENCE = {
    "cuda": [
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
    ],
    "hip": [
        "f32/f64 `atomic_add` on global memory calls `__builtin_amdgcn_global_atomic_fadd_*` on gfx90a/gfx94x: "
        "`global_atomic_add_f32` in `llvm-objdump` (ROCm's plain `atomicAdd(float*)` is a "
        "`global_atomic_cmpswap` loop under both hipcc and hipRTC); elsewhere it falls back to `atomicAdd`.",
        "i64 min/max are `__hip_atomic_fetch_min/max` at agent scope (`global_atomic_smin_x2`): ROCm 5.2 has "
        "no signed 64-bit `atomicMin`.",
        "Fences: `__threadfence()` is `buffer_wbinvl1_vol` (agent scope) on gfx90a.",
    ],
    "glsl": [
        "Atomics are SPIR-V `OpAtomic*` at device scope. f32 add needs `GL_EXT_shader_atomic_float` "
        "(recorded in the manifest); f32/f64 exchange goes through a uint view of the buffer "
        "(`OpAtomicExchange` on the bits); other float ops are CAS loops over `atomicCompSwap` on that view.",
        "Buffers that a fence or volatile load touches are declared `coherent`, so that device-scope "
        "availability/visibility applies to them (GLSL's rule for cross-workgroup communication).",
        "`grid.mem_fence()` is `memoryBarrier()`; `block.mem_fence()` is `groupMemoryBarrier()`.",
    ],
    "msl": [
        "Metal's device-scope fence orders only atomic accesses (seed 000): data another block reads after a "
        "`grid.mem_fence()` handshake must itself be published with an atomic on Metal.",
        "64-bit integer atomics do not exist on Metal; f64 does not exist at all: both are located errors.",
    ],
}


def _atomic_kernel(op: str, t: T.DType, space: str) -> ir.Kernel:
    arr = ir.Param("a", T.NdarrayType(t, 1), 0, LOC)
    i = ir.Local("i", T.i32, LOC, loop_var=True)
    idx = [ir.LocalRef(T.i32, LOC, i)]
    value = ir.Const(t, LOC, 1.0 if t.is_float else 1)
    shared: list[ir.SharedArray] = []
    target: ir.Array = arr
    if space == "shared":
        target = ir.SharedArray("s", T.SharedArrayType(t, (128,)), LOC)
        shared.append(target)
    expected = ir.Const(t, LOC, 0) if op == "cas" else None
    real_op = "add" if op == "sub" else op
    atomic = ir.Atomic(t, LOC, real_op, target, idx, value if op != "sub" else ir.Const(t, LOC, -1), expected)
    body = [ir.Store(LOC, arr, idx, atomic)] if space == "global" else \
        [ir.DeclareShared(LOC, target), ir.Store(LOC, arr, idx, atomic)]
    task = ir.Task("k", "parallel", [i], [(ir.Const(T.i32, LOC, 0), ir.Const(T.i32, LOC, 128))], 128, body, LOC,
                   shared=shared)
    return ir.Kernel("k", "lowering.py", LOC, [arr], [task])


def all_atomics_kernel(target_name: str, space: str) -> ir.Kernel:
    """One kernel holding every (op, dtype) atomic the target accepts in ``space``: what the
    test suite compiles with each real toolchain (one compile per target and space)."""
    params, body, shared = [], [], []
    i = ir.Local("i", T.i32, LOC, loop_var=True)
    idx = [ir.LocalRef(T.i32, LOC, i)]
    for t in DTYPES:
        ops = [op for op in OPS if not atomic_cell(target_name, op, t, space).startswith("error")]
        if not ops:
            continue
        arr = ir.Param(f"a_{t.name}", T.NdarrayType(t, 1), len(params), LOC)
        params.append(arr)
        target: ir.Array = arr
        if space == "shared":
            target = ir.SharedArray(f"s_{t.name}", T.SharedArrayType(t, (128,)), LOC)
            shared.append(target)
            body.append(ir.DeclareShared(LOC, target))
        for op in ops:
            one = ir.Const(t, LOC, 1.0 if t.is_float else 1)
            expected = ir.Const(t, LOC, 0) if op == "cas" else None
            atomic = ir.Atomic(t, LOC, "add" if op == "sub" else op, target, idx, one, expected)
            body.append(ir.Store(LOC, arr, idx, atomic))
    task = ir.Task("atomics", "parallel", [i], [(ir.Const(T.i32, LOC, 0), ir.Const(T.i32, LOC, 128))], 128, body,
                   LOC, shared=shared)
    return ir.Kernel("atomics", "lowering.py", LOC, params, [task])


def _frontend_rejects(op: str, t: T.DType) -> str | None:
    """What the frontend refuses for every target (the seed's rules)."""
    if op in ("and", "or", "xor") and t.is_float:
        return "error: bitwise atomics need an integer element"
    if op == "cas" and t.is_float:
        return "error: compare-and-swap needs an integer element"
    return None


def atomic_cell(target_name: str, op: str, t: T.DType, space: str, options: dict | None = None) -> str:
    from .targets import get_target

    rejected = _frontend_rejects(op, t)
    if rejected:
        return rejected
    target = get_target(target_name)
    try:
        sources, _ = target.translate(_atomic_kernel(op, t, space), dict(options or {}))
    except TranspileError as exc:
        return "error: " + exc.message.split(": ", 1)[-1] if ": " in exc.message else "error: " + exc.message
    text = "\n".join(sources.values())
    lines = [ln.strip() for ln in text.splitlines() if ln.rstrip().endswith("// lowering.py:1")]
    body = " ".join(lines)
    if "while (true)" in body:
        cas = re.search(r"(\w+)\(.*?&?[\w\[\]]*", next(ln for ln in lines if "seen" in ln and "=" in ln)
                        .split("=", 1)[1])
        return f"CAS loop (`{cas.group(1) if cas else 'cas'}`)"
    call = re.search(r"([A-Za-z_][\w:]*)\(", lines[-1].split("=", 1)[1] if "=" in lines[-1] else lines[-1])
    spelled = call.group(1) if call else lines[-1]
    if spelled in ("__longlong_as_double", "uintBitsToFloat", "as_type", "__uint_as_float", "int64BitsToDouble",
                   "uint64BitsToDouble"):
        inner = re.findall(r"(\w*atomic\w*)\(", lines[-1], re.IGNORECASE)
        return f"native on the bits (`{inner[0] if inner else spelled}`)"
    return f"native (`{spelled}`)"


def atomic_table(target_name: str) -> list[list[str]]:
    rows = []
    for space in SPACES:
        for op in OPS:
            rows.append([f"{op} ({space})"] + [atomic_cell(target_name, op, t, space) for t in DTYPES])
    return rows


def markdown() -> str:
    from .translate import TARGETS

    out = ["# Lowering tables", "",
           "Generated by `python cli.py targets --markdown` from the code's own tables (each cell is the",
           "translation of a one-statement kernel); `tests/test_atomics.py` checks this file is current.",
           "Atomics are device scope everywhere and return the old value; `atomic_sub(x, y)` is",
           "`atomic_add(x, -y)`.", ""]
    for target in TARGETS:
        out += [f"## {target}", "", "| op (memory) | " + " | ".join(t.name for t in DTYPES) + " |",
                "|---|" + "---|" * len(DTYPES)]
        for row in atomic_table(target):
            out.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        out += ["", "Memory order, and why:", ""]
        out += [f"- {note}" for note in EVIDENCE.get(target, [])]
        out.append("")
    return "\n".join(out)

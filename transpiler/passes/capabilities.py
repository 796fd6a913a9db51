"""Does a kernel need what a target lacks? One check against the target's capability flags,
run by the pipeline before any target-specific pass, so no target has to remember it: f64,
recursion, system-scope fences and NVSHMEM, each a located error at the first place the
kernel needs it, with the target's reason. The capability flags are described here, below
the targets that set them, so the passes read them without importing a target."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.memo import per_kernel
from ..ir.records import record
from ..ir.walk import all_exprs, all_stmts, contains, iter_expr, task_code


@record(frozen=True)
class Capabilities:
    """What a target can express. The pipeline rejects a kernel that needs more (at its
    line, with the target's ``why_not`` reason), the passes emulate what has an emulation,
    and the hazard checker knows which memory-order idioms are portable to it."""

    f64: bool = True
    system_scope: bool = False      # a fence ordering accesses for the host and other devices
    nvshmem: bool = False           # NVSHMEM's device API (qd.shmem)
    block_votes: bool = False       # a fused barrier-with-reduction for block.sync_*_nonzero
    # Whether a device-scope fence orders plain (non-atomic) stores for other blocks. Metal's
    # atomic_thread_fence orders atomic accesses only (the Metal Shading Language specification,
    # as Quadrants' grid.mem_fence guide warns), so a plain-store publication is not safe there.
    fence_orders_plain_stores: bool = True
    recursion: bool = False         # a function may call itself (a recursive @qd.real_func)
    warp_api: bool = False          # CUDA's masked warp intrinsics (qd.simt.warp)
    # qd.simt.subgroup and what is built on it (the block library, register tiles): the dialect
    # spells its operations (``Dialect.subgroup``); without them each use is a located error.
    subgroups: bool = True
    # 16-byte vector loads of ndarray elements (CUDA's float4 / int4 ...), for the lanes of a
    # VectorLane; without them each lane is a scalar load (passes/vector_loads.py).
    vector_loads: bool = False
    # A @qd.real_func's parameters passed by reference: its vector, matrix or struct result
    # parts, qd.ref parameters, the caller's random stream (C has no references).
    references: bool = True


class TargetProfile(Protocol):
    """What the passes read of a target (targets/target.py's ``Target``, a layer above): its
    names for messages, its capabilities, and why it lacks each one it lacks."""

    name: str
    title: str                        # the language as people name it ("Metal")
    caps: Capabilities
    why_not: dict[str, str]           # capability -> why the target lacks it


_SHMEM_STMTS = (ir.ShmemFence, ir.ShmemQuiet, ir.ShmemBarrierAll)
_SHMEM_EXPRS = (ir.ShmemOp, ir.ShmemMyPe, ir.ShmemNPes)


def _first(locs: list[ir.Loc]) -> ir.Loc | None:
    return min(locs, key=lambda loc: (loc.line, loc.col), default=None)


def _code(kernel: ir.Kernel):
    """Each task's statements (prelude, body, epilogue), with those of the functions it calls."""
    for task in kernel.tasks:
        yield task, task_code(kernel, task)


@per_kernel
def nvshmem_uses(kernel: ir.Kernel) -> list[ir.Loc]:
    """Where ``kernel`` depends on NVSHMEM: symmetric parameters and every qd.shmem routine,
    in source order (empty when it does not)."""
    found = [p.loc for p in kernel.params if p.symmetric]
    if not contains(kernel, *_SHMEM_STMTS, *_SHMEM_EXPRS):
        return found
    for _, stmts in _code(kernel):
        found += [st.loc for st in all_stmts(stmts) if isinstance(st, _SHMEM_STMTS)]
        found += [e.loc for e in all_exprs(stmts) if isinstance(e, _SHMEM_EXPRS)]
    return sorted(found, key=lambda loc: (loc.line, loc.col))


def barrier_all_used(kernel: ir.Kernel) -> bool:
    """Whether a device-side barrier_all needs the kernel launched collectively."""
    return contains(kernel, ir.ShmemBarrierAll)


def first_system_fence(kernel: ir.Kernel) -> ir.Loc | None:
    if not contains(kernel, ir.Fence):
        return None
    return _first([st.loc for _, stmts in _code(kernel) for st in all_stmts(stmts)
                   if isinstance(st, ir.Fence) and st.scope == "system"])


def first_recursion(kernel: ir.Kernel) -> ir.Loc | None:
    """The first call that closes a recursion cycle (a function calling itself, directly
    or through others)."""
    recursive = {f.name for f in kernel.functions if f.recursive}
    return _first([e.loc for f in kernel.functions if f.recursive for e in all_exprs(f.body)
                   if isinstance(e, ir.Call) and e.function in recursive])


@per_kernel
def first_f64(kernel: ir.Kernel) -> ir.Loc | None:
    """The earliest place in the source where the kernel uses f64."""
    found = [p.loc for p in kernel.params if (p.type.dtype if p.is_array else p.type) is T.f64]
    for task, stmts in _code(kernel):
        found += [s.loc for s in task.shared if s.type.dtype is T.f64]
        found += [e.loc for e in all_exprs(stmts) if e.type is T.f64]
        found += [e.loc for bound in task.ranges for x in bound for e in iter_expr(x) if e.type is T.f64]
        found += [st.loc for st in all_stmts(stmts)
                  if isinstance(st, (ir.Declare, ir.Assign, ir.For)) and st.var.type is T.f64]
    return _first(found)


# What to write instead of each qd.simt.warp function on a target without CUDA's warp API.
WARP_INSTEAD = {
    "all_nonzero": "qd.simt.subgroup.all_true(predicate)", "any_nonzero": "qd.simt.subgroup.any_true(predicate)",
    "unique": "qd.simt.subgroup.all_equal(predicate != 0)", "ballot": "qd.simt.subgroup.ballot_first_n(predicate, 32)",
    "shfl_sync_i32": "qd.simt.subgroup.shuffle(value, lane)", "shfl_sync_f32": "qd.simt.subgroup.shuffle(value, lane)",
    "shfl_up_i32": "qd.simt.subgroup.shuffle_up(value, delta)",
    "shfl_up_f32": "qd.simt.subgroup.shuffle_up(value, delta)",
    "shfl_down_i32": "qd.simt.subgroup.shuffle_down(value, delta)",
    "shfl_down_f32": "qd.simt.subgroup.shuffle_down(value, delta)",
    "shfl_xor_i32": "qd.simt.subgroup.shuffle_xor(value, mask)", "sync": "qd.simt.subgroup.sync()",
    "match_any": "qd.simt.subgroup.all_equal(value) (whether all lanes match)",
    "match_all": "qd.simt.subgroup.all_equal(value)",
    "active_mask": "uniform control flow, where every lane is active",
}


def first_warp_op(kernel: ir.Kernel) -> ir.WarpOp | None:
    if not contains(kernel, ir.WarpOp):
        return None
    found = [e for _, stmts in _code(kernel) for e in all_exprs(stmts) if isinstance(e, ir.WarpOp)]
    return min(found, key=lambda e: (e.loc.line, e.loc.col), default=None)


def check_capabilities(kernel: ir.Kernel, target: TargetProfile, targets: Iterable[TargetProfile]) -> None:
    """A located error where ``kernel`` needs something ``target`` cannot express. ``targets``:
    every target there is (the registry is above the passes), read only to name in an error
    those that have what the kernel needs; a lazy iterable costs nothing when none is raised."""
    caps, why = target.caps, target.why_not
    if not caps.f64:
        loc = first_f64(kernel)
        if loc is not None:
            raise TranspileError(f"f64 is not supported on the {target.name} target: {why['f64']}", loc,
                                 hint="use qd.f32")
    if not caps.nvshmem:
        found = nvshmem_uses(kernel)
        if found:
            having = [t.name for t in targets if t.caps.nvshmem]
            raise TranspileError(f"qd.shmem is not supported on the {target.name} target: NVSHMEM exists for "
                                 f"{' and '.join(having).upper() if having else 'no target'} only", found[0],
                                 hint=f"translate this kernel for the {' or '.join(having)} target")
    if not caps.recursion:
        loc = first_recursion(kernel)
        if loc is not None:
            raise TranspileError(f"a recursive @qd.real_func is not supported on the {target.name} target: "
                                 f"{why['recursion']}", loc, hint="rewrite the recursion as a loop")
    if not caps.warp_api:
        op = first_warp_op(kernel)
        if op is not None:
            raise TranspileError(f"qd.simt.warp.{op.name}() is not supported on the {target.name} target: "
                                 f"{why['warp_api']}", op.loc, hint=f"use {WARP_INSTEAD[op.name]}")
    if not caps.system_scope:
        loc = first_system_fence(kernel)
        if loc is not None:
            raise TranspileError(f"qd.simt.system.mem_fence() is not supported on the {target.name} target: "
                                 f"{why['system_scope']}", loc,
                                 hint="use qd.simt.grid.mem_fence() for ordering within this device, and "
                                      "synchronize with the host after the launch")

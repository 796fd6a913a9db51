"""``qd.simt``: SIMT primitives by scope.

``qd.simt.block`` works on the threads of one block (CUDA CTA, Vulkan/Metal workgroup),
``qd.simt.subgroup`` on the lanes of one subgroup (warp, wavefront, SIMD-group),
``qd.simt.grid`` across all blocks of a launch. The primitives are markers the frontend
lowers to IR nodes; the block-wide reductions, scans and the radix rank are written once,
in the kernel language itself, on top of them (``transpiler/lang/blocklib.py``), and so
are the register tiles ``qd.simt.Tile16x16`` / ``Tile32x32`` (``transpiler/lang/tile.py``).
Semantics: ``shared/seeds``."""
from __future__ import annotations

from .kernel import builtin
from .names import Namespace


def _marker(name: str, doc: str):
    stub = builtin(name)(lambda *args, **kwargs: None)
    stub.__name__ = name.split(".")[-1]
    stub.__doc__ = doc
    return stub


_block = {
    "thread_idx": "The index of the calling thread within its block.",
    "global_thread_idx": "The index of the calling thread within the launch.",
    "sync": "Block barrier: every thread of the block waits here; prior writes become visible to the block.",
    "sync_all_nonzero": "Block barrier that returns non-zero when the predicate is non-zero on every thread.",
    "sync_any_nonzero": "Block barrier that returns non-zero when the predicate is non-zero on any thread.",
    "sync_count_nonzero": "Block barrier that returns how many threads have a non-zero predicate.",
    "mem_fence": "Order this thread's memory accesses as seen by the threads of its block (no barrier).",
    "mem_sync": "Deprecated alias of block.mem_fence().",
    "SharedArray": "SharedArray(shape, dtype): memory shared by the threads of a block, sized at translation time.",
}
_subgroup = {
    "invocation_id": "The calling lane's index within its subgroup.",
    "group_size": "The subgroup width of the target (a translation-time int).",
    "log2_group_size": "log2 of the subgroup width (a translation-time int).",
    "shuffle": "shuffle(value, lane): the value held by `lane`.",
    "shuffle_up": "shuffle_up(value, delta): the value of lane - delta (own value when below 0).",
    "shuffle_down": "shuffle_down(value, delta): the value of lane + delta (own value past the end).",
    "shuffle_xor": "shuffle_xor(value, mask): the value of lane ^ mask.",
    "broadcast": "broadcast(value, lane): the value of `lane` (a uniform lane index) in every lane.",
    "broadcast_first": "The value of lane 0 in every lane.",
    "ballot": "A u64 mask of the lanes whose predicate is non-zero.",
    "all_true": "1 when the predicate is non-zero on every lane, else 0.",
    "any_true": "1 when the predicate is non-zero on any lane, else 0.",
    "sync": "Subgroup barrier.",
    "mem_fence": "Order memory accesses as seen by the subgroup.",
    **{f"{kind}_{op}": f"Subgroup {kind.replace('_', ' ')} with {op} (every lane gets its result)."
       for kind in ("reduce", "reduce_all", "inclusive", "exclusive") for op in ("add", "min", "max")},
}

block = Namespace("qd.simt.block", **{k: _marker(f"block.{k}", d) for k, d in _block.items()})
subgroup = Namespace("qd.simt.subgroup", **{k: _marker(f"subgroup.{k}", d) for k, d in _subgroup.items()})
grid = Namespace("qd.simt.grid",
    mem_fence=_marker("grid.mem_fence", "Order this thread's memory accesses as seen by every thread of the launch."),
    memfence=_marker("grid.memfence", "Deprecated alias of grid.mem_fence()."),
)
# System scope: the host and other devices too (mapped host memory, peer GPUs, NVSHMEM
# buffers another PE reads directly). CUDA and HIP only: Vulkan and Metal have no such scope.
system = Namespace("qd.simt.system",
    mem_fence=_marker("system.mem_fence", "Order this thread's memory accesses as seen by the host and other "
                                          "devices (CUDA/HIP __threadfence_system())."),
)


def __getattr__(name: str):
    from .names import missing

    raise AttributeError(missing("qd.simt", name, globals()))


def _install_block_algorithms() -> None:
    from . import blocklib

    for name in blocklib.__all__:
        setattr(block, name, getattr(blocklib, name))
    for name in blocklib.SUBGROUP_FUNCS:
        setattr(subgroup, name, getattr(blocklib, name))


def _install_tiles() -> None:
    """``qd.simt.Tile16x16`` / ``Tile32x32``: written in the kernel language, so loaded last."""
    from . import tile

    globals().update(Tile16x16=tile.Tile16x16, Tile32x32=tile.Tile32x32)

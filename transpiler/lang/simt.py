"""``qd.simt``: SIMT primitives by scope.

``qd.simt.block`` works on the threads of one block (CUDA CTA, Vulkan/Metal workgroup),
``qd.simt.subgroup`` on the lanes of one subgroup (warp, wavefront, SIMD-group),
``qd.simt.grid`` across all blocks of a launch. The primitives are markers the frontend
lowers to IR nodes; the block-wide reductions, scans and the radix rank, the tiled subgroup
operations and the register tiles ``qd.simt.Tile16x16`` / ``Tile32x32`` are written once in
the kernel language itself on top of them (``transpiler/lang/blocklib.py``,
``transpiler/lang/subgrouplib.py``, ``transpiler/lang/tile.py``). Semantics: Quadrants' guides
to block, subgroup and grid primitives and to atomics."""
from __future__ import annotations

import warnings

from .kernel import builtin, python_scope
from .names import Namespace, missing

# A package without files of its own: Quadrants' module path of its tile internals,
# ``quadrants.lang.simt._tile`` (its tests import it), is lang/tile.py, which registers itself
# under that name.
__path__: list[str] = []


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
    "_dim": "The enclosing parallel loop's block size (a translation-time int; the library's building block).",
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
    "barrier": "Deprecated alias of subgroup.sync().",
    "memory_barrier": "Deprecated alias of subgroup.mem_fence().",
    "ballot_full_subgroup": "Deprecated alias of subgroup.ballot().",
    **{f"{kind}_{op}": f"Subgroup {kind.replace('_', ' ')} with {op} (every lane gets its result)."
       for kind in ("reduce", "reduce_all", "inclusive", "exclusive") for op in ("add", "min", "max")},
    "_scan": "_scan(kind, op, value): the subgroup scan of an operator (the library's building block).",
    "_note": "_note(text): a comment in the emitted code saying which lowering the library chose.",
}

block = Namespace("qd.simt.block", **{k: _marker(f"block.{k}", d) for k, d in _block.items()})
subgroup = Namespace("qd.simt.subgroup", **{k: _marker(f"subgroup.{k}", d) for k, d in _subgroup.items()})


grid = Namespace("qd.simt.grid",
    mem_fence=_marker("grid.mem_fence", "Order this thread's memory accesses as seen by every thread of the launch."),
    memfence=_marker("grid.memfence", "Deprecated alias of grid.mem_fence()."),
    _aligned=_marker("grid._aligned", "_aligned(arr): whether a 1-d ndarray may be read by _vector_lane: its "
                                      "first element at a multiple of 16 bytes on a target with vector loads, "
                                      "False elsewhere (the library's building block)."),
    _vector_lane=_marker("grid._vector_lane", "_vector_lane(arr, q, lane): arr[q * W + lane], W = 16 bytes "
                                              "of its elements: the lanes of vector q share one 16-byte load "
                                              "where the target has them (the library's building block)."),
)
# CUDA's legacy warp API, as Quadrants keeps it: explicit lane masks, 32-lane warps. CUDA and
# HIP (full masks) only; qd.simt.subgroup is the portable spelling.
_warp = {
    "all_nonzero": "all_nonzero(mask, predicate): 1 when the predicate is non-zero on every lane of mask.",
    "any_nonzero": "any_nonzero(mask, predicate): 1 when the predicate is non-zero on any lane of mask.",
    "unique": "unique(mask, predicate): 1 when the predicate is the same on every lane of mask.",
    "ballot": "ballot(predicate): an i32 of the warp's lanes whose predicate is non-zero.",
    **{f"shfl_{kind}_{t}": f"shfl_{kind}_{t}(mask, value, k): CUDA's __shfl{'' if kind == 'sync' else '_' + kind}"
       f"_sync on an {t}." for kind, types in (("sync", ("i32", "f32")), ("up", ("i32", "f32")),
                                              ("down", ("i32", "f32")), ("xor", ("i32",))) for t in types},
    "match_any": "match_any(mask, value): the u32 mask of the lanes of mask holding the same value (sm_70+).",
    "match_all": "match_all(mask, value): mask when every lane of mask holds the same value, else 0 (sm_70+).",
    "active_mask": "active_mask(): the u32 mask of the lanes executing this call.",
    "sync": "sync(mask): the lanes of mask wait for each other (__syncwarp).",
}
warp = Namespace("qd.simt.warp", **{k: _marker(f"warp.{k}", d) for k, d in _warp.items()})

# System scope: the host and other devices too (mapped host memory, peer GPUs, NVSHMEM
# buffers another PE reads directly). CUDA and HIP only: Vulkan and Metal have no such scope.
system = Namespace("qd.simt.system",
    mem_fence=_marker("system.mem_fence", "Order this thread's memory accesses as seen by the host and other "
                                          "devices (CUDA/HIP __threadfence_system())."),
)

# Quadrants' deprecated spellings and what replaces each: translation warns at each use (see
# frontend/intrinsics/table.py); a call in Python scope warns once per process, as Quadrants'
# does, and forwards to the replacement as the namespace has it then.
DEPRECATED = {"block.mem_sync": "block.mem_fence", "grid.memfence": "grid.mem_fence",
              "subgroup.barrier": "subgroup.sync", "subgroup.memory_barrier": "subgroup.mem_fence",
              "subgroup.ballot_full_subgroup": "subgroup.ballot"}


def _forward_deprecated(old: str, new: str):
    space = {"block": block, "grid": grid, "subgroup": subgroup}[old.split(".")[0]]
    flag = f"_{old.split('.')[1]}_deprecation_warned"  # Quadrants' name: its tests reset it

    def call(*args, **kwargs):
        if not getattr(space, flag, False):
            setattr(space, flag, True)
            warnings.warn(f"qd.simt.{old}() is deprecated; use qd.simt.{new}()", DeprecationWarning, stacklevel=3)
        return getattr(space, new.split(".")[1])(*args, **kwargs)

    return call


python_scope.update({old: _forward_deprecated(old, new) for old, new in DEPRECATED.items()})


def __getattr__(name: str):
    raise AttributeError(missing("qd.simt", name, globals()))


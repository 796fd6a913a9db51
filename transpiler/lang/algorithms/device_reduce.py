"""The device-wide reduction behind ``qd.algorithms.reduce_*``, shaped as CUB's DeviceReduce:
two launches whatever the size. The first has each block fold tiles of ITEMS elements per
thread (TILE = 4096), tile b, b + B, b + 2B, ... for B = min(tiles, MAX_PARTIALS) blocks,
into one partial per block; the second folds the B partials with one block.

Several elements per thread in flight is what keeps the memory busy (one block reduction
per 16 elements, not per element), and on a target with vector loads (CUDA) a thread reads
its elements 16 bytes at a time when the array is 16-byte aligned: four LDG.128 and sixteen
adds per tile and thread, as CUB's loop. Threads read consecutive vectors (or, in the scalar
loop, consecutive elements), so every load of a warp is coalesced.
"""
from __future__ import annotations

from .. import blocklib, qd
from ..kernel import comptime

from .common import BLOCK_DIM, ITEMS, TILE, TILE_SHIFT, block, fold, load, store

MAX_PARTIALS = 1024      # blocks of the first launch, partials of the second (4 per thread)

grid = qd.simt.grid


@comptime
def vector_width(dtype) -> int:
    """Elements in a 16-byte vector of ``dtype`` (4- or 8-byte scalars)."""
    return 128 // dtype.bits


@qd.func
def partial_count(count):
    """B, the partials reduce_tiles writes for ``count`` elements."""
    return min((count >> TILE_SHIFT) + min(count & (TILE - 1), 1), MAX_PARTIALS)


@qd.func
def fold_full_tile(src: qd.template(), acc, t, tid, op: qd.template()):
    """``acc`` folded with thread ``tid``'s ITEMS elements of full tile ``t``: coalesced scalar loads."""
    base = (t << TILE_SHIFT) + tid
    for k in qd.static(range(ITEMS)):
        acc = fold(acc, src[base + k * BLOCK_DIM], op)
    return acc


@qd.func
def reduce_tiles(src: qd.template(), dst: qd.template(), dst_wide: qd.template(), count, dtype: qd.template(),
                 op: qd.template()):
    """dst[b] = fold of tiles b, b + B, ... of src[0:count] for b < B = partial_count(count)
    (as bits when ``dst_wide`` is a scratch dtype)."""
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(partial_count(count) * BLOCK_DIM):
        full = count >> TILE_SHIFT
        blocks = partial_count(count)
        tid = block.thread_idx()
        acc = blocklib.identity(op, dtype)
        t = i >> 8
        if grid._aligned(src):
            w = qd.static(vector_width(dtype))
            while t < full:
                q = t * (TILE // w) + tid
                for k in qd.static(range(ITEMS // w)):
                    for lane in qd.static(range(w)):
                        acc = fold(acc, grid._vector_lane(src, q + k * BLOCK_DIM, lane), op)
                t += blocks
        else:
            while t < full:
                acc = fold_full_tile(src, acc, t, tid, op)
                t += blocks
        if t == full:  # the last tile, when count is not a multiple of TILE: guarded loads
            base = (t << TILE_SHIFT) + tid
            for k in qd.static(range(ITEMS)):
                if base + k * BLOCK_DIM < count:
                    acc = fold(acc, src[base + k * BLOCK_DIM], op)
        total = block.reduce(acc, BLOCK_DIM, op, dtype)
        if tid == 0:
            store(dst, i >> 8, total, dst_wide)


@qd.func
def reduce_into_one(src: qd.template(), src_wide: qd.template(), out: qd.template(), count, dtype: qd.template(),
                    op: qd.template()):
    """out[0] = fold of src[0:count] (count <= MAX_PARTIALS) by one block: the identity for 0."""
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(BLOCK_DIM):
        acc = blocklib.identity(op, dtype)
        for k in qd.static(range(MAX_PARTIALS // BLOCK_DIM)):
            if i + k * BLOCK_DIM < count:
                acc = fold(acc, load(src, i + k * BLOCK_DIM, src_wide, dtype), op)
        total = block.reduce(acc, BLOCK_DIM, op, dtype)
        if i == 0:
            out[0] = total


@qd.func
def device_reduce(src: qd.template(), out: qd.template(), scratch: qd.template(), count, dtype: qd.template(),
                  wide: qd.template(), op: qd.template(), depth: qd.template()):
    """out[0] = fold of src[0:count]: one launch at depth 1 (at most 256 elements), else the
    partials of reduce_tiles in scratch[0:B] (B <= ceil(count / 256), the slots the scratch
    helper sizes), then one block folds them."""
    if qd.static(depth == 1):
        reduce_into_one(src, None, out, count, dtype, op)
    else:
        reduce_tiles(src, scratch, wide, count, dtype, op)
        reduce_into_one(scratch, wide, out, partial_count(count), dtype, op)

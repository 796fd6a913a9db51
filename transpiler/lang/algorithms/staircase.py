"""The fixed-depth staircase behind the scan of 8-byte dtypes, select and reduce-by-key
(4-byte scans are single-pass: device_scan.py): every phase is one top-level loop, so one task, one
GPU launch, and the launch boundary is the grid-wide barrier between phases.

Level 0 is the input (``count`` elements); level k >= 1 holds the ``ceil(count_{k-1} / 256)``
tile partials of level k - 1, stacked in scratch from ``base``: level 1 at ``base``, level
2 right after it, ... ``depth`` = log256_max_n levels cover 256 ** depth elements, so the
last level fits one tile. The depth is known at translation time (at most 4), so the
staircase is written out level by level rather than recursively: the tasks a kernel runs
are fixed when it is translated, while the counts follow the device-resident ``count``.
"""
from __future__ import annotations

from .. import blocklib, qd

from .common import BLOCK_DIM, block, block_exclusive, fold, load, store

subgroup = qd.simt.subgroup


@qd.func
def tile_reduce(src: qd.template(), src_off, src_wide: qd.template(), dst: qd.template(), dst_off,
                dst_wide: qd.template(), count, dtype: qd.template(), op: qd.template()):
    """dst[dst_off + t] = fold of tile t of src[src_off : src_off + count]."""
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(((count + (BLOCK_DIM - 1)) >> 8) << 8):
        v = blocklib.identity(op, dtype)
        if i < count:
            v = load(src, src_off + i, src_wide, dtype)
        total = block.reduce(v, BLOCK_DIM, op, dtype)
        if block.thread_idx() == 0:
            store(dst, dst_off + (i >> 8), total, dst_wide)


@qd.func
def tile_scan(src: qd.template(), src_off, src_wide: qd.template(), dst: qd.template(), dst_off,
              dst_wide: qd.template(), count, dtype: qd.template(), op: qd.template()):
    """Exclusive scan of src[src_off : src_off + count] (count <= BLOCK_DIM) by one block."""
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(BLOCK_DIM):
        v = blocklib.identity(op, dtype)
        if i < count:
            v = load(src, src_off + i, src_wide, dtype)
        prefix = block_exclusive(v, op, dtype)
        if i < count:
            store(dst, dst_off + i, prefix, dst_wide)


@qd.func
def tile_scan_add_prefix(src: qd.template(), src_off, src_wide: qd.template(), prefixes: qd.template(), pre_off,
                         pre_wide: qd.template(), dst: qd.template(), dst_off, dst_wide: qd.template(), count,
                         dtype: qd.template(), op: qd.template()):
    """Exclusive scan of each tile of src[src_off : src_off + count], after the tile's scanned
    partial prefixes[pre_off + t]; dst may be src (each thread rewrites its own element)."""
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(((count + (BLOCK_DIM - 1)) >> 8) << 8):
        v = blocklib.identity(op, dtype)
        if i < count:
            v = load(src, src_off + i, src_wide, dtype)
        prefix = block_exclusive(v, op, dtype)
        if i < count:
            store(dst, dst_off + i, fold(load(prefixes, pre_off + (i >> 8), pre_wide, dtype), prefix, op), dst_wide)


@qd.func
def exclusive_scan_levels(src: qd.template(), src_wide: qd.template(), dst: qd.template(), dst_wide: qd.template(),
                          scratch: qd.template(), base, count, dtype: qd.template(), wide: qd.template(),
                          op: qd.template(), depth: qd.template()):
    """dst[0:count] = exclusive scan of src[0:count] (dst may be src), the tile partials of
    levels 1 .. depth - 1 stacked in scratch from ``base``."""
    c1 = (count + (BLOCK_DIM - 1)) >> 8
    c2 = (c1 + (BLOCK_DIM - 1)) >> 8
    c3 = (c2 + (BLOCK_DIM - 1)) >> 8
    o2 = base + c1
    o3 = o2 + c2
    if qd.static(depth == 1):
        tile_scan(src, 0, src_wide, dst, 0, dst_wide, count, dtype, op)
    elif qd.static(depth == 2):
        tile_reduce(src, 0, src_wide, scratch, base, wide, count, dtype, op)
        tile_scan(scratch, base, wide, scratch, base, wide, c1, dtype, op)
        tile_scan_add_prefix(src, 0, src_wide, scratch, base, wide, dst, 0, dst_wide, count, dtype, op)
    elif qd.static(depth == 3):
        tile_reduce(src, 0, src_wide, scratch, base, wide, count, dtype, op)
        tile_reduce(scratch, base, wide, scratch, o2, wide, c1, dtype, op)
        tile_scan(scratch, o2, wide, scratch, o2, wide, c2, dtype, op)
        tile_scan_add_prefix(scratch, base, wide, scratch, o2, wide, scratch, base, wide, c1, dtype, op)
        tile_scan_add_prefix(src, 0, src_wide, scratch, base, wide, dst, 0, dst_wide, count, dtype, op)
    else:
        tile_reduce(src, 0, src_wide, scratch, base, wide, count, dtype, op)
        tile_reduce(scratch, base, wide, scratch, o2, wide, c1, dtype, op)
        tile_reduce(scratch, o2, wide, scratch, o3, wide, c2, dtype, op)
        tile_scan(scratch, o3, wide, scratch, o3, wide, c3, dtype, op)
        tile_scan_add_prefix(scratch, o2, wide, scratch, o3, wide, scratch, o2, wide, c2, dtype, op)
        tile_scan_add_prefix(scratch, base, wide, scratch, o2, wide, scratch, base, wide, c1, dtype, op)
        tile_scan_add_prefix(src, 0, src_wide, scratch, base, wide, dst, 0, dst_wide, count, dtype, op)

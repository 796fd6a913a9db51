"""The single-pass device-wide scan behind ``qd.algorithms.exclusive_scan_*`` of 4-byte
dtypes, shaped as CUB's DeviceScan: one launch clears the tickets and flags, one scans.

A block takes a tile of TILE = 4096 elements from an atomic ticket, ITEMS = 16 a thread:
the tile comes in coalesced (consecutive threads, consecutive elements) and is transposed
through shared memory, padded by one word in 32 so that neither direction has bank
conflicts; each thread scans its 16 consecutive elements in registers, the block scans the
threads' totals, and the tile learns the fold of every tile before it by decoupled
look-back, then goes out the same way it came in. Every element is read once and written
once (the staircase read it twice).

The look-back, as the sort's: a tile publishes its aggregate, then its inclusive prefix,
each value before its flag (atomics and a fence, so Metal too). Thread 0 walks back over the
tiles before it until one that knows its prefix; a tile that has not published after a few
reads is folded by this block from the input instead of waited for, so no block ever waits
on another (lavapipe ends a shader's loops past 65,535 iterations; the CPU executors run
blocks one after another). The ticket makes the walk short: tiles before this one belong to
blocks that started earlier.

8-byte dtypes stay on the staircase: a look-back word must be published atomically, and
Metal has no 64-bit atomics.

Scratch (u32, within the slots the scan's sizing helper gives for T tiles, >= 3T - 2):
[0] the ticket, then for the tiles t < T - 1 (the last tile's words are never read) their
flags, aggregates and prefixes.
"""
from __future__ import annotations

from .. import blocklib, qd

from .common import BLOCK_DIM, ITEMS, TILE, TILE_SHIFT, block, block_exclusive, fold
from .device_reduce import fold_full_tile

grid = qd.simt.grid
EMPTY, AGGREGATE, PREFIX = 0, 1, 2
POLLS = 16        # reads of a tile's flag before the block folds that tile itself
STAGE = TILE + TILE // 32


@qd.func
def _padded(i):
    return i + (i >> 5)


@qd.func
def clear_look_back(scratch: qd.template(), count):
    """The ticket and the flags of the tiles whose words are read (all but the last)."""
    for t in range((count + (TILE - 1)) >> TILE_SHIFT):
        scratch[t] = qd.u32(0)


@qd.func
def _publish(scratch: qd.template(), slot, flag_slot, value, flag):
    qd.atomic_exchange(scratch[slot], qd.bit_cast(value, qd.u32))
    grid.mem_fence()                 # the value before its flag
    qd.atomic_exchange(scratch[flag_slot], qd.u32(flag))


@qd.func
def _fold_tile(src: qd.template(), k, dtype: qd.template(), op: qd.template()):
    """The fold of (full) tile k of src, in thread 0: a late tile counted here."""
    acc = fold_full_tile(src, blocklib.identity(op, dtype), k, block.thread_idx(), op)
    return block.reduce(acc, BLOCK_DIM, op, dtype)


@qd.func
def _look_back(src: qd.template(), scratch: qd.template(), tile, tiles, total, dtype: qd.template(),
               op: qd.template()):
    """The fold of every tile before ``tile``, in thread 0 (the identity elsewhere); publishes
    this tile's ``total`` (valid in thread 0) first as its aggregate, then as part of its prefix."""
    tid = block.thread_idx()
    flags = 1
    aggregates = tiles
    prefixes = 2 * tiles - 1
    prefix = blocklib.identity(op, dtype)
    if tid == 0 and tile < tiles - 1:
        if tile == 0:
            _publish(scratch, prefixes, flags, total, PREFIX)
        else:
            _publish(scratch, aggregates + tile, flags + tile, total, AGGREGATE)
    k = tile - 1
    while k >= 0:                    # k is the same in every thread
        flag = qd.u32(EMPTY)
        if tid == 0:
            polls = 0                # a loop kept rolled: the reads wait on memory anyway
            while flag == qd.u32(EMPTY) and polls < POLLS:
                flag = qd.volatile_load(scratch[flags + k])
                polls += 1
        value = blocklib.identity(op, dtype)
        if block.sync_any_nonzero(qd.i32(tid == 0 and flag == qd.u32(EMPTY))):
            value = _fold_tile(src, k, dtype, op)
        elif tid == 0:
            grid.mem_fence()         # the flag before the value it guards
            at = aggregates + k if flag == qd.u32(AGGREGATE) else prefixes + k
            value = qd.bit_cast(qd.volatile_load(scratch[at]), dtype)
        prefix = fold(value, prefix, op)
        k = -1 if block.sync_any_nonzero(qd.i32(tid == 0 and flag == qd.u32(PREFIX))) else k - 1
    if tid == 0 and tile > 0 and tile < tiles - 1:
        _publish(scratch, prefixes + tile, flags + tile, fold(prefix, total, op), PREFIX)
    return prefix


@qd.func
def scan_tiles(src: qd.template(), dst: qd.template(), scratch: qd.template(), count, dtype: qd.template(),
               op: qd.template()):
    """dst[0:count] = exclusive scan of src[0:count], one tile a block."""
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(((count + (TILE - 1)) >> TILE_SHIFT) * BLOCK_DIM):
        slot = block.SharedArray((2,), dtype)
        ticket = block.SharedArray((1,), qd.i32)
        stage = block.SharedArray((STAGE,), dtype)
        tid = block.thread_idx()
        tiles = (count + (TILE - 1)) >> TILE_SHIFT
        if tid == 0:
            ticket[0] = qd.i32(qd.atomic_add(scratch[0], qd.u32(1)))
        block.sync()
        tile = ticket[0]
        start = tile << TILE_SHIFT
        valid = min(count - start, TILE)  # one guard per element, no full-tile copy of the tile code
        for k in qd.static(range(ITEMS)):
            j = k * BLOCK_DIM + tid
            v = blocklib.identity(op, dtype)
            if j < valid:
                v = src[start + j]
            stage[_padded(j)] = v
        block.sync()
        v = qd.Vector.zero(dtype, ITEMS)
        for k in qd.static(range(ITEMS)):
            v[k] = stage[_padded(tid * ITEMS + k)]
        for k in qd.static(range(1, ITEMS)):
            v[k] = fold(v[k - 1], v[k], op)
        before = block_exclusive(v[ITEMS - 1], op, dtype)
        if tid == BLOCK_DIM - 1:
            slot[1] = fold(before, v[ITEMS - 1], op)  # the tile's total
        block.sync()
        prefix = _look_back(src, scratch, tile, tiles, slot[1], dtype, op)
        if tid == 0:
            slot[0] = prefix
        block.sync()
        offset = fold(slot[0], before, op)
        stage[_padded(tid * ITEMS)] = offset
        for k in qd.static(range(1, ITEMS)):
            stage[_padded(tid * ITEMS + k)] = fold(offset, v[k - 1], op)
        block.sync()
        for k in qd.static(range(ITEMS)):
            j = k * BLOCK_DIM + tid
            # The loads' guard spelled another way, so that the compiler recomputes it here rather
            # than keeping 16 predicates live across the look-back (ptxas spilled for that).
            if start + j < count:
                dst[start + j] = stage[_padded(j)]
        block.sync()                 # the slots and the stage are reused by the block's next tile


@qd.func
def device_scan(src: qd.template(), dst: qd.template(), scratch: qd.template(), count, dtype: qd.template(),
                op: qd.template()):
    """dst[0:count] = exclusive scan of src[0:count] in two launches (dst must not be src)."""
    clear_look_back(scratch, count)
    scan_tiles(src, dst, scratch, count, dtype, op)

"""Single-pass inclusive prefix sum with decoupled look-back (Quadrants' grid.mem_fence guide)
and dynamic tile ids: a block takes its tile id from an atomic counter, so it only waits on
tiles that have already started. Each tile publishes its aggregate, then its inclusive prefix,
each value before its flag, all through atomics so the publication is correct on Metal too
(its device fence orders only atomic accesses); readers use qd.volatile_load."""
import transpiler as qd

BLOCK = 128
ITEMS = 4
TILE = BLOCK * ITEMS
EMPTY, AGGREGATE, PREFIX = 0, 1, 2
i32v = qd.types.ndarray(dtype=qd.i32, ndim=1)


@qd.kernel
def prefix_sum(x: i32v, y: i32v, flags: i32v, aggregates: i32v, prefixes: i32v, tile_counter: i32v):
    n_tiles = flags.shape[0]
    tile_counter[0] = 0
    for t in range(n_tiles):
        flags[t] = EMPTY
    qd.loop_config(block_dim=BLOCK)
    for i in range(n_tiles * BLOCK):
        tid = qd.simt.block.thread_idx()
        slot = qd.simt.block.SharedArray((1,), qd.i32)
        if tid == 0:
            slot[0] = qd.atomic_add(tile_counter[0], 1)
        qd.simt.block.sync()
        tile = slot[0]
        # ITEMS consecutive elements per thread.
        base = tile * TILE + tid * ITEMS
        own = 0
        for k in qd.static(range(ITEMS)):
            if base + k < x.shape[0]:
                own += x[base + k]
        before = qd.simt.block.exclusive_add(own, BLOCK, qd.i32)
        total = qd.simt.block.reduce_all_add(own, BLOCK, qd.i32)
        if tid == 0:
            prefix = 0
            if tile == 0:
                qd.atomic_exchange(prefixes[0], total)
                qd.simt.grid.mem_fence()
                qd.atomic_exchange(flags[0], PREFIX)
            else:
                qd.atomic_exchange(aggregates[tile], total)
                qd.simt.grid.mem_fence()
                qd.atomic_exchange(flags[tile], AGGREGATE)
                k = tile - 1
                while k >= 0:
                    f = qd.volatile_load(flags[k])
                    if f != EMPTY:
                        qd.simt.grid.mem_fence()
                        if f == PREFIX:
                            prefix += qd.volatile_load(prefixes[k])
                            k = -1
                        else:
                            prefix += qd.volatile_load(aggregates[k])
                            k -= 1
                qd.atomic_exchange(prefixes[tile], prefix + total)
                qd.simt.grid.mem_fence()
                qd.atomic_exchange(flags[tile], PREFIX)
            slot[0] = prefix
        qd.simt.block.sync()
        running = slot[0] + before
        for k in qd.static(range(ITEMS)):
            if base + k < x.shape[0]:
                running += x[base + k]
                y[base + k] = running
        qd.simt.block.sync()               # the slot is reused by the next tile of this block

"""Single-pass inclusive prefix sum with decoupled look-back (Quadrants' grid.mem_fence guide)
and dynamic tile ids: a block takes its tile id from an atomic counter, so it only waits on
tiles that have already started. Each tile publishes its aggregate, then its inclusive prefix,
each value before its flag, all through atomics so the publication is correct on Metal too
(its device fence orders only atomic accesses); readers use qd.volatile_load.

Each thread scans ITEMS consecutive elements in registers. The tile moves between global and
shared memory in coalesced order (consecutive threads, consecutive elements) and is transposed
through shared memory, padded by one word in 32 so neither direction has bank conflicts. The
first subgroup looks back over a window of predecessor tiles at once, one per lane: it waits
until none of them is empty, then adds the aggregates up to the nearest published prefix."""
import transpiler as qd

BLOCK = 128
ITEMS = 16
TILE = BLOCK * ITEMS
EMPTY, AGGREGATE, PREFIX = 0, 1, 2
i32v = qd.types.ndarray(dtype=qd.i32, ndim=1)
sub = qd.simt.subgroup


@qd.kernel
def prefix_sum(x: i32v, y: i32v, flags: i32v, aggregates: i32v, prefixes: i32v, tile_counter: i32v):
    n_tiles = flags.shape[0]
    tile_counter[0] = 0
    for t in range(n_tiles):
        flags[t] = EMPTY
    qd.loop_config(block_dim=BLOCK)
    for i in range(n_tiles * BLOCK):
        tid = qd.simt.block.thread_idx()
        slot = qd.simt.block.SharedArray((2,), qd.i32)
        stage = qd.simt.block.SharedArray((TILE + TILE // 32,), qd.i32)
        if tid == 0:
            slot[0] = qd.atomic_add(tile_counter[0], 1)
        qd.simt.block.sync()
        tile = slot[0]
        n = x.shape[0]
        start = tile * TILE
        full = start + TILE <= n
        # Coalesced loads into shared memory, then ITEMS consecutive elements per thread.
        for k in qd.static(range(ITEMS)):
            j = k * BLOCK + tid
            if full or start + j < n:
                stage[padded(j)] = x[start + j]
        qd.simt.block.sync()
        v = qd.Vector.zero(qd.i32, ITEMS)
        for k in qd.static(range(ITEMS)):
            if full or start + tid * ITEMS + k < n:
                v[k] = stage[padded(tid * ITEMS + k)]
        for k in qd.static(range(1, ITEMS)):
            v[k] += v[k - 1]
        before = qd.simt.block.exclusive_add(v[ITEMS - 1], BLOCK, qd.i32)
        if tid == BLOCK - 1:
            slot[1] = before + v[ITEMS - 1]  # the tile's total
        qd.simt.block.sync()
        if tid >> sub.log2_group_size() == 0:  # the first subgroup (every lane of it: a uniform test)
            total = slot[1]
            prefix = 0
            if tile == 0:
                if tid == 0:
                    publish(prefixes, flags, 0, total, PREFIX)
            else:
                if tid == 0:
                    publish(aggregates, flags, tile, total, AGGREGATE)
                prefix = look_back(tile, flags, aggregates, prefixes)
                if tid == 0:
                    publish(prefixes, flags, tile, prefix + total, PREFIX)
            if tid == 0:
                slot[0] = prefix
        qd.simt.block.sync()
        offset = slot[0] + before
        # Back through shared memory (the same padded layout), then coalesced stores.
        for k in qd.static(range(ITEMS)):
            stage[padded(tid * ITEMS + k)] = v[k] + offset
        qd.simt.block.sync()
        for k in qd.static(range(ITEMS)):
            j = k * BLOCK + tid
            if full or start + j < n:
                y[start + j] = stage[padded(j)]
        qd.simt.block.sync()               # the slots and the stage are reused by the next tile


@qd.func
def padded(i):
    return i + (i >> 5)


@qd.func
def look_back(tile, flags: qd.template(), aggregates: qd.template(), prefixes: qd.template()):
    """The sum of every tile before ``tile`` (> 0), in every lane of the calling subgroup."""
    lane = sub.invocation_id()
    width = sub.group_size()
    prefix = 0
    end = tile - 1                          # the window: tiles end, end - 1, ... (lane k: end - k)
    while end >= 0:
        k = end - lane
        f = PREFIX                          # before tile 0: an empty prefix
        if k >= 0:
            f = qd.volatile_load(flags[k])
        while sub.reduce_min(f) == EMPTY:   # wait until every tile of the window has published
            if f == EMPTY:
                f = qd.volatile_load(flags[k])
        qd.simt.grid.mem_fence()            # the flags before the values they guard
        stop = sub.reduce_min(qd.select(f == PREFIX, lane, width))  # the nearest prefix
        v = 0
        if k >= 0 and lane < stop:
            v = qd.volatile_load(aggregates[k])
        elif k >= 0 and lane == stop:
            v = qd.volatile_load(prefixes[k])
        prefix += sub.reduce_add(v)
        end = -1 if stop < width else end - width
    return prefix


@qd.func
def publish(values: qd.template(), flags: qd.template(), tile, value, flag):
    qd.atomic_exchange(values[tile], value)
    qd.simt.grid.mem_fence()                # the value before its flag
    qd.atomic_exchange(flags[tile], flag)

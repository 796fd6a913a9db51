"""The kernels bench/vs_quadrants.py runs in both frameworks: one source, spelled as
Quadrants spells it; ``QD_MODULE`` says which package ``qd`` is (transpiler or quadrants)."""
import importlib
import os

qd = importlib.import_module(os.environ.get("QD_MODULE", "transpiler"))

BLOCK = 128
f32v = qd.types.ndarray(dtype=qd.f32, ndim=1)
i32v = qd.types.ndarray(dtype=qd.i32, ndim=1)
u32v = qd.types.ndarray(dtype=qd.u32, ndim=1)
f32m = qd.types.ndarray(dtype=qd.f32, ndim=2)
vec3 = qd.types.vector(3, qd.f32)
v3v = qd.types.ndarray(dtype=vec3, ndim=1)


@qd.kernel
def saxpy(a: qd.f32, x: f32v, y: f32v):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@qd.kernel
def block_reduce(x: f32v, total: f32v):
    qd.loop_config(block_dim=BLOCK)
    for i in range(x.shape[0]):
        s = qd.simt.block.reduce_add(x[i], BLOCK, qd.f32)
        if qd.simt.block.thread_idx() == 0:
            qd.atomic_add(total[0], s)


@qd.kernel
def histogram(x: u32v, bins: i32v):
    for i in range(x.shape[0]):
        qd.atomic_add(bins[x[i] % 64], 1)


@qd.kernel
def block_scan(x: i32v, y: i32v):
    qd.loop_config(block_dim=BLOCK)
    for i in range(x.shape[0]):
        y[i] = qd.simt.block.inclusive_add(x[i], BLOCK, qd.i32)


RADIX_BLOCK = 256  # a block ranks 8-bit digits: at least 256 threads


@qd.kernel
def radix_rank(keys: u32v, out: u32v):
    qd.loop_config(block_dim=RADIX_BLOCK)
    for i in range(keys.shape[0]):
        bins = qd.simt.block.SharedArray((256,), qd.i32)
        excl = qd.simt.block.SharedArray((256,), qd.i32)
        key = keys[i]
        rank = qd.simt.block.radix_rank_match_atomic_or(key, RADIX_BLOCK, 8, 0, 8, bins, excl)
        out[(i // RADIX_BLOCK) * RADIX_BLOCK + rank] = key


@qd.kernel
def stencil(u: f32m, v: f32m):
    for i, j in qd.ndrange((1, u.shape[0] - 1), (1, u.shape[1] - 1)):
        v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j]


@qd.kernel
def particles(pos: v3v, vel: v3v, dt: qd.f32):
    for i in range(pos.shape[0]):
        v = vel[i] + dt * qd.math.vec3(0.0, -9.8, 0.0)
        p = pos[i] + dt * v
        if p[1] < 0.0:
            p[1] = -p[1]
            v[1] = -v[1]
        pos[i] = p
        vel[i] = v * 0.999


TILE = BLOCK * 4
EMPTY, AGGREGATE, PREFIX = 0, 1, 2


@qd.kernel
def lookback_scan(x: i32v, y: i32v, flags: i32v, aggregates: i32v, prefixes: i32v, tile_counter: i32v):
    """examples/lookback_scan.py's single-pass scan (decoupled look-back, dynamic tile ids)."""
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
        base = tile * TILE + tid * 4
        own = 0
        for k in qd.static(range(4)):
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
        for k in qd.static(range(4)):
            if base + k < x.shape[0]:
                running += x[base + k]
                y[base + k] = running
        qd.simt.block.sync()

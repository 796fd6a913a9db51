"""The kernels the C++ host examples (cpp_vulkan, cpp_cuda) embed and run: a kernel of
several tasks, and a reduction with block-level primitives."""
import transpiler as qd

vec = qd.types.ndarray(dtype=qd.f32, ndim=1)


@qd.kernel
def standardize(x: vec, stats: vec, y: vec, tile: qd.types.ndarray(dtype=qd.i32, ndim=2), scale: qd.f64,
                first: qd.i32):
    # Five entry points, run in order: a serial reset, two accumulating passes (each reads
    # what the previous launch wrote), a pass over a range with a scalar start, a 2-D task.
    stats[0] = 0.0
    stats[1] = 0.0
    n = x.shape[0]
    qd.loop_config(block_dim=64)
    for i in range(n):
        stats[0] += x[i]
    for i in range(n):
        d = x[i] - stats[0] / n
        stats[1] += d * d
    for i in range(first, n):
        y[i] = qd.f32((x[i] - stats[0] / n) * scale)
    for i, j in qd.ndrange(tile.shape[0], tile.shape[1]):
        tile[i, j] = i * 1000 + j + first


REDUCE_BLOCK = 128


@qd.kernel
def reduce_i32(values: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    # out = [sum, max, count of negatives]: each block folds its values with block-wide
    # reductions (subgroup operations and shared memory), then one atomic per block.
    out[0] = 0
    out[1] = values[0]
    out[2] = 0
    n = values.shape[0]
    # Every thread of a block must reach the block reductions, as often as the others: a
    # range padded to whole blocks gives each thread of a block the same trip count (the
    # grid stride is a multiple of the block too); the padding contributes identities.
    padded = (n + REDUCE_BLOCK - 1) // REDUCE_BLOCK * REDUCE_BLOCK
    qd.loop_config(block_dim=REDUCE_BLOCK)
    for i in range(padded):
        v = 0
        top = out[1]
        negative = 0
        if i < n:
            v = values[i]
            top = v
            if v < 0:
                negative = 1
        total = qd.simt.block.reduce_add(v, REDUCE_BLOCK, qd.i32)
        largest = qd.simt.block.reduce_max(top, REDUCE_BLOCK, qd.i32)
        negatives = qd.simt.block.reduce_add(negative, REDUCE_BLOCK, qd.i32)
        if qd.simt.block.thread_idx() == 0:
            qd.atomic_add(out[0], total)
            qd.atomic_max(out[1], largest)
            qd.atomic_add(out[2], negatives)


# Two kernels sharing the module's fields: the host allocates each field once, from the
# headers' `fields` tables, and binds the same buffer to both.
GRID = 64
grid = qd.field(qd.f32, shape=(GRID, GRID))
energy = qd.field(qd.f32, shape=())


@qd.kernel
def seed_grid(value: qd.f32):
    for i, j in grid:
        grid[i, j] = value * (i + j)


@qd.kernel
def grid_energy():
    for i, j in grid:
        energy[None] += grid[i, j]

"""The kernels the C++ host examples (cpp_vulkan, cpp_cuda) embed and run: a kernel of
several tasks, and a reduction."""
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


@qd.kernel
def reduce_i32(values: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    # out = [sum, max, count of negatives], with atomics on global memory.
    out[0] = 0
    out[1] = values[0]
    out[2] = 0
    for i in range(values.shape[0]):
        v = values[i]
        qd.atomic_add(out[0], v)
        qd.atomic_max(out[1], v)
        if v < 0:
            out[2] += 1

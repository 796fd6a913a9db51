"""Several tasks in one kernel: serial statements, two parallel loops, shared uniform locals."""
import transpiler as qd


@qd.kernel
def normalize(x: qd.types.ndarray(dtype=qd.f32, ndim=1), total: qd.types.ndarray(dtype=qd.f32, ndim=1),
              y: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    total[0] = 0.0
    n = x.shape[0]
    half_n = n // 2
    qd.loop_config(block_dim=64)
    for i in range(n):
        total[0] += x[i]
    for i in range(half_n, n):
        y[i] = x[i] / total[0]
    for i in range(half_n):
        y[i] = -x[i]

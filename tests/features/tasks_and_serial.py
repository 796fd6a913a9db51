"""Top-level loops are tasks launched in order; statements between them run on one thread;
a top-level local read by a task is recomputed in its prelude."""
import transpiler as qd


@qd.kernel
def tasks_and_serial(a: qd.types.ndarray(dtype=qd.i32, ndim=1), total: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    half = a.shape[0] // 2
    total[0] = 0
    for i in range(half):
        a[i] = a[i] * 2
    qd.loop_config(block_dim=64)
    for i in range(half, a.shape[0]):
        total[0] += a[i]

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


@qd.kernel(graph=True)
def relax(x: qd.types.ndarray(dtype=qd.f32, ndim=1), sweeps: qd.types.ndarray(dtype=qd.i32, ndim=0),
          passes: qd.types.ndarray(dtype=qd.i32, ndim=0)):
    for i in range(x.shape[0]):                    # once
        x[i] = x[i] * 0.5
    while qd.graph.do_while(sweeps):               # the tasks below again while sweeps[()] != 0
        passes[()] = 2
        while qd.graph.do_while(passes):
            for i in range(1, x.shape[0] - 1):
                x[i] = x[i] * 0.75 + 1.0
            passes[()] = passes[()] - 1
        sweeps[()] = sweeps[()] - 1

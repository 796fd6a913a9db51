"""Grid-scope ordering, as the grid page pairs it: a producer publishes data then a flag with
grid.mem_fence(); a consumer waits on the flag with qd.volatile_load (two tasks, in order)."""
import numpy as np

import transpiler as qd
from userguide.cases import case


@qd.kernel
def publish_then_consume(data: qd.types.ndarray(dtype=qd.i32, ndim=1), flags: qd.types.ndarray(dtype=qd.i32, ndim=1),
                         out: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> None:
    for i in range(data.shape[0]):
        qd.atomic_exchange(data[i], i * i)
        qd.simt.grid.mem_fence()
        qd.atomic_exchange(flags[i], 1)
    for i in range(out.shape[0]):
        while qd.volatile_load(flags[i]) == 0:
            pass
        qd.simt.grid.mem_fence()
        out[i] = qd.volatile_load(data[i]) + 1


@case(publish_then_consume)
def _(rng):
    n = 1000
    data, flags, out = np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int32)

    def check(_):
        np.testing.assert_array_equal(out, np.arange(n) ** 2 + 1)
    return (data, flags, out), check

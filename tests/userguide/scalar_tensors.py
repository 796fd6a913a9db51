"""0-d ndarrays (scalar tensors), indexed with [()] and [None], as the scalar-tensors page uses them."""
import numpy as np

import transpiler as qd
from userguide.cases import case


@qd.kernel
def sum_range(total: qd.types.ndarray(dtype=qd.i32, ndim=0), N: int) -> None:
    for i in range(N):
        qd.atomic_add(total[()], i)


@case(sum_range)
def _(rng):
    total = np.zeros((), np.int32)

    def check(_):
        assert total == 4950
    return (total, 100), check


@qd.kernel
def increment(a: qd.types.ndarray(dtype=qd.i32, ndim=0)) -> None:
    a[()] += 1
    a[None] += 10


@case(increment)
def _(rng):
    a = np.full((), 5, np.int32)

    def check(_):
        assert a == 16
    return (a,), check

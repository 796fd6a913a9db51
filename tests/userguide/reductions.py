"""Kernel-scope variables updated by a parallel loop are reductions, and kernels return values
(Quadrants' semantics: `total += x[i]` in a top-level loop, `return total`)."""
import numpy as np

import transpiler as qd
from userguide.cases import case


@qd.kernel
def total(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@case(total)
def _(rng):
    x = rng.random(20000).astype(np.float32)

    def check(result):
        assert abs(result - x.sum(dtype=np.float64)) < 1e-3 * x.size ** 0.5
    return (x,), check


@qd.kernel
def count_positive(a: qd.types.NDArray[qd.f32, 1]) -> int:
    n = 0
    for i in range(a.shape[0]):
        if a[i] > 0:
            n += 1
    return n


@case(count_positive)
def _(rng):
    a = rng.standard_normal(10000).astype(np.float32)

    def check(result):
        assert result == (a > 0).sum()
    return (a,), check


@qd.kernel
def variance(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> float:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    mean = s / x.shape[0]
    acc = 0.0
    for i in range(x.shape[0]):
        acc += (x[i] - mean) ** 2
    return acc / x.shape[0]


@case(variance)
def _(rng):
    x = rng.standard_normal(5000).astype(np.float32)

    def check(result):
        assert abs(result - x.var()) < 1e-3
    return (x,), check


@qd.kernel
def largest(a: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> qd.i32:
    m = -2147483647
    for i in range(a.shape[0]):
        qd.atomic_max(m, a[i])
    return m


@case(largest)
def _(rng):
    a = rng.integers(-10**9, 10**9, 3000).astype(np.int32)

    def check(result):
        assert result == a.max()
    return (a,), check


@qd.kernel
def debit(balance: qd.types.ndarray(dtype=qd.i32, ndim=1), costs: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> int:
    left = 1000000
    for i in range(costs.shape[0]):
        left -= costs[i]
    balance[0] = left
    return left


@case(debit)
def _(rng):
    costs = rng.integers(0, 100, 700).astype(np.int32)
    balance = np.zeros(1, np.int32)

    def check(result):
        assert result == 1000000 - costs.sum() == balance[0]
    return (balance, costs), check


@qd.kernel
def normalize(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> None:
    norm = 0.0
    for i in range(x.shape[0]):
        norm += x[i] * x[i]
    norm = qd.sqrt(norm)
    for i in range(x.shape[0]):
        x[i] = x[i] / norm


@case(normalize)
def _(rng):
    x = rng.standard_normal(3000).astype(np.float32)
    want = x / np.linalg.norm(x)

    def check(_):
        np.testing.assert_allclose(x, want, rtol=1e-4, atol=1e-6)
    return (x,), check


@qd.kernel
def tickets(order: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> int:
    taken = 0
    for i in range(order.shape[0]):
        order[i] = qd.atomic_add(taken, 1)  # the old value: every thread its own ticket
    return taken


@case(tickets)
def _(rng):
    order = np.zeros(900, np.int32)

    def check(result):
        assert result == 900
        np.testing.assert_array_equal(np.sort(order), np.arange(900))
    return (order,), check


@qd.kernel
def first_then_rest(a: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> None:
    first = a[0]  # computed by one task, read by the next: a kernel-scope variable
    for i in range(a.shape[0]):
        a[i] = a[i] - first


@case(first_then_rest)
def _(rng):
    a = rng.random(333).astype(np.float32)
    want = a - a[0]

    def check(_):
        np.testing.assert_array_equal(a, want)
    return (a,), check


@qd.kernel
def peak_to_peak(a: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    hi = a[0]
    lo = a[0]
    for i in range(a.shape[0]):
        hi = max(hi, a[i])  # an update written as an assignment: the max reduction
        lo = min(lo, a[i])
    return hi - lo


@case(peak_to_peak)
def _(rng):
    a = rng.standard_normal(2500).astype(np.float32)

    def check(result):
        assert abs(result - (a.max() - a.min())) < 1e-5
    return (a,), check

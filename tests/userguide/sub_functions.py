"""@qd.func, as the sub-functions page writes them: typed scalar functions, functions that take
an ndarray through qd.Template, functions calling functions; and @qd.real_func, a function
of its own that returns from inside a loop."""
import numpy as np

import transpiler as qd
from userguide.cases import case


@qd.func
def add(a: qd.i32, b: qd.i32) -> qd.i32:
    return a + b


@qd.kernel
def compute(a: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> None:
    for i in range(10):
        a[i] = add(i, 1)


@case(compute)
def _(rng):
    a = np.zeros(10, np.int32)

    def check(_):
        np.testing.assert_array_equal(a, np.arange(10) + 1)
    return (a,), check


@qd.func
def increment(arr: qd.Template, idx: qd.i32) -> None:
    arr[idx] += 1


@qd.kernel
def increment_all(a: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> None:
    for i in range(a.shape[0]):
        increment(a, i)
        increment(a, (i + 1) % a.shape[0])


@case(increment_all)
def _(rng):
    a = rng.integers(0, 10, 50).astype(np.int32)
    want = a + 2

    def check(_):
        np.testing.assert_array_equal(a, want)
    return (a,), check


@qd.func
def smoothstep(edge0: qd.f32, edge1: qd.f32, x: qd.f32) -> qd.f32:
    t = min(max((x - edge0) / (edge1 - edge0), 0.0), 1.0)
    return t * t * (3.0 - 2.0 * t)


@qd.func
def bump(x: qd.f32) -> qd.f32:
    return smoothstep(0.0, 0.5, x) * (1.0 - smoothstep(0.5, 1.0, x))


@qd.kernel
def shape_signal(x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> None:
    for i in range(x.shape[0]):
        y[i] = bump(x[i])


@case(shape_signal)
def _(rng):
    x = rng.random(400).astype(np.float32)
    y = np.zeros_like(x)

    def ss(e0, e1, v):
        t = np.clip((v - e0) / (e1 - e0), 0, 1)
        return t * t * (3 - 2 * t)

    def check(_):
        np.testing.assert_allclose(y, ss(0, 0.5, x) * (1 - ss(0.5, 1, x)), rtol=1e-5, atol=1e-6)
    return (x, y), check


@qd.real_func
def find_first(table: qd.types.ndarray(dtype=qd.i32, ndim=1), value: qd.i32) -> qd.i32:
    for i in range(table.shape[0]):
        if table[i] == value:
            return i
    return -1


@qd.kernel
def lookup(table: qd.types.ndarray(dtype=qd.i32, ndim=1), queries: qd.types.ndarray(dtype=qd.i32, ndim=1),
           where: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> None:
    for q in range(queries.shape[0]):
        where[q] = find_first(table, queries[q])


@case(lookup)
def _(rng):
    table = rng.permutation(200).astype(np.int32)[:120]
    queries = rng.integers(0, 200, 300).astype(np.int32)
    where = np.zeros(300, np.int32)
    position = {int(v): k for k, v in enumerate(table)}

    def check(_):
        np.testing.assert_array_equal(where, [position.get(int(v), -1) for v in queries])
    return (table, queries, where), check

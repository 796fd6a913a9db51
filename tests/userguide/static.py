"""qd.static branches and unrolled loops, with qd.Template parameters, as the static page writes them."""
import numpy as np

import transpiler as qd
from userguide.cases import case


@qd.kernel
def fast_or_slow(use_fast_path: qd.Template, a: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> None:
    for i in range(a.shape[0]):
        if qd.static(use_fast_path):
            a[i] = i * 2
        else:
            a[i] = i * 3 + 1


@case(fast_or_slow)
def _(rng):
    a = np.zeros(100, np.int32)

    def check(_):
        np.testing.assert_array_equal(a, np.arange(100) * 2)
    return (True, a), check


@qd.kernel
def unrolled(a: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> None:
    for i in qd.static(range(3)):
        a[i] = i * 10


@case(unrolled)
def _(rng):
    a = np.full(5, -1, np.int32)

    def check(_):
        np.testing.assert_array_equal(a, [0, 10, 20, -1, -1])
    return (a,), check


@qd.kernel
def maybe_increment(enable_pass: qd.Template, n: int, a: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> None:
    if qd.static(enable_pass):
        for i in range(n):  # still a parallel loop
            a[i] += 1.0


@case(maybe_increment)
def _(rng):
    a = rng.random(64).astype(np.float32)
    want = a.copy()
    want[:40] += 1

    def check(_):
        np.testing.assert_allclose(a, want)
    return (True, 40, a), check


@qd.kernel
def stencil(x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1),
            weights: qd.template()) -> None:
    for i in range(2, x.shape[0] - 2):
        acc = 0.0
        for k in qd.static(range(5)):
            acc += x[i + k - 2] * weights[k]
        y[i] = acc


@case(stencil)
def _(rng):
    x = rng.random(300).astype(np.float32)
    y = np.zeros_like(x)
    w = (0.1, 0.2, 0.4, 0.2, 0.1)

    def check(_):
        np.testing.assert_allclose(y[2:-2], np.convolve(x, w[::-1], "valid"), rtol=1e-5)
    return (x, y, w), check

"""The getting-started and tensor-types kernels: ndarray annotations of every spelling, Python
int / float scalars, `-> None`."""
import numpy as np

import transpiler as qd
from userguide.cases import case


@qd.kernel
def lcg_ti(B: int, lcg_its: int, a: qd.types.NDArray[qd.i32, 1]) -> None:
    for i in range(B):
        x = a[i]
        for j in range(lcg_its):
            x = (1664525 * x + 1013904223) % 2147483647
        a[i] = x


@case(lcg_ti)
def _(rng):
    a = rng.integers(0, 1000, 256).astype(np.int32)
    want = a.copy()
    for _ in range(20):  # i32 arithmetic wraps, as on the device
        want = ((np.int32(1664525) * want).astype(np.int32) + np.int32(1013904223)).astype(np.int32)
        want = want - np.int32(2147483647) * np.floor_divide(want, np.int32(2147483647))

    def check(_):
        np.testing.assert_array_equal(a, want)
    return (256, 20, a), check


ParamType = qd.types.NDArray[qd.i32, 1]


@qd.kernel
def copy_memory(N: int, a: ParamType, b: ParamType) -> None:
    for n in range(N):
        b[n % 100] = a[n % 100]


@case(copy_memory)
def _(rng):
    a = rng.integers(0, 1 << 20, 100).astype(np.int32)
    b = np.zeros(100, np.int32)

    def check(_):
        np.testing.assert_array_equal(b, a)
    return (2000, a, b), check


@qd.kernel
def saxpy(alpha: float, x: qd.types.ndarray(), y: qd.types.ndarray()) -> None:
    for i in range(x.shape[0]):
        y[i] = alpha * x[i] + y[i]


@case(saxpy)
def _(rng):
    x, y = rng.random(1000).astype(np.float32), rng.random(1000).astype(np.float32)
    want = np.float32(2.5) * x + y

    def check(_):
        np.testing.assert_allclose(y, want, rtol=1e-6)
    return (2.5, x, y), check


@qd.kernel
def untyped_2d(m: qd.types.ndarray(ndim=2), rows: qd.types.NDArray) -> None:
    for i in range(m.shape[0]):
        s = 0.0
        for j in range(m.shape[1]):
            s += m[i, j]
        rows[i] = s


@case(untyped_2d)
def _(rng):
    m = rng.random((20, 30)).astype(np.float32)
    rows = np.zeros(20, np.float32)

    def check(_):
        np.testing.assert_allclose(rows, m.sum(1), rtol=1e-5)
    return (m, rows), check


@qd.kernel
def gather(idx: qd.types.ndarray(dtype=int, ndim=1), src: qd.types.ndarray(dtype=float, ndim=1),
           dst: qd.types.ndarray(dtype=float, ndim=1)) -> None:
    for i in idx:
        dst[i] = src[idx[i]]


@case(gather)
def _(rng):
    src = rng.random(64).astype(np.float32)
    idx = rng.integers(0, 64, 64).astype(np.int32)
    dst = np.zeros(64, np.float32)

    def check(_):
        np.testing.assert_array_equal(dst, src[idx])
    return (idx, src, dst), check

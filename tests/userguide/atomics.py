"""Atomics, as the atomics page uses them: histograms, reservations, min/max, CAS loops, bits."""
import numpy as np

import transpiler as qd
from userguide.cases import case


@qd.kernel
def histogram(values: qd.types.NDArray[qd.i32, 1], bins: qd.types.NDArray[qd.i32, 1]) -> None:
    for i in range(values.shape[0]):
        qd.atomic_add(bins[values[i] % bins.shape[0]], 1)


@case(histogram)
def _(rng):
    values = rng.integers(0, 1000, 5000).astype(np.int32)
    bins = np.zeros(16, np.int32)

    def check(_):
        np.testing.assert_array_equal(bins, np.bincount(values % 16, minlength=16))
    return (values, bins), check


@qd.kernel
def extremes(x: qd.types.ndarray(dtype=qd.f32, ndim=1), lo: qd.types.ndarray(dtype=qd.f32, ndim=0),
             hi: qd.types.ndarray(dtype=qd.f32, ndim=0)) -> None:
    for i in range(x.shape[0]):
        qd.atomic_min(lo[()], x[i])
        qd.atomic_max(hi[()], x[i])


@case(extremes)
def _(rng):
    x = rng.standard_normal(3000).astype(np.float32)
    lo, hi = np.full((), np.inf, np.float32), np.full((), -np.inf, np.float32)

    def check(_):
        assert lo == x.min() and hi == x.max()
    return (x, lo, hi), check


@qd.kernel
def compact_positive(x: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=1),
                     count: qd.types.ndarray(dtype=qd.i32, ndim=0)) -> None:
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            slot = qd.atomic_add(count[()], 1)  # every thread gets its own slot
            out[slot] = x[i]


@case(compact_positive)
def _(rng):
    x = rng.standard_normal(2000).astype(np.float32)
    out = np.zeros_like(x)
    count = np.zeros((), np.int32)

    def check(_):
        n = int(count)
        assert n == (x > 0).sum()
        np.testing.assert_array_equal(np.sort(out[:n]), np.sort(x[x > 0]))
    return (x, out, count), check


@qd.kernel
def cas_increment(counter: qd.types.ndarray(dtype=qd.i32, ndim=0), n: int) -> None:
    for i in range(n):
        for _attempt in range(1000):
            cur = counter[()]
            old = qd.atomic_cas(counter[()], cur, cur + 1)
            if old == cur:
                break


@case(cas_increment)
def _(rng):
    counter = np.zeros((), np.int32)

    def check(_):
        assert counter == 777
    return (counter, 777), check


@qd.kernel
def set_bits_if(flags: qd.types.ndarray(dtype=qd.i32, ndim=1), masks: qd.types.ndarray(dtype=qd.u32, ndim=1)) -> None:
    for i in range(flags.shape[0]):
        if flags[i] != 0:
            qd.atomic_or(masks[i // 32], qd.u32(1) << qd.u32(i % 32))


@case(set_bits_if)
def _(rng):
    flags = rng.integers(0, 2, 320).astype(np.int32)
    masks = np.zeros(10, np.uint32)

    def check(_):
        want = np.array([sum(int(f) << k for k, f in enumerate(flags[w * 32:(w + 1) * 32])) for w in range(10)],
                        np.uint32)
        np.testing.assert_array_equal(masks, want)
    return (flags, masks), check

"""Top-level loops, qd.ndrange, qd.grouped and struct-for, as the parallelization page writes them."""
import numpy as np

import transpiler as qd
from userguide.cases import case


@qd.kernel
def process_image(image: qd.types.NDArray[qd.i32, 3]) -> None:
    for row, col, channel in qd.ndrange(image.shape[0], image.shape[1], 3):
        image[row, col, channel] = row + col * 2 + channel * 1000


@case(process_image)
def _(rng):
    image = np.zeros((7, 9, 3), np.int32)

    def check(_):
        r, c, ch = np.meshgrid(np.arange(7), np.arange(9), np.arange(3), indexing="ij")
        np.testing.assert_array_equal(image, r + c * 2 + ch * 1000)
    return (image,), check


@qd.kernel
def offset_ranges(a: qd.types.ndarray(dtype=qd.i32, ndim=2)) -> None:
    for i, j in qd.ndrange((2, 10), 5):
        a[i, j] = i * 10 + j


@case(offset_ranges)
def _(rng):
    a = np.full((10, 5), -1, np.int32)

    def check(_):
        want = np.full((10, 5), -1, np.int32)
        want[2:] = np.arange(2, 10)[:, None] * 10 + np.arange(5)
        np.testing.assert_array_equal(a, want)
    return (a,), check


@qd.kernel
def fill_grouped(a: qd.types.ndarray(dtype=qd.i32, ndim=3)) -> None:
    for I in qd.grouped(qd.ndrange(4, 8, 16)):
        a[I] = I[0] + I[1] + I[2]


@case(fill_grouped)
def _(rng):
    a = np.zeros((4, 8, 16), np.int32)

    def check(_):
        np.testing.assert_array_equal(a, np.indices((4, 8, 16)).sum(0))
    return (a,), check


@qd.kernel
def scale_every_element(a: qd.types.ndarray(dtype=qd.f32, ndim=2), s: float) -> None:
    for i, j in a:
        a[i, j] = a[i, j] * s + i


@case(scale_every_element)
def _(rng):
    a = rng.random((13, 17)).astype(np.float32)
    want = a * np.float32(1.5) + np.arange(13, dtype=np.float32)[:, None]

    def check(_):
        np.testing.assert_allclose(a, want, rtol=1e-6)
    return (a, 1.5), check


@qd.kernel
def two_phases(a: qd.types.ndarray(dtype=qd.f32, ndim=1), b: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> None:
    for i in range(a.shape[0]):  # phase 1: its own launch
        a[i] = a[i] * 2.0
    for i in range(b.shape[0]):  # phase 2 sees everything phase 1 wrote
        b[i] = a[i] + a[a.shape[0] - 1 - i]


@case(two_phases)
def _(rng):
    a = rng.random(500).astype(np.float32)
    b = np.zeros_like(a)
    doubled = a * 2

    def check(_):
        np.testing.assert_allclose(b, doubled + doubled[::-1], rtol=1e-6)
    return (a, b), check


@qd.kernel
def identity_grouped(x: qd.types.ndarray(dtype=qd.i32, ndim=2)) -> None:
    for I in qd.grouped(x):
        x[I] = I[0] * 100 + I[1]


@case(identity_grouped)
def _(rng):
    x = np.zeros((6, 11), np.int32)

    def check(_):
        np.testing.assert_array_equal(x, np.arange(6)[:, None] * 100 + np.arange(11))
    return (x,), check

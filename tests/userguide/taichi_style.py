"""Ndarray kernels in the style of Taichi's examples: a Jacobi step, a matrix product, a
fractal, an image blur."""
import numpy as np

import transpiler as qd
from userguide.cases import case


@qd.kernel
def jacobi(u: qd.types.ndarray(dtype=qd.f32, ndim=2), v: qd.types.ndarray(dtype=qd.f32, ndim=2)) -> None:
    for i, j in qd.ndrange((1, u.shape[0] - 1), (1, u.shape[1] - 1)):
        v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


@case(jacobi)
def _(rng):
    u = rng.random((30, 40)).astype(np.float32)
    v = np.zeros_like(u)

    def check(_):
        want = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        np.testing.assert_allclose(v[1:-1, 1:-1], want, rtol=1e-6)
    return (u, v), check


@qd.kernel
def matmul(a: qd.types.ndarray(dtype=qd.f32, ndim=2), b: qd.types.ndarray(dtype=qd.f32, ndim=2),
           c: qd.types.ndarray(dtype=qd.f32, ndim=2)) -> None:
    for i, j in c:
        acc = 0.0
        for k in range(a.shape[1]):
            acc += a[i, k] * b[k, j]
        c[i, j] = acc


@case(matmul)
def _(rng):
    a, b = rng.random((17, 23)).astype(np.float32), rng.random((23, 11)).astype(np.float32)
    c = np.zeros((17, 11), np.float32)

    def check(_):
        np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    return (a, b, c), check


@qd.kernel
def julia(pixels: qd.types.ndarray(dtype=qd.f32, ndim=2), t: float) -> None:
    n = pixels.shape[1]
    for i, j in pixels:
        cr, ci = -0.8, qd.cos(t) * 0.2
        zr, zi = i / n - 1.0, j / n - 0.5
        iterations = 0
        while zr * zr + zi * zi < 4.0 and iterations < 50:
            zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
            iterations += 1
        pixels[i, j] = 1.0 - iterations * 0.02


@case(julia)
def _(rng):
    n = 16
    pixels = np.zeros((2 * n, n), np.float32)

    def reference():
        out = np.zeros_like(pixels)
        ci = np.float32(np.cos(np.float32(0.3))) * np.float32(0.2)
        for i in range(2 * n):
            for j in range(n):
                zr, zi = np.float32(i / n - 1.0), np.float32(j / n - 0.5)
                it = 0
                while zr * zr + zi * zi < 4.0 and it < 50:
                    zr, zi = zr * zr - zi * zi + np.float32(-0.8), np.float32(2.0) * zr * zi + ci
                    it += 1
                out[i, j] = 1.0 - it * 0.02
        return out

    def check(_):
        want = reference()
        assert (np.abs(pixels - want) > 1e-4).mean() < 0.01  # escape counts may differ at a boundary
    return (pixels, 0.3), check


@qd.kernel
def blur_rows(img: qd.types.ndarray(dtype=qd.f32, ndim=2), out: qd.types.ndarray(dtype=qd.f32, ndim=2),
              radius: qd.template()) -> None:
    for i, j in img:
        acc = 0.0
        count = 0
        for k in qd.static(range(-radius, radius + 1)):
            if 0 <= j + k < img.shape[1]:
                acc += img[i, j + k]
                count += 1
        out[i, j] = acc / count


@case(blur_rows)
def _(rng):
    img = rng.random((9, 25)).astype(np.float32)
    out = np.zeros_like(img)

    def check(_):
        want = np.zeros_like(img)
        for j in range(25):
            lo, hi = max(0, j - 2), min(25, j + 3)
            want[:, j] = img[:, lo:hi].mean(1)
        np.testing.assert_allclose(out, want, rtol=1e-5)
    return (img, out, 2), check

"""One kernel of bench/vs_kernels.py at one size, in the framework ``QD_MODULE`` names, on
its Vulkan device (``QD_ARCH=cpu``: on the CPU; ``cuda``: on an NVIDIA GPU): prints one JSON line with the first call
(translate, compile, pipeline, launch; the process's first kernel), the median warm call
(launch to qd.sync(), arguments already on the device as qd.ndarray; after 0.2 s of untimed
calls) and whether the result matches NumPy (after the first call).

    QD_MODULE=transpiler|quadrants [QD_ARCH=vulkan|cpu|cuda] python bench/vs_runner.py KERNEL N REPS
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if os.environ.get("QD_MODULE", "transpiler") == "transpiler":
    sys.path.insert(0, os.path.dirname(HERE))

import vs_kernels as K  # noqa: E402

qd = K.qd


def device(a: np.ndarray, dtype, vector: int = 0):
    shape = a.shape[:-1] if vector else a.shape
    arr = qd.ndarray(qd.types.vector(vector, dtype) if vector else dtype, shape=shape)
    arr.from_numpy(a)
    return arr


def case(name: str, n: int):
    """(kernel, arguments, check(arguments) -> bool) for ``name`` at about ``n`` elements."""
    rng = np.random.default_rng(7)
    if name == "saxpy":
        x, y = rng.random(n, np.float32), rng.random(n, np.float32)
        args = (np.float32(2.5), device(x, qd.f32), device(y, qd.f32))
        return K.saxpy, args, lambda: np.allclose(args[2].to_numpy(), 2.5 * x + y, rtol=1e-6)
    if name == "block_reduce":
        x = rng.integers(0, 4 if 3 * n < 2**24 else 2, n).astype(np.float32)  # every partial sum exact in f32
        args = (device(x, qd.f32), device(np.zeros(1, np.float32), qd.f32))
        return K.block_reduce, args, lambda: args[1].to_numpy()[0] == x.sum()
    if name == "sum":
        x = rng.integers(0, 4 if 3 * n < 2**24 else 2, n).astype(np.float32)  # every partial sum exact in f32
        args = (device(x, qd.f32), device(np.zeros(1, np.float32), qd.f32))
        return K.field_sum, args, lambda: args[1].to_numpy()[0] == x.sum()
    if name == "histogram":
        x = rng.integers(0, 2**32, n, dtype=np.uint32)
        args = (device(x, qd.u32), device(np.zeros(64, np.int32), qd.i32))
        return K.histogram, args, lambda: (args[1].to_numpy() == np.bincount(x % 64, minlength=64)).all()
    if name == "block_scan":
        x = rng.integers(-50, 50, n).astype(np.int32)
        args = (device(x, qd.i32), device(np.zeros(n, np.int32), qd.i32))
        want = np.cumsum(x.reshape(-1, K.BLOCK), axis=1).reshape(-1)
        return K.block_scan, args, lambda: (args[1].to_numpy() == want).all()
    if name == "lookback_scan":
        example = K.lookback_scan_module()
        x = rng.integers(-50, 50, n).astype(np.int32)
        tiles = -(-n // example.TILE)
        z = lambda k: device(np.zeros(k, np.int32), qd.i32)  # noqa: E731
        args = (device(x, qd.i32), z(n), z(tiles), z(tiles), z(tiles), z(1))
        return example.prefix_sum, args, lambda: (args[1].to_numpy() == np.cumsum(x, dtype=np.int32)).all()
    if name == "radix_rank":
        keys = rng.integers(0, 2**32, n, dtype=np.uint32)
        args = (device(keys, qd.u32), device(np.zeros(n, np.uint32), qd.u32))
        blocks = keys.reshape(-1, K.RADIX_BLOCK)
        order = np.argsort(blocks & 0xFF, axis=1, kind="stable")
        want = np.take_along_axis(blocks, order, axis=1).reshape(-1)
        return K.radix_rank, args, lambda: (args[1].to_numpy() == want).all()
    if name == "stencil":
        side = int(round(n ** 0.5))
        u = rng.random((side, side), np.float32)
        args = (device(u, qd.f32), device(np.zeros_like(u), qd.f32))
        want = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) - u[1:-1, 1:-1]
        return K.stencil, args, lambda: np.allclose(args[1].to_numpy()[1:-1, 1:-1], want, rtol=1e-5, atol=1e-6)
    if name == "particles_add":
        pos, vel, acc = (rng.standard_normal((n, 3)).astype(np.float32) for _ in range(3))
        v = vel + acc * np.float32(0.01)
        args = (device(pos, qd.f32, 3), device(vel, qd.f32, 3), device(acc, qd.f32, 3), np.float32(0.01))
        return K.particles_add, args, lambda: np.allclose(args[0].to_numpy(), pos + v * np.float32(0.01), rtol=1e-5,
                                                          atol=1e-6)
    if name == "kernel_sum":
        x = rng.integers(0, 4 if 3 * n < 2**24 else 2, n).astype(np.float32)  # every partial sum exact in f32
        got = []
        return (lambda a: got.append(K.kernel_sum(a))), (device(x, qd.f32),), lambda: got[0] == x.sum()
    if name == "scatter":
        idx = rng.integers(0, n, n).astype(np.int32)  # spread over every element, a few collide
        x = rng.integers(0, 4, n).astype(np.float32)  # small integers: every order sums exactly
        args = (device(idx, qd.i32), device(x, qd.f32), device(np.zeros(n, np.float32), qd.f32))
        return K.scatter_add, args, lambda: (args[2].to_numpy() == np.bincount(idx, x, n)).all()
    if name in ("particles", "field_particles"):
        pos, vel = rng.random((n, 3), np.float32), rng.standard_normal((n, 3)).astype(np.float32)
        v = vel + np.float32(0.01) * np.array([0, -9.8, 0], np.float32)
        p = pos + np.float32(0.01) * v
        p[:, 1] = np.abs(p[:, 1])  # the bounce
        if name == "particles":
            args = (device(pos, qd.f32, 3), device(vel, qd.f32, 3), np.float32(0.01))
            return K.particles, args, lambda: np.allclose(args[0].to_numpy(), p, rtol=1e-5, atol=1e-6)
        fpos, fvel, step = K.field_particles(n)
        fpos.from_numpy(pos)
        fvel.from_numpy(vel)
        return step, (np.float32(0.01),), lambda: np.allclose(fpos.to_numpy(), p, rtol=1e-5, atol=1e-6)
    if name == "first_call":
        x, y = rng.random(n, np.float32), rng.random(n, np.float32)
        args = (np.float32(2.5), device(x, qd.f32), device(y, qd.f32))
        return fresh_saxpy(), args, lambda: np.allclose(args[2].to_numpy(), 2.5 * x + y + 0.5, rtol=1e-6)
    raise SystemExit(f"unknown kernel {name}")


def fresh_saxpy():
    """saxpy (+ 0.5) from a module written for this process alone: a test against a new number
    (never true: i >= 0) makes its source and its emitted code new, so neither framework's
    on-disk caches know it (the first call translates and compiles). Both read a kernel's
    source from its file, hence the file."""
    import importlib.util  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    import uuid  # noqa: PLC0415

    path = os.path.join(tempfile.mkdtemp(prefix="vs-first-"), "fresh_kernel.py")
    with open(path, "w") as f:
        f.write(f"import {qd.__name__} as qd\n\n\n@qd.kernel\n"
                "def saxpy(a: qd.f32, x: qd.types.ndarray(dtype=qd.f32, ndim=1), "
                "y: qd.types.ndarray(dtype=qd.f32, ndim=1)):\n"
                "    for i in range(x.shape[0]):\n"
                f"        if i != -{uuid.uuid4().int % 2**30 + 1}:\n"
                "            y[i] = a * x[i] + y[i] + 0.5\n")
    spec = importlib.util.spec_from_file_location("fresh_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.saxpy


SETTLE_S = 0.2


def main() -> None:
    name, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    arch = os.environ.get("QD_ARCH", "vulkan")  # cpu: our CPU executor, Quadrants' LLVM CPU backend
    # Neither falls back to another device unnoticed: Quadrants says where it runs, ours may not move.
    qd.init(arch=getattr(qd, arch), **({"offline_cache": False} if qd.__name__ == "quadrants" else
                                       {"enable_fallback": False}))
    kernel, args, check = case(name, n)
    t0 = time.perf_counter()
    kernel(*args)
    qd.sync()
    first = time.perf_counter() - t0
    ok = bool(check())
    # Untimed calls for a while first: what either framework still does in the background
    # right after its first call (our warm-up thread's translations, helper threads starting)
    # is not a warm call's cost.
    settle = time.perf_counter() + SETTLE_S
    while time.perf_counter() < settle:
        kernel(*args)
        qd.sync()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        kernel(*args)
        qd.sync()
        times.append(time.perf_counter() - t)
    times.sort()
    print(json.dumps({"first_ms": first * 1e3, "warm_ms": times[len(times) // 2] * 1e3, "ok": ok}))


if __name__ == "__main__":
    main()

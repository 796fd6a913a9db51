"""The CPU SIMT emulator (transpiler/runtime/cpu_emulator): the emitted CUDA and HIP text run
unchanged on the host, compared with NumPy; barriers, warp collectives, shared memory and
atomics tested through hand-written sources; deadlocks, hangs, faults and races reported
with the Python line instead of hanging or crashing."""
from __future__ import annotations

import inspect
import re
import shutil
import threading
import time

import numpy as np
import pytest

import transpiler as qd
from transpiler.runtime.cpu_emulator import DeadlockError, KernelError, RaceError, build_module

pytestmark = [pytest.mark.toolchain,
              pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                                 reason="needs a host C++20 compiler")]

DIALECTS = ["cuda", "hip"]


def line_of(fn, marker: str) -> int:
    """The file line of the source line of ``fn`` that contains ``marker``."""
    lines, first = inspect.getsourcelines(getattr(fn, "fn", fn))
    for k, text in enumerate(lines):
        if marker in text:
            return first + k
    raise AssertionError(f"{marker!r} not in {fn}")


@pytest.fixture(params=DIALECTS)
def dialect(request):
    qd.init(arch="cpu", dialect=request.param)
    yield request.param
    qd.init(arch="cpu")


# ----------------------------------------------------------------------------- Python kernels

@qd.kernel
def saxpy(a: qd.f32, x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@qd.kernel
def blur_rows(src: qd.types.ndarray(dtype=qd.f32, ndim=2), dst: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i, j in qd.ndrange(src.shape[0], (1, src.shape[1] - 1)):
        dst[i, j] = (src[i, j - 1] + src[i, j] + src[i, j + 1]) / 3.0


@qd.kernel
def prefix_then_scale(x: qd.types.ndarray(dtype=qd.i32, ndim=1), acc: qd.types.ndarray(dtype=qd.i32, ndim=1),
                      y: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    acc[0] = 0                      # a serial task
    for i in range(x.shape[0]):     # parallel
        acc[0] += x[i]
    acc[1] = acc[0] * 2             # serial again, between two parallel loops
    for i in range(x.shape[0]):
        y[i] = x[i] * acc[1] - acc[0]


@qd.kernel
def contend(ci: qd.types.ndarray(dtype=qd.i32, ndim=1), cf: qd.types.ndarray(dtype=qd.f32, ndim=1),
            old: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(old.shape[0]):
        ci[0] += 1
        cf[0] += 1.0
        old[i] = qd.atomic_add(ci[1], 1)
        qd.atomic_max(ci[2], i)
        qd.atomic_min(ci[3], -i)


@qd.kernel
def pydivmod(a: qd.types.ndarray(dtype=qd.i32, ndim=1), b: qd.types.ndarray(dtype=qd.i32, ndim=1),
             q: qd.types.ndarray(dtype=qd.i32, ndim=1), r: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(a.shape[0]):
        q[i] = a[i] // b[i]  # DIV
        r[i] = a[i] % b[i]


@qd.kernel
def pydivmod_counted(a: qd.types.ndarray(dtype=qd.i32, ndim=1), b: qd.types.ndarray(dtype=qd.i32, ndim=1),
                     q: qd.types.ndarray(dtype=qd.i32, ndim=1), r: qd.types.ndarray(dtype=qd.i32, ndim=1),
                     parity: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(a.shape[0]):
        q[i] = a[i] // b[i]  # DIV
        r[i] = a[i] % b[i]
        qd.atomic_add(parity[a[i] % 2], 1)  # an atomic: the threads run as fibers


@qd.kernel
def half_scale(x: qd.types.ndarray(dtype=qd.f16, ndim=1), y: qd.types.ndarray(dtype=qd.f16, ndim=1), s: qd.f32):
    for i in range(x.shape[0]):
        y[i] = x[i] * s


@qd.kernel
def spin_forever(flag: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(out.shape[0]):
        while flag[0] == 0:  # SPIN
            out[i] += 1


@qd.kernel
def shift_left(a: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(a.shape[0] - 1):
        a[i] = a[i + 1] * 2  # RACE


@qd.kernel
def block_sums(x: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    qd.loop_config(block_dim=128)
    for i in range(x.shape[0]):
        tile = qd.simt.block.SharedArray((128,), qd.f32)
        t = qd.simt.block.thread_idx()
        tile[t] = x[i]
        qd.simt.block.sync()
        s = 64
        while s > 0:
            if t < s:
                tile[t] += tile[t + s]
            qd.simt.block.sync()
            s //= 2
        if t == 0:
            out[i // 128] = tile[0]


@qd.kernel
def half_the_block_syncs(out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(64):
        if qd.simt.block.thread_idx() < 32:
            qd.simt.block.sync()  # HALF
        out[i] = 1


@qd.kernel
def subgroup_sums(x: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(x.shape[0]):
        out[i] = qd.simt.subgroup.reduce_add(x[i]) + 1000 * qd.simt.subgroup.group_size()


def test_saxpy(dialect, rng):
    n = 1_000_003  # not a multiple of the block size
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    expect = np.float32(2.5) * x + y
    saxpy(2.5, x, y)
    np.testing.assert_allclose(y, expect, rtol=1e-6)


def test_ndrange_2d(dialect, rng):
    src = rng.random((67, 45), dtype=np.float32)
    dst = np.full_like(src, -7.0)
    blur_rows(src, dst)
    expect = dst.copy()
    expect[:, 1:-1] = (src[:, :-2] + src[:, 1:-1] + src[:, 2:]) / np.float32(3.0)
    np.testing.assert_allclose(dst, expect, rtol=1e-6)
    assert (dst[:, 0] == -7.0).all() and (dst[:, -1] == -7.0).all()


def test_multitask_with_serial_tasks(dialect, rng):
    x = rng.integers(-100, 100, 5000).astype(np.int32)
    acc = np.array([123, 456], np.int32)
    y = np.zeros_like(x)
    prefix_then_scale(x, acc, y)
    total = int(x.sum())
    assert acc.tolist() == [total, 2 * total]
    np.testing.assert_array_equal(y, x * (2 * total) - total)


def test_atomics_under_contention(dialect):
    n = 200_000  # f32 counts stay exact below 2**24
    ci = np.array([5, 0, -1, 1], np.int32)
    cf = np.array([0.5], np.float32)
    old = np.full(n, -1, np.int32)
    contend(ci, cf, old)
    assert ci.tolist() == [5 + n, n, n - 1, -(n - 1)]
    assert cf[0] == np.float32(0.5 + n)
    np.testing.assert_array_equal(np.sort(old), np.arange(n))  # every ticket handed out once


def test_python_floor_division_and_modulo(dialect, rng):
    a = rng.integers(-1000, 1000, 4000).astype(np.int32)
    b = rng.integers(-40, 40, 4000).astype(np.int32)
    b[b == 0] = -3
    q, r = np.zeros_like(a), np.zeros_like(a)
    pydivmod(a, b, q, r)
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)


def test_half_rounds_like_numpy(dialect, rng):
    x = (rng.standard_normal(20000) * 1000).astype(np.float16)
    x[:4] = [np.float16(6.1e-5), np.float16(-3.0e-7), np.float16(65000), np.float16(0)]  # subnormal, overflow
    y = np.zeros_like(x)
    half_scale(x, y, 1.37)
    with np.errstate(over="ignore"):
        expect = (x.astype(np.float32) * np.float32(1.37)).astype(np.float16)
    np.testing.assert_array_equal(y, expect)


def test_shared_memory_and_barriers_from_python(dialect, rng):
    x = rng.random(128 * 9, dtype=np.float32)
    out = np.zeros(9, np.float32)
    block_sums(x, out)
    np.testing.assert_allclose(out, x.reshape(9, 128).sum(1), rtol=1e-5)


def test_subgroup_reduction_at_the_dialect_width(dialect, rng):
    width = 32 if dialect == "cuda" else 64
    x = rng.integers(-1000, 1000, 512).astype(np.int32)
    out = np.zeros_like(x)
    subgroup_sums(x, out)
    np.testing.assert_array_equal(out, np.repeat(x.reshape(-1, width).sum(1), width) + 1000 * width)


def test_hip_wave32_backend(rng):
    qd.init(arch="cpu", dialect="hip", wave32=True)
    try:
        x = rng.integers(-1000, 1000, 256).astype(np.int32)
        out = np.zeros_like(x)
        subgroup_sums(x, out)
        np.testing.assert_array_equal(out, np.repeat(x.reshape(-1, 32).sum(1), 32) + 32000)
    finally:
        qd.init(arch="cpu")


@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("target", DIALECTS)
def test_every_emitted_atomic_spelling_compiles(target, space):
    from transpiler.pipeline import translate_ir
    from transpiler.lowering_tables import all_atomics_kernel

    ctx = translate_ir(all_atomics_kernel(target, space), target)
    sources, manifest = ctx.sources, ctx.manifest
    (name, text), = sources.items()
    mod = build_module(text, name, dialect=target, entries=[e["name"] for e in manifest["entry_points"]])
    assert mod.entries


def test_divergent_block_sync_names_the_python_line(dialect):
    # The hazard checker refuses this kernel before it runs; bypass it to see the emulator's report.
    with pytest.raises(qd.TranspileError, match="reached only by some threads"):
        half_the_block_syncs(np.zeros(64, np.int32))
    qd.init(arch="cpu", dialect=dialect, no_hazards=True)
    with pytest.raises(DeadlockError) as info:
        half_the_block_syncs(np.zeros(64, np.int32))
    msg = str(info.value)
    assert f"threads 0-31 wait at __syncthreads() at test_cpu_emulator.py:{line_of(half_the_block_syncs, '# HALF')}" in msg
    assert "threads 32-63 finished" in msg and "qd.simt.block.sync()" in msg


def test_cross_block_examples(dialect, rng):
    """The seed patterns in examples/: blocks run in index order, so a block only ever waits
    for blocks that already ran, and each pattern completes with the right answer."""
    import sys
    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from last_block_reduce import sum_last_block
        from lookback_scan import TILE, prefix_sum
        from work_queue import square_all
    finally:
        sys.path.remove(str(ROOT / "examples"))
    x = rng.integers(-50, 50, 20_000).astype(np.int32)
    y = np.zeros_like(x)
    tiles = -(-x.size // TILE)
    prefix_sum(x, y, *(np.zeros(tiles, np.int32) for _ in range(3)), np.zeros(1, np.int32))
    np.testing.assert_array_equal(y, np.cumsum(x))
    v = rng.random(50_000, dtype=np.float32)
    total = np.zeros(1, np.float32)
    sum_last_block(v, np.zeros(40, np.float32), np.zeros(1, np.int32), total)
    assert total[0] == pytest.approx(v.sum(dtype=np.float64), rel=1e-4)
    sq = np.zeros_like(v)
    square_all(v, sq, np.zeros(1, np.int32), 8)
    np.testing.assert_allclose(sq, v * v)


def test_integer_division_by_zero_names_the_line(dialect):
    a = np.arange(10, dtype=np.int32)
    b = np.ones(10, np.int32)
    b[7] = 0
    q, r = np.zeros_like(a), np.zeros_like(a)
    with pytest.raises(KernelError, match="integer division by zero") as info:
        pydivmod(a, b, q, r)
    assert f"test_cpu_emulator.py:{line_of(pydivmod, '# DIV')}" in str(info.value)


def test_endless_spin_is_reported_not_hung():
    qd.init(arch="cpu", watchdog_s=0.3)
    try:
        start = time.monotonic()
        with pytest.raises(DeadlockError, match="no progress") as info:
            spin_forever(np.zeros(1, np.int32), np.zeros(300, np.int32))
        assert time.monotonic() - start < 10
        assert f"test_cpu_emulator.py:{line_of(spin_forever, '# SPIN')}" in str(info.value)
        assert "while flag[0] == 0" in str(info.value)  # the Python source line is quoted
    finally:
        qd.init(arch="cpu")


# ----------------------------------------------------------------------------- parallel launches

@qd.kernel
def histogram_mod(x: qd.types.ndarray(dtype=qd.i32, ndim=1), hist: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(x.shape[0]):
        qd.atomic_add(hist[x[i] % hist.shape[0]], 1)


@qd.kernel
def block_reverse(x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    qd.loop_config(block_dim=128)
    for i in range(x.shape[0]):
        tid = qd.simt.block.thread_idx()
        tile = qd.simt.block.SharedArray((128,), qd.f32)
        tile[tid] = x[i]
        qd.simt.block.sync()
        y[i] = tile[127 - tid]


def _launched(monkeypatch, what=lambda launch: launch) -> list:
    """``what`` of every launch the emulator is asked for (as CpuModule.launch_many takes
    them: entry, grid, block, and workers and direct when given), in launch order."""
    from transpiler.runtime import cpu_emulator as C

    launched = []
    real = C.CpuModule.launch_many

    def launch_many(self, launches, *args, **kwargs):
        launched.extend(what(launch) for launch in launches)
        return real(self, launches, *args, **kwargs)

    monkeypatch.setattr(C.CpuModule, "launch_many", launch_many)
    return launched


def _workers_asked(monkeypatch) -> list:
    """The workers each launch asks the emulator for, in launch order."""
    return _launched(monkeypatch, lambda launch: launch[3] if len(launch) > 3 else 1)


def test_grid_free_launches_split_among_os_threads(dialect, monkeypatch):
    """A long task whose blocks cannot see each other (no barrier, collective, shared array,
    fence or print) runs its blocks on several OS threads; integer atomics stay exact across
    them, plain results are the same bits as a run on one thread, and a task with a barrier
    or a short one stays on the calling thread."""
    from transpiler.runtime.cpu_emulator import ITERATIONS_PER_THREAD

    rng = np.random.default_rng(7)
    asked = _workers_asked(monkeypatch)
    n = 2344 * 128 + 1  # the block task's x[:-1] is whole blocks: each thread reaches its barrier
    assert n - 1 >= 2 * ITERATIONS_PER_THREAD
    x = rng.random(n, dtype=np.float32)
    y0 = rng.random(n, dtype=np.float32)
    keys = rng.integers(0, 1 << 20, n).astype(np.int32)
    results = {}
    for workers in (1, 3):
        qd.init(arch="cpu", dialect=dialect, workers=workers)
        y = y0.copy()
        saxpy(np.float32(1.5), x, y)
        hist = np.zeros(997, np.int32)
        histogram_mod(keys, hist)
        rev = np.zeros(n - 1, np.float32)
        block_reverse(x[:-1], rev)
        results[workers] = (y, hist, rev)
    assert asked == [1, 1, 1, 3, 3, 1]  # the barrier task stays on one thread at either setting
    (y1, hist1, rev1), (y3, hist3, rev3) = results[1], results[3]
    np.testing.assert_allclose(y3, 1.5 * x + y0, rtol=1e-6)
    np.testing.assert_array_equal(y3, y1)
    np.testing.assert_array_equal(hist3, np.bincount(keys % 997, minlength=997))
    np.testing.assert_array_equal(hist1, hist3)
    np.testing.assert_array_equal(rev3, x[:-1].reshape(-1, 128)[:, ::-1].reshape(-1))
    asked.clear()
    small = np.zeros(4, np.int32)
    histogram_mod(keys[:1000], small)
    assert asked == [1]
    assert small.sum() == 1000
    # Many cores: a thread per ITERATIONS_PER_THREAD iterations at most (handing one a share
    # costs what a few thousand take).
    qd.init(arch="cpu", dialect=dialect, workers=64)
    asked.clear()
    y = y0.copy()
    saxpy(np.float32(1.5), x, y)
    assert asked == [(n + 127) // 128 * 128 // ITERATIONS_PER_THREAD] == [9]
    np.testing.assert_array_equal(y, y1)


@qd.kernel
def int_total(x: qd.types.ndarray(dtype=qd.i32, ndim=1), total: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> qd.i32:
    squares = 0
    for i in range(x.shape[0]):
        total[0] += x[i]                          # both fold per block, after the loop
        squares += x[i] * x[i]
    return squares


def test_a_reduction_runs_on_few_blocks_of_one_os_thread(dialect, monkeypatch):
    """A grid-stride loop whose only block-level work is the reductions' fold after it: few
    blocks (each pays for its fold), all on the calling thread (the fold's shared array is one
    buffer of the module), the sums exact. (On the emulator: a plain module runs such a task
    once per OS thread's share, see test_cpu_plain.py.)"""
    from transpiler.runtime import cpu_emulator as C

    launched = _launched(monkeypatch)
    qd.init(arch="cpu", dialect=dialect, workers=3, plain=False)
    x = np.random.default_rng(3).integers(-50, 50, 1 << 20).astype(np.int32)
    total = np.zeros(1, np.int32)
    squares = int_total(x, total)
    assert total[0] == x.sum() and squares == (x.astype(np.int64) ** 2).sum()
    parallel = [launch for launch in launched if launch[2] > 1]
    assert [(blocks, workers) for _, blocks, _, workers, *_ in parallel] == [(C.FOLDING_BLOCKS, 1)]


@qd.kernel
def collatz_steps(x: qd.types.ndarray(dtype=qd.i32, ndim=1), steps: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(x.shape[0]):
        n = x[i]
        k = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            k += 1
        steps[i] = k


@qd.real_func
def cube(v: qd.f32) -> qd.f32:
    return v * v * v


@qd.kernel
def cube_all(x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        y[i] = cube(x[i])


def test_threads_that_never_wait_run_directly(dialect, monkeypatch):
    """A grid-free task without a `while`, an atomic or a real function's call runs its threads
    by plain calls, one element each, in order (the whole grid); the others keep fibers and
    their capped grid. Every result is NumPy's, at either setting. (The emulator's policy:
    plain=False; a plain module runs the first four as loops, see test_cpu_plain.py.)"""
    launched = _launched(monkeypatch)
    rng = np.random.default_rng(11)
    n = 100_003
    x = rng.random(n, dtype=np.float32)
    y0 = rng.random(n, dtype=np.float32)
    src = rng.random((301, 257), dtype=np.float32)
    keys = rng.integers(1, 1 << 16, n).astype(np.int32)
    for workers in (1, 2):
        qd.init(arch="cpu", dialect=dialect, workers=workers, plain=False)
        launched.clear()
        y = y0.copy()
        saxpy(np.float32(-1.25), x, y)
        np.testing.assert_allclose(y, np.float32(-1.25) * x + y0, rtol=1e-6)
        dst = np.zeros_like(src)
        blur_rows(src, dst)
        want = (src[:, :-2] + src[:, 1:-1] + src[:, 2:]) / np.float32(3.0)
        np.testing.assert_allclose(dst[:, 1:-1], want, rtol=1e-6)
        hist = np.zeros(61, np.int32)
        histogram_mod(keys, hist)
        np.testing.assert_array_equal(hist, np.bincount(keys % 61, minlength=61))
        steps = np.zeros(1000, np.int32)
        collatz_steps(keys[:1000], steps)
        want = []
        for v in keys[:1000].tolist():
            k = 0
            while v != 1:
                v, k = (v // 2 if v % 2 == 0 else 3 * v + 1), k + 1
            want.append(k)
        np.testing.assert_array_equal(steps, want)
        cubes = np.zeros_like(x)
        cube_all(x, cubes)
        np.testing.assert_allclose(cubes, x * x * x, rtol=1e-6)
        (saxpy_l, blur_l, hist_l, collatz_l, cube_l) = launched
        assert saxpy_l[1:] == (-(-n // 128), 128, workers, True)             # the whole grid, directly
        assert blur_l[1] == -(-301 * 255 // 128) and blur_l[4] is True
        for fibers in (hist_l, collatz_l, cube_l):  # an atomic, a while, a call: fibers, a capped grid
            assert fibers[4] is False and fibers[1] < -(-n // 128)


@qd.kernel
def count_to(n: qd.types.ndarray(dtype=qd.u32, ndim=1), out: qd.types.ndarray(dtype=qd.u32, ndim=1)):
    for i in range(n.shape[0]):
        # A linear congruential step, not `c += 1`: clang turns a counted sum into its closed
        # form, which made a billion iterations take 0.3 s, as long as the watchdog's limit.
        c = qd.u32(1)
        for k in range(n[i]):
            c = c * qd.u32(1664525) + qd.u32(1013904223)
        out[i] = c


def lcg(steps: int) -> int:
    c = 1
    for _ in range(steps):
        c = (c * 1664525 + 1013904223) % 2**32
    return c


def test_a_hang_in_a_direct_task_is_reported(dialect):
    """A thread run directly that loops with no other thread starting is reported by the
    watchdog as a fiber's would be, and the emulator goes on."""
    qd.init(arch="cpu", dialect=dialect, watchdog_s=0.3, workers=1)
    try:
        n = np.full(256, 5, np.uint32)
        n[200] = 1 << 31  # a counted loop of two billion dependent steps in one thread: seconds
        out = np.zeros(256, np.uint32)
        with pytest.raises(DeadlockError, match=r"no progress for 0\.3 s in block 1 of 2: thread 72 is looping at "
                                                r"test_cpu_emulator\.py:\d+"):
            count_to(n, out)
        count_to(np.full(256, 7, np.uint32), out)
        assert (out == lcg(7)).all()
    finally:
        qd.init(arch="cpu")


@pytest.mark.parametrize("direct", [False, True], ids=["fibers", "direct"])
def test_a_fault_in_a_parallel_launch_is_reported_as_a_serial_run_would(dialect, monkeypatch, direct):
    """Every thread of a parallel launch stops at its own first fault, and the one reported is
    in the lowest block: the same message, block and thread as a run in index order. As
    fibers (an atomic in the task), 147 blocks of 128 threads, a grid stride of 18,816
    elements; run directly, the whole grid, one element per thread."""
    asked = _workers_asked(monkeypatch)
    n = 300_000
    a = np.arange(n, dtype=np.int32)
    b = np.ones(n, np.int32)
    # Two faults in different threads' blocks. As fibers, the earlier element is in block 140
    # (the last thread's share), the later one in block 5 (the first's), which a serial run
    # reaches first; run directly, the earlier element's block (140) is the lower one.
    b[[140 * 128, 15 * 18_816 + 5 * 128]] = 0
    messages = {}

    def divmod_(b, q, r):
        if direct:
            pydivmod(a, b, q, r)
        else:
            pydivmod_counted(a, b, q, r, np.zeros(2, np.int32))

    for workers in (1, 4):  # fibers: the emulator's (a plain module would run the atomic's task as a loop)
        qd.init(arch="cpu", dialect=dialect, workers=workers, plain=direct)
        with pytest.raises(KernelError, match="integer division by zero") as info:
            divmod_(b, np.zeros_like(a), np.zeros_like(a))
        messages[workers] = str(info.value)
    assert asked == [1, 4]
    assert messages[4] == messages[1]
    assert ("in thread 0 of block 140 of 2344 at" if direct else "in thread 0 of block 5 of 147 at") in messages[4]
    assert f"test_cpu_emulator.py:{line_of(pydivmod if direct else pydivmod_counted, '# DIV')}" in messages[4]
    qd.init(arch="cpu", dialect=dialect, workers=4)
    q, r = np.zeros_like(a), np.zeros_like(a)
    divmod_(np.full(n, 7, np.int32), q, r)  # and the next launch runs
    np.testing.assert_array_equal(q, a // 7)
    np.testing.assert_array_equal(r, a % 7)


def test_an_endless_spin_in_a_parallel_launch_is_reported(monkeypatch):
    asked = _workers_asked(monkeypatch)
    qd.init(arch="cpu", watchdog_s=0.3, workers=2)
    try:
        start = time.monotonic()
        with pytest.raises(DeadlockError, match="no progress") as info:
            spin_forever(np.zeros(1, np.int32), np.zeros(200_000, np.int32))
        assert time.monotonic() - start < 10
        assert asked == [2]
        assert "block 0 of" in str(info.value)  # the lowest block's, as a serial run reports
        assert f"test_cpu_emulator.py:{line_of(spin_forever, '# SPIN')}" in str(info.value)
    finally:
        qd.init(arch="cpu")


def test_a_forked_child_runs_parallel_launches():
    """The helper threads of parallel launches stay between launches; a child forked after one
    (Python's multiprocessing on Linux) has none of them and must start its own, not wait
    forever for threads that are not there."""
    import os

    qd.init(arch="cpu", workers=2)
    n = 1 << 18
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    saxpy(np.float32(2.0), x, y)  # the parent's helpers start
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 when its own parallel launch is right
        code = 1
        try:
            z = np.ones(n, np.float32)
            saxpy(np.float32(3.0), x, z)
            code = 0 if np.array_equal(z, 3 * x + 1) else 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's parallel launch never finished")
        time.sleep(0.01)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    np.testing.assert_array_equal(y, 2 * x)


def test_race_check_names_both_lines():
    qd.init(arch="cpu", race_check=True)
    try:
        with pytest.raises(RaceError) as info:
            shift_left(np.arange(300, dtype=np.int32))
        msg = str(info.value)
        assert "data race on `a`[" in msg
        assert msg.count(f"test_cpu_emulator.py:{line_of(shift_left, '# RACE')}") >= 2, msg
        # A race-free kernel runs to the right answer in the child process.
        x = np.arange(1000, dtype=np.float32)
        y = np.ones(1000, np.float32)
        saxpy(2.0, x, y)
        np.testing.assert_array_equal(y, 2 * np.arange(1000, dtype=np.float32) + 1)
    finally:
        qd.init(arch="cpu")


def test_unknown_dialect_is_rejected():
    with pytest.raises(ValueError, match="dialect"):
        qd.init(arch="cpu", dialect="metal")
    qd.init(arch="cpu")


# ----------------------------------------------------------------------------- hand-written sources
# The kernel language does not expose barriers, shared arrays or warp collectives yet: test
# the header's built-ins directly. `// emu.py:N` comments stand in for the transpiler's.

PRIMS = r"""
#define FULL 0xffffffffu

extern "C" __global__ void __launch_bounds__(256) shared_rotate(int* out)
{
    __shared__ int s[256];
    int t = threadIdx.x;
    s[t] = blockIdx.x * 1000 + t;
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = s[(t + 1) % blockDim.x];
}

extern "C" __global__ void shared_uninit(float* out)
{
    __shared__ float s[64];
    out[threadIdx.x] = s[threadIdx.x];  // read before any write: garbage on a GPU
}

extern "C" __global__ void sync_preds(const int* pred, int* out)
{
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int p = pred[g];
    out[3 * g + 0] = __syncthreads_count(p);
    out[3 * g + 1] = __syncthreads_and(p);
    out[3 * g + 2] = __syncthreads_or(p);
}

extern "C" __global__ void warp_ops(const int* in, int* out)
{
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[g];
    out[8 * g + 0] = __shfl_xor_sync(FULL, v, 1);
    out[8 * g + 1] = __shfl_up_sync(FULL, v, 3);
    out[8 * g + 2] = __shfl_down_sync(FULL, v, 5, 16);
    out[8 * g + 3] = __shfl_sync(FULL, v, 7);
    out[8 * g + 4] = (int)__ballot_sync(FULL, v & 1);
    out[8 * g + 5] = __reduce_add_sync(FULL, v);
    out[8 * g + 6] = (int)__match_any_sync(FULL, v & 3);
    out[8 * g + 7] = __any_sync(FULL, v == 5) + 2 * __all_sync(FULL, v >= 0) + 4 * __popc(__activemask());
}

extern "C" __global__ void active_in_branch(long long* out)
{
    int lane = threadIdx.x % warpSize;
    long long r = -1, m = -1;
    if (lane < 10 || lane == warpSize - 1) {
        unsigned long long mask = __activemask();
        r = __reduce_add_sync(mask, lane);
        m = (long long)mask;
    }
    out[2 * threadIdx.x] = r;
    out[2 * threadIdx.x + 1] = m;
}

extern "C" __global__ void warp_reduce_float(const float* in, float* out)
{
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[g];
    for (int d = 16; d > 0; d /= 2) {
        v += __shfl_down_sync(FULL, v, d);
        __syncwarp();
    }
    if (threadIdx.x % 32 == 0) out[g / 32] = v;
}

extern "C" __global__ void shared_atomics(int* out, float* fout, unsigned long long* uout)
{
    __shared__ int cnt;
    __shared__ float fs;
    __shared__ unsigned long long bits;
    if (threadIdx.x == 0) { cnt = 0; fs = 0.0f; bits = 0; }
    __syncthreads();
    atomicAdd(&cnt, 1);
    atomicAdd(&fs, 0.25f);
    atomicOr(&bits, 1ull << (threadIdx.x % 64));
    atomicMax(&out[gridDim.x], (int)(blockIdx.x * blockDim.x + threadIdx.x));
    __syncthreads();
    if (threadIdx.x == 0) { out[blockIdx.x] = cnt; fout[blockIdx.x] = fs; uout[blockIdx.x] = bits; }
}

extern "C" __global__ void global_atomics(int* i, unsigned* u, long long* l, unsigned long long* ull, float* f, double* d)
{
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(i, 1);
    atomicSub(i + 1, 2);
    atomicMin(i + 2, -g);
    atomicXor(u, 1u << (g % 32));
    atomicInc(u + 1, 9u);
    atomicMax(l, (long long)g * 1000000000ll);
    atomicAdd(ull, 3ull);
    unsigned long long seen = 0;
    while (true) {
        unsigned long long cur = ull[1];
        if (atomicCAS(ull + 1, cur, cur + 2) == cur) break;
    }
    atomicAdd(f, 0.5f);
    atomicAdd(d, 0.25);
    atomicExch(f + 1, 7.0f);
}

extern "C" __global__ void divergent_barrier(int* out)
{
    if (threadIdx.x < 64) {
        __syncthreads();  // emu.py:11
    }
    out[threadIdx.x] = 1;
}

extern "C" __global__ void two_barriers(int* out)
{
    if (threadIdx.x % 2 == 0) {
        __syncthreads();  // emu.py:21
    } else {
        __syncthreads();  // emu.py:22
    }
}

extern "C" __global__ void partial_shuffle(int* out)
{
    int v = threadIdx.x;
    if (threadIdx.x < 16) {
        v = __shfl_xor_sync(FULL, v, 1);  // emu.py:31
    }
    out[threadIdx.x] = v;
}

extern "C" __global__ void wait_for_later_block(volatile int* flag)
{
    if (blockIdx.x == 0) {
        while (flag[1] == 0) {  // emu.py:41
        }
    } else {
        flag[1] = 1;
    }
}

extern "C" __global__ void wait_in_block(volatile int* flag, int* out)
{
    if (threadIdx.x == 0) {
        while (flag[0] == 0) {
        }
        out[0] = 42;
    }
    if (threadIdx.x == blockDim.x - 1) flag[0] = 1;
}

extern "C" __global__ void chained_blocks(volatile int* flags, int* out)
{
    if (threadIdx.x == 0) {
        int prev = 0;
        if (blockIdx.x > 0) {
            while (flags[blockIdx.x - 1] == 0) {
            }
            prev = out[blockIdx.x - 1];
        }
        out[blockIdx.x] = prev + blockIdx.x;
        __threadfence();
        flags[blockIdx.x] = 1;
    }
}

extern "C" __global__ void dims(int* out)
{
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    int g = b * blockDim.x * blockDim.y * blockDim.z + t;
    out[4 * g + 0] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z;
    out[4 * g + 1] = blockIdx.x + 10 * blockIdx.y + 100 * blockIdx.z;
    out[4 * g + 2] = warpSize;
    out[4 * g + 3] = b;
}

extern "C" __global__ void trap_at(int* out)
{
    if (threadIdx.x == 3) __trap();  // emu.py:91
}

__device__ int deep(volatile int* p, int n)
{
    volatile char pad[512];
    pad[n % 512] = (char)n;
    return n == 0 ? p[0] : deep(p, n - 1) + pad[n % 512];
}

extern "C" __global__ void faults(int* out, int kind)
{
    if (threadIdx.x == 2) {
        if (kind == 0) out[0] = *(volatile int*)16;  // emu.py:97
        if (kind == 1) out[0] = deep(out, 1 << 30);
    }
}

extern "C" __global__ void bits(const unsigned* in, int* out, float* fo)
{
    unsigned v = in[threadIdx.x];
    out[5 * threadIdx.x + 0] = __popc(v);
    out[5 * threadIdx.x + 1] = __clz((int)v);
    out[5 * threadIdx.x + 2] = __ffs((int)v);
    out[5 * threadIdx.x + 3] = __float_as_int(__int_as_float((int)v)) == (int)v;
    out[5 * threadIdx.x + 4] = min((int)v, 100) + max(-5, (int)(v % 7)) + abs(-(int)(v % 3));
    fo[threadIdx.x] = rsqrtf((float)(v % 1000) + 1.0f);
}
"""

HIP_PRIMS = r"""
#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif
extern "C" __global__ void wave_ops(const int* in, long long* out)
{
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[g];
    out[6 * g + 0] = __shfl_xor(v, 33);
    out[6 * g + 1] = __shfl_up(v, 3);
    out[6 * g + 2] = __shfl(v, 40);
    out[6 * g + 3] = (long long)__ballot(v & 1);
    out[6 * g + 4] = __shfl_down_sync(0xffffffffffffffffull, v, 1);
    out[6 * g + 5] = warpSize + 1000 * (int)__lane_id();
}

extern "C" __global__ void ballot_in_branch(long long* out)
{
    long long b = -1;
    if (__lane_id() < 20) b = (long long)__ballot(1);
    out[threadIdx.x] = b;
}
"""


@pytest.fixture(scope="module")
def prims():
    return {d: build_module(PRIMS, "emu.cu" if d == "cuda" else "emu.hip", dialect=d) for d in DIALECTS}


@pytest.fixture(params=DIALECTS)
def mod(request, prims):
    return prims[request.param]


def test_shared_memory_is_per_block(mod):
    out = np.zeros(6 * 256, np.int32)
    mod.launch("shared_rotate", 6, 256, [out])
    t = np.arange(256)
    expect = np.concatenate([b * 1000 + (t + 1) % 256 for b in range(6)])
    np.testing.assert_array_equal(out, expect)


def test_shared_memory_starts_as_garbage(mod):
    out = np.zeros(64, np.float32)
    mod.launch("shared_uninit", 1, 64, [out])
    assert np.isnan(out).all()  # poisoned: a kernel that forgets to initialise shows it
    mod.launch("shared_uninit", 1, 64, [out], poison_shared=False)


def test_syncthreads_count_and_or(mod, rng):
    blocks, threads = 3, 100  # not a multiple of the warp size
    pred = (rng.random(blocks * threads) < 0.4).astype(np.int32)
    pred[threads:2 * threads] = 1  # one block where every thread says yes
    pred[2 * threads:] = 0         # one where none does
    out = np.zeros(3 * blocks * threads, np.int32)
    mod.launch("sync_preds", blocks, threads, [pred, out])
    got = out.reshape(blocks, threads, 3)
    for b in range(blocks):
        p = pred[b * threads:(b + 1) * threads]
        assert (got[b, :, 0] == p.sum()).all()
        assert (got[b, :, 1] == int(p.all())).all()
        assert (got[b, :, 2] == int(p.any())).all()


def test_warp_collectives_at_32(prims, rng):
    mod = prims["cuda"]
    n = 96
    v = rng.integers(0, 10, n).astype(np.int32)
    out = np.zeros(8 * n, np.int32)
    mod.launch("warp_ops", 1, n, [v, out])
    o = out.reshape(n, 8)
    g = np.arange(n)
    lane, base = g % 32, g - g % 32
    np.testing.assert_array_equal(o[:, 0], v[g ^ 1])
    np.testing.assert_array_equal(o[:, 1], np.where(lane >= 3, v[g - 3], v))
    np.testing.assert_array_equal(o[:, 2], np.where(lane % 16 + 5 < 16, v[np.minimum(g + 5, n - 1)], v))
    np.testing.assert_array_equal(o[:, 3], v[base + 7])
    ballots = [sum(1 << k for k in range(32) if v[w * 32 + k] & 1) for w in range(n // 32)]
    np.testing.assert_array_equal(o[:, 4].astype(np.uint32), np.repeat(np.array(ballots, np.uint32), 32))
    np.testing.assert_array_equal(o[:, 5], np.repeat(v.reshape(-1, 32).sum(1), 32))
    match = [sum(1 << k for k in range(32) if (v[base[i] + k] & 3) == (v[i] & 3)) for i in range(n)]
    np.testing.assert_array_equal(o[:, 6].astype(np.uint32), np.array(match, np.uint32))
    anyall = [int((v[w * 32:(w + 1) * 32] == 5).any()) + 2 + 4 * 32 for w in range(n // 32)]
    np.testing.assert_array_equal(o[:, 7], np.repeat(anyall, 32))


def test_activemask_is_the_lanes_on_this_path(mod):
    ws = mod.warp_size
    out = np.zeros(2 * 128, np.int64)
    mod.launch("active_in_branch", 1, 128, [out])
    o = out.reshape(128, 2)
    lane = np.arange(128) % ws
    inside = (lane < 10) | (lane == ws - 1)
    np.testing.assert_array_equal(o[:, 0], np.where(inside, sum(range(10)) + ws - 1, -1))
    mask = ((1 << 10) - 1) | (1 << (ws - 1))
    np.testing.assert_array_equal(o[:, 1].astype(np.uint64), np.where(inside, np.uint64(mask), np.uint64(2**64 - 1)))


def test_warp_reduction_loop(prims, rng):
    x = rng.random(256, dtype=np.float32)
    out = np.zeros(8, np.float32)
    prims["cuda"].launch("warp_reduce_float", 2, 128, [x, out])
    np.testing.assert_allclose(out, x.reshape(8, 32).sum(1), rtol=1e-5)


@pytest.mark.parametrize("wave32", [False, True])
def test_hip_wavefront_collectives(wave32, rng):
    mod = build_module(HIP_PRIMS, "wave.hip", dialect="hip", wave32=wave32)
    ws = 32 if wave32 else 64
    n = 128
    v = rng.integers(0, 100, n).astype(np.int32)
    out = np.zeros(6 * n, np.int64)
    mod.launch("wave_ops", 1, n, [v, out])
    o = out.reshape(n, 6)
    g = np.arange(n)
    lane, base = g % ws, g - g % ws
    src = g ^ 33
    np.testing.assert_array_equal(o[:, 0], np.where(src // ws == g // ws, v[np.minimum(src, n - 1)], v))
    np.testing.assert_array_equal(o[:, 1], np.where(lane >= 3, v[g - 3], v))
    np.testing.assert_array_equal(o[:, 2], v[base + 40 % ws])
    ballots = np.array([sum(1 << k for k in range(ws) if v[w * ws + k] & 1) for w in range(n // ws)], np.uint64)
    np.testing.assert_array_equal(o[:, 3].astype(np.uint64), np.repeat(ballots, ws))
    np.testing.assert_array_equal(o[:, 4], np.where(lane + 1 < ws, v[np.minimum(g + 1, n - 1)], v))
    np.testing.assert_array_equal(o[:, 5], ws + 1000 * lane)
    b = np.zeros(n, np.int64)
    mod.launch("ballot_in_branch", 1, n, [b])
    np.testing.assert_array_equal(b, np.where(lane < 20, (1 << 20) - 1, -1))


def test_atomics_on_shared_memory(mod):
    blocks, threads = 4, 160
    out = np.zeros(blocks + 1, np.int32)
    fout = np.zeros(blocks, np.float32)
    uout = np.zeros(blocks, np.uint64)
    mod.launch("shared_atomics", blocks, threads, [out, fout, uout])
    assert out[:blocks].tolist() == [threads] * blocks
    assert out[blocks] == blocks * threads - 1
    assert fout.tolist() == [threads * 0.25] * blocks
    assert uout.tolist() == [2**64 - 1] * blocks


def test_atomic_signatures_and_exact_counts(mod):
    blocks, threads = 50, 128
    n = blocks * threads
    i = np.array([3, 0, 10], np.int32)
    u = np.array([0, 0], np.uint32)
    ll = np.array([-5], np.int64)
    ull = np.array([0, 0], np.uint64)
    f = np.array([0.0, 0.0], np.float32)
    d = np.array([1.0], np.float64)
    mod.launch("global_atomics", blocks, threads, [i, u, ll, ull, f, d])
    assert i.tolist() == [3 + n, -2 * n, -(n - 1)]
    assert u[0] == 0  # each bit flipped n/32 (even) times
    assert u[1] == n % 10  # atomicInc wraps at 9
    assert ll[0] == (n - 1) * 1_000_000_000
    assert ull.tolist() == [3 * n, 2 * n]
    assert f.tolist() == [0.5 * n, 7.0]
    assert d[0] == 1.0 + 0.25 * n


def test_grid_and_block_in_three_dimensions(mod):
    grid, block = (3, 2, 2), (4, 2, 3)
    n = 12 * 24
    out = np.zeros(4 * n, np.int32)
    mod.launch("dims", grid, block, [out])
    o = out.reshape(n, 4)
    t = np.arange(24)
    tx, ty, tz = t % 4, t // 4 % 2, t // 8
    np.testing.assert_array_equal(o[:24, 0], tx + 10 * ty + 100 * tz)
    b = np.arange(12)
    np.testing.assert_array_equal(o[::24, 1], b % 3 + 10 * (b // 3 % 2) + 100 * (b // 6))
    assert (o[:, 2] == mod.warp_size).all()
    np.testing.assert_array_equal(o[:, 3], np.repeat(b, 24))


def test_a_direct_launch_runs_every_thread_as_fibers_do(mod):
    """QD_EMU_DIRECT (CpuModule.launch_many's fifth item): the same indices, in three
    dimensions, as a launch with fibers; a trap, a fault and the watchdog name the same
    thread; a barrier, which a direct launch must never meet, is an internal error."""
    grid, block = (3, 2, 2), (4, 2, 3)
    want, got = np.zeros(4 * 288, np.int32), np.zeros(4 * 288, np.int32)
    mod.launch("dims", grid, block, [want])
    mod.launch_many([("dims", grid, block, 1, True)], [got])
    np.testing.assert_array_equal(got, want)
    with pytest.raises(KernelError, match=r"thread 3 of block 0 of 1 executed __trap\(\) at emu.py:91"):
        mod.launch_many([("trap_at", 1, 8, 1, True)], [np.zeros(8, np.int32)])
    with pytest.raises(KernelError, match=r"invalid memory access \(SIGSEGV\) in thread 2 of block 0 of 1, "
                                          r"address 0x10 at emu.py:97"):
        mod.launch_many([("faults", 1, 4, 1, True)], [np.zeros(4, np.int32), np.int32(0)])
    with pytest.raises(DeadlockError, match=r"no progress for 0\.3 s in block 0 of 2: thread 0 is looping at emu\.py:41"):
        mod.launch_many([("wait_for_later_block", 2, 32, 1, True)], [np.zeros(2, np.int32)], watchdog_s=0.3)
    with pytest.raises(KernelError, match=r"internal error: thread 0 of block 0 of 2 reached __syncthreads\(\) at "
                                          r"emu.py:11 in a task run without fibers"):
        mod.launch_many([("divergent_barrier", 2, 128, 1, True)], [np.zeros(128, np.int32)])
    got[:] = 0
    mod.launch_many([("dims", grid, block, 2, True)], [got])  # and again, on two OS threads
    np.testing.assert_array_equal(got, want)


def test_bit_and_math_builtins(prims, rng):
    v = rng.integers(1, 2**31, 64, dtype=np.uint32)
    v[0] = 1 << 20
    out = np.zeros(5 * 64, np.int32)
    fo = np.zeros(64, np.float32)
    prims["cuda"].launch("bits", 1, 64, [v, out, fo])
    o = out.reshape(64, 5)
    np.testing.assert_array_equal(o[:, 0], [bin(int(x)).count("1") for x in v])
    np.testing.assert_array_equal(o[:, 1], [32 - int(x).bit_length() for x in v])
    np.testing.assert_array_equal(o[:, 2], [(int(x) & -int(x)).bit_length() for x in v])
    assert (o[:, 3] == 1).all()
    vi = v.astype(np.int64)
    np.testing.assert_array_equal(o[:, 4], np.minimum(vi, 100) + np.maximum(-5, vi % 7) + vi % 3)
    np.testing.assert_allclose(fo, 1 / np.sqrt((v % 1000).astype(np.float32) + 1), rtol=1e-6)


def test_divergent_barrier_is_a_deadlock(mod):
    start = time.monotonic()
    with pytest.raises(DeadlockError) as info:
        mod.launch("divergent_barrier", 2, 128, [np.zeros(128, np.int32)])
    msg = str(info.value)
    assert "threads 0-63 wait at __syncthreads() at emu.py:11" in msg
    assert "threads 64-127 finished" in msg
    assert time.monotonic() - start < 5  # found at once, not by the watchdog


def test_two_different_barriers_are_reported(mod):
    with pytest.raises(DeadlockError, match=r"barrier divergence.*emu.py:22.*emu.py:21"):
        mod.launch("two_barriers", 1, 64, [np.zeros(64, np.int32)])


def test_shuffle_with_missing_lanes_is_a_deadlock(mod):
    with pytest.raises(DeadlockError) as info:
        mod.launch("partial_shuffle", 1, 32, [np.zeros(32, np.int32)])
    msg = str(info.value)
    assert "__shfl_xor_sync at emu.py:31" in msg and "still needs threads 16-31" in msg


def test_spin_on_a_later_block_is_reported(mod):
    with pytest.raises(DeadlockError, match=r"no progress for 0\.3 s in block 0 of 2.*looping at emu\.py:41"):
        mod.launch("wait_for_later_block", 2, 32, [np.zeros(2, np.int32)], watchdog_s=0.3)


def test_spin_on_another_thread_of_the_block_completes(mod):
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    mod.launch("wait_in_block", 1, 256, [flag, out])
    assert out[0] == 42


def test_blocks_run_in_order_so_chained_blocks_complete(mod):
    blocks = 3000
    flags, out = np.zeros(blocks, np.int32), np.zeros(blocks, np.int32)
    mod.launch("chained_blocks", blocks, 32, [flags, out])
    np.testing.assert_array_equal(out, np.cumsum(np.arange(blocks)))


def test_trap_names_the_line(mod):
    with pytest.raises(KernelError, match=r"thread 3 of block 0 of 1 executed __trap\(\) at emu.py:91"):
        mod.launch("trap_at", 1, 8, [np.zeros(8, np.int32)])


OVERFLOW = """extern "C" __global__ void overflow(int* x)
{
    int a = x[threadIdx.x] + 1;  // ovf.py:7
    x[threadIdx.x] = a * x[threadIdx.x];  // ovf.py:8
}
"""


@pytest.mark.parametrize("cxx", ["clang++-19", "g++"])
def test_signed_overflow_names_the_line(cxx):
    """clang merges the checks' traps unless told not to, and binutils' addr2line misreads
    DWARF 5's file table: either way the trap's address mapped to no Python line."""
    if not shutil.which(cxx):
        pytest.skip(f"{cxx} is not installed (scripts/setup.sh toolchains installs it)")
    m = build_module(OVERFLOW, "ovf.cu", dialect="cuda", compiler=cxx)
    with pytest.raises(KernelError, match=r"signed integer overflow .* in thread 0 of block 0 of 1 at ovf\.py:8"):
        m.launch("overflow", 1, 4, [np.full(4, 2**30, np.int32)])


def test_faults_are_python_errors(mod):
    out = np.zeros(4, np.int32)
    with pytest.raises(KernelError, match=r"invalid memory access \(SIGSEGV\) in thread 2 of block 0 of 1, "
                                          r"address 0x10 at emu.py:97"):
        mod.launch("faults", 1, 4, [out, np.int32(0)])
    with pytest.raises(KernelError, match="stack overflow in thread 2"):
        mod.launch("faults", 1, 4, [out, np.int32(1)])
    mod.launch("shared_rotate", 1, 256, [np.zeros(256, np.int32)])  # and the emulator still works


def test_bad_arguments_are_python_errors(prims):
    with pytest.raises(TypeError, match="numpy"):
        prims["cuda"].launch("trap_at", 1, 8, [[1, 2, 3]])
    with pytest.raises(KernelError, match="bad launch"):
        prims["cuda"].launch("trap_at", 1, 5000, [np.zeros(8, np.int32)])


RACY = r"""
extern "C" __global__ void no_barrier(int* out)
{
    __shared__ int s[128];
    s[threadIdx.x] = threadIdx.x;  // emu.py:4
    out[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];  // emu.py:5
}

extern "C" __global__ void with_barrier(int* out)
{
    __shared__ int s[128];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}

extern "C" __global__ void across_blocks(int* a)
{
    if (threadIdx.x == 0) a[blockIdx.x + 1] = a[blockIdx.x] + 1;  // emu.py:18
}
"""


def test_race_check_on_shared_and_global_memory():
    mod = build_module(RACY, "emu.cu", race_check=True)
    with pytest.raises(RaceError, match=r"data race on shared memory: .*emu\.py:[45].*emu\.py:[45]"):
        mod.launch("no_barrier", 2, 128, [np.zeros(256, np.int32)])
    out = np.zeros(256, np.int32)
    mod.launch("with_barrier", 2, 128, [out])  # shared memory reused by block 1: no false report
    np.testing.assert_array_equal(out, np.tile((np.arange(128) + 1) % 128, 2))
    with pytest.raises(RaceError, match=r"data race on `a`\[1\].*emu\.py:18.*emu\.py:18"):
        mod.launch("across_blocks", 2, 32, [np.zeros(3, np.int32)], arg_names=["a"])


def test_generated_source_compiles_unchanged():
    """The emulator consumes exactly what `qd.translate` emits."""
    for target in DIALECTS:
        tr = qd.translate(half_scale, target)
        (name, text), = tr.sources.items()
        mod = build_module(text, name, dialect=target)
        x = np.array([1.5, -2.25, 1000], np.float16)
        y = np.zeros_like(x)
        mod.launch("half_scale", 1, 128, [x, np.int32(3), y, np.int32(3), np.float32(2.0)])
        assert y.tolist() == [3.0, -4.5, 2000.0]
        assert re.search(r"extern \"C\" __global__ void __launch_bounds__\(\d+\) half_scale", text)


def test_kernels_build_against_the_precompiled_header(tmp_path, monkeypatch):
    """With clang, qd_simt.h is precompiled once per flags and kernels are built against it
    (its parse was most of a small kernel's build); the kernel still runs right."""
    from transpiler.runtime import cpu_emulator as C

    cxx = C.find_compiler()
    if not C._clang_major(cxx):
        pytest.skip(f"the precompiled header is clang's ({cxx} builds without one)")
    monkeypatch.setenv("QD_CPU_CACHE", str(tmp_path))  # a fresh cache: both are built here
    commands = []
    real = C._run_compiler
    main = threading.current_thread()  # not a backend's warm-up thread, building its own

    def run_compiler(cmd, what):
        if threading.current_thread() is main:
            commands.append(cmd)
        return real(cmd, what)

    monkeypatch.setattr(C, "_run_compiler", run_compiler)
    src = 'extern "C" __global__ void twice(int* x) { x[threadIdx.x] *= 2; }\n'
    module = build_module(src, "twice.cu")
    pch = [c for c in commands if "c++-header" in c]
    kernel = [c for c in commands if any(str(a).endswith("wrapper.cpp") for a in c)]
    assert len(pch) == 1 and kernel and "-include-pch" in kernel[-1], commands
    x = np.arange(32, dtype=np.int32)
    module.launch("twice", 1, 32, [x])
    np.testing.assert_array_equal(x, 2 * np.arange(32))
    commands.clear()
    build_module(src.replace("2", "3"), "thrice.cu")  # the same flags: the header is not built again
    assert not [c for c in commands if "c++-header" in c] and "-include-pch" in commands[-1]


def test_a_precompiled_header_is_per_checkout(tmp_path, monkeypatch):
    """Two checkouts with the same qd_simt.h (a worktree, a second venv) each build against a
    PCH of their own copy, and a header rewritten with the same text gets a new one: clang
    checks the header a PCH was built from (its size and time), and a PCH found by the text
    alone broke the builds once a copy was edited or touched (a fuzz run beside an edit of
    the runtime, a `git stash pop`: "file ... has been modified since the precompiled header")."""
    from transpiler.runtime import cpu_emulator as C

    cxx = C.find_compiler()
    if not C._clang_major(cxx):
        pytest.skip(f"the precompiled header is clang's ({cxx} builds without one)")
    monkeypatch.setenv("QD_CPU_CACHE", str(tmp_path / "cache"))
    here, header = C.HERE, C.HEADER
    other = tmp_path / "other_checkout"
    shutil.copytree(here, other, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(C, "HERE", other)
    monkeypatch.setattr(C, "HEADER", other / "qd_simt.h")
    src = 'extern "C" __global__ void plus_one(int* x) { x[threadIdx.x] += 1; }\n'
    C.build_module(src, "plus_one.cu")
    with open(other / "qd_simt.h", "a") as f:  # the other checkout's header is edited
        f.write("\n// edited\n")
    monkeypatch.setattr(C, "HERE", here)
    monkeypatch.setattr(C, "HEADER", header)
    module = C.build_module(src.replace("+= 1", "+= 2"), "plus_two.cu")
    x = np.arange(32, dtype=np.int32)
    module.launch("plus_one", 1, 32, [x])
    np.testing.assert_array_equal(x, np.arange(32) + 2)
    # A header rewritten with the same text (a `git checkout`, a reinstall) has a new time.
    monkeypatch.setattr(C, "HERE", other)
    monkeypatch.setattr(C, "HEADER", other / "qd_simt.h")
    text = (other / "qd_simt.h").read_text()
    C.build_module(src.replace("+= 1", "+= 3"), "plus_three.cu")
    time.sleep(0.01)
    (other / "qd_simt.h").write_text(text)
    module = C.build_module(src.replace("+= 1", "+= 4"), "plus_four.cu")
    module.launch("plus_one", 1, 32, [x])
    np.testing.assert_array_equal(x, np.arange(32) + 6)


@pytest.mark.toolchain
def test_the_compiler_is_asked_its_version_once_per_binary(tmp_path, monkeypatch):
    """The compiler's identity (part of every build's cache key) is asked of it once and then
    read from the cache, by the binary's identity: a first call whose build is cached runs
    no compiler at all. Another binary at the same path is asked again."""
    import os
    import subprocess

    from transpiler.runtime import cpu_emulator as emu

    monkeypatch.setenv("QD_CPU_CACHE", str(tmp_path))
    cxx = emu.find_compiler()
    monkeypatch.setattr(emu, "_compiler_ids", {})
    first = emu.compiler_id(cxx)
    assert first.startswith(cxx + "\n") and "version" in first
    asked = []
    real_run = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda cmd, *a, **kw: asked.append(cmd) or real_run(cmd, *a, **kw))
    monkeypatch.setattr(emu, "_compiler_ids", {})  # a new process
    assert emu.compiler_id(cxx) == first and asked == []
    fake = tmp_path / "bin" / "c++"  # a script at a path that answers like a compiler
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'fake version 1'\n")
    fake.chmod(0o755)
    assert emu.compiler_id(str(fake)) == f"{fake}\nfake version 1" and len(asked) == 1
    fake.write_text("#!/bin/sh\necho 'fake version 22'\n")  # replaced: other size and time
    os.utime(fake, ns=(1, 1))
    monkeypatch.setattr(emu, "_compiler_ids", {})
    assert emu.compiler_id(str(fake)) == f"{fake}\nfake version 22" and len(asked) == 2

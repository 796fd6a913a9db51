"""The CPU executor's plain modules (cpu_emulator: QD_EMU_PLAIN): a kernel whose tasks are all
plain loops runs each as a loop over its elements on the helper threads, and computes what
the SIMT emulator computes for the same text (``qd.init(arch="cpu", plain=False)``), on
random data; a task with block-level work keeps the emulator."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import transpiler as qd
from transpiler.runtime.cpu_emulator import KernelError

pytestmark = [pytest.mark.toolchain,
              pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                                 reason="needs a host C++20 compiler")]

DIALECTS = ["cuda", "hip"]
f32v = qd.types.ndarray(dtype=qd.f32, ndim=1)
i32v = qd.types.ndarray(dtype=qd.i32, ndim=1)
f32m = qd.types.ndarray(dtype=qd.f32, ndim=2)


@pytest.fixture(params=DIALECTS)
def dialect(request):
    yield request.param
    qd.init(arch="cpu")


def modes(monkeypatch) -> list:
    """Whether each module the backend loads is plain, in load order."""
    from transpiler.runtime import cpu_emulator as C

    seen = []
    real = C.CpuBackend.load

    def load(self, tr):
        program = real(self, tr)
        seen.append(program.module.plain)
        return program

    monkeypatch.setattr(C.CpuBackend, "load", load)
    return seen


def both(dialect: str, run, workers: int = 2) -> tuple:
    """``run()``'s result as a plain module and on the emulator."""
    out = []
    for plain in (True, False):
        qd.init(arch="cpu", dialect=dialect, plain=plain, workers=workers)
        out.append(run())
    return tuple(out)


@qd.kernel
def contend(keys: i32v, vals: i32v, bins: i32v, lo: i32v, hi: i32v, fsum: f32v, bits: i32v):
    for i in range(keys.shape[0]):
        k = keys[i] % 7
        qd.atomic_add(bins[k], vals[i])
        qd.atomic_min(lo[k], vals[i])
        qd.atomic_max(hi[k], vals[i])
        qd.atomic_add(fsum[k], qd.f32(vals[i] % 16))  # small integers: every order sums exactly
        qd.atomic_or(bits[k], 1 << (vals[i] % 31))
        qd.atomic_xor(bits[7 + k], vals[i])


def test_atomics_under_contention_match_the_emulator(dialect, monkeypatch):
    seen = modes(monkeypatch)
    rng = np.random.default_rng(5)
    n = 300_000  # several helper threads' shares, all on 7 bins
    keys, vals = rng.integers(0, 1 << 20, n).astype(np.int32), rng.integers(-1000, 1000, n).astype(np.int32)

    def run():
        out = [np.zeros(7, np.int32), np.full(7, 1 << 30, np.int32), np.full(7, -(1 << 30), np.int32),
               np.zeros(7, np.float32), np.zeros(14, np.int32)]
        contend(keys, vals, *out)
        return out

    plain, emulated = both(dialect, run)
    assert seen == [True, False]
    for a, b in zip(plain, emulated):
        np.testing.assert_array_equal(a, b)
    k = keys % 7
    np.testing.assert_array_equal(plain[0], [vals[k == j].sum() for j in range(7)])
    np.testing.assert_array_equal(plain[1], [vals[k == j].min() for j in range(7)])


@qd.kernel
def counted_slots(x: f32v, slot: i32v, count: i32v):
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            slot[i] = qd.atomic_add(count[0], 1)  # the old values: a permutation, in any order


def test_atomic_old_values_are_a_permutation(dialect):
    x = np.random.default_rng(9).random(200_001).astype(np.float32)

    def run():
        slot, count = np.full(x.size, -1, np.int32), np.zeros(1, np.int32)
        counted_slots(x, slot, count)
        return np.sort(slot[x > 0.5]), count[0]

    (a, na), (b, nb) = both(dialect, run)
    assert na == nb == (x > 0.5).sum()
    np.testing.assert_array_equal(a, np.arange(na))
    np.testing.assert_array_equal(b, np.arange(nb))


@qd.kernel
def stencil(u: f32m, v: f32m):
    for i, j in qd.ndrange((1, u.shape[0] - 1), (1, u.shape[1] - 1)):
        v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j]


@qd.kernel
def skip_and_stop(x: f32v, y: f32v, lim: qd.i32):
    for i in range(x.shape[0]):
        if x[i] < 0.25:
            continue  # the element's early end
        acc = 0.0
        for k in range(lim):  # a loop of its own, left by `break`
            if acc > x[i] * 3.0:
                break
            acc += x[i] * k
        y[i] = acc


@pytest.mark.parametrize("workers", [1, 3])
def test_loops_match_the_emulator_and_numpy(dialect, monkeypatch, workers):
    """A 2-D ndrange (odd extents: a partial last block) and a task whose elements leave
    early (`continue`) and run loops of their own (`break`): the same bits either way."""
    seen = modes(monkeypatch)
    rng = np.random.default_rng(13)
    u = rng.random((333, 517), dtype=np.float32)
    x = rng.random(100_003, dtype=np.float32)

    def run():
        v, y = np.zeros_like(u), np.full_like(x, -1.0)
        stencil(u, v)
        skip_and_stop(x, y, np.int32(9))
        return v, y

    (v1, y1), (v2, y2) = both(dialect, run, workers)
    assert seen == [True, True, False, False]
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_array_equal(y1, y2)
    want = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) - u[1:-1, 1:-1]
    np.testing.assert_allclose(v1[1:-1, 1:-1], want, rtol=1e-5, atol=1e-6)
    assert (v1[0] == 0).all() and (y1[x < 0.25] == -1.0).all() and (y1[x >= 0.25] >= 0).all()


@qd.kernel
def add_index(x: i32v):
    for i in range(x.shape[0]):
        x[i] += i % 1000


def test_a_range_past_the_capped_grid_is_covered(dialect):
    """More elements than MAX_BLOCKS blocks of threads: the planned grid's threads would each
    loop; a plain module launches one thread per element instead."""
    from transpiler.targets.target import MAX_BLOCKS

    n = MAX_BLOCKS * 128 + 12_345
    x0 = np.random.default_rng(1).integers(-5, 5, n).astype(np.int32)

    def run():
        x = x0.copy()
        add_index(x)
        return x

    plain, emulated = both(dialect, run)
    np.testing.assert_array_equal(plain, emulated)
    np.testing.assert_array_equal(plain, x0 + np.arange(n, dtype=np.int32) % 1000)


@qd.kernel
def total(x: f32v, s: f32v, m: i32v, b: i32v):
    for i in range(x.shape[0]):
        s[0] += x[i]
        qd.atomic_min(m[0], qd.i32(x[i] * 1000.0))
        qd.atomic_max(m[1], qd.i32(x[i] * 1000.0))
        qd.atomic_or(b[0], 1 << (qd.i32(x[i] * 1000.0) % 31))


@qd.kernel
def with_shared(x: f32v, y: f32v):
    qd.loop_config(block_dim=64)
    for i in range(x.shape[0]):
        tile = qd.simt.block.SharedArray((64,), qd.f32)
        t = qd.simt.block.thread_idx()
        tile[t] = x[i]
        qd.simt.block.sync()
        y[i] = tile[63 - t]


def test_block_level_tasks_keep_the_emulator(dialect, monkeypatch):
    """A kernel-scope reduction (its fold is block work: shared partials, a barrier, shuffles)
    and a task with a shared array run on the emulator, plain=True or not, with the same
    results; the reductions of each op exact on integer-valued data."""
    seen = modes(monkeypatch)
    rng = np.random.default_rng(17)
    x = (rng.integers(0, 1000, 64 * 999) / np.float32(1000)).astype(np.float32)

    def run():
        s, m, b, y = np.zeros(1, np.float32), np.array([1 << 30, -(1 << 30)], np.int32), np.zeros(1, np.int32), \
            np.zeros_like(x)
        total(x, s, m, b)
        with_shared(x, y)
        return s, m, b, y

    plain, emulated = both(dialect, run)
    assert seen == [False, False, False, False]
    for a, e in zip(plain, emulated):
        np.testing.assert_array_equal(a, e)
    ints = np.rint(x * 1000).astype(np.int64)
    assert plain[1].tolist() == [ints.min(), ints.max()]
    np.testing.assert_array_equal(plain[3], x.reshape(-1, 64)[:, ::-1].reshape(-1))


@qd.kernel
def divide(a: i32v, b: i32v, q: i32v):
    for i in range(a.shape[0]):
        q[i] = a[i] // b[i]


def test_a_fault_in_a_plain_module_names_its_thread(dialect):
    """The vectorized loop keeps its element in a register: the failed block runs again one
    thread at a time, and the message names the thread as the emulator's does."""
    n = 50_000
    a, b = np.arange(n, dtype=np.int32), np.ones(n, np.int32)
    b[77 * 128 + 45] = 0
    messages = []
    for plain in (True, False):
        qd.init(arch="cpu", dialect=dialect, plain=plain, workers=2)
        with pytest.raises(KernelError, match="integer division by zero") as info:
            divide(a, b, np.zeros_like(a))
        messages.append(str(info.value))
    assert "integer division by zero in thread 45 of block 77 of 391" in messages[0]
    assert messages[0] == messages[1]


@qd.kernel
def times(x: i32v, k: qd.i32):
    for i in range(x.shape[0]):
        x[i] = x[i] * k  # OVERFLOW


def test_debug_mode_still_reports_a_signed_overflow(dialect, monkeypatch, capfd):
    """A plain module has no signed-overflow trap (clang would not vectorize past it). Under
    qd.init(debug=True) the emitted text checks the multiply itself and reports it through the
    print buffer (which a plain loop writes as the emulator does), whether or not plain modules
    are on, with the same text."""
    import inspect

    seen = modes(monkeypatch)
    lines, first = inspect.getsourcelines(times.fn)
    line = first + next(k for k, text in enumerate(lines) if "# OVERFLOW" in text)
    x = np.ones(1000, np.int32)
    x[300] = 1 << 20
    said = []
    for plain in (True, False):
        qd.init(arch="cpu", dialect=dialect, debug=True, plain=plain)
        times(x.copy(), np.int32(1 << 12))
        said.append(capfd.readouterr().out)
    assert f"Multiplication overflow detected in {__file__}:{line}" in said[0]
    assert said[0] == said[1]
    qd.init(arch="cpu", dialect=dialect)
    y = x.copy()
    times(y, np.int32(3))
    np.testing.assert_array_equal(y, x * 3)
    assert seen == [True, False, True]


def test_kernels_binding_fields_run_as_plain_loops(dialect, monkeypatch):
    """Fields on the plain path: a struct-for over a vec3 field with a scalar argument, and a
    data-oriented kernel mixing a field, an ndarray and a vector field called twice with
    different scalars (once read back wrong after a Vulkan run in the same process, see
    tests/test_fields.py), computing what the emulator computes, after a Vulkan run."""
    rng = np.random.default_rng(3)
    pos0, vel0 = rng.random((1000, 3)).astype(np.float32), rng.standard_normal((1000, 3)).astype(np.float32)

    def run():
        pos, vel = qd.Vector.field(3, qd.f32, shape=1000), qd.Vector.field(3, qd.f32, shape=1000)
        pos.from_numpy(pos0)
        vel.from_numpy(vel0)
        a, b = qd.field(qd.f32, shape=10), qd.ndarray(qd.f32, (10,))

        @qd.kernel
        def step(dt: qd.f32):
            for i in pos:
                v = vel[i] + dt * qd.math.vec3(0.0, -9.8, 0.0)
                pos[i] = pos[i] + dt * v
                vel[i] = v

        @qd.kernel
        def bump(k: qd.f32, b: qd.types.ndarray(dtype=qd.f32, ndim=1)):
            for i in range(10):
                a[i] += k
                b[i] += 2 * k

        step(0.01)
        step(0.02)
        bump(1.5, b)
        bump(1.0, b)
        return pos.to_numpy(), vel.to_numpy(), a.to_numpy(), b.to_numpy()

    try:
        qd.init(arch=qd.vulkan)
        run()
    except Exception:  # noqa: BLE001 - no Vulkan device here: the CPU part still runs
        pass
    seen = modes(monkeypatch)
    plain, emulated = both(dialect, run)
    assert seen[:2] == [True, True] and not any(seen[2:])
    for got, want in zip(plain, emulated):
        np.testing.assert_array_equal(got, want)
    v = vel0 + np.float32(0.01) * np.array([0, -9.8, 0], np.float32)
    np.testing.assert_allclose(plain[1], v + np.float32(0.02) * np.array([0, -9.8, 0], np.float32), rtol=1e-6)
    assert (plain[2] == 2.5).all() and (plain[3] == 5.0).all()


# Kernel-scope reductions (frontend/kernel_scope.py: a block fold and one atomic per block),
# any dtype: a plain module runs each once per OS thread's share (qd_simt.h, run_share).
@qd.kernel
def sum_into(x: qd.types.ndarray(), out: qd.types.ndarray()):
    s = out[0]
    for i in range(x.shape[0]):
        s += x[i]
    out[0] = s


@qd.kernel
def min_into(x: qd.types.ndarray(), out: qd.types.ndarray()):
    m = out[0]
    for i in range(x.shape[0]):
        m = min(m, x[i])
    out[0] = m


@qd.kernel
def max_into(x: qd.types.ndarray(), out: qd.types.ndarray()):
    m = out[0]
    for i in range(x.shape[0]):
        qd.atomic_max(m, x[i])
    out[0] = m


@qd.kernel
def returned_sum(x: f32v) -> qd.f32:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]  # Quadrants' everyday kernel-scope sum, returned
    return s


@qd.kernel
def sum_and_max(x: f32v) -> qd.f32:
    s = 0.0
    m = 0.0
    for i in range(x.shape[0]):
        s += x[i]
        m = max(m, x[i])  # a second operation in the same epilogue: the emulator's
    return s + m


def reduction_shares(monkeypatch) -> list:
    """For each module the backend loads: whether it is plain, and the PlainOp of each task
    it runs once per OS thread's share (see _reduction_op)."""
    from transpiler.runtime import cpu_emulator as C

    seen = []
    real = C.CpuBackend.load

    def load(self, tr):
        program = real(self, tr)
        ops = [C._reduction_op(t, program.module.warp_size) for t in tr.ir.tasks]
        seen.append((program.module.plain, [op for op in ops if op is not None]))
        return program

    monkeypatch.setattr(C.CpuBackend, "load", load)
    return seen


# Sizes against 3 workers: fewer elements, as many, more, and several shares of at least
# ITERATIONS_PER_THREAD each (the last one partial).
SIZES = [1, 3, 5, 129, 3 * 32768 + 4097]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_kernel_scope_reductions_match_numpy(dialect, monkeypatch, dtype):
    """Sum, min and max into a kernel-scope variable, on random data, as plain modules and on
    the emulator: integers exact, floats exact where every order sums exactly (small
    integers) and within rounding of NumPy's sum otherwise (a share's partial is summed in
    vector lanes, as Quadrants' fast math does)."""
    seen = reduction_shares(monkeypatch)
    rng = np.random.default_rng(21)
    floating = np.issubdtype(dtype, np.floating)
    for n in SIZES:
        exact = rng.integers(-60, 60, n).astype(dtype)
        spread = rng.standard_normal(n).astype(dtype) if floating else rng.integers(-2**30, 2**30, n).astype(dtype)

        def run(exact=exact, spread=spread):
            out = []
            for x in (exact, spread):
                for kernel, start in ((sum_into, 7), (min_into, 10**6), (max_into, -10**6)):
                    o = np.array([start], dtype)
                    kernel(x, o)
                    out.append(o[0])
            return out

        plain, emulated = both(dialect, run, workers=3)
        for got in (plain, emulated):
            assert got[0] == exact.sum(dtype=np.float64 if floating else np.int64) + 7, (n, got)
            assert got[1:3] == [min(exact.min(), 10**6), max(exact.max(), -10**6)]
            assert got[4:6] == [min(spread.min(), 10**6), max(spread.max(), -10**6)]
            want = spread.astype(np.float64 if floating else np.int64).sum() + 7
            if floating:
                eps = np.finfo(dtype).eps
                assert abs(got[3] - want) <= 4 * eps * (np.abs(spread).sum() + 7), (n, got[3], want)
            else:
                assert got[3] == dtype(want), (n, got[3], want)  # (i32: wraps as the kernel's sum does)
    plain_modules = [s for s in seen if s[0]]
    assert len(plain_modules) == len(seen) // 2 and all(len(ops) == 1 for _, ops in plain_modules)


def test_kernel_scope_sums_run_as_plain_shares(dialect, monkeypatch):
    """Quadrants' returned kernel-scope sum takes the plain path, its reduction once per
    worker's share (one atomic each: the result is the sum of those partials), and a warm
    call on the same qd.ndarray (replayed, its scratch buffers zeroed again) sees new data."""
    seen = reduction_shares(monkeypatch)
    rng = np.random.default_rng(22)
    n = 4 * 32768 + 5
    x0, x1 = (rng.integers(0, 8, n).astype(np.float32) for _ in range(2))
    qd.init(arch="cpu", dialect=dialect, workers=3)
    x = qd.ndarray(qd.f32, (n,))
    got = []
    for data in (x0, x0, x1, x1):
        x.from_numpy(data)
        got.append(returned_sum(x))
    assert seen == [(True, [0])]
    assert got == [x0.sum(), x0.sum(), x1.sum(), x1.sum()]
    small = np.arange(5, dtype=np.float32)
    assert returned_sum(small) == 10.0 and returned_sum(small[:0]) == 0.0
    assert sum_and_max(small) == 14.0 and seen[-1] == (False, [])


@pytest.mark.parametrize("width", [4, 8, 16])
def test_narrow_subgroups_fold_more_partials_than_lanes(monkeypatch, width):
    """On a 4- or 8-lane subgroup a 128-thread block has more subgroups than a subgroup has
    lanes, and lane 0 also reads the slots the others publish, which a lone thread never
    writes: such a reduction keeps the emulator; on 16 lanes it runs per share. Both exact."""
    seen = reduction_shares(monkeypatch)
    x = np.random.default_rng(23).integers(-1000, 1000, 3 * 32768 + 11).astype(np.int32)
    qd.init(arch="cpu", subgroup_size=width, workers=3)
    try:
        for kernel, start, want in ((sum_into, 5, x.sum() + 5), (min_into, 10**6, x.min())):
            out = np.array([start], np.int32)
            kernel(x, out)
            assert out[0] == want
    finally:
        qd.init(arch="cpu")
    assert seen == [(width == 16, [0] if width == 16 else []), (width == 16, [1] if width == 16 else [])]


# Scatters whose only writes to memory are atomics with unused results: a plain module runs
# each chunk of a block's elements first as a prefetch pass (qd_simt.h, run_plain; see
# _prefetchable), then for real.
f64v = qd.types.ndarray(dtype=qd.f64, ndim=1)


@qd.kernel
def scatter_all(idx: i32v, x: f32v, k: i32v, fs: f32v, ks: i32v, ds: f64v, lo: f32v, hi: f32v, klo: i32v,
                khi: i32v, count: i32v):
    for i in range(x.shape[0]):
        j = idx[i]
        fs[j] += x[i]
        ks[j] += k[i]
        ds[j] += qd.f64(x[i]) * 0.5
        qd.atomic_min(lo[j], x[i])
        qd.atomic_max(hi[j], x[i])
        qd.atomic_min(klo[j], k[i])
        qd.atomic_max(khi[j], k[i])
        qd.atomic_add(count[j % 5], 1)  # an atomic whose (returned) result is unused


@qd.kernel
def scatter_and_store(idx: i32v, x: f32v, out: f32v, seen: f32v):
    for i in range(x.shape[0]):
        out[idx[i]] += x[i]
        seen[i] = x[i]  # a plain store: a prefetch pass would write it too


@qd.kernel
def scatter_reading_old(idx: i32v, x: f32v, out: f32v, aux: f32v):
    for i in range(x.shape[0]):
        old = qd.atomic_add(out[idx[i]], x[i])
        if old > 2.0:  # the result read: a prefetch pass would see a made-up one
            aux[idx[i] % 3] += 1.0


@qd.kernel
def scatter_reading_target(idx: i32v, x: f32v, out: f32v):
    for i in range(x.shape[0]):
        out[idx[i]] += out[i % 7] * 0.0 + x[i]  # reads what its atomics write: no prefetch pass


def prefetch_paths(monkeypatch) -> list:
    """For each module the backend loads: whether it is plain, whether each task qualifies
    for prefetch passes, and how many of its entries the build marked so."""
    from transpiler.runtime import cpu_emulator as C

    seen = []
    real = C.CpuBackend.load

    def load(self, tr):
        program = real(self, tr)
        wrapper = (program.module.build_dir / "wrapper.cpp").read_text()
        seen.append((program.module.plain, [C._prefetchable(t) for t in tr.ir.tasks],
                     wrapper.count("QD_EMU_PREFETCH_ENTRY(")))
        return program

    monkeypatch.setattr(C.CpuBackend, "load", load)
    return seen


# Fewer elements than a chunk (64), one more, no multiple of it, several helper threads' shares.
SCATTER_SIZES = [1, 65, 1001, 3 * 32768 + 77]


def test_scatters_with_prefetch_passes_match_numpy(dialect, monkeypatch):
    """`+=` of f32, i32 and f64, atomic min and max, and an atomic add whose result is unused,
    to random elements with many collisions: as plain modules (with prefetch passes) and on
    the emulator, exactly NumPy's np.add.at / minimum.at / maximum.at (floats hold small
    integers and halves: every order of additions sums exactly)."""
    seen = prefetch_paths(monkeypatch)
    rng = np.random.default_rng(46)
    for n in SCATTER_SIZES:
        m = max(1, n // 8)
        idx = rng.integers(0, m, n).astype(np.int32)
        x = rng.integers(-50, 50, n).astype(np.float32)
        x[x == 0] = 7  # (a doubled update of 0 would go unseen)
        k = rng.integers(-2**20, 2**20, n).astype(np.int32)

        def run(idx=idx, x=x, k=k, m=m):
            out = [np.zeros(m, np.float32), np.zeros(m, np.int32), np.zeros(m, np.float64),
                   np.full(m, 1e9, np.float32), np.full(m, -1e9, np.float32), np.full(m, 2**30, np.int32),
                   np.full(m, -2**30, np.int32), np.zeros(5, np.int32)]
            scatter_all(idx, x, k, *out)
            return out

        want = [np.zeros(m, np.float32), np.zeros(m, np.int32), np.zeros(m, np.float64),
                np.full(m, 1e9, np.float32), np.full(m, -1e9, np.float32), np.full(m, 2**30, np.int32),
                np.full(m, -2**30, np.int32), np.zeros(5, np.int32)]
        for arr, ufunc, v in ((0, np.add, x), (1, np.add, k), (2, np.add, x.astype(np.float64) * 0.5),
                              (3, np.minimum, x), (4, np.maximum, x), (5, np.minimum, k), (6, np.maximum, k)):
            ufunc.at(want[arr], idx, v)
        np.add.at(want[7], idx % 5, 1)
        for got in both(dialect, run):
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w, err_msg=f"n={n}")
    assert seen == [(True, [True], 1), (False, [True], 0)] * len(SCATTER_SIZES)


def test_only_atomic_only_tasks_take_prefetch_passes(dialect, monkeypatch):
    """A task with a plain store, one that reads an atomic's result and one that reads an
    array its atomics write run without prefetch passes, and compute what NumPy does."""
    seen = prefetch_paths(monkeypatch)
    rng = np.random.default_rng(47)
    n, m = 5000, 37
    idx = rng.integers(0, m, n).astype(np.int32)
    x = rng.integers(0, 4, n).astype(np.float32)
    qd.init(arch="cpu", dialect=dialect, workers=2)
    out, stored = np.zeros(m, np.float32), np.zeros(n, np.float32)
    scatter_and_store(idx, x, out, stored)
    want = np.zeros(m, np.float32)
    np.add.at(want, idx, x)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(stored, x)
    out, aux = np.zeros(m, np.float32), np.zeros(3, np.float32)
    scatter_reading_old(idx, x, out, aux)
    np.testing.assert_array_equal(out, want)
    assert aux.sum() > 0  # (which elements saw an old value above 2 depends on the order)
    out = np.zeros(m, np.float32)
    scatter_reading_target(idx, x, out)
    np.testing.assert_array_equal(out, want)
    assert seen == [(True, [False], 0)] * 3

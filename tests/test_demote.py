"""Atomic demotion (transpiler/passes/demote.py): an atomic on an element only its own thread
reaches is a plain read-modify-write on every target, one that another thread may reach stays
atomic, and both compute what NumPy does on every executor. Each statement below is marked
`# demoted` or `# atomic`: the text test reads the marks and checks every target's lines for it."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import transpiler as qd
from conftest import assert_compiles, target_names

vec3s = qd.types.ndarray(dtype=qd.math.vec3, ndim=1)
f32v = qd.types.ndarray(dtype=qd.f32, ndim=1)
i32v = qd.types.ndarray(dtype=qd.i32, ndim=1)
f32m = qd.types.ndarray(dtype=qd.f32, ndim=2)

N_FIELD = 300
FP = qd.Vector.field(3, dtype=qd.f32, shape=N_FIELD)
FV = qd.Vector.field(3, dtype=qd.f32, shape=N_FIELD)


@qd.kernel
def particles(p: vec3s, v: vec3s, a: qd.f32, dt: qd.f32):
    for i in p:
        v[i] += a * dt  # demoted
        p[i] += v[i] * dt  # demoted


@qd.kernel
def particles_atomic(p: vec3s, v: vec3s, a: qd.f32, dt: qd.f32, seen: f32v):
    """The same update, with one more access to p and v at element 0: not provably private."""
    for i in p:
        v[i] += a * dt  # atomic
        p[i] += v[i] * dt  # atomic
        if i == 0:
            seen[0] = p[0][0] + v[0][1]


@qd.kernel
def particles_field(a: qd.f32, dt: qd.f32):
    for i in FP:
        FV[i] += a * dt  # demoted
        FP[i] += FV[i] * dt  # demoted


@qd.kernel
def scatter(a: f32v, idx: i32v, x: f32v):
    for i in x:
        a[idx[i]] += x[i]  # atomic


@qd.kernel
def neighbours(a: i32v, b: i32v, c: i32v):
    for i in range(a.shape[0] - 1):
        a[i] += b[i]  # atomic
        a[i + 1] += c[i]  # atomic


@qd.kernel
def total(x: i32v) -> qd.i32:
    s = 0
    for i in x:
        s += x[i]  # atomic
    return s


@qd.kernel
def nested(g: f32m, h: f32m, row: f32v):
    for i in range(g.shape[0]):
        for j in range(g.shape[1]):
            g[i, j] += h[i, j]  # demoted
            row[i] += h[i, j]  # demoted


@qd.kernel
def grid2(g: f32m, h: f32m, count: i32v):
    for i, j in qd.ndrange(g.shape[0], g.shape[1]):
        g[i, j] += h[i, j]  # demoted
        count[i] += 1  # atomic


@qd.kernel
def offsets_and_results(a: i32v, b: i32v, olds: i32v, maxes: i32v):
    for i in range(a.shape[0] - 1):
        a[i + 1] += b[i]  # demoted
    for i in range(b.shape[0]):
        olds[i] = qd.atomic_add(b[i], i)  # demoted
        old = qd.atomic_max(a[i], 5)  # demoted
        maxes[i] = old * 2
    b[0] += 100  # demoted


@qd.kernel
def block_own(a: i32v, out: i32v):
    qd.loop_config(block_dim=64)
    for i in range(a.shape[0]):
        sh = qd.simt.block.SharedArray((64,), qd.i32)
        t = qd.simt.block.thread_idx()
        sh[t] = a[i]
        qd.atomic_add(sh[t], 3)  # demoted
        out[i] = sh[t]


@qd.kernel
def float_min_once(c: f32v, tickets: f32v):
    for i in c:
        qd.atomic_min(c[i], qd.atomic_add(tickets[0], 1.0))  # (the line holds the operand's atomic)


@qd.kernel
def inner_offset(a: i32v):
    for i in range(a.shape[0] - 4):
        for k in range(3):
            a[i + k] += 1  # atomic


@qd.kernel
def fenced(a: i32v):
    for i in a:
        a[i] += 1  # atomic
        qd.simt.grid.mem_fence()


@qd.kernel
def diagonal(g: qd.types.ndarray(dtype=qd.i32, ndim=2)):
    for i, j in g:
        g[i, i] += 1  # atomic
        g[j, j] += 1  # atomic


KERNELS = [particles, particles_atomic, particles_field, scatter, neighbours, total, nested, grid2,
           offsets_and_results, block_own, float_min_once, inner_offset, fenced, diagonal]
SOURCE = Path(__file__).name


def _marks(kernel) -> dict[int, str]:
    """Python line -> "demoted" or "atomic", for the marked statements of ``kernel``."""
    lines, first = inspect.getsourcelines(kernel.fn)
    return {first + n: m.group(1) for n, text in enumerate(lines) if (m := re.search(r"# (demoted|atomic)$", text))}


def _lines_of(sources: dict[str, str], line: int) -> list[str]:
    tag = f"// {SOURCE}:{line}"
    return [t for text in sources.values() for t in text.splitlines() if t.rstrip().endswith(tag)]


@pytest.mark.toolchain
@pytest.mark.parametrize("target", target_names())
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.fn.__name__)
def test_atomic_is_there_exactly_where_not_provably_private(kernel, target):
    tr = qd.translate(kernel, target, warn=False)
    for line, mark in _marks(kernel).items():
        code = _lines_of(tr.sources, line)
        assert code, f"{kernel.fn.__name__}: nothing emitted for line {line}"
        atomic = [t for t in code if "atomic" in t.split("//")[0].lower()]
        if mark == "atomic":
            assert atomic, f"line {line} must stay atomic on {target}:\n" + "\n".join(code)
        else:
            assert not atomic, f"line {line} must be a plain update on {target}:\n" + "\n".join(atomic)
    if "demoted" in _marks(kernel).values():
        assert "not atomic: " in "".join(tr.sources.values())
    assert_compiles(target, tr, kernel.fn.__name__)


def test_the_rules():
    """What is private and what is not, on the IR (no executor)."""
    from transpiler.pipeline import lower

    def atomics(k) -> int:
        from transpiler.ir import nodes as ir
        from transpiler.ir.walk import all_exprs

        return sum(isinstance(e, ir.Atomic) for t in lower(k).tasks for e in all_exprs(t.code()))

    assert atomics(particles) == 0 and atomics(particles_atomic) == 6
    assert atomics(scatter) == 1 and atomics(neighbours) == 2
    assert atomics(grid2) == 1 and atomics(nested) == 0 and atomics(block_own) == 0
    assert atomics(total) == 1  # the reduction's one atomic per block
    assert atomics(float_min_once) == 1  # the operand's, on another array
    assert atomics(inner_offset) == 1  # i + k: k is an inner loop's, threads overlap
    assert atomics(fenced) == 1  # a task that orders memory publishes to observers outside it
    assert atomics(diagonal) == 2  # g[i, i] leaves j out: threads (i, 0) and (i, 1) share it


def _vec3(rng, n):
    return rng.standard_normal((n, 3)).astype(np.float32)


def _particles_reference(p, v, a, dt):
    v = v + np.float32(a) * np.float32(dt)
    return p + v * np.float32(dt), v


def test_particles_on_vec3_ndarrays(executor, rng):
    n, a, dt = 1000, 9.8, 0.01
    p0, v0 = _vec3(rng, n), _vec3(rng, n)
    want_p, want_v = _particles_reference(p0, v0, a, dt)
    p, v = p0.copy(), v0.copy()
    particles(p, v, a, dt)
    pa, va, seen = p0.copy(), v0.copy(), np.zeros(1, np.float32)
    particles_atomic(pa, va, a, dt, seen)
    np.testing.assert_allclose(p, want_p, rtol=1e-6)
    np.testing.assert_allclose(v, want_v, rtol=1e-6)
    assert np.array_equal(p, pa) and np.array_equal(v, va)  # demoted and atomic: the same bits
    assert seen[0] == pa[0, 0] + va[0, 1]


def test_particles_on_vec3_fields(executor, rng):
    a, dt = -3.5, 0.02
    p0, v0 = _vec3(rng, N_FIELD), _vec3(rng, N_FIELD)
    FP.from_numpy(p0)
    FV.from_numpy(v0)
    particles_field(a, dt)
    want_p, want_v = _particles_reference(p0, v0, a, dt)
    np.testing.assert_allclose(FP.to_numpy(), want_p, rtol=1e-6)
    np.testing.assert_allclose(FV.to_numpy(), want_v, rtol=1e-6)


def test_scatter_and_neighbour_stay_atomic(executor, rng):
    n = 5000
    idx = rng.integers(0, 37, n).astype(np.int32)  # many threads on each element
    x = rng.integers(-8, 9, n).astype(np.float32)  # small integers: every order sums exactly
    a = np.zeros(37, np.float32)
    scatter(a, idx, x)
    want = np.zeros(37, np.float32)
    np.add.at(want, idx, x)
    assert np.array_equal(a, want)
    a0, b, c = (rng.integers(-1000, 1000, n).astype(np.int32) for _ in range(3))
    a = a0.copy()
    neighbours(a, b, c)
    want = a0.copy()
    want[:-1] += b[:-1]
    want[1:] += c[:-1]
    assert np.array_equal(a, want)


def test_kernel_scope_sum_stays_a_reduction(executor, rng):
    x = rng.integers(-1000, 1000, 100_000).astype(np.int32)
    assert total(x) == int(x.sum())


def test_nested_loop_and_ndrange(executor, rng):
    g0, h = rng.standard_normal((37, 29)).astype(np.float32), rng.standard_normal((37, 29)).astype(np.float32)
    g, row = g0.copy(), np.zeros(37, np.float32)
    nested(g, h, row)
    want_row = np.zeros(37, np.float32)
    for j in range(29):  # the thread's order: j ascending
        want_row += h[:, j]
    assert np.array_equal(g, g0 + h) and np.array_equal(row, want_row)
    g, count = g0.copy(), np.zeros(37, np.int32)
    grid2(g, h, count)
    assert np.array_equal(g, g0 + h) and (count == 29).all()


def test_offsets_results_and_serial(executor, rng):
    n = 1000
    a0, b0 = rng.integers(-10, 10, n).astype(np.int32), rng.integers(-1000, 1000, n).astype(np.int32)
    a, b, olds, maxes = a0.copy(), b0.copy(), np.zeros(n, np.int32), np.zeros(n, np.int32)
    offsets_and_results(a, b, olds, maxes)
    shifted = a0.copy()
    shifted[1:] += b0[:-1]
    assert np.array_equal(olds, b0)
    assert np.array_equal(maxes, shifted * 2)
    assert np.array_equal(a, np.maximum(shifted, 5))
    want_b = b0 + np.arange(n, dtype=np.int32)
    want_b[0] += 100
    assert np.array_equal(b, want_b)


def test_an_operand_read_three_times_is_evaluated_once(executor, rng):
    c0 = rng.standard_normal(500).astype(np.float32) * 1000
    c, tickets = c0.copy(), np.zeros(1, np.float32)
    float_min_once(c, tickets)
    assert tickets[0] == 500  # one ticket a thread: float min's operand was not evaluated again
    taken = c[c != c0]
    assert (c <= c0).all() and (taken == np.round(taken)).all() and (taken >= 0).all()


def test_shared_element_of_the_thread(executor, rng):
    a = rng.integers(-1000, 1000, 1000).astype(np.int32)
    out = np.zeros_like(a)
    block_own(a, out)
    assert np.array_equal(out, a + 3)

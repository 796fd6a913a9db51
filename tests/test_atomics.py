"""Atomics on every target: every accepted op x dtype x memory space compiled by the real
toolchain, contention runs with exact results on every executor, and the lowering table
in docs/lowering.md kept current."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import transpiler as qd
from conftest import load_module, target_names
from transpiler.pipeline import translate_ir
from transpiler.lowering_tables import all_atomics_kernel, markdown
from transpiler.toolchains import check_sources

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.toolchain
@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("target", target_names())
def test_every_accepted_atomic_compiles(target, space):
    kernel = all_atomics_kernel(target, space)
    ctx = translate_ir(kernel, target)
    sources, manifest = ctx.sources, ctx.manifest
    for v in check_sources(target, sources, manifest):
        assert v.ok, f"{v.tool} rejected {v.file}:\n{v.message}\n{sources[v.file]}"


def test_lowering_doc_is_current():
    doc = ROOT / "docs" / "lowering.md"
    assert doc.read_text() == markdown() + "\n", "regenerate: python cli.py targets --markdown > docs/lowering.md"


# ----------------------------------------------------------------------------- contention

i32v = qd.types.ndarray(dtype=qd.i32, ndim=1)
u32v = qd.types.ndarray(dtype=qd.u32, ndim=1)
f32v = qd.types.ndarray(dtype=qd.f32, ndim=1)


@qd.kernel
def int_ops(vals: i32v, acc: i32v, tickets: i32v, swapped: i32v, winners: i32v):
    for i in range(vals.shape[0]):
        v = vals[i]
        tickets[i] = qd.atomic_add(acc[0], 1)
        qd.atomic_sub(acc[1], v)
        qd.atomic_min(acc[2], v)
        qd.atomic_max(acc[3], v)
        qd.atomic_and(acc[4], ~(1 << (i % 31)))
        qd.atomic_or(acc[5], 1 << (i % 31))
        qd.atomic_xor(acc[6], v)
        swapped[i] = qd.atomic_exchange(acc[7], i + 1)
        old = qd.atomic_cas(acc[8], 0, i + 1)
        winners[i] = 1 if old == 0 else 0


@qd.kernel
def mul_ops(n: qd.i32, f: f32v, k: i32v):
    for i in range(n):
        qd.atomic_mul(f[0], 2.0)
        qd.atomic_mul(k[0], 3)


@qd.kernel
def float_minmax(vals: f32v, acc: f32v):
    for i in range(vals.shape[0]):
        qd.atomic_min(acc[0], vals[i])
        qd.atomic_max(acc[1], vals[i])
        acc[2] += vals[i]


@qd.kernel
def exchange_floats(vals: f32v, slot: f32v, got: f32v):
    for i in range(vals.shape[0]):
        got[i] = qd.atomic_exchange(slot[0], vals[i])


def test_integer_atomics_under_contention(executor, rng):
    n = 4000
    vals = rng.integers(-10**6, 10**6, n).astype(np.int32)
    acc = np.array([0, 5, 2**31 - 1, -2**31, -1, 0, 0, 0, 0], np.int32)
    tickets, swapped, winners = (np.full(n, -7, np.int32) for _ in range(3))
    int_ops(vals, acc, tickets, swapped, winners)
    np.testing.assert_array_equal(np.sort(tickets), np.arange(n))         # tickets are a permutation
    assert acc[0] == n
    assert acc[1] == np.int32(5 - vals.astype(np.int64).sum())
    assert acc[2] == vals.min() and acc[3] == vals.max()
    mask = 0
    for i in range(n):
        mask |= 1 << (i % 31)
    assert acc[4] == np.int32(~mask) and acc[5] == np.int32(mask)
    assert acc[6] == np.bitwise_xor.reduce(vals)
    # Exchange loses no value: the olds plus the final value are the initial 0 and every i + 1.
    np.testing.assert_array_equal(np.sort(np.append(swapped, acc[7])), np.arange(n + 1))
    assert winners.sum() == 1 and acc[8] == np.nonzero(winners)[0][0] + 1   # CAS: a single winner


def test_mul_by_two_is_exact(executor):
    f = np.array([1.0], np.float32)
    k = np.array([1], np.int32)
    mul_ops(19, f, k)
    assert f[0] == 2.0**19 and k[0] == 3**19


def test_float_min_max_and_add(executor, rng):
    vals = rng.standard_normal(3000).astype(np.float32)
    acc = np.array([np.inf, -np.inf, 0.0], np.float32)
    float_minmax(vals, acc)
    assert acc[0] == vals.min() and acc[1] == vals.max()
    np.testing.assert_allclose(acc[2], vals.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)


def test_float_min_max_nan_rule(executor):
    """minNum / maxNum: a NaN operand loses to a number; NaN stays only when all are NaN."""
    vals = np.array([np.nan, 3.0, np.nan, -2.0], np.float32)
    acc = np.array([np.nan, np.nan, 0.0], np.float32)
    float_minmax(vals, acc)
    assert acc[0] == -2.0 and acc[1] == 3.0
    all_nan = np.full(4, np.nan, np.float32)
    acc = np.array([np.nan, np.nan, 0.0], np.float32)
    float_minmax(all_nan, acc)
    assert math.isnan(acc[0]) and math.isnan(acc[1])


def test_float_exchange_loses_nothing(executor, rng):
    vals = rng.standard_normal(2000).astype(np.float32)
    slot = np.array([0.5], np.float32)
    got = np.zeros_like(vals)
    exchange_floats(vals, slot, got)
    np.testing.assert_array_equal(np.sort(np.append(got, slot[0])), np.sort(np.append(vals, 0.5)))


def test_fences_and_volatile_handoff(executor, rng):
    from conftest import ROOT as R, load_module

    handoff = load_module(R / "tests" / "kernels" / "memorder.py").handoff
    n = 1000
    data, flag, out = np.zeros(n, np.float32), np.zeros(n, np.int32), np.zeros(n, np.float32)
    handoff(data, flag, out)
    np.testing.assert_array_equal(out, np.arange(n, dtype=np.float32) * 2)
    assert flag.all()


def test_deprecated_fence_aliases_still_work_and_warn():
    @qd.kernel
    def old_names(a: f32v):
        for i in range(a.shape[0]):
            a[i] = 1.0
            qd.simt.block.mem_sync()
            qd.simt.grid.memfence()

    with pytest.warns(DeprecationWarning) as record:
        src = "".join(qd.translate(old_names, "cuda").sources.values())
    messages = [str(w.message) for w in record]
    assert any("block.mem_sync() is deprecated; use qd.simt.block.mem_fence()" in m for m in messages)
    assert any("grid.memfence() is deprecated; use qd.simt.grid.mem_fence()" in m for m in messages)
    assert "__threadfence_block();" in src and "__threadfence();" in src


sum_field = qd.field(qd.f32, shape=())
count_field = qd.field(qd.i32, shape=())


@qd.kernel
def taichi_sum(x: qd.types.ndarray(dtype=qd.f32, ndim=1), stats: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        sum_field[None] += x[i]                  # Taichi's everyday sum: a block fold, one atomic per block
        if x[i] > 0:
            count_field[None] += 1
            qd.atomic_max(stats[1], x[i])
        stats[0] -= x[i] * 0.5
        qd.atomic_min(stats[2], x[i])


@qd.kernel
def read_back_in_loop(x: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        out[0] += x[i]
        out[1 + i % 2] = out[0] * 0.0 + 1.0     # out is named again: its updates stay atomics


def test_updates_of_one_element_fold_per_block(executor):
    n = 1 << 20
    x = (np.arange(n, dtype=np.float32) + 0.5)
    x[::3] *= -1
    sum_field[None] = 0.0
    count_field[None] = 0
    stats = np.array([0.0, -np.inf, np.inf], np.float32)
    taichi_sum(x, stats)
    exact = x.astype(np.float64).sum()
    # one contended atomic per element in f32 drifts far from this (Quadrants' tolerance: 3e-4)
    assert abs(sum_field[None] - exact) <= 3e-4 * abs(x).astype(np.float64).sum() / 64
    assert count_field[None] == (x > 0).sum()
    assert stats[0] == pytest.approx(-0.5 * exact, rel=1e-5) and stats[1] == x.max() and stats[2] == x.min()


def test_what_folds_and_what_stays_an_atomic():
    text = next(iter(qd.translate(taichi_sum, "cuda").sources.values()))
    assert "sum_field_partial += x[i];" in text and text.count("atomicAdd(&sum_field[0]") == 1
    assert "stats_partial" in text and "count_field_partial" in text
    text = next(iter(qd.translate(read_back_in_loop, "cuda").sources.values()))
    assert "out_partial" not in text and "atomicAdd(&out[0], x[i]);" in text
    block = load_module(Path(__file__).parent / "features" / "block_reduce.py").block_sum
    text = next(iter(qd.translate(block, "cuda").sources.values()))
    assert "total_partial" not in text  # it folds by block itself: its one atomic per block is kept as written


ATOMICS = {"add": qd.atomic_add, "max": qd.atomic_max}
add_into = ATOMICS["add"]


@qd.kernel
def aliased_sums(x: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    s = 0.0
    for i in range(x.shape[0]):
        add_into(out[0], x[i])                   # an atomic under another name (Quadrants' tests spell
        ATOMICS["max"](out[1], x[i])             # their reductions through such tables)
        add_into(s, x[i] * 2.0)
    return s


def test_an_atomic_under_another_name_folds_too(executor):
    n = 1 << 20
    x = np.arange(n, dtype=np.float32) + 0.5
    out = np.array([0.0, -np.inf], np.float32)
    doubled = aliased_sums(x, out)
    exact = x.astype(np.float64).sum()
    assert abs(out[0] - exact) <= 3e-4 * exact / 64 and out[1] == x.max()
    assert abs(doubled - 2 * exact) <= 3e-4 * 2 * exact / 64
    text = next(iter(qd.translate(aliased_sums, "cuda").sources.values()))
    assert "out_partial" in text and "out_partial_1" in text


center = qd.Vector.field(3, qd.f32, shape=())


@qd.kernel
def centroid_of(p: qd.types.ndarray(dtype=qd.math.vec3, ndim=1)):
    for i in range(p.shape[0]):
        center[None] += p[i] / p.shape[0]        # each component folds per block


def test_vector_element_updates_fold_per_component(executor, rng):
    p = rng.standard_normal((5000, 3)).astype(np.float32)
    center[None] = [0.0, 0.0, 0.0]
    centroid_of(p)
    np.testing.assert_allclose(center.to_numpy(), p.astype(np.float64).mean(0), atol=1e-6)
    text = next(iter(qd.translate(centroid_of, "cuda").sources.values()))
    assert text.count("atomicAdd(&center[") == 3 and "center_partial_2 +=" in text

"""qd.random: the same numbers on every executor (and so every target: the generator is
written once, in the kernel language), reproducible from qd.init(random_seed=...), new
numbers on every launch, and good enough statistics for Monte Carlo: the moments of a
uniform distribution and chi-square tests of equal buckets, per dtype."""
from __future__ import annotations

import numpy as np
import pytest

import transpiler as qd
from conftest import init_executor, target_names

N = 1 << 16


@qd.kernel
def draw(f: qd.types.ndarray(dtype=qd.f32, ndim=1), d: qd.types.ndarray(dtype=qd.f64, ndim=1),
         i: qd.types.ndarray(dtype=qd.i32, ndim=1), u: qd.types.ndarray(dtype=qd.u64, ndim=1)) -> None:
    for k in range(f.shape[0]):
        f[k] = qd.random()
        d[k] = qd.random(qd.f64)
        i[k] = qd.random(qd.i32)
        u[k] = qd.random(qd.u64)


@qd.kernel
def draws_in_a_loop(out: qd.types.ndarray(dtype=qd.f32, ndim=2)) -> None:
    for k in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[k, j] = qd.random(float)


def arrays():
    return (np.zeros(N, np.float32), np.zeros(N, np.float64), np.zeros(N, np.int32), np.zeros(N, np.uint64))


def chi_square(samples: np.ndarray, buckets: int) -> float:
    counts = np.bincount(samples, minlength=buckets)
    expected = samples.size / buckets
    return float(((counts - expected) ** 2 / expected).sum())


# chi-square critical values at p = 0.001 for buckets - 1 degrees of freedom
CHI2_255 = 330.5
CHI2_15 = 37.7


def test_uniform_statistics(executor):
    init_executor(executor, random_seed=1)
    f, d, i, u = arrays()
    draw(f, d, i, u)
    for x in (f, d):
        assert 0.0 <= x.min() and x.max() < 1.0
        assert abs(x.mean() - 0.5) < 4 * (1 / 12 / N) ** 0.5
        assert abs(x.var() - 1 / 12) < 0.003
        assert chi_square((x * 256).astype(np.int64), 256) < CHI2_255
    assert chi_square((i.view(np.uint32) >> 24).astype(np.int64), 256) < CHI2_255  # the top byte
    assert chi_square((i.view(np.uint32) & 0xF).astype(np.int64), 16) < CHI2_15     # and the low bits
    assert chi_square((u >> np.uint64(60)).astype(np.int64), 16) < CHI2_15
    assert abs(np.corrcoef(f[:-1], f[1:])[0, 1]) < 0.02  # neighbouring iterations are independent
    assert len(np.unique(i)) > N * 0.99


def test_the_same_numbers_on_every_executor():
    results = []
    for arch, options in (("vulkan", {}), ("cpu", {}), ("cpu", {"dialect": "hip"})):
        qd.init(arch=arch, random_seed=42, **options)
        out = arrays()
        draw(*out)
        results.append(out)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


def test_seeds_launches_and_calls_give_new_numbers():
    qd.init(arch="cpu", random_seed=5)
    first, again = arrays(), arrays()
    draw(*first)
    draw(*again)
    assert not np.array_equal(first[0], again[0])  # a new launch, new numbers
    qd.init(arch="cpu", random_seed=5)
    replay = arrays()
    draw(*replay)
    np.testing.assert_array_equal(first[0], replay[0])  # the same seed, the same numbers
    qd.init(arch="cpu", random_seed=6)
    other = arrays()
    draw(*other)
    assert not np.array_equal(first[0], other[0])
    grid = np.zeros((64, 16), np.float32)
    draws_in_a_loop(grid)
    assert len(np.unique(grid)) == grid.size  # successive calls in one iteration differ


@pytest.mark.parametrize("target", target_names())
def test_the_seed_is_a_parameter_the_manifest_names(target):
    tr = qd.translate(draws_in_a_loop, target)  # f32 only: Metal has no f64
    seed = [p for p in tr.manifest["params"] if p.get("role") == "random_seed"]
    assert len(seed) == 1 and seed[0]["dtype"] == "u32"


@qd.func
def jitter_inline(scale: qd.f32) -> qd.f32:
    return qd.random() * scale


@qd.func
def point_inline(scale: qd.f32):
    return qd.math.vec2(jitter_inline(scale), qd.random())


@qd.real_func
def jitter(scale: qd.f32) -> qd.f32:
    return qd.random() * scale


@qd.real_func
def point(scale: qd.f32) -> qd.math.vec2:   # a real function calling one that draws: both get the stream
    return qd.math.vec2(jitter(scale), qd.random())


def make_sampler(inline: bool):
    pt, jt = (point_inline, jitter_inline) if inline else (point, jitter)

    @qd.kernel
    def sampler(out: qd.types.ndarray(dtype=qd.f32, ndim=2)) -> None:
        for k in range(out.shape[0]):
            a = qd.random()
            p = pt(2.0)
            out[k, 0] = a
            out[k, 1] = p.x
            out[k, 2] = p.y
            out[k, 3] = jt(3.0) + qd.random()

    return sampler


SAMPLERS = {inline: make_sampler(inline) for inline in (True, False)}


def test_real_functions_draw_from_their_callers_stream(executor):
    got = {}
    for inline, kernel in SAMPLERS.items():
        init_executor(executor, random_seed=11)
        got[inline] = np.zeros((4096, 4), np.float32)
        kernel(got[inline])
    np.testing.assert_array_equal(got[False], got[True])  # the same draws, in the same order
    x = got[False]
    assert 0 <= x[:, 0].min() and x[:, 0].max() < 1 and 0 <= x[:, 1].min() and x[:, 1].max() < 2
    assert abs(x[:, 1].mean() - 1.0) < 0.05 and abs(x[:, 3].mean() - 2.0) < 0.06
    assert len(np.unique(x[:, :3])) > 0.99 * x[:, :3].size


@pytest.mark.toolchain
@pytest.mark.parametrize("target", target_names("references"))
def test_real_functions_that_draw_compile(target):
    from conftest import assert_compiles

    tr = qd.translate(SAMPLERS[False], target)
    text = "".join(tr.sources.values())
    assert {"cuda": "uint32_t& rng", "hip": "uint32_t& rng", "glsl": "inout uint rng",
            "msl": "thread uint& rng"}.get(target, "rng") in text  # a target added later: its own spelling
    assert_compiles(target, tr)


@qd.real_func
def draws_recursively(n: qd.i32) -> qd.f32:
    r = 0.0
    if n > 0:
        r = draws_recursively(n - 1) + qd.random()
    return r


@qd.kernel
def calls_recursive_drawer(out: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> None:
    for k in range(out.shape[0]):
        out[k] = draws_recursively(3)


def test_a_recursive_real_function_that_draws_is_refused_where_it_is_defined():
    with pytest.raises(qd.TranspileError, match=r"qd.random\(\) in recursive @qd.real_func `draws_recursively` "
                                                r"is not supported") as info:
        qd.translate(calls_recursive_drawer, "cuda")
    assert info.value.loc.line == draws_recursively.fn.__code__.co_firstlineno + 1

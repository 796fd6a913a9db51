"""Debug mode (qd.init(debug=True), translate(..., debug=True)): a failed `assert` in a kernel
stops the call with an AssertionError that carries its message, formatted with the failing
thread's values, on Vulkan and both CPU executors; without debug mode asserts compile away.
Every target's debug-mode source is compiled by its toolchain."""
from __future__ import annotations

import numpy as np
import pytest

import transpiler as qd
from conftest import init_executor
from transpiler.toolchains import check_sources

grid = qd.field(qd.i32, shape=(6, 5))


@qd.func
def checked_ratio(a: qd.f32, b: qd.f32) -> qd.f32:
    assert b != 0.0, f"dividing {a:.2f} by zero"
    return a / b


@qd.kernel
def validate(x: qd.types.ndarray(dtype=qd.f32, ndim=1), big: qd.types.ndarray(dtype=qd.i64, ndim=1),
             out: qd.types.ndarray(dtype=qd.f32, ndim=1), limit: qd.f32):
    for i in range(x.shape[0]):
        assert x[i] <= limit, "x[%d] = %.3f exceeds %g" % (i, x[i], limit)
        assert big[i] >= 0, "big[{}] is {} (negative)".format(i, big[i])
        out[i] = checked_ratio(x[i], x[i] - 1.0)
    for i, j in grid:
        assert grid[i, j] < 100, f"grid[{i}, {j}] = {grid[i, j]}"
    assert out.shape[0] > 0


@qd.kernel
def always_fails():
    assert 0


def run_validate(x, big, limit=10.0):
    out = np.zeros_like(x)
    validate(x, big, out, limit)
    return out


def test_failed_asserts_raise_with_the_failing_threads_values(executor, rng):
    init_executor(executor, debug=True)
    grid.fill(0)
    x = rng.uniform(2.0, 5.0, 300).astype(np.float32)
    big = rng.integers(0, 2**40, 300)
    out = run_validate(x, big)  # every check holds: the kernel computes as without them
    np.testing.assert_allclose(out, x / (x - np.float32(1.0)), rtol=1e-6)
    bad = x.copy()
    bad[137] = 12.5
    with pytest.raises(AssertionError, match=r"^x\[137\] = 12\.500 exceeds 10 \(.*test_debug_mode.py:\d+: assert "
                                             r"x\[i\] <= limit\)$"):
        run_validate(bad, big)
    wide = big.copy()
    wide[42] = -(2**40) - 7  # a 64-bit value: both words back
    with pytest.raises(AssertionError, match=r"big\[42\] is -1099511627783 \(negative\)"):
        run_validate(x, wide)
    one = x.copy()
    one[7] = 1.0
    with pytest.raises(AssertionError, match=r"^dividing 1\.00 by zero "):  # in an inlined @qd.func
        run_validate(one, big)
    grid[4, 3] = 250
    with pytest.raises(AssertionError, match=r"grid\[4, 3\] = 250"):
        run_validate(x, big)
    grid[4, 3] = 0
    with pytest.raises(AssertionError, match=r"^Assertion failure: .*test_debug_mode.py:\d+: assert 0$"):
        always_fails()
    many = np.full(300, 50.0, np.float32)  # every thread fails: one report, one of theirs
    with pytest.raises(AssertionError, match=r"x\[\d+\] = 50\.000 exceeds 10"):
        run_validate(many, big)


def test_without_debug_mode_asserts_compile_away(executor, rng):
    grid.fill(0)
    x = np.full(16, 50.0, np.float32)
    out = run_validate(x, rng.integers(0, 9, 16))  # qd.init without debug: nothing checked
    np.testing.assert_allclose(out, x / np.float32(49.0))
    always_fails()
    assert "atomicCAS" not in next(iter(qd.translate(validate, "cuda").sources.values()))


def test_the_manifest_describes_each_check():
    tr = qd.translate(validate, "cuda", debug=True)
    report = tr.manifest["asserts"]
    assert report["param"] == "qd_assert"
    checks = report["checks"]
    assert [c["id"] for c in checks] == [1, 2, 3, 4, 5]
    assert checks[0]["args"] == ["i32", "f32", "f32"] and checks[1]["args"] == ["i32", "i64"]
    assert checks[0]["parts"][0] == {"text": "x["} and checks[0]["parts"][1] == {"arg": 0, "spec": "%d",
                                                                               "style": "percent"}
    assert checks[4]["what"] == "assert out.shape[0] > 0" and checks[4]["parts"] == []
    param = next(p for p in tr.manifest["params"] if p["name"] == "qd_assert")
    assert param["role"] == "assert"


@qd.kernel
def too_many(x: qd.types.ndarray(dtype=qd.f64, ndim=1)):
    for i in range(x.shape[0]):
        assert x[i] > 0, "%f %f %f %f %f %f %f %f %f" % (x[i], x[i], x[i], x[i], x[i], x[i], x[i], x[i], x[i])


def test_an_assert_message_with_too_many_values_is_located():
    with pytest.raises(qd.TranspileError, match=r"test_debug_mode.py:\d+:\d+: error: an assert message in a kernel "
                                                r"formats at most 16 32-bit values \(this one 18\)"):
        qd.translate(too_many, "cuda", debug=True)


@pytest.mark.toolchain
@pytest.mark.parametrize("target", qd.TARGETS)
def test_debug_mode_source_compiles(target):
    tr = qd.translate(validate, target, debug=True, warn=False)
    for v in check_sources(target, tr.sources, tr.manifest):
        assert v.ok, f"{v.tool} rejected {v.file}:\n{v.message}"

"""Debug mode (qd.init(debug=True), translate(..., debug=True)): a failed `assert` in a kernel
stops the call with an AssertionError that carries its message, formatted with the failing
thread's values, on Vulkan and both CPU executors; without debug mode asserts compile away.
Every target's debug-mode source is compiled by its toolchain."""
from __future__ import annotations

import numpy as np
import pytest

import transpiler as qd
from conftest import init_executor, target_names
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
    with pytest.raises(AssertionError, match=r"^Assertion failure: .*test_debug_mode.py:\d+: assert 0$") as info:
        always_fails()
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, qd.QuadrantsAssertionError)  # as Quadrants'

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
    assert [c["id"] for c in checks] == list(range(1, len(checks) + 1))
    asserts = [c for c in checks if c["what"].startswith("assert ")]
    assert [c["what"] for c in asserts] == ["assert x[i] <= limit", "assert big[i] >= 0", "assert b != 0.0",
                                            "assert grid[i, j] < 100", "assert out.shape[0] > 0"]
    assert asserts[0]["args"] == ["i32", "f32", "f32"] and asserts[1]["args"] == ["i32", "i64"]
    assert asserts[0]["parts"][0] == {"text": "x["} and asserts[0]["parts"][1] == {"arg": 0, "spec": "%d",
                                                                                 "style": "percent"}
    assert asserts[4]["parts"] == []
    # and the index checks: big[i] and out[i] against their shapes, once each; x[i] runs over x's
    # own range and grid[i, j] over grid's, which needs none
    assert sorted(c["what"] for c in checks if not c["what"].startswith("assert ")) == [
        "index into `big`", "index into `out`"]
    param = next(p for p in tr.manifest["params"] if p["name"] == "qd_assert")
    assert param["role"] == "assert"


@qd.kernel
def typed_message(h: qd.types.ndarray(dtype=qd.u32, ndim=1), small: qd.types.ndarray(dtype=qd.i8, ndim=1)):
    for i in range(h.shape[0]):
        flag = small[i] < 0
        assert h[i] < 4000000000, f"h[{i}]={h[i]} small={small[i]} flag={flag} half={qd.f16(0.5)}"


def test_each_scalar_type_comes_back_in_a_message(executor):
    """u32 above 2**31, a negative i8, a bool and an f16, decoded from the report's words."""
    init_executor(executor, debug=True)
    h = np.array([5, 4_100_000_000], np.uint32)
    with pytest.raises(AssertionError, match=r"^h\[1\]=4100000000 small=-7 flag=True half=0.5 "):
        typed_message(h, np.array([3, -7], np.int8))


@qd.kernel
def gather(src: qd.types.ndarray(dtype=qd.f32, ndim=1), idx: qd.types.ndarray(dtype=qd.i32, ndim=1),
           dst: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(dst.shape[0]):
        if idx[i] >= 0 and src[idx[i]] > 0.0:  # src[idx[i]] only read when idx[i] >= 0: checked then
            dst[i] = src[idx[i]] * 2.0


@qd.kernel
def shift_columns(k: qd.i32):
    for i, j in grid:
        grid[i, j + k] += 1


def test_out_of_bound_accesses_raise_instead_of_touching_other_memory(executor, rng):
    init_executor(executor, debug=True)
    src = rng.uniform(-1.0, 1.0, 8).astype(np.float32)
    idx = rng.integers(-3, 8, 50).astype(np.int32)
    dst = np.zeros(50, np.float32)
    gather(src, idx, dst)  # negative indices skipped by the condition: nothing out of bounds
    safe = np.clip(idx, 0, 7)
    np.testing.assert_array_equal(dst, np.where((idx >= 0) & (src[safe] > 0), src[safe] * 2, 0))
    idx[31] = 9
    src[:] = np.abs(src) + 0.5
    with pytest.raises(AssertionError, match=r"^Out of bound access to `src` with indices \[9\] \(shape \[8\]\) "
                                             r"\(.*test_debug_mode.py:\d+: index into `src`\)$"):
        gather(src, idx, dst)
    grid.fill(0)
    shift_columns(0)
    shift_columns(-1 + 1)
    assert (grid.to_numpy() == 2).all()
    with pytest.raises(AssertionError, match=r"Out of bound access to `grid` with indices \[\d, 5\] \(shape \[6, 5\]\)"):
        shift_columns(1)
    with pytest.raises(AssertionError, match=r"Out of bound access to `grid` with indices \[\d, -2\]"):
        shift_columns(-2)
    text = next(iter(qd.translate(gather, "cuda").sources.values()))
    assert "qd_assert" not in text  # no checks without debug mode


@qd.kernel
def pick_component(k: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(k.shape[0]):
        v = qd.Vector([1.5, 2.5, 3.5])
        v[k[i]] += 10.0
        out[i] = v[k[i]] + v[(k[i] + 1) % 3]


def test_run_time_indices_into_local_vectors_are_checked(executor, rng):
    init_executor(executor, debug=True)
    k = rng.integers(0, 3, 40).astype(np.int32)
    out = np.zeros(40, np.float32)
    pick_component(k, out)
    base = np.array([1.5, 2.5, 3.5], np.float32)
    np.testing.assert_allclose(out, base[k] + 10 + base[(k + 1) % 3])
    k[17] = 3
    with pytest.raises(AssertionError, match=r"^Out of bound access to `v` with index \[3\] \(it has 3\)"):
        pick_component(k, out)


def test_python_scope_field_indices_are_checked():
    with pytest.raises(IndexError, match=r"index 6 is out of range for dimension 0 of the field \(shape \(6, 5\)\)"):
        grid[6, 0] = 1
    with pytest.raises(AssertionError, match=r"index -1 is out of range for dimension 1"):  # not NumPy's last one
        grid[0, -1]


@qd.kernel
def too_many(x: qd.types.ndarray(dtype=qd.f64, ndim=1)):
    for i in range(x.shape[0]):
        assert x[i] > 0, "%f %f %f %f %f %f %f %f %f" % (x[i], x[i], x[i], x[i], x[i], x[i], x[i], x[i], x[i])


@qd.kernel
def fields_without_values(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        assert x[i] > 0, "x[%d] = %f" % (i,)


@qd.kernel
def values_without_fields(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        assert x[i] > 0, "x = %f" % (x[i], i)


def test_an_assert_message_with_too_many_values_is_located():
    with pytest.raises(qd.TranspileError, match=r"test_debug_mode.py:\d+:\d+: error: an assert message in a kernel "
                                                r"formats at most 16 32-bit values \(this one 18\)"):
        qd.translate(too_many, "cuda", debug=True)
    for kernel, says in ((fields_without_values, "more % fields than values"),
                         (values_without_fields, "fewer % fields than values")):
        with pytest.raises(qd.TranspileError, match=rf"test_debug_mode.py:\d+:\d+: error: the assert message has {says}"):
            qd.translate(kernel, "cuda", debug=True)


@pytest.mark.toolchain
@pytest.mark.parametrize("target", target_names())
def test_debug_mode_source_compiles(target):
    tr = qd.translate(validate, target, debug=True, warn=False)
    for v in check_sources(target, tr.sources, tr.manifest):
        assert v.ok, f"{v.tool} rejected {v.file}:\n{v.message}"

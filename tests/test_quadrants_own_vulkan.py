"""What running Quadrants' own test files on Vulkan (scripts/quadrants_tests.py -e vulkan) found
different there, checked with kernels of our own against NumPy on random data on every executor:

- ``copy.deepcopy`` of a ``qd.ndarray``: on Vulkan its storage is the executor's mapped device
  memory, owned by the executor (which holds modules and cannot be pickled); the copy is a new
  ndarray the executor allocates, with the same elements, and independent of the original.
"""
import copy

import numpy as np
import pytest

import transpiler as qd


@qd.kernel
def scale_rows(a: qd.types.ndarray(), k: qd.f32):
    for i in range(a.shape[0]):
        a[i] = a[i] * k


def test_deepcopy_of_an_ndarray_is_independent(executor, rng):
    n = 37
    values = rng.standard_normal((n, 3)).astype(np.float32)
    x = qd.Vector.ndarray(3, qd.f32, n, needs_grad=True)
    x.from_numpy(values)
    grads = rng.standard_normal((n, 3)).astype(np.float32)
    x.grad.from_numpy(grads)
    y = copy.deepcopy(x)
    assert (y.shape, y.element_type, y.n) == (x.shape, x.element_type, x.n)
    scale_rows(y, 3.0)  # a kernel writes the copy: the original keeps its values
    np.testing.assert_array_equal(x.to_numpy(), values)
    np.testing.assert_allclose(y.to_numpy(), values * np.float32(3.0), rtol=1e-6)
    x.from_numpy(-values)  # and writing the original leaves the copy alone
    np.testing.assert_allclose(y.to_numpy(), values * np.float32(3.0), rtol=1e-6)
    np.testing.assert_array_equal(y.grad.to_numpy(), grads)
    assert y.grad is not x.grad


def test_deepcopy_of_a_scalar_ndarray_keeps_its_dtype(executor, rng):
    values = rng.integers(-2**31, 2**31, (5, 7), dtype=np.int32)
    x = qd.ndarray(qd.i32, (5, 7))
    x.from_numpy(values)
    y = copy.deepcopy(x)
    x[2, 3] = 0
    assert y.dtype == qd.i32 and y[2, 3] == values[2, 3]
    np.testing.assert_array_equal(y.to_numpy(), values)


def test_deprecated_subgroup_aliases_warn_once_in_python_scope(monkeypatch):
    """As Quadrants' own tests check: one DeprecationWarning per process over many calls, and
    each call forwarded to the replacement as the namespace has it at the call."""
    import warnings

    sg = qd.simt.subgroup
    for old, new, arg in (("barrier", "sync", ()), ("memory_barrier", "mem_fence", ()),
                          ("ballot_full_subgroup", "ballot", (1,))):
        setattr(sg, f"_{old}_deprecation_warned", False)
        calls = []
        monkeypatch.setattr(sg, new, lambda *a, new=new: calls.append((new, a)) or 7)
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always", DeprecationWarning)
            results = [getattr(sg, old)(*arg) for _ in range(3)]
        found = [str(r.message) for r in records if issubclass(r.category, DeprecationWarning)]
        assert found == [f"qd.simt.subgroup.{old}() is deprecated; use qd.simt.subgroup.{new}()"]
        assert calls == [(new, arg)] * 3 and results == [7, 7, 7]


@qd.kernel
def ballots(pred: qd.types.ndarray(qd.i32, 1), old: qd.types.ndarray(qd.i32, 1), new: qd.types.ndarray(qd.i32, 1)):
    for i in range(pred.shape[0]):
        qd.simt.subgroup.barrier()
        old[i] = qd.i32(qd.simt.subgroup.ballot_full_subgroup(pred[i]) & 0x7FFFFFFF)
        qd.simt.subgroup.memory_barrier()
        new[i] = qd.i32(qd.simt.subgroup.ballot(pred[i]) & 0x7FFFFFFF)


@pytest.mark.filterwarnings("ignore:.*is deprecated:DeprecationWarning")
def test_deprecated_subgroup_aliases_run_as_their_replacements(executor, rng):
    pred = rng.integers(0, 2, 256, dtype=np.int32)
    old, new = np.zeros(256, np.int32), np.zeros(256, np.int32)
    ballots(pred, old, new)
    np.testing.assert_array_equal(old, new)
    lane = np.arange(256) % {"vulkan": 8, "cpu-hip": 64}.get(executor, 32)  # the lanes of a subgroup: in order
    own = lane < 31  # (the bits kept)
    np.testing.assert_array_equal((new[own] >> lane[own]) & 1, pred[own])


# An f16 atomic on a shared array (Quadrants' test_shared_array_float_atomics): GLSL has no
# 16-bit atomics and cannot view shared memory as words, so such an array holds each element in
# a uint of its own and the update is a compare-and-swap loop on it. Positive quarter-integers keep
# every partial sum exact in f16, so the result is the same in whatever order the threads add.
BLOCK = 64


@qd.kernel
def shared_f16_atomics(x: qd.types.ndarray(qd.f32, 1), out: qd.types.ndarray(qd.f32, 2),
                       olds: qd.types.ndarray(qd.f32, 1)):
    qd.loop_config(block_dim=BLOCK)
    for i in range(x.shape[0]):
        tid = i % BLOCK
        sh = qd.simt.block.SharedArray((4, BLOCK), qd.f16)
        v = qd.cast(x[i], qd.f16)
        for k in qd.static(range(4)):
            sh[k, tid] = v
        qd.simt.block.sync()
        olds[i] = qd.atomic_add(sh[0, 0], v)
        qd.atomic_sub(sh[1, 1], v)
        qd.atomic_min(sh[2, 2], v)
        qd.atomic_max(sh[3, 3], v)
        qd.simt.block.sync()
        for k in qd.static(range(4)):
            out[i, k] = sh[k, k]


def test_f16_atomics_on_a_shared_array(executor, rng):
    blocks = 5
    x = (rng.integers(1, 16, blocks * BLOCK) * 0.25).astype(np.float32)
    out = np.zeros((x.size, 4), np.float32)
    olds = np.zeros(x.size, np.float32)
    shared_f16_atomics(x, out, olds)
    b = x.reshape(blocks, BLOCK)
    want = np.stack([b[:, 0] + b.sum(1), b[:, 1] - b.sum(1), b.min(1), b.max(1)], 1)
    np.testing.assert_array_equal(out.reshape(blocks, BLOCK, 4), np.repeat(want[:, None], BLOCK, 1))
    # What each thread's add saw: with positive values, the partial sums in increasing order,
    # so sorted, their steps (and the last one to the total) are the block's values.
    o = np.sort(olds.reshape(blocks, BLOCK), 1)
    np.testing.assert_array_equal(o[:, 0], b[:, 0])
    steps = np.concatenate([np.diff(o, axis=1), want[:, :1] - o[:, -1:]], 1)
    np.testing.assert_array_equal(np.sort(steps, 1), np.sort(b, 1))


@pytest.mark.toolchain
def test_f16_shared_atomics_pass_glslang_and_spirv_val():
    from conftest import assert_compiles

    tr = qd.translate(shared_f16_atomics, "glsl")
    (src,) = tr.sources.values()
    assert "shared uint sh[4 * 64];" in src and "atomicCompSwap(sh[" in src
    assert tr.manifest["entry_points"][0]["shared_bytes"] == 4 * 4 * BLOCK
    assert_compiles("glsl", tr)


# `x ** n`, a float base and an integer exponent known at run time (Quadrants' test_pow
# float_base_int_exp): Quadrants multiplies it out by squaring (its DemoteOperations pass); the
# target's pow (lavapipe's GLSL pow is exp2(n * log2(x)), off by ~8 ulp at 6.66 ** 9) differs.
@qd.kernel
def float_int_powers(x: qd.types.ndarray(qd.f32, 1), n: qd.types.ndarray(qd.i32, 1),
                     x64: qd.types.ndarray(qd.f64, 1), n64: qd.types.ndarray(qd.i64, 1),
                     out: qd.types.ndarray(qd.f32, 1), out64: qd.types.ndarray(qd.f64, 1)):
    for i in range(x.shape[0]):
        out[i] = x[i] ** n[i]
        out64[i] = x64[i] ** n64[i]


def squaring_pow(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Quadrants' definition in NumPy, in the base's type: each product rounded as it is made."""
    result, base, e = np.ones_like(x), x.copy(), np.abs(n)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        while (e > 0).any():
            odd = (e & 1) == 1
            result[odd] *= base[odd]
            base *= base
            e >>= 1
        return np.where(n < 0, x.dtype.type(1) / result, result)


def test_float_base_to_a_run_time_integer_power_multiplies_out(executor, rng):
    size = 2000
    x = (rng.standard_normal(size) * 4).astype(np.float32)
    x[:8] = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 6.66, -6.66]
    n = rng.integers(-40, 41, size).astype(np.int32)
    n[:8] = [-3, 3, 2**31 - 1, -7, -2, 3, 9, -9]
    x64 = rng.standard_normal(size) * 4
    n64 = rng.integers(-300, 301, size)
    out, out64 = np.zeros(size, np.float32), np.zeros(size)
    float_int_powers(x, n, x64, n64, out, out64)
    np.testing.assert_array_equal(out, squaring_pow(x, n))
    np.testing.assert_array_equal(out64, squaring_pow(x64, n64))
    assert out[6] == np.float32(25779113.0)  # 6.66 ** 9, where lavapipe's pow gave 25779082

"""Groups and tiles wider than the subgroup the code is specialized to: qd.simt.subgroup's
tiled operations with 2**log2_size past the subgroup's width, and Tile16x16 / Tile32x32 on
narrower subgroups, carried out by the block's subgroups together through shared memory
and barriers. The results must be a native-width group's: NumPy on random data at every
group width up to the block, on every executor at subgroup widths 8, 16, 32 and 64, every
target's output compiled by its toolchain, and the path named in the emitted code."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import transpiler as qd
from conftest import assert_compiles
from test_subgroup_library import N, DTYPES, broadcast, expected, groups, random_inputs, sort_pairs, tiled, width

subgroup = qd.simt.subgroup

# (executor, qd.init options): lavapipe's 8 lanes, the CUDA text narrowed to 8 and 16 for the
# emulator and at its 32, the HIP text at wave32 and wave64.
WIDE_EXECUTORS = {"vulkan": {"arch": "vulkan"}, "cpu-cuda-8": {"arch": "cpu", "subgroup_size": 8},
                  "cpu-cuda-16": {"arch": "cpu", "subgroup_size": 16}, "cpu-cuda": {"arch": "cpu"},
                  "cpu-hip-32": {"arch": "cpu", "dialect": "hip", "wave32": True},
                  "cpu-hip": {"arch": "cpu", "dialect": "hip"}}
BLOCK_LOG2 = 7  # the kernels' block of 128 threads: the widest group


@pytest.fixture(params=list(WIDE_EXECUTORS))
def wide_executor(request):
    qd.init(**WIDE_EXECUTORS[request.param])
    return request.param


def wide_widths() -> range:
    """The group widths past the subgroup, up to the block."""
    return range(width().bit_length(), BLOCK_LOG2 + 1)


# ----------------------------------------------------------------------------- subgroup library

@pytest.mark.toolchain
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_wide_groups_match_numpy(wide_executor, rng, dtype):
    bitwise = np.dtype(dtype).kind != "f"
    src, mul, heads = random_inputs(rng, dtype)
    for log2 in wide_widths():
        n = 1 << log2
        out = np.zeros((N, 14), dtype)
        votes = np.zeros((N, 3), np.int32)
        tiled(src, mul, heads, out, votes, log2, bitwise)
        for c, want in expected(src, mul, heads, n, dtype, bitwise).items():
            np.testing.assert_array_equal(groups(out[:, c], n), want, err_msg=f"group of {n}, column {c}")
        hrows, rows = groups(heads, n) != 0, groups(src, n)
        for c, want in enumerate((hrows.all(axis=1), hrows.any(axis=1), (rows == rows[:, :1]).all(axis=1))):
            np.testing.assert_array_equal(groups(votes[:, c], n), broadcast(want, n).astype(np.int32),
                                          err_msg=f"group of {n}, vote {c}")


@pytest.mark.toolchain
@pytest.mark.parametrize("dtype", (np.int32, np.float32), ids=lambda d: np.dtype(d).name)
def test_wide_bitonic_sort_matches_numpy(wide_executor, rng, dtype):
    for log2 in wide_widths():
        n = 1 << log2
        keys = rng.integers(-20, 20, N).astype(dtype)  # many ties: broken by value
        values = rng.permutation(N).astype(np.int32)
        k, v = keys.copy(), values.copy()
        sort_pairs(k, v, log2, False)
        for g, (kr, vr) in enumerate(zip(groups(keys, n), groups(values, n))):
            order = np.lexsort((vr, kr))
            np.testing.assert_array_equal(groups(k, n)[g], kr[order], err_msg=f"group of {n}: keys")
            np.testing.assert_array_equal(groups(v, n)[g], vr[order], err_msg=f"group of {n}: values")


@qd.kernel
def float_sums(src: qd.types.ndarray(qd.f32, ndim=1), out: qd.types.ndarray(qd.f32, ndim=2), log2: qd.template()):
    qd.loop_config(block_dim=128)
    for i in range(src.shape[0]):
        out[i, 0] = subgroup.reduce_add_tiled(src[i], log2)
        out[i, 1] = subgroup.inclusive_add_tiled(src[i], log2)
        out[i, 2] = subgroup.exclusive_mul_tiled(src[i], log2)


@pytest.mark.toolchain
def test_wide_float_sums_of_random_reals(wide_executor, rng):
    """Non-integer data: the same sums as NumPy's to rounding (the order of the additions is
    the subgroups' tree, then the partials in order)."""
    src = rng.uniform(0.5, 1.5, N).astype(np.float32)
    for log2 in wide_widths():
        n = 1 << log2
        out = np.zeros((N, 3), np.float32)
        float_sums(src, out, log2)
        rows = groups(src.astype(np.float64), n)
        np.testing.assert_allclose(groups(out[:, 0], n), broadcast(rows.sum(axis=1), n), rtol=1e-5)
        np.testing.assert_allclose(groups(out[:, 1], n), np.cumsum(rows, axis=1), rtol=1e-5)
        excl = np.cumprod(np.concatenate([np.ones((rows.shape[0], 1)), rows[:, :-1]], axis=1), axis=1)
        np.testing.assert_allclose(groups(out[:, 2], n), excl, rtol=1e-4)


# ----------------------------------------------------------------------------- translation

@qd.kernel
def sums(src: qd.types.ndarray(qd.i32, ndim=1), log2: qd.template(), block: qd.template()):
    qd.loop_config(block_dim=block)
    for i in range(src.shape[0]):
        src[i] = subgroup.reduce_add_tiled(src[i], log2)


@qd.kernel
def divergent(src: qd.types.ndarray(qd.i32, ndim=1), log2: qd.template()):
    qd.loop_config(block_dim=128)
    for i in range(src.shape[0]):
        if src[i] > 0:
            src[i] = subgroup.inclusive_add_tiled(src[i], log2)


@pytest.mark.parametrize("log2,block", [(6, 96), (8, 128)])
def test_a_block_that_is_not_a_whole_number_of_groups_is_located(log2, block):
    with pytest.raises(qd.TranspileError) as info:
        qd.translate(sums, "cuda", template_args={"log2": log2, "block": block})
    err = str(info.value)
    assert f"log2_size={log2} spans {1 << log2} lanes, more than the 32-lane subgroup" in err, err
    assert f"the block of {block} threads is not a whole number of groups" in err, err
    assert f"use qd.loop_config(block_dim=N) with N a multiple of {1 << log2}" in err, err
    assert info.value.loc.line == sums.fn.__code__.co_firstlineno + 4


def test_a_wide_group_under_divergent_control_flow_is_located():
    """The wide path has block barriers: reached by some threads only, it would deadlock (a
    native group's subgroup collective is refused there too, for its lanes)."""
    for log2, what in ((3, "subgroup.inclusive_add() is reached only by some lanes of the subgroup"),
                       (5, "block.sync() is reached only by some threads of the block")):
        with pytest.raises(qd.TranspileError) as info:
            qd.translate(divergent, "glsl", template_args={"log2": log2}, subgroup_size=8)
        assert info.value.loc.line == divergent.fn.__code__.co_firstlineno + 5
        assert what in str(info.value) and "the condition at line" in str(info.value), str(info.value)


def test_the_path_is_named_in_the_emitted_code():
    types = {"src": qd.types.ndarray(qd.i32, ndim=1), "mul": qd.types.ndarray(qd.i32, ndim=1),
             "out": qd.types.ndarray(qd.i32, ndim=2)}
    for target, options, lanes in (("glsl", {"subgroup_size": 8}, 8), ("cuda", {}, 32), ("msl", {}, 32),
                                   ("hip", {}, 64)):
        narrow = qd.translate(tiled, target, template_args={"log2": lanes.bit_length() - 1, "bitwise": True},
                              arg_types=types, **options)
        wide = qd.translate(tiled, target, template_args={"log2": 7, "bitwise": True}, arg_types=types, **options)
        narrow_text, text = "\n".join(narrow.sources.values()), "\n".join(wide.sources.values())
        assert "subgroups combine their shares" not in narrow_text
        assert (f"// reduce_all_add_tiled: a group of 128 lanes on {lanes}-lane subgroups: {128 // lanes} subgroups "
                "combine their shares through shared memory and block barriers") in text, target
        assert text.count("subgroups combine their shares") == 17, target  # every call of the kernel


COMPILE_VARIANTS = [("cuda", {}), ("hip", {}), ("hip", {"wave32": True}), ("msl", {}),
                    *(("glsl", {"subgroup_size": n}) for n in (8, 16, 32))]


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("variant", COMPILE_VARIANTS, ids=lambda v: v[0] + "".join(f"-{k}={x}" for k, x in v[1].items()))
@pytest.mark.parametrize("dtype", (qd.i32, qd.f32), ids=lambda d: d.name)
def test_wide_groups_compile(variant, dtype):
    target, options = variant
    if target == "hip" and shutil.which("hipcc") is None:
        pytest.skip("needs hipcc")
    types = {"src": qd.types.ndarray(dtype, ndim=1), "mul": qd.types.ndarray(dtype, ndim=1),
             "out": qd.types.ndarray(dtype, ndim=2)}
    tr = qd.translate(tiled, target, template_args={"log2": 7, "bitwise": dtype is qd.i32}, arg_types=types, **options)
    assert "subgroups combine their shares" in "\n".join(tr.sources.values())
    assert_compiles(target, tr)
    sort = qd.translate(sort_pairs, target, template_args={"log2": 7, "whole": False},
                        arg_types={"keys": qd.types.ndarray(dtype, ndim=1)}, **options)
    assert_compiles(target, sort)

"""qd.simt.warp, CUDA's legacy warp API as Quadrants keeps it: native on CUDA, on HIP with
each half of a wave64 one 32-lane warp (masks and all), and a located error naming the
portable qd.simt.subgroup spelling on GLSL and Metal. Run on the CPU executors (CUDA text at
32 lanes, HIP text at 64 and 32) against NumPy; compiled by NVRTC, hipcc and hipRTC."""
from __future__ import annotations

import numpy as np
import pytest

import transpiler as qd
from conftest import assert_compiles

warp = qd.simt.warp
FULL = 0xFFFFFFFF


@qd.kernel
def full_mask(a: qd.types.ndarray(qd.i32, ndim=1), f: qd.types.ndarray(qd.f32, ndim=1),
              out: qd.types.ndarray(qd.i32, ndim=2), outf: qd.types.ndarray(qd.f32, ndim=2)):
    qd.loop_config(block_dim=64)
    for i in range(a.shape[0]):
        v = a[i]
        m = qd.u32(0xFFFFFFFF)
        out[i, 0] = warp.all_nonzero(m, v)
        out[i, 1] = warp.any_nonzero(m, v > 6)
        out[i, 2] = warp.unique(m, v > 100)
        out[i, 3] = warp.unique(m, v > 4)
        out[i, 4] = warp.ballot(v > 4)
        out[i, 5] = warp.shfl_sync_i32(m, v, 3)
        out[i, 6] = warp.shfl_up_i32(m, v, 1)
        out[i, 7] = warp.shfl_down_i32(m, v, 2)
        out[i, 8] = warp.shfl_xor_i32(m, v, 5)
        warp.sync(m)
        outf[i, 0] = warp.shfl_sync_f32(m, f[i], 7)
        outf[i, 1] = warp.shfl_up_f32(m, f[i], 2)
        outf[i, 2] = warp.shfl_down_f32(m, f[i], 1)


@qd.kernel
def matches(a: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.u32, ndim=2)):
    qd.loop_config(block_dim=64)
    for i in range(a.shape[0]):
        v = a[i]
        out[i, 0] = warp.match_any(0xFFFFFFFF, v % 3)
        out[i, 1] = warp.match_all(0xFFFFFFFF, v // 1000)
        out[i, 2] = warp.match_all(0xFFFFFFFF, v)
        out[i, 3] = warp.active_mask()


@qd.kernel
def half_warp(a: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i32, ndim=2)):
    """Only the low 16 lanes take part, naming themselves in the mask."""
    qd.loop_config(block_dim=32)
    for i in range(a.shape[0]):
        lane = qd.simt.subgroup.invocation_id()
        out[i, 0] = -1
        out[i, 1] = -1
        if lane < 16:
            out[i, 0] = warp.shfl_xor_i32(0x0000FFFF, a[i], 1)
            out[i, 1] = qd.i32(warp.active_mask())


def rows(a, n):
    return a.reshape(-1, n)


def lanes_of(mask_rows, n):
    return np.repeat(mask_rows[:, None], n, axis=1)


@pytest.fixture(params=["cpu-cuda", "cpu-hip", "cpu-hip-wave32"])
def cpu(request):
    from conftest import init_executor

    if request.param == "cpu-hip-wave32":
        qd.init(arch="cpu", dialect="hip", wave32=True)
    else:
        init_executor(request.param)
    return request.param


@pytest.mark.toolchain
def test_votes_ballots_and_shuffles(cpu, rng):
    s = 32  # a warp, whatever the wavefront
    a = rng.integers(0, 9, 64 * 4).astype(np.int32)
    rows(a, s)[0] = 7  # all non-zero, all > 4: unique
    f = rng.standard_normal(a.size).astype(np.float32)
    out = np.zeros((a.size, 9), np.int32)
    outf = np.zeros((a.size, 3), np.float32)
    full_mask(a, f, out, outf)
    r, fr, lane = rows(a, s), rows(f, s), np.arange(s)
    ballot = np.bitwise_or.reduce(((r > 4).astype(np.uint64) << lane.astype(np.uint64)), axis=1) & 0xFFFFFFFF
    want = [(r != 0).all(1), (r > 6).any(1), np.ones(r.shape[0], bool), (r > 4).all(1) | ~(r > 4).any(1),
            ballot.astype(np.uint32).view(np.int32)]
    for c, w in enumerate(want):
        np.testing.assert_array_equal(rows(out[:, c], s), lanes_of(np.asarray(w).astype(np.int32), s),
                                      err_msg=f"column {c}")
    np.testing.assert_array_equal(rows(out[:, 5], s), lanes_of(r[:, 3], s))
    np.testing.assert_array_equal(rows(out[:, 6], s), r[:, np.maximum(lane - 1, 0)])
    np.testing.assert_array_equal(rows(out[:, 7], s), r[:, np.where(lane + 2 < s, lane + 2, lane)])
    np.testing.assert_array_equal(rows(out[:, 8], s), r[:, lane ^ 5])
    np.testing.assert_array_equal(rows(outf[:, 0], s), lanes_of(fr[:, 7], s))
    np.testing.assert_array_equal(rows(outf[:, 1], s), fr[:, np.where(lane >= 2, lane - 2, lane)])
    np.testing.assert_array_equal(rows(outf[:, 2], s), fr[:, np.where(lane + 1 < s, lane + 1, lane)])


@pytest.mark.toolchain
def test_matches_and_partial_masks(cpu, rng):
    a = rng.integers(0, 9, 64 * 2).astype(np.int32)
    a[32:64] = 5  # one warp of equal values
    out = np.zeros((a.size, 4), np.uint32)
    matches(a, out)
    r, lane = rows(a, 32), np.arange(32, dtype=np.uint64)
    same = (r[:, :, None] % 3 == r[:, None, :] % 3)
    any_mask = (same.astype(np.uint64) << lane[None, None, :]).sum(axis=2).astype(np.uint32)
    np.testing.assert_array_equal(rows(out[:, 0], 32), any_mask)
    assert (out[:, 1] == FULL).all()  # v // 1000 is 0 everywhere
    np.testing.assert_array_equal(rows(out[:, 2], 32), lanes_of(np.where((r == r[:, :1]).all(1), FULL, 0)
                                                                .astype(np.uint32), 32))
    assert (out[:, 3] == FULL).all()

    out = np.zeros((a.size, 2), np.int32)
    half_warp(a, out)
    r0, r1 = rows(out[:, 0], 32), rows(out[:, 1], 32)
    np.testing.assert_array_equal(r0[:, :16], r[:, np.arange(16) ^ 1])
    assert (r0[:, 16:] == -1).all() and (r1[:, :16] == 0xFFFF).all()


@pytest.mark.parametrize("target,options", [("glsl", {}), ("msl", {})])
def test_glsl_and_metal_name_the_portable_spelling(target, options):
    with pytest.raises(qd.TranspileError, match=f"qd.simt.warp.all_nonzero\\(\\) is not supported on the {target} "
                                                "target: qd.simt.warp is CUDA's warp API") as info:
        qd.translate(full_mask, target, **options)
    assert info.value.loc.line == full_mask.fn.__code__.co_firstlineno + 7
    assert "qd.simt.subgroup.all_true(predicate)" in str(info.value)


def test_warp_calls_need_a_parallel_loop():
    @qd.kernel
    def serial(a: qd.types.ndarray(qd.i32, ndim=1)):
        a[0] = warp.ballot(a[0] > 0)

    with pytest.raises(qd.TranspileError, match=r"qd.simt.warp.ballot\(\) works on the threads of a block"):
        qd.translate(serial, "cuda")


@pytest.mark.toolchain
@pytest.mark.parametrize("kernel", [full_mask, matches, half_warp], ids=lambda k: k.__name__)
@pytest.mark.parametrize("target,options", [("cuda", {}), ("hip", {}), ("hip", {"wave32": True})])
def test_compiles(kernel, target, options):
    assert_compiles(target, qd.translate(kernel, target, **options))

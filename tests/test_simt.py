"""qd.simt.block and qd.simt.subgroup on every target.

Each primitive is compiled by the real toolchains (NVRTC; hipcc and hipRTC for wave64 gfx90a
and wave32 gfx1030; glslang + spirv-val at subgroup sizes 8 to 64; clang against the Metal
shim) and run on every executor (Vulkan, lavapipe's subgroups being 8 lanes; the CPU
emulator running the CUDA text at warp 32 and the HIP text at wave 64; CUDA on a GPU),
against NumPy on random data at several block sizes. No test assumes a subgroup size: it
comes from the backend, as qd.simt.subgroup.group_size() does in the kernels."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import transpiler as qd
from transpiler.ir.types import from_numpy
from transpiler.runtime import current
from conftest import assert_compiles

block = qd.simt.block
subgroup = qd.simt.subgroup
BLOCK_DIMS = (8, 32, 64, 128, 256)
I32_MAX, I32_MIN, U32_MAX = 2**31 - 1, -(2**31), 2**32 - 1


# ----------------------------------------------------------------------------- kernels

@qd.kernel
def shared_and_indices(x: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i32, ndim=2), bd: qd.template()):
    qd.loop_config(block_dim=bd)
    for i in range(x.shape[0]):
        line = block.SharedArray((bd,), qd.i32)
        tile = block.SharedArray((4, bd // 4), qd.i32)
        t = block.thread_idx()
        line[t] = x[i]
        tile[t // (bd // 4), t % (bd // 4)] = x[i]
        block.sync()
        out[i, 0] = line[bd - 1 - t]
        out[i, 1] = tile[t % 4, t // 4]
        out[i, 2] = t
        out[i, 3] = block.global_thread_idx()


@qd.kernel
def votes(p: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i32, ndim=2), bd: qd.template(),
          reps: qd.template()):
    qd.loop_config(block_dim=bd)
    for i in range(p.shape[0]):
        v = p[i]
        out[i, 0] = block.sync_all_nonzero(v)  # an integer predicate
        out[i, 1] = block.sync_any_nonzero(v > 1)
        out[i, 2] = block.sync_count_nonzero(v)
        # Many votes in a row: an emulation that reuses its counter too early miscounts.
        total = 0
        for r in range(reps):
            total += block.sync_count_nonzero((v + r) % 3 == 0)
            if block.sync_all_nonzero(v + r > 2):
                total += 1000
        out[i, 3] = total
        steps = 0
        left = v
        while block.sync_any_nonzero(left > 0):
            left -= 1
            steps += 1
        out[i, 4] = steps


@qd.kernel
def block_reduce(src: qd.types.ndarray(ndim=1), out: qd.types.ndarray(ndim=2), bd: qd.template(), dt: qd.template()):
    qd.loop_config(block_dim=bd)
    for i in range(src.shape[0]):
        v = src[i]
        out[i, 0] = block.reduce_add(v, bd, dt)
        out[i, 1] = block.reduce_min(v, bd, dt)
        out[i, 2] = block.reduce_max(v, bd, dt)
        out[i, 3] = block.reduce_all_add(v, bd, dt)
        out[i, 4] = block.reduce_all_min(v, bd, dt)
        out[i, 5] = block.reduce_all_max(v, bd, dt)


@qd.kernel
def block_scan(src: qd.types.ndarray(ndim=1), out: qd.types.ndarray(ndim=2), bd: qd.template(), dt: qd.template()):
    qd.loop_config(block_dim=bd)
    for i in range(src.shape[0]):
        v = src[i]
        out[i, 0] = block.inclusive_add(v, bd, dt)
        out[i, 1] = block.inclusive_min(v, bd, dt)
        out[i, 2] = block.inclusive_max(v, bd, dt)
        out[i, 3] = block.exclusive_add(v, bd, dt)
        out[i, 4] = block.exclusive_min(v, bd, dt)
        out[i, 5] = block.exclusive_max(v, bd, dt)


@qd.func
def bit_xor(a, b):
    return a ^ b


@qd.func
def first(a, b):  # associative but not commutative: the order of the fold shows
    return a


@qd.func
def last(a, b):
    return b


@qd.kernel
def block_generic(src: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i32, ndim=2), bd: qd.template()):
    qd.loop_config(block_dim=bd)
    for i in range(src.shape[0]):
        v = src[i]
        out[i, 0] = block.reduce(v, bd, bit_xor, qd.i32)
        out[i, 1] = block.reduce_all(v, bd, bit_xor, qd.i32)
        out[i, 2] = block.inclusive_scan(v, bd, bit_xor, qd.i32)
        out[i, 3] = block.exclusive_scan(v, bd, bit_xor, 0, qd.i32)
        out[i, 4] = block.reduce_all(v, bd, first, qd.i32)
        out[i, 5] = block.reduce_all(v, bd, last, qd.i32)
        out[i, 6] = block.inclusive_scan(v, bd, first, qd.i32)
        out[i, 7] = block.inclusive_scan(v, bd, last, qd.i32)


@qd.kernel
def radix_rank(keys: qd.types.ndarray(qd.u32, ndim=1), ranks: qd.types.ndarray(qd.i32, ndim=1),
               tables: qd.types.ndarray(qd.i32, ndim=3), bit_start: qd.i32, num_bits: qd.i32,
               bd: qd.template(), rb: qd.template()):
    qd.loop_config(block_dim=bd)
    for i in range(keys.shape[0]):
        bins = block.SharedArray((1 << rb,), qd.i32)
        excl = block.SharedArray((1 << rb,), qd.i32)
        ranks[i] = block.radix_rank_match_atomic_or(keys[i], bd, rb, bit_start, num_bits, bins, excl)
        t = block.thread_idx()
        if t < (1 << rb):
            tables[i // bd, 0, t] = bins[t]
            tables[i // bd, 1, t] = excl[t]


@qd.kernel
def radix_passes(keys: qd.types.ndarray(qd.u32, ndim=1), ranks: qd.types.ndarray(qd.i32, ndim=2), bd: qd.template(),
                 rb: qd.template()):
    qd.loop_config(block_dim=bd)
    for i in range(keys.shape[0]):
        bins = block.SharedArray((1 << rb,), qd.i32)
        excl = block.SharedArray((1 << rb,), qd.i32)
        for p in range(ranks.shape[1]):
            ranks[i, p] = block.radix_rank_match_atomic_or(keys[i], bd, rb, p * 2, 2, bins, excl)


@qd.kernel
def subgroup_moves(x: qd.types.ndarray(qd.i32, ndim=1), f: qd.types.ndarray(qd.f32, ndim=1),
                   out: qd.types.ndarray(qd.i32, ndim=2), outf: qd.types.ndarray(qd.f32, ndim=2), lane_arg: qd.i32):
    qd.loop_config(block_dim=128)
    for i in range(x.shape[0]):
        v = x[i]
        lane = subgroup.invocation_id()
        size = subgroup.group_size()
        out[i, 0] = lane
        out[i, 1] = size
        out[i, 2] = subgroup.log2_group_size()
        out[i, 3] = subgroup.shuffle(v, qd.u32((lane * 3 + 1) % size))
        out[i, 4] = subgroup.shuffle_up(v, 1)
        out[i, 5] = subgroup.shuffle_down(v, 2)
        out[i, 6] = subgroup.shuffle_xor(v, qd.u32(size - 1))
        out[i, 7] = subgroup.broadcast(v, qd.u32(size // 2))  # a constant lane
        out[i, 8] = subgroup.broadcast(v, qd.u32(lane_arg))  # a uniform lane known at run time
        out[i, 9] = subgroup.broadcast_first(v)
        out[i, 10] = subgroup.elect()
        out[i, 11] = subgroup.shuffle_up(v > 0, 3)
        outf[i, 0] = subgroup.shuffle_xor(f[i], 1)
        outf[i, 1] = subgroup.shuffle_down(f[i], 1)
        outf[i, 2] = subgroup.broadcast_first(f[i])


@qd.kernel
def subgroup_votes(p: qd.types.ndarray(qd.i32, ndim=1), ballots: qd.types.ndarray(qd.u64, ndim=1),
                   masks: qd.types.ndarray(qd.u32, ndim=2), out: qd.types.ndarray(qd.i32, ndim=2)):
    qd.loop_config(block_dim=128)
    for i in range(p.shape[0]):
        v = p[i]
        ballots[i] = subgroup.ballot(v > 0)
        masks[i, 0] = subgroup.ballot_first_n(v, 4)
        masks[i, 1] = subgroup.ballot_first_n(v > 0, 32)
        lane = subgroup.invocation_id() % 32  # the lanemasks are defined for lanes 0-31
        masks[i, 2] = subgroup.lanemask_lt(lane)
        masks[i, 3] = subgroup.lanemask_le(lane)
        masks[i, 4] = subgroup.lanemask_eq(lane)
        masks[i, 5] = subgroup.lanemask_gt(lane)
        masks[i, 6] = subgroup.lanemask_ge(lane)
        out[i, 0] = subgroup.all_true(v)
        out[i, 1] = subgroup.any_true(v > 2)
        out[i, 2] = subgroup.all_equal(v)


@qd.kernel
def subgroup_folds(src: qd.types.ndarray(ndim=1), out: qd.types.ndarray(ndim=2)):
    qd.loop_config(block_dim=128)
    for i in range(src.shape[0]):
        v = src[i]
        out[i, 0] = subgroup.reduce_add(v)
        out[i, 1] = subgroup.reduce_min(v)
        out[i, 2] = subgroup.reduce_max(v)
        out[i, 3] = subgroup.reduce_all_add(v)
        out[i, 4] = subgroup.reduce_all_min(v)
        out[i, 5] = subgroup.reduce_all_max(v)
        out[i, 6] = subgroup.inclusive_add(v)
        out[i, 7] = subgroup.inclusive_min(v)
        out[i, 8] = subgroup.inclusive_max(v)
        out[i, 9] = subgroup.exclusive_add(v)
        out[i, 10] = subgroup.exclusive_min(v)
        out[i, 11] = subgroup.exclusive_max(v)


@qd.kernel
def subgroup_tiled(src: qd.types.ndarray(ndim=1), out: qd.types.ndarray(ndim=2), log2: qd.template()):
    qd.loop_config(block_dim=128)
    for i in range(src.shape[0]):
        v = src[i]
        out[i, 0] = subgroup.reduce_add_tiled(v, log2)
        out[i, 1] = subgroup.reduce_min_tiled(v, log2)
        out[i, 2] = subgroup.reduce_max_tiled(v, log2)
        out[i, 3] = subgroup.inclusive_add_tiled(v, log2)
        out[i, 4] = subgroup.inclusive_min_tiled(v, log2)
        out[i, 5] = subgroup.inclusive_max_tiled(v, log2)
        out[i, 6] = subgroup.exclusive_add_tiled(v, log2)
        out[i, 7] = subgroup.exclusive_min_tiled(v, log2)
        out[i, 8] = subgroup.exclusive_max_tiled(v, log2)


@qd.kernel
def sync_and_fences(x: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i32, ndim=2)):
    qd.loop_config(block_dim=64)
    for i in range(x.shape[0]):
        slot = block.SharedArray((64,), qd.i32)
        t = block.thread_idx()
        lane = subgroup.invocation_id()
        slot[t] = x[i] * 2
        subgroup.sync()
        out[i, 0] = slot[t - lane + (lane + 1) % subgroup.group_size()]  # the next lane's write
        subgroup.mem_fence()
        subgroup.sync()
        if t == 0:  # fences need no convergence: fine in a branch
            slot[0] = 7
            block.mem_fence()
            qd.simt.grid.mem_fence()
        block.sync()
        out[i, 1] = slot[0]


# ----------------------------------------------------------------------------- helpers

def subgroup_size() -> int:
    size = current().subgroup_size
    assert size in (8, 16, 32, 64), size
    return size


def per(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` as rows of ``n`` consecutive elements (one block or subgroup per row)."""
    return a.reshape(-1, n)


def identities(dtype) -> tuple:
    """(min identity, max identity) of a dtype: the type's max / +inf, its min / -inf / 0."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.inf, -np.inf
    info = np.iinfo(dtype)
    return info.max, info.min


def scans(rows: np.ndarray) -> dict[str, np.ndarray]:
    """Inclusive and exclusive add / min / max along each row, with the typed identities."""
    lo, hi = identities(rows.dtype)
    out = {"inclusive_add": np.cumsum(rows, axis=1, dtype=rows.dtype),
           "inclusive_min": np.minimum.accumulate(rows, axis=1),
           "inclusive_max": np.maximum.accumulate(rows, axis=1)}
    for op, ident in (("add", 0), ("min", lo), ("max", hi)):
        shifted = np.empty_like(rows)
        shifted[:, 0] = ident
        shifted[:, 1:] = out[f"inclusive_{op}"][:, :-1]
        out[f"exclusive_{op}"] = shifted
    return out


def random_values(rng, n: int, dtype) -> np.ndarray:
    """Small integers (so float sums are exact in any order), in the dtype."""
    low = 0 if np.dtype(dtype).kind == "u" else -100
    return rng.integers(low, 100, n).astype(dtype)


def assert_block_dim_rejected(fn, *args):
    with pytest.raises(qd.TranspileError, match="multiple of the subgroup size"):
        fn(*args)


# ----------------------------------------------------------------------------- block scope

@pytest.mark.parametrize("bd", BLOCK_DIMS)
def test_shared_arrays_and_indices(executor, rng, bd):
    blocks = 37
    x = rng.integers(-1000, 1000, bd * blocks).astype(np.int32)
    out = np.zeros((x.size, 4), np.int32)
    shared_and_indices(x, out, bd)
    rows = per(x, bd)
    np.testing.assert_array_equal(per(out[:, 0], bd), rows[:, ::-1])
    tiles = rows.reshape(blocks, 4, bd // 4)
    t = np.arange(bd)
    np.testing.assert_array_equal(per(out[:, 1], bd), tiles[:, t % 4, t // 4])
    np.testing.assert_array_equal(out[:, 2], np.tile(t, blocks))
    np.testing.assert_array_equal(out[:, 3], np.arange(x.size))


@pytest.mark.parametrize("bd", BLOCK_DIMS)
def test_block_votes(executor, rng, bd):
    blocks, reps = 12, 40
    p = rng.integers(0, 4, bd * blocks).astype(np.int32)
    rows = per(p, bd)
    rows[0] = 3   # every thread non-zero
    rows[1] = 0   # none
    rows[2, 5 % bd] = 0
    rows[2, np.arange(bd) != 5 % bd] = 1
    out = np.zeros((p.size, 5), np.int32)
    votes(p, out, bd, reps)
    expect = np.zeros((blocks, 5), np.int64)
    expect[:, 0] = (rows != 0).all(axis=1)
    expect[:, 1] = (rows > 1).any(axis=1)
    expect[:, 2] = (rows != 0).sum(axis=1)
    for r in range(reps):
        expect[:, 3] += ((rows + r) % 3 == 0).sum(axis=1) + 1000 * (rows + r > 2).all(axis=1)
    expect[:, 4] = rows.max(axis=1)
    for c in range(5):
        np.testing.assert_array_equal(per(out[:, c], bd), np.repeat(expect[:, c:c + 1], bd, axis=1),
                                      err_msg=f"column {c}")


REDUCE_DTYPES = (np.int32, np.float32, np.uint32, np.int64, np.float64)


@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("bd", BLOCK_DIMS)
def test_block_reductions(executor, rng, bd, dtype):
    src = random_values(rng, bd * 24, dtype)
    out = np.zeros((src.size, 6), dtype)
    dt = from_numpy(dtype)
    if bd % subgroup_size():
        return assert_block_dim_rejected(block_reduce, src, out, bd, dt)
    block_reduce(src, out, bd, dt)
    rows = per(src, bd)
    want = [rows.sum(axis=1, dtype=dtype), rows.min(axis=1), rows.max(axis=1)]
    for c, w in enumerate(want):
        np.testing.assert_array_equal(per(out[:, c], bd)[:, 0], w, err_msg=f"reduce column {c}")  # thread 0
        np.testing.assert_array_equal(per(out[:, c + 3], bd), np.repeat(w[:, None], bd, axis=1),
                                      err_msg=f"reduce_all column {c}")


@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("bd", BLOCK_DIMS)
def test_block_scans(executor, rng, bd, dtype):
    src = random_values(rng, bd * 24, dtype)
    out = np.zeros((src.size, 6), dtype)
    if bd % subgroup_size():
        return assert_block_dim_rejected(block_scan, src, out, bd, from_numpy(dtype))
    block_scan(src, out, bd, from_numpy(dtype))
    want = scans(per(src, bd))
    for c, name in enumerate(("inclusive_add", "inclusive_min", "inclusive_max",
                              "exclusive_add", "exclusive_min", "exclusive_max")):
        np.testing.assert_array_equal(per(out[:, c], bd), want[name], err_msg=name)


@pytest.mark.parametrize("bd", BLOCK_DIMS)
def test_block_generic_operator(executor, rng, bd):
    src = rng.integers(0, 2**20, bd * 16).astype(np.int32)
    out = np.zeros((src.size, 8), np.int32)
    if bd % subgroup_size():
        return assert_block_dim_rejected(block_generic, src, out, bd)
    block_generic(src, out, bd)
    rows = per(src, bd)
    xor_all = np.bitwise_xor.reduce(rows, axis=1)
    incl = np.bitwise_xor.accumulate(rows, axis=1)
    excl = np.zeros_like(incl)
    excl[:, 1:] = incl[:, :-1]
    cols = [per(out[:, c], bd) for c in range(8)]
    np.testing.assert_array_equal(cols[0][:, 0], xor_all)
    np.testing.assert_array_equal(cols[1], np.repeat(xor_all[:, None], bd, axis=1))
    np.testing.assert_array_equal(cols[2], incl)
    np.testing.assert_array_equal(cols[3], excl)
    np.testing.assert_array_equal(cols[4], np.repeat(rows[:, :1], bd, axis=1))   # the first element
    np.testing.assert_array_equal(cols[5], np.repeat(rows[:, -1:], bd, axis=1))  # the last element
    np.testing.assert_array_equal(cols[6], np.repeat(rows[:, :1], bd, axis=1))
    np.testing.assert_array_equal(cols[7], rows)


def radix_expect(rows: np.ndarray, bit_start: int, num_bits: int, digits: int):
    d = ((rows >> np.uint32(bit_start)) & np.uint32((1 << num_bits) - 1)).astype(np.int64)
    ranks = np.zeros(rows.shape, np.int64)
    bins = np.zeros((rows.shape[0], digits), np.int64)
    for b, row in enumerate(d):
        order = np.argsort(row, kind="stable")
        ranks[b, order] = np.arange(row.size)
        bins[b] = np.bincount(row, minlength=digits)
    excl = np.cumsum(bins, axis=1) - bins
    return ranks, bins, excl


# (256, 8): the seed's configuration, 32 subgroups of 8 lanes on lavapipe, whose per-subgroup
# counts publish in two rounds to stay within its 32 KiB of workgroup memory.
@pytest.mark.parametrize("bd,rb,bit_start,num_bits", [(32, 5, 0, 5), (64, 6, 3, 6), (64, 6, 7, 4),
                                                      (128, 7, 11, 7), (128, 5, 0, 5), (256, 8, 3, 8),
                                                      (256, 8, 24, 8)])
def test_radix_rank(lanes_executor, rng, bd, rb, bit_start, num_bits):
    blocks = 10
    keys = rng.integers(0, 2**32, bd * blocks, dtype=np.uint64).astype(np.uint32)
    per(keys, bd)[0] = keys[0]  # one block of equal keys: ranks are the thread order
    ranks = np.zeros(keys.size, np.int32)
    tables = np.zeros((blocks, 2, 1 << rb), np.int32)
    if bd % subgroup_size():
        return assert_block_dim_rejected(radix_rank, keys, ranks, tables, bit_start, num_bits, bd, rb)
    radix_rank(keys, ranks, tables, bit_start, num_bits, bd, rb)
    want_ranks, bins, excl = radix_expect(per(keys, bd), bit_start, num_bits, 1 << rb)
    np.testing.assert_array_equal(per(ranks, bd), want_ranks)
    np.testing.assert_array_equal(tables[:, 0], bins)
    np.testing.assert_array_equal(tables[:, 1], excl)


def test_radix_rank_in_a_loop(lanes_executor, rng):
    bd, rb, passes = 64, 6, 4
    keys = rng.integers(0, 2**32, bd * 6, dtype=np.uint64).astype(np.uint32)
    ranks = np.zeros((keys.size, passes), np.int32)
    if bd % subgroup_size():
        return assert_block_dim_rejected(radix_passes, keys, ranks, bd, rb)
    radix_passes(keys, ranks, bd, rb)
    for p in range(passes):
        want, _, _ = radix_expect(per(keys, bd), 2 * p, 2, 1 << rb)
        np.testing.assert_array_equal(per(ranks[:, p], bd), want, err_msg=f"pass {p}")


# ----------------------------------------------------------------------------- subgroup scope

def test_subgroup_moves(lanes_executor, rng):
    s = subgroup_size()
    x = rng.integers(-1000, 1000, 128 * 4).astype(np.int32)
    f = rng.standard_normal(x.size).astype(np.float32)
    out = np.zeros((x.size, 12), np.int32)
    outf = np.zeros((x.size, 3), np.float32)
    lane_arg = s - 1
    subgroup_moves(x, f, out, outf, lane_arg)
    rows, frows = per(x, s), per(f, s)
    lane = np.arange(s)
    cols = [per(out[:, c], s) for c in range(12)]
    np.testing.assert_array_equal(cols[0], np.broadcast_to(lane, rows.shape))
    assert (out[:, 1] == s).all() and (out[:, 2] == s.bit_length() - 1).all()
    np.testing.assert_array_equal(cols[3], rows[:, (lane * 3 + 1) % s])
    np.testing.assert_array_equal(cols[4], rows[:, np.maximum(lane - 1, 0)])
    np.testing.assert_array_equal(cols[5], rows[:, np.where(lane + 2 < s, lane + 2, lane)])
    np.testing.assert_array_equal(cols[6], rows[:, ::-1])
    np.testing.assert_array_equal(cols[7], np.repeat(rows[:, s // 2:s // 2 + 1], s, axis=1))
    np.testing.assert_array_equal(cols[8], np.repeat(rows[:, lane_arg:lane_arg + 1], s, axis=1))
    np.testing.assert_array_equal(cols[9], np.repeat(rows[:, :1], s, axis=1))
    np.testing.assert_array_equal(cols[10], np.broadcast_to(lane == 0, rows.shape).astype(np.int32))
    positive = (rows > 0).astype(np.int32)
    np.testing.assert_array_equal(cols[11], positive[:, np.where(lane >= 3, lane - 3, lane)])
    np.testing.assert_array_equal(per(outf[:, 0], s), frows[:, lane ^ 1])
    np.testing.assert_array_equal(per(outf[:, 1], s), frows[:, np.where(lane + 1 < s, lane + 1, lane)])
    np.testing.assert_array_equal(per(outf[:, 2], s), np.repeat(frows[:, :1], s, axis=1))


def test_subgroup_votes_and_ballots(lanes_executor, rng):
    s = subgroup_size()
    p = rng.integers(0, 4, 128 * 4).astype(np.int32)
    rows = per(p, s)
    rows[0::4] = 2   # all non-zero and equal
    rows[1::4] = 0   # none
    rows[2::4, 1:] = rows[2::4, :1]  # equal, some groups zero
    ballots = np.zeros(p.size, np.uint64)
    masks = np.zeros((p.size, 7), np.uint32)
    out = np.zeros((p.size, 3), np.int32)
    subgroup_votes(p, ballots, masks, out)
    lane = np.arange(s)
    bits = (rows > 0).astype(np.uint64) << lane.astype(np.uint64)
    ballot = np.bitwise_or.reduce(bits, axis=1)
    np.testing.assert_array_equal(per(ballots, s), np.repeat(ballot[:, None], s, axis=1))
    first4 = np.bitwise_or.reduce(np.where(lane < 4, (rows != 0).astype(np.uint64) << lane.astype(np.uint64), 0),
                                  axis=1) & 0xF
    np.testing.assert_array_equal(per(masks[:, 0], s), np.repeat(first4[:, None], s, axis=1).astype(np.uint32))
    np.testing.assert_array_equal(per(masks[:, 1], s),
                                  np.repeat((ballot & 0xFFFFFFFF)[:, None], s, axis=1).astype(np.uint32))
    lane32 = (np.arange(p.size) % s) % 32
    lt = (np.uint64(1) << lane32.astype(np.uint64)) - np.uint64(1)
    le = (np.uint64(2) << lane32.astype(np.uint64)) - np.uint64(1)
    eq = np.uint64(1) << lane32.astype(np.uint64)
    full = np.uint64(U32_MAX)
    for c, want in ((2, lt), (3, le), (4, eq), (5, full ^ (le & full)), (6, full ^ (lt & full))):
        np.testing.assert_array_equal(masks[:, c], (want & full).astype(np.uint32), err_msg=f"lanemask {c}")
    expect = np.stack([(rows != 0).all(axis=1), (rows > 2).any(axis=1), (rows == rows[:, :1]).all(axis=1)], axis=1)
    for c in range(3):
        np.testing.assert_array_equal(per(out[:, c], s), np.repeat(expect[:, c:c + 1], s, axis=1).astype(np.int32))


FOLD_DTYPES = (np.int32, np.float32, np.uint32, np.int64, np.float64)


@pytest.mark.parametrize("dtype", FOLD_DTYPES, ids=lambda d: np.dtype(d).name)
def test_subgroup_reductions_and_scans(lanes_executor, rng, dtype):
    s = subgroup_size()
    src = random_values(rng, 128 * 4, dtype)
    out = np.zeros((src.size, 12), dtype)
    subgroup_folds(src, out)
    rows = per(src, s)
    sums = [rows.sum(axis=1, dtype=dtype), rows.min(axis=1), rows.max(axis=1)]
    for c in range(6):
        np.testing.assert_array_equal(per(out[:, c], s), np.repeat(sums[c % 3][:, None], s, axis=1),
                                      err_msg=f"reduce column {c}")
    want = scans(rows)
    for c, name in enumerate(("inclusive_add", "inclusive_min", "inclusive_max",
                              "exclusive_add", "exclusive_min", "exclusive_max"), start=6):
        np.testing.assert_array_equal(per(out[:, c], s), want[name], err_msg=name)


@pytest.mark.parametrize("dtype", (np.int32, np.float32), ids=lambda d: np.dtype(d).name)
def test_subgroup_tiled(lanes_executor, rng, dtype):
    s = subgroup_size()
    src = random_values(rng, 128 * 2, dtype)
    for log2 in range(s.bit_length()):
        tile = 1 << log2
        out = np.zeros((src.size, 9), dtype)
        subgroup_tiled(src, out, log2)
        rows = per(src, tile)
        folds = [rows.sum(axis=1, dtype=dtype), rows.min(axis=1), rows.max(axis=1)]
        for c in range(3):
            np.testing.assert_array_equal(per(out[:, c], tile), np.repeat(folds[c][:, None], tile, axis=1),
                                          err_msg=f"tile {tile} reduce column {c}")
        want = scans(rows)
        for c, name in enumerate(("inclusive_add", "inclusive_min", "inclusive_max",
                                  "exclusive_add", "exclusive_min", "exclusive_max"), start=3):
            np.testing.assert_array_equal(per(out[:, c], tile), want[name], err_msg=f"tile {tile} {name}")


def test_subgroup_sync_and_fences(lanes_executor, rng):
    s = subgroup_size()
    x = rng.integers(-1000, 1000, 64 * 3).astype(np.int32)
    out = np.zeros((x.size, 2), np.int32)
    sync_and_fences(x, out)
    lane = np.arange(s)
    np.testing.assert_array_equal(per(out[:, 0], s), per(x * 2, s)[:, (lane + 1) % s])
    assert (out[:, 1] == 7).all()


# ----------------------------------------------------------------------------- toolchains

def nd(dtype, ndim):
    return qd.types.ndarray(dtype, ndim=ndim)


# (id, kernel, template_args, arg_types): every primitive above, for the compile checks.
COMPILE_CASES = [
    ("shared_and_indices", shared_and_indices, {"bd": 128}, {}),
    ("votes", votes, {"bd": 128, "reps": 8}, {}),
    ("block_reduce_f32", block_reduce, {"bd": 128, "dt": qd.f32}, {"src": nd(qd.f32, 1), "out": nd(qd.f32, 2)}),
    ("block_reduce_u32", block_reduce, {"bd": 64, "dt": qd.u32}, {"src": nd(qd.u32, 1), "out": nd(qd.u32, 2)}),
    ("block_scan_i32", block_scan, {"bd": 256, "dt": qd.i32}, {"src": nd(qd.i32, 1), "out": nd(qd.i32, 2)}),
    ("block_scan_f16", block_scan, {"bd": 64, "dt": qd.f16}, {"src": nd(qd.f16, 1), "out": nd(qd.f16, 2)}),
    ("block_generic", block_generic, {"bd": 128}, {}),
    ("radix_rank", radix_rank, {"bd": 256, "rb": 8}, {}),
    ("radix_passes", radix_passes, {"bd": 64, "rb": 6}, {}),
    ("subgroup_moves", subgroup_moves, {}, {}),
    ("subgroup_votes", subgroup_votes, {}, {}),
    ("subgroup_folds_i32", subgroup_folds, {}, {"src": nd(qd.i32, 1), "out": nd(qd.i32, 2)}),
    ("subgroup_folds_f32", subgroup_folds, {}, {"src": nd(qd.f32, 1), "out": nd(qd.f32, 2)}),
    ("subgroup_folds_i8", subgroup_folds, {}, {"src": nd(qd.i8, 1), "out": nd(qd.i8, 2)}),
    ("subgroup_tiled_u32", subgroup_tiled, {"log2": 3}, {"src": nd(qd.u32, 1), "out": nd(qd.u32, 2)}),
    ("sync_and_fences", sync_and_fences, {}, {}),
]
# 64-bit values: every target but Metal, whose SIMD-group functions take 32 bits at most.
WIDE_CASES = [
    ("subgroup_folds_i64", subgroup_folds, {}, {"src": nd(qd.i64, 1), "out": nd(qd.i64, 2)}),
    ("block_scan_f64", block_scan, {"bd": 128, "dt": qd.f64}, {"src": nd(qd.f64, 1), "out": nd(qd.f64, 2)}),
]
# (target, options): HIP at both wavefront sizes, GLSL at the subgroup sizes devices have.
VARIANTS = [("cuda", {}), ("hip", {}), ("hip", {"wave32": True}), ("msl", {}),
            *(("glsl", {"subgroup_size": n}) for n in (8, 16, 32, 64))]
TOOLS = {"cuda": None, "hip": "hipcc", "glsl": "glslangValidator", "msl": None}


def _variant_id(v):
    target, options = v
    return target + "".join(f"-{k}={val}" for k, val in options.items())


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS, ids=_variant_id)
@pytest.mark.parametrize("case", COMPILE_CASES + WIDE_CASES, ids=[c[0] for c in COMPILE_CASES + WIDE_CASES])
def test_compiles(case, variant):
    name, kernel, template_args, arg_types = case
    target, options = variant
    tool = TOOLS[target]
    if tool and shutil.which(tool) is None:
        pytest.skip(f"needs {tool}")
    if target == "msl" and case in WIDE_CASES:
        with pytest.raises(qd.TranspileError, match="not supported on the msl target"):
            qd.translate(kernel, target, template_args=template_args, arg_types=arg_types, **options)
        return
    tr = qd.translate(kernel, target, template_args=template_args, arg_types=arg_types, **options)
    assert_compiles(target, tr)


# ----------------------------------------------------------------------------- lowering and contracts

@qd.kernel
def one_vote(p: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i32, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(p.shape[0]):
        out[i] = block.sync_count_nonzero(p[i])


@qd.kernel
def vote_in_and(p: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i32, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(p.shape[0]):
        out[i] = qd.i32(p[i] > 0 and block.sync_any_nonzero(p[i]) != 0)


@qd.kernel
def no_subgroups(a: qd.types.ndarray(qd.f32, ndim=1)):
    for i in range(a.shape[0]):
        a[i] = a[i] * 2.0


@qd.kernel
def size_only(out: qd.types.ndarray(qd.i32, ndim=1)):
    for i in range(out.shape[0]):
        out[i] = subgroup.group_size()


@pytest.mark.parametrize("target", ("glsl", "msl"))
def test_votes_emulated_with_one_barrier_and_atomic_add(target):
    tr = qd.translate(one_vote, target)
    (text,) = tr.sources.values()
    body = text[text.index("for (int i"):]
    barrier = "barrier();" if target == "glsl" else "threadgroup_barrier("
    assert body.count(barrier) == 1, body  # one per vote, plus one before the loop
    assert text.count(barrier) == 2
    assert "atomicAdd(vote_slots[vote_phase]" in body or "&vote_slots[vote_phase]" in body
    assert "Or" not in body and "fetch_or" not in body  # MoltenVK drops OpAtomicOr on threadgroup memory
    # Three i32 counter slots join the shared memory the manifest reports.
    assert tr.manifest["entry_points"][0]["shared_bytes"] == 12


def test_vote_evaluated_conditionally_is_an_error():
    qd.translate(vote_in_and, "cuda")  # fused: a plain call
    with pytest.raises(qd.TranspileError, match="evaluated conditionally"):
        qd.translate(vote_in_and, "glsl")


def test_glsl_manifest_records_the_subgroup_contract():
    tr = qd.translate(subgroup_votes, "glsl", subgroup_size=16)
    req = tr.manifest["requirements"]
    assert tr.manifest["subgroup_size"] == 16 and req["required_subgroup_size"] == 16
    assert req["subgroup_operations"] == ["BALLOT", "BASIC", "VOTE"]
    text = next(iter(tr.sources.values()))
    enabled = [line.split()[1] for line in text.splitlines() if line.startswith("#extension")]
    assert [e for e in enabled if "subgroup" in e] == ["GL_KHR_shader_subgroup_ballot", "GL_KHR_shader_subgroup_basic",
                                                        "GL_KHR_shader_subgroup_vote"]
    # Specialized to the size without any subgroup operation: still bound to it.
    size_tr = qd.translate(size_only, "glsl", subgroup_size=64)
    assert size_tr.manifest["subgroup_size"] == 64 and size_tr.manifest["requirements"]["subgroup_operations"] == []
    assert "= 64;" in next(iter(size_tr.sources.values()))
    plain = qd.translate(no_subgroups, "glsl")
    assert plain.manifest["subgroup_size"] is None and "required_subgroup_size" not in plain.manifest["requirements"]
    with pytest.raises(qd.TranspileError, match="powers of two"):
        qd.translate(subgroup_votes, "glsl", subgroup_size=12)


def test_hip_subgroup_size_follows_the_wavefront():
    assert "= 64;" in qd.translate(size_only, "hip").sources["size_only.hip"]
    wave32 = qd.translate(size_only, "hip", wave32=True)
    assert "= 32;" in wave32.sources["size_only.hip"] and wave32.manifest["subgroup_size"] == 32
    assert qd.translate(size_only, "hip", subgroup_size=32).manifest["subgroup_size"] == 32
    with pytest.raises(qd.TranspileError, match="not possible on the hip target"):
        qd.translate(size_only, "hip", subgroup_size=16)


def test_msl_lane_attribute_and_fence_version():
    moves = qd.translate(subgroup_moves, "msl")
    assert "[[thread_index_in_simdgroup]]" in moves.sources["subgroup_moves.metal"]
    assert moves.manifest["requirements"]["msl_version"] == "2.1"
    plain = qd.translate(block_reduce, "msl", template_args={"bd": 64, "dt": qd.f32},
                         arg_types={"src": nd(qd.f32, 1), "out": nd(qd.f32, 2)})
    assert "thread_index_in_simdgroup" not in plain.sources["block_reduce.metal"]
    fences = qd.translate(sync_and_fences, "msl")
    assert "atomic_thread_fence(" in fences.sources["sync_and_fences.metal"]
    assert fences.manifest["requirements"]["msl_version"] == "3.2"


def test_cli_subgroup_size(tmp_path):
    import subprocess
    import sys

    from conftest import ROOT

    src = tmp_path / "k.py"
    src.write_text("import transpiler as qd\n\n\n@qd.kernel\ndef k(res: qd.types.ndarray(qd.i32, ndim=1)):\n"
                   "    for i in range(res.shape[0]):\n        res[i] = qd.simt.subgroup.group_size()\n")

    def cli(*args):
        return subprocess.run([sys.executable, str(ROOT / "cli.py"), "emit", str(src), *args], capture_output=True,
                              text=True, cwd=ROOT)

    r = cli("--target", "glsl", "--subgroup-size", "8")
    assert r.returncode == 0, r.stderr
    assert '"required_subgroup_size": 8' in r.stdout and "res[i] = 8;" in r.stdout
    assert cli("--target", "glsl", "--subgroup-size", "12").returncode == 2


@pytest.mark.toolchain
def test_vulkan_refuses_a_subgroup_size_the_device_cannot_run():
    from transpiler.errors import ToolchainMissing
    from transpiler.runtime.vulkan import DeviceUnsupported, VulkanBackend

    try:
        backend = VulkanBackend()
    except ToolchainMissing as exc:
        pytest.skip(str(exc))
    low, high = backend.device.subgroup_size_range
    impossible = high * 2 if high < 128 else low // 2
    with pytest.raises(DeviceUnsupported, match="subgroup size"):
        VulkanBackend(subgroup_size=impossible)


@pytest.mark.toolchain
@pytest.mark.parametrize("slots", (3, 2))
def test_vote_emulation_needs_three_slots(slots):
    """The GLSL/MSL vote emulation, spelled in CUDA and run by the emulator under
    ThreadSanitizer: with three counter slots nothing races and every count is right; with
    two, thread 0 zeroes the slot slower threads are still reading, so they miscount (and,
    in the `while` vote loop, leave early while the others wait at its barrier)."""
    from transpiler.errors import ToolchainMissing
    from transpiler.passes.block_votes import emulate_block_votes
    from transpiler.pipeline import lower, translate_ir

    try:
        from transpiler.runtime.cpu_emulator import KernelError, build_module
    except ImportError as exc:
        pytest.skip(f"the CPU emulator is not available: {exc}")
    bd, reps = 64, 6
    kir = emulate_block_votes(lower(votes, {"bd": bd, "reps": reps}, None, 32), slots=slots)
    ctx = translate_ir(kir, "cuda")
    sources, manifest = ctx.sources, ctx.manifest
    (name, text), = sources.items()
    assert "__syncthreads_count" not in text and "vote_slots" in text
    try:
        module = build_module(text, name, race_check=True)
    except ToolchainMissing as exc:
        pytest.skip(str(exc))
    rng = np.random.default_rng(7)
    p = rng.integers(0, 4, bd * 2).astype(np.int32)
    out = np.zeros((p.size, 5), np.int32)
    args = [p, np.int32(p.size), out, np.int32(out.shape[0]), np.int32(out.shape[1])]
    rows = per(p, bd)
    counts = np.zeros(rows.shape[0], np.int64)
    for r in range(reps):
        counts += ((rows + r) % 3 == 0).sum(axis=1) + 1000 * (rows + r > 2).all(axis=1)
    entry = manifest["entry_points"][0]["name"]
    if slots == 2:
        try:
            module.launch(entry, 2, bd, args)
        except KernelError:
            return
        assert not np.array_equal(per(out[:, 3], bd), np.repeat(counts[:, None], bd, axis=1))
        return
    module.launch(entry, 2, bd, args)
    np.testing.assert_array_equal(per(out[:, 2], bd), np.repeat((rows != 0).sum(axis=1)[:, None], bd, axis=1))
    np.testing.assert_array_equal(per(out[:, 3], bd), np.repeat(counts[:, None], bd, axis=1))
    np.testing.assert_array_equal(per(out[:, 4], bd), np.repeat(rows.max(axis=1)[:, None], bd, axis=1))


@qd.kernel
def big_shared(x: qd.types.ndarray(qd.f32, ndim=1), n: qd.template()):
    qd.loop_config(block_dim=64)
    for i in range(x.shape[0]):
        slab = block.SharedArray((n,), qd.f32)
        t = block.thread_idx()
        slab[t] = x[i]
        block.sync()
        x[i] = slab[n - 1 - t]


@pytest.mark.toolchain
def test_vulkan_refuses_more_shared_memory_than_the_device_has(rng):
    """A block's shared arrays beyond the device's workgroup memory (32 KiB on lavapipe) are
    refused before the launch, saying so."""
    from transpiler.errors import ToolchainMissing
    from transpiler.runtime.vulkan import DeviceUnsupported

    try:
        qd.init(arch="vulkan")
    except ToolchainMissing as exc:
        pytest.skip(str(exc))
    n = current().device.max_shared_memory // 4 + 64
    with pytest.raises(DeviceUnsupported, match="shared memory"):
        big_shared(rng.standard_normal(64).astype(np.float32), n)


def test_radix_rank_shared_memory_does_not_grow_with_the_subgroup_count():
    """The seed's radix rank (256 threads, 8-bit digits) in 8-lane subgroups (lavapipe) has
    32 subgroups, whose counts would take 32 KiB: they publish in rounds instead."""
    def shared_bytes(n: int) -> int:
        tr = qd.translate(radix_rank, "glsl", template_args={"bd": 256, "rb": 8}, subgroup_size=n)
        return sum(a.type.nbytes for t in tr.ir.tasks for a in t.shared)

    sizes = {n: shared_bytes(n) for n in (4, 8, 16, 32, 64)}
    assert max(sizes.values()) <= 16384 + 2 * 1024 + 256, sizes

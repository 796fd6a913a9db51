"""Block-scope collectives and shared memory, as the block page writes them."""
import numpy as np

import transpiler as qd
from userguide.cases import case

BLOCK = 128


@qd.kernel
def block_sums(src: qd.types.ndarray(ndim=1), out: qd.types.ndarray(ndim=1)):
    qd.loop_config(block_dim=128)
    for i in range(src.shape[0]):
        agg = qd.simt.block.reduce_add(src[i], 128, qd.f32)
        if qd.simt.block.thread_idx() == 0:
            out[i // 128] = agg


@case(block_sums, needs=("subgroups",))
def _(rng):
    src = rng.random(BLOCK * 20).astype(np.float32)
    out = np.zeros(20, np.float32)

    def check(_):
        np.testing.assert_allclose(out, src.reshape(20, BLOCK).sum(1), rtol=1e-5)
    return (src, out), check


@qd.kernel
def block_prefix(src: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    qd.loop_config(block_dim=128)
    for i in range(src.shape[0]):
        out[i] = qd.simt.block.inclusive_add(src[i], 128, qd.i32)


@case(block_prefix, needs=("subgroups",))
def _(rng):
    src = rng.integers(-50, 50, BLOCK * 8).astype(np.int32)
    out = np.zeros_like(src)

    def check(_):
        np.testing.assert_array_equal(out, np.cumsum(src.reshape(8, BLOCK), axis=1).reshape(-1))
    return (src, out), check


@qd.kernel
def running_max(src: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(src.shape[0]):
        out[i] = qd.simt.block.exclusive_max(src[i], 64, qd.f32)


@case(running_max, needs=("subgroups",))
def _(rng):
    src = rng.standard_normal(64 * 6).astype(np.float32)
    out = np.zeros_like(src)

    def check(_):
        rows = src.reshape(6, 64)
        want = np.concatenate([np.full((6, 1), -np.inf, np.float32), np.maximum.accumulate(rows, axis=1)[:, :-1]], 1)
        np.testing.assert_array_equal(out, want.reshape(-1))
    return (src, out), check


@qd.kernel
def reverse_blocks(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(x.shape[0]):
        tile = qd.simt.block.SharedArray((64,), qd.f32)
        t = qd.simt.block.thread_idx()
        tile[t] = x[i]
        qd.simt.block.sync()
        x[i] = tile[63 - t]


@case(reverse_blocks)
def _(rng):
    x = rng.random(64 * 5).astype(np.float32)
    want = x.reshape(5, 64)[:, ::-1].reshape(-1).copy()

    def check(_):
        np.testing.assert_array_equal(x, want)
    return (x,), check


@qd.kernel
def count_in_block(x: qd.types.ndarray(dtype=qd.f32, ndim=1), counts: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    qd.loop_config(block_dim=128)
    for i in range(x.shape[0]):
        n = qd.simt.block.sync_count_nonzero(qd.i32(x[i] > 0.5))
        if qd.simt.block.thread_idx() == 0:
            counts[i // 128] = n


@case(count_in_block)
def _(rng):
    x = rng.random(128 * 7).astype(np.float32)
    counts = np.zeros(7, np.int32)

    def check(_):
        np.testing.assert_array_equal(counts, (x.reshape(7, 128) > 0.5).sum(1))
    return (x, counts), check

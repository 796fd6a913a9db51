"""Subgroup collectives, as the subgroup page writes them (imported the way Quadrants has it).
Results depend on the subgroup width: the checks read it from the executor in Python
scope, as a user would (qd.simt.subgroup.group_size())."""
import numpy as np

import transpiler as qd
from transpiler.lang.simt import subgroup
from userguide.cases import case


def width() -> int:
    return qd.simt.subgroup.group_size()


@qd.kernel
def broadcast_lane0(a: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(a.shape[0]):
        a[i] = subgroup.shuffle(a[i], qd.u32(0))


@case(broadcast_lane0, needs=("subgroups",))
def _(rng):
    a = rng.random(256).astype(np.float32)
    before = a.copy()

    def check(_):
        w = width()
        np.testing.assert_array_equal(a, np.repeat(before.reshape(-1, w)[:, 0], w))
    return (a,), check


@qd.kernel
def swap_pairs(src: qd.types.ndarray(dtype=qd.f32, ndim=1), dst: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(src.shape[0]):
        lane = subgroup.invocation_id()
        dst[i] = subgroup.shuffle(src[i], qd.cast(lane ^ 1, qd.u32))


@case(swap_pairs, needs=("subgroups",))
def _(rng):
    src = rng.random(256).astype(np.float32)
    dst = np.zeros_like(src)

    def check(_):
        np.testing.assert_array_equal(dst, src.reshape(-1, 2)[:, ::-1].reshape(-1))
    return (src, dst), check


@qd.kernel
def reduce4(src: qd.types.ndarray(dtype=qd.f32, ndim=1), dst: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(src.shape[0]):
        val = src[i]
        val = val + subgroup.shuffle_down(val, qd.u32(2))
        val = val + subgroup.shuffle_down(val, qd.u32(1))
        dst[i] = val


@case(reduce4, needs=("subgroups",))
def _(rng):
    src = rng.integers(0, 100, 256).astype(np.float32)
    dst = np.zeros_like(src)

    def check(_):  # lane 0 of every group of 4 holds the group's sum
        np.testing.assert_array_equal(dst[::4], src.reshape(-1, 4).sum(1))
    return (src, dst), check


@qd.kernel
def subgroup_totals(x: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(x.shape[0]):
        total = subgroup.reduce_add(x[i])
        if subgroup.invocation_id() == 0:
            out[i // subgroup.group_size()] = total


@case(subgroup_totals, needs=("subgroups",))
def _(rng):
    x = rng.integers(-9, 9, 512).astype(np.int32)
    out = np.zeros(512, np.int32)

    def check(_):
        w = width()
        np.testing.assert_array_equal(out[:512 // w], x.reshape(-1, w).sum(1))
    return (x, out), check


@qd.kernel
def count_positive_lanes(a: qd.types.ndarray(dtype=qd.f32, ndim=1), counts: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(a.shape[0]):
        mask = subgroup.ballot(a[i] > 0.0)
        if subgroup.invocation_id() == 0:
            counts[i // subgroup.group_size()] = qd.math.popcnt(mask)


@case(count_positive_lanes, needs=("subgroups",))
def _(rng):
    a = rng.standard_normal(512).astype(np.float32)
    counts = np.zeros(512, np.int32)

    def check(_):
        w = width()
        np.testing.assert_array_equal(counts[:512 // w], (a.reshape(-1, w) > 0).sum(1))
    return (a, counts), check

"""``qd.algorithms.select`` (stream compaction) and ``reduce_by_key_add``: an exclusive scan
of 0/1 counts (flags; run heads) into the caller's u32 scratch, then a scatter, as in
Quadrants 1.3.3. The scan's partial levels sit above the ``n`` per-element indices."""
from __future__ import annotations

from .. import qd
from ..kernel import HostFunc

from .common import BLOCK_DIM, depth_problem, dtype_problem, partial_slots_host
from .staircase import exclusive_scan_levels


@qd.func
def _check(scratch: qd.template(), log256_max_n: qd.template()):
    qd.static_assert(not depth_problem(log256_max_n), depth_problem(log256_max_n))
    qd.static_assert(qd.typeof(scratch[0]) == qd.u32, "scratch must hold u32 (indices, whatever the element type)")


@qd.func
def _scatter_selected(arr: qd.template(), flags: qd.template(), indices: qd.template(), out: qd.template(), n):
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(n):
        if flags[i] != 0:
            out[qd.i32(indices[i])] = arr[i]


@qd.func(requires_top_level=True)
def select(arr: qd.template(), flags: qd.template(), out: qd.template(), num_out: qd.template(),
           scratch: qd.template(), n: qd.i32, log256_max_n: qd.template()):
    """Copy arr[i] for every flags[i] == 1 (flags exactly 0 or 1), in order, to a dense prefix
    of ``out``; num_out[0] = how many."""
    _check(scratch, log256_max_n)
    qd.static_assert(qd.typeof(flags[0]) == qd.i32, "flags must hold i32 (each exactly 0 or 1)")
    exclusive_scan_levels(flags, None, scratch, qd.u32, scratch, n, n, qd.u32, qd.u32, "add", log256_max_n)
    _scatter_selected(arr, flags, scratch, out, n)
    if n > 0:
        num_out[0] = qd.i32(scratch[n - 1]) + flags[n - 1]
    else:
        num_out[0] = 0


@qd.func
def _head(keys: qd.template(), i):
    """1 where a run of equal keys starts (NaN keys: each its own run, NaN != NaN)."""
    h = qd.u32(1)
    if i > 0:
        if keys[i] == keys[i - 1]:
            h = qd.u32(0)
    return h


@qd.func
def _mark_heads(keys: qd.template(), heads: qd.template(), n):
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(n):
        heads[i] = _head(keys, i)


@qd.func
def _zero(values: qd.template(), n, value_dtype: qd.template()):
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(n):
        values[i] = qd.cast(0, value_dtype)


@qd.func
def _scatter_runs(keys_in: qd.template(), values_in: qd.template(), runs: qd.template(), keys_out: qd.template(),
                  values_out: qd.template(), n):
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(n):
        h = _head(keys_in, i)
        pos = qd.i32(runs[i] + h) - 1
        if h != 0:
            keys_out[pos] = keys_in[i]
        qd.atomic_add(values_out[pos], values_in[i])


@qd.func(requires_top_level=True)
def reduce_by_key_add(keys_in: qd.template(), values_in: qd.template(), keys_out: qd.template(),
                      values_out: qd.template(), num_runs: qd.template(), scratch: qd.template(), n: qd.i32,
                      value_dtype: qd.template(), log256_max_n: qd.template()):
    """Each run of consecutive equal keys becomes (key, sum of its values) in keys_out /
    values_out[0:num_runs[0]]."""
    _check(scratch, log256_max_n)
    qd.static_assert(not dtype_problem(value_dtype, "value_dtype", ("i32", "u32", "f32")),
                     dtype_problem(value_dtype, "value_dtype", ("i32", "u32", "f32")))
    qd.static_assert(not dtype_problem(qd.typeof(keys_in[0]), "the key dtype", ("i32", "u32", "f32")),
                     dtype_problem(qd.typeof(keys_in[0]), "the key dtype", ("i32", "u32", "f32")))
    _mark_heads(keys_in, scratch, n)
    exclusive_scan_levels(scratch, qd.u32, scratch, qd.u32, scratch, n, n, qd.u32, qd.u32, "add", log256_max_n)
    _zero(values_out, n, value_dtype)
    _scatter_runs(keys_in, values_in, scratch, keys_out, values_out, n)
    if n > 0:
        num_runs[0] = qd.i32(scratch[n - 1] + _head(keys_in, n - 1))
    else:
        num_runs[0] = 0


def _indices_and_partials(n: int) -> int:
    """n per-element slots plus the partial levels of the deepest scan (log256_max_n = 4), so
    one size serves every depth (these helpers take none, as in Quadrants)."""
    return max(n + partial_slots_host(n, 3), 1) if n > 0 else 1


@qd.func
def _indices_and_partials_kernel(n):
    c1 = (n + 255) >> 8
    c2 = (c1 + 255) >> 8
    c3 = (c2 + 255) >> 8
    return max(qd.select(n > 0, n + c1 + c2 + c3, 1), 1)


def _select_slots_host(n: int) -> int:
    """u32 scratch slots select needs for up to ``n`` elements."""
    return _indices_and_partials(n)


def _rbk_slots_host(n: int) -> int:
    """u32 scratch slots reduce_by_key_add needs for up to ``n`` elements."""
    return _indices_and_partials(n)


select_scratch_slots = HostFunc(_indices_and_partials_kernel.fn, _select_slots_host)
select_scratch_slots.__name__ = "select_scratch_slots"
reduce_by_key_scratch_slots = HostFunc(_indices_and_partials_kernel.fn, _rbk_slots_host)
reduce_by_key_scratch_slots.__name__ = "reduce_by_key_scratch_slots"


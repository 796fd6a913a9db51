"""The part of ``qd.simt.subgroup`` written in the kernel language on top of the native
subgroup primitives (shuffles, ballot, votes, add/min/max folds): Quadrants' tiled
operations over groups of ``2**log2_size`` consecutive lanes, their full-subgroup forms,
segmented reductions, votes, lane masks and the in-register bitonic sort.

Semantics and argument conventions are Quadrants' (``log2_size`` a template int, results
broadcast to every lane of the group). A group is ``2**log2_size`` consecutive threads of
the block's linear thread index, aligned; the path is chosen at translation from the width
the code is specialized to:

- a group within one subgroup is shuffles, and a group spanning the whole subgroup is one
  subgroup collective of the IR (the add/min/max folds, the scans of every operator, the
  votes), which each target spells its best way: one REDUX on CUDA for integer sums,
  ``subgroupAdd`` / ``subgroupInclusiveXor`` on Vulkan, ``simd_sum`` on Metal;
- a group wider than the subgroup (``reduce_add_tiled(v, 5)`` on lavapipe's 8 lanes) is
  carried out by the block's subgroups together: each does its share natively, publishes
  one value per subgroup to shared memory between two block barriers, and folds in the
  shares of the subgroups before it in its group (the bitonic sort exchanges through
  shared memory at the strides past the subgroup). The emitted code says so in a comment.
  Such a call is then a block collective: the block must be a whole number of groups (a
  located error otherwise) and the call must be reached by every thread of the block
  (uniform control flow, checked by the hazard analysis like ``block.sync()``).

Every reduction leaves its result in every lane of the group (Quadrants guarantees lane 0
only); exclusive scans shift the input first and then scan, which Quadrants does to dodge a
Metal miscompile of a shuffle of a scan result.
"""
from __future__ import annotations

import math
import sys
import types

from . import qd
from .kernel import comptime

__all__ = [
    "elect", "ballot_first_n", "lanemask_lt", "lanemask_le", "lanemask_eq", "lanemask_gt", "lanemask_ge",
    "all_true_tiled", "any_true_tiled", "all_equal_tiled", "all_equal",
    *(f"{kind}_{op}_tiled" for kind in ("reduce", "reduce_all") for op in ("add", "min", "max")),
    *(f"segmented_reduce_{op}{tiled}" for op in ("add", "min", "max") for tiled in ("_tiled", "")),
    *(f"{kind}_{op}_tiled" for kind in ("inclusive", "exclusive")
      for op in ("add", "mul", "min", "max", "and", "or", "xor")),
    *(f"{kind}_{op}" for kind in ("inclusive", "exclusive") for op in ("mul", "and", "or", "xor")),
    "bitonic_sort_kv_tiled", "bitonic_sort_kv",
]

subgroup = qd.simt.subgroup
block = qd.simt.block
_NATIVE = ("add", "min", "max")   # the folds every target has as one subgroup collective
_SCANS = ("add", "mul", "min", "max", "and", "or", "xor")  # the scans the IR has as one collective
_BITWISE = ("and", "or", "xor")


# ----------------------------------------------------------------------------- translation-time helpers

@comptime
def _identity_value(op, dtype):
    if op in ("add", "or", "xor"):
        return 0.0 if dtype.is_float else 0
    if op == "mul":
        return 1.0 if dtype.is_float else 1
    if op == "and":
        if dtype.is_float:
            raise ValueError("a bitwise AND scan needs an integer value")
        return -1 if dtype.is_signed else (1 << dtype.bits) - 1
    info = None if dtype.is_float else (dtype.bits, dtype.is_signed)
    if op == "min":
        return math.inf if info is None else (1 << (info[0] - (1 if info[1] else 0))) - 1
    if op == "max":
        return -math.inf if info is None else (-(1 << (info[0] - 1)) if info[1] else 0)
    raise ValueError(f"no identity for {op!r}; use exclusive_scan(value, block_dim, op, identity, dtype)")


@qd.func
def identity(op: qd.template(), dtype: qd.template()):
    """The value ``op`` leaves unchanged, typed: add/or/xor 0, mul 1, and all bits set, min
    the type's max (+inf), max the type's min (-inf, 0 for unsigned). A cast of a Python
    number, not ``dtype(x)``: that makes a numpy scalar, and importing numpy was a fifth of
    the CLI's cold start."""
    return qd.cast(_identity_value(op, dtype), dtype)


@comptime
def _valid(log2_size):
    return isinstance(log2_size, int) and not isinstance(log2_size, bool) and 0 <= log2_size


@comptime
def _wide(log2_size, size):
    """The group spans more lanes than one subgroup: the block's subgroups carry it out together."""
    return _valid(log2_size) and (1 << log2_size) > size


@comptime
def _width_error(name, log2_size):
    return f"qd.simt.subgroup.{name}: log2_size must be a non-negative int, not {log2_size!r}"


@comptime
def _tiles_block(log2_size, block_dim):
    return block_dim % (1 << log2_size) == 0


@comptime
def _block_error(name, log2_size, size, block_dim):
    return (f"qd.simt.subgroup.{name}: log2_size={log2_size} spans {1 << log2_size} lanes, more than the "
            f"{size}-lane subgroup this code is specialized to, so the block's subgroups carry each group out "
            f"together, and the block of {block_dim} threads is not a whole number of groups: use "
            f"qd.loop_config(block_dim=N) with N a multiple of {1 << log2_size}, or log2_size <= "
            f"{size.bit_length() - 1}")


@comptime
def _wide_note(name, log2_size, size):
    return (f"{name}: a group of {1 << log2_size} lanes on {size}-lane subgroups: {(1 << log2_size) // size} "
            "subgroups combine their shares through shared memory and block barriers")


@comptime
def _full(log2_size, size):
    return 1 << log2_size == size


@comptime
def _group_bits(log2_size):
    return ((1 << (1 << log2_size)) - 1) & 0xFFFFFFFF


@comptime
def _is_int(dtype):
    return not dtype.is_float and dtype.bits > 1


@qd.func
def _check_width(name: qd.template(), log2_size: qd.template()):
    """The argument checked; for a group wider than the subgroup, the block checked against it
    and the path named in the emitted code."""
    qd.static_assert(_valid(log2_size), _width_error(name, log2_size))
    if qd.static(_wide(log2_size, subgroup.group_size())):
        qd.static_assert(_tiles_block(log2_size, block._dim()),
                         _block_error(name, log2_size, subgroup.group_size(), block._dim()))
        subgroup._note(_wide_note(name, log2_size, subgroup.group_size()))


@qd.func
def combine(op: qd.template(), a, b):
    """``a op b`` for a named operator, or the @qd.func ``op(a, b)``."""
    if qd.static(op == "add"):
        return a + b
    elif qd.static(op == "mul"):
        return a * b
    elif qd.static(op == "min"):
        return min(a, b)
    elif qd.static(op == "max"):
        return max(a, b)
    elif qd.static(op == "and"):
        return a & b
    elif qd.static(op == "or"):
        return a | b
    elif qd.static(op == "xor"):
        return a ^ b
    else:
        return op(a, b)


@qd.func
def native_reduce(value, op: qd.template()):
    """Every lane gets the fold of its subgroup with add, min or max: one collective."""
    if qd.static(op == "add"):
        return subgroup.reduce_add(value)
    elif qd.static(op == "min"):
        return subgroup.reduce_min(value)
    else:
        return subgroup.reduce_max(value)


@qd.func
def native_inclusive(value, op: qd.template()):
    return subgroup._scan("inclusive", op, value)


@qd.func
def native_exclusive(value, op: qd.template()):
    return subgroup._scan("exclusive", op, value)


@comptime
def _bitwise_message(name):
    return f"qd.simt.subgroup.{name} takes an integer value (a bitwise scan)"


@qd.func
def _integer_only(name: qd.template(), op: qd.template(), value):
    qd.static_assert(op not in _BITWISE or _is_int(qd.typeof(value)), _bitwise_message(name))


# ----------------------------------------------------------------------------- group folds and scans

@qd.func
def tiled_fold(value, log2_size: qd.template(), op: qd.template()):
    """The fold of ``value`` over each group of ``2**log2_size`` lanes, in every lane of it:
    an xor butterfly (a user operator must commute), native over the whole subgroup."""
    if qd.static(_full(log2_size, subgroup.group_size()) and op in _NATIVE):
        return native_reduce(value, op)
    else:
        v = value
        for k in qd.static(range(log2_size)):
            v = combine(op, v, subgroup.shuffle_xor(v, qd.u32(1 << k)))
        return v


@qd.func
def _ladder(value, log2_size: qd.template(), op: qd.template()):
    """Hillis-Steele inclusive scan within each group: step k folds the lane 2**k below in
    front (``op(earlier, later)``, so an operator need not commute)."""
    lane = subgroup.invocation_id() & ((1 << log2_size) - 1)
    v = value
    for k in qd.static(range(log2_size)):
        other = subgroup.shuffle_up(v, qd.u32(1 << k))
        if lane >= (1 << k):
            v = combine(op, other, v)
    return v


@qd.func
def tiled_inclusive(value, log2_size: qd.template(), op: qd.template()):
    if qd.static(_full(log2_size, subgroup.group_size()) and op in _SCANS):
        return native_inclusive(value, op)
    else:
        return _ladder(value, log2_size, op)


@qd.func
def tiled_exclusive(value, log2_size: qd.template(), op: qd.template()):
    """Lane 0 of each group gets ``op``'s identity, lane i the fold of lanes 0..i-1."""
    if qd.static(_full(log2_size, subgroup.group_size()) and op in _SCANS):
        return native_exclusive(value, op)
    else:
        prev = subgroup.shuffle_up(value, qd.u32(1))
        if subgroup.invocation_id() & ((1 << log2_size) - 1) == 0:
            prev = identity(op, qd.typeof(value))
        return _ladder(prev, log2_size, op)


# ----------------------------------------------------------------------------- groups wider than the subgroup
# The group of thread t is the 2**log2_size threads around it, aligned: its subgroups are
# `per_group` consecutive ones, the first `first`, this thread's the `mine`-th of them.
# Every routine starts with a barrier (a call in a loop must not overwrite slots another
# subgroup still reads; past it the subgroup is known converged), publishes one value per
# subgroup, and reads them back after a second one.

@comptime
def _per_group(log2_size, size):
    return (1 << log2_size) // size


@comptime
def _log2(n):
    return n.bit_length() - 1


@qd.func
def _wide_fold(value, log2_size: qd.template(), op: qd.template()):
    """The fold of ``value`` over the group: each subgroup folds natively, lane 0 publishes,
    and every subgroup folds its group's partials across its lanes."""
    size = qd.static(subgroup.group_size())
    per_group = qd.static(_per_group(log2_size, size))
    partials = block.SharedArray((block._dim() // size,), qd.typeof(value))
    tid = block.thread_idx()
    sub = tid >> subgroup.log2_group_size()
    block.sync()
    v = native_reduce(value, op)
    if tid & (size - 1) == 0:
        partials[sub] = v
    block.sync()
    first = sub - (sub & (per_group - 1))
    if qd.static(per_group <= size):
        # Lanes l, l + per_group, ... hold partial l: a butterfly over the low bits.
        v = tiled_fold(partials[first + (tid & (per_group - 1))], _log2(per_group), op)
    else:
        # More partials than lanes: lane l folds partials l, l + size, ..., then the subgroup folds.
        lane = tid & (size - 1)
        v = partials[first + lane]
        for k in qd.static(range(size, per_group, size)):
            v = combine(op, v, partials[first + lane + k])
        v = native_reduce(v, op)
    return v


@qd.func
def _wide_scan(value, log2_size: qd.template(), op: qd.template(), inclusive: qd.template()):
    """Each subgroup scans natively; the last lane publishes the subgroup's total, and each
    subgroup folds the totals of the subgroups before it in its group in front of its scan."""
    size = qd.static(subgroup.group_size())
    per_group = qd.static(_per_group(log2_size, size))
    totals = block.SharedArray((block._dim() // size,), qd.typeof(value))
    tid = block.thread_idx()
    sub = tid >> subgroup.log2_group_size()
    block.sync()
    incl = native_inclusive(value, op)
    result = incl
    if qd.static(not inclusive):
        result = native_exclusive(value, op)
    if tid & (size - 1) == size - 1:
        totals[sub] = incl
    block.sync()
    mine = sub & (per_group - 1)
    first = sub - mine
    if qd.static(per_group <= size):
        # Lanes l, l + per_group, ... hold total l: scanned over the low bits, lane mine - 1
        # has the prefix (every lane shuffles; `mine` is the same on the whole subgroup).
        t = totals[first + (tid & (per_group - 1))]
        prefix = subgroup.shuffle(tiled_inclusive(t, _log2(per_group), op), qd.u32((mine - 1) & (per_group - 1)))
        if mine > 0:
            result = combine(op, prefix, result)
    elif mine > 0:
        prefix = totals[first]
        for j in qd.static(range(1, per_group - 1)):
            if j < mine:
                prefix = combine(op, prefix, totals[first + j])
        result = combine(op, prefix, result)
    return result


@qd.func
def _wide_segmented(value, head_flag, log2_size: qd.template(), op: qd.template()):
    """Each subgroup scans its segments (its first lane a head); a lane whose segment opened
    in an earlier subgroup folds in the carry: the totals of the subgroups back to the last
    one that opened a segment, whose total counts from its last head."""
    size = qd.static(subgroup.group_size())
    per_group = qd.static(_per_group(log2_size, size))
    totals = block.SharedArray((block._dim() // size,), qd.typeof(value))
    opened = block.SharedArray((block._dim() // size,), qd.i32)
    tid = block.thread_idx()
    sub = tid >> subgroup.log2_group_size()
    lane = tid & (size - 1)
    block.sync()
    v = _segmented_scan(value, head_flag, subgroup.log2_group_size(), op)
    heads = subgroup.ballot(head_flag != 0)
    if lane == size - 1:
        totals[sub] = v
        opened[sub] = qd.i32(heads != qd.u64(0))
    block.sync()
    mine = sub & (per_group - 1)
    # (2 << 63 wraps to 0 in u64: every bit, for lane 63)
    if mine > 0 and heads & ((qd.u64(2) << qd.u64(lane)) - qd.u64(1)) == qd.u64(0):
        first = sub - mine
        carry = totals[first]
        for j in qd.static(range(1, per_group - 1)):
            if j < mine:
                if opened[first + j] != 0:
                    carry = totals[first + j]
                else:
                    carry = combine(op, carry, totals[first + j])
        v = combine(op, carry, v)
    return v


@qd.func
def _wide_first(value, log2_size: qd.template()):
    """The value of the group's first thread, in every thread of the group."""
    firsts = block.SharedArray((block._dim() >> log2_size,), qd.typeof(value))
    tid = block.thread_idx()
    block.sync()
    if tid & ((1 << log2_size) - 1) == 0:
        firsts[tid >> log2_size] = value
    block.sync()
    return firsts[tid >> log2_size]


@qd.func
def _reduce(name: qd.template(), value, log2_size: qd.template(), op: qd.template()):
    _check_width(name, log2_size)
    if qd.static(_wide(log2_size, subgroup.group_size())):
        return _wide_fold(value, log2_size, op)
    else:
        return tiled_fold(value, log2_size, op)


@qd.func
def _inclusive(name: qd.template(), value, log2_size: qd.template(), op: qd.template()):
    _check_width(name, log2_size)
    _integer_only(name, op, value)
    if qd.static(_wide(log2_size, subgroup.group_size())):
        return _wide_scan(value, log2_size, op, True)
    else:
        return tiled_inclusive(value, log2_size, op)


@qd.func
def _exclusive(name: qd.template(), value, log2_size: qd.template(), op: qd.template()):
    _check_width(name, log2_size)
    _integer_only(name, op, value)
    if qd.static(_wide(log2_size, subgroup.group_size())):
        return _wide_scan(value, log2_size, op, False)
    else:
        return tiled_exclusive(value, log2_size, op)


@qd.func
def reduce_add_tiled(value, log2_size: qd.template()):
    return _reduce("reduce_add_tiled", value, log2_size, "add")


@qd.func
def reduce_min_tiled(value, log2_size: qd.template()):
    return _reduce("reduce_min_tiled", value, log2_size, "min")


@qd.func
def reduce_max_tiled(value, log2_size: qd.template()):
    return _reduce("reduce_max_tiled", value, log2_size, "max")


@qd.func
def reduce_all_add_tiled(value, log2_size: qd.template()):
    return _reduce("reduce_all_add_tiled", value, log2_size, "add")


@qd.func
def reduce_all_min_tiled(value, log2_size: qd.template()):
    return _reduce("reduce_all_min_tiled", value, log2_size, "min")


@qd.func
def reduce_all_max_tiled(value, log2_size: qd.template()):
    return _reduce("reduce_all_max_tiled", value, log2_size, "max")


@qd.func
def inclusive_add_tiled(value, log2_size: qd.template()):
    return _inclusive("inclusive_add_tiled", value, log2_size, "add")


@qd.func
def inclusive_mul_tiled(value, log2_size: qd.template()):
    return _inclusive("inclusive_mul_tiled", value, log2_size, "mul")


@qd.func
def inclusive_min_tiled(value, log2_size: qd.template()):
    return _inclusive("inclusive_min_tiled", value, log2_size, "min")


@qd.func
def inclusive_max_tiled(value, log2_size: qd.template()):
    return _inclusive("inclusive_max_tiled", value, log2_size, "max")


@qd.func
def inclusive_and_tiled(value, log2_size: qd.template()):
    return _inclusive("inclusive_and_tiled", value, log2_size, "and")


@qd.func
def inclusive_or_tiled(value, log2_size: qd.template()):
    return _inclusive("inclusive_or_tiled", value, log2_size, "or")


@qd.func
def inclusive_xor_tiled(value, log2_size: qd.template()):
    return _inclusive("inclusive_xor_tiled", value, log2_size, "xor")


@qd.func
def exclusive_add_tiled(value, log2_size: qd.template()):
    return _exclusive("exclusive_add_tiled", value, log2_size, "add")


@qd.func
def exclusive_mul_tiled(value, log2_size: qd.template()):
    return _exclusive("exclusive_mul_tiled", value, log2_size, "mul")


@qd.func
def exclusive_min_tiled(value, log2_size: qd.template()):
    return _exclusive("exclusive_min_tiled", value, log2_size, "min")


@qd.func
def exclusive_max_tiled(value, log2_size: qd.template()):
    return _exclusive("exclusive_max_tiled", value, log2_size, "max")


@qd.func
def exclusive_and_tiled(value, log2_size: qd.template()):
    return _exclusive("exclusive_and_tiled", value, log2_size, "and")


@qd.func
def exclusive_or_tiled(value, log2_size: qd.template()):
    return _exclusive("exclusive_or_tiled", value, log2_size, "or")


@qd.func
def exclusive_xor_tiled(value, log2_size: qd.template()):
    return _exclusive("exclusive_xor_tiled", value, log2_size, "xor")


# The full-subgroup forms Quadrants has beyond the native add/min/max ones.

@qd.func
def inclusive_mul(value):
    return _inclusive("inclusive_mul", value, subgroup.log2_group_size(), "mul")


@qd.func
def inclusive_and(value):
    return _inclusive("inclusive_and", value, subgroup.log2_group_size(), "and")


@qd.func
def inclusive_or(value):
    return _inclusive("inclusive_or", value, subgroup.log2_group_size(), "or")


@qd.func
def inclusive_xor(value):
    return _inclusive("inclusive_xor", value, subgroup.log2_group_size(), "xor")


@qd.func
def exclusive_mul(value):
    return _exclusive("exclusive_mul", value, subgroup.log2_group_size(), "mul")


@qd.func
def exclusive_and(value):
    return _exclusive("exclusive_and", value, subgroup.log2_group_size(), "and")


@qd.func
def exclusive_or(value):
    return _exclusive("exclusive_or", value, subgroup.log2_group_size(), "or")


@qd.func
def exclusive_xor(value):
    return _exclusive("exclusive_xor", value, subgroup.log2_group_size(), "xor")


# ----------------------------------------------------------------------------- segmented reductions

@qd.func
def _distance_to_head(head_flag, log2_size: qd.template()):
    """How many lanes this lane sits past the nearest lane at or below it in its group whose
    ``head_flag`` is non-zero (the group's first lane is a head regardless): one ballot and
    one count of leading zeros."""
    heads = subgroup.ballot(head_flag != 0)
    lane = subgroup.invocation_id()
    at = lane & ((1 << log2_size) - 1)
    if qd.static(log2_size <= 5):
        # This group's bits, moved down to bit 0 of a u32 (a group never straddles bit 32).
        group = qd.u32((heads >> qd.u64(lane - at)) & qd.u64(_group_bits(log2_size))) | qd.u32(1)
        below = group & (qd.u32(0xFFFFFFFF) >> qd.u32(31 - at))
        return at - (31 - qd.math.clz(below))
    else:
        below = (heads | qd.u64(1)) & (qd.u64(0xFFFFFFFFFFFFFFFF) >> qd.u64(63 - at))
        return at - (63 - qd.math.clz(below))


@qd.func
def _segmented_scan(value, head_flag, log2_size: qd.template(), op: qd.template()):
    distance = _distance_to_head(head_flag, log2_size)
    v = value
    for k in qd.static(range(log2_size)):
        other = subgroup.shuffle_up(v, qd.u32(1 << k))
        if distance >= (1 << k):
            v = combine(op, other, v)
    return v


@qd.func
def _segmented(name: qd.template(), value, head_flag, log2_size: qd.template(), op: qd.template()):
    _check_width(name, log2_size)
    if qd.static(_wide(log2_size, subgroup.group_size())):
        return _wide_segmented(value, head_flag, log2_size, op)
    else:
        return _segmented_scan(value, head_flag, log2_size, op)


@qd.func
def segmented_reduce_add_tiled(value, head_flag, log2_size: qd.template()):
    """Each lane's inclusive sum from its segment's head (the nearest lane at or below it
    whose ``head_flag`` is non-zero, or the group's first lane)."""
    return _segmented("segmented_reduce_add_tiled", value, head_flag, log2_size, "add")


@qd.func
def segmented_reduce_min_tiled(value, head_flag, log2_size: qd.template()):
    return _segmented("segmented_reduce_min_tiled", value, head_flag, log2_size, "min")


@qd.func
def segmented_reduce_max_tiled(value, head_flag, log2_size: qd.template()):
    return _segmented("segmented_reduce_max_tiled", value, head_flag, log2_size, "max")


@qd.func
def segmented_reduce_add(value, head_flag):
    return _segmented("segmented_reduce_add", value, head_flag, subgroup.log2_group_size(), "add")


@qd.func
def segmented_reduce_min(value, head_flag):
    return _segmented("segmented_reduce_min", value, head_flag, subgroup.log2_group_size(), "min")


@qd.func
def segmented_reduce_max(value, head_flag):
    return _segmented("segmented_reduce_max", value, head_flag, subgroup.log2_group_size(), "max")


# ----------------------------------------------------------------------------- votes

@qd.func
def _vote(predicate, log2_size: qd.template(), every: qd.template()):
    if qd.static(_wide(log2_size, subgroup.group_size())):
        return _wide_fold(qd.i32(predicate != 0), log2_size, "min" if every else "max")
    elif qd.static(_full(log2_size, subgroup.group_size())):
        if qd.static(every):
            return subgroup.all_true(predicate)
        else:
            return subgroup.any_true(predicate)
    else:
        p = qd.i32(predicate != 0)
        for k in qd.static(range(log2_size)):
            if qd.static(every):
                p = p & subgroup.shuffle_xor(p, qd.u32(1 << k))
            else:
                p = p | subgroup.shuffle_xor(p, qd.u32(1 << k))
        return p


@qd.func
def all_true_tiled(predicate, log2_size: qd.template()):
    """1 in every lane of a group of ``2**log2_size`` lanes when the predicate is non-zero on all of them."""
    _check_width("all_true_tiled", log2_size)
    return _vote(predicate, log2_size, True)


@qd.func
def any_true_tiled(predicate, log2_size: qd.template()):
    """1 in every lane of a group when the predicate is non-zero on any of them."""
    _check_width("any_true_tiled", log2_size)
    return _vote(predicate, log2_size, False)


@qd.func
def all_equal_tiled(value, log2_size: qd.template()):
    """1 in every lane of a group when all its lanes hold equal values (``==``: NaN differs
    from itself, +0.0 equals -0.0)."""
    _check_width("all_equal_tiled", log2_size)
    if qd.static(_wide(log2_size, subgroup.group_size())):
        return _vote(value == _wide_first(value, log2_size), log2_size, True)
    else:
        lane = subgroup.invocation_id()
        first = subgroup.shuffle(value, qd.u32(lane & ~((1 << log2_size) - 1)))
        return _vote(value == first, log2_size, True)


@qd.func
def all_equal(value):
    """1 when every lane of the subgroup holds the same value, else 0."""
    return subgroup.all_true(value == subgroup.broadcast(value, qd.u32(0)))


# ----------------------------------------------------------------------------- lanes and masks

@qd.func
def elect():
    """1 in lane 0 of the subgroup, else 0."""
    return qd.i32(subgroup.invocation_id() == 0)


@qd.func
def ballot_first_n(predicate, n: qd.template()):
    """The low ``n`` (1..32) bits of the ballot of ``predicate``, as a u32."""
    qd.static_assert(1 <= n <= 32, "qd.simt.subgroup.ballot_first_n(predicate, n) needs 1 <= n <= 32")
    keep = predicate != 0
    if qd.static(n < 32):
        keep = keep and subgroup.invocation_id() < n
    return qd.u32(subgroup.ballot(keep) & qd.u64(0xFFFFFFFF))


@qd.func
def lanemask_lt(lane):
    return (qd.u32(1) << qd.u32(lane)) - qd.u32(1)


@qd.func
def lanemask_le(lane):
    bit = qd.u32(1) << qd.u32(lane)
    return bit | (bit - qd.u32(1))


@qd.func
def lanemask_eq(lane):
    return qd.u32(1) << qd.u32(lane)


@qd.func
def lanemask_gt(lane):
    return ~lanemask_le(lane)


@qd.func
def lanemask_ge(lane):
    return ~lanemask_lt(lane)


# ----------------------------------------------------------------------------- sorting

@qd.func
def bitonic_sort_kv_tiled(key, value, log2_size: qd.template()):
    """Sort (key, value) pairs ascending (ties broken by value) within each group of
    ``2**log2_size`` lanes, one pair per lane: the standard bitonic network, two shuffles
    and a compare per stage, no shared memory (past the subgroup's width, the exchange goes
    through shared memory). Returns ``(key, value)``."""
    _check_width("bitonic_sort_kv_tiled", log2_size)
    if qd.static(_wide(log2_size, subgroup.group_size())):
        return _wide_sort(key, value, log2_size)
    else:
        lane = subgroup.invocation_id()
        k = key
        v = value
        for stage in qd.static(range(1, log2_size + 1)):
            for step in qd.static(range(stage - 1, -1, -1)):
                their_k = subgroup.shuffle_xor(k, qd.u32(1 << step))
                their_v = subgroup.shuffle_xor(v, qd.u32(1 << step))
                # The lower lane of a pair keeps the smaller pair in an ascending run; the last
                # stage's runs span the whole group and all ascend.
                ascending = qd.static(stage == log2_size) or (lane & (1 << stage)) == 0
                keep_small = ((lane & (1 << step)) == 0) == ascending
                smaller = their_k < k or (their_k == k and their_v < v)
                larger = their_k > k or (their_k == k and their_v > v)
                if (keep_small and smaller) or (not keep_small and larger):
                    k = their_k
                    v = their_v
        return k, v


@qd.func
def _partner(k, v, step: qd.template(), keys: qd.template(), values: qd.template(), tid):
    """The pair of thread tid ^ 2**step: a shuffle within the subgroup, else through shared
    memory between two barriers (the first keeps the previous exchange's reads intact)."""
    if qd.static(step < subgroup.log2_group_size()):
        return subgroup.shuffle_xor(k, qd.u32(1 << step)), subgroup.shuffle_xor(v, qd.u32(1 << step))
    else:
        block.sync()
        keys[tid] = k
        values[tid] = v
        block.sync()
        return keys[tid ^ (1 << step)], values[tid ^ (1 << step)]


@qd.func
def _wide_sort(key, value, log2_size: qd.template()):
    """The same network over a group of several subgroups: a pair's partner within the
    subgroup comes by shuffle, one further away through shared memory between barriers."""
    keys = block.SharedArray((block._dim(),), qd.typeof(key))
    values = block.SharedArray((block._dim(),), qd.typeof(value))
    tid = block.thread_idx()
    k = key
    v = value
    for stage in qd.static(range(1, log2_size + 1)):
        for step in qd.static(range(stage - 1, -1, -1)):
            their_k, their_v = _partner(k, v, step, keys, values, tid)
            ascending = qd.static(stage == log2_size) or (tid & (1 << stage)) == 0
            keep_small = ((tid & (1 << step)) == 0) == ascending
            smaller = their_k < k or (their_k == k and their_v < v)
            larger = their_k > k or (their_k == k and their_v > v)
            if (keep_small and smaller) or (not keep_small and larger):
                k = their_k
                v = their_v
    return k, v


@qd.func
def bitonic_sort_kv(key, value):
    return bitonic_sort_kv_tiled(key, value, subgroup.log2_group_size())


@qd.func
def _inclusive_scan_tiled(value, op: qd.template(), log2_size: qd.template()):
    """Quadrants' generic tiled scan (private to it, but its tests import it): the inclusive scan
    of ``value`` under the @qd.func ``op`` over each group of ``2**log2_size`` lanes; ``op``
    need not commute (the earlier lanes fold in front)."""
    return _inclusive("_inclusive_scan_tiled", value, log2_size, op)


# ... from Quadrants' module path of it, ``quadrants.lang.simt.reductions``.
reductions = types.ModuleType(f"{__package__}.simt.reductions", "Quadrants' private module of the tiled scans.")
reductions._inclusive_scan_tiled = _inclusive_scan_tiled
sys.modules[reductions.__name__] = reductions

"""The part of ``qd.simt.subgroup`` written in the kernel language on top of the native
subgroup primitives (shuffles, ballot, votes, add/min/max folds): Quadrants' tiled
operations over groups of ``2**log2_size`` consecutive lanes, their full-subgroup forms,
segmented reductions, votes, lane masks and the in-register bitonic sort.

Semantics and argument conventions are Quadrants' (``log2_size`` a template int, results
broadcast to every lane of the group), with two guarantees Quadrants leaves to the caller:

- a group wider than the subgroup the code is specialized to (``reduce_add_tiled(v, 5)`` on
  an 8-lane device) is a located error at translation, never a NaN at run time;
- a tiled operation spanning the whole subgroup is one subgroup collective of the IR (the
  add/min/max folds, the scans of every operator, the votes), which each target spells its
  best way: one REDUX on CUDA for integer sums, ``subgroupAdd`` / ``subgroupInclusiveXor`` on
  Vulkan, ``simd_sum`` / ``simd_prefix_inclusive_product`` on Metal, a shuffle ladder where
  there is no instruction.

Every reduction leaves its result in every lane of the group (Quadrants guarantees lane 0
only); exclusive scans shift the input first and then scan, which Quadrants does to dodge a
Metal miscompile of a shuffle of a scan result.
"""
from __future__ import annotations

import math

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
def _fits(log2_size, size):
    return isinstance(log2_size, int) and not isinstance(log2_size, bool) and 0 <= log2_size and \
        (1 << log2_size) <= size


@comptime
def _width_error(name, log2_size, size):
    if not isinstance(log2_size, int) or isinstance(log2_size, bool) or log2_size < 0:
        return f"qd.simt.subgroup.{name}: log2_size must be a non-negative int, not {log2_size!r}"
    return (f"qd.simt.subgroup.{name}: log2_size={log2_size} spans {1 << log2_size} lanes, but the subgroup this "
            f"code is specialized to has {size} (the target's warp or wavefront, or the Vulkan device's): use "
            f"log2_size <= {size.bit_length() - 1}")


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
    qd.static_assert(_fits(log2_size, subgroup.group_size()), _width_error(name, log2_size, subgroup.group_size()))


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


@qd.func
def _reduce(name: qd.template(), value, log2_size: qd.template(), op: qd.template()):
    _check_width(name, log2_size)
    return tiled_fold(value, log2_size, op)


@qd.func
def _inclusive(name: qd.template(), value, log2_size: qd.template(), op: qd.template()):
    _check_width(name, log2_size)
    _integer_only(name, op, value)
    return tiled_inclusive(value, log2_size, op)


@qd.func
def _exclusive(name: qd.template(), value, log2_size: qd.template(), op: qd.template()):
    _check_width(name, log2_size)
    _integer_only(name, op, value)
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
def _segmented(name: qd.template(), value, head_flag, log2_size: qd.template(), op: qd.template()):
    _check_width(name, log2_size)
    distance = _distance_to_head(head_flag, log2_size)
    v = value
    for k in qd.static(range(log2_size)):
        other = subgroup.shuffle_up(v, qd.u32(1 << k))
        if distance >= (1 << k):
            v = combine(op, other, v)
    return v


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
def _vote_tiled(name: qd.template(), predicate, log2_size: qd.template(), every: qd.template()):
    _check_width(name, log2_size)
    if qd.static(_full(log2_size, subgroup.group_size())):
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
    return _vote_tiled("all_true_tiled", predicate, log2_size, True)


@qd.func
def any_true_tiled(predicate, log2_size: qd.template()):
    """1 in every lane of a group when the predicate is non-zero on any of them."""
    return _vote_tiled("any_true_tiled", predicate, log2_size, False)


@qd.func
def all_equal_tiled(value, log2_size: qd.template()):
    """1 in every lane of a group when all its lanes hold equal values (``==``: NaN differs
    from itself, +0.0 equals -0.0)."""
    _check_width("all_equal_tiled", log2_size)
    lane = subgroup.invocation_id()
    first = subgroup.shuffle(value, qd.u32(lane & ~((1 << log2_size) - 1)))
    return _vote_tiled("all_equal_tiled", value == first, log2_size, True)


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
    and a compare per stage, no shared memory. Returns ``(key, value)``."""
    _check_width("bitonic_sort_kv_tiled", log2_size)
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
def bitonic_sort_kv(key, value):
    return bitonic_sort_kv_tiled(key, value, subgroup.log2_group_size())

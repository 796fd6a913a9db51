"""Block-wide reductions, scans and the radix rank, written once in the kernel language on
top of the subgroup primitives, ``SharedArray`` and ``block.sync()``. The frontend inlines
them like any ``@qd.func``, so every target gets the same algorithm, specialized to its
subgroup width at translation time (32 on CUDA and Metal, 64 or 32 on HIP, the device's
on Vulkan).

Shape of every block collective: each subgroup folds its lanes with native subgroup
operations, one lane per subgroup publishes to a shared slot, one barrier, then every
subgroup folds the published values itself (so every thread has the block's result and
no second broadcast round is needed). A barrier before publishing keeps a collective
called in a loop from overwriting slots another subgroup is still reading.
"""
from __future__ import annotations

from . import qd
from .kernel import comptime
from .subgrouplib import combine as _combine
from .subgrouplib import identity, native_reduce, tiled_inclusive

__all__ = ["reduce", "reduce_add", "reduce_min", "reduce_max", "reduce_all", "reduce_all_add",
           "reduce_all_min", "reduce_all_max", "inclusive_scan", "inclusive_add", "inclusive_min",
           "inclusive_max", "exclusive_scan", "exclusive_add", "exclusive_min", "exclusive_max",
           "radix_rank_match_atomic_or"]

block = qd.simt.block
subgroup = qd.simt.subgroup


@comptime
def _pow2(n):
    return n > 0 and n & (n - 1) == 0


@comptime
def _log2(n):
    return n.bit_length() - 1


@comptime
def _subgroups(block_dim, size):
    if block_dim % size != 0:
        raise ValueError(f"block_dim {block_dim} must be a positive multiple of the subgroup size {size}")
    return block_dim // size


@qd.func
def _subgroup_reduce(value, op: qd.template()):
    """Every lane gets the fold of its subgroup: native where the op is add/min/max,
    otherwise an xor butterfly of shuffles."""
    if qd.static(op in ("add", "min", "max")):
        return native_reduce(value, op)
    else:
        # Pairs, then pairs of pairs: lane 0 folds the lanes in order (a user's operator
        # need not commute), and hands its result to every lane.
        v = value
        for k in qd.static(range(subgroup.log2_group_size())):
            v = op(v, subgroup.shuffle_xor(v, qd.u32(1 << k)))
        return subgroup.broadcast(v, qd.u32(0))


@qd.func
def _subgroup_inclusive(value, op: qd.template()):
    return tiled_inclusive(value, subgroup.log2_group_size(), op)


@qd.func
def _block_fold(value, block_dim: qd.template(), op: qd.template(), dtype: qd.template()):
    """The fold of ``value`` over the block, in every thread."""
    n = qd.static(_subgroups(block_dim, subgroup.group_size()))
    if qd.static(n > 1):
        # The barrier before publishing goes first: past it the subgroup is known to be
        # converged, so nvcc drops the divergent fallback of every shuffle (BRA.DIV).
        block.sync()
    v = _subgroup_reduce(qd.cast(value, dtype), op)
    if qd.static(n > 1):
        partials = block.SharedArray((n,), dtype)
        tid = block.thread_idx()
        # The thread index is never negative: masks and shifts, not C's signed % and /
        # (four SASS instructions each way on sm_90).
        lane = tid & (subgroup.group_size() - 1)
        if lane == 0:
            partials[tid >> subgroup.log2_group_size()] = v
        block.sync()
        if qd.static(isinstance(op, str) and dtype.is_float and n <= subgroup.group_size() and _pow2(n)):
            # Lane l reads partial l >> s (s = log2(size / n)), so every n lanes spaced
            # 2**s apart hold all n partials, and an xor butterfly over the top log2(n) lane
            # bits leaves the total in every lane: 3 shuffles for 8 warps instead of a
            # full-width reduce of mostly identities (integers keep the native subgroup
            # reduce, one REDUX on sm_80+). The same pairs as lanes l & (n - 1) with a
            # butterfly over the low bits, but the byte offset of l >> 2 is one mask on
            # 32 lanes and 8 partials of 4 bytes.
            s = qd.static(subgroup.log2_group_size() - _log2(n))
            v = partials[lane >> s]
            for k in qd.static(range(s, subgroup.log2_group_size())):
                v = _combine(op, v, subgroup.shuffle_xor(v, qd.u32(1 << k)))
        elif qd.static(isinstance(op, str)):
            # Lanes fold the published values in parallel, then across the subgroup.
            acc = identity(op, dtype)
            for k in qd.static(range(0, n, subgroup.group_size())):
                if lane + k < n:
                    if qd.static(k == 0):
                        acc = partials[lane]
                    else:
                        acc = _combine(op, acc, partials[lane + k])
            v = _subgroup_reduce(acc, op)
        else:
            # A user operator has no known identity: fold in order, in every thread.
            v = partials[0]
            for k in range(1, n):
                v = op(v, partials[k])
    return v


@qd.func
def _scan_totals(totals: qd.template(), lane, n: qd.template(), op: qd.template(), dtype: qd.template()):
    """(the total lane k read, the inclusive scan of totals[0..k]), right in lanes k < n."""
    if qd.static(_pow2(n)):
        # Only lanes < n are read back: log2(n) steps suffice (2 on wave64 with 4 waves
        # instead of 6), and lanes >= n may read any slot (lane & (n - 1) keeps the load in
        # bounds and unpredicated).
        t = totals[lane & (n - 1)]
        v = t
        for k in qd.static(range(_log2(n))):
            other = subgroup.shuffle_up(v, qd.u32(1 << k))
            if subgroup.invocation_id() >= (1 << k):
                v = _combine(op, other, v)
        return t, v
    else:
        t = identity(op, dtype)
        if lane < n:
            t = totals[lane]
        return t, _subgroup_inclusive(t, op)


@qd.func
def _block_scan(value, block_dim: qd.template(), op: qd.template(), dtype: qd.template(), inclusive: qd.template(),
                ident, seed_is_identity: qd.template()):
    """Inclusive (or exclusive, seeded with ``ident``) scan of ``value`` over the block.
    ``seed_is_identity``: ``ident`` is ``identity(op, dtype)``."""
    n = qd.static(_subgroups(block_dim, subgroup.group_size()))
    if qd.static(n > 1):
        block.sync()  # first, as in _block_fold
    x = qd.cast(value, dtype)
    incl = _subgroup_inclusive(x, op)
    result = incl
    if qd.static(not inclusive):
        if qd.static(op == "add" and not dtype.is_float and dtype.bits >= 32 and seed_is_identity):
            # An integer sum's exclusive scan is inclusive - own, exactly (wrapping): no
            # shuffle, and lane 0 gets 0, the identity.
            result = incl - x
        else:
            result = subgroup.shuffle_up(incl, qd.u32(1))
            if subgroup.invocation_id() == 0:
                result = ident
    if qd.static(n > 1):
        totals = block.SharedArray((n,), dtype)
        tid = block.thread_idx()
        sub = tid >> subgroup.log2_group_size()
        if tid & (subgroup.group_size() - 1) == subgroup.group_size() - 1:
            totals[sub] = incl
        block.sync()
        if qd.static(isinstance(op, str) and not dtype.is_float and dtype.bits == 32 and subgroup.group_size() <= 32):
            # 32-bit integers: this subgroup's prefix is the fold of the totals of the
            # subgroups before it, lanes k < sub holding totals[k] and the rest the identity:
            # one native subgroup reduce (a REDUX on sm_80+, subgroupAdd on Vulkan, simd_sum
            # on Metal) instead of a scan of the totals and a shuffle. Exact for integers in
            # any order. (Not on wave64, whose reduce is a 6-step butterfly.) More subgroups
            # than lanes (16 of 8 on lavapipe): each lane folds every width-th total first,
            # not a loop over `sub` totals in every thread.
            lane = tid & (subgroup.group_size() - 1)
            t = identity(op, dtype)
            for k in qd.static(range(0, n, subgroup.group_size())):
                if qd.static(k == 0):
                    if lane < sub:
                        t = totals[lane]
                elif lane + k < sub:
                    t = _combine(op, t, totals[lane + k])
            result = _combine(op, _subgroup_reduce(t, op), result)
        elif qd.static(isinstance(op, str) and n <= subgroup.group_size()):
            # Every subgroup scans the totals itself and takes the entry before its own: a
            # few shuffles, no branches. (A loop bounded by `sub` compiles to an unrolled
            # ladder of branches; a select per total, to predicates the compiler hoists out
            # of the task loop and then spills.) With n a power of two, each aligned group
            # of n lanes holds all the totals and log2(n) shuffle steps do.
            t, scanned = _scan_totals(totals, tid & (subgroup.group_size() - 1), n, op, dtype)
            if qd.static(op == "add" and not dtype.is_float):
                # An integer sum's exclusive prefix is inclusive - own, exactly: lane `sub`
                # has this subgroup's, and the first subgroup's is 0 with no select.
                result = subgroup.shuffle(scanned - t, qd.u32(sub)) + result
            else:
                # (sub - 1) & (n - 1): lane n - 1 for the first subgroup, whose prefix is the identity.
                before = subgroup.shuffle(scanned, qd.u32((sub - 1) & (n - 1)))
                result = _combine(op, qd.select(sub > 0, before, identity(op, dtype)), result)
        elif sub > 0:
            # Every earlier subgroup's total, folded in front of this subgroup's own scan. No
            # identity needed: inclusive_scan's user operator has none.
            prefix = totals[0]
            for k in range(1, sub):
                prefix = _combine(op, prefix, totals[k])
            result = _combine(op, prefix, result)
    return result


# ----------------------------------------------------------------------------- public API

@qd.func
def reduce(value, block_dim: qd.template(), op: qd.template(), dtype: qd.template()):
    """The fold of ``value`` over the block with the @qd.func ``op``; valid in thread 0
    (every thread gets it here)."""
    return _block_fold(value, block_dim, op, dtype)


@qd.func
def reduce_all(value, block_dim: qd.template(), op: qd.template(), dtype: qd.template()):
    """The fold of ``value`` over the block, in every thread."""
    return _block_fold(value, block_dim, op, dtype)


@qd.func
def reduce_add(value, block_dim: qd.template(), dtype: qd.template()):
    return _block_fold(value, block_dim, "add", dtype)


@qd.func
def reduce_min(value, block_dim: qd.template(), dtype: qd.template()):
    return _block_fold(value, block_dim, "min", dtype)


@qd.func
def reduce_max(value, block_dim: qd.template(), dtype: qd.template()):
    return _block_fold(value, block_dim, "max", dtype)


@qd.func
def reduce_all_add(value, block_dim: qd.template(), dtype: qd.template()):
    return _block_fold(value, block_dim, "add", dtype)


@qd.func
def reduce_all_min(value, block_dim: qd.template(), dtype: qd.template()):
    return _block_fold(value, block_dim, "min", dtype)


@qd.func
def reduce_all_max(value, block_dim: qd.template(), dtype: qd.template()):
    return _block_fold(value, block_dim, "max", dtype)


@qd.func
def inclusive_scan(value, block_dim: qd.template(), op: qd.template(), dtype: qd.template()):
    return _block_scan(value, block_dim, op, dtype, True, qd.cast(0, dtype), False)


@qd.func
def inclusive_add(value, block_dim: qd.template(), dtype: qd.template()):
    return _block_scan(value, block_dim, "add", dtype, True, identity("add", dtype), True)


@qd.func
def inclusive_min(value, block_dim: qd.template(), dtype: qd.template()):
    return _block_scan(value, block_dim, "min", dtype, True, identity("min", dtype), True)


@qd.func
def inclusive_max(value, block_dim: qd.template(), dtype: qd.template()):
    return _block_scan(value, block_dim, "max", dtype, True, identity("max", dtype), True)


@qd.func
def exclusive_scan(value, block_dim: qd.template(), op: qd.template(), identity_value, dtype: qd.template()):
    return _block_scan(value, block_dim, op, dtype, False, qd.cast(identity_value, dtype), False)


@qd.func
def exclusive_add(value, block_dim: qd.template(), dtype: qd.template()):
    return _block_scan(value, block_dim, "add", dtype, False, identity("add", dtype), True)


@qd.func
def exclusive_min(value, block_dim: qd.template(), dtype: qd.template()):
    return _block_scan(value, block_dim, "min", dtype, False, identity("min", dtype), True)


@qd.func
def exclusive_max(value, block_dim: qd.template(), dtype: qd.template()):
    return _block_scan(value, block_dim, "max", dtype, False, identity("max", dtype), True)


# The per-subgroup digit counts of radix_rank_match_atomic_or take at most this much shared
# memory, whatever the number of subgroups: 256 threads in 8-lane subgroups (lavapipe) would
# otherwise need 32 KiB for them alone, all a Vulkan device must offer.
RANK_COUNTS_BYTES = 16384


@comptime
def _rank_round(n_sub, digits):
    """How many subgroups publish their counts per round: all of them when the table fits,
    else the largest power of two that does."""
    if n_sub * digits * 4 <= RANK_COUNTS_BYTES:
        return n_sub
    g = 1
    while 2 * g * digits * 4 <= RANK_COUNTS_BYTES:
        g *= 2
    return g


@comptime
def _ceil_div(a, b):
    return -(-a // b)


@qd.func
def match_digit(digit, radix_bits: qd.template()):
    """The lanes of this subgroup holding the same ``radix_bits``-bit digit as this one, as a
    ballot mask: one ballot per digit bit (CUB's match, at any subgroup width)."""
    same = subgroup.ballot(True)
    for b in qd.static(range(radix_bits)):
        bit = (digit >> b) & 1
        votes = subgroup.ballot(bit != 0)
        same &= qd.select(bit != 0, votes, ~votes)
    return same


@qd.func
def radix_rank_match_atomic_or(key, block_dim: qd.template(), radix_bits: qd.template(), bit_start, num_bits,
                               bins: qd.template(), excl_prefix: qd.template()):
    """The stable rank of ``key``'s digit (bits [bit_start, bit_start + num_bits)) in the
    block: the number of threads holding a smaller digit, plus the threads before this one
    holding the same digit. ``bins`` receives the per-digit counts and ``excl_prefix`` their
    exclusive prefix sum; both are SharedArray((1 << radix_bits,), qd.i32).

    Works at any subgroup width (8 on lavapipe, 32, 64): each subgroup finds the lanes
    sharing its digit with one ballot per digit bit (the "match"), the first of them
    publishes the group's count, then one thread per digit turns the per-subgroup counts
    into offsets. When the table of counts would pass RANK_COUNTS_BYTES, the subgroups
    publish in rounds through a table of one round's rows, each digit's thread carrying its
    running total from round to round."""
    digits = qd.static(1 << radix_bits)
    size = qd.static(subgroup.group_size())
    n_sub = qd.static(_subgroups(block_dim, size))
    qd.static_assert(digits <= block_dim, "radix_rank_match_atomic_or needs 1 << radix_bits <= block_dim")
    per_round = qd.static(_rank_round(n_sub, digits))
    counts = block.SharedArray((per_round, digits), qd.i32)
    tid = block.thread_idx()
    lane = tid % size
    sub = tid // size
    digit = qd.i32((qd.u32(key) >> qd.u32(bit_start)) & ((qd.u32(1) << qd.u32(num_bits)) - qd.u32(1)))
    # Called in a loop, the previous call's threads may still be reading counts.
    block.sync()
    for k in range(tid, per_round * digits, block_dim):
        counts[k // digits, k % digits] = 0
    same = match_digit(digit, radix_bits)
    below = qd.math.popcnt(same & ((qd.u64(1) << qd.u64(lane)) - qd.u64(1)))
    total = 0
    before = 0  # the threads of earlier subgroups holding this thread's digit
    if qd.static(per_round == n_sub):
        block.sync()
        if below == 0:
            counts[sub, digit] = qd.math.popcnt(same)
        block.sync()
        if tid < digits:
            for s in range(n_sub):
                c = counts[s, tid]
                counts[s, tid] = total
                total += c
            bins[tid] = total
    else:
        for r in qd.static(range(_ceil_div(n_sub, per_round))):
            if qd.static(r > 0):
                block.sync()  # the previous round's rows are read
                for k in range(tid, per_round * digits, block_dim):
                    counts[k // digits, k % digits] = 0
            block.sync()
            mine = sub - r * per_round
            if below == 0 and mine >= 0 and mine < per_round:
                counts[mine, digit] = qd.math.popcnt(same)
            block.sync()
            if tid < digits:
                for s in range(min(per_round, n_sub - r * per_round)):
                    c = counts[s, tid]
                    counts[s, tid] = total
                    total += c
            block.sync()
            if mine >= 0 and mine < per_round:
                before = counts[mine, digit]
        if tid < digits:
            bins[tid] = total
    start = exclusive_add(total, block_dim, qd.i32)
    if tid < digits:
        excl_prefix[tid] = start
    block.sync()
    if qd.static(per_round == n_sub):
        before = counts[sub, digit]
    return excl_prefix[digit] + before + below

"""``qd.algorithms.sort``: a stable LSB radix sort, 8-bit digits, keys (and optionally
values) ping-ponging between the caller's buffers, as Quadrants 1.3.3 defines it.

Each digit pass is three phases (tasks): every tile of 256 keys counts its digits into the
digit-major histogram ``scratch[d * tiles + t]``; the staircase scans that histogram in
place (which makes it every (digit, tile)'s first output position); every tile ranks its
keys by digit, stably, and scatters them. A multi-pass scheme rather than onesweep's
single pass with decoupled look-back: a look-back needs blocks of one launch to wait on
each other, which lavapipe and the CPU emulator (blocks one after another) do not
promise. Signed and float keys are read through the order-preserving map to unsigned
bits on the fly, so there are no separate twiddle passes and the keys are stored as given.
"""
from __future__ import annotations

import transpiler as qd
from transpiler.lang.kernel import comptime

from .common import BLOCK_DIM, check_depth_host, depth_problem, dtype_problem, natural_depth, partial_slots_host
from .staircase import exclusive_scan_levels

block = qd.simt.block
subgroup = qd.simt.subgroup
DIGITS = 256


@qd.func
def _sortable_bits(key, key_dtype: qd.template()):
    """The key's bits, mapped so that unsigned order is the key's order: flip the sign bit of
    a signed integer; flip the sign bit of a non-negative float and every bit of a negative
    one (NaNs with the sign bit clear go last, as in numpy.sort)."""
    if qd.static(key_dtype == qd.u32 or key_dtype == qd.u64):
        return key
    elif qd.static(key_dtype == qd.i32):
        return qd.bit_cast(key, qd.u32) ^ qd.u32(0x80000000)
    elif qd.static(key_dtype == qd.i64):
        return qd.bit_cast(key, qd.u64) ^ qd.u64(0x8000000000000000)
    elif qd.static(key_dtype == qd.f32):
        b = qd.bit_cast(key, qd.u32)
        return b ^ qd.select((b >> qd.u32(31)) != qd.u32(0), qd.u32(0xFFFFFFFF), qd.u32(0x80000000))
    else:
        b = qd.bit_cast(key, qd.u64)
        return b ^ qd.select((b >> qd.u64(63)) != qd.u64(0), qd.u64(0xFFFFFFFFFFFFFFFF), qd.u64(0x8000000000000000))


@qd.func
def _digit(key, key_dtype: qd.template(), shift: qd.template()):
    bits = _sortable_bits(key, key_dtype)
    return qd.i32((bits >> shift) & 255)


@qd.func
def _histogram(keys: qd.template(), hist: qd.template(), n, num_tiles, key_dtype: qd.template(),
               shift: qd.template()):
    """hist[d * num_tiles + t] = how many keys of tile t have digit d."""
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(num_tiles << 8):
        counts = block.SharedArray((DIGITS,), qd.i32)
        tid = block.thread_idx()
        block.sync()  # the previous tile's counts are read (a grid-stride round) before zeroing
        counts[tid] = 0
        block.sync()
        if i < n:
            qd.atomic_add(counts[_digit(keys[i], key_dtype, shift)], 1)
        block.sync()
        hist[tid * num_tiles + (i >> 8)] = qd.u32(counts[tid])


@qd.func
def _rank_in_digit(digit):
    """How many threads of the block before this one hold the same digit: the subgroups
    before this one (per-subgroup digit counts, two 16-bit counts per shared word so that
    lavapipe's 32 subgroups of 8 fit in 16 KB) plus the lanes before this one in its own
    (the lanes sharing its digit, found with one ballot per digit bit)."""
    size = qd.static(subgroup.group_size())
    n_sub = qd.static(BLOCK_DIM // subgroup.group_size())
    counts = block.SharedArray((n_sub, DIGITS // 2), qd.u32)
    tid = block.thread_idx()
    lane = tid & (size - 1)
    sub = tid >> qd.static(subgroup.log2_group_size())
    block.sync()  # a previous round's readers are done with counts
    for k in range(tid, n_sub * (DIGITS // 2), BLOCK_DIM):
        counts[k // (DIGITS // 2), k % (DIGITS // 2)] = qd.u32(0)
    same = subgroup.ballot(True)
    for b in qd.static(range(8)):
        bit = (digit >> b) & 1
        votes = subgroup.ballot(bit != 0)
        same &= qd.select(bit != 0, votes, ~votes)
    below = qd.math.popcnt(same & ((qd.u64(1) << qd.u64(lane)) - qd.u64(1)))
    half = qd.u32((digit & 1) << 4)
    block.sync()
    if below == 0:
        qd.atomic_add(counts[sub, digit >> 1], qd.u32(qd.math.popcnt(same)) << half)
    block.sync()
    if tid < DIGITS // 2:  # exclusive prefix over the subgroups, both halves at once (no carry: <= 256)
        total = qd.u32(0)
        for s in range(n_sub):
            c = counts[s, tid]
            counts[s, tid] = total
            total += c
    block.sync()
    return qd.i32((counts[sub, digit >> 1] >> half) & qd.u32(0xFFFF)) + qd.i32(below)


@qd.func
def _scatter(keys_in: qd.template(), keys_out: qd.template(), values_in: qd.template(), values_out: qd.template(),
             offsets: qd.template(), n, num_tiles, key_dtype: qd.template(), has_values: qd.template(),
             shift: qd.template()):
    """Every key to its digit's first position for its tile, plus its stable rank there."""
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(num_tiles << 8):
        d = 255  # past the live count: the largest digit, so that they rank after every real key
        if i < n:
            d = _digit(keys_in[i], key_dtype, shift)
        rank = _rank_in_digit(d)
        if i < n:
            pos = qd.i32(offsets[d * num_tiles + (i >> 8)]) + rank
            keys_out[pos] = keys_in[i]
            if qd.static(has_values):
                values_out[pos] = values_in[i]


@qd.func
def _digit_pass(keys_in: qd.template(), keys_out: qd.template(), values_in: qd.template(),
                values_out: qd.template(), scratch: qd.template(), n, key_dtype: qd.template(),
                has_values: qd.template(), shift: qd.template(), log256_max_n: qd.template()):
    num_tiles = (n + (BLOCK_DIM - 1)) >> 8
    _histogram(keys_in, scratch, n, num_tiles, key_dtype, shift)
    exclusive_scan_levels(scratch, qd.u32, scratch, qd.u32, scratch, num_tiles << 8, num_tiles << 8, qd.u32, qd.u32,
                          "add", log256_max_n)
    _scatter(keys_in, keys_out, values_in, values_out, scratch, n, num_tiles, key_dtype, has_values, shift)


@qd.func
def _passes(keys: qd.template(), tmp_keys: qd.template(), values: qd.template(), tmp_values: qd.template(),
            scratch: qd.template(), count, key_dtype: qd.template(), has_values: qd.template(),
            end_bit: qd.template(), log256_max_n: qd.template()):
    for p in qd.static(range(end_bit // 8)):
        if qd.static(p % 2 == 0):
            _digit_pass(keys, tmp_keys, values, tmp_values, scratch, count, key_dtype, has_values, qd.static(p * 8),
                        log256_max_n)
        else:
            _digit_pass(tmp_keys, keys, tmp_values, values, scratch, count, key_dtype, has_values, qd.static(p * 8),
                        log256_max_n)


@comptime
def end_bit_problem(end_bit, key_dtype) -> str:
    width = key_dtype.bits
    if isinstance(end_bit, bool) or not isinstance(end_bit, int) or end_bit <= 0 or end_bit % 16 or end_bit > width:
        return (f"end_bit must be a positive multiple of 16 up to the key width ({width}), got {end_bit!r}: 8-bit "
                "digits in an even number of passes, so that the result lands back in `keys`")
    return ""


@qd.func(requires_top_level=True)
def sort(keys: qd.template(), tmp_keys: qd.template(), values: qd.template(), tmp_values: qd.template(),
         scratch: qd.template(), n: qd.template(), key_dtype: qd.template(), has_values: qd.template(),
         end_bit: qd.template(), log256_max_n: qd.template()):
    """Sort keys[0:n[()]] ascending, stably, in place (the low ``end_bit`` bits); with
    ``has_values``, values moves with them (else pass keys / tmp_keys in their place)."""
    qd.static_assert(not depth_problem(log256_max_n), depth_problem(log256_max_n))
    qd.static_assert(not dtype_problem(key_dtype, "key_dtype"), dtype_problem(key_dtype, "key_dtype"))
    qd.static_assert(qd.typeof(keys[0]) == key_dtype and qd.typeof(tmp_keys[0]) == key_dtype,
                     "keys and tmp_keys must hold the dtype passed as `key_dtype`")
    qd.static_assert(not end_bit_problem(end_bit, key_dtype), end_bit_problem(end_bit, key_dtype))
    qd.static_assert(qd.typeof(scratch[0]) == qd.u32, "scratch must hold u32 (tile histograms, whatever the key)")
    if qd.static(has_values):
        qd.static_assert(not dtype_problem(qd.typeof(values[0]), "the value dtype"),
                         dtype_problem(qd.typeof(values[0]), "the value dtype"))
    _passes(keys, tmp_keys, values, tmp_values, scratch, n[()], key_dtype, has_values, end_bit, log256_max_n)


def _sort_slots_host(n: int, log256_max_n: int | None = None) -> int:
    """u32 scratch slots sort needs for up to ``n`` keys at depth ``log256_max_n`` (the
    smallest that covers ``n`` when omitted; host only): the digit-major tile histograms
    plus the partial levels of their scan."""
    depth = natural_depth(n) if log256_max_n is None else log256_max_n
    check_depth_host(depth)
    hist = ((n + BLOCK_DIM - 1) // BLOCK_DIM) * DIGITS
    return max(hist + partial_slots_host(hist, depth - 1), 1)


@qd.func
def _sort_slots_kernel(n, log256_max_n: qd.template()):
    qd.static_assert(not depth_problem(log256_max_n), depth_problem(log256_max_n))
    hist = ((n + 255) >> 8) << 8
    total = hist
    c = hist
    for _ in qd.static(range(log256_max_n - 1)):
        c = (c + 255) >> 8
        total += c
    return max(total, 1)


sort_scratch_slots = qd.lang.HostFunc(_sort_slots_kernel.fn, _sort_slots_host)
sort_scratch_slots.__name__ = "sort_scratch_slots"

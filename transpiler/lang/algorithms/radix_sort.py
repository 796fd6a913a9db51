"""``qd.algorithms.sort``: a stable LSB radix sort, 8-bit digits, keys (and optionally
values) ping-ponging between the caller's buffers, as Quadrants 1.3.3 defines it, done as
onesweep (Adinets and Merrill, 2022): one pass over the keys per digit.

Tasks, for P = end_bit / 8 digits: (1) clear the tile tickets, the digit counts and the
first look-back table; (2) one read of every key counts the digits of all P passes at once;
(3) each pass's 256 counts become its digits' first output positions (one block per pass);
then (4) P onesweep passes. In a pass, each block takes the next tile of TILE keys from an
atomic ticket and ranks its keys by digit as CUB's onesweep does: ITEMS keys a thread,
each subgroup a contiguous run of the tile, ranked within the subgroup by ballot match
into its own row of digit counts (no block barrier per round), one pass over the rows
giving the subgroups' prefixes. It publishes its per-digit counts in the pass's look-back
table: one thread per digit walks back over the tiles before it (decoupled look-back)
until a tile that knows its inclusive prefix, and publishes its own. The tile then sorts
itself by digit in shared memory and writes out from there, so that the writes of a
subgroup are runs of consecutive addresses. P + 3 launches, each key read twice and
written once per pass.

The ticket is what makes the look-back safe without a promise that blocks run together: a
tile only waits on tiles whose blocks took their tickets earlier and so are running or
done; blocks run one after another (the CPU emulator) never wait at all. A table word
holds the flag and the count together (the count in 30 bits), published by one atomic
exchange, so no fence orders a flag after its value, on Metal too. Passes use two tables
in turn; a pass clears the next pass's rows as it goes, so nothing is cleared in between.

Signed and float keys are read through the order-preserving map to unsigned bits on the
fly, so there are no separate twiddle passes and the keys are stored as given.
"""
from __future__ import annotations

from .. import qd
from ..kernel import HostFunc, comptime

from .common import BLOCK_DIM, check_depth_host, depth_problem, dtype_problem, wide_for

block = qd.simt.block
subgroup = qd.simt.subgroup
DIGITS = 256
ITEMS = 16                        # keys per thread per tile, ranked in ITEMS rounds
TILE = BLOCK_DIM * ITEMS          # keys per tile: 4096
LOG2_TILE = 12
HIST_ITEMS = 16                   # keys per thread per block in the digit count
MAX_PASSES = 8                    # 64-bit keys
TICKETS = MAX_PASSES * DIGITS     # scratch: [digit counts of each pass][tickets][table 0][table 1]
TABLES = TICKETS + MAX_PASSES
AGGREGATE = 1 << 30               # a tile's own count of the digit is published
PREFIX = 2 << 30                  # the count of the digit in this tile and every tile before it
COUNT_MASK = (1 << 30) - 1
MAX_KEYS = COUNT_MASK             # a table word holds a count in 30 bits
POLLS = 16                        # reads of a tile's word before the block counts that tile itself


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
def _clear(scratch: qd.template(), num_tiles):
    """Zero the digit counts, the tickets and the first pass's look-back table."""
    for k in range(TABLES + (num_tiles << 8)):
        scratch[k] = qd.u32(0)


@qd.func
def _count_digits(keys: qd.template(), scratch: qd.template(), n, key_dtype: qd.template(), passes: qd.template()):
    """scratch[p * 256 + d] = how many keys have digit d in pass p, for every pass in one read
    of the keys: each block counts HIST_ITEMS * BLOCK_DIM keys in shared memory, then adds
    its counts to the global ones (one atomic per digit and pass)."""
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(((n + (BLOCK_DIM * HIST_ITEMS - 1)) // (BLOCK_DIM * HIST_ITEMS)) << 8):
        counts = block.SharedArray((passes, DIGITS), qd.i32)
        tid = block.thread_idx()
        block.sync()  # the previous round's counts are flushed before they are zeroed
        for p in qd.static(range(passes)):
            counts[p, tid] = 0
        block.sync()
        first = (i >> 8) * (BLOCK_DIM * HIST_ITEMS)
        for j in range(first + tid, min(first + BLOCK_DIM * HIST_ITEMS, n), BLOCK_DIM):
            bits = _sortable_bits(keys[j], key_dtype)
            for p in qd.static(range(passes)):
                qd.atomic_add(counts[p, qd.i32((bits >> qd.static(8 * p)) & 255)], 1)
        block.sync()
        for p in qd.static(range(passes)):
            c = counts[p, tid]
            if c != 0:
                qd.atomic_add(scratch[p * DIGITS + tid], qd.u32(c))


@qd.func
def _digit_starts(scratch: qd.template(), passes: qd.template()):
    """Each pass's digit counts become the digits' first output positions (one block a pass)."""
    qd.loop_config(block_dim=BLOCK_DIM)
    for k in range(passes * DIGITS):
        scratch[k] = block.exclusive_add(scratch[k], BLOCK_DIM, qd.u32)


@comptime
def _halves(group_size) -> int:
    """Digit counts per shared word in the ranking table: one, or two 16-bit counts where a
    word each would pass 16 KB (lavapipe's 32 subgroups of 8). A subgroup counts at most
    64 * ITEMS keys of a digit and a tile TILE, both under 2 ** 16, so halves never carry."""
    return 2 if (BLOCK_DIM // group_size) * DIGITS * 4 > 16384 else 1


@comptime
def _work_words(group_size) -> int:
    """The ranking table (a row of digit counts per subgroup) and, once the ranks are known,
    the stage the tile's keys and values pass through on their way out: one array for both."""
    return max(TILE, (BLOCK_DIM // group_size) * DIGITS // _halves(group_size))


@comptime
def _mask_dtype(group_size):
    """A subgroup's lane masks: 32 bits where it has no more lanes, else 64."""
    return qd.u32 if group_size <= 32 else qd.u64


@qd.func
def _match(digit):
    """The lanes of this subgroup holding this lane's 8-bit digit, as a ballot mask: one
    ballot per digit bit, folded in as the votes where the bit is set and their complement
    where it is clear (CUB's match; a ballot per bit is faster than CUDA's match.any on so
    few bits, CUB notes). 32-bit masks where the subgroup fits, as 64-bit logic costs two
    instructions where 32-bit costs one."""
    mask = qd.static(_mask_dtype(subgroup.group_size()))
    same = qd.cast(subgroup.ballot(True), mask)
    for b in qd.static(range(8)):
        is_set = (digit & (1 << b)) != 0
        same &= qd.cast(subgroup.ballot(is_set), mask) ^ qd.select(is_set, mask(0), ~mask(0))
    return same


@qd.func
def _warp_rank(digit, counts: qd.template(), row):
    """How many keys with this lane's digit its subgroup ranked before this one: those of its
    earlier rounds (the subgroup's running counts, at ``counts[row:]``) and the lanes below
    this one in this round. The lanes sharing the digit find each other with one ballot per
    digit bit (CUB's match, at any subgroup width, see _match); the first of them
    adds their number to the count and hands the old count to the others by shuffle: one
    shared-memory atomic per distinct digit a round, and no barrier."""
    halves = qd.static(_halves(subgroup.group_size()))
    lane = block.thread_idx() & (subgroup.group_size() - 1)
    same = _match(digit)
    mask = qd.static(_mask_dtype(subgroup.group_size()))
    below = qd.math.popcnt(same & ((mask(1) << mask(lane)) - mask(1)))
    half = qd.u32(0)
    if qd.static(halves == 2):
        half = qd.u32((digit & 1) << 4)
    old = qd.u32(0)
    if below == 0:
        old = qd.atomic_add(counts[row + digit // halves], qd.u32(qd.math.popcnt(same)) << half)
    old = subgroup.shuffle(old, qd.math.ffs(same) - 1)
    if qd.static(halves == 2):
        old = (old >> half) & qd.u32(0xFFFF)
    return qd.i32(old) + qd.i32(below)


@qd.func
def _subgroup_prefix(work: qd.template(), totals: qd.template()):
    """Each subgroup's row of digit counts becomes the count of the digit in the subgroups
    before it; returns the tile's count of the calling thread's digit (thread d: digit d)."""
    halves = qd.static(_halves(subgroup.group_size()))
    n_sub = qd.static(BLOCK_DIM // subgroup.group_size())
    width = qd.static(DIGITS // halves)
    tid = block.thread_idx()
    block.sync()  # every subgroup has ranked its keys
    if tid < width:
        total = qd.u32(0)
        for s in qd.static(range(n_sub)):
            c = work[s * width + tid]
            work[s * width + tid] = total
            total += c
        if qd.static(halves == 2):
            totals[2 * tid] = total & qd.u32(0xFFFF)
            totals[2 * tid + 1] = total >> qd.u32(16)
        else:
            totals[tid] = total
    block.sync()
    return totals[tid]


@qd.func
def _look_back(keys_in: qd.template(), scratch: qd.template(), counts: qd.template(), table, tile, n,
               key_dtype: qd.template(), shift: qd.template(), count):
    """The count of this thread's digit in every tile before ``tile``; publishes this tile's.
    Thread d handles digit d. A tile that has not published after a few reads is counted
    by the whole block from its keys instead of waited for, so no block ever waits on
    another: the sort needs no promise that blocks run side by side (lavapipe also ends
    any loop of a shader past 65,535 iterations in all, so a spin would be cut short)."""
    digit = block.thread_idx()
    before = qd.u32(0)
    done = tile == 0
    if done:
        qd.atomic_exchange(scratch[table + digit], qd.u32(PREFIX) | count)
    else:
        qd.atomic_exchange(scratch[table + (tile << 8) + digit], qd.u32(AGGREGATE) | count)
    k = tile - 1
    while block.sync_any_nonzero(qd.i32(not done)):
        word = qd.u32(0)
        if not done:
            for _ in qd.static(range(POLLS)):
                if word == qd.u32(0):
                    word = qd.volatile_load(scratch[table + (k << 8) + digit])
        if block.sync_any_nonzero(qd.i32(not done and word == qd.u32(0))):
            counts[digit] = qd.u32(0)
            block.sync()
            # A loop with bounds known only at run time, so that compilers keep it rolled:
            # this path is rare, and unrolled it would be an eighth of the pass's code.
            for idx in range((k << LOG2_TILE) + digit, min((k + 1) << LOG2_TILE, n), BLOCK_DIM):
                qd.atomic_add(counts[_digit(keys_in[idx], key_dtype, shift)], qd.u32(1))
            block.sync()
            if not done and word == qd.u32(0):
                word = qd.u32(AGGREGATE) | counts[digit]
            block.sync()  # counts are read before the next use
        if not done:
            before += word & qd.u32(COUNT_MASK)
            done = word >= qd.u32(PREFIX) or k == 0
        k -= 1
    if tile != 0:
        qd.atomic_exchange(scratch[table + (tile << 8) + digit], qd.u32(PREFIX) | (before + count))
    return before


@qd.func
def _word(value, dtype: qd.template(), w: qd.template()):
    """The ``w``-th 32-bit word of ``value``'s bits (the stage holds u32)."""
    if qd.static(dtype.bits == 32):
        return qd.bit_cast(value, qd.u32)
    else:
        return qd.u32((qd.bit_cast(value, qd.u64) >> qd.u64(32 * w)) & qd.u64(0xFFFFFFFF))


@qd.func
def _through_stage(work: qd.template(), items, local, dtype: qd.template()):
    """Each thread's ``items`` (round r: the key at ``first + r * subgroup size``) written to
    their places ``local`` in the tile's sorted order, and read back striped: round r of
    thread t gets the item at place r * BLOCK_DIM + t, so that a subgroup's writes to the
    output are runs of consecutive addresses. 64-bit items pass as two words in turn."""
    tid = block.thread_idx()
    wide = qd.static(wide_for(dtype))
    got = qd.Vector([0] * ITEMS, dt=wide)
    for w in qd.static(range(dtype.bits // 32)):
        block.sync()  # the stage is free: ranks read, or the previous word read back
        for r in qd.static(range(ITEMS)):
            work[local[r]] = _word(items[r], dtype, w)
        block.sync()
        for r in qd.static(range(ITEMS)):
            if qd.static(w == 0):
                got[r] = qd.cast(work[r * BLOCK_DIM + tid], wide)
            else:
                got[r] |= qd.cast(work[r * BLOCK_DIM + tid], wide) << qd.u64(32 * w)
    return got


@qd.func
def _rank_tile(keys_in: qd.template(), work: qd.template(), totals: qd.template(), tile, n,
               key_dtype: qd.template(), shift: qd.template()):
    """The tile's keys, ITEMS a thread (subgroup s, round r, lane l: key r * size + l of the
    subgroup's run of size * ITEMS, so loads are coalesced and the order of (s, r, l) is the
    keys' order), their digits (255 past the live count, so that they rank last) and their
    ranks within their subgroup; leaves in ``work`` the digit counts of the subgroups before
    each, and returns the tile's count of thread d's digit d."""
    size = qd.static(subgroup.group_size())
    width = qd.static(DIGITS // _halves(subgroup.group_size()))
    tid = block.thread_idx()
    sub = tid >> qd.static(subgroup.log2_group_size())
    for j in qd.static(range(-(-(BLOCK_DIM // size) * width // BLOCK_DIM))):
        k = tid + j * BLOCK_DIM
        if qd.static((j + 1) * BLOCK_DIM <= (BLOCK_DIM // size) * width) or k < (BLOCK_DIM // size) * width:
            work[k] = qd.u32(0)
    block.sync()
    first = (tile << LOG2_TILE) + sub * (size * ITEMS) + (tid & (size - 1))
    keys = qd.Vector([0] * ITEMS, dt=key_dtype)
    digits = qd.Vector([0] * ITEMS, dt=qd.i32)
    ranks = qd.Vector([0] * ITEMS, dt=qd.i32)
    # Unrolled here, as every loop over a thread's items: in an output loop a register array
    # indexed by the loop variable is an if-chain per access, which NVRTC then kept rolled
    # (the pass's rounds cost 3x their unrolled instructions). The price is lavapipe's
    # first compile of a sort: 7.7 s for a u32 key-value sort with no shader cache, was 4.8.
    for r in qd.static(range(ITEMS)):
        d = 255
        if first + r * size < n:
            key = keys_in[first + r * size]
            keys[r] = key
            d = _digit(key, key_dtype, shift)
        digits[r] = d
        ranks[r] = _warp_rank(d, work, sub * width)
    count = _subgroup_prefix(work, totals)
    return keys, digits, ranks, count


@qd.func
def _local_places(work: qd.template(), starts: qd.template(), digits, ranks):
    """Each key's place in the tile sorted by digit: where its digit starts in the tile, plus
    the keys of its digit in the subgroups before its own, plus its rank in its subgroup."""
    halves = qd.static(_halves(subgroup.group_size()))
    width = qd.static(DIGITS // halves)
    row = (block.thread_idx() >> qd.static(subgroup.log2_group_size())) * width
    local = qd.Vector([0] * ITEMS, dt=qd.i32)
    for r in qd.static(range(ITEMS)):
        d = digits[r]
        before = work[row + d // halves]
        if qd.static(halves == 2):
            before = (before >> qd.u32((d & 1) << 4)) & qd.u32(0xFFFF)
        local[r] = starts[d] + qd.i32(before) + ranks[r]
    return local


@qd.func
def _onesweep_pass(keys_in: qd.template(), keys_out: qd.template(), values_in: qd.template(),
                   values_out: qd.template(), scratch: qd.template(), n, num_tiles, key_dtype: qd.template(),
                   has_values: qd.template(), p: qd.template(), passes: qd.template()):
    """One digit: every tile ranks its keys, learns where its digits start by look-back, sorts
    itself by digit in shared memory and writes its keys (and values) out from there."""
    shift = qd.static(8 * p)
    table = TABLES + (p & 1) * (num_tiles << 8)
    next_table = TABLES + ((p + 1) & 1) * (num_tiles << 8)
    qd.loop_config(block_dim=BLOCK_DIM)
    for i in range(num_tiles << 8):
        ticket = block.SharedArray((1,), qd.i32)
        work = block.SharedArray((_work_words(subgroup.group_size()),), qd.u32)
        totals = block.SharedArray((DIGITS,), qd.u32)
        starts = block.SharedArray((DIGITS,), qd.i32)
        late = block.SharedArray((DIGITS,), qd.u32)  # a late tile's digit counts, made by this block
        tid = block.thread_idx()
        if tid == 0:
            ticket[0] = qd.i32(qd.atomic_add(scratch[TICKETS + p], qd.u32(1)))
        block.sync()
        tile = ticket[0]
        keys, digits, ranks, count = _rank_tile(keys_in, work, totals, tile, n, key_dtype, shift)
        starts[tid] = qd.i32(block.exclusive_add(count, BLOCK_DIM, qd.u32))
        live = count
        if tid == DIGITS - 1:  # the keys past the live count ranked as the last digit
            live -= qd.u32(max((tile << LOG2_TILE) + TILE - n, 0))
        before = _look_back(keys_in, scratch, late, table, tile, n, key_dtype, shift, live)
        if qd.static(p + 1 < passes):
            scratch[next_table + (tile << 8) + tid] = qd.u32(0)
        block.sync()  # starts holds the tile's digit starts
        local = _local_places(work, starts, digits, ranks)
        offset = qd.i32(scratch[p * DIGITS + tid] + before) - starts[tid]
        block.sync()  # every thread has read its starts
        starts[tid] = offset  # a digit's place in the tile -> its place in the output
        sorted_keys = _through_stage(work, keys, local, key_dtype)
        valid = min(TILE, n - (tile << LOG2_TILE))
        places = qd.Vector([0] * ITEMS, dt=qd.i32)
        for r in qd.static(range(ITEMS)):
            if r * BLOCK_DIM + tid < valid:
                key = qd.bit_cast(sorted_keys[r], key_dtype)
                places[r] = starts[_digit(key, key_dtype, shift)] + r * BLOCK_DIM + tid
                keys_out[places[r]] = key
        if qd.static(has_values):
            _move_values(values_in, values_out, work, local, places, tile, n, valid)


@qd.func
def _move_values(values_in: qd.template(), values_out: qd.template(), work: qd.template(), local, places, tile, n,
                 valid):
    """The values follow their keys through the stage to the same places."""
    size = qd.static(subgroup.group_size())
    tid = block.thread_idx()
    first = (tile << LOG2_TILE) + (tid >> qd.static(subgroup.log2_group_size())) * (size * ITEMS) + (tid & (size - 1))
    dtype = qd.static(qd.typeof(values_in[0]))
    values = qd.Vector([0] * ITEMS, dt=dtype)
    for r in qd.static(range(ITEMS)):
        if first + r * size < n:
            values[r] = values_in[first + r * size]
    staged = _through_stage(work, values, local, dtype)
    for r in qd.static(range(ITEMS)):
        if r * BLOCK_DIM + tid < valid:
            values_out[places[r]] = qd.bit_cast(staged[r], dtype)


@qd.func
def _passes(keys: qd.template(), tmp_keys: qd.template(), values: qd.template(), tmp_values: qd.template(),
            scratch: qd.template(), n, key_dtype: qd.template(), has_values: qd.template(),
            passes: qd.template()):
    num_tiles = (n + (TILE - 1)) >> LOG2_TILE
    _clear(scratch, num_tiles)
    _count_digits(keys, scratch, n, key_dtype, passes)
    _digit_starts(scratch, passes)
    for p in qd.static(range(passes)):
        if qd.static(p % 2 == 0):
            _onesweep_pass(keys, tmp_keys, values, tmp_values, scratch, n, num_tiles, key_dtype, has_values, p,
                           passes)
        else:
            _onesweep_pass(tmp_keys, keys, tmp_values, values, scratch, n, num_tiles, key_dtype, has_values, p,
                           passes)


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
    ``has_values``, values moves with them (else pass keys / tmp_keys in their place).
    At most 2 ** 30 - 1 keys (a look-back word holds a count in 30 bits)."""
    qd.static_assert(not depth_problem(log256_max_n), depth_problem(log256_max_n))
    qd.static_assert(not dtype_problem(key_dtype, "key_dtype"), dtype_problem(key_dtype, "key_dtype"))
    qd.static_assert(qd.typeof(keys[0]) == key_dtype and qd.typeof(tmp_keys[0]) == key_dtype,
                     "keys and tmp_keys must hold the dtype passed as `key_dtype`")
    qd.static_assert(not end_bit_problem(end_bit, key_dtype), end_bit_problem(end_bit, key_dtype))
    qd.static_assert(qd.typeof(scratch[0]) == qd.u32, "scratch must hold u32 (digit counts and look-back "
                     "tables, whatever the key)")
    if qd.static(has_values):
        qd.static_assert(not dtype_problem(qd.typeof(values[0]), "the value dtype"),
                         dtype_problem(qd.typeof(values[0]), "the value dtype"))
    _passes(keys, tmp_keys, values, tmp_values, scratch, n[()], key_dtype, has_values, end_bit // 8)


def _sort_slots_host(n: int, log256_max_n: int | None = None) -> int:
    """u32 scratch slots sort needs for up to ``n`` keys (host only): the digit counts and
    tickets of up to eight passes, then two look-back tables of 256 words per tile.
    ``log256_max_n`` is checked, as in the other algorithms, but the sort's needs do not
    depend on it."""
    if log256_max_n is not None:
        check_depth_host(log256_max_n)
    if n > MAX_KEYS:
        raise ValueError(f"sort takes at most {MAX_KEYS} keys (a look-back word holds a count in 30 bits), got {n}")
    return TABLES + 2 * ((n + TILE - 1) // TILE) * DIGITS


@qd.func
def _sort_slots_kernel(n, log256_max_n: qd.template()):
    qd.static_assert(not depth_problem(log256_max_n), depth_problem(log256_max_n))
    return TABLES + (((n + (TILE - 1)) >> LOG2_TILE) << 9)


sort_scratch_slots = HostFunc(_sort_slots_kernel.fn, _sort_slots_host)
sort_scratch_slots.__name__ = "sort_scratch_slots"

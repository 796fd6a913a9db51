"""qd.algorithms (Quadrants 1.3.3's device-wide algorithms) on every executor against NumPy,
on random data, at sizes 0, 1, odd, tile boundaries and large, for every dtype each op
takes; the language features they stand on (a top-level @qd.func call whose loops become
tasks, a loop over range(n[0]) with n on the device); their errors; and every target's
output compiled by its real toolchain.

One kernel per (op, dtype) serves every size: the live count stays on the device and
log256_max_n fixes the phases, as in Quadrants."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import transpiler as qd
from conftest import assert_compiles, init_executor
from transpiler.lang.algorithms.device_scan import scan_tiles

alg = qd.algorithms
ND1 = qd.types.ndarray(ndim=1)
D = 3  # log256_max_n of the kernels below: up to 16.7M elements
SIZES = [0, 1, 2, 7, 255, 256, 257, 1000, 65535, 65536, 65537, 200_001]
BIG = 1_000_000
DTYPES = {"i32": qd.i32, "u32": qd.u32, "f32": qd.f32, "i64": qd.i64, "u64": qd.u64, "f64": qd.f64}
NP = {"i32": np.int32, "u32": np.uint32, "f32": np.float32, "i64": np.int64, "u64": np.uint64, "f64": np.float64}


def random_values(rng, name: str, n: int) -> np.ndarray:
    """Random values of dtype ``name``: negatives for the signed, the whole range's extremes
    in the mix, small enough magnitudes that a float sum keeps its precision."""
    if name in ("f32", "f64"):
        return rng.uniform(-1000, 1000, n).astype(NP[name])
    info = np.iinfo(NP[name])
    lo, hi = max(info.min, -(1 << 20)), min(info.max, 1 << 20)
    v = rng.integers(lo, hi, n, dtype=np.int64).astype(NP[name])
    if n > 4:
        v[rng.integers(0, n, 2)] = [info.min, info.max] if name.startswith("u") is False else [0, info.max]
    return v


def count(n: int) -> np.ndarray:
    return np.array([n], np.int32)


# ----------------------------------------------------------------------------- kernels

@qd.kernel
def reduce_and_scan(arr: ND1, red: ND1, scanned: ND1, scratch: ND1, n: ND1, dtype: qd.template(),
                    op: qd.template()):
    if qd.static(op == "add"):
        alg.reduce_add(arr, red, scratch, n[0], dtype, D)
        alg.exclusive_scan_add(arr, scanned, scratch, n[0], dtype, D)
    elif qd.static(op == "min"):
        alg.reduce_min(arr, red, scratch, n[0], dtype, D)
        alg.exclusive_scan_min(arr, scanned, scratch, n[0], dtype, D)
    else:
        alg.reduce_max(arr, red, scratch, n[0], dtype, D)
        alg.exclusive_scan_max(arr, scanned, scratch, n[0], dtype, D)


def expected_reduce_scan(a: np.ndarray, op: str):
    dt = a.dtype
    if dt.kind == "f":
        ident = {"add": 0.0, "min": np.inf, "max": -np.inf}[op]
    else:
        info = np.iinfo(dt)
        ident = {"add": 0, "min": info.max, "max": info.min}[op]
    fn = {"add": np.add, "min": np.minimum, "max": np.maximum}[op]
    with np.errstate(over="ignore"):
        incl = fn.accumulate(a, dtype=dt) if len(a) else a
    excl = np.concatenate([np.array([ident], dt), incl[:-1]]) if len(a) else a
    total = incl[-1] if len(a) else dt.type(ident)
    return total, excl


def check_reduce_scan(name: str, op: str, sizes: list[int], rng) -> None:
    dtype = DTYPES[name]
    cap = max(sizes)
    scratch = np.zeros(alg.exclusive_scan_scratch_slots(cap, D), np.uint32 if dtype.bits == 32 else np.uint64)
    for n in sizes:
        a = random_values(rng, name, max(n, 1))
        red = np.zeros(1, NP[name])
        scanned = np.full(max(n, 1), 7, NP[name])
        reduce_and_scan(a, red, scanned, scratch, count(n), dtype, op)
        total, excl = expected_reduce_scan(a[:n], op)
        if name.startswith("f") and op == "add":  # the device adds in another order
            tol = 1e-3 if name == "f32" else 1e-9
            assert np.allclose(red[0], total, rtol=tol, atol=tol * max(1, n) * 1000), (n, red[0], total)
            assert np.allclose(scanned[:n], excl, rtol=tol, atol=tol * max(1, n) * 1000), n
        else:
            assert red[0] == total, (name, op, n, red[0], total)
            np.testing.assert_array_equal(scanned[:n], excl, err_msg=f"{name} {op} n={n}")
        if n == 0:
            assert scanned[0] == 7  # nothing past the live count is written


@pytest.mark.parametrize("op", ["add", "min", "max"])
@pytest.mark.parametrize("name", ["i32", "u32", "f32"])
def test_reduce_and_scan_32bit(executor, name, op, rng):
    check_reduce_scan(name, op, SIZES, rng)


@pytest.mark.slow
@pytest.mark.parametrize("op", ["add", "min", "max"])
@pytest.mark.parametrize("name", ["i64", "u64", "f64"])
def test_reduce_and_scan_64bit(executor, name, op, rng):
    check_reduce_scan(name, op, [0, 1, 257, 65537], rng)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["i32", "f32"])
def test_reduce_and_scan_a_million(executor, name, rng):
    check_reduce_scan(name, "add", [BIG, BIG - 1], rng)


TILE = 4096  # elements a thread block folds per step of the reduce (16 per thread)


@pytest.mark.parametrize("name,op", [("i32", "add"), ("f32", "max"), ("u32", "min"), ("f32", "add")])
def test_reduce_at_the_tile_edges(executor, name, op, rng):
    """Sizes around the reduce's 4096-element tile: the guarded last tile, none, and several."""
    check_reduce_scan(name, op, [TILE - 1, TILE, TILE + 1, 3 * TILE + 5], rng)


@pytest.mark.slow
def test_reduce_with_several_tiles_per_block(executor, rng):
    """Past 1024 tiles each block of the first launch folds several, strided by the grid."""
    check_reduce_scan("i32", "add", [1024 * TILE + TILE + 3], rng)


@qd.kernel
def scan_only(arr: ND1, scanned: ND1, scratch: ND1, n: ND1, dtype: qd.template(), op: qd.template(),
              depth: qd.template()):
    if qd.static(op == "add"):
        alg.exclusive_scan_add(arr, scanned, scratch, n[0], dtype, depth)
    elif qd.static(op == "min"):
        alg.exclusive_scan_min(arr, scanned, scratch, n[0], dtype, depth)
    else:
        alg.exclusive_scan_max(arr, scanned, scratch, n[0], dtype, depth)


def check_scan_exact_scratch(name: str, op: str, sizes: list[int], depth: int, rng) -> None:
    """The scan at each size with a scratch of exactly the slots the helper gives for it,
    every slot set beforehand (the scan must clear what it reads)."""
    for n in sizes:
        a = random_values(rng, name, max(n, 1))
        scanned = np.full(max(n, 1), 7, NP[name])
        scratch = np.full(alg.exclusive_scan_scratch_slots(n, depth), 0xFFFFFFFF, np.uint32)
        scan_only(a, scanned, scratch, count(n), DTYPES[name], op, depth)
        _, excl = expected_reduce_scan(a[:n], op)
        if name == "f32" and op == "add":  # the device adds in another order
            assert np.allclose(scanned[:n], excl, rtol=1e-3, atol=1e-3 * max(1, n) * 1000), n
        else:
            np.testing.assert_array_equal(scanned[:n], excl, err_msg=f"{name} {op} n={n}")
        if n == 0:
            assert scanned[0] == 7  # nothing past the live count is written


# The single-pass scan's tiles are 4096 elements: either side of one, two and 37 of them.
SCAN_EDGES = [0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 37 * TILE - 1, 37 * TILE + 11]


@pytest.mark.parametrize("name,op", [("i32", "add"), ("u32", "min"), ("f32", "max"), ("f32", "add")])
def test_scan_at_the_tile_edges(lanes_executor, name, op, rng):
    """Subgroups of 8 to 64 lanes: the guarded last tile, one tile (nothing published), the
    look-back walking over several tiles, 1 and 0 elements."""
    check_scan_exact_scratch(name, op, SCAN_EDGES, D, rng)


def test_scan_of_one_tile_at_every_depth(executor, rng):
    """Up to 256 elements the helper gives one slot of scratch at any depth: the ticket alone."""
    for depth in (1, 2, 4):
        check_scan_exact_scratch("i32", "add", [1, 2, 255, 256], depth, rng)
    check_scan_exact_scratch("u32", "max", [257, 4096, 4097, 65536], 2, rng)


@qd.kernel
def scan_tiles_only(arr: I32V, scanned: I32V, scratch: qd.types.ndarray(qd.u32, 1), n: I32V):
    scan_tiles(arr, scanned, scratch, n[0], qd.i32, "add")


def test_scan_folds_a_tile_that_never_publishes(executor, rng):
    """The look-back's way out of a wait: with the ticket starting at 1 no block scans tile
    0, so tile 1 reads its flag empty POLLS times, then folds tile 0 from the input itself.
    (The block that draws ticket 3, past the last tile, scans nothing.)"""
    n = 3 * TILE
    a = random_values(rng, "i32", n)
    scanned = np.full(n, 7, np.int32)
    scratch = np.zeros(3 * 3, np.uint32)
    scratch[0] = 1
    scan_tiles_only(a, scanned, scratch, count(n))
    _, excl = expected_reduce_scan(a, "add")
    np.testing.assert_array_equal(scanned[TILE:], excl[TILE:])
    assert (scanned[:TILE] == 7).all()


def test_scan_on_wave32_hip(rng):
    init_executor("cpu-hip", wave32=True)
    try:
        check_scan_exact_scratch("i32", "add", [1, 4097, 3 * TILE + 5], D, rng)
    finally:
        qd.init(arch="cpu")


I32V = qd.types.ndarray(qd.i32, 1)


@qd.kernel
def total_of(a: ND1, out: ND1, scratch: ND1, n: ND1, dtype: qd.template()):
    alg.reduce_add(a, out, scratch, n[0], dtype, D)


@pytest.mark.parametrize("dtype,vector", [(qd.f32, "float4"), (qd.i32, "int4"), (qd.f64, "double2")])
def test_reduce_reads_16_byte_vectors_on_cuda_only(dtype, vector):
    """Two launches (the tiles, then the partials); CUDA reads an aligned array as 16-byte vectors
    behind a run-time alignment check, with a scalar loop for the rest; the other targets
    keep only the scalar loop (whose loads are coalesced across threads)."""
    vec = qd.types.ndarray(dtype, 1)
    types = {"a": vec, "out": vec, "scratch": qd.types.ndarray(qd.u32 if dtype.bits == 32 else qd.u64, 1),
             "n": I32V}
    tr = qd.translate(total_of, "cuda", arg_types=types, template_args={"dtype": dtype})
    (text,) = tr.sources.values()
    assert len(tr.manifest["entry_points"]) == 2
    assert f"reinterpret_cast<const {vector}*>(a)" in text and "& 15ull) == 0ull" in text
    for target in ("hip", "glsl") + (("msl",) if dtype.bits == 32 else ()):  # Metal has no f64
        other = "".join(qd.translate(total_of, target, arg_types=types, template_args={"dtype": dtype}).sources.values())
        assert vector not in other and "reinterpret_cast<const" not in other and "15ull" not in other, target


# ----------------------------------------------------------------------------- select, reduce_by_key_add

@qd.kernel
def compact(arr: ND1, flags: ND1, out: ND1, num: ND1, scratch: ND1, n: ND1):
    alg.select(arr, flags, out, num, scratch, n[0], D)


def check_select(name: str, sizes: list[int], rng) -> None:
    scratch = np.zeros(alg.select_scratch_slots(max(sizes)), np.uint32)
    for n in sizes:
        a = random_values(rng, name, max(n, 1))
        flags = (rng.random(max(n, 1)) < rng.choice([0.0, 0.3, 0.9, 1.0])).astype(np.int32)
        out = np.full(max(n, 1), 5, NP[name])
        num = np.full(1, -1, np.int32)
        compact(a, flags, out, num, scratch, count(n))
        want = a[:n][flags[:n] == 1]
        assert num[0] == len(want), (name, n)
        np.testing.assert_array_equal(out[:len(want)], want, err_msg=f"{name} n={n}")
        assert (out[len(want):] == 5).all()  # the tail is left as it was


@pytest.mark.parametrize("name", ["i32", "u32", "f32"])
def test_select(executor, name, rng):
    check_select(name, SIZES, rng)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["i64", "u64", "f64"])
def test_select_64bit(executor, name, rng):
    check_select(name, [0, 1, 257, 65537], rng)


@qd.kernel
def runs(keys: ND1, values: ND1, keys_out: ND1, values_out: ND1, num: ND1, scratch: ND1, n: ND1,
         value_dtype: qd.template()):
    alg.reduce_by_key_add(keys, values, keys_out, values_out, num, scratch, n[0], value_dtype, D)


@pytest.mark.parametrize("key, value", [("i32", "i32"), ("u32", "f32"), ("f32", "u32")])
def test_reduce_by_key_add(executor, key, value, rng):
    scratch = np.zeros(alg.reduce_by_key_scratch_slots(max(SIZES)), np.uint32)
    for n in SIZES:
        m = max(n, 1)
        # runs of random lengths (1 to 40), equal keys also recurring apart
        keys = np.repeat(rng.integers(0, 6, m), rng.integers(1, 40, m))[:m].astype(NP[key])
        values = (rng.integers(0, 100, m) if value != "f32" else rng.uniform(-10, 10, m)).astype(NP[value])
        keys_out, values_out = np.zeros(m, NP[key]), np.full(m, 3, NP[value])
        num = np.full(1, -1, np.int32)
        runs(keys, values, keys_out, values_out, num, scratch, count(n), DTYPES[value])
        k = keys[:n]
        heads = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if n else np.array([], np.int64)
        assert num[0] == len(heads), (n, num[0], len(heads))
        np.testing.assert_array_equal(keys_out[:len(heads)], k[heads])
        if n:
            sums = np.add.reduceat(values[:n].astype(np.float64), heads)
            if value == "f32":
                np.testing.assert_allclose(values_out[:len(heads)], sums, rtol=1e-4, atol=1e-3)
            else:
                np.testing.assert_array_equal(values_out[:len(heads)], sums.astype(NP[value]))


# ----------------------------------------------------------------------------- sort

ND0 = qd.types.ndarray(ndim=0)


@qd.kernel
def radix_sort(keys: ND1, tmp_keys: ND1, values: ND1, tmp_values: ND1, scratch: ND1, n: ND0,
               key_dtype: qd.template(), has_values: qd.template(), end_bit: qd.template()):
    alg.sort(keys, tmp_keys, values, tmp_values, scratch, n, key_dtype, has_values, end_bit, D)


def random_keys(rng, name: str, n: int, end_bit: int) -> np.ndarray:
    if name.startswith("f"):
        k = rng.uniform(-1e6, 1e6, n).astype(NP[name])
        k[rng.integers(0, n, n // 8)] = 0.5  # ties, to see stability
        return k
    info = np.iinfo(NP[name])
    if end_bit < info.bits:
        return rng.integers(0, 1 << end_bit, n, dtype=np.int64).astype(NP[name])
    k = rng.integers(info.min, info.max, n, dtype=NP[name], endpoint=True)
    k[rng.integers(0, n, n // 8)] = k[0]  # ties
    return k


def check_sort(name: str, sizes: list[int], rng, has_values: bool = True, end_bit: int | None = None) -> None:
    dtype = DTYPES[name]
    end_bit = end_bit or dtype.bits
    scratch = np.zeros(alg.sort_scratch_slots(max(sizes), D), np.uint32)
    for n in sizes:
        m = max(n, 1)
        keys = random_keys(rng, name, m, end_bit)
        given = keys.copy()
        values = rng.permutation(m).astype(np.float64 if name == "i32" else np.int32)
        v0 = values.copy()
        tmp_keys, tmp_values = np.zeros_like(keys), np.zeros_like(values)
        if has_values:
            radix_sort(keys, tmp_keys, values, tmp_values, scratch, np.array(n, np.int32), dtype, True, end_bit)
        else:
            radix_sort(keys, tmp_keys, keys, tmp_keys, scratch, np.array(n, np.int32), dtype, False, end_bit)
        order = np.argsort(given[:n], kind="stable")
        np.testing.assert_array_equal(keys[:n], given[:n][order], err_msg=f"{name} n={n}")
        np.testing.assert_array_equal(keys[n:], given[n:])
        if has_values:
            np.testing.assert_array_equal(values[:n], v0[:n][order], err_msg=f"{name} n={n}: not stable")


@pytest.mark.parametrize("name", ["i32", "u32", "f32"])
def test_sort_key_value(executor, name, rng):
    check_sort(name, SIZES, rng)


def test_sort_keys_only_and_low_bits(executor, rng):
    check_sort("u32", [0, 1, 300, 70_000], rng, has_values=False)
    check_sort("i32", [5, 4097], rng, end_bit=16)


def check_sort_given(keys: np.ndarray, n: int) -> None:
    """Sort keys[:n] with their positions as values; compare with NumPy's stable argsort."""
    given, values = keys.copy(), np.arange(len(keys), dtype=np.int32)
    scratch = np.zeros(alg.sort_scratch_slots(max(n, 1), D), np.uint32)
    radix_sort(keys, np.zeros_like(keys), values, np.zeros_like(values), scratch, np.array(n, np.int32),
               DTYPES[{v: k for k, v in NP.items()}[keys.dtype.type]], True, keys.dtype.itemsize * 8)
    order = np.argsort(given[:n], kind="stable")
    np.testing.assert_array_equal(keys[:n], given[:n][order], err_msg=f"n={n}")
    np.testing.assert_array_equal(values[:n], order, err_msg=f"n={n}: not stable")
    np.testing.assert_array_equal(keys[n:], given[n:])


# A tile is 4096 keys: sizes on both sides of one, two and three tiles.
TILE_EDGES = [4095, 4096, 4097, 8191, 8193, 12289]


def test_sort_duplicates_at_tile_edges(lanes_executor, rng):
    """Subgroups of 8 to 64 lanes (8: the ranking table's two counts a word) ranking keys
    that mostly share their digits: a few distinct keys, one key, and random ones."""
    for n in TILE_EDGES:
        few = rng.choice(np.array([7, 0x07070707, 0xFF00FF00, 0xFFFFFFFF, 0x80000000], np.uint32), n + 5)
        check_sort_given(few, n)
    check_sort_given(np.full(5000, 3, np.int32), 4999)
    check_sort_given(rng.integers(-2**31, 2**31, 9000, dtype=np.int64).astype(np.int32), 9000)
    # Float ties, none of them zero (the sort puts -0.0 before 0.0, which NumPy calls equal).
    check_sort_given(rng.integers(-40, 40, 4097).astype(np.float32) / 4 + 0.125, 4097)


def test_sort_on_wave32_hip(rng):
    init_executor("cpu-hip", wave32=True)
    try:
        for n in (0, 1, 4097):
            check_sort_given(rng.integers(0, 50, max(n, 1)).astype(np.uint32), n)
    finally:
        qd.init(arch="cpu")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["i64", "u64", "f64"])
def test_sort_64bit(executor, name, rng):
    check_sort(name, [0, 1, 257, 65537], rng)


@pytest.mark.slow
def test_sort_a_million(executor, rng):
    check_sort("f32", [BIG], rng)


# ----------------------------------------------------------------------------- the language under them

@qd.func
def two_phases(a: qd.template(), b: qd.template(), n: qd.i32):
    for i in range(n):
        b[i] = a[i] * 2
    for i in range(n):  # reads what another block wrote in the previous phase
        a[i] = b[n - 1 - i] + 1


@qd.kernel
def phases_and_tail(a: ND1, b: ND1, cnt: ND1):
    two_phases(a, b, cnt[0])
    for i in range(cnt[0], a.shape[0]):
        a[i] = -1


def test_top_level_func_loops_are_tasks():
    tr = qd.translate(phases_and_tail, "cuda", arg_types={"a": qd.types.ndarray(qd.i32, 1),
                                                          "b": qd.types.ndarray(qd.i32, 1),
                                                          "cnt": qd.types.ndarray(qd.i32, 1)})
    entries = tr.manifest["entry_points"]
    assert [e["kind"] for e in entries] == ["parallel"] * 3
    assert all(e["grid"] == {"rule": "fixed", "blocks": 1024} for e in entries)


def test_top_level_func_loops_run_in_order(executor, rng):
    for n in (0, 1, 777, 5000):
        a = rng.integers(-1000, 1000, 5000).astype(np.int32)
        b = np.zeros(5000, np.int32)
        want = a.copy()
        want[:n] = (a[:n] * 2)[::-1] + 1
        want[n:] = -1
        phases_and_tail(a, b, count(n))
        np.testing.assert_array_equal(a, want)


@qd.kernel
def count_then_use(x: ND1, cnt: ND1, out: ND1):
    for i in range(x.shape[0]):
        if x[i] > 0:
            qd.atomic_add(cnt[0], 1)
    for i in range(cnt[0]):  # sized by what the previous task counted, on the device
        out[i] = i * 3


def test_range_read_from_device_memory(executor, rng):
    x = rng.integers(-5, 5, 3001).astype(np.int32)
    cnt, out = np.zeros(1, np.int32), np.full(3001, -9, np.int32)
    count_then_use(x, cnt, out)
    k = int((x > 0).sum())
    assert cnt[0] == k
    np.testing.assert_array_equal(out[:k], np.arange(k) * 3)
    assert (out[k:] == -9).all()


def test_scratch_slots_match_quadrants():
    # Quadrants 1.3.3's numbers (reduce and scan stack the same partial levels).
    assert alg.exclusive_scan_scratch_slots(1 << 20) == 4112  # its user guide's example
    assert alg.reduce_scratch_slots(1_000_000) == 3907 + 16
    assert alg.exclusive_scan_scratch_slots(1_000_000, 3) == 3907 + 16
    assert alg.reduce_scratch_slots(100, 1) == 1
    assert alg.reduce_scratch_slots(0, 2) == 1
    assert alg.reduce_scratch_slots(65536, 2) == 256
    with pytest.raises(ValueError, match="log256_max_n=5"):
        alg.reduce_scratch_slots(10, 5)


@qd.kernel
def slots_on_device(n: ND1, out: ND1):
    out[0] = alg.reduce_scratch_slots(n[0], 3)
    out[1] = alg.exclusive_scan_scratch_slots(n[0], 2)
    out[2] = alg.sort_scratch_slots(n[0], 3)


def test_scratch_slots_on_device(executor):
    for n in (0, 1, 300, 2048, 2049, 1_000_000):
        out = np.zeros(3, np.int32)
        slots_on_device(count(n), out)
        assert list(out) == [alg.reduce_scratch_slots(n, 3), alg.exclusive_scan_scratch_slots(n, 2),
                             alg.sort_scratch_slots(n, 3)]


def test_sort_scratch_is_counts_tickets_and_two_look_back_tables():
    # 8 passes x 256 digit counts, 8 tickets, then two tables of 256 words per tile of 4096 keys:
    # about n / 8 slots, where Quadrants' multi-pass sort takes about n.
    assert alg.sort_scratch_slots(1) == 2056 + 2 * 256
    assert alg.sort_scratch_slots(4097, 2) == 2056 + 4 * 256
    assert alg.sort_scratch_slots(1_000_000) == 2056 + 2 * 245 * 256
    with pytest.raises(ValueError, match="at most 1073741823 keys"):
        alg.sort_scratch_slots(1 << 30)


# ----------------------------------------------------------------------------- errors

I32 = qd.types.ndarray(qd.i32, 1)
U32 = qd.types.ndarray(qd.u32, 1)
U64 = qd.types.ndarray(qd.u64, 1)


@qd.kernel
def nested_call(a: I32, out: I32, scratch: U32, n: I32):
    for _ in range(1):
        alg.reduce_add(a, out, scratch, n[0], qd.i32, 2)


@qd.kernel
def too_deep(a: I32, out: I32, scratch: U32, n: I32):
    alg.reduce_add(a, out, scratch, n[0], qd.i32, 5)


@qd.kernel
def wrong_scratch(a: I32, out: I32, scratch: U64, n: I32):
    alg.exclusive_scan_add(a, out, scratch, n[0], qd.i32, 2)


@qd.kernel
def wrong_dtype(a: I32, out: I32, scratch: U32, n: I32):
    alg.reduce_max(a, out, scratch, n[0], qd.f32, 2)


@qd.kernel
def narrow_dtype(a: qd.types.ndarray(qd.i16, 1), out: qd.types.ndarray(qd.i16, 1), scratch: U32, n: I32):
    alg.reduce_max(a, out, scratch, n[0], qd.i16, 2)


@pytest.mark.parametrize("kernel, message", [
    (nested_call, "`reduce_add` must be called as a statement at the top level of a kernel"),
    (too_deep, "log256_max_n=5 is out of range"),
    (wrong_scratch, "scratch must hold u32 here"),
    (wrong_dtype, "arr and out must hold the dtype passed as `dtype`"),
    (narrow_dtype, "dtype must be one of qd.i32"),
], ids=lambda v: getattr(v, "__name__", "msg"))
def test_errors_are_located(kernel, message):
    with pytest.raises(qd.TranspileError) as info:
        qd.translate(kernel, "cuda")
    text = str(info.value)
    assert message in text, text
    line = kernel.fn.__code__.co_firstlineno
    assert f"test_algorithms.py:{line + 3 if kernel is nested_call else line + 2}:" in text, text
    assert "^" in text


# ----------------------------------------------------------------------------- every target compiles

COMPILE_CASES = [
    ("reduce_scan_i32_add", reduce_and_scan, {"dtype": qd.i32, "op": "add"},
     {"arr": I32, "red": I32, "scanned": I32, "scratch": U32, "n": I32}),
    ("reduce_scan_f32_min", reduce_and_scan, {"dtype": qd.f32, "op": "min"},
     {"arr": qd.types.ndarray(qd.f32, 1), "red": qd.types.ndarray(qd.f32, 1),
      "scanned": qd.types.ndarray(qd.f32, 1), "scratch": U32, "n": I32}),
]
SORT_TYPES = {"keys": ND1, "tmp_keys": ND1, "values": ND1, "tmp_values": ND1, "scratch": U32,
              "n": qd.types.ndarray(qd.i32, 0)}
COMPILE_CASES += [
    ("select_f32", compact, {}, {"arr": qd.types.ndarray(qd.f32, 1), "flags": I32, "out": qd.types.ndarray(qd.f32, 1),
                                 "num": I32, "scratch": U32, "n": I32}),
    ("reduce_by_key_f32", runs, {"value_dtype": qd.f32},
     {"keys": I32, "values": qd.types.ndarray(qd.f32, 1), "keys_out": I32, "values_out": qd.types.ndarray(qd.f32, 1),
      "num": I32, "scratch": U32, "n": I32}),
    ("sort_f32_kv", radix_sort, {"key_dtype": qd.f32, "has_values": True, "end_bit": 32},
     {**SORT_TYPES, "keys": qd.types.ndarray(qd.f32, 1), "tmp_keys": qd.types.ndarray(qd.f32, 1),
      "values": I32, "tmp_values": I32}),
]
WIDE_CASES = [
    ("sort_i64_keys", radix_sort, {"key_dtype": qd.i64, "has_values": False, "end_bit": 64},
     {**SORT_TYPES, "keys": qd.types.ndarray(qd.i64, 1), "tmp_keys": qd.types.ndarray(qd.i64, 1),
      "values": qd.types.ndarray(qd.i64, 1), "tmp_values": qd.types.ndarray(qd.i64, 1)}),
    ("reduce_scan_f64_max", reduce_and_scan, {"dtype": qd.f64, "op": "max"},
     {"arr": qd.types.ndarray(qd.f64, 1), "red": qd.types.ndarray(qd.f64, 1),
      "scanned": qd.types.ndarray(qd.f64, 1), "scratch": U64, "n": I32}),
]
VARIANTS = [("cuda", {}), ("hip", {}), ("hip", {"wave32": True}), ("msl", {}), ("glsl", {"subgroup_size": 8}),
            ("glsl", {"subgroup_size": 32})]
TOOLS = {"cuda": None, "hip": "hipcc", "glsl": "glslangValidator", "msl": None}


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v[0] + "".join(f"-{k}={x}" for k, x in v[1].items()))
def test_compiles(variant):
    target, options = variant
    tool = TOOLS[target]
    if tool and shutil.which(tool) is None:
        pytest.skip(f"needs {tool}")
    for name, kernel, template_args, arg_types in COMPILE_CASES + WIDE_CASES:
        if target == "msl" and (name, kernel, template_args, arg_types) in WIDE_CASES:
            continue  # Metal has no 64-bit SIMD-group operations (as in Quadrants: 32-bit only there)
        tr = qd.translate(kernel, target, template_args=template_args, arg_types=arg_types, **options)
        assert_compiles(target, tr, name)


# ----------------------------------------------------------------------------- deprecated host APIs

def test_parallel_sort_sorts_in_place_and_warns(executor, rng):
    keys = rng.integers(-1000, 1000, 5000).astype(np.int32)
    values = np.arange(5000, dtype=np.float32)
    given = keys.copy()
    with pytest.warns(DeprecationWarning, match="qd.algorithms.parallel_sort is deprecated"):
        alg.parallel_sort(keys, values)
    order = np.argsort(given, kind="stable")
    np.testing.assert_array_equal(keys, given[order])
    np.testing.assert_array_equal(values, order)
    field = qd.field(qd.f32, shape=300)
    f = rng.standard_normal(300).astype(np.float32)
    field.from_numpy(f)
    with pytest.warns(DeprecationWarning):
        alg.parallel_sort(field)
    np.testing.assert_array_equal(field.to_numpy(), np.sort(f))


def test_prefix_sum_executor_is_an_inclusive_i32_scan(executor, rng):
    a = rng.integers(-100, 100, 70_000).astype(np.int32)
    given = a.copy()
    with pytest.warns(DeprecationWarning, match="PrefixSumExecutor is deprecated"):
        scan = alg.PrefixSumExecutor(a.size)
    scan.run(a)
    np.testing.assert_array_equal(a, np.cumsum(given))
    with pytest.raises(RuntimeError, match="Only qd.i32 type is supported for prefix sum."):
        scan.run(np.zeros(10, np.int64))

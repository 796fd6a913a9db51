"""Quadrants' qd.simt.subgroup beyond the primitives: the tiled operations over groups of
2**log2_size lanes (folds broadcast to the group, scans with every operator, votes,
segmented reductions, the bitonic sort), their full-subgroup forms, the deprecated aliases,
qd.math.fns, and the width check (a group wider than the subgroup runs through shared memory:
tests/test_wide_tiles.py). Run at 8 (lavapipe), 16 (the CUDA text narrowed for the emulator),
32 and 64 lanes, at every group width the subgroup holds, against NumPy on random data; every
target's output compiled by its toolchain."""
from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest

import transpiler as qd
from transpiler.runtime import current
from conftest import assert_compiles

subgroup = qd.simt.subgroup
N = 128 * 4  # whole blocks of 128: every lane of every subgroup takes part


# ----------------------------------------------------------------------------- kernels

@qd.kernel
def tiled(src: qd.types.ndarray(ndim=1), mul: qd.types.ndarray(ndim=1), heads: qd.types.ndarray(qd.i32, ndim=1),
          out: qd.types.ndarray(ndim=2), votes: qd.types.ndarray(qd.i32, ndim=2), log2: qd.template(),
          bitwise: qd.template()):
    qd.loop_config(block_dim=128)
    for i in range(src.shape[0]):
        v = src[i]
        m = mul[i]
        h = heads[i]
        out[i, 0] = subgroup.reduce_all_add_tiled(v, log2)
        out[i, 1] = subgroup.reduce_all_min_tiled(v, log2)
        out[i, 2] = subgroup.reduce_all_max_tiled(v, log2)
        out[i, 3] = subgroup.inclusive_mul_tiled(m, log2)
        out[i, 4] = subgroup.exclusive_mul_tiled(m, log2)
        out[i, 5] = subgroup.segmented_reduce_add_tiled(v, h, log2)
        out[i, 6] = subgroup.segmented_reduce_min_tiled(v, h, log2)
        out[i, 7] = subgroup.segmented_reduce_max_tiled(v, h, log2)
        if qd.static(bitwise):
            out[i, 8] = subgroup.inclusive_and_tiled(v, log2)
            out[i, 9] = subgroup.inclusive_or_tiled(v, log2)
            out[i, 10] = subgroup.inclusive_xor_tiled(v, log2)
            out[i, 11] = subgroup.exclusive_and_tiled(v, log2)
            out[i, 12] = subgroup.exclusive_or_tiled(v, log2)
            out[i, 13] = subgroup.exclusive_xor_tiled(v, log2)
        votes[i, 0] = subgroup.all_true_tiled(h, log2)
        votes[i, 1] = subgroup.any_true_tiled(h, log2)
        votes[i, 2] = subgroup.all_equal_tiled(v, log2)


@qd.kernel
def full(src: qd.types.ndarray(ndim=1), mul: qd.types.ndarray(ndim=1), heads: qd.types.ndarray(qd.i32, ndim=1),
         out: qd.types.ndarray(ndim=2), bitwise: qd.template()):
    qd.loop_config(block_dim=128)
    for i in range(src.shape[0]):
        v = src[i]
        h = heads[i]
        out[i, 0] = subgroup.inclusive_mul(mul[i])
        out[i, 1] = subgroup.exclusive_mul(mul[i])
        out[i, 2] = subgroup.segmented_reduce_add(v, h)
        out[i, 3] = subgroup.segmented_reduce_min(v, h)
        out[i, 4] = subgroup.segmented_reduce_max(v, h)
        if qd.static(bitwise):
            out[i, 5] = subgroup.inclusive_and(v)
            out[i, 6] = subgroup.inclusive_or(v)
            out[i, 7] = subgroup.inclusive_xor(v)
            out[i, 8] = subgroup.exclusive_and(v)
            out[i, 9] = subgroup.exclusive_or(v)
            out[i, 10] = subgroup.exclusive_xor(v)


@qd.kernel
def sort_pairs(keys: qd.types.ndarray(ndim=1), values: qd.types.ndarray(qd.i32, ndim=1), log2: qd.template(),
               whole: qd.template()):
    qd.loop_config(block_dim=128)
    for i in range(keys.shape[0]):
        k = keys[i]
        v = values[i]
        if qd.static(whole):
            k, v = subgroup.bitonic_sort_kv(k, v)
        else:
            k, v = subgroup.bitonic_sort_kv_tiled(k, v, log2)
        keys[i] = k
        values[i] = v


@qd.kernel
def deprecated(p: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.u64, ndim=1)):
    qd.loop_config(block_dim=128)
    for i in range(p.shape[0]):
        subgroup.barrier()
        subgroup.memory_barrier()
        out[i] = subgroup.ballot_full_subgroup(p[i])


@qd.kernel
def find_nth_set(mask: qd.types.ndarray(qd.u32, ndim=1), base: qd.types.ndarray(qd.u32, ndim=1),
                 offset: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.u32, ndim=1)):
    for i in range(mask.shape[0]):
        out[i] = qd.math.fns(mask[i], base[i], offset[i])


@qd.kernel
def too_wide(src: qd.types.ndarray(qd.i32, ndim=1), log2: qd.template()):
    for i in range(src.shape[0]):
        src[i] = subgroup.reduce_add_tiled(src[i], log2)


# ----------------------------------------------------------------------------- references

def width() -> int:
    size = current().subgroup_size
    assert size in (8, 16, 32, 64), size
    return size


def groups(a: np.ndarray, n: int) -> np.ndarray:
    return a.reshape(-1, n)


def broadcast(rows_result: np.ndarray, n: int) -> np.ndarray:
    return np.repeat(rows_result[:, None], n, axis=1)


def exclusive(incl: np.ndarray, identity) -> np.ndarray:
    out = np.empty_like(incl)
    out[:, 0] = identity
    out[:, 1:] = incl[:, :-1]
    return out


def segmented(rows: np.ndarray, heads: np.ndarray, ufunc) -> np.ndarray:
    out = rows.copy()
    for r in range(rows.shape[0]):
        for c in range(1, rows.shape[1]):
            if not heads[r, c]:
                out[r, c] = ufunc(out[r, c - 1], rows[r, c])
    return out


def all_bits(dtype):
    return np.array(-1).astype(dtype) if np.dtype(dtype).kind == "i" else np.iinfo(dtype).max


def expected(src, mul, heads, n, dtype, bitwise) -> dict[int, np.ndarray]:
    rows, mrows, hrows = groups(src, n), groups(mul, n), groups(heads, n)
    want = {0: broadcast(rows.sum(axis=1, dtype=dtype), n), 1: broadcast(rows.min(axis=1), n),
            2: broadcast(rows.max(axis=1), n)}
    incl_mul = np.multiply.accumulate(mrows, axis=1, dtype=dtype)
    want[3], want[4] = incl_mul, exclusive(incl_mul, 1)
    for c, uf in ((5, np.add), (6, np.minimum), (7, np.maximum)):
        want[c] = segmented(rows, hrows != 0, uf)
    if bitwise:
        for c, (uf, ident) in enumerate(((np.bitwise_and, all_bits(dtype)), (np.bitwise_or, 0),
                                         (np.bitwise_xor, 0))):
            incl = uf.accumulate(rows, axis=1, dtype=dtype)
            want[8 + c], want[11 + c] = incl, exclusive(incl, ident)
    return want


def random_inputs(rng, dtype):
    low = 0 if np.dtype(dtype).kind == "u" else -100
    src = rng.integers(low, 100, N).astype(dtype)
    src[:16] = 7  # a run of equal values: all_equal_tiled is 1 somewhere
    mul = rng.choice(np.array([1, 2, 3] if np.dtype(dtype).kind == "u" else [-1, 1, 2]), N).astype(dtype)
    heads = (rng.random(N) < 0.3).astype(np.int32)
    heads[32:48] = 1  # all heads: all_true_tiled is 1 somewhere
    heads[64:80] = 0  # no head: any_true_tiled is 0, segments start at the group's first lane
    return src, mul, heads


DTYPES = (np.int32, np.uint32, np.float32, np.int64)


# ----------------------------------------------------------------------------- execution

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_tiled_operations_at_every_width(lanes_executor, rng, dtype):
    s = width()
    bitwise = np.dtype(dtype).kind != "f"
    src, mul, heads = random_inputs(rng, dtype)
    for log2 in range(s.bit_length()):
        n = 1 << log2
        out = np.zeros((N, 14), dtype)
        votes = np.zeros((N, 3), np.int32)
        tiled(src, mul, heads, out, votes, log2, bitwise)
        for c, want in expected(src, mul, heads, n, dtype, bitwise).items():
            np.testing.assert_array_equal(groups(out[:, c], n), want, err_msg=f"group of {n}, column {c}")
        hrows, rows = groups(heads, n) != 0, groups(src, n)
        for c, want in enumerate((hrows.all(axis=1), hrows.any(axis=1), (rows == rows[:, :1]).all(axis=1))):
            np.testing.assert_array_equal(groups(votes[:, c], n), broadcast(want, n).astype(np.int32),
                                          err_msg=f"group of {n}, vote {c}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_full_subgroup_forms(lanes_executor, rng, dtype):
    s = width()
    bitwise = np.dtype(dtype).kind != "f"
    src, mul, heads = random_inputs(rng, dtype)
    out = np.zeros((N, 14), dtype)
    full(src, mul, heads, out, bitwise)
    want = expected(src, mul, heads, s, dtype, bitwise)
    columns = {0: 3, 1: 4, 2: 5, 3: 6, 4: 7, **({5 + k: 8 + k for k in range(6)} if bitwise else {})}
    for c, w in columns.items():
        np.testing.assert_array_equal(groups(out[:, c], s), want[w], err_msg=f"column {c}")


@pytest.mark.parametrize("dtype", (np.int32, np.float32), ids=lambda d: np.dtype(d).name)
def test_bitonic_sort_kv(lanes_executor, rng, dtype):
    s = width()
    for log2 in [*range(s.bit_length()), None]:
        n = s if log2 is None else 1 << log2
        keys = rng.integers(-20, 20, N).astype(dtype)  # many ties: broken by value
        values = rng.permutation(N).astype(np.int32)
        k, v = keys.copy(), values.copy()
        sort_pairs(k, v, 0 if log2 is None else log2, log2 is None)
        for g, (kr, vr) in enumerate(zip(groups(keys, n), groups(values, n))):
            order = np.lexsort((vr, kr))
            np.testing.assert_array_equal(groups(k, n)[g], kr[order], err_msg=f"group of {n}: keys")
            np.testing.assert_array_equal(groups(v, n)[g], vr[order], err_msg=f"group of {n}: values")


def test_deprecated_aliases_work(lanes_executor, rng):
    s = width()
    p = rng.integers(0, 2, N).astype(np.int32)
    out = np.zeros(N, np.uint64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        deprecated(p, out)
    bits = groups(p, s).astype(np.uint64) << np.arange(s, dtype=np.uint64)
    np.testing.assert_array_equal(groups(out, s), broadcast(np.bitwise_or.reduce(bits, axis=1), s))


def test_deprecated_aliases_warn_as_quadrants_does():
    @qd.kernel
    def fresh(p: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.u64, ndim=1)):
        for i in range(p.shape[0]):
            subgroup.barrier()
            subgroup.memory_barrier()
            out[i] = subgroup.ballot_full_subgroup(p[i])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        qd.translate(fresh, "cuda")
    messages = [str(w.message) for w in caught if w.category is DeprecationWarning]
    line = fresh.fn.__code__.co_firstlineno
    for k, (old, new) in enumerate((("barrier", "sync"), ("memory_barrier", "mem_fence"),
                                    ("ballot_full_subgroup", "ballot"))):
        assert any(f":{line + 3 + k}:" in m and f"subgroup.{old}() is deprecated; use qd.simt.subgroup.{new}()" in m
                   for m in messages), messages


def fns_reference(mask: int, base: int, offset: int) -> int:
    if offset == 0:
        return base if base < 32 and (mask >> base) & 1 else 0xFFFFFFFF
    bits = [b for b in range(32) if (mask >> b) & 1]
    order = [b for b in bits if b >= base] if offset > 0 else [b for b in reversed(bits) if b <= base]
    return order[abs(offset) - 1] if abs(offset) <= len(order) else 0xFFFFFFFF


def test_math_fns(executor, rng):
    n = 3000
    mask = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    mask[::5] &= 0x00F0F000  # sparse masks: many offsets find nothing
    mask[::11] = 0
    base = rng.integers(0, 36, n).astype(np.uint32)
    offset = rng.integers(-33, 34, n).astype(np.int32)
    out = np.zeros(n, np.uint32)
    find_nth_set(mask, base, offset, out)
    want = [fns_reference(int(m), int(b), int(o)) for m, b, o in zip(mask, base, offset)]
    np.testing.assert_array_equal(out, np.array(want, np.uint32))


def test_a_group_wider_than_the_device_subgroup_is_its_sum_not_nan(lanes_executor, rng):
    s = width()
    src = rng.integers(-1000, 1000, N).astype(np.int32)
    out = src.copy()
    too_wide(out, s.bit_length())
    np.testing.assert_array_equal(groups(out, 2 * s), broadcast(groups(src, 2 * s).sum(axis=1), 2 * s))


# ----------------------------------------------------------------------------- translation

@qd.kernel
def misuse(src: qd.types.ndarray(qd.f32, ndim=1), bad: qd.template()):
    for i in range(src.shape[0]):
        if qd.static(bad == "float_bitwise"):
            src[i] = subgroup.inclusive_xor_tiled(src[i], 2)
        elif qd.static(bad == "negative"):
            src[i] = subgroup.reduce_add_tiled(src[i], -1)
        elif qd.static(bad == "sort"):
            k, v = subgroup.bitonic_sort_kv_tiled(src[i], i, 8)
            src[i] = k
        elif qd.static(bad == "ballot"):
            src[i] = subgroup.ballot_first_n(src[i] > 0, 33)


@pytest.mark.parametrize("bad,message", [
    ("float_bitwise", "qd.simt.subgroup.inclusive_xor_tiled takes an integer value"),
    ("negative", "log2_size must be a non-negative int, not -1"),
    ("sort", "bitonic_sort_kv_tiled: log2_size=8 spans 256 lanes, more than the 32-lane subgroup this code is "
             "specialized to, so the block's subgroups carry each group out together, and the block of 128 threads is "
             "not a whole number of groups"),
    ("ballot", "ballot_first_n(predicate, n) needs 1 <= n <= 32"),
])
def test_misuse_is_located(bad, message):
    with pytest.raises(qd.TranspileError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        qd.translate(misuse, "cuda", template_args={"bad": bad})
    first = misuse.fn.__code__.co_firstlineno
    assert info.value.loc.line in range(first + 3, first + 13)
    assert info.value.loc.file.endswith("test_subgroup_library.py")


def test_widths_follow_the_target():
    # A 64-lane group: HIP's wavefront holds it; CUDA's warp, Metal's SIMD-group, GLSL at 32 and
    # HIP at wave32 carry it out through shared memory, and say so.
    note = "reduce_add_tiled: a group of 64 lanes on 32-lane subgroups: 2 subgroups combine their shares"
    text = "\n".join(qd.translate(too_wide, "hip", template_args={"log2": 6}).sources.values())
    assert "subgroups combine their shares" not in text
    for target, options in (("cuda", {}), ("msl", {}), ("glsl", {"subgroup_size": 32}), ("hip", {"wave32": True})):
        text = "\n".join(qd.translate(too_wide, target, template_args={"log2": 6}, **options).sources.values())
        assert note in text, target


def test_full_width_groups_use_the_native_collective():
    tr = qd.translate(tiled, "glsl", template_args={"log2": 3, "bitwise": True}, subgroup_size=8,
                      arg_types={"src": qd.types.ndarray(qd.i32, ndim=1), "mul": qd.types.ndarray(qd.i32, ndim=1),
                                 "out": qd.types.ndarray(qd.i32, ndim=2)})
    text = "\n".join(tr.sources.values())
    for native in ("subgroupAdd", "subgroupMin", "subgroupMax", "subgroupAll(", "subgroupInclusiveMul",
                   "subgroupExclusiveMul", "subgroupInclusiveXor", "subgroupExclusiveAnd"):
        assert native in text, native


def nd(dtype, ndim):
    return qd.types.ndarray(dtype, ndim=ndim)


def _types(dtype):
    return {"src": nd(dtype, 1), "mul": nd(dtype, 1), "out": nd(dtype, 2)}


COMPILE_CASES = [
    ("tiled_i32", tiled, {"log2": 3, "bitwise": True}, _types(qd.i32)),
    ("tiled_f32", tiled, {"log2": 2, "bitwise": False}, _types(qd.f32)),
    ("full_u32", full, {"bitwise": True}, _types(qd.u32)),
    ("sort_f32", sort_pairs, {"log2": 3, "whole": False}, {"keys": nd(qd.f32, 1)}),
    ("sort_whole_i32", sort_pairs, {"log2": 0, "whole": True}, {"keys": nd(qd.i32, 1)}),
    ("deprecated", deprecated, {}, {}),
    ("fns", find_nth_set, {}, {}),
]
VARIANTS = [("cuda", {}), ("hip", {}), ("hip", {"wave32": True}), ("msl", {}),
            *(("glsl", {"subgroup_size": n}) for n in (8, 16, 32, 64))]


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v[0] + "".join(f"-{k}={x}" for k, x in v[1].items()))
@pytest.mark.parametrize("case", COMPILE_CASES, ids=[c[0] for c in COMPILE_CASES])
def test_compiles(case, variant):
    _, kernel, template_args, arg_types = case
    target, options = variant
    if target == "hip" and shutil.which("hipcc") is None:
        pytest.skip("needs hipcc")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        tr = qd.translate(kernel, target, template_args=template_args, arg_types=arg_types, **options)
    assert_compiles(target, tr)


@pytest.mark.toolchain
def test_the_emulator_narrows_only_the_cuda_text():
    with pytest.raises(ValueError, match="the hip text cannot be specialized to that width"):
        qd.init(arch="cpu", dialect="hip", subgroup_size=16)
    with pytest.raises(qd.TranspileError, match="the emulator runs CUDA text at 4, 8, 16 or 32 lanes"):
        qd.init(arch="cpu", subgroup_size=12)
    qd.init(arch="cpu", subgroup_size=16)
    assert qd.simt.subgroup.group_size() == 16

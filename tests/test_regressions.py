"""Silent wrong code and false rejections found by trying the language as a user would and by
random kernels on three executors (issue 18), each kept here with the check that failed:
results against NumPy on Vulkan and both CPU executors, and the toolchains' verdicts."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import transpiler as qd
from conftest import assert_compiles, target_names


@qd.kernel
def count_down_unsigned(out: qd.types.ndarray(qd.i32, ndim=1), start: qd.u32):
    for i in range(out.shape[0]):
        total = 0
        for k in range(start + qd.u32(i), 0, -1):  # a u32 bound and a literal negative step
            total += qd.i32(k)
        out[i] = total


@qd.kernel
def static_jumps(out: qd.types.ndarray(qd.i32, ndim=2), stop: qd.i32):
    for i in range(out.shape[0]):
        for s in qd.static(range(4)):  # continue: the next copy, not the next task iteration
            if (i + s) % 3 == 0:
                continue
            out[i, s] += 1
        for s in qd.static(range(4)):  # break: the copies after it do not run
            if i % 4 == s:
                break
            out[i, 4 + s] = 1
        for s in qd.static(range(4)):  # both in one unrolled loop
            if s == i % 3:
                continue
            if s == stop:
                break
            out[i, 8 + s] = s + 1
        for s in qd.static(range(2)):  # a runtime loop inside: its break and continue are its own
            k = 0
            while True:
                k += 1
                if k < 3:
                    continue
                break
            out[i, 12 + s] = k


@qd.kernel
def gather_i64(src: qd.types.ndarray(qd.f32, ndim=1), idx: qd.types.ndarray(qd.i64, ndim=1),
               out: qd.types.ndarray(qd.f32, ndim=1)):
    for i in range(idx.shape[0]):
        out[i] = src[idx[i]]
        for j in range(qd.i64(0), qd.i64(1)):  # an i64 loop variable as an index
            out[i] += src[j]


@qd.kernel
def serial_counter_then_conditional_range(out: qd.types.ndarray(qd.i32, ndim=1), m: qd.i32):
    n = 0
    while n < m:  # a kernel-scope variable only this serial task writes: no spin-wait
        n += 3
    out[0] = n
    for i in range(out.shape[0] if m > 0 else 1):  # a conditional range bound
        out[i] += 1


@qd.kernel
def widened_floordiv(x: qd.types.ndarray(qd.i32, ndim=1), d: qd.types.ndarray(qd.i64, ndim=1),
                     out: qd.types.ndarray(qd.i64, ndim=2)):
    for i in range(x.shape[0]):
        out[i, 0] = x[i] // d[i]
        out[i, 1] = x[i] % d[i]


@qd.kernel
def python_dtypes(a: qd.types.ndarray(dtype=float, ndim=1), b: qd.types.ndarray(dtype=int, ndim=1)):
    for i in range(a.shape[0]):
        a[i] = a[i] * 2 + b[i]


@qd.kernel
def kernel(device: qd.types.ndarray(qd.f32, ndim=1), thread: qd.f32, half: qd.i32):
    for i in range(device.shape[0]):
        device[i] = thread * half + i


@qd.kernel
def main(buffer: qd.types.ndarray(qd.f32, ndim=1), uniform: qd.f32) -> qd.f32:
    total = 0.0
    for i in range(buffer.shape[0]):
        total += buffer[i] * uniform
    return total


def test_counting_down_from_an_unsigned_bound(executor):
    out = np.zeros(6, np.int32)
    count_down_unsigned(out, 5)
    np.testing.assert_array_equal(out, [sum(range(5 + i, 0, -1)) for i in range(6)])


def test_break_and_continue_in_static_loops(executor):
    n = 12
    out = np.zeros((n, 14), np.int32)
    static_jumps(out, 2)
    want = np.zeros_like(out)
    for i in range(n):
        for s in range(4):
            if (i + s) % 3:
                want[i, s] = 1
        for s in range(4):
            if i % 4 == s:
                break
            want[i, 4 + s] = 1
        for s in range(4):
            if s == i % 3:
                continue
            if s == 2:
                break
            want[i, 8 + s] = s + 1
        want[i, 12:] = 3
    np.testing.assert_array_equal(out, want)


def test_i64_indices(executor, rng):
    src = rng.standard_normal(100).astype(np.float32)
    idx = rng.integers(0, 100, 50).astype(np.int64)
    out = np.zeros(50, np.float32)
    gather_i64(src, idx, out)
    np.testing.assert_allclose(out, src[idx] + src[0], rtol=1e-6)


@pytest.mark.toolchain
def test_i64_indices_compile_for_glsl():
    assert_compiles("glsl", qd.translate(gather_i64, "glsl"))


def test_serial_counter_and_conditional_range_are_accepted(executor):
    with warnings.catch_warnings():
        warnings.simplefilter("error", qd.HazardWarning)
        out = np.zeros(5, np.int32)
        serial_counter_then_conditional_range(out, 10)
    np.testing.assert_array_equal(out, [13, 1, 1, 1, 1])
    out = np.zeros(5, np.int32)
    serial_counter_then_conditional_range(out, -1)
    np.testing.assert_array_equal(out, [1, 0, 0, 0, 0])


def test_conditional_range_in_the_cxx_header():
    tr = qd.translate(serial_counter_then_conditional_range, "cuda")
    ends = [e["grid"]["extent"][0]["end"] for e in tr.manifest["entry_points"] if e["kind"] == "parallel"]
    assert ends == ["((m > 0) ? out_shape_0 : 1)"]
    from transpiler.header import render_header

    assert "? std::int64_t(p.out_shape_0) : 1" in render_header(tr)


def test_python_floor_division_of_a_widened_i32(executor, rng):
    """lavapipe evaluated `a < 0` wrongly for an i32 widened to i64 inside the floordiv helper."""
    x = rng.integers(-1000, 1000, 256).astype(np.int32)
    d = rng.integers(1, 30, 256).astype(np.int64) * np.where(np.arange(256) % 2, 1, -1)
    out = np.zeros((256, 2), np.int64)
    widened_floordiv(x, d, out)
    np.testing.assert_array_equal(out[:, 0], x.astype(np.int64) // d)
    np.testing.assert_array_equal(out[:, 1], x.astype(np.int64) % d)


def test_python_float_and_int_as_dtypes(executor):
    a, b = np.arange(6, dtype=np.float32), np.arange(6, dtype=np.int32)
    python_dtypes(a, b)
    np.testing.assert_array_equal(a, np.arange(6) * 3)
    a, b = qd.ndarray(float, shape=(4,)), qd.ndarray(int, shape=(4,))
    a.from_numpy(np.arange(4, dtype=np.float32))
    b.fill(1)
    python_dtypes(a, b)
    np.testing.assert_array_equal(a.to_numpy(), np.arange(4) * 2 + 1)


def test_reserved_names_run(executor):
    d = np.zeros(8, np.float32)
    kernel(d, 1.5, 2)
    np.testing.assert_array_equal(d, 3 + np.arange(8))
    assert main(np.ones(10, np.float32), 2.0) == 20.0


@pytest.mark.toolchain
@pytest.mark.parametrize("target", target_names())
def test_reserved_names_compile_and_the_manifest_names_the_entry(target):
    tr = qd.translate(kernel, target)
    assert_compiles(target, tr)
    (entry,) = tr.manifest["entry_points"]
    if target == "msl":
        assert entry["name"] == "kernel_" and "kernel void kernel_(" in tr.sources["kernel.metal"]
    assert_compiles(target, qd.translate(main, target))


@qd.kernel
def shared_float_atomics(a: qd.types.ndarray(qd.f32, ndim=1), d: qd.types.ndarray(qd.f64, ndim=1),
                         out: qd.types.ndarray(qd.f32, ndim=2), out64: qd.types.ndarray(qd.f64, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(a.shape[0]):
        lo_hi = qd.simt.block.SharedArray((2,), qd.f32)
        total = qd.simt.block.SharedArray((1,), qd.f64)
        t = qd.simt.block.thread_idx()
        if t == 0:
            lo_hi[0] = 1e30
            lo_hi[1] = -1e30
            total[0] = 0.0
        qd.simt.block.sync()
        qd.atomic_min(lo_hi[0], a[i])  # CAS loops on the bits of shared floats (GLSL holds them as uint)
        qd.atomic_max(lo_hi[1], a[i])
        qd.atomic_add(total[0], d[i])
        qd.simt.block.sync()
        if t == 0:
            out[i // 64, 0] = lo_hi[0]
            out[i // 64, 1] = lo_hi[1]
            out64[i // 64] = total[0]


def test_float_min_max_and_f64_atomics_on_shared_arrays(executor, rng):
    a = rng.standard_normal(64 * 5).astype(np.float32)
    d = rng.integers(-100, 100, a.size).astype(np.float64) / 4  # exact sums in any order
    out = np.zeros((5, 2), np.float32)
    out64 = np.zeros(5)
    shared_float_atomics(a, d, out, out64)
    rows = a.reshape(5, 64)
    np.testing.assert_array_equal(out[:, 0], rows.min(axis=1))
    np.testing.assert_array_equal(out[:, 1], rows.max(axis=1))
    np.testing.assert_array_equal(out64, d.reshape(5, 64).sum(axis=1))


@pytest.mark.toolchain
@pytest.mark.parametrize("target", target_names("f64"))
def test_shared_float_atomics_compile(target):
    assert_compiles(target, qd.translate(shared_float_atomics, target))


@qd.kernel
def atomic_reads_its_own_target(out: qd.types.ndarray(qd.i32, ndim=1)):
    qd.loop_config(block_dim=32)
    for i in range(32):
        s = qd.simt.block.SharedArray((1,), qd.i32)
        if qd.simt.block.thread_idx() == 0:
            s[0] = 1
        qd.simt.block.sync()
        qd.atomic_add(s[0], s[0])  # every lane of a warp reads s[0] before any lane's update
        qd.simt.block.sync()
        if qd.simt.block.thread_idx() == 0:
            out[0] = s[0]


def test_a_warp_executes_an_atomic_in_lockstep(executor):
    """A GPU runs a converged warp's atomic as one instruction: the operand reads come before
    the updates. The emulator did it thread by thread (2**32 instead of 33 for one warp)."""
    from transpiler.runtime import current

    out = np.zeros(1, np.int32)
    atomic_reads_its_own_target(out)
    w = min(current().subgroup_size, 32)
    assert out[0] == (1 + w) ** (32 // w)


# ----------------------------------------------------------------------------- found by tests/fuzz

@qd.kernel
def serial_reassignment(s: qd.types.ndarray(qd.u32, ndim=1), x: qd.types.ndarray(qd.u32, ndim=1), p: qd.i32):
    r = qd.cast(1, qd.u32)
    s[2] = r      # reads r before the next line changes it: not hoisted out of order
    r *= 0
    s[3] = r
    k6 = qd.u32(201)
    k6 = qd.u32(x[p])  # overwritten from memory, never read: still declared
    for i in range(x.shape[0]):
        x[i] += 1


@qd.kernel
def strides_and_wraps(out: qd.types.ndarray(qd.i32, ndim=2), start: qd.u32, n: qd.i32):
    for i in range(out.shape[0]):
        total = 0
        for k in range(start + qd.u32(i), 0, -2):  # an unsigned countdown by 2 stops at the bound
            total += qd.i32(k)
        for k in range(qd.u32(i), qd.u32(7), 3):
            total += 100 * qd.i32(k)
        out[i, 0] = total
        out[i, 1] = (i * 1000003) % n  # the product wraps negative: Python's %, not C's
        out[i, 2] = qd.i32(qd.i64(i) * 3000000000 // 7) % 5  # a narrowing cast may come out negative


@qd.func
def narrow_or_wide(a: qd.i8, b: qd.f32) -> qd.i32:
    if a > 3:
        return a * 2
    else:
        return qd.i32(b)


@qd.kernel
def annotated_result(x: qd.types.ndarray(qd.i8, ndim=1), y: qd.types.ndarray(qd.f32, ndim=1),
                     out: qd.types.ndarray(qd.i32, ndim=1)):
    for i in range(x.shape[0]):
        out[i] = narrow_or_wide(x[i], y[i]) + qd.u8(255)  # an i32 sum: the result is -> qd.i32


@qd.kernel
def widened_signs(d: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i64, ndim=2)):
    for i in range(d.shape[0]):
        out[i, 0] = qd.cast(1, qd.i64) % (d[i] - 6)  # an i32 widened to i64 as the divisor
        out[i, 1] = (qd.i64(d[i]) if d[i] > 0 else 5) % 3  # hipcc: int64_t is long, 5ll long long


def test_serial_code_keeps_its_order(executor):
    s = np.zeros(4, np.uint32)
    x = np.arange(5, dtype=np.uint32)
    serial_reassignment(s, x, 3)
    np.testing.assert_array_equal(s, [0, 0, 1, 0])
    np.testing.assert_array_equal(x, np.arange(5) + 1)


def test_strides_and_wrapping_arithmetic(executor):
    out = np.zeros((3000, 3), np.int32)
    strides_and_wraps(out, 5, 97)
    i = np.arange(3000, dtype=np.int64)
    wrap = lambda v: (v + 2**31) % 2**32 - 2**31  # noqa: E731
    np.testing.assert_array_equal(out[:6, 0], [sum(range(5 + k, 0, -2)) + 100 * sum(range(k, 7, 3)) for k in range(6)])
    np.testing.assert_array_equal(out[:, 1], wrap(i * 1000003) % 97)
    np.testing.assert_array_equal(out[:, 2], wrap(i * 3000000000 // 7) % 5)


def test_a_funcs_annotated_result_type(executor):
    x = np.array([100, 2, 5, 120], np.int8)
    y = np.array([1.5, 300.0, 2, 7], np.float32)
    out = np.zeros(4, np.int32)
    annotated_result(x, y, out)
    i8 = lambda v: (v + 128) % 256 - 128  # noqa: E731
    np.testing.assert_array_equal(out, [(i8(int(a) * 2) if a > 3 else int(b)) + 255 for a, b in zip(x, y)])


def test_signs_of_widened_values(executor, rng):
    d = rng.integers(-20, 20, 256).astype(np.int32)
    d[d == 6] = 7
    out = np.zeros((256, 2), np.int64)
    widened_signs(d, out)
    np.testing.assert_array_equal(out[:, 0], 1 % (d.astype(np.int64) - 6))
    np.testing.assert_array_equal(out[:, 1], np.where(d > 0, d, 5) % 3)


@pytest.mark.toolchain
def test_hip_64_bit_literals_have_the_type_of_int64_t():
    assert_compiles("hip", qd.translate(widened_signs, "hip"))


@qd.kernel
def narrow_abs_min_max(a: qd.types.ndarray(qd.i16, ndim=1), b: qd.types.ndarray(qd.i8, ndim=1),
                       out: qd.types.ndarray(qd.i32, ndim=2)):
    for i in range(a.shape[0]):
        out[i, 0] = qd.i32(abs(a[i]))
        out[i, 1] = qd.i32(abs(qd.i16(-3)))  # lavapipe's 16-bit abs gave -3
        out[i, 2] = qd.i32(max(b[i], qd.i8(-5)))
        out[i, 3] = qd.i32(min(a[i], qd.i16(7)))


def test_narrow_integer_abs_min_max(executor, rng):
    a = rng.integers(-30000, 30000, 64).astype(np.int16)
    b = rng.integers(-100, 100, 64).astype(np.int8)
    out = np.zeros((64, 4), np.int32)
    narrow_abs_min_max(a, b, out)
    np.testing.assert_array_equal(out, np.stack([np.abs(a), np.full(64, 3), np.maximum(b, -5), np.minimum(a, 7)], 1))


@qd.kernel
def shared_add_and_max(a: qd.types.ndarray(qd.f32, ndim=1), out: qd.types.ndarray(qd.f32, ndim=2)):
    qd.loop_config(block_dim=64)
    for i in range(a.shape[0]):
        acc = qd.simt.block.SharedArray((2,), qd.f32)
        t = qd.simt.block.thread_idx()
        if t == 0:
            acc[0] = 0.0
            acc[1] = -1e30
        qd.simt.block.sync()
        qd.atomic_add(acc[0], a[i])  # native on Vulkan elsewhere; here the array holds bits (max is CAS)
        qd.atomic_max(acc[1], a[i])
        qd.simt.block.sync()
        if t == 0:
            out[i // 64, 0] = acc[0]
            out[i // 64, 1] = acc[1]


def test_native_and_cas_atomics_on_one_shared_array(executor, rng):
    a = rng.integers(-64, 64, 64 * 3).astype(np.float32) / 4
    out = np.zeros((3, 2), np.float32)
    shared_add_and_max(a, out)
    np.testing.assert_array_equal(out, np.stack([a.reshape(3, 64).sum(1), a.reshape(3, 64).max(1)], 1))


@qd.kernel
def serial_then_uniform(x: qd.types.ndarray(qd.u64, ndim=1), y: qd.types.ndarray(qd.u32, ndim=1)):
    r = qd.cast(0, qd.u64)
    r = x[1]            # serial: a memory read
    r <<= qd.u64(2)     # so this update stays serial too (it crashed: a Store among uniform definitions)
    k = y[0]            # declared in serial code
    k = qd.cast(5, qd.u32)  # a pure reassignment: not hoisted before the declaration
    k = k + qd.u32(1)
    for i in range(y.shape[0]):
        y[i] = qd.u32(r) + k


def test_reassignments_after_serial_code(executor):
    x = np.array([0, 3], np.uint64)
    y = np.zeros(4, np.uint32)
    serial_then_uniform(x, y)
    np.testing.assert_array_equal(y, [12 + 6] * 4)


@qd.kernel
def atan2_of_zeros(y: qd.types.ndarray(qd.f32, ndim=1), x: qd.types.ndarray(qd.f32, ndim=1),
                   out: qd.types.ndarray(qd.f32, ndim=1)):
    for i in range(y.shape[0]):
        out[i] = qd.atan2(y[i], x[i])


def test_atan2_of_signed_zeros_is_cs(executor):
    """GLSL leaves atan(0, 0) undefined; lavapipe gave 3*pi/4 where C and Python give 0 or pi."""
    import math

    y = np.array([0.0, -0.0, 0.0, -0.0, 1.0, 0.0, -2.0], np.float32)
    x = np.array([0.0, 0.0, -0.0, -0.0, 0.0, -3.0, 1.0], np.float32)
    out = np.zeros(7, np.float32)
    atan2_of_zeros(y, x, out)
    want = np.array([math.atan2(a, b) for a, b in zip(y.astype(float), x.astype(float))], np.float32)
    np.testing.assert_allclose(out, want, rtol=4e-6, atol=1e-6)  # lavapipe's atan is within 2 ulps
    np.testing.assert_array_equal(np.signbit(out), np.signbit(want))


@qd.kernel
def half_atomics(a: qd.types.ndarray(qd.f16, ndim=1), out: qd.types.ndarray(qd.f16, ndim=1),
                 extremes: qd.types.ndarray(qd.f16, ndim=2)):
    for i in range(a.shape[0]):
        qd.atomic_add(out[i % 3], a[i])  # on Vulkan: a CAS loop on the element's 32-bit word
        qd.atomic_min(extremes[i % 2, 0], a[i])
        qd.atomic_max(extremes[i % 2, 1], a[i])


def test_f16_atomics(executor, rng):
    a = (rng.integers(-8, 8, 300) / 4).astype(np.float16)  # sums exact in f16 in any order
    out = np.zeros(3, np.float16)
    extremes = np.array([[100, -100], [100, -100]], np.float16)
    half_atomics(a, out, extremes)
    np.testing.assert_array_equal(out, [a[k::3].astype(np.float32).sum() for k in range(3)])
    np.testing.assert_array_equal(extremes, [[a[0::2].min(), a[0::2].max()], [a[1::2].min(), a[1::2].max()]])


@qd.kernel
def narrow_arithmetic(y: qd.types.ndarray(qd.u16, ndim=1), z: qd.types.ndarray(qd.i16, ndim=1)):
    for i in range(2, y.shape[0]):
        y[i] = qd.cast(1, qd.u16) // ((qd.cast(32766, qd.i16) % 6) + 1)  # lavapipe's 16-bit % gave 0 here
        v = qd.cast(-32768, qd.i16)
        if qd.cast(3, qd.i16) % 3:
            pass
        else:
            v //= 5  # and this stayed -32768
        z[i] = v


def test_narrow_integer_arithmetic_on_every_executor(executor):
    y = np.zeros(8, np.uint16)
    z = np.zeros(8, np.int16)
    narrow_arithmetic(y, z)
    np.testing.assert_array_equal(y[2:], 1)
    np.testing.assert_array_equal(z[2:], -32768 // 5)


@qd.kernel
def widened_compare(x: qd.types.ndarray(qd.i32, ndim=1), y: qd.types.ndarray(qd.u32, ndim=1)):
    for i in range(x.shape[0]):
        if qd.i64(i) >= qd.cast(214, qd.i64):  # lavapipe: true for every i
            pass
        else:
            y[i] = qd.cast(4294967295, qd.u32)
        if qd.i64(x[i]) < qd.i64(-2147483648) + 1:
            y[i] = 7


def test_comparing_widened_i32_values(executor):
    x = np.zeros(256, np.int32)
    x[5] = -2**31
    y = np.zeros(256, np.uint32)
    widened_compare(x, y)
    want = np.where(np.arange(256) < 214, 4294967295, 0).astype(np.uint32)
    want[5] = 7
    np.testing.assert_array_equal(y, want)


@qd.kernel
def widened_through_locals(x: qd.types.ndarray(qd.i32, ndim=1), y: qd.types.ndarray(qd.i32, ndim=1),
                           c: qd.types.ndarray(qd.i32, ndim=1)):
    for i in range(x.shape[0]):
        v = qd.i64(x[i])
        y[i] = (1 if v < 0 else 0) + (2 if v <= 2 else 0) + (4 if -1 < v else 0)
        z = qd.i64(0)
        if qd.cast(0, qd.i64) >= z + qd.i64(i):  # fuzz seed 20297
            pass
        else:
            qd.atomic_add(c[0], 1)


def test_comparing_widened_i32_values_through_locals(executor, rng):
    """lavapipe compared int64_t(x) with a constant as if x were huge (`v < 0l` false for every
    x), the constant also when it came through a local: widening is spelled qd_widen on GLSL."""
    x = rng.integers(-6, 7, 256).astype(np.int32)
    y = np.zeros(256, np.int32)
    c = np.zeros(1, np.int32)
    widened_through_locals(x, y, c)
    np.testing.assert_array_equal(y, (x < 0) * 1 + (x <= 2) * 2 + (-1 < x) * 4)
    assert c[0] == 255


def test_lookback_scan_of_a_million_elements(executor, rng):
    """examples/lookback_scan.py, 1954 tiles. On lavapipe most tiles never published their
    prefix: its memoryBarrier() is a workgroup barrier, and the one in thread 0's spin-wait
    let the other 120 threads finish, whereupon llvmpipe ended the workgroup mid-wait; spin-
    waits were also cut short after 65535 iterations (a millisecond). Several runs: each
    failure was a matter of timing."""
    import sys
    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from lookback_scan import TILE, prefix_sum
    finally:
        sys.path.remove(str(ROOT / "examples"))
    n = 1_000_000
    tiles = -(-n // TILE)
    for _ in range(4):
        x = rng.integers(-100, 100, n, dtype=np.int32)
        y = np.zeros_like(x)
        flags, counter = np.zeros(tiles, np.int32), np.zeros(1, np.int32)
        prefix_sum(x, y, flags, np.zeros(tiles, np.int32), np.zeros(tiles, np.int32), counter)
        assert counter[0] == tiles and (flags == 2).all()  # every tile taken once, every prefix published
        np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.int32))


def test_lookback_scan_at_the_tile_edges(executor, rng):
    """examples/lookback_scan.py at 1 element and around its tile (the guarded last tile),
    and over more tiles than one look-back window of any subgroup width (64 + 3 tiles)."""
    import sys
    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from lookback_scan import TILE, prefix_sum
    finally:
        sys.path.remove(str(ROOT / "examples"))
    for n in (1, TILE - 1, TILE, TILE + 1, 67 * TILE - 5):
        x = rng.integers(-1000, 1000, n, dtype=np.int32)
        y = np.zeros_like(x)
        tiles = -(-n // TILE)
        flags, counter = np.zeros(tiles, np.int32), np.zeros(1, np.int32)
        prefix_sum(x, y, flags, np.zeros(tiles, np.int32), np.zeros(tiles, np.int32), counter)
        assert counter[0] == tiles and (flags == 2).all(), n
        np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.int32), err_msg=f"n={n}")


def test_lavapipe_fences_and_spin_waits_in_glsl():
    """What the lavapipe option changes in the look-back scan's GLSL: no memoryBarrier() (a
    workgroup barrier there), a pause in its spin-wait, and the shared word they use."""
    import sys
    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from lookback_scan import prefix_sum
    finally:
        sys.path.remove(str(ROOT / "examples"))
    plain = qd.translate(prefix_sum, "glsl", subgroup_size=8)
    lava = qd.translate(prefix_sum, "glsl", subgroup_size=8, lavapipe=True)
    scan = "prefix_sum_2.comp"
    assert plain.sources[scan].count(" memoryBarrier();") == 4 and "qd_pause" not in plain.sources[scan]
    text = lava.sources[scan]
    assert "    memoryBarrier();" not in text and text.count("atomicExchange(qd_fence, 0u);") == 4 + 64
    assert "shared uint qd_fence;" in text
    spin = text[text.index("for (bool qd_go1 = subgroupMin(f) == 0; qd_go1; qd_go1 = subgroupMin(f) == 0) {"):]
    assert spin.splitlines()[1].strip() == "qd_pause();"
    assert text.count("barrier();") == plain.sources[scan].count("barrier();")  # block.sync() stays
    sizes = [[e["shared_bytes"] for e in t.manifest["entry_points"]] for t in (plain, lava)]
    assert sizes[1] == [sizes[0][0], sizes[0][1], sizes[0][2] + 4]
    assert lava.sources["prefix_sum_1.comp"] == plain.sources["prefix_sum_1.comp"]  # nothing to change there


@qd.kernel
def loops_after_a_memory_loop(y: qd.types.ndarray(qd.i32, ndim=1), z: qd.types.ndarray(qd.i32, ndim=2), n: qd.i32):
    while y[0] < 5:  # lavapipe: lanes past the 1-thread workgroup spun here to the loop limit
        y[0] = y[0] + 1
    z[0, 0] = y[0] ** 2  # then qd_ipow's loop ran once: 1
    qd.loop_config(block_dim=12)  # 12 threads: one full 8-lane vector and one with 4 lanes past the end
    for i in range(1, y.shape[0]):
        while y[i] < n:
            y[i] += 1
        r = 0
        for k in range(n):
            r += k
        z[i, 0] = r
        z[i, 1] = y[i] ** 3


def test_loops_after_a_loop_on_memory(executor, rng):
    y = rng.integers(-20, 20, 40).astype(np.int32)
    z = np.zeros((40, 2), np.int32)
    want_y = np.maximum(y, [5] + [9] * 39)
    loops_after_a_memory_loop(y, z, 9)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(z[0], [want_y[0] ** 2, 0])
    np.testing.assert_array_equal(z[1:, 0], sum(range(9)))
    np.testing.assert_array_equal(z[1:, 1], want_y[1:] ** 3)


@qd.kernel
def narrow_literal_operations(x: qd.types.ndarray(qd.i32, ndim=1), y: qd.types.ndarray(qd.i16, ndim=1)):
    for i in range(x.shape[0]):
        # 8-bit arithmetic on literals only: the shader must still enable 8-bit types
        bit = qd.cast((qd.u8(96) | qd.u8(192)) > 200, qd.i16)
        y[i] = qd.i16(x[i]) + bit + qd.i16(-qd.i8(-128))  # -i8(-128) wraps to -128 (was `--128`)


def test_narrow_operations_on_literals(executor, rng):
    x = rng.integers(-1000, 1000, 300).astype(np.int32)
    y = np.zeros(300, np.int16)
    narrow_literal_operations(x, y)
    np.testing.assert_array_equal(y, (x + 1 - 128).astype(np.int16))


@qd.kernel
def reassigned_after_a_task(x: qd.types.ndarray(qd.i32, ndim=1), y: qd.types.ndarray(qd.i32, ndim=1)):
    r = x[0]  # serial code declares r and s
    s = x[1]
    y[0] = r
    for i in range(1, x.shape[0]):
        y[i] = x[i] * 2
    if x[2] > 0:
        s = -1  # conditionally: the old value must still be there when it is not taken
    y[0] += s
    r = 7  # a later serial task assigns r, which it never declared (was an internal error)


def test_assigning_a_serial_local_after_a_task(executor, rng):
    for sign in (1, -1):
        x = rng.integers(1, 100, 64).astype(np.int32) * sign
        y = np.zeros(64, np.int32)
        reassigned_after_a_task(x, y)
        np.testing.assert_array_equal(y[1:], x[1:] * 2)
        assert y[0] == x[0] + (-1 if x[2] > 0 else x[1])


@qd.kernel
def abs_i64(x: qd.types.ndarray(qd.i64, ndim=1), y: qd.types.ndarray(qd.i64, ndim=1)):
    k = abs(qd.i64(-4))  # glslang folded this to -4
    for i in range(x.shape[0]):
        y[i] = abs(x[i]) * 8 + abs(qd.i64(-9223372036854775807)) % 1000 + k


def test_abs_of_64_bit_constants(executor, rng):
    x = rng.integers(-2**40, 2**40, 200)
    y = np.zeros(200, np.int64)
    abs_i64(x, y)
    np.testing.assert_array_equal(y, np.abs(x) * 8 + 9223372036854775807 % 1000 + 4)


@qd.func
def fill_first(a: qd.template(), m):
    for i in range(m):  # a task of the kernel, bounded by the caller's serial local
        a[i] = a[i] * 3 + i


@qd.kernel
def task_func_bounded_by_a_serial_local(a: qd.types.ndarray(qd.i32, ndim=1), nn: qd.types.ndarray(qd.i32, ndim=0)):
    n = nn[()]  # serial: it reads memory
    m = (n + 1) >> 1
    fill_first(a, m)  # was "internal error: `m` used before its declaration"


def test_a_task_making_func_takes_a_serial_local(executor, rng):
    for n in (0, 7, 200):
        a = rng.integers(-100, 100, 256).astype(np.int32)
        want = a.copy()
        m = (n + 1) // 2
        want[:m] = a[:m] * 3 + np.arange(m)
        task_func_bounded_by_a_serial_local(a, np.array(n, np.int32))
        np.testing.assert_array_equal(a, want)


# --- Signed overflow (found by the fuzzer on an H200: 24 of 29 wrong results there). C++
# leaves it undefined and NVRTC optimizes on that, so `x * 3 + 7` near INT_MAX came out
# differently on the GPU than in Python's fixed-width arithmetic (and on the CPU emulator,
# which compiled with -fwrapv). Signed +, -, *, negation, abs, ** and subgroup sums that may
# overflow are written in unsigned arithmetic; the emulator now traps on signed overflow.

@qd.kernel
def wrapping(x: qd.types.ndarray(qd.i32, ndim=1), w: qd.types.ndarray(qd.i64, ndim=1),
             y: qd.types.ndarray(qd.i32, ndim=2), z: qd.types.ndarray(qd.i64, ndim=2)):
    for i in range(x.shape[0]):
        a = x[i]
        total = a
        total += 2147483000
        y[i, 0] = a * 3 + 7
        y[i, 1] = -a
        y[i, 2] = abs(a)
        y[i, 3] = a ** 3
        y[i, 4] = total
        y[i, 5] = x[(a * 31 + 7) % x.shape[0]]  # a hash inside an index wraps before the %
        b = w[i]
        z[i, 0] = b * 5 - 3
        z[i, 1] = -b
        z[i, 2] = abs(b)
        z[i, 3] = b * b


def test_signed_overflow_wraps(executor):
    n = 64
    x = np.array([2**31 - 1, -2**31, 2**30 + 5, -2**30 - 7] * (n // 4), np.int32)
    x[::7] = np.arange(0, n, 7, dtype=np.int32) * 977 - 20000
    w = x.astype(np.int64) * (2**32 + 3) + np.int64(2**62)
    y, z = np.zeros((n, 6), np.int32), np.zeros((n, 4), np.int64)
    wrapping(x, w, y, z)
    with np.errstate(over="ignore"):
        a = x.astype(np.int64)
        want_y = np.stack([a * 3 + 7, -a, np.abs(a), a ** 3, a + 2147483000,
                           x[((a * 31 + 7) % 2**32).astype(np.uint32).astype(np.int32) % n]], 1)
        want_y = (want_y % 2**32).astype(np.uint32).astype(np.int32)
        want_z = np.stack([w * 5 - 3, -w, np.abs(w), w * w], 1)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(z, want_z)


@qd.kernel
def wrapping_sums(x: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i32, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(x.shape[0]):
        out[i] = qd.simt.subgroup.reduce_add(x[i]) + qd.simt.block.inclusive_add(x[i], 64, qd.i32)


def test_subgroup_and_block_sums_wrap(executor):
    x = np.full(128, 2**30 + 12345, np.int32)
    out = np.zeros(128, np.int32)
    wrapping_sums(x, out)
    v = 2**30 + 12345
    scan = np.cumsum(np.full((2, 64), v, np.int64), 1).reshape(-1)
    sub = (out.astype(np.int64) - scan) % 2**32  # the subgroup sum, width * v wrapped
    widths = [w for w in (8, 16, 32, 64) if (w * v) % 2**32 == sub[0]]
    assert widths, sub[0]
    np.testing.assert_array_equal(sub, np.full(128, sub[0]))


def test_wrapping_is_spelled_only_where_needed():
    text = qd.translate(wrapping, "cuda").sources["wrapping.cu"]
    assert "int32_t(uint32_t(a) * 3u + 7u)" in text       # may overflow: unsigned
    assert "total = int32_t(uint32_t(total) + 2147483000u);" in text
    assert "qd_abs(a)" in text and "int32_t(0u - uint32_t(a))" in text
    assert "y[i * y_shape_1 + 2]" in text                 # index arithmetic stays plain
    assert "% x_shape_0" in text or "qd_mod(" in text
    msl = qd.translate(wrapping, "msl").sources
    assert "long(ulong(b) * 5ul - 3ul)" in next(iter(msl.values()))
    glsl = next(iter(qd.translate(wrapping, "glsl").sources.values()))
    assert "a * 3 + 7" in glsl                             # SPIR-V's integer arithmetic wraps


@qd.kernel
def promoted_wrapping(a: qd.types.ndarray(qd.u16, ndim=1), b: qd.types.ndarray(qd.u16, ndim=1),
                      h: qd.types.ndarray(qd.i16, ndim=1), x: qd.types.ndarray(qd.i32, ndim=1),
                      u: qd.types.ndarray(qd.u16, ndim=2), s: qd.types.ndarray(qd.i16, ndim=2),
                      y: qd.types.ndarray(qd.i32, ndim=2)):
    for i in range(a.shape[0]):
        u[i, 0] = a[i] * b[i]          # u16 promotes to int: 65535 * 65535 overflows it
        u[i, 1] = a[i] ** 3
        u[i, 2] = a[i] << 9
        s[i, 0] = (-h[i]) >> 1         # NVRTC: 16384 for h = -32768 (fuzz seed 104195)
        s[i, 1] = (h[i] + h[i]) >> 2
        s[i, 2] = h[i] << 3
        y[i, 0] = x[i] << 5            # a negative int shifted left: undefined before C++20
        y[i, 1] = x[i] << (i % 31)
        unused = x[i] * 2147483646     # computed though never read (fuzz seed 102539)
        unused += 2147483646           # (fuzz seed 103152)
        w = x[i] * 3
        w2 = w * 5 + 7                 # w and w2 only feed each other (fuzz seed 8457)
        w = w2 * 11


def test_narrow_and_shifted_arithmetic_wraps(executor, rng):
    """C++ computes u16 and i16 in int, and before C++20 shifting a negative int left is
    undefined: on CUDA, HIP and Metal these are spelled in unsigned arithmetic. clang's UBSan
    (CXX=clang++-19) traps on the old spelling in the emulator; g++ shortens u16 * u16 first."""
    n = 64
    a = np.concatenate([[65535, 65534, 40000, 256], rng.integers(0, 65536, n - 4)]).astype(np.uint16)
    b = np.concatenate([[65535, 65535, 50000, 256], rng.integers(0, 65536, n - 4)]).astype(np.uint16)
    h = np.concatenate([[-32768, -32767, 32767, -1], rng.integers(-32768, 32768, n - 4)]).astype(np.int16)
    x = np.concatenate([[-2**31, -1, 2**31 - 1, -12345], rng.integers(-2**31, 2**31, n - 4)]).astype(np.int32)
    u, s, y = np.zeros((n, 3), np.uint16), np.zeros((n, 3), np.int16), np.zeros((n, 2), np.int32)
    promoted_wrapping(a, b, h, x, u, s, y)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(u, np.stack([a * b, a ** 3, a << 9], 1))
        np.testing.assert_array_equal(s, np.stack([(-h) >> 1, (h + h) >> 2, h << 3], 1))
        np.testing.assert_array_equal(y, np.stack([x << 5, x << (np.arange(n, dtype=np.int32) % 31)], 1))


def test_narrow_and_shifted_wrapping_spellings():
    text = qd.translate(promoted_wrapping, "cuda").sources["promoted_wrapping.cu"]
    assert "uint16_t(uint32_t(a[i]) * uint32_t(b[i]))" in text
    assert "int16_t(qd_neg(h[i]) >> int16_t(1))" in text  # negated in 32 bits: ptxas 12.9's bug
    hip = qd.translate(promoted_wrapping, "hip").sources["promoted_wrapping.hip"]
    assert "int16_t(0u - uint32_t(h[i])) >> int16_t(1)" in hip
    assert "int32_t(uint32_t(x[i]) << 5)" in text
    assert "int32_t unused = int32_t(uint32_t(x[i]) * 2147483646u);" in text
    assert "unused = int32_t(uint32_t(unused) + 2147483646u);" in text
    assert "uint32_t result = 1;" in text  # u16's ** squares in uint32_t
    assert "int32_t w2 = int32_t(uint32_t(w) * 5u + 7u);" in text


Pair = qd.types.struct(a=qd.u8, b=qd.u64)


@qd.kernel
def copies_of_serial_members(x: qd.types.ndarray(qd.i32, ndim=1), y: qd.types.ndarray(qd.u64, ndim=1)):
    k5 = Pair(a=qd.u8(x[3]), b=qd.u64(7))
    k7 = k5.a                      # a copy of a member serial code computed (fuzz seed 7398)
    v = qd.types.vector(3, qd.i32)(x[0], x[1], 5)
    w = v.y                        # and of a vector's component (fuzz seed 6966)
    for i in range(x.shape[0]):
        y[i] = k5.b + k7 + qd.u64(w) + qd.u64(i)


def test_copies_of_serially_computed_struct_and_vector_members(executor, rng):
    x = rng.integers(0, 1000, 64).astype(np.int32)
    y = np.zeros(64, np.uint64)
    copies_of_serial_members(x, y)
    np.testing.assert_array_equal(y, 7 + (x[3] % 256) + x[1] + np.arange(64))


@qd.kernel
def folds_to_the_most_negative(x: qd.types.ndarray(qd.u16, ndim=1), y: qd.types.ndarray(qd.i64, ndim=1)):
    for i in range(x.shape[0]):
        y[i] = (qd.i64(x[i]) - 1) - 9223372036854775807  # folds to x + INT64_MIN (fuzz seed 40100)


def test_folding_to_the_most_negative_constant(executor, rng):
    """(x - 1) - (2**63 - 1) folded to x - 2**63, a constant outside i64: with x a widened u16
    the value range looked safe, so it was written plainly as x - 9223372036854775808ll, which
    overflows for every x >= 0 (a trap on the CPU executors). It is x + INT64_MIN now."""
    x = rng.integers(0, 2**16, 64).astype(np.uint16)
    y = np.zeros(64, np.int64)
    folds_to_the_most_negative(x, y)
    np.testing.assert_array_equal(y, x.astype(np.int64) + np.int64(-2**63))
    text = qd.translate(folds_to_the_most_negative, "cuda").sources["folds_to_the_most_negative.cu"]
    assert "9223372036854775808ll" not in text  # a signed literal past INT64_MAX


M3 = qd.types.matrix(3, 3, qd.f32)


@qd.kernel
def many_kernel_scope_matrices(x: qd.types.ndarray(qd.f32, ndim=1), y: qd.types.ndarray(qd.f32, ndim=1)):
    a = M3(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8])
    b = a * 2.0
    c = a + b
    d = c - 1.0
    for i in range(y.shape[0]):  # reads all four: 36 scratch buffers, one per component
        y[i] = a[0, 0] + b[1, 1] + c[2, 2] + d[0, 1] + x[i]


def test_more_storage_buffers_than_the_device_allows(executor, rng):
    """lavapipe allows 32 storage buffers per shader and crashed on more (fuzz seed 34075):
    Vulkan refuses the kernel, naming the count and the limit; the CPU executors have none."""
    from transpiler.runtime import current
    from transpiler.runtime.vulkan import DeviceUnsupported

    x = rng.standard_normal(16).astype(np.float32)
    y = np.zeros(16, np.float32)
    limit = getattr(getattr(current(), "device", None), "max_storage_buffers", None)
    if limit is not None and limit < 38:
        with pytest.raises(DeviceUnsupported, match=rf"binds 38 storage buffers \(36 of them its own.*allows {limit}"):
            many_kernel_scope_matrices(x, y)
        return
    many_kernel_scope_matrices(x, y)
    a = x[:9].reshape(3, 3)
    want = a[0, 0] + 2 * a[1, 1] + 3 * a[2, 2] + (3 * a[0, 1] - 1) + x
    np.testing.assert_allclose(y, want, rtol=1e-6)


@qd.kernel
def atan2_of_constant_zeros(x: qd.types.ndarray(qd.f32, ndim=1), y: qd.types.ndarray(qd.f32, ndim=1),
                   out: qd.types.ndarray(qd.f32, ndim=2)):
    for i in range(x.shape[0]):
        out[i, 0] = qd.atan2(-qd.cast(0.0, qd.f32), x[i])  # lavapipe: NaN for x < 0 (fuzz seed 3072)
        out[i, 1] = qd.atan2(qd.cast(0.0, qd.f32), x[i])
        out[i, 2] = qd.atan2(y[i], x[i])


def test_atan2_of_constant_and_signed_zeros(executor, rng):
    x = np.concatenate([[0.0, -0.0, 1e30, -1e30, 1e-30, -1e-30], rng.standard_normal(58)]).astype(np.float32)
    y = np.where(rng.random(64) < 0.5, np.float32(-0.0), np.float32(0.0)).astype(np.float32)
    out = np.zeros((64, 3), np.float32)
    atan2_of_constant_zeros(x, y, out)
    want = np.stack([np.arctan2(np.float32(-0.0), x), np.arctan2(np.float32(0.0), x), np.arctan2(y, x)], 1)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(want))


@qd.kernel
def subgroup_after_loop_of_atomics(x: qd.types.ndarray(qd.i32, ndim=1), acc: qd.types.ndarray(qd.i32, ndim=1),
                                   y: qd.types.ndarray(qd.i32, ndim=2)):
    qd.loop_config(block_dim=64)
    for i in range(x.shape[0]):
        v = x[i]
        for r in range(3):  # every lane runs it: the wave is whole again after it
            for j in range(4):
                v = v % 1000 + j
            qd.atomic_and(acc[0], v)
        y[i, 0] = qd.simt.subgroup.reduce_add(x[i])
        y[i, 1] = qd.simt.subgroup.exclusive_max(x[i])


def test_a_subgroup_operation_after_a_loop_of_atomics(executor, rng):
    # The CPU emulator let a lockstep atomic in a loop go ahead without the lanes still in the
    # loop, then ran HIP's mask-free shuffles after the loop without the lanes behind (cpu-hip:
    # a partial wave's sum, or a lane's own value for its exclusive max, in some runs).
    from transpiler.runtime import current

    w = current().subgroup_size
    for _ in range(10):  # the lanes came apart in about half the runs
        x = rng.integers(-1000, 1000, 1024).astype(np.int32)
        acc = np.full(1, -1, np.int32)
        y = np.zeros((1024, 2), np.int32)
        subgroup_after_loop_of_atomics(x, acc, y)
        rows = x.reshape(-1, w)
        np.testing.assert_array_equal(y[:, 0], np.repeat(rows.sum(1), w))
        upto = np.maximum.accumulate(rows, axis=1)
        first = np.full((rows.shape[0], 1), np.iinfo(np.int32).min, np.int32)
        np.testing.assert_array_equal(y[:, 1], np.concatenate([first, upto[:, :-1]], 1).reshape(-1))


@qd.kernel
def constant_conditions(x: qd.types.ndarray(qd.i32, ndim=1), count: qd.types.ndarray(qd.i64, ndim=1)):
    for i in range(x.shape[0]):
        for s in qd.static(range(2)):
            # Fuzz seed 20297: a select on a condition of two constants, next to 64-bit
            # arithmetic; lavapipe took the else branch at i == 0.
            if qd.cast(0, qd.i64) >= (qd.cast(0, qd.i64) if qd.cast(0, qd.i64) == 9223372036854775806
                                      else qd.cast(s, qd.i64)) + qd.i64(i):
                pass
            else:
                qd.atomic_add(count[s], 1)


def test_conditions_of_constants_fold(executor):
    count = np.zeros(2, np.int64)
    constant_conditions(np.zeros(100, np.int32), count)
    np.testing.assert_array_equal(count, [99, 100])
    glsl = next(iter(qd.translate(constant_conditions, "glsl").sources.values()))
    assert "9223372036854775806" not in glsl  # the condition is known when translating


@qd.kernel
def float_remainders(x: qd.types.ndarray(qd.f32, ndim=1), b: qd.types.ndarray(qd.f32, ndim=1),
                     y: qd.types.ndarray(qd.f32, ndim=2)):
    for i in range(x.shape[0]):
        y[i, 0] = x[i] % b[i]
        y[i, 1] = qd.atan2(x[i] % b[i], -5.0)  # the sign of a zero remainder shows (fuzz seed 81527)


def test_a_zero_float_remainder_takes_the_divisors_sign(executor, rng):
    """Python's float %: a zero remainder is +0.0 for a positive divisor and -0.0 for a
    negative one. fmod gave -0.0 for -3.0 % 1.0 (C++ targets), GLSL's mod 0.0 for 3.0 % -1.0."""
    b = rng.choice(np.array([1.0, -1.0, 1.5, -2.5, 0.25], np.float32), 256)
    k = rng.integers(-6, 7, 256).astype(np.float32)
    x = np.where(rng.random(256) < 0.7, k * b, rng.standard_normal(256).astype(np.float32) * 4)  # most exact multiples
    x[:4] = [0.0, -0.0, -3.0, 3.0]
    b[:4] = [-1.0, 1.0, 1.0, -1.0]
    y = np.zeros((256, 2), np.float32)
    float_remainders(x, b, y)
    want = np.array([float(p) % float(q) for p, q in zip(x, b)], np.float32)
    np.testing.assert_allclose(y[:, 0], want, rtol=1e-6, atol=1e-6)
    zero = want == 0
    assert zero.sum() > 50
    np.testing.assert_array_equal(np.signbit(y[zero, 0]), np.signbit(want[zero]))
    np.testing.assert_allclose(y[:, 1], np.arctan2(want, np.float32(-5.0)), rtol=1e-5)


@qd.kernel
def pointer_chase(parent: qd.types.ndarray(qd.i32, ndim=1), weight: qd.types.ndarray(qd.f32, ndim=1),
                  out: qd.types.ndarray(qd.f32, ndim=2)):
    for i in range(out.shape[0]):
        k = i
        while parent[k] >= 0:                 # a tree walk: the exit tests what this iteration loaded
            k = parent[k]
        out[i, 0] = weight[k] + weight[i]
        r = i
        while True:                           # union-find's root, with an explicit break
            p = parent[r]
            if p < 0:
                break
            r = p
        out[i, 1] = weight[r] * 2.0
        hops = 0
        for step in range(64):
            if parent[hops] < 0 or step == i:
                break
            hops = parent[hops]
        out[i, 2] = weight[hops]


def test_a_load_after_a_loop_left_on_a_loaded_value(executor, rng):
    """lavapipe (Mesa 22.3) read 0 from `weight[k]` after `while parent[k] >= 0: k = parent[k]`
    in every lane but the last to leave the loop; its loops now leave on a flag."""
    n = 40
    parent = np.array([-1] + [int(rng.integers(0, k)) for k in range(1, n)], np.int32)
    weight = rng.random(n).astype(np.float32) + 1.0
    out = np.zeros((n, 3), np.float32)
    pointer_chase(parent, weight, out)
    want = np.zeros((n, 3), np.float32)
    for i in range(n):
        k = i
        while parent[k] >= 0:
            k = parent[k]
        want[i, 0] = weight[k] + weight[i]
        want[i, 1] = weight[k] * np.float32(2)
        hops = 0
        for step in range(64):
            if parent[hops] < 0 or step == i:
                break
            hops = parent[hops]
        want[i, 2] = weight[hops]
    np.testing.assert_array_equal(out, want)


# ----------------------------------------------------------------------------- value ranges

@qd.func
def lower_by(x: qd.template(), k: qd.i32):
    x -= k  # the caller's variable itself (a qd.template() parameter)


@qd.kernel
def changed_through_a_template(out: qd.types.ndarray(qd.i32, ndim=2), by: qd.types.ndarray(qd.i32, ndim=1)):
    for i in range(out.shape[0]):
        c = 5           # non-negative where it is declared ...
        lower_by(c, by[i])  # ... not after: Python's % and // of a negative number
        out[i, 0] = c % 3
        out[i, 1] = c // 4


def test_a_local_a_function_changes_through_a_template_keeps_pythons_division(executor, rng):
    """A local assigned once is not known non-negative when a @qd.func takes it as a
    qd.template() and assigns it: `c % 3` was C's remainder of -5 (-2; Python's is 1)."""
    by = rng.integers(0, 20, 64).astype(np.int32)
    out = np.zeros((64, 2), np.int32)
    changed_through_a_template(out, by)
    np.testing.assert_array_equal(out[:, 0], (5 - by) % 3)
    np.testing.assert_array_equal(out[:, 1], (5 - by) // 4)


N_RING = 16
ring = qd.field(qd.f32, shape=(N_RING, N_RING))
ring_out = qd.field(qd.f32, shape=(N_RING, N_RING))


@qd.kernel
def ring_neighbours(bins: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i32, ndim=2)):
    for i, j in ring:  # periodic neighbours, Taichi's way: (i + 1) % N of a field's index
        ring_out[i, j] = ring[(i + 1) % N_RING, j] + ring[i, (j + N_RING - 1) % N_RING] * 2.0
    for i in range(out.shape[0]):
        bins[i % bins.shape[0]] += 1   # an extent as the divisor
        out[i, 0] = (i + 1) // bins.shape[0]
        out[i, 1] = i * 3 + 1   # may wrap: the extents are not known here


def test_loop_variables_carry_their_ranges(executor, rng):
    """A loop variable holds its range's values, and a local assigned once its value's range:
    `(i + 1) % 16` over a 16-wide field is `(i + 1) & 15`, `i % n` of an extent C's `%`, and
    `i + 1` below an extent plain arithmetic, where Python's results are C's."""
    r = rng.standard_normal((N_RING, N_RING)).astype(np.float32)
    ring.from_numpy(r)
    bins = np.zeros(7, np.int32)
    out = np.zeros((100, 2), np.int32)
    ring_neighbours(bins, out)
    np.testing.assert_allclose(ring_out.to_numpy(), np.roll(r, -1, 0) + 2 * np.roll(r, 1, 1), rtol=1e-6)
    np.testing.assert_array_equal(bins, np.bincount(np.arange(100) % 7, minlength=7))
    np.testing.assert_array_equal(out[:, 0], (np.arange(100) + 1) // 7)
    np.testing.assert_array_equal(out[:, 1], np.arange(100) * 3 + 1)


def test_loop_variable_ranges_in_the_spelling():
    cuda = "\n".join(qd.translate(ring_neighbours, "cuda").sources.values())
    assert "ring[((i + 1) & 15) * 16 + j]" in cuda and "ring[i * 16 + ((j + 15) & 15)]" in cuda
    assert "bins[i % bins_shape_0]" in cuda and "(i + 1) / bins_shape_0" in cuda
    assert "int32_t(uint32_t(i) * 3u + 1u)" in cuda  # (i up to 2**31 - 2: i * 3 may overflow)
    assert "qd_mod" not in cuda and "qd_floordiv" not in cuda
    plain = "\n".join(qd.translate(changed_through_a_template, "cuda").sources.values())
    assert "qd_mod(c, 3)" in plain and "qd_floordiv(c, 4)" in plain


@qd.kernel
def non_negative_division(a: qd.types.ndarray(qd.i32, ndim=1), b: qd.types.ndarray(qd.i32, ndim=1),
                          out: qd.types.ndarray(qd.i32, ndim=2)):
    for i in range(a.shape[0]):
        x = a[i] & 0x7FFFFFFF        # known non-negative: // and % are C's (on lavapipe, through
        y = (b[i] & 0x3FFFFFFF) + 1  # doubles: qd_index_div)
        out[i, 0] = x // y
        out[i, 1] = x % y


def test_non_negative_division_by_a_run_time_value(executor, rng):
    """C's / and % where both sides are known non-negative, at every size of quotient: the
    largest ints by 1, 2 and 3, by each other, and random ones by small and large divisors."""
    big = np.iinfo(np.int32).max
    a = np.concatenate([[big, big - 1, big, big, 0, 1, big, 16777217, 16777215, 4194305],
                        rng.integers(0, big, 500), rng.integers(0, 1 << 24, 500)]).astype(np.int32)
    b = np.concatenate([[0, 1, 2, 3, 5, 7, 1 << 30, 3, 16777215, 2047],
                        rng.integers(0, 40, 500), rng.integers(0, 1 << 30, 500)]).astype(np.int32)
    out = np.zeros((a.size, 2), np.int32)
    non_negative_division(a, b, out)
    y = (b & 0x3FFFFFFF) + 1
    np.testing.assert_array_equal(out[:, 0], a // y)
    np.testing.assert_array_equal(out[:, 1], a % y)


@qd.kernel
def numbered_3d(out: qd.types.ndarray(qd.i32, ndim=3), low: qd.i32):
    for i, j, k in qd.ndrange((1, out.shape[0]), (2, out.shape[1]), (low, out.shape[2])):
        if (i + j + k) % 5 == 0:
            continue  # (the next iteration's indices must still be right)
        out[i, j, k] = i * 1000000 + j * 1000 + k


@qd.kernel
def numbered_wide(out: qd.types.ndarray(qd.i32, ndim=2)):
    for i, j in qd.ndrange(out.shape[0], (1, out.shape[1])):
        out[i, j] = i * 1000003 + j


def test_a_multi_dimensional_range_visits_each_index_once_however_often_a_thread_loops(executor):
    """Every index of an ndrange, with offsets and a `continue`, over more elements than a
    capped grid has threads (lavapipe's: 524,288), so each thread loops several times; there
    the indices are stepped from one iteration to the next, carries across two dimensions
    included, and an inner extent wider than the grid's stride."""
    out = np.full((131, 127, 123), -1, np.int32)  # 2.05M elements
    numbered_3d(out, 3)
    i, j, k = np.meshgrid(*(np.arange(n) for n in out.shape), indexing="ij")
    want = np.where((i >= 1) & (j >= 2) & (k >= 3) & ((i + j + k) % 5 != 0), i * 1000000 + j * 1000 + k, -1)
    np.testing.assert_array_equal(out, want)
    wide = np.full((3, 700_001), -1, np.int32)
    numbered_wide(wide)
    i, j = np.meshgrid(np.arange(3), np.arange(700_001), indexing="ij")
    np.testing.assert_array_equal(wide, np.where(j >= 1, i * 1000003 + j, -1))


def test_lavapipe_steps_a_multi_dimensional_range_and_other_devices_divide():
    lavapipe = qd.translate(numbered_3d, "glsl", lavapipe=True).sources
    (text,) = lavapipe.values()
    assert "k_at += k_step;" in text and "bool j_wraps = j_at >= out_shape_1 - 2;" in text
    (plain,) = qd.translate(numbered_3d, "glsl").sources.values()
    assert "_step" not in plain and "linear / " in plain


@pytest.mark.toolchain
@pytest.mark.parametrize("target", target_names())
def test_range_kernels_compile(target):
    for kernel in (changed_through_a_template, ring_neighbours, non_negative_division, numbered_3d, numbered_wide):
        assert_compiles(target, qd.translate(kernel, target), kernel.__name__)


@qd.kernel
def serial_running_sum(src: qd.types.ndarray(qd.f32, ndim=1), out: qd.types.ndarray(qd.f32, ndim=1),
                       reps: qd.i32):
    qd.loop_config(serialize=True, block_dim=1)
    for i in range(out.shape[0]):  # one thread, in order: each iteration reads the one before
        acc = src[i]
        for _ in range(reps):  # a data-dependent inner loop, as Quadrants' test_clock_monotonic has
            acc = acc * 0.5 + src[i] * 0.5
        out[i] = acc + (out[i - 1] if i > 0 else 0.0)


def test_serialized_loop_runs_every_iteration_in_order(executor, rng):
    # Reported as "serialize with block_dim=1 writes only the first 8 elements on Vulkan": the
    # lowering is one thread over all iterations on every target; what cut that kernel short was
    # lavapipe's loop budget (65535 back-edges per invocation, docs/differences.md). Kept well
    # under it here so the order and the count are what is checked.
    src = rng.random(32).astype(np.float32)
    out = np.zeros(32, np.float32)
    serial_running_sum(src, out, 20)
    np.testing.assert_allclose(out, np.cumsum(src), rtol=1e-5)

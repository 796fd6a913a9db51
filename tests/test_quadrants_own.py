"""What running Quadrants' own test files (scripts/quadrants_tests.py) found missing or
different, each checked here with kernels of our own against NumPy on random data:

- ``qd.bit_shr(x, n)``: a logical shift right of every integer type (zeros come in); ``not x``
  of a float refused, as Quadrants refuses it.
- ``qd.lang.impl.get_runtime()``: the default types and the device's capabilities.
- ndarrays: ``fill`` with a vector, ``copy_from``, one index per dimension in Python scope,
  mismatched arguments as Quadrants' ValueError, kernels of hundreds of them on the CPU.
- shared arrays of ``qd.u1``, of vectors and of matrices; ``atomic_cas`` on one component;
  ``warp.sync()`` between loops; a ``@qd.real_func`` taking an ndarray of vectors.
- a copied dtype is the dtype; live ndarrays counted; a field's ``_name``; refusals in
  Quadrants' words (ndrange's arguments and loop names, a func that never returns, a field
  used as an operand, a field of shape 0).
- ``qd.clock_counter()`` on every target that has a cycle counter, ``qd.clock_freq_hz()`` on
  CUDA's executors; the number of compiled kernels; ``qd.grouped(qd.ndrange())``; a field
  sliced in Python scope, a @qd.real_func parameter without a type and a struct returned for
  another struct type refused, as Quadrants refuses them.
"""
import re

import numpy as np
import pytest

import transpiler as qd

from conftest import assert_compiles, target_names


@qd.kernel
def logical_shifts(x32: qd.types.ndarray(qd.i32, 1), x64: qd.types.ndarray(qd.i64, 1),
                   xu: qd.types.ndarray(qd.u32, 1), x8: qd.types.ndarray(qd.i8, 1), n: qd.types.ndarray(qd.i32, 1),
                   o32: qd.types.ndarray(qd.i32, 1), o64: qd.types.ndarray(qd.i64, 1),
                   ou: qd.types.ndarray(qd.u32, 1), o8: qd.types.ndarray(qd.i8, 1)):
    for i in range(n.shape[0]):
        o32[i] = qd.bit_shr(x32[i], n[i])
        o64[i] = qd.bit_shr(x64[i], n[i] + 32)
        ou[i] = qd.bit_shr(xu[i], n[i])
        o8[i] = qd.bit_shr(x8[i], n[i] % 8)


def test_bit_shr_shifts_zeros_in(executor, rng):
    k = 256
    x32 = rng.integers(-2**31, 2**31, k, dtype=np.int32)
    x64 = rng.integers(-2**63, 2**63, k, dtype=np.int64)
    xu = rng.integers(0, 2**32, k, dtype=np.uint32)
    x8 = rng.integers(-128, 128, k, dtype=np.int8)
    n = rng.integers(0, 32, k, dtype=np.int32)
    outs = [np.zeros(k, np.int32), np.zeros(k, np.int64), np.zeros(k, np.uint32), np.zeros(k, np.int8)]
    logical_shifts(x32, x64, xu, x8, n, *outs)
    np.testing.assert_array_equal(outs[0], (x32.view(np.uint32) >> n.astype(np.uint32)).view(np.int32))
    np.testing.assert_array_equal(outs[1], (x64.view(np.uint64) >> (n + 32).astype(np.uint64)).view(np.int64))
    np.testing.assert_array_equal(outs[2], xu >> n.astype(np.uint32))
    np.testing.assert_array_equal(outs[3], (x8.view(np.uint8) >> (n % 8).astype(np.uint8)).view(np.int8))


@qd.kernel
def shift_a_float(x: qd.f32) -> qd.f32:
    return qd.bit_shr(x, 1)  # refused: a float


@qd.kernel
def not_a_float(x: qd.f32) -> qd.i32:
    return not x  # refused, as Quadrants does


def _line_of(text: str) -> int:
    return next(k for k, line in enumerate(open(__file__).read().splitlines(), 1) if text in line)


def test_bit_shr_and_not_refuse_floats():
    line = _line_of("return qd.bit_shr(x, 1)")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: qd.bit_shr\(\) takes "
                                                 r"integers, got f32 and i32"):
        qd.translate(shift_a_float, "cuda")
    line = _line_of("return not x")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: `not` takes integral "
                                                 r"inputs only, got f32"):
        qd.translate(not_a_float, "cuda")


def test_get_runtime_reports_defaults_and_device_caps():
    qd.init(arch="cpu", default_fp=qd.f64)
    runtime = qd.lang.impl.get_runtime()
    assert runtime.default_fp == qd.f64 and runtime.default_ip == qd.i32
    assert runtime.prog.get_device_caps() == {}  # no SPIR-V device behind the CPU executor
    qd.init(arch="vulkan")
    caps = qd.lang.impl.get_runtime().prog.get_device_caps()
    assert caps[qd._lib.core.DeviceCapability.spirv_has_float64] == 1  # lavapipe has f64
    assert caps[qd._lib.core.DeviceCapability.spirv_has_shader_clock] == 1  # enabled for qd.clock_counter()
    assert qd._lib.core.data_type_size(qd.f16) == 2 and qd._lib.core.data_type_size(qd.i64) == 8
    qd.init(arch="cpu")
    assert qd.lang.impl.get_cuda_compute_capability() == 70  # what the CUDA text needs at least


@qd.kernel
def scale_vectors(v: qd.types.ndarray(qd.types.vector(3, qd.f32), 1), m: qd.types.ndarray(qd.types.matrix(2, 2, qd.f32), 1),
                  s: qd.f32):
    for i in range(v.shape[0]):
        v[i] = v[i] * s
        m[i] = m[i] * s


def test_ndarray_fill_and_copy_from_with_compound_elements(executor, rng):
    n = 37
    v, m = qd.ndarray(qd.math.vec3, (n,)), qd.ndarray(qd.math.mat2, (n,))
    fill_v, fill_m = rng.standard_normal(3).astype(np.float32), rng.standard_normal((2, 2)).astype(np.float32)
    v.fill(qd.math.vec3(*fill_v))
    m.fill(fill_m.tolist())
    scale_vectors(v, m, 3.0)
    np.testing.assert_allclose(v.to_numpy(), np.broadcast_to(fill_v * 3, (n, 3)), rtol=1e-6)
    np.testing.assert_allclose(m.to_numpy(), np.broadcast_to(fill_m * 3, (n, 2, 2)), rtol=1e-6)
    w = qd.ndarray(qd.math.vec3, (n,))
    w.from_numpy(rng.standard_normal((n, 3)).astype(np.float32))
    v.copy_from(w)
    np.testing.assert_array_equal(v.to_numpy(), w.to_numpy())
    with pytest.raises(ValueError, match=r"cannot copy from .*shapes and element types must be the same"):
        v.copy_from(m)
    with pytest.raises(ValueError, match=r"value's shape \(2,\) is not the element's \(3,\)"):
        v.fill([1.0, 2.0])


MANY = 300  # past the 256 parameters the CPU executor passes as a tuple


@pytest.mark.parametrize("executor", ["cpu-cuda", "cpu-hip"], indirect=True)
def test_a_kernel_of_hundreds_of_ndarrays_runs(executor, rng, tmp_path, monkeypatch):
    """A kernel of 300 ndarray parameters (Quadrants' own test takes 512) on the CPU executors:
    each its own sum. (Vulkan binds an ndarray as a storage buffer: lavapipe allows 32 a shader,
    and says so, see docs/differences.md.)"""
    params = ", ".join(f"a{i}: qd.types.ndarray(qd.i32, 1)" for i in range(MANY))
    body = "\n".join(f"    a{i}[0] += a{i}[1] * {i + 1}" for i in range(MANY))
    (tmp_path / "many_params.py").write_text(f"import transpiler as qd\n\n\n@qd.kernel\ndef many({params}):\n{body}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import many_params

    data = rng.integers(-1000, 1000, (MANY, 2), dtype=np.int32)
    arrays = [qd.ndarray(qd.i32, (2,)) for _ in range(MANY)]
    for a, row in zip(arrays, data):
        a.from_numpy(row)
    many_params.many(*arrays)
    got = np.array([a.to_numpy()[0] for a in arrays])
    np.testing.assert_array_equal(got, data[:, 0] + data[:, 1] * np.arange(1, MANY + 1))


BLOCK = 16


@qd.kernel
def neighbour_flags(inp: qd.types.ndarray(qd.i32, 1), out: qd.types.ndarray(qd.i32, 1)):
    qd.loop_config(block_dim=BLOCK)
    for i in range(inp.shape[0]):
        t = i % BLOCK
        flags = qd.simt.block.SharedArray((BLOCK,), qd.u1)
        flags[t] = inp[i] > 0
        qd.simt.block.sync()
        out[i] = qd.i32(flags[(t + 1) % BLOCK])


def test_shared_array_of_u1(executor, rng):
    x = rng.integers(-5, 5, 8 * BLOCK, dtype=np.int32)
    out = np.zeros_like(x)
    neighbour_flags(x, out)
    want = (x.reshape(-1, BLOCK)[:, (np.arange(BLOCK) + 1) % BLOCK] > 0).astype(np.int32).ravel()
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("target", target_names())
def test_shared_array_of_u1_compiles(target):
    assert_compiles(target, qd.translate(neighbour_flags, target))


@qd.kernel
def sum_rows(x: qd.types.ndarray(qd.f32, 2), out: qd.types.ndarray(qd.f32, 1)):
    for i in range(x.shape[0]):
        acc = 0.0
        for j in range(x.shape[1]):
            acc += x[i, j]
        out[i] = acc


def test_array_arguments_that_do_not_match_are_value_and_type_errors(executor, rng):
    x = rng.standard_normal((5, 4)).astype(np.float32)
    out = np.zeros(5, np.float32)
    sum_rows(x, out)
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5)
    for error in (ValueError, TypeError):  # Quadrants raises ValueError; this package raised TypeError first
        with pytest.raises(error, match=r"sum_rows\(\): Invalid value for argument x - required array has ndim=2, "
                                        r"array with 1 dimensions is provided"):
            sum_rows(out, out)
    one_d = qd.ndarray(qd.f32, (5,))
    with pytest.raises(ValueError, match=r"sum_rows\(\): Invalid value for argument x - required ndim=2, but 1d "
                                         r"ndarray with shape \(5,\) is provided"):
        sum_rows(one_d, out)
    with pytest.raises(ValueError, match=r"Invalid value for argument x - required array has dtype=f32, array with "
                                         r"dtype=f64 is provided"):
        sum_rows(x.astype(np.float64), out)


def test_python_scope_ndarray_index_has_one_index_per_dimension(executor, rng):
    x = qd.ndarray(qd.f32, (3, 4))
    data = rng.standard_normal((3, 4)).astype(np.float32)
    x.from_numpy(data)
    assert x[2, 1] == data[2, 1]
    with pytest.raises(IndexError, match=r"2d ndarray indexed with 1d indices"):
        x[0]
    with pytest.raises(IndexError, match=r"2d ndarray indexed with 3d indices"):
        x[0, 0, 0] = 1.0


def test_vector_ndarray_of_python_float_follows_default_fp():
    qd.init(arch="cpu", default_fp=qd.f64, default_ip=qd.i64)
    try:
        assert qd.Vector.ndarray(2, float, (3,)).dtype == qd.f64
        assert qd.Matrix.ndarray(2, 2, int, (3,)).dtype == qd.i64
    finally:
        qd.init(arch="cpu")  # the defaults back for the tests after


vec3 = qd.types.vector(3, qd.f32)
mat2 = qd.types.matrix(2, 2, qd.f32)


@qd.real_func
def first_plus(x: qd.types.ndarray(vec3, 1), k: qd.i32) -> vec3:
    return x[k] + x[0]


@qd.kernel
def add_first(x: qd.types.ndarray(vec3, 1), out: qd.types.ndarray(vec3, 1)):
    for k in range(x.shape[0]):
        out[k] = first_plus(x, k)


@pytest.mark.parametrize("executor", ["cpu-cuda", "cpu-hip"], indirect=True)
def test_real_func_takes_an_ndarray_of_vectors(executor, rng):
    x = rng.standard_normal((9, 3)).astype(np.float32)
    out = np.zeros_like(x)
    add_first(x, out)
    np.testing.assert_allclose(out, x + x[0], rtol=1e-6)


def test_ndarray_boundary_clamp_is_refused_not_ignored():
    with pytest.raises(NotImplementedError, match=r"boundary='clamp'\) is not supported: indices are not clamped"):
        qd.types.ndarray(boundary="clamp")


@qd.kernel
def swap_components(a: qd.types.ndarray(qd.types.vector(3, qd.i32), 1), want: qd.types.ndarray(qd.i32, 1),
                    old: qd.types.ndarray(qd.i32, 1)):
    for i in range(a.shape[0]):
        k = i % 3
        old[i] = qd.atomic_cas(a[i][k], want[i], 1000 + i)


def test_atomic_cas_on_one_component_of_a_vector_element(executor, rng):
    n = 64
    a = rng.integers(0, 4, (n, 3), dtype=np.int32)
    want = rng.integers(0, 4, n, dtype=np.int32)
    old = np.zeros(n, np.int32)
    expected = a.copy()
    k = np.arange(n) % 3
    hit = expected[np.arange(n), k] == want
    expected[np.arange(n)[hit], k[hit]] = 1000 + np.arange(n)[hit]
    before = a[np.arange(n), k].copy()
    swap_components(a, want, old)
    assert hit.any() and not hit.all()
    np.testing.assert_array_equal(old, before)
    np.testing.assert_array_equal(a, expected)


@qd.kernel
def shift_halves(a: qd.types.ndarray(qd.u32, 1)):
    for i in range(32):
        a[i] = a[i] * 3
    qd.simt.warp.sync(qd.u32(0xFFFFFFFF))  # between loops: nothing to wait for
    for i in range(16):
        a[i] = a[i + 16]


@pytest.mark.parametrize("executor", ["cpu-cuda", "cpu-hip"], indirect=True)
def test_warp_sync_between_loops(executor, rng):
    a = rng.integers(0, 1000, 32, dtype=np.uint32)
    want = a * 3
    want[:16] = want[16:]
    shift_halves(a)
    np.testing.assert_array_equal(a, want)


@qd.kernel
def neighbour_vectors(inp: qd.types.ndarray(vec3, 1), out: qd.types.ndarray(vec3, 1),
                      prod: qd.types.ndarray(mat2, 1)):
    qd.loop_config(block_dim=BLOCK)
    for i in range(inp.shape[0]):
        t = i % BLOCK
        vs = qd.simt.block.SharedArray((BLOCK,), vec3)
        ms = qd.simt.block.SharedArray(BLOCK, mat2)
        vs[t] = inp[i] * 2.0
        ms[t] = qd.Matrix([[inp[i].x, inp[i].y], [inp[i].z, 1.0]])
        qd.simt.block.sync()
        j = (t + 1) % BLOCK
        out[i] = vs[j] + qd.Vector([vs[j].z, vs[j][1], 0.0])
        prod[i] = ms[j] @ ms[t]


def test_shared_array_of_vectors_and_matrices(executor, rng):
    n = 4 * BLOCK
    x = rng.standard_normal((n, 3)).astype(np.float32)
    out, prod = np.zeros_like(x), np.zeros((n, 2, 2), np.float32)
    neighbour_vectors(x, out, prod)
    j = (np.arange(n) % BLOCK + 1) % BLOCK + np.arange(n) // BLOCK * BLOCK
    s = 2 * x[j]
    np.testing.assert_allclose(out, s + np.stack([s[:, 2], s[:, 1], np.zeros(n, np.float32)], 1), rtol=1e-5)
    m = np.stack([x[:, :2], np.stack([x[:, 2], np.ones(n, np.float32)], 1)], 1)
    np.testing.assert_allclose(prod, m[j] @ m, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", target_names())
def test_shared_array_of_vectors_compiles(target):
    assert_compiles(target, qd.translate(neighbour_vectors, target))


OFFSETS = [qd.Vector([1, 2]), qd.Vector([2, 3])]


@qd.kernel
def spelled_ops(a: qd.types.ndarray(qd.i32, 2), out: qd.types.ndarray(qd.i32, 1)):
    for k in range(out.shape[0]):
        v = qd.Vector([k % 3, k % 4])
        p = qd.lang.ops.add(v, qd.static(OFFSETS)[1])
        q = qd.lang.ops.sub(p, qd.static(OFFSETS)[0])
        out[k] = qd.lang.ops.mul(a[p], 2) + a[q]


def test_lang_ops_spell_the_operators(executor, rng):
    a = rng.integers(-100, 100, (8, 8), dtype=np.int32)
    out = np.zeros(24, np.int32)
    spelled_ops(a, out)
    k = np.arange(24)
    p = (k % 3 + 2, k % 4 + 3)
    np.testing.assert_array_equal(out, a[p] * 2 + a[p[0] - 1, p[1] - 2])
    assert qd.lang.ops.add(OFFSETS[0], OFFSETS[1]).to_numpy().tolist() == [3, 5]


@qd.kernel
def int_powers(x: qd.types.ndarray(qd.i32, 1), e: qd.types.ndarray(qd.i32, 1), out: qd.types.ndarray(qd.i32, 1)):
    for i in range(x.shape[0]):
        out[i] = x[i] ** e[i]


def test_negative_integer_exponent_stops_a_debug_kernel(executor, rng):
    from conftest import init_executor

    init_executor(executor, debug=True)
    x = rng.integers(-9, 10, 64, dtype=np.int32)
    e = rng.integers(0, 8, 64, dtype=np.int32)
    out = np.zeros_like(x)
    int_powers(x, e, out)
    np.testing.assert_array_equal(out, x.astype(np.int64) ** e)
    e[17] = -3
    with pytest.raises(RuntimeError, match=r"Negative exponent in pow\(int, int\) is not allowed: -3"):
        int_powers(x, e, out)


def test_field_python_scope_checks_as_quadrants():
    qd.init(arch="cpu")
    x = qd.field(qd.i32, shape=(2, 3, 4))
    x[1, 2, 3] = 7
    assert x[1, 2, 3] == 7
    with pytest.raises(AssertionError, match=r"Slicing is not supported on qd.field: it takes one integer index per "
                                             r"dimension \(3\), not \(0, 0\)"):
        x[0, 0] = 1
    with pytest.raises(TypeError, match=r"copy_from\(\) takes a qd.field, got ndarray"):
        x.copy_from(np.zeros((2, 3, 4), np.int32))
    with pytest.raises(NotImplementedError, match="Struct for is only available in Quadrants scope"):
        for _ in x:
            pass
    with pytest.raises(RuntimeError, match=r"i32 is not supported for field with `needs_grad=True`"):
        qd.field(int, shape=3, needs_grad=True)
    y = qd.field(qd.i32, shape=(2, 3, 4))
    y.copy_from(x)
    assert y[1, 2, 3] == 7


def test_extensions_say_what_is_here():
    assert qd.is_extension_enabled(qd.extension.sparse) and qd.is_extension_enabled(qd.extension.adstack)
    assert qd.is_extension_enabled("data64")
    assert not qd.is_extension_enabled(qd.extension.quant) and not qd.is_extension_enabled(qd.extension.mesh)
    with pytest.raises(ValueError):
        qd.is_extension_enabled("warp_drive")


FLAGS = qd.field(qd.i32, shape=4)


@qd.kernel
def volatile_of_a_field():
    for i in range(4):
        FLAGS[i] = qd.volatile_load(FLAGS)  # refused: the field itself


@qd.kernel
def volatile_of_a_local_vector(a: qd.types.ndarray(qd.i32, 1)):
    for i in range(a.shape[0]):
        v = qd.Vector([a[i], 0])
        a[i] = qd.volatile_load(v)[0]  # refused: a local


def test_volatile_load_says_what_it_was_given():
    line = _line_of("qd.volatile_load(FLAGS)  # refused")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: qd.volatile_load needs an "
                                                 r"lvalue, an ndarray or field element such as a\[i\], not a Field "
                                                 r"directly"):
        qd.translate(volatile_of_a_field, "cuda")
    line = _line_of("qd.volatile_load(v)[0]  # refused")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: .*not a local array"):
        qd.translate(volatile_of_a_local_vector, "cuda")


@qd.kernel
def two_argument_cast() -> qd.i64:
    return qd.i64(1, 2)  # refused


def test_a_dtype_call_takes_one_expression():
    line = _line_of("return qd.i64(1, 2)  # refused")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: qd.i64\(x\) takes exactly "
                                                 r"one argument: A primitive type can only decorate a single "
                                                 r"expression."):
        qd.translate(two_argument_cast, "cuda")


@qd.kernel
def negate_flags(a: qd.types.ndarray(qd.i32, 1), out: qd.types.ndarray(qd.i32, 1)):
    for i in range(a.shape[0]):
        v = qd.Vector([a[i], a[i] - 1])
        w = qd.lang.ops.logical_not(v)
        out[i] = w[0] * 2 + w[1] + qd.lang.ops.logical_not(a[i] > 1) * 4


def test_logical_not(executor, rng):
    a = rng.integers(-2, 3, 64, dtype=np.int32)
    out = np.zeros_like(a)
    negate_flags(a, out)
    np.testing.assert_array_equal(out, (a == 0) * 2 + (a == 1) + (a <= 1) * 4)
    assert qd.lang.ops.logical_not(qd.Vector([0, 3])).to_numpy().tolist() == [1, 0]


def test_struct_field_copy_from(executor, rng):
    particle = qd.types.struct(p=qd.types.vector(2, qd.f32), m=qd.f32, k=qd.i32)
    a, b = particle.field(shape=9), particle.field(shape=9)
    p, m, k = rng.standard_normal((9, 2)).astype(np.float32), rng.random(9).astype(np.float32), rng.integers(0, 9, 9)
    b.p.from_numpy(p)
    b.m.from_numpy(m)
    b.k.from_numpy(k.astype(np.int32))
    a.copy_from(b)
    np.testing.assert_array_equal(a.p.to_numpy(), p)
    np.testing.assert_array_equal(a.m.to_numpy(), m)
    np.testing.assert_array_equal(a.k.to_numpy(), k)
    with pytest.raises(TypeError, match="copy_from\\(\\) takes a field of the same struct"):
        a.copy_from(qd.field(qd.f32, shape=9))


@qd.kernel
def wrapping_ops(a: qd.types.ndarray(qd.i32, 1), b: qd.types.ndarray(qd.i32, 1), out: qd.types.ndarray(qd.i32, 2)):
    for i in range(a.shape[0]):
        out[i, 0] = a[i] + b[i]
        out[i, 1] = a[i] - b[i]
        out[i, 2] = a[i] * b[i]


@pytest.mark.parametrize("big", [False, True])
def test_debug_mode_reports_integer_overflow(executor, rng, capfd, big):
    from conftest import init_executor

    init_executor(executor, debug=True)
    bound = 2**31 if big else 2**14
    a = rng.integers(-bound, bound, 32, dtype=np.int64).astype(np.int32)
    b = rng.integers(-bound, bound, 32, dtype=np.int64).astype(np.int32)
    out = np.zeros((32, 3), np.int32)
    capfd.readouterr()
    wrapping_ops(a, b, out)
    qd.sync()
    printed = capfd.readouterr().out
    wide = [a.astype(np.int64) + b, a.astype(np.int64) - b, a.astype(np.int64) * b]
    np.testing.assert_array_equal(out, np.stack([w.astype(np.int32) for w in wide], 1))  # wrapped, as C wraps
    for word, w in zip(("Addition", "Subtraction", "Multiplication"), wide):
        wrapped = bool((w != w.astype(np.int32)).any())
        assert (f"{word} overflow detected" in printed) == wrapped
    assert big == ("out[i, 2] = a[i] * b[i]" in printed)


@qd.kernel
def three_bounds(a: qd.types.ndarray(qd.i32, 1)):
    for i in qd.ndrange((1, 2, 3)):  # refused: not a (begin, end) pair
        a[i] = 1


def test_ndrange_dimension_is_an_extent_or_a_pair():
    line = _line_of("for i in qd.ndrange((1, 2, 3)):  # refused")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: Every argument of ndrange "
                                                 r"should be a scalar or a tuple/list like \(begin, end\)"):
        qd.translate(three_bounds, "cuda")


@qd.kernel
def fill_with_python_ints(f: qd.types.ndarray(qd.u32, 1)):
    for i in range(f.shape[0]):
        f[i] = 0xFFFFFFFF - i


def test_get_runtime_sets_the_default_types(executor):
    runtime = qd.lang.impl.get_runtime()
    try:
        runtime.default_ip = qd.u32
        assert qd.cfg.default_ip == qd.u32
        out = np.zeros(8, np.uint32)
        fill_with_python_ints(out)
        np.testing.assert_array_equal(out, 0xFFFFFFFF - np.arange(8, dtype=np.uint32))
        runtime.set_default_fp(qd.f64)
        assert runtime.default_fp == qd.f64 and qd.Vector.ndarray(2, float, (2,)).dtype == qd.f64
    finally:
        runtime.set_default_ip(qd.i32)
        runtime.default_fp = qd.f32


# ----------------------------------------------------------------------------- second pass

@qd.kernel
def scale_by_copied_type(x: qd.types.ndarray(qd.f32, 1), out: qd.types.ndarray(qd.f32, 1)):
    for i in range(x.shape[0]):
        out[i] = COPIED_F32(x[i] * 2.5)  # a deep copy of qd.f32 is qd.f32 itself


COPIED_F32 = __import__("copy").deepcopy(qd.f32)


def test_a_copied_dtype_is_the_dtype(executor, rng):
    import copy  # noqa: PLC0415

    assert COPIED_F32 is qd.f32 and copy.copy(qd.i16) is qd.i16
    assert id(copy.deepcopy(qd.u8)) in qd.types.primitive_types.type_ids
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros_like(x)
    scale_by_copied_type(x, out)
    np.testing.assert_allclose(out, x * np.float32(2.5), rtol=1e-6)


@qd.kernel
def row_sums(a: qd.types.ndarray(qd.f32, 2), out: qd.types.ndarray(qd.f32, 1)):
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j]
        out[i] = s


def test_live_ndarrays_are_counted(executor, rng):
    prog = qd.lang.impl.get_runtime().prog
    before = prog._get_num_ndarrays()
    a = qd.ndarray(qd.f32, (16, 8))
    out = qd.ndarray(qd.f32, (16,))
    vecs = qd.ndarray(qd.math.vec3, (4,))
    assert prog._get_num_ndarrays() == before + 3
    data = rng.standard_normal((16, 8)).astype(np.float32)
    a.from_numpy(data)
    row_sums(a, out)
    np.testing.assert_allclose(out.to_numpy(), data.sum(axis=1), rtol=1e-5, atol=1e-5)
    del a, vecs
    assert prog._get_num_ndarrays() == before + 1
    del out
    assert prog._get_num_ndarrays() == before


def test_field_names_and_shapes_as_quadrants_has_them(executor):
    a = qd.field(qd.f32, shape=(2, 3), name="a")
    b = qd.field(qd.math.vec3, shape=(2, 3), name="b")
    assert a._name == "a" and b._name == "b" and b.snode._name == "b"
    with pytest.raises(qd._lib.core.QuadrantsRuntimeError, match="Every dimension of a Quadrants field should be "
                                                                  r"positive: a field's shape is positive ints, not \(0,\)"):
        qd.field(qd.f32, shape=0)


@qd.kernel
def float_ndrange(x: qd.types.ndarray(qd.f32, 1)):
    for i in qd.ndrange((1.5, 10.5)):  # refused: not integers
        x[i] = 1.0


@qd.kernel
def static_float_ndrange(x: qd.types.ndarray(qd.f32, 1)):
    for i in qd.static(qd.ndrange(0.1, 0.2)):  # refused: not integers
        x[i[0]] = 1.0


@qd.kernel
def one_name_two_dimensions(x: qd.types.ndarray(qd.f32, 1)):
    for i in qd.ndrange(4, 4):  # refused: one name for two dimensions
        x[i] = 1.0


def test_ndrange_refusals_in_quadrants_words():
    cases = [(float_ndrange, "for i in qd.ndrange((1.5, 10.5)):", "Every argument of ndrange should be an integer "
              r"scalar or a tuple/list of \(int, int\), not f32"),
             (static_float_ndrange, "for i in qd.static(qd.ndrange(0.1, 0.2)):", "Every argument of ndrange should "
              r"be an integer scalar or a tuple/list of \(int, int\)"),
             (one_name_two_dimensions, "for i in qd.ndrange(4, 4):", "Ndrange for loop with number of the loop "
              "variables not equal to the dimension of the ndrange is not supported: the loop has 2 dimension")]
    for kernel, text, message in cases:
        with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{_line_of(text)}:\d+: error: {message}"):
            qd.translate(kernel, "cuda")


@qd.func
def forgets_to_return(x: qd.f32) -> qd.f32:  # refused: no return
    x += 1.0


@qd.kernel
def calls_forgetful(x: qd.types.ndarray(qd.f32, 1)):
    for i in range(x.shape[0]):
        x[i] = forgets_to_return(x[i])


def test_func_without_return_and_field_as_operand_refused():
    line = _line_of("def forgets_to_return(x: qd.f32) -> qd.f32:")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: Function has a return "
                                                 "type but does not have a return statement"):
        qd.translate(calls_forgetful, "cuda")
    scalar_field = qd.field(qd.i32, shape=())

    @qd.kernel
    def vector_times_field(x: qd.types.ndarray(qd.i32, 1)):
        for i in range(x.shape[0]):
            a = qd.Vector([1, 1, 1])
            b = a * scalar_field  # refused: the field itself, not its element
            x[i] = b[0]

    line = _line_of("b = a * scalar_field")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: unsupported operand "
                                                 "type: ndarray `scalar_field` used as a value"):
        qd.translate(vector_times_field, "cuda")


EXTENTS = (n for n in range(3))  # a generator: used up once, so refused as a starred argument


@qd.kernel
def starred_generator(x: qd.types.ndarray(qd.f32, 1)):
    for i in qd.grouped(qd.ndrange(*EXTENTS)):  # refused: a generator
        x[i[0]] = 1.0


def test_a_starred_generator_is_a_value_error():
    line = _line_of("for i in qd.grouped(qd.ndrange(*EXTENTS)):")
    with pytest.raises(ValueError, match=rf"test_quadrants_own.py:{line}:\d+: error: a starred argument must be a "
                                          "tuple of numbers"):
        qd.translate(starred_generator, "cuda")


@qd.kernel
def trace_of_three_by_two(x: qd.types.ndarray(qd.f32, 1)):
    m = qd.Matrix([[x[0], x[1]], [x[2], x[3]], [x[4], x[5]]])
    x[0] = m.trace()  # refused: not square


@qd.kernel
def trace_of_square(x: qd.types.ndarray(qd.f32, 1), out: qd.types.ndarray(qd.f32, 1)):
    m = qd.Matrix([[x[0], x[1]], [x[2], x[3]]])
    out[0] = m.trace()


def test_trace_refuses_what_is_not_square(executor, rng):
    x = rng.standard_normal(4).astype(np.float32)
    out = np.zeros(1, np.float32)
    trace_of_square(x, out)
    np.testing.assert_allclose(out[0], x[0] + x[3], rtol=1e-6)
    line = _line_of("x[0] = m.trace()  # refused")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: `.trace\(\)` expected a "
                                                 r"square matrix, got shape \(3, 2\)"):
        qd.translate(trace_of_three_by_two, "cuda")
    with pytest.raises(qd.TranspileError, match=r"expected a square matrix, got shape \(3, 2\)"):
        qd.Matrix(rng.standard_normal((3, 2)).tolist()).trace()


@qd.kernel
def split_floats(x: qd.types.ndarray(qd.f32, 1), m: qd.types.ndarray(qd.f32, 1), e: qd.types.ndarray(qd.i32, 1),
                 xd: qd.types.ndarray(qd.f64, 1), md: qd.types.ndarray(qd.f64, 1), ed: qd.types.ndarray(qd.i32, 1)):
    for i in range(x.shape[0]):
        a, b = qd.frexp(x[i])
        m[i] = a
        e[i] = b
        c, d = qd.math.frexp(xd[i])
        md[i] = c
        ed[i] = d


def test_frexp_as_numpy(executor, rng):
    k = 256
    x = (rng.standard_normal(k) * 10.0 ** rng.integers(-44, 38, k)).astype(np.float32)
    xd = rng.standard_normal(k) * 10.0 ** rng.integers(-320, 300, k)
    x[:6] = [0.0, -0.0, np.inf, 1e-45, -3e38, 0.5]
    xd[:6] = [0.0, -np.inf, 5e-324, -2e-310, 1.7e308, 1.0]
    m, e = np.zeros_like(x), np.zeros(k, np.int32)
    md, ed = np.zeros_like(xd), np.zeros(k, np.int32)
    split_floats(x, m, e, xd, md, ed)
    for got_m, got_e, value in ((m, e, x), (md, ed, xd)):
        want_m, want_e = np.frexp(value)
        np.testing.assert_array_equal(got_m, want_m)
        np.testing.assert_array_equal(got_e, want_e)


@qd.func
def first_of_three(a: qd.types.vector(3, qd.f32)) -> qd.f32:
    return a[0]


@qd.kernel
def passes_two(x: qd.types.ndarray(qd.f32, 1)):
    x[0] = first_of_three(qd.Vector([x[0], x[1]]))  # refused: 2 components, not 3


@qd.kernel
def vector_condition(v: qd.types.ndarray(qd.math.vec3, 1)):
    for i in range(v.shape[0]):
        cond = v[i] < 0.0
        v[i] = 0.0 if cond else v[i]  # refused: a vector condition


@qd.kernel
def select_by_component(v: qd.types.ndarray(qd.math.vec3, 1)):
    for i in range(v.shape[0]):
        v[i] = qd.select(v[i] < 0.0, 0.0, v[i])


def test_vector_condition_and_short_argument_in_quadrants_words(executor, rng):
    v = rng.standard_normal((32, 3)).astype(np.float32)
    want = np.where(v < 0, 0, v)
    select_by_component(v)
    np.testing.assert_array_equal(v, want)
    line = _line_of("v[i] = 0.0 if cond else v[i]  # refused")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: the condition of `a if "
                                                 r"cond else b` is a vector of 3, .*Please use \"qd.select\" instead"):
        qd.translate(vector_condition, "cuda")
    line = _line_of("x[0] = first_of_three(qd.Vector([x[0], x[1]]))")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: `a` is expected to be a "
                                                 "Matrix with n 3, but got 2"):
        qd.translate(passes_two, "cuda")


@qd.kernel
def static_of_a_parameter(val: qd.f32, x: qd.types.ndarray(qd.f32, 1)):
    if qd.static(val > 0.5):  # refused: val is known only at run time
        x[0] = val


@qd.kernel
def slice_from_a_variable(x: qd.types.ndarray(qd.f32, 1)):
    a = qd.Vector([x[0], x[1], x[2], x[3]])
    for i in range(2):
        b = a[i::2]  # refused: a slice bound known only at run time
        x[i] = b[0]


def test_values_needed_at_translation_time_in_quadrants_words():
    line = _line_of("if qd.static(val > 0.5):  # refused")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: qd.static\(\) needs a "
                                                 "value known at translation time: its arguments must be compile-time "
                                                 "constants"):
        qd.translate(static_of_a_parameter, "cuda")
    line = _line_of("b = a[i::2]  # refused")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: a slice bound needs a "
                                                 "value known at translation time: variables in a slice are not "
                                                 "supported"):
        qd.translate(slice_from_a_variable, "cuda")


def test_deprecated_subgroup_aliases_warn_once_in_python_scope(monkeypatch):
    import warnings  # noqa: PLC0415

    from transpiler.lang.simt import subgroup as sg  # noqa: PLC0415

    calls = []
    monkeypatch.setattr(sg, "_barrier_deprecation_warned", False, raising=False)
    monkeypatch.setattr(sg, "sync", lambda: calls.append("sync"))
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always", DeprecationWarning)
        for _ in range(3):
            sg.barrier()
    messages = [str(r.message) for r in records if issubclass(r.category, DeprecationWarning)]
    assert messages == ["qd.simt.subgroup.barrier() is deprecated; use qd.simt.subgroup.sync()"]
    assert calls == ["sync"] * 3
    monkeypatch.undo()  # (the flag too: another test in this process may have warned already)
    monkeypatch.setattr(sg, "_barrier_deprecation_warned", False, raising=False)
    with pytest.raises(RuntimeError, match=r"qd.subgroup.sync\(\) can only be used inside a @qd.kernel"), \
            pytest.warns(DeprecationWarning):
        sg.barrier()  # the real sync(): outside a kernel it says so


from transpiler.lang.simt.reductions import _inclusive_scan_tiled  # noqa: E402 - Quadrants' module path


@qd.func
def compose_affine(a, b):  # (m, c) packed in 16 bits each: x -> m x + c, associative, not commutative
    m_a, c_a = (a >> 16) & 0xFFFF, a & 0xFFFF
    m_b, c_b = (b >> 16) & 0xFFFF, b & 0xFFFF
    return (((m_a * m_b) & 0xFFFF) << 16) | ((m_a * c_b + c_a) & 0xFFFF)


@qd.kernel
def scan_affine(src: qd.types.ndarray(qd.i32, 1), dst: qd.types.ndarray(qd.i32, 1)):
    qd.loop_config(block_dim=64)
    for i in range(64):
        dst[i] = _inclusive_scan_tiled(src[i], compose_affine, 3)


def test_generic_tiled_scan_keeps_the_order(executor, rng):
    m, c = rng.integers(2, 9, 64), rng.integers(0, 256, 64)
    src = ((m << 16) | c).astype(np.int32)
    dst = np.zeros(64, np.int32)
    scan_affine(src, dst)
    want = []
    for g in range(8):
        running = int(src[8 * g])
        for k in range(8):
            if k:
                b = int(src[8 * g + k])
                ma, ca, mb, cb = running >> 16, running & 0xFFFF, b >> 16, b & 0xFFFF
                running = (((ma * mb) & 0xFFFF) << 16) | ((ma * cb + ca) & 0xFFFF)
            want.append(running)
    np.testing.assert_array_equal(dst.astype(np.int64) & 0xFFFFFFFF, want)


@qd.kernel
def timed_lcg(seed: qd.types.ndarray(qd.i32, 1), reps: qd.types.ndarray(qd.i32, 1),
              out: qd.types.ndarray(qd.i32, 1), took: qd.types.ndarray(qd.i64, 1)):
    for i in range(seed.shape[0]):
        x = seed[i]
        start = qd.clock_counter()
        for _ in range(reps[i]):
            x = (1664525 * x + 1013904223) & 0x7FFFFFFF
        took[i] = qd.clock_counter() - start
        out[i] = x


def _lcg(seed: np.ndarray, reps: np.ndarray) -> np.ndarray:
    out = seed.astype(np.int64)
    for i in range(len(out)):
        x = int(out[i])
        for _ in range(int(reps[i])):
            x = (1664525 * x + 1013904223) & 0x7FFFFFFF
        out[i] = x
    return out.astype(np.int32)


def test_clock_counter_times_each_threads_work(executor, rng):
    seed = rng.integers(0, 2**31 - 1, 128, dtype=np.int32)
    # light and heavy threads in different subgroups: a device's lanes run in lockstep, and
    # read the end of the loop together (the CPU executors run each thread on its own)
    reps = np.where(np.arange(128) < 64, 200, 40000).astype(np.int32)
    out, took = np.zeros(128, np.int32), np.zeros(128, np.int64)
    timed_lcg(seed, reps, out, took)
    np.testing.assert_array_equal(out, _lcg(seed, reps))
    assert (took > 0).all()
    # 200 times the work reads a larger count (medians: a loaded host preempts a few threads)
    assert np.median(took[64:]) > 4 * np.median(took[:64])


def test_clock_freq_hz_on_cuda_executors_only():
    qd.init(arch="cpu")
    assert qd.clock_freq_hz() == 1e9  # the CPU executor counts nanoseconds of the thread's own time
    qd.init(arch="cpu", dialect="hip")
    with pytest.raises(NotImplementedError, match=r"qd.clock_freq_hz\(\) is only available on CUDA"):
        qd.clock_freq_hz()


CLOCK_SPELLINGS = {"cuda": "clock64()", "hip": "clock64()", "glsl": "clockRealtimeEXT()", "msl": None}


@pytest.mark.parametrize("target", target_names())
def test_clock_counter_spellings(target):
    """Each built-in target reads its cycle counter or refuses where it has none (Metal); a
    target registered from outside does either, the refusal located at the call."""
    line = _line_of("start = qd.clock_counter()")
    refusal = rf"test_quadrants_own.py:{line}:\d+: error: qd.clock_counter\(\) has no equivalent on the {target} target"
    if target in CLOCK_SPELLINGS and CLOCK_SPELLINGS[target] is None:
        with pytest.raises(qd.TranspileError, match=refusal):
            qd.translate(timed_lcg, target)
        return
    try:
        tr = qd.translate(timed_lcg, target)
    except qd.TranspileError as err:
        assert target not in CLOCK_SPELLINGS and re.search(refusal, str(err)), err
        return
    if target in CLOCK_SPELLINGS:
        assert CLOCK_SPELLINGS[target] in "".join(tr.sources.values())
    assert_compiles(target, tr)


@qd.kernel
def add_one(x: qd.types.ndarray(qd.f32, 1), k: qd.template()):
    for i in range(x.shape[0]):
        x[i] += k


def test_compiled_functions_are_counted(executor, rng):
    from transpiler.lang import impl  # noqa: PLC0415

    x = rng.standard_normal(16).astype(np.float32)
    want = x.copy()
    assert impl.get_runtime().get_num_compiled_functions() == 0
    for k in (1, 1, 2, 1):  # one program per template value
        add_one(x, k)
        want += k
    np.testing.assert_allclose(x, want, rtol=1e-6)
    assert impl.get_runtime().get_num_compiled_functions() == 2
    add_one(x.astype(np.float32).reshape(2, 8)[0], 1)  # the same signature: none more
    assert impl.get_runtime().get_num_compiled_functions() == 2


scalar_out = qd.field(qd.i32, shape=())


@qd.kernel
def grouped_no_dimensions(v: qd.i32):
    for I in qd.grouped(qd.ndrange()):
        scalar_out[I] = v


def test_grouped_ndrange_of_no_dimensions_runs_once(executor, rng):
    v = int(rng.integers(-1000, 1000))
    grouped_no_dimensions(v)
    assert scalar_out[None] == v


def test_a_field_sliced_in_python_scope_is_refused():
    qd.init(arch="cpu")
    x = qd.field(qd.i32, shape=(2, 3))
    with pytest.raises(TypeError, match=r"Detected illegal element of type: <class 'slice'>\. Please be aware that "
                                        r"slicing a qd.field is not supported so far"):
        x[0, :]  # noqa: B018
    with pytest.raises(TypeError, match="slicing a qd.field is not supported"):
        x[:, 1] = 3


def test_a_real_func_parameter_needs_its_type_where_it_is_defined():
    with pytest.raises(qd.TranspileError) as info:
        @qd.real_func
        def adds(a: qd.i32, b) -> qd.i32:
            return a + b
    line = _line_of("def adds(a: qd.i32, b) -> qd.i32:")
    assert f"test_quadrants_own.py:{line}:29: error: parameter `b` of @qd.real_func `adds` must be type annotated" \
        in str(info.value)


sphere = qd.types.struct(center=qd.math.vec3, radius=qd.f32)
sphere_i = qd.types.struct(center=qd.math.vec3, radius=qd.i32)
sphere_again = qd.types.struct(center=qd.math.vec3, radius=qd.f32)


@qd.kernel
def returns_another_struct() -> sphere:
    return sphere_i(center=qd.math.vec3([1, 2, 3]), radius=2)  # refused: another struct type


@qd.kernel
def returns_the_same_members(r: qd.f32) -> sphere:
    return sphere_again(center=qd.math.vec3([r, 2 * r, 3]), radius=r)


def test_a_struct_of_another_type_is_not_returned(executor, rng):
    line = _line_of("return sphere_i(center=")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: the kernel is annotated "
                                                 r"to return a struct \(center: vector 3 of f32, radius: f32\); this "
                                                 r"value is another struct type, \(center: vector 3 of f32, radius: "
                                                 r"i32\)"):
        returns_another_struct()
    r = float(rng.standard_normal())
    got = returns_the_same_members(r)  # the same members, in the same order: the same type
    np.testing.assert_allclose(np.asarray(got["center"]), [r, 2 * r, 3], rtol=1e-6)
    assert got["radius"] == pytest.approx(r, rel=1e-6)


@qd.kernel
def int_literal_as_float() -> qd.f32:
    return qd.f32(3)  # refused: an integer literal


@qd.kernel
def float_literal_as_int() -> qd.i32:
    return qd.i32(2.5)  # refused: a float literal


@qd.kernel
def literal_out_of_range() -> qd.u16:
    return qd.u16(-1)  # refused: out of u16's range


@qd.kernel
def dtype_of_a_vector() -> qd.f32:
    v = qd.Vector([1.5, 2.0])
    return qd.f16(v)[0]  # refused: a compound value


@qd.kernel
def literal_conversions(x: qd.f32) -> qd.f32:
    return qd.cast(3, qd.f32) * x + qd.f32(0.5) + qd.cast(qd.i32(7), qd.f32)


@pytest.mark.parametrize(("kernel", "marker", "message"), [
    (int_literal_as_float, "return qd.f32(3)", "Integer literals must be annotated with a integer type"),
    (float_literal_as_int, "return qd.i32(2.5)", "Floating-point literals must be annotated with a floating-point type"),
    (literal_out_of_range, "return qd.u16(-1)", r"Integer literal -1 exceeded the range of specified dtype: u16"),
    (dtype_of_a_vector, "return qd.f16(v)[0]", "A primitive type cannot decorate an expression with a compound type"),
])
def test_dtype_calls_keep_quadrants_literal_rules(kernel, marker, message):
    line = _line_of(marker)
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: {message}"):
        qd.translate(kernel, "cuda")


def test_qd_cast_of_literals_still_converts(executor, rng):
    x = float(rng.standard_normal())
    assert literal_conversions(x) == pytest.approx(3 * x + 0.5 + 7, rel=1e-5)


@qd.kernel
def outer_by_transpose(a: qd.types.ndarray(qd.types.vector(2, qd.f32), 1)):
    for i in range(1):
        m = a[0] @ a[1].transpose()  # refused: write a.outer_product(b)
        a[0] = m[0, :]


def test_vector_at_transposed_vector_says_outer_product():
    line = _line_of("m = a[0] @ a[1].transpose()")
    with pytest.raises(qd.TranspileError, match=rf"test_quadrants_own.py:{line}:\d+: error: .*the inner sizes differ; "
                                                 r"`transpose\(\)` cannot apply to a vector. If you want something "
                                                 r"like `a @ b.transpose\(\)`, write `a.outer_product\(b\)` instead"):
        qd.translate(outer_by_transpose, "cuda")

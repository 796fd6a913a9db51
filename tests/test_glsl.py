"""The GLSL target and the Vulkan runtime: the binding contract (push-constant layout,
bindings shared by every task file), extensions enabled only when used, renaming of
reserved words, glslang's messages mapped to Python lines, and kernels that exercise
GLSL-specific lowerings run on Vulkan (lavapipe on a machine without a GPU)."""
from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import transpiler as qd
from conftest import ROOT, load_module, toolchain_test
from transpiler.errors import ToolchainMissing
from transpiler.toolchains import check_sources

needs_glslang = toolchain_test("needs glslang-tools and spirv-tools",
                               shutil.which("glslangValidator") is None or shutil.which("spirv-val") is None)


def translate(kernel, **options):
    return qd.translate(kernel, "glsl", **options)


def compiles(tr) -> None:
    for v in check_sources("glsl", tr.sources, tr.manifest):
        assert v.ok, f"{v.tool} rejected {v.file}:\n{v.message}"


def push_offsets(source: str) -> dict[str, int]:
    """name -> offset, as the push-constant block in the source declares them."""
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"layout\(offset = (\d+)\) \w+ (\w+);", source)}


# ----------------------------------------------------------------------------- kernels

@qd.kernel
def mixed_params(flag: qd.u1, small: qd.i8, big: qd.i64, ratio: qd.f32, precise: qd.f64, half: qd.f16,
                 grid: qd.types.ndarray(dtype=qd.f32, ndim=2), out: qd.types.ndarray(dtype=qd.f64, ndim=1)):
    for i, j in qd.ndrange(grid.shape[0], grid.shape[1]):
        v = grid[i, j] * ratio + qd.cast(small, qd.f32) + qd.cast(half, qd.f32)
        if flag:
            v = v + 1.0
        out[i * grid.shape[1] + j] = qd.cast(v, qd.f64) * precise + qd.cast(big, qd.f64)


@qd.kernel
def two_tasks(a: qd.types.ndarray(dtype=qd.i32, ndim=1), b: qd.types.ndarray(dtype=qd.f32, ndim=1),
              c: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    c[0] = 0
    for i in range(a.shape[0]):
        a[i] = a[i] * 2
    for i in range(b.shape[0]):
        b[i] = b[i] + 1.0
        c[0] += 1


@qd.kernel
def plain_f32(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        x[i] = x[i] * 2.0


@qd.kernel
def uses_i64(x: qd.types.ndarray(dtype=qd.i64, ndim=1)):
    for i in range(x.shape[0]):
        x[i] = x[i] * 3


@qd.kernel
def uses_f32_atomic(x: qd.types.ndarray(dtype=qd.f32, ndim=1), total: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        total[i % 2] += x[i]  # (an element that varies: an atomic each time, not a block fold)


@qd.kernel
def uses_f16_storage(h: qd.types.ndarray(dtype=qd.f16, ndim=1)):
    for i in range(h.shape[0]):
        h[i] = h[i] * 2.0


@qd.kernel
def f64_math(d: qd.types.ndarray(dtype=qd.f64, ndim=1)):
    for i in range(d.shape[0]):
        d[i] = qd.exp(d[i]) + qd.sqrt(d[i])


@qd.kernel
def glsl_words(input: qd.types.ndarray(dtype=qd.f32, ndim=1), output: qd.types.ndarray(dtype=qd.f32, ndim=1),
               sample: qd.f32):
    for main in range(input.shape[0]):
        filter = input[main]
        vec2 = filter * sample
        texture = vec2 + 1.0
        dot = texture - 0.5
        output[main] = dot


@qd.kernel
def half_atomic(h: qd.types.ndarray(dtype=qd.f16, ndim=1)):
    for i in range(h.shape[0]):
        s = qd.simt.block.SharedArray((1,), qd.i16)
        s[0] += 1  # a 16-bit integer: no target has an atomic add on one


@qd.kernel
def int_semantics(a: qd.types.ndarray(dtype=qd.i64, ndim=1), b: qd.types.ndarray(dtype=qd.i64, ndim=1),
                  s: qd.types.ndarray(dtype=qd.i8, ndim=1), t: qd.types.ndarray(dtype=qd.i8, ndim=1),
                  out64: qd.types.ndarray(dtype=qd.i64, ndim=2), out8: qd.types.ndarray(dtype=qd.i8, ndim=2)):
    for i in range(a.shape[0]):
        out64[i, 0] = a[i] // b[i]
        out64[i, 1] = a[i] % b[i]
        out64[i, 2] = a[i] ** 3
        out8[i, 0] = s[i] // t[i]
        out8[i, 1] = s[i] % t[i]


@qd.kernel
def bits64(u: qd.types.ndarray(dtype=qd.u64, ndim=1), v: qd.types.ndarray(dtype=qd.i64, ndim=1),
           out: qd.types.ndarray(dtype=qd.i32, ndim=2)):
    for i in range(u.shape[0]):
        out[i, 0] = qd.math.popcnt(u[i])
        out[i, 1] = qd.math.clz(u[i])
        out[i, 2] = qd.math.ffs(u[i])
        out[i, 3] = qd.math.popcnt(v[i])
        out[i, 4] = qd.math.clz(v[i])
        out[i, 5] = qd.math.ffs(v[i])
        out[i, 6] = qd.math.clz(qd.cast(v[i], qd.i32))


@qd.kernel
def floats(x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1),
           out: qd.types.ndarray(dtype=qd.f32, ndim=2), flags: qd.types.ndarray(dtype=qd.i32, ndim=2)):
    for i in range(x.shape[0]):
        out[i, 0] = x[i] ** y[i]
        out[i, 1] = qd.pow(x[i], 2.0)
        out[i, 2] = x[i] % y[i]
        out[i, 3] = qd.math.inf if x[i] > 0.0 else -qd.math.inf
        p = x[i] > 0.0
        q = y[i] > 0.0
        flags[i, 0] = 1 if p & q else 0
        flags[i, 1] = 1 if p | q else 0
        flags[i, 2] = 1 if p ^ q else 0
        flags[i, 3] = 1 if p < q else 0
        flags[i, 4] = -2147483648 if p else 2147483647


@qd.kernel
def every_atomic(a: qd.types.ndarray(dtype=qd.i32, ndim=1), u: qd.types.ndarray(dtype=qd.u32, ndim=1),
                 big: qd.types.ndarray(dtype=qd.i64, ndim=1), f: qd.types.ndarray(dtype=qd.f32, ndim=1),
                 d: qd.types.ndarray(dtype=qd.f64, ndim=1), old: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(old.shape[0]):
        qd.atomic_min(a[0], i)
        qd.atomic_max(a[1], i)
        qd.atomic_or(u[0], qd.u32(1) << qd.u32(i % 32))
        qd.atomic_and(u[1], ~(qd.u32(1) << qd.u32(i % 32)))
        qd.atomic_xor(u[2], qd.u32(i))
        old[i] = qd.atomic_exchange(a[2], i)
        qd.atomic_mul(a[3], 1)
        big[0] += qd.i64(i) * 1000000000
        qd.atomic_min(big[1], qd.i64(-i))
        qd.atomic_min(f[0], qd.cast(i, qd.f32))
        qd.atomic_max(f[1], qd.cast(i, qd.f32))
        qd.atomic_exchange(f[2], 2.5)
        d[0] += 0.5
        qd.atomic_max(d[1], qd.cast(i, qd.f64))


@qd.kernel
def publish(flags: qd.types.ndarray(dtype=qd.i32, ndim=1), data: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    data[0] = 42.0
    qd.simt.grid.mem_fence()
    flags[0] = 1
    while qd.volatile_load(flags[0]) == 0:
        qd.simt.block.mem_fence()
    data[1] = data[0] + 1.0


# ----------------------------------------------------------------------------- the contract

def test_push_constant_layout_is_std430_and_in_the_manifest():
    tr = translate(mixed_params)
    (source,) = tr.sources.values()
    params = {p["name"]: p for p in tr.manifest["params"]}
    # bool and the widened i8 / f16 take 4 bytes; i64 and f64 are aligned to 8.
    assert params["flag"]["push_constant_offset"] == 0
    assert params["small"] == {"name": "small", "kind": "scalar", "dtype": "i8", "push_constant_offset": 4,
                               "push_constant_dtype": "i32"}
    assert params["big"]["push_constant_offset"] == 8
    assert params["ratio"]["push_constant_offset"] == 16
    assert params["precise"]["push_constant_offset"] == 24
    assert params["half"]["push_constant_offset"] == 32 and params["half"]["push_constant_dtype"] == "f32"
    assert params["grid"]["shape_push_constant_offsets"] == [36, 40]
    assert params["grid"]["binding"] == 0 and params["out"]["binding"] == 1
    assert tr.manifest["requirements"]["push_constant_bytes"] == 48
    # The source declares exactly the offsets the manifest records.
    assert push_offsets(source) == {"flag": 0, "small": 4, "big": 8, "ratio": 16, "precise_": 24, "half_": 32,
                                    "grid_shape_0": 36, "grid_shape_1": 40, "out_shape_0": 44}
    assert "int8_t(small)" in source and "float16_t(half_)" in source


@needs_glslang
def test_mixed_params_compile():
    compiles(translate(mixed_params))


def test_every_task_file_declares_every_binding():
    tr = translate(two_tasks)
    assert list(tr.sources) == ["two_tasks_0.comp", "two_tasks_1.comp", "two_tasks_2.comp"]
    assert [e["file"] for e in tr.manifest["entry_points"]] == list(tr.sources)
    assert all(e["entry"] == "main" for e in tr.manifest["entry_points"])
    for source in tr.sources.values():
        assert "layout(std430, set = 0, binding = 0) buffer qd_buffer_a { int a[]; };" in source
        assert "layout(std430, set = 0, binding = 1) buffer qd_buffer_b { precise float b[]; };" in source
        assert "layout(std430, set = 0, binding = 2) buffer qd_buffer_c { int c[]; };" in source
        assert push_offsets(source) == {"a_shape_0": 0, "b_shape_0": 4, "c_shape_0": 8}
    serial = tr.sources["two_tasks_0.comp"]
    assert "layout(local_size_x = 1) in;" in serial and "layout(local_size_x = 128) in;" in tr.sources["two_tasks_1.comp"]


@pytest.mark.parametrize("kernel,extensions,features,device_extensions", [
    (plain_f32, [], [], []),
    (uses_i64, ["GL_EXT_shader_explicit_arithmetic_types_int64"], ["shaderInt64"], []),
    (uses_f32_atomic, ["GL_EXT_shader_atomic_float"], ["shaderBufferFloat32AtomicAdd"],
     ["VK_EXT_shader_atomic_float"]),
    (uses_f16_storage, ["GL_EXT_shader_explicit_arithmetic_types_float16"],
     ["shaderFloat16", "storageBuffer16BitAccess"], []),
    (f64_math, [], ["shaderFloat64"], []),
], ids=["none", "i64", "f32-atomic", "f16", "f64"])
def test_extensions_only_when_used(kernel, extensions, features, device_extensions):
    tr = translate(kernel)
    (source,) = tr.sources.values()
    assert re.findall(r"#extension (\w+) : require", source) == extensions
    req = tr.manifest["requirements"]
    assert req["extensions"] == extensions and req["features"] == features
    assert req["device_extensions"] == device_extensions and req["vulkan"] == "1.2"


def test_reserved_words_get_a_suffix():
    tr = translate(glsl_words)
    (source,) = tr.sources.values()
    for name in ("input", "output", "sample", "main", "filter", "vec2", "texture", "dot"):
        assert re.search(rf"\b{name}_\b", source), name
        assert not re.search(rf"\b{name}\b(?!_)(?!\()", source.split("void main()")[1]), name
    assert [p["name"] for p in tr.manifest["params"]] == ["input", "output", "sample"]  # the host's names


@needs_glslang
def test_reserved_words_compile():
    compiles(translate(glsl_words))


def test_unsupported_atomic_is_a_located_error():
    with pytest.raises(qd.TranspileError) as err:
        translate(half_atomic)
    msg = str(err.value)
    assert "qd.atomic_add on i16 is not supported on the glsl target" in msg and "32- or 64-bit" in msg
    assert f"test_glsl.py:{half_atomic.fn.__code__.co_firstlineno + 4}:" in msg


def test_float_atomics_lower_per_the_capability_table():
    (source,) = translate(every_atomic).sources.values()
    assert "atomicAdd(big[0]" in source                         # i64: native with GL_EXT_shader_atomic_int64
    assert "atomicExchange(qd_f_as_u32[2], floatBitsToUint(2.5))" in source  # f32 exchange through its bits
    assert "atomicCompSwap(qd_f_as_u32[0]" in source              # f32 min: a CAS loop
    assert "atomicCompSwap(qd_d_as_u64[0]" in source              # f64 add: a CAS loop
    assert "atomicCompSwap(a[3]" in source                        # atomic_mul: a CAS loop
    assert "buffer qd_buffer_f_as_u32 { uint qd_f_as_u32[]; }" in source


def test_fences_and_volatile_loads_make_buffers_coherent():
    tr = translate(publish)
    (source,) = tr.sources.values()
    assert "memoryBarrier();" in source and "groupMemoryBarrier();" in source
    assert "coherent buffer qd_buffer_data" in source
    assert "volatile buffer qd_buffer_flags_volatile { int qd_flags_volatile[]; }" in source
    assert "while (qd_flags_volatile[0] == 0) {" in source
    assert "coherent" not in translate(plain_f32).sources["plain_f32.comp"]


# ----------------------------------------------------------------------------- the checker

@needs_glslang
def test_glslang_rejection_is_mapped_to_the_python_line():
    tr = translate(plain_f32)
    (name, source), = tr.sources.items()
    line = plain_f32.fn.__code__.co_firstlineno + 3
    assert f"x[i] = x[i] * 2.0;  // test_glsl.py:{line}" in source
    broken = source.replace("x[i] = x[i] * 2.0;", "x[i] = x[i] * undeclared_thing;")
    (v,) = check_sources("glsl", {name: broken}, tr.manifest)
    assert not v.ok
    assert f"test_glsl.py:{line}: ERROR: plain_f32.comp:" in v.message
    assert "undeclared_thing" in v.message


@needs_glslang
def test_spirv_val_catches_what_glslang_accepts():
    # glslang emits a 64-bit OpBitCount, which Vulkan forbids: the reason qd_popcnt exists.
    tr = translate(uses_i64)
    (name, source), = tr.sources.items()
    broken = source.replace("x[i] = x[i] * 3l;", "x[i] = int64_t(bitCount(x[i]));")
    (v,) = check_sources("glsl", {name: broken}, tr.manifest)
    assert not v.ok and v.message.startswith("uses_i64.comp: ") and "BitCount" in v.message


def test_missing_glslang_says_how_to_install(monkeypatch, tmp_path):
    from transpiler.toolchains import glsl_check

    monkeypatch.setenv("PATH", str(tmp_path))  # the tools are looked up on every check (toolchains/locate.py)
    with pytest.raises(ToolchainMissing, match="apt-get install glslang-tools"):
        check_sources("glsl", translate(plain_f32).sources, translate(plain_f32).manifest)
    with pytest.raises(ToolchainMissing, match="glslangValidator"):
        glsl_check.tool("glslangValidator")


# ----------------------------------------------------------------------------- running on Vulkan

@pytest.fixture(scope="module")
def vulkan():
    pytest.importorskip("vulkan")
    if shutil.which("glslangValidator") is None:
        pytest.skip("needs glslang-tools")
    try:
        qd.init(arch="vulkan")
    except ToolchainMissing as exc:
        pytest.skip(str(exc))
    from transpiler.runtime import current

    return current()


def test_device_reports_its_subgroup_size(vulkan):
    assert vulkan.subgroup_size in (1, 2, 4, 8, 16, 32, 64, 128)
    if "llvmpipe" in vulkan.device.name:
        assert vulkan.subgroup_size == 8


def test_mixed_scalar_params_run(vulkan, rng):
    grid = rng.standard_normal((5, 7)).astype(np.float32)
    out = np.zeros(35, np.float64)
    mixed_params(True, -3, 2**40, 0.5, 0.25, 1.5, grid, out)
    v = grid * np.float32(0.5) + np.float32(-3) + np.float32(1.5) + np.float32(1.0)
    np.testing.assert_allclose(out, v.reshape(-1).astype(np.float64) * 0.25 + 2**40, rtol=1e-12)


def test_serial_and_parallel_tasks_run_in_order(vulkan):
    a = np.arange(10, dtype=np.int32)
    b = np.zeros(300, np.float32)
    c = np.array([77], np.int32)
    two_tasks(a, b, c)
    np.testing.assert_array_equal(a, np.arange(10) * 2)
    assert (b == 1).all() and c[0] == 300


vec = qd.types.ndarray(dtype=qd.f32, ndim=1)


def test_block_work_runs_on_quadrants_grid_cap_on_lavapipe(vulkan, rng, monkeypatch):
    """On a CPU device a task with block-level work and nothing that tells blocks apart runs on
    at most 131,072 invocations, its grid-stride loop covering the rest (the same results,
    fewer coroutine set-ups), a task without barriers on at most 524,288; one that reads its
    block index or loops keeps a workgroup per block of its range: ``per_block`` is right only
    on that grid."""
    if not vulkan.on_cpu:
        pytest.skip("the cap applies to CPU Vulkan devices (lavapipe); this one is a GPU")

    @qd.kernel
    def block_sums(x: vec, total: vec):
        qd.loop_config(block_dim=128)
        for i in range(x.shape[0]):
            s = qd.simt.block.reduce_add(x[i], 128, qd.f32)
            if qd.simt.block.thread_idx() == 0:
                qd.atomic_add(total[0], s)

    @qd.kernel
    def folded_sum(x: vec, total: vec):
        for i in range(x.shape[0]):
            total[0] += x[i]

    @qd.kernel
    def scans(x: qd.types.ndarray(dtype=qd.i32, ndim=1), y: qd.types.ndarray(dtype=qd.i32, ndim=1)):
        qd.loop_config(block_dim=128)
        for i in range(x.shape[0]):
            y[i] = qd.simt.block.inclusive_add(x[i], 128, qd.i32)

    @qd.kernel
    def per_block(x: vec, partials: vec):
        qd.loop_config(block_dim=128)
        for i in range(x.shape[0]):
            s = qd.simt.block.reduce_add(x[i], 128, qd.f32)
            if qd.simt.block.thread_idx() == 0:
                partials[qd.simt.block.global_thread_idx() // 128] = s  # one block per 128 elements

    @qd.kernel
    def looping(x: vec, total: vec):
        qd.loop_config(block_dim=128)
        for i in range(x.shape[0]):
            v = 0.0
            for k in range(3):  # back-edges of its own: more iterations per invocation could pass llvmpipe's limit
                v += x[i]
            s = qd.simt.block.reduce_add(v, 128, qd.f32)
            if qd.simt.block.thread_idx() == 0:
                qd.atomic_add(total[0], s)

    @qd.kernel
    def doubled(x: vec):
        for i in range(x.shape[0]):
            x[i] = 2.0 * x[i]

    dispatched = []
    real = vulkan.device.vk.vkCmdDispatch
    monkeypatch.setattr(vulkan.device.vk, "vkCmdDispatch", lambda cb, x, y, z: dispatched.append(x) or real(cb, x, y, z))
    n = 3 * 131072 + 77 * 128  # 3,149 blocks of 128
    blocks = -(-n // 128)
    x = rng.integers(0, 4, n).astype(np.float32)  # every partial sum exact in f32
    for kernel in (block_sums, folded_sum):
        total = np.zeros(1, np.float32)
        kernel(x, total)
        assert total[0] == x.sum()
    xi = rng.integers(-50, 50, n).astype(np.int32)
    y = np.zeros(n, np.int32)
    scans(xi, y)
    np.testing.assert_array_equal(y, np.cumsum(xi.reshape(-1, 128), axis=1).reshape(-1))
    partials = np.zeros(blocks, np.float32)
    per_block(x, partials)
    np.testing.assert_array_equal(partials, x.reshape(-1, 128).sum(axis=1))
    total = np.zeros(1, np.float32)
    looping(x, total)
    assert total[0] == 3 * x.sum()
    xs = x.copy()
    doubled(xs)
    np.testing.assert_array_equal(xs, 2 * x)
    long = rng.standard_normal(5 * 131072 + 77 * 128).astype(np.float32)  # 5,197 blocks
    twice = long.copy()
    doubled(twice)
    np.testing.assert_array_equal(twice, 2 * long)
    assert dispatched == [1024, 1024, 1024, blocks, blocks, blocks, 4096]


def test_buffers_grow_and_shrink_between_calls(vulkan, rng):
    for n in (5, 100000, 3, 0, 64):
        x = rng.standard_normal(n).astype(np.float32)
        want = x * 2
        plain_f32(x)
        np.testing.assert_array_equal(x, want)


def test_one_array_passed_twice_is_one_buffer(vulkan):
    saxpy = load_module(ROOT / "examples" / "saxpy.py").saxpy
    x = np.arange(8, dtype=np.float32)
    saxpy(2.0, x, x)   # y aliases x: y[i] = 2 * x[i] + y[i] = 3 * x[i]
    np.testing.assert_array_equal(x, np.arange(8) * 3)


def test_python_integer_semantics_on_wide_and_narrow_ints(vulkan, rng):
    n = 500
    a = rng.integers(-2**40, 2**40, n)
    b = rng.integers(-1000, 1000, n)
    b[b == 0] = 3
    s = rng.integers(-128, 128, n).astype(np.int8)
    t = rng.integers(-128, 128, n).astype(np.int8)
    t[t == 0] = -7
    s[0], t[0] = -128, 1   # keep clear of -128 // -1, which overflows on every target
    out64, out8 = np.zeros((n, 3), np.int64), np.zeros((n, 2), np.int8)
    int_semantics(a, b, s, t, out64, out8)
    np.testing.assert_array_equal(out64[:, 0], a // b)
    np.testing.assert_array_equal(out64[:, 1], a % b)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out64[:, 2], a ** 3)
    np.testing.assert_array_equal(out8[:, 0], (s.astype(np.int32) // t).astype(np.int8))
    np.testing.assert_array_equal(out8[:, 1], (s.astype(np.int32) % t).astype(np.int8))


def test_64_bit_bit_helpers(vulkan, rng):
    u = rng.integers(0, 2**64, 200, dtype=np.uint64)
    u[:4] = [0, 1, 2**63, 2**32]
    v = u.view(np.int64).copy()
    out = np.zeros((200, 7), np.int32)
    bits64(u, v, out)
    uu = [int(x) for x in u.tolist()]
    np.testing.assert_array_equal(out[:, 0], [bin(x).count("1") for x in uu])
    np.testing.assert_array_equal(out[:, 1], [64 - x.bit_length() for x in uu])
    np.testing.assert_array_equal(out[:, 2], [(x & -x).bit_length() for x in uu])
    np.testing.assert_array_equal(out[:, 3], out[:, 0])
    np.testing.assert_array_equal(out[:, 4], out[:, 1])
    np.testing.assert_array_equal(out[:, 5], out[:, 2])
    np.testing.assert_array_equal(out[:, 6], [32 - (x & 0xFFFFFFFF).bit_length() for x in uu])


def test_pow_mod_bools_and_special_literals(vulkan):
    x = np.array([-2.0, -2.0, 0.0, 0.0, 3.0, -3.5, 5.0, -7.5], np.float32)
    y = np.array([3.0, 0.5, -1.0, 0.0, 2.0, 2.0, -3.0, 2.0], np.float32)
    out, flags = np.zeros((8, 4), np.float32), np.zeros((8, 5), np.int32)
    floats(x, y, out, flags)
    with np.errstate(divide="ignore", invalid="ignore"):
        want_pow = np.power(x, y)
    np.testing.assert_allclose(out[:, 0], want_pow, rtol=1e-6)    # C's pow: NaN, inf and signs included
    np.testing.assert_allclose(out[:, 1], x * x, rtol=1e-6)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(out[:, 2], np.mod(x, y), rtol=1e-6, atol=1e-6)
    assert list(out[:, 3]) == [math.inf if v > 0 else -math.inf for v in x]
    p, q = x > 0, y > 0
    np.testing.assert_array_equal(flags[:, 0], p & q)
    np.testing.assert_array_equal(flags[:, 1], p | q)
    np.testing.assert_array_equal(flags[:, 2], p ^ q)
    np.testing.assert_array_equal(flags[:, 3], p < q)
    np.testing.assert_array_equal(flags[:, 4], np.where(p, -2**31, 2**31 - 1))


def test_native_bits_and_cas_atomics(vulkan):
    n = 1000
    a = np.array([10**9, -1, -5, 7], np.int32)
    u = np.array([0, 0xFFFFFFFF, 0], np.uint32)
    big = np.array([0, 0], np.int64)
    f = np.array([1e9, -1, 0], np.float32)
    d = np.array([0, -1], np.float64)
    old = np.zeros(n, np.int32)
    every_atomic(a, u, big, f, d, old)
    assert a[0] == 0 and a[1] == n - 1 and a[3] == 7
    assert sorted(old.tolist() + [int(a[2])]) == sorted(list(range(n)) + [-5])   # exchange returns old values
    assert u[0] == 0xFFFFFFFF and u[1] == 0 and u[2] == np.bitwise_xor.reduce(np.arange(n, dtype=np.uint32))
    assert big[0] == sum(range(n)) * 10**9 and big[1] == -(n - 1)
    assert f[0] == 0 and f[1] == n - 1 and f[2] == 2.5
    assert d[0] == n * 0.5 and d[1] == n - 1


def test_fence_and_volatile_spin_wait(vulkan):
    flags, data = np.zeros(1, np.int32), np.zeros(2, np.float32)
    publish(flags, data)
    assert flags[0] == 1 and list(data) == [42.0, 43.0]


@qd.kernel
def kahan_sum(x: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for _ in range(1):
        s = 0.0
        c = 0.0
        for k in range(x.shape[0]):
            y = x[k] - c
            t = s + y
            c = (t - s) - y
            s = t
        out[0] = s
        out[1] = c


def test_kahan_summation_survives_the_driver(vulkan):
    # Mesa reassociates float arithmetic that is not `precise`: the compensation c would be
    # folded to 0. (Kept under 65535 iterations: llvmpipe ends any shader invocation's loops
    # after that many back-edges in total, LP_MAX_TGSI_LOOP_ITERATIONS.)
    x = np.full(20000, 0.1, np.float32)
    x[0] = 1e4
    out = np.zeros(2, np.float32)
    kahan_sum(x, out)
    s, c = np.float32(0), np.float32(0)
    for v in x.tolist():
        y = np.float32(v) - c
        t = s + y
        c = (t - s) - y
        s = t
    assert out[0] == s and out[1] == c and c != 0


@toolchain_test("needs glslang-dev and glslang-tools (scripts/setup.sh toolchains)",
                not Path("/usr/include/glslang/Public/ShaderLang.h").exists()
                or shutil.which("glslangValidator") is None)
def test_in_process_spirv_is_glslang_validators():
    """The Vulkan runtime's in-process compiler makes the very SPIR-V glslangValidator makes,
    for every task file of the features corpus; a shader glslang refuses gives None (the
    runtime then asks glslangValidator, whose message is the located one)."""
    from features.corpus import features
    from transpiler.runtime import spirv_compiler
    from transpiler.toolchains.glsl_check import compile_glsl

    assert spirv_compiler.identity() is not None
    compared = 0
    for feature in features():
        try:
            tr = qd.translate(feature.kernel, "glsl", warn=False, **feature.options_for("glsl"))
        except qd.TranspileError:
            continue
        for name, text in tr.sources.items():
            assert spirv_compiler.compile_in_process(text) == compile_glsl(text, name), name
            compared += 1
    assert compared > 30
    assert spirv_compiler.compile_in_process("#version 450\nvoid main() { int x = y; }\n") is None


@pytest.mark.toolchain
def test_vulkan_runs_without_the_in_process_compiler(monkeypatch, rng):
    """No glslang-dev: kernels still compile, through glslangValidator."""
    from transpiler.runtime import spirv_compiler, vulkan

    monkeypatch.setattr(spirv_compiler, "_load", lambda: None)
    monkeypatch.setattr(spirv_compiler, "_key", lambda: None)
    monkeypatch.setattr(vulkan, "_spirv_cache", {})
    monkeypatch.setenv("QD_CACHE_DIR", "/nonexistent/qd-cache")

    @qd.kernel
    def twice(x: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            x[i] = x[i] * 2.0 + 0.5

    qd.init(arch="vulkan")
    x = rng.standard_normal(100).astype(np.float32)
    want = x * 2 + 0.5
    twice(x)
    np.testing.assert_array_equal(x, want)

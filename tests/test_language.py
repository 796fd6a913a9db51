"""Quadrants' everyday spelling: annotations, defaults, archs, 0-d ndarrays, kernel-scope
variables and return values, atomics on variables, print, and the diagnostics for what is
not there (yet). Execution tests run on Vulkan and on the CPU executors and compare with NumPy."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import transpiler as qd
from conftest import init_executor, target_names
from transpiler.lang.simt import block, grid, subgroup  # noqa: F401 - the import path Quadrants has


@qd.kernel
def typed_by_python(n: int, scale: float, flag: bool, a: qd.types.NDArray[qd.f32], out: qd.Tensor) -> None:
    for i in range(n):
        out[i] = a[i] * scale + (1.0 if flag else 0.0)


@qd.kernel
def template_array(src: qd.Template, dst: qd.template()) -> None:
    for i in range(src.shape[0]):
        dst[i] = src[i] * 2


@qd.kernel
def literal_types(out: qd.types.ndarray(ndim=1)) -> None:
    x = 1.5
    n = 3
    out[0] = x * n


def test_python_annotations_are_quadrants_defaults():
    tr = qd.translate(typed_by_python, "cuda", arg_types={"a": qd.lang.NdarrayAnnotation(qd.f32, 1),
                                                          "out": qd.lang.NdarrayAnnotation(qd.f32, 1)})
    dtypes = {p["name"]: p["dtype"] for p in tr.manifest["params"]}
    assert dtypes == {"n": "i32", "scale": "f32", "flag": "i32", "a": "f32", "out": "f32"}


def test_defaults_follow_default_fp_and_default_ip():
    arrays = {"out": qd.lang.NdarrayAnnotation(qd.f64, 1)}
    text = qd.translate(literal_types, "cuda", arg_types=arrays, default_fp=qd.f64, default_ip=qd.i64).sources
    body = next(iter(text.values()))
    assert "double x = 1.5;" in body and "int64_t n = 3ll;" in body
    tr = qd.translate(typed_by_python, "glsl", default_fp=qd.f64, default_ip=qd.i64,
                      arg_types={"a": arrays["out"], "out": arrays["out"]})
    assert {p["name"]: p["dtype"] for p in tr.manifest["params"]}["scale"] == "f64"


def test_untyped_ndarrays_take_the_call_s_types(executor, rng):
    a = rng.random(50).astype(np.float32)
    out = np.zeros(50, np.float32)
    typed_by_python(50, 2.0, True, a, out)
    np.testing.assert_allclose(out, a * 2 + 1, rtol=1e-6)
    i = rng.integers(0, 100, 20).astype(np.int64)
    j = np.zeros(20, np.int64)
    template_array(i, j)  # arrays through qd.Template and qd.template(): typed by the call too
    np.testing.assert_array_equal(j, i * 2)
    d = rng.random(7)
    e = np.zeros(7)
    template_array(d, e)
    np.testing.assert_allclose(e, d * 2)


def test_default_fp_from_init_reaches_kernels(rng):
    qd.init(arch="cpu", default_fp=qd.f64)
    try:
        out = np.zeros(1, np.float64)
        literal_types(out)
        assert out[0] == 4.5
    finally:
        qd.init(arch="cpu")


@qd.dataclass
class Ray:
    pos: qd.math.vec3
    id: qd.math.uvec2


@qd.kernel
def math_types_follow_init(out: qd.types.ndarray(dtype=qd.f64, ndim=1)):
    pi = 3.14159265358979
    ray = Ray(qd.math.vec3(pi), qd.math.uvec2(2**40 + 3))
    m = qd.math.mat2(pi)
    out[0] = (ray.pos.x - pi) * 1e12
    out[1] = ray.id.y
    out[2] = (m[1, 1] - pi) * 1e12


def test_qd_math_vector_types_follow_init_defaults(executor):
    from conftest import init_executor

    vec3 = qd.math.vec3  # (the same object before and after, as in Quadrants)
    init_executor(executor, default_fp=qd.f64, default_ip=qd.i64)
    try:
        assert (vec3.dtype, qd.math.ivec2.dtype, qd.math.uvec4.dtype, qd.math.mat3.dtype) == (qd.f64, qd.i64, qd.u64,
                                                                                              qd.f64)
        out = np.ones(3)
        math_types_follow_init(out)
        np.testing.assert_array_equal(out, [0.0, 2**40 + 3, 0.0])  # f32 components: 87.4, and 3
    finally:
        init_executor(executor)
    assert (vec3.dtype, qd.math.uvec4.dtype) == (qd.f32, qd.u32)


def test_archs_exist_and_fall_back_with_a_warning():
    for name in ("gpu", "cuda", "amdgpu", "vulkan", "metal", "cpu", "x64", "arm64"):
        assert getattr(qd, name) == name
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        qd.init(arch=qd.metal)
    assert any("metal" in str(w.message) and "running on" in str(w.message) for w in caught)
    with pytest.raises(RuntimeError, match="found no executor"):
        qd.init(arch=qd.metal, enable_fallback=False)
    qd.init(arch=qd.gpu)  # the best one here, silently
    assert qd.simt.subgroup.group_size() in (8, 16, 32, 64)
    qd.sync()


def test_group_size_in_python_scope_is_the_executor_s():
    qd.init(arch="cpu")
    assert qd.simt.subgroup.group_size() == 32 and qd.simt.subgroup.log2_group_size() == 5
    qd.init(arch="cpu", dialect="hip")
    assert subgroup.group_size() == 64


# ----------------------------------------------------------------------------- 0-d, struct-for

@qd.kernel
def zero_d(c: qd.types.ndarray(dtype=qd.f32, ndim=0), x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> None:
    for i in x:
        c[None] += x[i]
    c[()] = c[()] * 2.0


def test_zero_d_ndarrays(executor, rng):
    x = rng.random(100).astype(np.float32)
    c = np.zeros((), np.float32)
    zero_d(c, x)
    assert abs(c - 2 * x.sum()) < 1e-3
    q = qd.ndarray(qd.f32, ())
    zero_d(q, x)
    assert abs(q.to_numpy() - 2 * x.sum()) < 1e-3


@qd.kernel
def nested_grouped(a: qd.types.ndarray(dtype=qd.i32, ndim=2), rows: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> None:
    for r in rows:
        s = 0
        for I in qd.grouped(qd.ndrange(a.shape[1])):
            s += a[r, I[0]]
        rows[r] = s


def test_struct_for_and_grouped_nest_in_a_task(executor, rng):
    a = rng.integers(0, 9, (6, 7)).astype(np.int32)
    rows = np.zeros(6, np.int32)
    nested_grouped(a, rows)
    np.testing.assert_array_equal(rows, a.sum(1))


# ----------------------------------------------------------------------------- kernel scope

@qd.kernel
def reduce_everything(x: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> qd.i64:
    lo, hi, total, bits = 1 << 30, -(1 << 30), 0, 0
    for i in range(x.shape[0]):
        qd.atomic_min(lo, x[i])
        qd.atomic_max(hi, x[i])
        total += x[i]
        bits |= x[i] & 0xFF
    return qd.i64(lo) + qd.i64(hi) * 1000 + qd.i64(total) * 1000000 + qd.i64(bits) * 1000000000000


@qd.kernel
def block_dim_not_a_multiple(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    s = 0.0
    qd.loop_config(block_dim=50)
    for i in range(x.shape[0]):
        s += x[i]
    return s


def test_reductions_of_every_kind(executor, rng):
    x = rng.integers(0, 200, 1000).astype(np.int32)
    got = reduce_everything(x)
    bits = np.bitwise_or.reduce(x & 0xFF)
    assert got == int(x.min()) + int(x.max()) * 1000 + int(x.sum()) * 1000000 + int(bits) * 1000000000000
    y = rng.random(777).astype(np.float32)
    assert abs(block_dim_not_a_multiple(y) - y.sum()) < 1e-2  # atomics per thread: no block fold here


def test_a_reduction_is_a_block_fold_with_one_atomic_per_block():
    text = qd.translate(reduce_everything, "cuda").sources["reduce_everything.cu"]
    assert "__syncthreads()" in text and text.count("atomicAdd(&qd_total[0]") == 1
    assert "if ((int32_t)threadIdx.x == 0) {" in text
    one = next(iter(qd.translate(block_dim_not_a_multiple, "cuda").sources.values()))
    assert "atomicAdd(&qd_s[0], x[i])" in one  # 50 is no multiple of 32: no fold


@qd.kernel
def race(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    m = 0.0
    for i in range(x.shape[0]):
        m = max(m, x[i]) * 0.5  # not one update of m: every thread overwrites it (a race, warned of)
    return m


@qd.kernel
def reductions_by_assignment(x: qd.types.ndarray(dtype=qd.f32, ndim=1), k: qd.types.ndarray(dtype=qd.i32, ndim=1),
                             out: qd.types.ndarray(dtype=qd.f32, ndim=1), kout: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    hi = -1e30
    lo = 1e30
    total = 0.0
    bits = 0
    low = 1 << 30
    for i in range(x.shape[0]):
        hi = max(hi, x[i])
        lo = qd.min(x[i] * 2.0, lo)
        total = x[i] + total
        bits = bits | k[i]
        low = min(low, k[i] - 7)
    out[0] = hi
    out[1] = lo
    out[2] = total
    kout[0] = bits
    kout[1] = low


def test_updates_spelled_as_assignments_are_reductions(executor, rng):
    # Quadrants accepts `n = max(n, v)` in a parallel loop and races on it; here it is the
    # reduction it means (a block fold where it can, else an atomic).
    x = rng.standard_normal(5000).astype(np.float32)
    k = rng.integers(0, 1 << 20, 5000).astype(np.int32)
    out = np.zeros(3, np.float32)
    kout = np.zeros(2, np.int32)
    reductions_by_assignment(x, k, out, kout)
    np.testing.assert_allclose(out, [x.max(), 2 * x.min(), x.sum(dtype=np.float64)], rtol=1e-4)
    assert kout[0] == np.bitwise_or.reduce(k) and kout[1] == k.min() - 7
    text = next(iter(qd.translate(reductions_by_assignment, "cuda").sources.values()))
    assert "hi_partial = fmaxf(hi_partial, x[i]);" in text


@qd.kernel
def no_annotation(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    return x[0]


@qd.kernel
def after_return(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    return x[0]
    x[1] = 2.0


@qd.kernel
def return_in_loop(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    for i in range(x.shape[0]):
        return x[i]


@qd.kernel
def after_void_return(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    return None
    x[1] = 2.0


@qd.kernel
def ends_with_return(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        x[i] += 1.0
    return                                          # Quadrants takes `return` / `return None` here


def test_a_kernel_that_returns_nothing_may_end_with_return(executor):
    x = np.arange(4, dtype=np.float32)
    assert ends_with_return(x) is None
    np.testing.assert_array_equal(x, np.arange(4) + 1)


def test_a_store_every_thread_overwrites_is_warned_of_as_a_race():
    tr = qd.translate(race, "cuda", warn=False)  # Quadrants' shared variable: accepted, and racy
    (w,) = tr.warnings
    assert "every thread of this parallel loop stores into `m`" in w.message and "qd.atomic_max(m, v)" in w.hint
    assert w.loc.line == race.fn.__code__.co_firstlineno + 4


@pytest.mark.parametrize("kernel,message,hint", [
    (no_annotation, "does not say which type", "-> qd.f32"),
    (after_return, "code after the kernel's `return` never runs", None),
    (after_void_return, "code after the kernel's `return` never runs", None),
    (return_in_loop, "can only end the kernel", None),
])
def test_kernel_scope_mistakes_are_located(kernel, message, hint):
    with pytest.raises(qd.TranspileError) as info:
        qd.translate(kernel, "cuda")
    assert message in info.value.message and info.value.loc is not None
    assert hint is None or hint in (info.value.hint or "")


# ----------------------------------------------------------------------------- print

@qd.kernel
def say(x: qd.types.ndarray(dtype=qd.f32, ndim=1), n: qd.i64) -> None:
    for i in range(2):
        print("x", i, x[i], "n =", n, "100%")
    print("done", end="!\n")


def test_print_shows_on_every_executor(executor, capfd):
    say(np.array([1.5, 0.25], np.float32), 7)
    out = capfd.readouterr().out
    assert "x 0 1.500000 n = 7 100%\n" in out and "x 1 0.250000 n = 7 100%\n" in out and "done!\n" in out


WIDTH = 6


@qd.kernel
def say_formatted(x: qd.types.ndarray(dtype=qd.f32, ndim=1), n: qd.i64, u: qd.u32) -> None:
    for i in range(1):
        v = qd.Vector([x[0], x[1], 1.0])
        print(f"x={x[0]:.3f} n={n:08d} hex={u:x} w={WIDTH:>{WIDTH}} v={v:.1f} {x[i]}")
        print("{} and {:.1e}; {name:+.2f}".format(n, x[1], name=x[0]), "{0}{0}".format(WIDTH), f"{WIDTH:03i}",
              f"{WIDTH:.3}", sep="|")
        print("{:.5} {:.5} {:9}|{:9}".format(3.0, x[0], 2.5, x[1]))  # a known value as printf shows a run-time one


@qd.kernel
def spec_mismatch(n: qd.i32, u: qd.u32) -> None:
    for i in range(1):
        print(f"{n:.2f}")
        print(f"{u:d}")


def test_print_formats_f_strings_and_format_calls(executor, capfd):
    say_formatted(np.array([1.5, 0.25], np.float32), 255, 255)
    out = capfd.readouterr().out
    assert "x=1.500 n=00000255 hex=ff w=     6 v=[1.5, 0.2, 1.0] 1.500000\n" in out, out
    assert "255 and 2.5e-01; +1.50|66|006|006\n" in out, out
    assert "3.00000 1.50000  2.500000| 0.250000\n" in out, out
    with pytest.raises(qd.TranspileError, match="'.2f' doesn't match 'i32'") as info:
        qd.translate(spec_mismatch, "cuda")
    assert info.value.loc.line == spec_mismatch.fn.__code__.co_firstlineno + 3
    assert "one of d, i (e.g. {n:08d})" in str(info.value)


@qd.kernel
def say_lists(x: qd.types.ndarray(dtype=qd.math.vec2, ndim=1), k: qd.i32) -> None:
    for i in range(1):
        w = [k, x.shape]
        print(w + [x[0]], (1,), [])  # lists and tuples, nested, as Quadrants shows them


def test_print_shows_lists_and_tuples(executor, capfd):
    say_lists(np.array([[1.5, -2.0], [0, 0]], np.float32), 7)
    assert "[7, [2], [1.500000, -2.000000]] [1] []\n" in capfd.readouterr().out


@pytest.mark.toolchain
@pytest.mark.parametrize("target", ["cuda", "hip", "glsl"])
def test_formatted_prints_compile(target):
    from conftest import assert_compiles

    assert_compiles(target, qd.translate(say_formatted, target))
    assert_compiles(target, qd.translate(say_lists, target))


def test_print_on_metal_writes_the_print_buffer():
    tr = qd.translate(say, "msl")  # (once refused: Metal has no printf)
    prints = tr.manifest["prints"]
    (param,) = [p for p in tr.manifest["params"] if p.get("role") == "print"]
    assert param["name"] == prints["param"] and "atomic_fetch_add_explicit" in tr.sources["say.metal"]
    assert [(s["line"], s["args"]) for s in prints["sites"]] == \
        [(say.fn.__code__.co_firstlineno + 3, ["i32", "f32", "i64"]), (say.fn.__code__.co_firstlineno + 4, [])]


# ----------------------------------------------------------------------------- what is not there

def test_missing_names_say_why_or_suggest():
    with pytest.raises(AttributeError, match="qd.root.hash: quantized and hashed SNodes are not supported"):
        qd.root.hash  # noqa: B018
    with pytest.raises(AttributeError, match="did you mean qd.sqrt"):
        qd.sqrtt  # noqa: B018
    with pytest.raises(AttributeError, match="did you mean qd.simt.block.sync"):
        qd.simt.block.synk  # noqa: B018
    with pytest.raises(AttributeError, match="qd.ScalarField is not supported yet: use qd.field or qd.ndarray"):
        qd.ScalarField  # noqa: B018
    with pytest.raises(AttributeError, match="qd.mesh_local is not supported by this transpiler .*no equivalent"):
        qd.mesh_local  # noqa: B018


@qd.kernel
def near_miss(a: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> None:
    for i in range(a.shape[0]):
        a[i] = qd.sqrtt(a[i])


def test_near_miss_in_a_kernel_is_located_with_the_suggestion():
    with pytest.raises(qd.TranspileError, match="did you mean qd.sqrt") as info:
        qd.translate(near_miss, "cuda")
    assert info.value.loc.line == near_miss.fn.__code__.co_firstlineno + 3


@qd.kernel
def width_here() -> qd.i32:
    return subgroup.group_size()


@pytest.mark.toolchain  # both CPU executors: g++ builds
def test_a_new_executor_never_reuses_the_last_one_s_programs():
    import gc

    for _ in range(5):  # a freed backend's id() is often the next one's: that must not matter
        init_executor("cpu-cuda")
        assert width_here() == 32
        gc.collect()
        init_executor("cpu-hip")
        assert width_here() == 64
        gc.collect()


@qd.kernel
def ndrange_axes(a: qd.types.ndarray(dtype=qd.i32, ndim=2), order: qd.types.ndarray(dtype=qd.i32, ndim=2)) -> None:
    for i, j in qd.ndrange(a.shape[0], a.shape[1], axes=(1, 0)):
        a[i, j] = i * 100 + j
    for _ in range(1):
        n = 0
        for I in qd.grouped(qd.ndrange(3, 4, axes=(1, 0))):  # serial: the order shows
            order[I[0], I[1]] = n
            n += 1


def test_ndrange_axes_orders_the_iteration_levels(executor):
    a = np.zeros((5, 7), np.int32)
    order = np.zeros((3, 4), np.int32)
    ndrange_axes(a, order)
    np.testing.assert_array_equal(a, np.arange(5)[:, None] * 100 + np.arange(7))
    # axis 1 outermost, axis 0 fastest: what Quadrants 1.3.3 computes for this kernel
    np.testing.assert_array_equal(order, np.arange(4)[None, :] * 3 + np.arange(3)[:, None])
    text = next(iter(qd.translate(ndrange_axes, "cuda").sources.values()))
    assert "int32_t i = linear % a_shape_0;" in text  # i is the fastest-varying index of the flat loop


@qd.kernel
def bad_axes(a: qd.types.ndarray(dtype=qd.i32, ndim=2)) -> None:
    for i, j in qd.ndrange(4, 5, axes=(0, 0)):
        a[i, j] = 1


def test_ndrange_axes_must_be_a_permutation():
    with pytest.raises(qd.TranspileError, match=r"qd.ndrange\(axes=\(0, 0\)\) is not a permutation of range\(2\)") \
            as info:
        qd.translate(bad_axes, "cuda")
    assert info.value.loc.line == bad_axes.fn.__code__.co_firstlineno + 2
    for axes, message in (((0, 1, 2), r"has 3 entries but ndrange was called with 2 dimension"),
                          ((0, "1"), r"entries must be Python ints; got str"), ((True, False), "must be Python ints"),
                          ((0, 2), "is not a permutation")):
        with pytest.raises(qd.TranspileError, match=message):
            qd.ndrange(4, 5, axes=axes)  # the same checks in Python scope


@qd.kernel
def with_assert(a: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> None:
    for i in range(a.shape[0]):
        assert a[i] >= 0, f"negative value at index {i}"
        a[i] = a[i] * 2.0


def test_assert_compiles_away_as_without_quadrants_debug_mode(executor, rng):
    a = rng.standard_normal(64).astype(np.float32)  # negative values too: nothing is checked
    want = a * 2
    with_assert(a)
    np.testing.assert_array_equal(a, want)


@qd.kernel
def any_above(x: qd.types.ndarray(dtype=qd.f32, ndim=1), limit: qd.f32, strict: qd.u1) -> qd.u1:
    found = 0
    for i in range(x.shape[0]):
        if x[i] > limit or (not strict and x[i] == limit):
            found += 1
    return found > 0


def test_a_kernel_returns_a_bool(executor, rng):
    x = rng.standard_normal(500).astype(np.float32)
    top = float(x.max())
    got = [any_above(x, top, True), any_above(x, top, False), any_above(x, top - 0.5, True)]
    assert got == [False, True, True] and all(type(g) is bool for g in got)
    assert qd.translate(any_above, "cuda").manifest["result"] == {"param": "qd_result", "dtype": "u8"}


@qd.kernel
def swaps(v2: qd.types.ndarray(dtype=qd.math.vec2, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(out.shape[0]):
        u = v2[i]
        w = v2[i] * 10.0
        u, w = w, u                                  # vectors swap through temporaries
        a, b = u[0], w[1]
        a, b = b, a + b
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = u[0], w[0], a, b
    j = v2.shape[0] - 1
    v2[0], v2[j] = v2[j], v2[0]                      # array elements holding vectors


@qd.kernel
def fib_serial(n: qd.i32, x: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> qd.i32:
    a, b = 0, 1                                      # pure top-level values ...
    qd.loop_config(serialize=True)
    for i in range(n):
        a, b = b, a + b                              # ... a serial task updates
    c, d = x[0], x[1]
    for _ in range(1):                               # Taichi's idiom: one iteration, so serial
        for i in range(n):
            c, d = d, c + d
    for i in range(x.shape[0]):
        x[i] = b * 1000 + d                          # later tasks read the updated values
    return a


def test_tuple_assignments_read_every_value_first_and_serial_updates_are_seen(executor, rng):
    v2 = rng.integers(-9, 9, (6, 2)).astype(np.float32)
    out = np.zeros((6, 4), np.float32)
    start = v2.copy()
    swaps(v2, out)
    np.testing.assert_array_equal(out[:, 0], start[:, 0] * 10)
    np.testing.assert_array_equal(out[:, 1], start[:, 0])
    np.testing.assert_array_equal(out[:, 2], start[:, 1])
    np.testing.assert_array_equal(out[:, 3], start[:, 0] * 10 + start[:, 1])
    np.testing.assert_array_equal(v2[[0, -1]], start[[-1, 0]])
    fib = [0, 1]
    while len(fib) < 20:
        fib.append(fib[-1] + fib[-2])
    for n in (0, 1, 6, 11):
        x = np.array([2, 3, 0, 0], np.int32)
        c, d = 2, 3
        for _ in range(n):
            c, d = d, c + d
        assert fib_serial(n, x) == fib[n]
        np.testing.assert_array_equal(x, fib[n + 1] * 1000 + d)


inner_t = qd.types.struct(a=qd.math.vec3, b=qd.i16)
outer_t = qd.types.struct(a=qd.f32, b=inner_t)


@qd.kernel
def returns_struct() -> outer_t:
    return outer_t(a=1, b=inner_t(a=qd.math.vec3([100, 0.2, 3]), b=65537))  # 65537 as i16 is 1


@qd.kernel
def returns_tuple(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> (qd.f32, inner_t, qd.u1):
    t = 0.0
    for i in range(x.shape[0]):
        t += x[i]
    return t, inner_t(a=qd.math.vec3(t, 2 * t, 3), b=7), t > 10


@qd.kernel
def returns_typed_tuple() -> tuple[qd.i32, qd.math.vec2]:
    return 4, [1.5, 2.5]


def test_a_kernel_returns_a_struct_or_a_tuple(executor, rng):
    r = returns_struct()
    assert r.a == 1.0 and r.b.b == 1 and np.allclose(r.b.a, [100, 0.2, 3])
    x = rng.uniform(0, 2, 50).astype(np.float32)
    t, s, big = returns_tuple(x)
    assert t == pytest.approx(x.sum(), rel=1e-5) and big is bool(x.sum() > 10) and s.b == 7
    np.testing.assert_allclose(s.a, [t, 2 * t, 3], rtol=1e-6)
    n, v = returns_typed_tuple()
    assert n == 4 and v.tolist() == [1.5, 2.5]
    results = qd.translate(returns_tuple, "cuda").manifest["results"]
    assert [(r["path"], r["dtype"], r.get("element_shape")) for r in results] == [
        ("0", "f32", None), ("1.a", "f32", [3]), ("1.b", "i16", None), ("2", "u8", None)]


@pytest.mark.toolchain
@pytest.mark.parametrize("target", target_names())
def test_struct_and_tuple_results_compile(target):
    from conftest import assert_compiles

    for kernel in (returns_struct, returns_tuple, returns_typed_tuple):
        assert_compiles(target, qd.translate(kernel, target), kernel.__name__)


def shifted(i):
    return i * 0.1 + 0.4


@qd.kernel
def makes_funcs(val: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(val.shape[0]):
        val[i] = qd.sin(qd.func(shifted)(qd.cast(i, qd.f32)))   # a @qd.func made where it is called


def test_a_func_made_inside_a_kernel(executor):
    v = np.zeros(16, np.float32)
    makes_funcs(v)
    np.testing.assert_allclose(v, np.sin(np.arange(16) * 0.1 + 0.4), rtol=1e-5)


@qd.kernel
def dict_values(u: qd.i32, v: qd.f32, a: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    x = {"foo": 2 + u, "bar": 3 + v, "vec": qd.Vector([a[0], a[1]])}   # a dict: a struct of its members
    return x["foo"] * 100 + x["bar"] + x["vec"][1]


def test_dict_expressions_in_kernels(executor):
    assert dict_values(2, 0.1, np.array([0.0, 0.5], np.float32)) == pytest.approx(403.6)


def test_operator_functions_and_static_jumps_in_the_kernel_body(executor, rng):
    import operator

    a = rng.integers(1, 50, 8).astype(np.int32)
    out = np.zeros((4, 8), np.int32)
    for row, op in enumerate((operator.add, operator.mul, operator.floordiv, operator.xor)):
        @qd.kernel
        def apply(a: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.i32, ndim=2),
                  row: qd.i32):
            for i in range(a.shape[0]):  # op: a Python operator function (Quadrants tests parametrize so)
                out[row, i] = op(a[i], 3) + operator.neg(operator.lt(a[i], 25))

        apply(a, out, row)
    want = np.stack([a + 3, a * 3, a // 3, a ^ 3]) - (a < 25)
    np.testing.assert_array_equal(out, want)

    f = np.zeros(10, np.int32)

    @qd.kernel
    def unrolled(f: qd.types.ndarray(dtype=qd.i32, ndim=1)):
        for k in qd.static(range(10)):  # in the kernel's body: each copy a task of its own
            f[k] = 3
            if qd.static(k >= 7):
                break
            if qd.static(k % 2):
                continue
            f[k] = 5

    unrolled(f)
    np.testing.assert_array_equal(f, [5, 3, 5, 3, 5, 3, 5, 3, 0, 0])


def test_static_of_a_field_aliases_it_and_plain_methods_inline(executor):
    a = qd.field(qd.f32, shape=())
    m = qd.Vector.field(2, qd.f32, shape=())

    class Helper:
        scale = 3.0

        def add(self, x, y):  # no @qd.func: Quadrants calls it with its expressions
            return (x + y) * self.scale

    h = Helper()

    @qd.kernel
    def func(t: qd.f32):
        b = qd.static(a)
        c, d = qd.static(b, m)
        b[None] = b[None] * t
        c[None] = h.add(a[None], t)
        d[None] = [t, 2 * t]

    a[None] = 2.0
    with pytest.warns(qd.TranslationWarning, match="`.*Helper.add` is a plain Python function"):
        func(1.5)
    assert a[None] == pytest.approx((2.0 * 1.5 + 1.5) * 3.0)
    np.testing.assert_array_equal(m[None], [1.5, 3.0])


@qd.kernel
def pick_by_template(a: qd.template()) -> qd.i32:
    if qd.static(a == 1):
        return 10
    elif qd.static(a == 2):
        return 20
    return 30  # the code after a translation-time return is not this instantiation's


@qd.kernel
def sum_of_squares_to(x: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> qd.i32:
    a = 0
    for i in qd.static(range(10)):
        a += i * x[i]
        if qd.static(i == 6):
            return a
    return -1


def test_return_under_translation_time_control_flow(executor, rng):
    assert [pick_by_template(1), pick_by_template(2), pick_by_template(7)] == [10, 20, 30]
    x = rng.integers(-9, 9, 10).astype(np.int32)
    assert sum_of_squares_to(x) == int(np.dot(np.arange(7), x[:7]))


@qd.kernel
def chained_assignments(out: qd.types.ndarray(dtype=qd.i32, ndim=1), v: qd.types.ndarray(dtype=qd.math.vec2, ndim=1)):
    a = 1
    b = 1
    a = b = a + b  # one value, computed before `a` changes
    out[0] = a * 10 + b
    for i in range(1, out.shape[0]):
        c = i
        d = 2 * i
        c = d = c + d
        out[i] = c * 10 + d
        p = v[i]
        q = p
        p = q = p + q
        v[i] = p + q


def test_a_chained_assignment_computes_its_value_once(executor, rng):
    out = np.zeros(6, np.int32)
    v = rng.uniform(-2, 2, (6, 2)).astype(np.float32)
    want_v = v.copy()
    want_v[1:] = v[1:] * 4
    chained_assignments(out, v)
    np.testing.assert_array_equal(out, [22] + [33 * i for i in range(1, 6)])  # (before: a = 2, b = 3)
    np.testing.assert_allclose(v, want_v, rtol=1e-6)


@qd.func
def set_one(x: qd.template()):
    x = 1


@qd.func
def add_one(x: qd.template()):
    x += 1


@qd.func
def set_one_by_value(x):
    x = 1


@qd.func
def scale_vector(v: qd.template(), k):
    v *= k


@qd.kernel
def template_locals(out: qd.types.ndarray(dtype=qd.i32, ndim=1), vs: qd.types.ndarray(dtype=qd.math.vec3, ndim=1)):
    for i in range(out.shape[0]):
        a = i
        set_one(a)
        b = i
        add_one(b)
        c = i
        set_one_by_value(c)
        out[i] = a * 10000 + b * 100 + c
        w = vs[i]
        scale_vector(w, 2.0)
        ok = 0
        if all(w == (2.0 * vs[i][0], 2.0 * vs[i][1], 2.0 * vs[i][2])) and any([1, 2, 3] != w):
            ok = 1  # (a vector compared with a tuple or list, component by component)
        vs[i] = w * ok


@qd.kernel
def template_kernel_scope(out: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    a = 0           # kernel-scope variables too: written by the functions in serial code
    set_one(a)
    b = 5
    add_one(b)
    w = qd.math.vec2(0.5, 1.5)
    scale_vector(w, 3.0)
    for i in range(out.shape[0]):  # and read by the tasks after it
        out[i] = a * 100 + b + i
    return w.x + w.y


def test_a_local_passed_to_a_template_parameter_is_the_variable_itself(executor, rng):
    """As in Quadrants: `x: qd.template()` names the caller's variable (its assignments are the
    caller's); an unannotated parameter is a copy."""
    out = np.zeros(7, np.int32)
    vs = rng.uniform(-3, 3, (7, 3)).astype(np.float32)
    want = vs * 2
    template_locals(out, vs)
    np.testing.assert_array_equal(out, [10000 + (i + 1) * 100 + i for i in range(7)])
    np.testing.assert_allclose(vs, want, rtol=1e-6)
    f = np.zeros(5, np.float32)
    assert template_kernel_scope(f) == 6.0
    np.testing.assert_array_equal(f, 106 + np.arange(5))


@qd.kernel
def vector_redefined_after_a_read(out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    v = qd.Vector([1.0, 2.0])
    out[0] = v[0] + v[1]
    v = qd.Vector([5.0, 6.0])  # (was hoisted above the read: out[0] was 11)
    out[1] = v[0] + v[1]
    for i in range(2, out.shape[0]):
        out[i] = v[1] * i


def test_a_top_level_vector_redefined_after_serial_code_reads_it(executor):
    out = np.zeros(5, np.float32)
    vector_redefined_after_a_read(out)
    np.testing.assert_array_equal(out, [3.0, 11.0, 12.0, 18.0, 24.0])


@qd.kernel
def python_and_or(x: qd.types.ndarray(dtype=qd.i32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1),
                  out: qd.types.ndarray(dtype=qd.f32, ndim=2), hits: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(x.shape[0]):
        out[i, 0] = x[i] and y[i]  # Python's value: y when x is true, else x
        out[i, 1] = x[i] or y[i]
        a = qd.Vector([x[i], 0, 2])
        b = qd.Vector([1, x[i], 0])
        v = (a and b) + 10 * (a or b)  # component by component, each 0 or 1
        out[i, 2] = v[0] * 100 + v[1] * 10 + v[2]
        if x[i] and y[i] > 0.5 or hits[i] and i > 3:
            hits[i] += 1


def test_and_or_of_numbers_give_pythons_value(executor, rng):
    x = rng.integers(-1, 2, 40).astype(np.int32)
    y = rng.uniform(0, 1, 40).astype(np.float32)
    hits = rng.integers(0, 2, 40).astype(np.int32)
    out = np.zeros((40, 3), np.float32)
    want_hits = hits + ((x != 0) & (y > 0.5) | (hits != 0) & (np.arange(40) > 3))
    python_and_or(x, y, out, hits)
    np.testing.assert_array_equal(out[:, 0], [float(a and b) for a, b in zip(x.tolist(), y.tolist())])
    np.testing.assert_array_equal(out[:, 1], [float(a or b) for a, b in zip(x.tolist(), y.tolist())])
    nz = (x != 0).astype(np.float32)
    np.testing.assert_array_equal(out[:, 2], 100 * (nz + 10) + 10 * (0 + 10 * nz) + (0 + 10))
    np.testing.assert_array_equal(hits, want_hits)


@qd.func
def by_mode(x, mode: qd.template()):
    if qd.static(mode == 0):
        return x * 2.0  # an early return Quadrants takes at translation time: the rest is not built
    y = x + 1.0
    if qd.static(mode == 1):
        return y * y
    return -y


@qd.func
def by_flags(x, a: qd.template(), b: qd.template()):
    if qd.static(a):
        if qd.static(b):
            return x + 100.0
        return x + 10.0
    return x


@qd.func
def by_element(arr: qd.template(), i):
    if qd.static(arr.element_shape() == [2]):  # Taichi's stable-fluid spelling
        return arr[i].x + arr[i].y
    qd.static_assert(arr.element_shape() == [])
    return arr[i]


@qd.kernel
def static_early_returns(a: qd.types.ndarray(dtype=qd.f32, ndim=1), v: qd.types.ndarray(dtype=qd.math.vec2, ndim=1),
                         out: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(a.shape[0]):
        out[i, 0] = by_mode(a[i], 0)
        out[i, 1] = by_mode(a[i], 1)
        out[i, 2] = by_mode(a[i], 2)
        out[i, 3] = by_flags(a[i], True, True)
        out[i, 4] = by_flags(a[i], True, False)
        out[i, 5] = by_flags(a[i], False, True)
        out[i, 6] = by_element(v, i) + by_element(a, i)


def test_a_return_under_a_static_if_ends_the_function_there(executor, rng):
    a = rng.uniform(-2, 2, 37).astype(np.float32)
    v = rng.uniform(-2, 2, (37, 2)).astype(np.float32)
    out = np.zeros((37, 7), np.float32)
    static_early_returns(a, v, out)
    want = np.stack([a * 2, (a + 1) ** 2, -(a + 1), a + 100, a + 10, a, v.sum(1) + a], 1)
    np.testing.assert_allclose(out, want, rtol=1e-6)


@pytest.mark.toolchain
@pytest.mark.parametrize("target", target_names())
def test_static_early_returns_compile(target):
    from conftest import assert_compiles

    assert_compiles(target, qd.translate(static_early_returns, target), "static_early_returns")


@qd.kernel
def scalar_as_vector(a: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(a.shape[0]):
        a[i] = a[i].norm()


def test_a_vector_method_on_a_scalar_says_what_the_value_is():
    with pytest.raises(qd.TranspileError) as err:
        qd.translate(scalar_as_vector, "cuda")
    text = str(err.value)
    line = scalar_as_vector.fn.__code__.co_firstlineno + 3
    assert f"test_language.py:{line}:" in text and "`a[i]` is a f32 scalar here: it has no attribute `norm`" in text
    assert "hint: vectors come from vector fields and ndarrays" in text


@qd.func
def by_local(x, k: qd.template()):
    m = qd.static(k * 2)
    if qd.static(m > 3):  # decided after `m` is bound, in order
        return x + m
    else:
        return x - m


@qd.kernel
def static_if_on_a_local(a: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(a.shape[0]):
        out[i, 0] = by_local(a[i], 1)
        out[i, 1] = by_local(a[i], 5)


def test_a_static_if_on_a_local_of_the_function_is_decided_in_order(executor, rng):
    a = rng.uniform(-2, 2, 21).astype(np.float32)
    out = np.zeros((21, 2), np.float32)
    static_if_on_a_local(a, out)
    np.testing.assert_allclose(out, np.stack([a - 2, a + 10], 1), rtol=1e-6)

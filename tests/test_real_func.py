"""@qd.real_func: a function of its own in the target source, called from kernels, from
inlined @qd.func bodies and from other real functions; returns from anywhere; recursion on
the targets that allow it. Execution on Vulkan and the CPU executors against NumPy, the
emitted shape of the functions, and the diagnostics."""
from __future__ import annotations

import numpy as np
import pytest

import transpiler as qd
from transpiler.targets import get_target

from conftest import RECURSIVE_EXECUTORS, target_names


@qd.real_func
def clamp01(x: qd.f32) -> qd.f32:
    if x < 0.0:
        return 0.0
    if x > 1.0:
        return 1.0
    return x


@qd.real_func
def row_argmax(m: qd.types.ndarray(dtype=qd.f32, ndim=2), row: int) -> int:
    best = 0
    for j in range(1, m.shape[1]):
        if m[row, j] > m[row, best]:
            best = j
    return best


@qd.real_func
def bump(counts: qd.types.ndarray(), k: qd.i32):
    if k < 0:
        return
    counts[k] += 1


@qd.real_func
def weighted(m: qd.template(), row: qd.i32, w: qd.f32) -> qd.f32:
    return clamp01(m[row, row_argmax(m, row)] * w)  # a real function calling real functions


@qd.func
def inlined_caller(m: qd.template(), row: qd.i32):
    return weighted(m, row, 0.5)


@qd.kernel
def real_func_kernel(m: qd.types.ndarray(dtype=qd.f32, ndim=2), counts: qd.types.ndarray(dtype=qd.i32, ndim=1),
                     out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(m.shape[0]):
        k = row_argmax(m, i)
        bump(counts, k if m[i, k] > 0.0 else -1)
        out[i] = inlined_caller(m, i) + clamp01(m[i, 0])


@qd.real_func
def collatz_steps(start: qd.i64) -> qd.i32:
    n = start
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@qd.kernel
def serial_call(start: qd.i64) -> qd.i32:
    return collatz_steps(start)


@qd.real_func
def fib(n: qd.i32) -> qd.i32:
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


@qd.kernel
def fib_kernel(out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(out.shape[0]):
        out[i] = fib(i)


def test_real_functions_compute_what_numpy_does(executor, rng):
    m = rng.standard_normal((300, 9)).astype(np.float32)
    counts = np.zeros(9, np.int32)
    out = np.zeros(300, np.float32)
    real_func_kernel(m, counts, out)
    arg = m.argmax(axis=1)
    best = m[np.arange(300), arg]
    np.testing.assert_array_equal(counts, np.bincount(arg[best > 0], minlength=9))
    np.testing.assert_allclose(out, np.clip(best * 0.5, 0, 1) + np.clip(m[:, 0], 0, 1), rtol=1e-6)


def test_a_kernel_returns_what_a_real_function_computes(executor):
    assert serial_call(27) == 111
    assert serial_call(97) == 118


@pytest.mark.parametrize("executor", RECURSIVE_EXECUTORS, indirect=True)
@pytest.mark.parametrize("kernel", ["fib_kernel", "fib_pairs"])  # a scalar result; a vector one (below)
def test_recursion_runs_where_the_target_allows_it(executor, kernel):
    out = np.zeros(20, np.int32)
    globals()[kernel](out)
    want = [0, 1]
    while len(want) < 20:
        want.append(want[-1] + want[-2])
    np.testing.assert_array_equal(out, want)


def test_one_function_per_signature_called_not_inlined():
    text = next(iter(qd.translate(real_func_kernel, "cuda").sources.values()))
    assert text.count("__device__ float clamp01(float x)") == 1
    assert "__device__ int32_t row_argmax(int32_t row, float* m, int32_t m_shape_1)" in text
    assert "__device__ void bump(int32_t k, int32_t* counts)" in text
    assert "return;" in text and "row_argmax(i, m, m_shape_1)" in text
    glsl = qd.translate(real_func_kernel, "glsl").sources
    assert all("int row_argmax(int row)" in src for src in glsl.values())  # buffers are globals there
    assert "precise float clamp01(float x)" in next(iter(glsl.values()))


@qd.real_func
def scale(x: qd.f32, k: qd.f32) -> qd.f32:
    return x * k


@qd.kernel
def two_instantiations(a: qd.types.ndarray(dtype=qd.f32, ndim=1), b: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(a.shape[0]):
        a[i] = scale(a[i], 2.0)
        b[i] = row_total(a, i) + row_total(b, i)


@qd.real_func
def row_total(v: qd.template(), i: qd.i32) -> qd.f32:
    return v[i] + 1.0


def test_each_array_binding_is_its_own_function():
    text = next(iter(qd.translate(two_instantiations, "msl").sources.values()))
    assert "float row_total(int i, device float* a)" in text and "float row_total_1(int i, device float* b)" in text
    assert "b[i] = row_total(i, a) + row_total_1(i, b);" in text


def test_recursion_is_a_located_error_where_the_target_forbids_it():
    for target, why in (("glsl", "GLSL forbids recursion"), ("msl", "Metal Shading Language forbids recursive")):
        with pytest.raises(qd.TranspileError) as info:
            qd.translate(fib_kernel, target)
        message = str(info.value)
        assert why in message and "return fib(n - 1) + fib(n - 2)" in message
        assert f"test_real_func.py:{fib.fn.__code__.co_firstlineno + 4}:" in message


def _error(kernel, target="cuda") -> str:
    with pytest.raises(qd.TranspileError) as info:
        qd.translate(kernel, target)
    return str(info.value)


@qd.real_func
def unannotated_result(a: qd.i32):
    return a + 1


@qd.kernel
def calls_unannotated(out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(out.shape[0]):
        out[i] = unannotated_result(i)


@qd.real_func
def uses_thread_index(a: qd.i32) -> qd.i32:
    return a + qd.simt.block.thread_idx()


@qd.kernel
def calls_thread_index(out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(out.shape[0]):
        out[i] = uses_thread_index(i)


@qd.real_func
def syncs(a: qd.i32) -> qd.i32:
    qd.simt.block.sync()
    return a


@qd.kernel
def calls_sync(out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(out.shape[0]):
        out[i] = syncs(i)


@qd.real_func
def wants_ints(v: qd.types.ndarray(dtype=qd.i32, ndim=1), i: qd.i32) -> qd.i32:
    return v[i]


@qd.kernel
def passes_floats(out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(out.shape[0]):
        out[i] = wants_ints(out, i)


def untyped_param_line() -> int:
    import inspect  # noqa: PLC0415
    return next(i for i, text in enumerate(inspect.getsource(test_diagnostics_name_the_function_and_the_fix)
                                           .splitlines()) if "def untyped_param" in text) + \
        test_diagnostics_name_the_function_and_the_fix.__code__.co_firstlineno


def test_diagnostics_name_the_function_and_the_fix():
    msg = _error(calls_unannotated)
    assert "@qd.real_func `unannotated_result`: its return value must be annotated" in msg
    assert "test_real_func.py:" in msg and "-> qd.i32" in msg
    with pytest.raises(qd.TranspileError) as info:  # refused where it is defined, as in Quadrants
        @qd.real_func
        def untyped_param(a, b: qd.i32) -> qd.i32:
            return a + b
    msg = str(info.value)
    line = untyped_param_line()
    assert "parameter `a` of @qd.real_func `untyped_param` must be type annotated" in msg
    assert f"test_real_func.py:{line}:27:" in msg and "def untyped_param(a, b: qd.i32)" in msg and "a: qd.i32" in msg
    msg = _error(calls_thread_index)
    assert "thread and block indices cannot be used in @qd.real_func `uses_thread_index`" in msg
    assert "return a + qd.simt.block.thread_idx()" in msg and "@qd.func" in msg
    msg = _error(calls_sync)
    assert "qd.simt.block.sync() cannot be used in @qd.real_func `syncs`" in msg
    msg = _error(passes_floats)
    assert "argument `v` of @qd.real_func `wants_ints` is an ndarray of f32, but the parameter is annotated i32" \
        in msg


def test_a_real_func_called_from_python_says_where_it_can_be_called():
    with pytest.raises(RuntimeError, match="can only be called from inside a @qd.kernel"):
        clamp01(0.5)


# ----------------------------------------------------------------------------- vector, struct and tuple results

Hit = qd.types.struct(t=qd.f32, normal=qd.math.vec3, inside=qd.i32)


@qd.real_func
def reflect_about(d: qd.math.vec3, n: qd.math.vec3) -> qd.math.vec3:
    if d.dot(n) >= 0.0:
        return d                                    # from anywhere, as scalars do
    return d - 2.0 * d.dot(n) * n


@qd.real_func
def hit_sphere(o: qd.math.vec3, r: qd.f32) -> Hit:
    t = o.norm() - r
    if t < 0.0:
        return Hit(t=0.0, normal=qd.math.vec3(0.0), inside=1)
    return Hit(t=t, normal=o.normalized(), inside=0)


@qd.real_func
def split(x: qd.f32) -> (qd.math.vec2, qd.i32):
    whole = qd.floor(x)
    return qd.math.vec2(whole, x - whole), qd.i32(whole) % 3


@qd.real_func
def min_max(a: qd.f32, b: qd.f32) -> tuple[qd.f32, qd.f32]:
    return min(a, b), max(a, b)


@qd.kernel
def compound_results(p: qd.types.ndarray(dtype=qd.math.vec3, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(p.shape[0]):
        r = reflect_about(p[i], qd.math.vec3(0.0, 1.0, 0.0))
        h = hit_sphere(p[i], 1.0)
        parts, k = split(p[i].x * 3.0)
        lo, hi = min_max(p[i].y, p[i].z)
        out[i, 0] = r.y
        out[i, 1] = h.t + h.normal.z + h.inside
        out[i, 2] = parts.y + k
        out[i, 3] = hi - lo


def test_vector_struct_and_tuple_results(executor, rng):
    p = rng.standard_normal((200, 3)).astype(np.float32)
    out = np.zeros((200, 4), np.float32)
    compound_results(p, out)
    up = p[:, 1]
    r_y = np.where(up >= 0, up, up - 2 * up)                # the y of the reflection about +y
    norm = np.sqrt((p.astype(np.float64) ** 2).sum(axis=1))
    inside = norm < 1.0
    hit = np.where(inside, 1.0, norm - 1.0 + p[:, 2] / norm)
    x3 = p[:, 0].astype(np.float64) * 3
    whole = np.floor(x3)
    np.testing.assert_allclose(out[:, 0], r_y, rtol=1e-6)
    np.testing.assert_allclose(out[:, 1], hit, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[:, 2], x3 - whole + np.mod(whole, 3), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[:, 3], np.abs(p[:, 1] - p[:, 2]), rtol=1e-6)


@qd.real_func
def walk(n: qd.i32) -> qd.math.ivec2:
    if n == 0:
        return qd.math.ivec2(0, 1)
    prev = walk(n - 1)                                  # recursion through a vector result
    return qd.math.ivec2(prev.y, prev.x + prev.y)


@qd.kernel
def fib_pairs(out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(out.shape[0]):
        out[i] = walk(i).x


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("target", target_names("references"))
def test_compound_results_compile(target):
    from transpiler.toolchains import check_sources

    kernels = [compound_results] + ([fib_pairs] if get_target(target).caps.recursion else [])
    for kernel in kernels:
        tr = qd.translate(kernel, target, warn=False)
        for verdict in check_sources(target, tr.sources, tr.manifest):
            assert verdict.ok, f"{verdict.tool} rejected {verdict.file}:\n{verdict.message}"


@qd.real_func
def set_seven(a: qd.ref(qd.f32)):
    a = 7


@qd.real_func
def doubled(a: qd.ref(qd.f32)):
    a += a


@qd.real_func
def negate_minus(a: qd.ref(qd.i32), by: qd.i32):
    a = -a - by


@qd.kernel
def by_reference(out: qd.types.ndarray(dtype=qd.f32, ndim=1), iout: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(out.shape[0]):
        a = 5.0
        set_seven(a)
        b = out[i]
        doubled(b)
        out[i] = a * 100 + b
        n = 5                                   # non-negative where it is declared ...
        negate_minus(n, i)                      # ... not after: n // 3 floors a negative number
        iout[i] = n // 3


@qd.kernel
def by_reference_at_top_level(out: qd.types.ndarray(dtype=qd.f32, ndim=1), k: qd.f32) -> qd.f32:
    a = 5.0          # a top-level local, recomputed in each task's prelude ...
    set_seven(a)     # ... until serial code writes it by reference: then it is shared, written back
    out[0] = a
    total = k
    for i in range(out.shape[0]):
        out[i] += total
    doubled(total)
    return total + a


def test_ref_parameters_write_the_callers_variable(executor, rng):
    out = rng.uniform(-5, 5, 40).astype(np.float32)
    want = 700 + out * 2
    iout = np.zeros(40, np.int32)
    by_reference(out, iout)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_array_equal(iout, (-5 - np.arange(40)) // 3)
    out = rng.uniform(-5, 5, 9).astype(np.float32)
    want = out + np.float32(1.5)
    want[0] = 7 + 1.5
    assert by_reference_at_top_level(out, 1.5) == 3.0 + 7.0  # (before: 5 read back where 7 was written)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    x = rng.uniform(1, 2, 6).astype(np.float32)
    want = x.copy()
    want[1:] += x[0] * 3
    with pytest.warns(qd.TranslationWarning, match=r"passes `s`, a variable defined outside it, to a qd.ref"):
        assert by_reference_shared(x) == x[0] * 2
    np.testing.assert_allclose(x, want, rtol=1e-6)


@qd.kernel
def by_reference_shared(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    a = x[0]           # serial code's value, read by the loop: a buffer the tasks share
    for i in range(1, x.shape[0]):
        x[i] += a
    doubled(a)         # passed through a local, stored back
    for i in range(1, x.shape[0]):
        x[i] += a
    s = 0.0
    for i in range(3):
        doubled(s)     # every thread: a race, warned of
    return a


@pytest.mark.toolchain
@pytest.mark.parametrize("target", target_names("references"))
def test_ref_parameters_compile(target):
    from conftest import assert_compiles

    tr = qd.translate(by_reference, target)
    text = "".join(tr.sources.values())
    assert {"cuda": "float& a", "hip": "float& a", "glsl": "inout float a",
            "msl": "thread float& a"}.get(target, " a") in text  # a target added later: its own spelling
    assert_compiles(target, tr)


@qd.kernel
def ref_of_an_element(out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(out.shape[0]):
        set_seven(out[i])


@qd.kernel
def ref_of_another_type(out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(out.shape[0]):
        k = 1
        set_seven(k)


def test_ref_arguments_are_local_variables_of_the_parameters_type():
    with pytest.raises(qd.TranspileError, match=r"qd.ref parameter: pass a scalar local variable") as info:
        qd.translate(ref_of_an_element, "cuda")
    assert info.value.loc.line == ref_of_an_element.fn.__code__.co_firstlineno + 3
    with pytest.raises(qd.TranspileError, match=r"is a qd.ref\(f32\) parameter; `k` is i32"):
        qd.translate(ref_of_another_type, "cuda")


@qd.data_oriented
class _Grid:
    def __init__(self, n: int, m: int):
        self.val = qd.field(qd.i32, shape=(n, m))

    @qd.real_func
    def inc(self, i: qd.i32, j: qd.i32):  # a method: `self` is the instance, a translation-time value
        self.val[i, j] += i * j

    @qd.real_func
    def mul(self, i: qd.i32, j: qd.i32) -> qd.i32:
        return i * j + self.val.shape[0]

    @qd.kernel
    def fill(self):
        for i, j in self.val:
            self.inc(i, j)
            self.val[i, j] += self.mul(i, j)


def test_real_func_methods_of_a_data_oriented_class(executor):
    g = _Grid(5, 7)
    g.fill()
    i, j = np.indices((5, 7))
    np.testing.assert_array_equal(g.val.to_numpy(), 2 * i * j + 5)

"""Execution: every runnable corpus kernel and example, on every executor, against NumPy
on random data. Executors (tests/conftest.py): Vulkan (GLSL on lavapipe here), the CPU
SIMT emulator running the CUDA and the HIP text, and CUDA on a GPU when there is one."""
from __future__ import annotations

import numpy as np
import pytest

import transpiler as qd
from conftest import ROOT, load_module

K = ROOT / "tests" / "kernels"
E = ROOT / "examples"


def py_floordiv(a, b):
    return np.floor_divide(a, b)


def test_saxpy(executor, rng):
    saxpy = load_module(E / "saxpy.py").saxpy
    for n in (1, 127, 1000, 70001):
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        want = np.float32(2.5) * x + y
        saxpy(2.5, x, y)
        np.testing.assert_allclose(y, want, rtol=1e-6)


def test_stencil(executor, rng):
    heat_step = load_module(E / "stencil2d.py").heat_step
    u = rng.standard_normal((37, 53)).astype(np.float32)
    out = np.zeros_like(u)
    heat_step(u, out, 0.1)
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    np.testing.assert_allclose(out[1:-1, 1:-1], u[1:-1, 1:-1] + np.float32(0.1) * lap, rtol=1e-5, atol=1e-5)
    assert not out[0].any() and not out[:, 0].any()


def test_histogram_example(executor, rng):
    histogram = load_module(E / "histogram.py").histogram
    values = rng.uniform(-1.0, 11.0, 20000).astype(np.float32)
    bins = np.zeros(10, np.int32)
    histogram(values, bins, 0.0, 10.0)
    want, _ = np.histogram(values[(values >= 0) & (values < 10)], bins=10, range=(0.0, 10.0))
    assert bins.sum() == want.sum()
    np.testing.assert_array_equal(bins, want)


def test_arith_python_semantics(executor, rng):
    arith = load_module(K / "arith.py").arith
    n = 4096
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(-50, 50, n).astype(np.int32)
    b[b == 0] = 7
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    f = rng.uniform(-10, 10, n).astype(np.float32)
    oi, ou, of = np.zeros((n, 6), np.int32), np.zeros((n, 4), np.uint32), np.zeros((n, 5), np.float32)
    arith(a, b, u, f, oi, ou, of)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(oi[:, 0], a // b)
        np.testing.assert_array_equal(oi[:, 1], a % b)
        np.testing.assert_array_equal(oi[:, 2], a * 3 - b + 7)
        np.testing.assert_array_equal(oi[:, 3], ((a << 2) ^ (b >> 1)) | (a & 0xFF))
        np.testing.assert_array_equal(oi[:, 4], -a + ~b)
        np.testing.assert_array_equal(oi[:, 5], a ** 3)
        np.testing.assert_array_equal(ou[:, 0], u // 7)
        np.testing.assert_array_equal(ou[:, 1], u % 7)
        np.testing.assert_array_equal(ou[:, 2], u * np.uint32(2654435761) + np.uint32(1))
        np.testing.assert_array_equal(ou[:, 3], u >> 3)
    np.testing.assert_allclose(of[:, 0], a.astype(np.float32) / b.astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(of[:, 1], np.floor(f / np.float32(0.75)), rtol=1e-6)
    np.testing.assert_allclose(of[:, 2], np.mod(f, np.float32(0.75)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(of[:, 3], f * a.astype(np.float32) + 0.5, rtol=1e-5)
    np.testing.assert_allclose(of[:, 4], f ** 2, rtol=1e-5)


def test_control_flow(executor, rng):
    control = load_module(K / "control.py").control
    n = 2000
    a = rng.integers(-200, 200, n).astype(np.int32)
    a[:5] = [0, -7, 5, 99, 100]
    out = np.zeros((n, 6), np.int32)
    control(a, out)
    for i, v in enumerate(a.tolist()):
        steps, m = 0, abs(v) + 1
        while m != 1 and steps < 50:
            m = m // 2 if m % 2 == 0 else 3 * m + 1
            steps += 1
        total = sum(k for k in range(10) if k % 3) + sum(range(v, v + 20, 3)) - sum(range(10, 0, -2))
        acc = len(range(0, 12, 1 + i % 3))
        inside = (0 < v < 100 and not (v % 5 == 0)) or v == -7
        assert list(out[i]) == [np.sign(v), steps, total, acc, int(inside), max(v, 10)], (i, v)


def test_funcs_inlined(executor, rng):
    funcs = load_module(K / "funcs.py").funcs
    n = 3000
    x = rng.uniform(-2, 2, n).astype(np.float32)
    out = np.zeros((n, 4), np.float32)
    acc = rng.standard_normal(n).astype(np.float32)
    acc0 = acc.copy()
    funcs(x, out, acc)
    t = np.clip((x + 1) / 2, 0, 1)
    np.testing.assert_allclose(out[:, 0], x * x + 4, rtol=1e-5)
    np.testing.assert_allclose(out[:, 1], np.clip(x, -0.5, 0.5))
    np.testing.assert_allclose(out[:, 2], x, rtol=1e-6)
    np.testing.assert_allclose(out[:, 3], t * t * (3 - 2 * t), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(acc, acc0 + x, rtol=1e-6)


def test_static_and_templates(executor, rng):
    blur = load_module(K / "static.py").blur
    x = rng.standard_normal(500).astype(np.float32)
    for radius in (1, 2):
        y = np.zeros_like(x)
        blur(x, y, radius)
        i = np.arange(radius, 500 - radius)
        s = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1] + 0.125
        if radius > 1:
            s = s + x[i - radius] + x[i + radius]
        np.testing.assert_allclose(y[i], s * 2 + np.pi, rtol=1e-5)
        assert not y[:radius].any()


def test_ndrange_2d_and_3d(executor, rng):
    mod = load_module(K / "ndrange2d.py")
    a = rng.standard_normal((33, 71)).astype(np.float32)
    b = np.zeros((71, 33), np.float32)
    mod.transpose_scale(a, b, 3.0)
    np.testing.assert_allclose(b, a.T * 3, rtol=1e-6)
    v = rng.integers(-100, 100, (9, 10, 11)).astype(np.int32)
    out = np.zeros_like(v)
    mod.box3(v, out)
    want = v[:-2, 1:-1] + v[2:, 1:-1] + v[1:-1, :-2] + v[1:-1, 2:]
    np.testing.assert_array_equal(out[1:-1, 1:-1], want)


def test_multitask_in_order(executor, rng):
    normalize = load_module(K / "multitask.py").normalize
    x = rng.uniform(0.5, 1.5, 1001).astype(np.float32)
    total = np.array([123.0], np.float32)   # the serial task must reset it first
    y = np.zeros_like(x)
    normalize(x, total, y)
    np.testing.assert_allclose(total[0], x.sum(dtype=np.float64), rtol=1e-4)
    np.testing.assert_allclose(y[500:], x[500:] / total[0], rtol=1e-5)
    np.testing.assert_allclose(y[:500], -x[:500])


def test_math_functions(executor, rng):
    mathfns = load_module(K / "mathfns.py").mathfns
    n = 1000
    x = rng.uniform(-3, 3, n).astype(np.float32)
    x[:4] = [2.5, -2.5, 0.5, -0.5]  # round half to even, as Python and NumPy do
    k = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    k[:2] = [0, 1]
    out, bits = np.zeros((n, 6), np.float32), np.zeros((n, 4), np.int32)
    mathfns(x, k, out, bits)
    tol = dict(rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(out[:, 0], np.sqrt(abs(x)) + np.exp(-x * x) + np.log(1 + abs(x)), **tol)
    np.testing.assert_allclose(out[:, 1], np.sin(x) * np.cos(x) + np.tanh(x), **tol)
    np.testing.assert_allclose(out[:, 2], np.floor(x) + np.ceil(x) + np.round(x) + np.trunc(x), **tol)
    np.testing.assert_allclose(out[:, 3], np.arctan2(x, 1.5) + np.abs(x) ** 1.5, **tol)
    np.testing.assert_allclose(out[:, 4], np.maximum(x, 0.25) - np.minimum(np.minimum(x, -0.25), 0.5 * x), **tol)
    np.testing.assert_allclose(out[:, 5], np.where(x > 0, x, 0), **tol)
    pop = np.array([bin(v).count("1") for v in k.tolist()])
    clz = np.array([32 - v.bit_length() for v in k.tolist()])
    ffs = np.array([(v & -v).bit_length() for v in k.tolist()])
    np.testing.assert_array_equal(bits[:, 0], pop)
    np.testing.assert_array_equal(bits[:, 1], clz)
    np.testing.assert_array_equal(bits[:, 2], ffs)
    np.testing.assert_array_equal(bits[:, 3], pop)


def test_atomics_under_contention(executor, rng):
    histogram = load_module(K / "atomics.py").histogram
    n = 5000
    data = rng.integers(0, 1000, n).astype(np.int32)
    bins = np.zeros(16, np.int32)
    total = np.zeros(1, np.float32)
    tickets = np.full(n, -1, np.int32)
    counter = np.array([0, -1, 10], np.int32)
    histogram(data, bins, total, tickets, counter)
    np.testing.assert_array_equal(bins, np.bincount(data % 16, minlength=16))
    assert total[0] == n * 0.5
    np.testing.assert_array_equal(np.sort(tickets), np.arange(n))   # old values: a permutation
    assert counter[0] == n and counter[1] == data.max() and counter[2] == 10 - 2 * n


def test_dtypes(executor, rng):
    mod = load_module(K / "dtypes.py")
    out = np.zeros(5, np.float64)
    mod.widen(-3, 300, 70000, 2**40, 200, 60000, 2**31 + 5, 2**50, 1.5, 2.25, 1e-3, out)
    assert out[0] == -3 + 300 + 70000 + 2**40
    assert out[1] == 200 + 60000 + 2**31 + 5 + 2**50
    assert out[2] == np.float64(np.float32(1.5) + np.float32(2.25)) + 1e-3
    assert out[3] == (253 * 200) % 256   # i8 * u8 is u8 arithmetic: -3 wraps to 253
    assert out[4] == 3 * 2**40


def test_narrow_integers_wrap(executor, rng):
    mod = load_module(K / "dtypes.py")
    n = 300
    x = rng.integers(0, 256, n).astype(np.uint8)
    y = rng.integers(-1000, 1000, n).astype(np.int16)
    h = rng.uniform(-4, 4, n).astype(np.float16)
    big = rng.integers(-2**20, 2**20, n).astype(np.int64)
    x0, y0, h0, big0 = x.copy(), y.copy(), h.copy(), big.copy()
    mod.narrow(x, y, h, big)
    np.testing.assert_array_equal(x, (x0.astype(np.int32) + 200).astype(np.uint8))
    np.testing.assert_array_equal(y, (y0.astype(np.int32) * 3 - 1).astype(np.int16))
    np.testing.assert_allclose(h.astype(np.float32), (h0.astype(np.float32) * 0.5 + 1).astype(np.float16), rtol=1e-3)
    np.testing.assert_array_equal(big, big0 * 4000000000 + np.arange(n))


def test_reserved_names(executor, rng):
    names = load_module(K / "names.py").names
    d = rng.standard_normal(100).astype(np.float32)
    want = (d * 0.5 + 1.5) * 2 - 1
    names(d, 1.5)
    np.testing.assert_allclose(d, want, rtol=1e-6)


def test_qd_ndarray_arguments(executor, rng):
    import transpiler as qd

    saxpy = load_module(E / "saxpy.py").saxpy
    x, y = qd.ndarray(qd.f32, 300), qd.ndarray(qd.f32, 300)
    xs = rng.standard_normal(300).astype(np.float32)
    x.from_numpy(xs)
    y.fill(1.0)
    saxpy(-1.0, x, y)
    np.testing.assert_allclose(y.to_numpy(), 1.0 - xs, rtol=1e-6)


def test_empty_range_launches_nothing(executor):
    saxpy = load_module(E / "saxpy.py").saxpy
    x = np.zeros(0, np.float32)
    saxpy(1.0, x, x.copy())


@pytest.mark.parametrize("n", [1, 3])
def test_wrong_argument_dtype_is_a_clear_error(executor, n):
    saxpy = load_module(E / "saxpy.py").saxpy
    with pytest.raises(TypeError, match="must hold f32, got f64"):
        saxpy(1.0, np.zeros(n), np.zeros(n, np.float32))
    x = np.zeros(n, np.float32)
    for args, kwargs, says in (((1.0, x), {}, "Missing argument 'y'"), ((1.0, x, x, x), {}, "Too many arguments"),
                               ((1.0, x, x), {"z": x}, "Unexpected argument 'z'"),
                               ((1.0, x), {"a": 1.0}, "Multiple values for argument 'a'")):
        with pytest.raises(TypeError, match=rf"saxpy\(\): {says}") as info:  # Python's class, Quadrants' words
            saxpy(*args, **kwargs)
        assert isinstance(info.value, qd.QuadrantsSyntaxError)


@qd.kernel
def axpy(a: qd.f32, x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f32, 1)):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


def _two_resident_arrays(backend, rng) -> tuple:
    """Two qd.ndarrays of 1000 random f32 made on ``backend``, which keeps them as its own
    memory: (how many it kept before, x, y, x's values, y's values)."""
    before = len(backend.resident)
    x, y = qd.ndarray(qd.f32, (1000,)), qd.ndarray(qd.f32, (1000,))
    assert len(backend.resident) == before + 2
    xs, ys = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    x.from_numpy(xs)
    y.from_numpy(ys)
    return before, x, y, xs, ys


@pytest.mark.toolchain
def test_vulkan_ndarrays_are_device_resident(rng):
    """On Vulkan a qd.ndarray's storage is the device buffer the kernel binds: nothing is
    copied around a launch (a view taken before the launch sees the result), the same
    ndarray passed twice is one buffer, and the memory goes with the last view."""
    import gc

    from transpiler.runtime import current

    qd.init(arch="vulkan")
    backend = current()
    before, x, y, xs, ys = _two_resident_arrays(backend, rng)
    view = y.data[10:20]  # host view of the device memory
    axpy(2.0, x, y)
    np.testing.assert_array_equal(y.to_numpy(), 2.0 * xs + ys)
    np.testing.assert_array_equal(view, (2.0 * xs + ys)[10:20])
    axpy(1.0, y, y)  # one buffer for both parameters: every element doubles
    np.testing.assert_array_equal(y.to_numpy(), 2 * (2.0 * xs + ys))
    axpy(3.0, np.ones(1000, np.float32), y)  # a numpy array beside a resident one: staged
    np.testing.assert_array_equal(y.to_numpy(), 2 * (2.0 * xs + ys) + 3.0)
    del x, y, view
    gc.collect()
    assert len(backend.resident) == before


@pytest.mark.toolchain
@pytest.mark.gpu
def test_cuda_ndarrays_are_device_resident(rng):
    """On CUDA a qd.ndarray is device memory mirrored by a host array: a launch copies
    nothing for it, the host copy catches up when read (to_numpy, []), a host write reaches
    the device before the next launch, and the memory goes with the last reference."""
    import gc

    from conftest import have_gpu, init_executor
    from transpiler.runtime import current

    if not have_gpu():
        pytest.skip("needs an NVIDIA GPU with CuPy; this machine has none")

    init_executor("cuda")
    backend = current()
    before, x, y, xs, ys = _two_resident_arrays(backend, rng)
    axpy(2.0, x, y)
    mirror = backend.resident[y.data.__array_interface__["data"][0]]
    assert mirror.host_stale and not mirror.device_stale  # the result is on the device only
    assert np.isclose(y[3], 2.0 * xs[3] + ys[3], rtol=1e-6)
    assert not mirror.host_stale
    want = 2.0 * xs + ys
    y[0] = 7.0  # one element from the host: the others stay as the kernel left them
    want[0] = 7.0
    axpy(1.0, y, y)  # one buffer for both parameters: every element doubles
    np.testing.assert_allclose(y.to_numpy(), 2 * want, rtol=1e-6)
    axpy(3.0, np.ones(1000, np.float32), y)  # a numpy array beside a resident one: copied in
    np.testing.assert_allclose(y.to_numpy(), 2 * want + 3.0, rtol=1e-6)
    del x, y, mirror
    gc.collect()
    assert len(backend.resident) == before


@pytest.mark.toolchain
def test_an_ndarray_made_on_a_replaced_executor_is_its_host_copy(rng, monkeypatch):
    """A qd.ndarray made on an executor that keeps its own copy (CUDA's device memory) and
    used after qd.init chose another: the new executor gets the host copy brought up to
    date by the old one, and from then on the array lives on the host."""
    from conftest import init_executor
    from transpiler import runtime

    class Mirroring(runtime.Backend):  # the protocol CUDA follows, its device copy a numpy array
        def __init__(self, newer):
            self.newer, self.reads = newer, 0

        def resident_array(self, shape, dtype):
            return np.zeros(shape, dtype)

        def host_read(self, arr):
            self.reads += 1
            arr[...] = self.newer  # what a kernel left on the device

    @qd.kernel
    def double_it(x: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            x[i] = 2.0 * x[i]

    newer = rng.standard_normal(100).astype(np.float32)
    old = Mirroring(newer)
    monkeypatch.setattr(runtime, "_backend", old)
    x = qd.ndarray(qd.f32, 100)
    assert x._owner is old
    init_executor("cpu-cuda")
    double_it(x)
    np.testing.assert_array_equal(x.to_numpy(), 2.0 * newer)
    assert old.reads == 1 and x._owner is None


def test_a_call_with_the_same_arguments_is_replayed(executor, rng, monkeypatch):
    """On every executor a warm call with the same qd.ndarrays and scalars runs the last
    launch again as it was prepared; anything that changes what the launch would do runs it
    in full: another scalar (even -0.0 for 0.0), other arrays, numpy arrays (Vulkan and CUDA
    copy them in and out each call), and a kernel with its own per-call arguments (a seed).
    New contents of the same arrays are read by the replay."""
    from transpiler.runtime import current

    @qd.kernel
    def scale_add(a: qd.f32, x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            y[i] = y[i] + a * x[i]

    @qd.kernel
    def noise(y: qd.types.ndarray(qd.f32, 1)):
        for i in range(y.shape[0]):
            y[i] = qd.random(qd.f32)

    backend = current()
    replays = []
    real_replay = backend.replay
    monkeypatch.setattr(backend, "replay",
                        lambda program, token: replays.append(real_replay(program, token)) or replays[-1])
    xs = rng.standard_normal(500).astype(np.float32)
    x, y, z = qd.ndarray(qd.f32, 500), qd.ndarray(qd.f32, 500), qd.ndarray(qd.f32, 500)
    x.from_numpy(xs)
    scale_add(2.0, x, y)
    scale_add(2.0, x, y)  # replayed: the same launch again
    np.testing.assert_allclose(y.to_numpy(), 4.0 * xs, rtol=1e-6)
    assert replays == [True]
    x.from_numpy(-xs)  # new contents, the same arrays: still a replay, reading the new values
    scale_add(2.0, x, y)
    np.testing.assert_allclose(y.to_numpy(), 2.0 * xs, rtol=1e-6, atol=1e-6)
    assert replays == [True, True]
    scale_add(3.0, x, y)  # another scalar: a full launch
    np.testing.assert_allclose(y.to_numpy(), -xs, rtol=1e-6, atol=1e-6)
    y.fill(1.0)
    scale_add(0.0, x, y)
    scale_add(-0.0, x, y)  # equal to 0.0, but other bits: a full launch (y + -0.0 * x)
    scale_add(3.0, x, z)  # other arrays: a full launch, then the first ones again
    scale_add(3.0, x, y)
    np.testing.assert_allclose(y.to_numpy(), 1.0 - 3.0 * xs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(z.to_numpy(), -3.0 * xs, rtol=1e-6, atol=1e-6)
    assert replays == [True, True]
    ys = np.zeros(500, np.float32)
    scale_add(1.0, xs, ys)
    scale_add(1.0, xs, ys)  # numpy arrays: never replayed
    np.testing.assert_allclose(ys, 2.0 * xs, rtol=1e-6)
    noise(y)
    first = y.to_numpy()
    noise(y)  # a fresh seed per call: never replayed
    assert not np.array_equal(first, y.to_numpy())
    assert replays == [True, True]


@qd.kernel
def smooth_then_scale(a: qd.f32, x: qd.types.ndarray(qd.f32, 1), tmp: qd.types.ndarray(qd.f32, 1),
                      y: qd.types.ndarray(qd.f32, 1)):
    for i in range(x.shape[0]):
        tmp[i] = x[i] + x[(i + 1) % x.shape[0]]
    for i in range(x.shape[0]):
        y[i] = a * (tmp[i] - tmp[(i + x.shape[0] - 1) % x.shape[0]])


def _smooth_then_scale_three_times(rng) -> None:
    """The same qd.ndarrays with new contents each time: the second and third calls may replay."""
    n = 1000
    x, tmp, y = qd.ndarray(qd.f32, n), qd.ndarray(qd.f32, n), qd.ndarray(qd.f32, n)
    for _ in range(3):
        xs = rng.standard_normal(n).astype(np.float32)
        x.from_numpy(xs)
        smooth_then_scale(1.5, x, tmp, y)
        t = xs + np.roll(xs, -1)
        np.testing.assert_allclose(y.to_numpy(), 1.5 * (t - np.roll(t, 1)), rtol=1e-5, atol=1e-5)


def test_a_kernel_of_several_tasks_is_replayed_in_order(executor, rng, monkeypatch):
    """A replayed kernel of several tasks runs them again in order, each seeing what the one
    before wrote (on CUDA they are replayed as one captured graph), and reads the arrays'
    new contents."""
    from transpiler.runtime import current

    backend = current()
    replays = []
    real_replay = backend.replay
    monkeypatch.setattr(backend, "replay",
                        lambda program, token: replays.append(real_replay(program, token)) or replays[-1])
    _smooth_then_scale_three_times(rng)
    assert replays == [True, True]


@pytest.mark.toolchain
@pytest.mark.gpu
def test_cuda_replays_task_by_task_where_no_graph_can_be_captured(rng):
    """Where CuPy or the driver cannot capture a CUDA graph, a replay launches the tasks one
    by one, with the same results."""
    from conftest import have_gpu, init_executor
    from transpiler.runtime import current

    if not have_gpu():
        pytest.skip("needs an NVIDIA GPU with CuPy; this machine has none")
    init_executor("cuda")
    backend = current()

    class NoCapture:
        def begin_capture(self):
            raise RuntimeError("stream capture is not supported here")

    backend.__dict__["stream"] = NoCapture()  # in place of the cached capture stream
    _smooth_then_scale_three_times(rng)
    (program,) = [prog for key, (_, prog) in smooth_then_scale.__dict__["_program_cache"].items()
                  if key[0] == backend.serial]
    assert program.graph is False


def test_qd_profile_accounts_for_each_first_call(executor, monkeypatch, capsys, rng):
    """QD_PROFILE=1 prints one line per instantiation's first call: the total and what the
    translation (frontend, hazards, emit or the offline cache's hit), the load and the launch
    each took; a warm call prints nothing. The stages add up to no more than the total."""
    import re

    from transpiler.runtime import profile

    monkeypatch.setattr(profile, "enabled", True)

    @qd.kernel
    def axpb(a: qd.f32, x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + 1.0

    x, y = rng.standard_normal(64).astype(np.float32), np.zeros(64, np.float32)
    axpb(2.0, x, y)
    axpb(3.0, x, y)
    np.testing.assert_allclose(y, 3.0 * x + 1.0, rtol=1e-6)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("qd profile:")]
    assert len(lines) == 1, lines
    m = re.fullmatch(r"qd profile: axpb \((\w+)\) first call ([\d.]+) ms = translate ([\d.]+) \(frontend ([\d.]+), "
                     r"hazards ([\d.]+), (?:emit|offline cache) ([\d.]+)\) \+ load ([\d.]+)(?: \((.*)\))? \+ launch ([\d.]+)", lines[0])
    assert m, lines[0]
    total, translate, frontend, hazards, emit, load = map(float, m.group(2, 3, 4, 5, 6, 7))
    assert frontend + hazards + emit <= translate + 0.3 and translate + load <= total + 0.2
    if m.group(1) == "vulkan":  # the backend's own stages, each with where its SPIR-V came from
        assert re.fullmatch(r"spirv [\d.]+ (compiled|from disk|in memory), pipeline [\d.]+", m.group(8)), m.group(8)

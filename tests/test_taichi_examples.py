"""Kernels spelled as Taichi's simulation examples spell them (our own, modelled on mpm88,
nbody, fractal and the data-oriented solvers), translated with only the import changed:
list and tuple literals as vectors, ``import transpiler.math as tm`` and its complex-number
functions, ``qd.static(qd.ndrange())`` and ``qd.static(qd.grouped(qd.ndrange()))`` unrolled,
Python-scope vectors and matrices read as kernel constants, ``@qd.func`` methods called as
``self.f()``, ``field.fill()`` in a kernel, nested ``qd.root.dense`` levels, ``qd.Struct.field``,
integer vectors among a field's indices, ``qd.randn()``, ``qd.svd`` and ``qd.polar_decompose``
of 2x2 and 3x3 matrices, an ``if`` on a module constant, and powers as Quadrants computes them. Each runs on Vulkan and the CPU executors against NumPy, and every kernel
compiles with every target's toolchain."""
import numpy as np
import pytest

import transpiler as qd
import transpiler.math as tm
from transpiler.math import vec2
from transpiler.toolchains import check_sources

from conftest import target_names

# ----------------------------------------------------------------------------- an MPM transfer

G = 16                                # grid cells per side
P = 96                                # particles
DX = 1.0 / G
DT = 1e-3
x = qd.Vector.field(2, qd.f32, shape=P)
v = qd.Vector.field(2, qd.f32, shape=P)
grid_v = qd.Vector.field(2, qd.f32, shape=(G, G))
grid_m = qd.field(qd.f32, shape=(G, G))
gravity = qd.Vector([0.0, -9.8])      # a Python-scope vector: a constant in the kernel
swap = qd.math.mat2([[0, 1], [1, 0]])


@qd.kernel
def particles_to_grid():
    for i, j in grid_m:
        grid_v[i, j] = [0, 0]
        grid_m[i, j] = 0
    for p in x:
        Xp = x[p] / DX
        base = int(Xp - 0.5)
        fx = Xp - base
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        for offset in qd.static(qd.grouped(qd.ndrange(3, 3))):
            weight = w[offset[0]][0] * w[offset[1]][1]
            grid_v[base + offset] += weight * v[p]
            grid_m[base + offset] += weight
    for i, j in grid_m:
        if grid_m[i, j] > 0:
            grid_v[i, j] = grid_v[i, j] / grid_m[i, j] + DT * gravity


def particles_to_grid_reference(xs: np.ndarray, vs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    gm = np.zeros((G, G))
    gv = np.zeros((G, G, 2))
    Xp = xs / DX
    base = (Xp - 0.5).astype(int)
    fx = Xp - base
    w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
    for a in range(3):
        for b in range(3):
            weight = w[a][:, 0] * w[b][:, 1]
            np.add.at(gm, (base[:, 0] + a, base[:, 1] + b), weight)
            np.add.at(gv, (base[:, 0] + a, base[:, 1] + b), weight[:, None] * vs)
    hit = gm > 0
    gv[hit] = gv[hit] / gm[hit][:, None] + DT * np.array([0.0, -9.8])
    return gm, gv


def test_an_mpm_transfer_with_list_weights_and_an_unrolled_grouped_ndrange(executor, rng):
    xs = (rng.random((P, 2)) * 0.6 + 0.2).astype(np.float32)
    vs = rng.standard_normal((P, 2)).astype(np.float32)
    x.from_numpy(xs)
    v.from_numpy(vs)
    particles_to_grid()
    gm, gv = particles_to_grid_reference(xs.astype(np.float64), vs.astype(np.float64))
    np.testing.assert_allclose(grid_m.to_numpy(), gm, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grid_v.to_numpy(), gv, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- literals as vectors

frames = qd.Matrix.field(2, 2, qd.f32, shape=P)
origin = qd.Vector.field(2, qd.f32, shape=())


@qd.kernel
def literals_as_vectors(shift: qd.f32):
    origin[None] = [0.5, 0.25]
    for p in v:
        v[p] = v[p] * 0.5 + [1, p]
        v[p] += [0.0, shift]
        if p % 3 == 0:
            v[p] = 2.0, -1.0
        frames[p] = [[1, p], [0, 2]]
        w = vec2(0.0, 0.0)
        w = [x[p][1], x[p][0]]
        x[p] = swap @ w - gravity * 0.5


def test_list_and_tuple_literals_stored_assigned_and_combined_as_vectors(executor, rng):
    xs = rng.standard_normal((P, 2)).astype(np.float32)
    vs = rng.standard_normal((P, 2)).astype(np.float32)
    x.from_numpy(xs)
    v.from_numpy(vs)
    literals_as_vectors(0.75)
    p = np.arange(P, dtype=np.float32)
    want_v = vs * 0.5 + np.stack([np.ones(P, np.float32), p], 1) + np.array([0.0, 0.75], np.float32)
    want_v[::3] = [2.0, -1.0]
    np.testing.assert_allclose(v.to_numpy(), want_v, rtol=1e-6)
    np.testing.assert_array_equal(frames.to_numpy()[:, 0, 1], p)
    np.testing.assert_array_equal(frames.to_numpy()[:, 1], np.tile([0.0, 2.0], (P, 1)))
    np.testing.assert_allclose(x.to_numpy(), xs + np.array([0.0, 4.9], np.float32), rtol=1e-6)
    np.testing.assert_array_equal(origin.to_numpy(), [0.5, 0.25])


# ----------------------------------------------------------------------------- complex numbers

@qd.kernel
def complex_ops(a: qd.types.ndarray(dtype=vec2, ndim=1), b: qd.types.ndarray(dtype=vec2, ndim=1),
                out: qd.types.ndarray(dtype=vec2, ndim=2), power: qd.f32):
    for i in range(a.shape[0]):
        out[i, 0] = tm.cmul(a[i], b[i])
        out[i, 1] = tm.cdiv(a[i], b[i])
        out[i, 2] = tm.cconj(a[i])
        out[i, 3] = tm.cinv(b[i])
        out[i, 4] = tm.cexp(a[i])
        out[i, 5] = tm.clog(b[i])
        out[i, 6] = tm.csqrt(a[i])
        out[i, 7] = tm.cpow(a[i], power)


def test_complex_functions_of_qd_math_against_numpy_complex(executor, rng):
    n = 300
    a = rng.standard_normal((n, 2)).astype(np.float32)
    b = rng.standard_normal((n, 2)).astype(np.float32)
    a[7] = 0.0  # csqrt and cpow of 0 are 0
    out = np.zeros((n, 8, 2), np.float32)
    complex_ops(a, b, out, 1.7)
    za, zb = a[:, 0] + 1j * a[:, 1].astype(np.float64), b[:, 0] + 1j * b[:, 1].astype(np.float64)
    with np.errstate(all="ignore"):
        want = [za * zb, za / zb, np.conj(za), 1 / zb, np.exp(za), np.log(zb), np.sqrt(za), za ** 1.7]
    for k, w in enumerate(want):
        got = out[:, k, 0] + 1j * out[:, k, 1]
        np.testing.assert_allclose(got, w, rtol=2e-4, atol=2e-4, err_msg=f"function {k}")


# ----------------------------------------------------------------------------- unrolled ndrange

heat = qd.field(qd.f32, shape=(G, G))
heat_out = qd.field(qd.f32, shape=(G, G))


@qd.kernel
def weighted_stencil():
    for i, j in heat:
        s = 0.0
        for a, b in qd.static(qd.ndrange(2, (1, 3))):
            s += (a + 1) * b * heat[(i + a) % G, (j + b) % G]
        for (c,) in qd.static(qd.ndrange(2)):
            s -= c * heat[i, j]
        heat_out[i, j] = s


def test_static_ndrange_unrolls_index_tuples(executor, rng):
    h = rng.standard_normal((G, G)).astype(np.float32)
    heat.from_numpy(h)
    weighted_stencil()
    want = sum((a + 1) * b * np.roll(np.roll(h, -a, 0), -b, 1) for a in range(2) for b in range(1, 3)) - h
    np.testing.assert_allclose(heat_out.to_numpy(), want, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- data-oriented methods

@qd.data_oriented
class Smoother:
    def __init__(self, n: int):
        self.n = n
        self.a = qd.field(qd.f32, shape=n)
        self.b = qd.field(qd.f32, shape=n)
        self.weights = qd.Vector([0.25, 0.5, 0.25])  # a Python-scope member: a constant

    @qd.func
    def at(self, i):
        return self.a[(i + self.n) % self.n]

    @qd.func
    def clear(self):
        for i in self.b:
            self.b[i] = 0.0

    @qd.kernel
    def smooth(self):
        self.clear()  # its loop is a task of the kernel, as in Quadrants
        for i in self.a:
            for k in qd.static(range(3)):
                self.b[i] += self.weights[k] * self.at(i + k - 1)


def test_func_methods_called_through_self(executor, rng):
    s = Smoother(40)
    a = rng.standard_normal(40).astype(np.float32)
    s.a.from_numpy(a)
    s.b.from_numpy(rng.standard_normal(40).astype(np.float32))  # cleared by self.clear()
    s.smooth()
    np.testing.assert_allclose(s.b.to_numpy(), 0.25 * np.roll(a, 1) + 0.5 * a + 0.25 * np.roll(a, -1),
                               rtol=1e-5, atol=1e-6)
    assert len(qd.translate(s.smooth, "cuda").manifest["entry_points"]) == 2


@qd.data_oriented
class Material:
    """Genesis' materials pick their update in Python: a bound @qd.func stored away."""

    def __init__(self, stiffness: float, linear: bool):
        self.stiffness = stiffness
        self.stress = self._stress_linear if linear else self._stress_cubic
        self.x = qd.field(qd.f32, shape=16)

    @qd.func
    def _stress_linear(self, e):
        return self.stiffness * e

    @qd.func
    def _stress_cubic(self, e):
        return self.stiffness * e * e * e

    @staticmethod
    @qd.func
    def strain(x):
        return x - 1.0

    @qd.kernel
    def update(self):
        for i in self.x:
            self.x[i] = self.stress(self.strain(self.x[i]))


def test_bound_funcs_stored_in_python_and_static_methods(executor, rng):
    xs = rng.standard_normal(16).astype(np.float32)
    linear, cubic = Material(3.0, True), Material(0.5, False)
    for m in (linear, cubic):
        m.x.from_numpy(xs)
        m.update()
    np.testing.assert_allclose(linear.x.to_numpy(), 3.0 * (xs - 1), rtol=1e-6)
    np.testing.assert_allclose(cubic.x.to_numpy(), 0.5 * (xs - 1) ** 3, rtol=1e-5)


@qd.data_oriented
class Stepper:
    def __init__(self):
        self.n = 2
        self.x = qd.ndarray(qd.i32, shape=(4,))

    @qd.kernel
    def step(self):
        for i in range(self.n):
            self.x[i] += 1


def test_a_changed_python_scalar_of_an_instance_is_read_by_the_next_call(executor):
    s = Stepper()
    s.x.from_numpy(np.zeros(4, np.int32))
    s.step()
    s.n = 4  # Quadrants recompiles for the new value; a stale translation would ignore it
    s.step()
    np.testing.assert_array_equal(s.x.to_numpy(), [2, 2, 1, 1])


stream_out = qd.field(qd.f32, shape=8)


@qd.kernel
def fill_tensor(x: qd.Tensor, flag: qd.template()):
    with qd.stream_parallel():  # its loops run in order here: one of the schedules streams allow
        for i in range(x.shape[0]):
            x[i] = i
        for i in range(8):
            stream_out[i] = 2 * i
    if qd.static(flag):
        for i in range(x.shape[0]):
            ...


@qd.kernel
def place_all(pos: qd.template(), k: qd.f32):
    for i in range(pos.shape[0]):
        pos[i] = qd.Vector([1.0, 2.0, k])


@qd.kernel
def halvings(out: qd.types.ndarray(dtype=qd.i32, ndim=1), first: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    first[0] = (seed := 2.5)  # an assignment expression, as poisson_disk_sampling writes one
    first[1] = seed * 2
    for i in range(out.shape[0]):
        n = i
        steps = 0
        while (half := n // 2) > 0:  # evaluated again before every iteration
            n = half
            steps += 1
        out[i] = steps


@qd.kernel
def does_nothing_visible(n: qd.i32):
    m = n
    m += 1


def test_docs_spellings_tensors_of_fields_streams_and_empty_kernels(executor):
    f = qd.field(qd.f32, shape=5)
    fill_tensor(f, False)  # a field for a qd.Tensor parameter
    np.testing.assert_array_equal(f.to_numpy(), np.arange(5, dtype=np.float32))
    a = np.zeros(6, np.float32)
    fill_tensor(a, True)
    np.testing.assert_array_equal(a, np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(stream_out.to_numpy(), 2 * np.arange(8, dtype=np.float32))
    pos = qd.ndarray(qd.math.vec3, shape=(5,))  # a qd.ndarray of vectors for a template parameter
    place_all(pos, 7.0)
    np.testing.assert_array_equal(pos.to_numpy(), np.tile([1.0, 2.0, 7.0], (5, 1)))
    out, first = np.zeros(40, np.int32), np.zeros(2, np.float32)
    halvings(out, first)
    np.testing.assert_array_equal(out, [max(int(k).bit_length() - 1, 0) for k in range(40)])
    np.testing.assert_array_equal(first, [2.5, 5.0])
    does_nothing_visible(3)  # translates to one empty task, as Quadrants runs it
    assert len(qd.translate(does_nothing_visible, "glsl").manifest["entry_points"]) == 1
    with pytest.raises(AttributeError, match="has no grad: create it with needs_grad=True"):
        qd.ndarray(qd.f32, shape=(4,)).grad
    with pytest.raises(AttributeError, match="has no grad: create it with needs_grad=True"):
        f.grad


# ----------------------------------------------------------------------------- indices, fill, powers

SHAPE = (4, 6)
cells = qd.field(qd.f32, shape=(2,) + SHAPE)
layers = qd.field(qd.f32)
qd.root.dense(qd.ij, (2, 2)).dense(qd.ij, (1, 3)).dense(qd.k, 5).place(layers)  # 2 x 6 x 5
total = qd.field(qd.f32)
qd.root.place(total)
bodies = qd.Struct.field({"pos": vec2, "mass": qd.f32}, shape=8)


@qd.func
def flipped(p):
    p[0] = -p[0]  # a component of a parameter: the caller's vector is not changed
    return p


@qd.kernel
def grid_programs(scale: qd.f32):
    cells.fill(scale)  # a task of its own, before the loop below
    for I in qd.grouped(qd.ndrange(*SHAPE)):
        cells[1, I] = cells[0, I] + (I / 4).norm() + pow(I[0], 2)
    layers.fill(0.5)
    for i, j, k in layers:
        layers[i, j, k] += i * 100 + j * 10 + k
    total[None] = 0
    for b in bodies:
        q = bodies[b].pos
        bodies[b].pos = flipped(q) + q
        bodies[b].mass = qd.pow(b, 2) + b ** 0.5
        qd.atomic_add(total[None], bodies[b].mass)


def test_vector_indices_fill_nested_dense_struct_fields_and_param_copies(executor, rng):
    pos = rng.standard_normal((8, 2)).astype(np.float32)
    bodies.pos.from_numpy(pos)
    grid_programs(2.0)
    i, j = np.meshgrid(np.arange(4), np.arange(6), indexing="ij")
    want = 2.0 + np.sqrt((i / 4) ** 2 + (j / 4) ** 2) + i ** 2
    np.testing.assert_allclose(cells.to_numpy()[1], want, rtol=1e-6)
    np.testing.assert_array_equal(cells.to_numpy()[0], np.full(SHAPE, 2.0, np.float32))
    i, j, k = np.meshgrid(np.arange(2), np.arange(6), np.arange(5), indexing="ij")
    np.testing.assert_array_equal(layers.to_numpy(), 0.5 + i * 100 + j * 10 + k)
    np.testing.assert_array_equal(bodies.pos.to_numpy(), np.stack([0 * pos[:, 0], 2 * pos[:, 1]], 1))
    b = np.arange(8, dtype=np.float32)
    mass = b ** 2 + np.sqrt(b)
    np.testing.assert_allclose(bodies.mass.to_numpy(), mass, rtol=1e-6)
    assert total[None] == pytest.approx(mass.sum(), rel=1e-5)


@qd.kernel
def powers(x: qd.types.ndarray(dtype=qd.f32, ndim=1), e: qd.types.ndarray(dtype=qd.i32, ndim=1),
           out: qd.types.ndarray(dtype=qd.f32, ndim=2), iout: qd.types.ndarray(dtype=qd.i32, ndim=2)):
    for i in range(x.shape[0]):
        v = x[i]
        out[i, 0] = v ** 2
        out[i, 1] = v ** 3
        out[i, 2] = v ** 7
        out[i, 3] = v ** -3
        out[i, 4] = v ** 0
        iout[i, 0] = (-1) ** e[i]
        iout[i, 1] = (i % 7 - 3) ** e[i]
        iout[i, 2] = 3 ** (e[i] % 5)


def test_powers_multiply_out_as_quadrants_does(executor, rng):
    x = rng.uniform(-3, 3, 500).astype(np.float32)
    e = rng.integers(-3, 12, 500).astype(np.int32)
    out = np.zeros((500, 5), np.float32)
    iout = np.zeros((500, 3), np.int32)
    powers(x, e, out, iout)
    x2 = x * x
    x4 = x2 * x2
    # By squaring, lowest bit first: exact float32 products, not pow()'s rounding.
    np.testing.assert_array_equal(out[:, 0], x2)
    np.testing.assert_array_equal(out[:, 1], x * x2)
    np.testing.assert_array_equal(out[:, 2], (x * x2) * x4)
    np.testing.assert_array_equal(out[:, 3], np.float32(1) / (x * x2))
    np.testing.assert_array_equal(out[:, 4], np.ones(500, np.float32))
    np.testing.assert_array_equal(iout[:, 0], np.where(e % 2 == 0, 1, -1))
    base = np.arange(500) % 7 - 3
    want = np.array([b ** k if k >= 0 else (b if abs(b) == 1 and k % 2 else (1 if abs(b) == 1 else 0))
                     for b, k in zip(base, e)])
    np.testing.assert_array_equal(iout[:, 1], want)
    np.testing.assert_array_equal(iout[:, 2], 3 ** (e % 5))


@pytest.mark.parametrize("dt", [qd.f32, qd.f64])
def test_randn_has_the_standard_normal_moments(executor, dt):
    n = 1 << 16

    @qd.kernel
    def draw(out: qd.types.ndarray(dtype=dt, ndim=1)):
        for i in range(out.shape[0]):
            out[i] = qd.randn(dt)

    out = np.zeros(n, dt.np_dtype)
    draw(out)
    assert np.isfinite(out).all()
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02
    assert abs(((out - out.mean()) ** 4).mean() / out.var() ** 2 - 3) < 0.15  # the normal's kurtosis
    assert abs((np.abs(out) < 1).mean() - 0.6827) < 0.01


# ----------------------------------------------------------------------------- levels, host helpers

LEVELS = 3
residual = [qd.field(qd.f32, shape=(G >> lv, G >> lv)) for lv in range(LEVELS)]  # one per level, as mgpcg keeps
RES = (G, G // 2)
OFFSETS = [qd.Vector([1, 0]), qd.Vector([0, 1])]
CELL = qd.math.sqrt(2.0) / G                      # Python-scope math, as the examples' module code does
ARCH = qd.vulkan if qd._lib.core.with_vulkan() else qd.cpu
ORIGIN = qd.Vector([0.5, 0.25])
ORIGIN.y = 0.75                                   # a Python-scope vector's components


@qd.kernel
def restrict(lv: qd.template()):
    for i, j in residual[lv + 1]:
        residual[lv + 1][i, j] = 0.25 * (residual[lv][2 * i, 2 * j] + residual[lv][2 * i + 1, 2 * j]
                                         + residual[lv][2 * i, 2 * j + 1] + residual[lv][2 * i + 1, 2 * j + 1])


@qd.kernel
def neighbours():
    qd.block_local(heat)  # a caching hint: no effect on results
    jitter = qd.random()  # drawn once, before the loop: every thread reads the same number
    for i, j in heat:
        acc = qd.zero(heat[i, j])
        for o in qd.static(OFFSETS):
            acc += heat[(i + o[0]) % G, (j + o[1]) % G]
        heat_out[i, j] = acc * CELL / qd.math.vec2(RES)[1] + ORIGIN.y * qd.one(acc) + jitter


def test_lists_of_fields_and_python_scope_helpers(executor, rng):
    fine = rng.standard_normal((G, G)).astype(np.float32)
    residual[0].from_numpy(fine)
    for lv in range(LEVELS - 1):
        restrict(lv)
    want = fine
    for lv in range(1, LEVELS):
        want = 0.25 * (want[0::2, 0::2] + want[1::2, 0::2] + want[0::2, 1::2] + want[1::2, 1::2])
        np.testing.assert_allclose(residual[lv].to_numpy(), want, rtol=1e-5, atol=1e-6)
    h = rng.standard_normal((G, G)).astype(np.float32)
    heat.from_numpy(h)
    neighbours()
    base = (np.roll(h, -1, 0) + np.roll(h, -1, 1)) * np.float32(np.sqrt(2.0) / G) / np.float32(G // 2) + 0.75
    jitter = heat_out.to_numpy() - base
    assert 0 <= jitter.mean() < 1 and np.ptp(jitter) < 1e-5
    assert ARCH == qd.vulkan and CELL == pytest.approx(np.sqrt(2) / G) and ORIGIN.x == 0.5


# ----------------------------------------------------------------------------- 2x2 decompositions

USE_FIXED_RANGE = 0  # a module constant: `if USE_FIXED_RANGE:` runs one branch, as in Python


@qd.kernel
def decompose(a: qd.types.ndarray(dtype=qd.math.mat2, ndim=1), u: qd.types.ndarray(dtype=qd.math.mat2, ndim=1),
              sig: qd.types.ndarray(dtype=qd.math.mat2, ndim=1), v: qd.types.ndarray(dtype=qd.math.mat2, ndim=1),
              r: qd.types.ndarray(dtype=qd.math.mat2, ndim=1), p: qd.types.ndarray(dtype=qd.math.mat2, ndim=1)):
    largest = 0.0
    for i in range(a.shape[0]):
        u[i], sig[i], v[i] = qd.svd(a[i])
        r[i], p[i] = qd.polar_decompose(a[i], qd.f32)
        if USE_FIXED_RANGE:
            largest = 1.0  # never lowered: a kernel variable assigned in a parallel loop
        qd.atomic_max(largest, sig[i][0, 0])


def test_svd_and_polar_decomposition_of_2x2_matrices(executor, rng):
    n = 400
    a = rng.standard_normal((n, 2, 2)).astype(np.float32)
    a[0], a[1], a[2] = 0.0, np.eye(2), [[1, 2], [2, 4]]  # zero, identity, singular
    u, sig, v, r, p = (np.zeros_like(a) for _ in range(5))
    decompose(a, u, sig, v, r, p)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(u @ sig @ np.swapaxes(v, 1, 2), a64, atol=2e-5)
    np.testing.assert_allclose(np.stack([sig[:, 0, 0], sig[:, 1, 1]], 1), np.linalg.svd(a64, compute_uv=False),
                               atol=2e-5)
    assert (sig[:, 0, 1] == 0).all() and (sig[:, 1, 0] == 0).all()
    eye = np.broadcast_to(np.eye(2), a.shape)
    np.testing.assert_allclose(u @ np.swapaxes(u, 1, 2), eye, atol=2e-5)
    np.testing.assert_allclose(v @ np.swapaxes(v, 1, 2), eye, atol=2e-5)
    np.testing.assert_allclose(r @ p, a64, atol=2e-5)
    np.testing.assert_allclose(r @ np.swapaxes(r, 1, 2), eye, atol=2e-5)
    np.testing.assert_allclose(p, np.swapaxes(p, 1, 2), atol=2e-5)
    np.testing.assert_array_equal(r[0], np.eye(2))  # the zero matrix: (I, 0)


# ----------------------------------------------------------------------------- the diagnostics

@qd.kernel
def ndrange_with_runtime_extent(n: qd.i32):
    for i, j in heat:
        for a, b in qd.static(qd.ndrange(n, 2)):
            heat[i, j] += a * b


def test_a_static_ndrange_needs_translation_time_extents():
    with pytest.raises(qd.TranspileError, match=r"qd.ndrange\(\) drives a for loop .* or is unrolled by "
                                                r"`qd.static\(qd.ndrange\(...\)\)` when its extents are known") as info:
        qd.translate(ndrange_with_runtime_extent, "cuda")
    assert info.value.loc.line == ndrange_with_runtime_extent.fn.__code__.co_firstlineno + 3


@qd.kernel
def shared_store():
    r = 0.0
    for i, j in heat:
        r = heat[i, j]
    heat[0, 0] = r


@qd.kernel
def uses_grad():
    for i, j in heat:
        heat[i, j] = heat.grad[i, j]


def test_diagnostics_name_what_the_user_wrote():
    tr = qd.translate(shared_store, "cuda", warn=False)  # Quadrants' shared variable: a race, warned of
    assert [w.loc.line for w in tr.warnings] == [shared_store.fn.__code__.co_firstlineno + 4]
    assert "every thread of this parallel loop stores into `r`" in str(tr.warnings[0])
    with pytest.raises(qd.TranspileError, match=r"qd.field.grad: this field has no grad: create it with "
                                                r"needs_grad=True \(a field of the same shape, which kernel.grad\(\), "
                                                r"qd.ad.Tape and kernels themselves read and write\)") as info:
        qd.translate(uses_grad, "cuda")
    assert info.value.loc.line == uses_grad.fn.__code__.co_firstlineno + 3


@qd.kernel
def assemble(weights: dict, n: qd.i32):
    for i in range(n):
        weights[i] += 1.0


def test_an_unsupported_annotation_is_refused_where_its_kernel_is_translated():
    # The module (here: this test file) imports, and its other kernels translate.
    with pytest.raises(qd.TranspileError, match=r"parameter `weights` has an unsupported annotation "
                                                r"<class 'dict'>") as info:
        qd.translate(assemble, "cuda")
    assert info.value.loc.line == assemble.fn.__code__.co_firstlineno + 1


def test_transpiler_submodules_import_as_quadrants_ones():
    import transpiler.types as tt
    from transpiler.math import cmul, vec3

    assert tm is qd.math and tt is qd.types and cmul is qd.math.cmul and vec3 is qd.math.vec3


@qd.kernel
def produce(src: qd.types.ndarray(dtype=qd.f32, ndim=1), dst: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(src.shape[0]):
        dst[i] = src[i] * 3.0


def test_streams_and_events_as_the_docs_use_them(executor, rng):
    a = rng.standard_normal(64).astype(np.float32)
    b, c = np.zeros_like(a), np.zeros_like(a)
    with qd.create_stream() as s2:
        s1 = qd.create_stream()
        produce(a, b, qd_stream=s1)
        e = qd.create_event()
        e.record(s1)
        e.wait(qd_stream=s2)
        produce(b, c, qd_stream=s2)       # reads what the first stream wrote: ordered by the event
        s2.synchronize()
        e.destroy()
        s1.destroy()
    np.testing.assert_array_equal(c, a * np.float32(3) * np.float32(3))
    with pytest.raises(RuntimeError, match="was destroyed"):
        produce(a, b, qd_stream=s1)
    with pytest.raises(TypeError, match="qd_stream= takes a stream made by qd.create_stream"):
        produce(a, b, qd_stream=3)


def symmetric_eigen_kernel(n: int):
    mat = qd.types.matrix(n, n, qd.f32)
    vec = qd.types.vector(n, qd.f32)

    @qd.kernel
    def eigen(a: qd.types.ndarray(dtype=mat, ndim=1), w: qd.types.ndarray(dtype=vec, ndim=1),
              q: qd.types.ndarray(dtype=mat, ndim=1), spd: qd.types.ndarray(dtype=mat, ndim=1)):
        for i in range(a.shape[0]):
            w[i], q[i] = qd.sym_eig(a[i])
            spd[i] = qd.make_spd(a[i])

    return eigen


EIGEN = {n: symmetric_eigen_kernel(n) for n in (2, 3, 6)}


@pytest.mark.parametrize("n", sorted(EIGEN))
def test_symmetric_eigendecomposition_and_the_nearest_spd_matrix(executor, rng, n):
    a = rng.standard_normal((40, n, n)).astype(np.float32)
    a = (a + a.transpose(0, 2, 1)) / 2
    w, q, spd = np.zeros((40, n), np.float32), np.zeros((40, n, n), np.float32), np.zeros((40, n, n), np.float32)
    EIGEN[n](a, w, q, spd)
    want_w, want_q = np.linalg.eigh(a.astype(np.float64))
    np.testing.assert_allclose(w, want_w, atol=2e-5 * n)                         # ascending, as NumPy's
    np.testing.assert_allclose(q @ np.swapaxes(q, 1, 2), np.broadcast_to(np.eye(n), q.shape), atol=1e-5)
    np.testing.assert_allclose(a @ q, q * w[:, None, :], atol=2e-5 * n)           # columns are eigenvectors
    clamped = (want_q * np.maximum(want_w, 0)[:, None, :]) @ np.swapaxes(want_q, 1, 2)
    np.testing.assert_allclose(spd, clamped, atol=5e-5 * n)


@qd.kernel
def eigen2(a: qd.types.ndarray(dtype=qd.math.mat2, ndim=1), w: qd.types.ndarray(dtype=qd.math.mat2, ndim=1),
           v: qd.types.ndarray(dtype=qd.types.matrix(4, 2, qd.f32), ndim=1)):
    for i in range(a.shape[0]):
        w[i], v[i] = qd.eig(a[i])


def test_eigenpairs_of_general_2x2_matrices_real_and_complex(executor, rng):
    a = rng.standard_normal((64, 2, 2)).astype(np.float32)
    w, v = np.zeros((64, 2, 2), np.float32), np.zeros((64, 4, 2), np.float32)
    eigen2(a, w, v)
    lam = w[:, :, 0] + 1j * w[:, :, 1]
    vec = v[:, 0::2, :] + 1j * v[:, 1::2, :]                       # (re, im) pairs -> complex, columns
    a64 = a.astype(np.float64)
    tr, det = np.trace(a64, axis1=1, axis2=2), np.linalg.det(a64)
    gap = tr ** 2 - 4 * det
    root = np.sqrt(np.abs(gap))
    want = np.where(gap > 0, [(tr + root) / 2, (tr - root) / 2], [tr / 2 + 0.5j * root, tr / 2 - 0.5j * root]).T
    np.testing.assert_allclose(lam, want, rtol=1e-4, atol=1e-5)    # Quadrants' order: larger real (or +imaginary) first
    assert (gap > 0).any() and (gap < 0).any()
    np.testing.assert_allclose(a64 @ vec, vec * lam[:, None, :], atol=2e-4)
    np.testing.assert_allclose(np.linalg.norm(vec, axis=1), 1.0, rtol=1e-5)


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("target", target_names())
def test_taichi_style_kernels_compile(target):
    for kernel, targs in ((particles_to_grid, {}), (literals_as_vectors, {}), (complex_ops, {}),
                          (weighted_stencil, {}), (Smoother(8).smooth, {}), (grid_programs, {}), (powers, {}),
                          (Material(1.0, False).update, {}), (restrict, {"lv": 1}), (neighbours, {}),
                          (does_nothing_visible, {}), (fill_tensor, {"x": stream_out, "flag": True}),
                          (halvings, {}), (spawn_tail, {}),
                          (decompose, {}), (decompose3, {}), (solve_small, {}), (EIGEN[3], {}), (eigen2, {})):
        tr = qd.translate(kernel, target, template_args=targs, warn=False)
        for verdict in check_sources(target, tr.sources, tr.manifest):
            assert verdict.ok, f"{verdict.tool} rejected {verdict.file}:\n{verdict.message}"


@qd.kernel
def solve_small(a2: qd.types.ndarray(dtype=qd.math.mat2, ndim=1), b2: qd.types.ndarray(dtype=qd.math.vec2, ndim=1),
                a3: qd.types.ndarray(dtype=qd.math.mat3, ndim=1), b3: qd.types.ndarray(dtype=qd.math.vec3, ndim=1)):
    for i in range(a2.shape[0]):
        b2[i] = qd.solve(a2[i], b2[i])
        b3[i] = qd.solve(a3[i], b3[i], qd.f32)


def test_solve_of_2x2_and_3x3_systems(executor, rng):
    n = 300
    a2, a3 = rng.standard_normal((n, 2, 2)).astype(np.float32), rng.standard_normal((n, 3, 3)).astype(np.float32)
    a3[0] = [[0, 1, 0], [0, 0, 1], [1, 0, 0]]  # a zero pivot: partial pivoting swaps rows
    b2, b3 = rng.standard_normal((n, 2)).astype(np.float32), rng.standard_normal((n, 3)).astype(np.float32)
    want2 = np.linalg.solve(a2.astype(np.float64), b2.astype(np.float64)[..., None])[..., 0]
    want3 = np.linalg.solve(a3.astype(np.float64), b3.astype(np.float64)[..., None])[..., 0]
    solve_small(a2, b2, a3, b3)
    well = (np.linalg.cond(a2) < 1e3)[:, None]
    np.testing.assert_allclose(np.where(well, b2, 0), np.where(well, want2, 0), rtol=1e-3, atol=1e-4)
    well = (np.linalg.cond(a3) < 1e3)[:, None]
    np.testing.assert_allclose(np.where(well, b3, 0), np.where(well, want3, 0), rtol=1e-3, atol=1e-4)
    np.testing.assert_array_equal(b3[0], want3[0].astype(np.float32))


@qd.kernel
def svd_of_4x4(a: qd.types.ndarray(dtype=qd.math.mat4, ndim=1)):
    for i in range(a.shape[0]):
        u, s, v = qd.svd(a[i])
        a[i] = u @ s @ v.transpose()


def test_an_svd_of_a_4x4_matrix_is_refused_where_it_is_called():
    with pytest.raises(qd.TranspileError, match=r"qd.svd\(\) takes a 2x2 or 3x3 matrix") as info:
        qd.translate(svd_of_4x4, "cuda")
    assert info.value.loc.line == svd_of_4x4.fn.__code__.co_firstlineno + 3


@qd.kernel
def decompose3(a: qd.types.ndarray(dtype=qd.math.mat3, ndim=1), u: qd.types.ndarray(dtype=qd.math.mat3, ndim=1),
               sig: qd.types.ndarray(dtype=qd.math.mat3, ndim=1), v: qd.types.ndarray(dtype=qd.math.mat3, ndim=1),
               r: qd.types.ndarray(dtype=qd.math.mat3, ndim=1), p: qd.types.ndarray(dtype=qd.math.mat3, ndim=1)):
    for i in range(a.shape[0]):
        u[i], sig[i], v[i] = qd.svd(a[i], qd.f32)
        r[i], p[i] = qd.polar_decompose(a[i])


def test_svd_and_polar_decomposition_of_3x3_matrices(executor, rng):
    n = 500
    a = rng.standard_normal((n, 3, 3)).astype(np.float32)
    a[0], a[1], a[2] = 0.0, np.eye(3), np.outer([1, 2, 3], [1, 0, 1])  # zero, identity, rank 1
    a[3] = np.diag([1.0, -2.0, 3.0])  # a reflection: det < 0
    u, sig, v, r, p = (np.zeros_like(a) for _ in range(5))
    decompose3(a, u, sig, v, r, p)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(u @ sig @ np.swapaxes(v, 1, 2), a64, atol=1e-5)
    s = np.stack([sig[:, 0, 0], sig[:, 1, 1], sig[:, 2, 2]], 1)
    np.testing.assert_allclose(np.abs(s), np.linalg.svd(a64, compute_uv=False), atol=1e-5)
    assert (sig * (1 - np.eye(3)) == 0).all() and (s[:, 0] >= s[:, 1]).all() and (s[:, 1] >= np.abs(s[:, 2])).all()
    # Quadrants' conventions: U and V rotations, det A's sign on the last singular value.
    np.testing.assert_allclose(np.linalg.det(u), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.det(v), 1.0, atol=1e-5)
    clear = np.abs(np.linalg.det(a64)) > 1e-3
    np.testing.assert_array_equal(np.sign(s[clear, 2]), np.sign(np.linalg.det(a64[clear])))
    np.testing.assert_allclose(r @ p, a64, atol=1e-5)
    np.testing.assert_allclose(r @ np.swapaxes(r, 1, 2), np.broadcast_to(np.eye(3), a.shape), atol=1e-5)
    np.testing.assert_allclose(p, np.swapaxes(p, 1, 2), atol=1e-5)


tail_x = qd.Vector.field(2, qd.f32, shape=64)
tail_count = qd.field(qd.i32, shape=())


@qd.kernel
def spawn_tail(sun: qd.math.vec2, scale: qd.f32):
    # Taichi's comet: `r` is computed at the top, then every thread assigns its own `r`
    # before reading it, and nothing reads it after the loop: each thread's own variable.
    r = tail_x[0] - sun
    n = int(scale / r.norm(1e-3) ** 2)
    for k in range(n):
        r = tail_x[0]
        r = r * 0.5 + qd.Vector([k, -k])
        slot = qd.atomic_add(tail_count[None], 1) % 63 + 1
        tail_x[slot] = r


def test_a_kernel_scope_name_reassigned_first_in_a_loop_is_the_threads_own(executor):
    tail_x.fill(0)
    tail_count[None] = 0
    tail_x[0] = [3.0, 4.0]
    spawn_tail(qd.math.vec2(0.0, 0.0), 255.0)    # |r|^2 = 25 (+ eps): 10 threads
    got = tail_x.to_numpy()
    assert tail_count[None] == 10
    spawned = sorted(map(tuple, got[1:11]))
    assert spawned == sorted((1.5 + k, 2.0 - k) for k in range(10))
    assert not got[11:].any()
    tr = qd.translate(spawn_tail, "cuda")
    assert "r_x" in next(iter(tr.sources.values()))

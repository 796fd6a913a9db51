"""Vectors, matrices and structs: every operation against NumPy on Vulkan and the CPU
executors (CUDA and HIP text), per dtype; ndarrays of vectors and matrices; atomics on
vector elements under contention; structs through functions and as parameters; the
diagnostics."""

import dataclasses

import numpy as np
import pytest

import transpiler as qd

from conftest import target_names

vec3 = qd.math.vec3
DTYPES = {"f32": (qd.f32, np.float32), "f64": (qd.f64, np.float64), "i32": (qd.i32, np.int32),
          "u32": (qd.u32, np.uint32)}


def make_elementwise(dt):
    v3 = qd.types.vector(3, dt)

    @qd.kernel
    def elementwise(a: qd.types.ndarray(dtype=v3, ndim=1), b: qd.types.ndarray(dtype=v3, ndim=1),
                    out: qd.types.ndarray(dtype=v3, ndim=2), cmp: qd.types.ndarray(dtype=qd.i32, ndim=2)):
        for i in range(a.shape[0]):
            x, y = a[i], b[i]
            out[i, 0] = x + y
            out[i, 1] = x * y - 2
            out[i, 2] = y // (x + 1)
            out[i, 3] = y % (x + 1)
            out[i, 4] = qd.max(x, y) + qd.min(x, 3)
            out[i, 5] = x * 2 + y.zyx
            w = x
            w += y
            w[0] = w[0] + 1
            w.z = w.y
            out[i, 6] = w
            c = x < y
            cmp[i, 0] = c.sum()
            cmp[i, 1] = (x == y).any()
            cmp[i, 2] = (x <= y).all()
            cmp[i, 3] = qd.cast(x.dot(y), qd.i32) % 1000

    return elementwise


@pytest.mark.parametrize("dt", list(DTYPES))
def test_elementwise_arithmetic_per_dtype(executor, rng, dt):
    qt, nt = DTYPES[dt]
    a = rng.integers(0, 20, (200, 3)).astype(nt)
    b = rng.integers(0, 20, (200, 3)).astype(nt)
    b[::7] = a[::7]
    out = np.zeros((200, 7, 3), nt)
    cmp = np.zeros((200, 4), np.int32)
    make_elementwise(qt)(a, b, out, cmp)
    np.testing.assert_array_equal(out[:, 0], a + b)
    np.testing.assert_array_equal(out[:, 1], a * b - nt(2))
    np.testing.assert_array_equal(out[:, 2], b // (a + nt(1)))
    np.testing.assert_array_equal(out[:, 3], b % (a + nt(1)))
    np.testing.assert_array_equal(out[:, 4], np.maximum(a, b) + np.minimum(a, nt(3)))
    np.testing.assert_array_equal(out[:, 5], a * nt(2) + b[:, ::-1])
    w = a + b
    w[:, 0] += 1
    w[:, 2] = w[:, 1]
    np.testing.assert_array_equal(out[:, 6], w)
    np.testing.assert_array_equal(cmp[:, 0], (a < b).sum(1))
    np.testing.assert_array_equal(cmp[:, 1], (a == b).any(1))
    np.testing.assert_array_equal(cmp[:, 2], (a <= b).all(1))
    np.testing.assert_array_equal(cmp[:, 3], (a * b).sum(1) % 1000)


@qd.kernel
def linalg(m: qd.types.ndarray(dtype=qd.math.mat3, ndim=1), v: qd.types.ndarray(dtype=vec3, ndim=1),
           mats: qd.types.ndarray(dtype=qd.math.mat3, ndim=2), vecs: qd.types.ndarray(dtype=vec3, ndim=2),
           s: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(m.shape[0]):
        a, x = m[i], v[i]
        mats[i, 0] = a @ a
        mats[i, 1] = a.transpose()
        mats[i, 2] = a.inverse()
        mats[i, 3] = x.outer_product(x)
        vecs[i, 0] = a @ x
        vecs[i, 1] = x.cross(vecs[i, 0])
        vecs[i, 2] = x.normalized()
        vecs[i, 3] = qd.math.reflect(x, qd.math.vec3(0.0, 1.0, 0.0))
        s[i, 0] = a.determinant()
        s[i, 1] = a.trace()
        s[i, 2] = x.norm()
        s[i, 3] = x.norm_sqr()
        s[i, 4] = x.max() - x.min() + x.sum()
        s[i, 5] = qd.math.length(x) + qd.math.distance(x, vecs[i, 0])
        s[i, 6] = qd.math.vec2(x.x, x.y).cross(qd.math.vec2(x.z, 1.0))
        s[i, 7] = qd.math.smoothstep(0.0, 1.0, x).sum() + qd.math.clamp(x, -0.5, 0.5).sum()
        m2 = qd.math.mat2([[a[0, 0], a[0, 1]], [a[1, 0], a[1, 1]]])
        s[i, 8] = m2.inverse()[0, 1] + qd.Matrix.identity(qd.f32, 4).determinant()


def test_linear_algebra_matches_numpy(executor, rng):
    n = 64
    m = rng.standard_normal((n, 3, 3)).astype(np.float32) + 3 * np.eye(3, dtype=np.float32)
    v = rng.standard_normal((n, 3)).astype(np.float32)
    mats = np.zeros((n, 4, 3, 3), np.float32)
    vecs = np.zeros((n, 4, 3), np.float32)
    s = np.zeros((n, 9), np.float32)
    linalg(m, v, mats, vecs, s)
    tol = dict(rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(mats[:, 0], m @ m, **tol)
    np.testing.assert_allclose(mats[:, 1], m.transpose(0, 2, 1), **tol)
    np.testing.assert_allclose(mats[:, 2], np.linalg.inv(m), **tol)
    np.testing.assert_allclose(mats[:, 3], v[:, :, None] * v[:, None, :], **tol)
    mv = np.einsum("nij,nj->ni", m, v)
    np.testing.assert_allclose(vecs[:, 0], mv, **tol)
    np.testing.assert_allclose(vecs[:, 1], np.cross(v, mv), **tol)
    np.testing.assert_allclose(vecs[:, 2], v / np.linalg.norm(v, axis=1, keepdims=True), **tol)
    refl = v.copy()
    refl[:, 1] *= -1
    np.testing.assert_allclose(vecs[:, 3], refl, **tol)
    norm = np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(s[:, 0], np.linalg.det(m), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(s[:, 1], np.trace(m, axis1=1, axis2=2), **tol)
    np.testing.assert_allclose(s[:, 2], norm, **tol)
    np.testing.assert_allclose(s[:, 3], norm ** 2, **tol)
    np.testing.assert_allclose(s[:, 4], v.max(1) - v.min(1) + v.sum(1), **tol)
    np.testing.assert_allclose(s[:, 5], norm + np.linalg.norm(v - mv, axis=1), **tol)
    np.testing.assert_allclose(s[:, 6], v[:, 0] * 1.0 - v[:, 1] * v[:, 2], **tol)
    t = np.clip(v, 0, 1)
    np.testing.assert_allclose(s[:, 7], (t * t * (3 - 2 * t)).sum(1) + np.clip(v, -0.5, 0.5).sum(1), **tol)
    inv2 = np.linalg.inv(m[:, :2, :2])
    np.testing.assert_allclose(s[:, 8], inv2[:, 0, 1] + 1.0, **tol)


@qd.kernel
def shapes(v2: qd.types.ndarray(dtype=qd.math.vec2, ndim=2), v4: qd.types.ndarray(dtype=qd.math.vec4, ndim=1),
           m3: qd.types.ndarray(dtype=qd.math.mat3, ndim=2), out: qd.types.ndarray(dtype=qd.math.vec4, ndim=2)):
    for i, j in v2:
        p = v2[i, j]
        out[i, j] = qd.math.vec4(p, p.yx) * v4[j].wzyx + m3[i, j][1, 2]
        m3[i, j][0] = qd.math.vec3(p.x)
        v2[i, j].y = 0.5


def test_ndarrays_of_vectors_and_matrices_1d_and_2d(executor, rng):
    v2 = rng.standard_normal((5, 6, 2)).astype(np.float32)
    v4 = rng.standard_normal((6, 4)).astype(np.float32)
    m3 = rng.standard_normal((5, 6, 3, 3)).astype(np.float32)
    out = np.zeros((5, 6, 4), np.float32)
    V2, M3 = v2.copy(), m3.copy()
    shapes(v2, v4, m3, out)
    want = np.concatenate([V2, V2[..., ::-1]], -1) * v4[None, :, ::-1] + M3[..., 1:2, 2]
    np.testing.assert_allclose(out, want, rtol=1e-6)
    M3[:, :, 0, :] = V2[..., 0:1]
    np.testing.assert_array_equal(m3, M3)
    V2[..., 1] = 0.5
    np.testing.assert_array_equal(v2, V2)


@qd.kernel
def scatter(points: qd.types.ndarray(dtype=vec3, ndim=1), cell: qd.types.ndarray(dtype=qd.i32, ndim=1),
            sums: qd.types.ndarray(dtype=vec3, ndim=1), peak: qd.types.ndarray(dtype=vec3, ndim=0),
            old: qd.types.ndarray(dtype=vec3, ndim=1)):
    for i in range(points.shape[0]):
        sums[cell[i]] += points[i]
        old[i] = qd.atomic_max(peak[None], points[i])  # one atomic per component, the old values back


def test_vector_atomics_under_contention(executor, rng):
    n = 4000
    points = rng.integers(-8, 8, (n, 3)).astype(np.float32)  # exact float sums in any order
    cell = rng.integers(0, 5, n).astype(np.int32)
    sums = np.zeros((5, 3), np.float32)
    peak = np.full(3, -100.0, np.float32)
    old = np.zeros((n, 3), np.float32)
    scatter(points, cell, sums, peak, old)
    want = np.zeros((5, 3), np.float32)
    np.add.at(want, cell, points)
    np.testing.assert_array_equal(sums, want)
    np.testing.assert_array_equal(peak, points.max(0))
    assert (old <= peak).all() and (old == -100.0).any(axis=0).all()  # someone saw the initial value


@qd.kernel
def kernel_scope_vectors(points: qd.types.ndarray(dtype=vec3, ndim=1)) -> qd.f32:
    total = qd.math.vec3(0.0)
    for i in range(points.shape[0]):
        total += points[i]  # a reduction per component
    return total.x + 10 * total.y + 100 * total.z


def test_a_vector_reduction_over_a_parallel_loop(executor, rng):
    points = rng.integers(-4, 5, (3000, 3)).astype(np.float32)
    s = points.sum(0)
    assert kernel_scope_vectors(points) == pytest.approx(s[0] + 10 * s[1] + 100 * s[2])


@qd.kernel
def dynamic_index(a: qd.types.ndarray(dtype=qd.math.vec4, ndim=1), out: qd.types.ndarray(dtype=qd.math.vec4, ndim=1)):
    for i in range(a.shape[0]):
        v = a[i]
        w = qd.math.vec4(0.0)
        for k in range(4):  # a run-time index: selects, and branches for the write
            w[3 - k] = v[k] * (k + 1)
        out[i] = w


def test_vectors_indexed_at_run_time(executor, rng):
    a = rng.standard_normal((50, 4)).astype(np.float32)
    out = np.zeros_like(a)
    dynamic_index(a, out)
    np.testing.assert_allclose(out, (a * np.arange(1, 5))[:, ::-1], rtol=1e-6)


Particle = qd.types.struct(pos=vec3, vel=vec3, mass=qd.f32)


@qd.dataclass
class Body:
    pos: vec3
    vel: vec3
    mass: qd.f32

    @qd.func
    def kinetic(self):
        return 0.5 * self.mass * self.vel.norm_sqr()

    @qd.func
    def push(self, force, dt):
        self.vel += force / self.mass * dt


@qd.func
def drift(p, dt):
    q = p
    q.pos += q.vel * dt
    return q


@dataclasses.dataclass(frozen=True)
class World:
    pos: qd.types.NDArray[vec3, 1]
    vel: qd.types.ndarray(dtype=vec3, ndim=1)
    mass: qd.types.NDArray[qd.f32, 1]


@qd.kernel
def step(world: World, gravity: vec3, dt: qd.f32, energy: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(world.pos.shape[0]):
        b = Body(pos=world.pos[i], vel=world.vel[i], mass=world.mass[i])
        b.push(gravity * b.mass, dt)
        p = drift(Particle(b.pos, b.vel, b.mass), dt)
        world.pos[i] = p.pos
        world.vel[i] = b.vel
        energy[i] = b.kinetic()


def test_structs_through_funcs_methods_and_parameters(executor, rng):
    n = 300
    pos = rng.random((n, 3)).astype(np.float32)
    vel = rng.standard_normal((n, 3)).astype(np.float32)
    mass = rng.random(n).astype(np.float32) + 0.5
    energy = np.zeros(n, np.float32)
    P, V = pos.copy(), vel.copy()
    g = np.array([0.0, -9.8, 0.0], np.float32)
    step(World(pos, vel, mass), g, 0.01, energy)
    v = V + g * 0.01
    np.testing.assert_allclose(vel, v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pos, P + v * 0.01, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(energy, 0.5 * mass * (v * v).sum(1), rtol=1e-5)


def test_struct_and_vector_parameters_are_their_scalars():
    tr = qd.translate(step, "cuda")
    names = [p["name"] for p in tr.manifest["params"]]
    assert names[:9] == ["world_pos", "world_vel", "world_mass", "gravity_x", "gravity_y", "gravity_z", "dt",
                         "energy"][:9] or names[:8] == ["world_pos", "world_vel", "world_mass", "gravity_x",
                                                        "gravity_y", "gravity_z", "dt", "energy"]
    pos = next(p for p in tr.manifest["params"] if p["name"] == "world_pos")
    assert pos["element_shape"] == [3] and pos["element_stride"] == 12 and pos["ndim"] == 1


@qd.real_func
def speed(v: vec3, scale: qd.f32) -> qd.f32:
    return v.norm() * scale


@qd.kernel
def real_func_vectors(vel: qd.types.ndarray(dtype=vec3, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(vel.shape[0]):
        out[i] = speed(vel[i], 2.0)


def test_a_real_function_takes_a_vector_as_its_scalars(executor, rng):
    vel = rng.standard_normal((40, 3)).astype(np.float32)
    out = np.zeros(40, np.float32)
    real_func_vectors(vel, out)
    np.testing.assert_allclose(out, 2 * np.linalg.norm(vel, axis=1), rtol=1e-5)
    text = next(iter(qd.translate(real_func_vectors, "cuda").sources.values()))
    assert "__device__ float speed(float v_x, float v_y, float v_z, float scale)" in text


@qd.kernel
def f64_vectors(a: qd.types.ndarray(dtype=qd.types.vector(3, qd.f64), ndim=1)):
    for i in range(a.shape[0]):
        a[i] = a[i] * 2.0


@qd.kernel
def printed():
    v = qd.Vector([1, 2, 3])
    print("v =", v, "m =", qd.Matrix([[1.5, 0.0], [0.0, 2.5]]))


def test_print_shows_vectors_and_matrices(capfd):
    from conftest import init_executor

    init_executor("cpu-cuda")
    printed()
    out = capfd.readouterr().out
    assert "v = [1, 2, 3] m = [[1.500000, 0.000000], [0.000000, 2.500000]]" in out


def _error(src: str, tmp_path, target: str = "cuda") -> str:
    import runpy

    path = tmp_path / "bad_vectors.py"
    path.write_text("import transpiler as qd\nvec3 = qd.math.vec3\n" + src)
    kernels = runpy.run_path(str(path))
    with pytest.raises(qd.TranspileError) as info:
        qd.translate(kernels["k"], target)
    return str(info.value)


@pytest.mark.parametrize("src,message,line", [
    ("@qd.kernel\ndef k(a: qd.types.ndarray(dtype=vec3, ndim=1)):\n    for i in range(4):\n"
     "        a[i] = a[i] + qd.math.vec2(1.0, 2.0)\n", "shape mismatch: a vector of 3 and a vector of 2", 6),
    ("@qd.kernel\ndef k(a: qd.types.ndarray(dtype=vec3, ndim=1)):\n    for i in range(4):\n"
     "        a[i] = qd.math.mat2(1.0) @ a[i]\n", "the inner sizes differ", 6),
    ("@qd.kernel\ndef k(a: qd.types.ndarray(dtype=vec3, ndim=1)):\n    for i in range(4):\n"
     "        a[i][0] = a[i][3]\n", "index 3 is out of range for a dimension of 3", 6),
    ("@qd.kernel\ndef k(a: qd.types.ndarray(dtype=vec3, ndim=1)):\n    for i in range(4):\n"
     "        if a[i] > 0.0:\n            a[i] = 1.0\n", "a vector or matrix is not a condition", 6),
    ("@qd.kernel\ndef k(a: qd.types.ndarray(dtype=vec3, ndim=1)):\n    for i in range(4):\n"
     "        a[i].w = 1.0\n", "`.w` is out of range for a vector of 3", 6),
    ("P = qd.types.struct(m=qd.f32)\n@qd.kernel\ndef k(a: qd.types.ndarray(dtype=qd.f32, ndim=1)):\n"
     "    for i in range(4):\n        a[i] = P(mass=1.0).m\n", "struct has no member `mass`", 7),
    ("@qd.kernel\ndef k(a: qd.types.ndarray(dtype=qd.f32, ndim=1)):\n    for i in range(4):\n"
     "        a[i] = vec3(1.0, 2.0)\n", "has 3 components, not 2", 6),
])
def test_vector_mistakes_are_located(tmp_path, src, message, line):
    err = _error(src, tmp_path)
    assert message in err and f"bad_vectors.py:{line}:" in err, err


def test_f64_vectors_are_refused_on_metal():
    with pytest.raises(qd.TranspileError, match="f64 is not supported on the msl target"):
        qd.translate(f64_vectors, "msl")
    assert qd.translate(f64_vectors, "glsl").sources


@qd.kernel
def centroid(points: qd.types.ndarray(dtype=vec3, ndim=1)) -> vec3:
    total = vec3(0.0)
    for i in range(points.shape[0]):
        total += points[i]
    return total / points.shape[0]


def test_a_kernel_returns_a_vector(executor, rng):
    points = rng.integers(-8, 9, (1000, 3)).astype(np.float32)
    got = centroid(points)
    assert isinstance(got, np.ndarray) and got.shape == (3,)
    np.testing.assert_allclose(got, points.mean(0), rtol=1e-5)
    tr = qd.translate(centroid, "glsl")
    assert tr.manifest["result"] == {"param": "qd_result", "dtype": "f32", "element_shape": [3]}


def test_the_header_reads_a_vector_result():
    from transpiler.header import render_header

    text = render_header(qd.translate(centroid, "cuda"))
    assert "using result_type = std::array<float, 3>;" in text and "returns 3 f32 (a vector or matrix" in text


@qd.kernel
def unrolled(a: qd.types.ndarray(dtype=qd.math.vec4, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(a.shape[0]):
        v = a[i]
        s = 0.0
        for k in qd.static(range(v.n)):
            s += v[k] * (k + 1)
        out[i] = s


NestedInner = qd.types.struct(lo=qd.f32, hi=qd.f32)
Nested = qd.types.struct(range=NestedInner, scale=qd.math.vec2)


@qd.kernel
def nested(a: qd.types.ndarray(dtype=qd.f32, ndim=1), cfg: Nested):
    for i in range(a.shape[0]):
        n = Nested(range=NestedInner(lo=cfg.range.lo, hi=cfg.range.hi), scale=cfg.scale)
        n.range.hi = n.range.hi * n.scale.y
        a[i] = qd.math.clamp(a[i], n.range.lo, n.range.hi) * n.scale[0]


def test_static_unrolling_and_nested_structs(executor, rng):
    a = rng.standard_normal((30, 4)).astype(np.float32)
    out = np.zeros(30, np.float32)
    unrolled(a, out)
    np.testing.assert_allclose(out, a @ np.arange(1, 5, dtype=np.float32), rtol=1e-5)
    b = rng.standard_normal(50).astype(np.float32)
    want = np.clip(b, -0.5, 0.25 * 2.0) * 3.0
    nested(b, {"range": {"lo": -0.5, "hi": 0.25}, "scale": np.array([3.0, 2.0], np.float32)})
    np.testing.assert_allclose(b, want, rtol=1e-6)


def make_linalg(dt):
    v3, m3 = qd.types.vector(3, dt), qd.types.matrix(3, 3, dt)

    @qd.kernel
    def typed_linalg(m: qd.types.ndarray(dtype=m3, ndim=1), v: qd.types.ndarray(dtype=v3, ndim=1),
                     mats: qd.types.ndarray(dtype=m3, ndim=2), vecs: qd.types.ndarray(dtype=v3, ndim=2),
                     s: qd.types.ndarray(dtype=dt, ndim=2)):
        for i in range(m.shape[0]):
            a, x = m[i], v[i]
            mats[i, 0] = a @ a.transpose()
            mats[i, 1] = x.outer_product(x) + qd.Matrix.identity(dt, 3)
            vecs[i, 0] = a @ x
            vecs[i, 1] = x.cross(vecs[i, 0])
            vecs[i, 2] = qd.max(x, a[0]) - qd.min(x, a[1])
            s[i, 0] = a.determinant()
            s[i, 1] = a.trace() + x.dot(a[2])
            s[i, 2] = x.sum() + x.max() + x.min()
            s[i, 3] = (x > a[0]).any() + 2 * (x >= a[1]).all()

    return typed_linalg


@pytest.mark.parametrize("dt", list(DTYPES))
def test_linear_algebra_per_dtype(executor, rng, dt):
    qt, nt = DTYPES[dt]
    n = 40
    m = rng.integers(0, 6, (n, 3, 3)).astype(nt)  # small non-negative ints: exact in every dtype
    v = rng.integers(0, 6, (n, 3)).astype(nt)
    mats = np.zeros((n, 2, 3, 3), nt)
    vecs = np.zeros((n, 3, 3), nt)
    s = np.zeros((n, 4), nt)
    make_linalg(qt)(m, v, mats, vecs, s)
    np.testing.assert_array_equal(mats[:, 0], m @ m.transpose(0, 2, 1))
    np.testing.assert_array_equal(mats[:, 1], v[:, :, None] * v[:, None, :] + np.eye(3, dtype=nt))
    mv = np.einsum("nij,nj->ni", m, v).astype(nt)
    np.testing.assert_array_equal(vecs[:, 0], mv)
    np.testing.assert_array_equal(vecs[:, 1], np.cross(v.astype(np.int64), mv.astype(np.int64)).astype(nt))
    np.testing.assert_array_equal(vecs[:, 2], np.maximum(v, m[:, 0]) - np.minimum(v, m[:, 1]))
    det = np.rint(np.linalg.det(m.astype(np.float64))).astype(np.int64).astype(nt)
    np.testing.assert_array_equal(s[:, 0], det)
    np.testing.assert_array_equal(s[:, 1], np.trace(m, axis1=1, axis2=2) + (v * m[:, 2]).sum(1))
    np.testing.assert_array_equal(s[:, 2], v.sum(1) + v.max(1) + v.min(1))
    np.testing.assert_array_equal(s[:, 3], (v > m[:, 0]).any(1) + 2 * (v >= m[:, 1]).all(1))


@qd.kernel
def factories(out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    a = qd.Vector.unit(3, 1, qd.f32) + qd.Vector.one(qd.f32, 3) * 2
    d = qd.Matrix.diag(2, 3.0)
    r = qd.Matrix.rows([qd.math.vec2(1.0, 2.0), qd.math.vec2(3.0, 4.0)])
    c = qd.Matrix.cols([qd.math.vec2(1.0, 2.0), qd.math.vec2(3.0, 4.0)])
    z = qd.Matrix.zero(qd.f32, 2, 3)
    out[0] = a[1]
    out[1] = d[1, 1] + d[0, 1]
    out[2] = r[0, 1]
    out[3] = c[0, 1]
    out[4] = z.sum() + z.n + z.m
    out[5] = qd.math.eye(3).trace()
    out[6] = qd.math.rotation2d(0.5)[1, 0]
    out[7] = qd.math.vdir(0.5).y + qd.math.fract(2.75) + qd.math.sign(-3.0) + qd.math.step(1.0, 2.0)


def test_vector_and_matrix_factories(executor):
    out = np.zeros(8, np.float32)
    factories(out)
    np.testing.assert_allclose(out, [3, 3, 2, 3, 5, 3, np.sin(0.5), np.sin(0.5) + 0.75 - 1 + 1], rtol=1e-6)


@qd.dataclass
class TileRow:
    r: qd.types.vector(8, qd.f32, unpacked=True)   # Quadrants' per-slot layout: ours already
    scale: qd.f32


@qd.kernel
def tile_rows(a: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(a.shape[0]):
        t = TileRow(scale=2.0)
        for j in qd.static(range(8)):
            t.r[j] = a[i, j] * t.scale
        for j in qd.static(range(8)):
            a[i, j] = t.r[7 - j]


def test_unpacked_vectors_of_dataclasses(executor, rng):
    a = rng.standard_normal((50, 8)).astype(np.float32)
    want = (a * 2)[:, ::-1]
    tile_rows(a)
    np.testing.assert_array_equal(a, want)


@qd.kernel
def raw_ops(a: qd.types.ndarray(dtype=qd.types.vector(3, qd.i32), ndim=1),
            out: qd.types.ndarray(dtype=qd.types.vector(3, qd.i32), ndim=2)):
    for i in range(a.shape[0]):
        out[i, 0] = qd.raw_div(a[i], 4)                          # C's truncating division, each component
        out[i, 1] = qd.raw_mod(a[i], qd.Vector([3, 5, 7]))


def test_raw_div_and_mod_of_vectors(executor, rng):
    a = rng.integers(-50, 50, (40, 3)).astype(np.int32)
    out = np.zeros((40, 2, 3), np.int32)
    raw_ops(a, out)
    np.testing.assert_array_equal(out[:, 0], np.trunc(a / 4).astype(np.int32))
    np.testing.assert_array_equal(out[:, 1], np.fmod(a, [3, 5, 7]))


@qd.kernel
def rows_and_dtypes(a: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.math.mat3, ndim=1)):
    qd.static_assert(a.dtype == qd.f32)
    for i in range(out.shape[0]):
        out[i] = qd.Matrix.rows([[1.0, 4.0, 7.0], qd.Vector([2.0, 5.0, 8.0]), [3.0, 6.0, a[i]]])
        out[i][0, 0] = qd.cast(i, a.dtype)


def test_matrix_rows_of_lists_and_an_arrays_dtype(executor):
    a = np.arange(4, dtype=np.float32) + 0.5
    out = np.zeros((4, 3, 3), np.float32)
    rows_and_dtypes(a, out)
    want = np.array([[1, 4, 7], [2, 5, 8], [3, 6, 0]], np.float32) + np.zeros((4, 1, 1), np.float32)
    want[:, 2, 2], want[:, 0, 0] = a, np.arange(4)
    np.testing.assert_array_equal(out, want)


@qd.kernel
def starred_components(a: qd.types.ndarray(dtype=qd.math.vec3, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(a.shape[0]):
        v = a[i]
        w = v * 2.0 - 1.0
        out[i, 0] = qd.min(*v, *w)                 # a vector's components as arguments
        out[i, 1] = qd.max(*v, 0.5)


def test_starred_vectors_as_arguments(executor, rng):
    a = rng.standard_normal((30, 3)).astype(np.float32)
    out = np.zeros((30, 2), np.float32)
    starred_components(a, out)
    np.testing.assert_array_equal(out[:, 0], np.minimum(a, a * 2 - 1).min(1))
    np.testing.assert_array_equal(out[:, 1], np.maximum(a.max(1), 0.5))


def test_calling_a_vector_or_matrix_indexes_it(executor, rng):
    # Taichi's old spelling, which Quadrants keeps: v(0) is v[0], m(i, j) is m[i, j]
    a = rng.standard_normal((8, 4)).astype(np.float32)
    out = np.zeros((8, 2), np.float32)

    @qd.kernel
    def k(a: qd.types.ndarray(dtype=qd.f32, ndim=2), out: qd.types.ndarray(dtype=qd.f32, ndim=2)):
        for i in range(a.shape[0]):
            d = qd.Vector([a[i, 0], a[i, 1]]) ** 2
            m = qd.Matrix([[a[i, 0], a[i, 1]], [a[i, 2], a[i, 3]]])
            out[i, 0] = d(0) + d(1)
            out[i, 1] = m(1, 0) - m(0, 1)

    k(a, out)
    np.testing.assert_allclose(out[:, 0], a[:, 0] ** 2 + a[:, 1] ** 2, rtol=1e-6)
    np.testing.assert_allclose(out[:, 1], a[:, 2] - a[:, 1], rtol=1e-6)


def test_parallel_loops_store_into_kernel_scope_variables_as_quadrants_shares_them(executor, rng):
    # Each thread writes its own component of a kernel-scope vector (Quadrants' shared value):
    # deterministic, and not warned of; a scalar every thread overwrites is warned of as a race.
    import warnings

    @qd.kernel
    def per_component() -> qd.types.vector(3, qd.i32):
        tmp = qd.Vector([1, 2, 3])
        for i in range(3):
            vec = qd.Vector([4, 5, 6])
            for j in range(3):
                vec[tmp[i] % 3] += vec[j]
            tmp[i] = vec[tmp[i] % 3]
        return tmp

    np.testing.assert_array_equal(per_component(), [24, 30, 19])  # Quadrants' result
    x = rng.random(64).astype(np.float32)
    x[rng.integers(0, 64)] = 2.0

    @qd.kernel
    def above(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.i32:
        found = 0
        where = -1
        for i in range(x.shape[0]):
            if x[i] > 1.5:
                found = 1  # the same value from every thread that stores: no warning
                where = i
        return found * 1000 + where

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert above(x) == 1000 + int(np.argmax(x))
    messages = [str(w.message) for w in caught if issubclass(w.category, qd.TranslationWarning)]
    assert len(messages) == 1 and "stores into `where`" in messages[0]


def test_an_element_component_stored_through_an_index_vector(executor):
    x = qd.Matrix.field(2, 3, dtype=qd.f32, shape=(4, 2))

    @qd.kernel
    def func():
        for i, j in qd.ndrange(4, 2):
            for I in qd.static(qd.grouped(qd.ndrange(2, 3))):
                x[i, j][I] = I[0] + I[1] * 10 + i + j * 4

    func()
    i, j, r, c = np.indices((4, 2, 2, 3))
    np.testing.assert_array_equal(x.to_numpy(), r + c * 10 + i + j * 4)


@qd.kernel
def rotate_cells(a: qd.types.ndarray(dtype=qd.math.mat2, ndim=1), k: qd.i32):
    for i in range(a.shape[0]):
        for j, l in qd.ndrange(2, 2):
            a[i][j, l] = a[i][l, j] * k + i


def test_a_matrix_element_type_takes_its_scalars_type_from_the_array(executor, rng):
    """As in Quadrants: `qd.math.mat2` elements of an i32 (or f64) array are i32 (f64) matrices."""
    for dtype in (np.int32, np.float64, np.float32):
        a = rng.integers(-50, 50, (7, 2, 2)).astype(dtype)
        want = a.copy()
        for j, l in ((0, 0), (0, 1), (1, 0), (1, 1)):  # in order: a later element reads an updated one
            want[:, j, l] = want[:, l, j] * 3 + np.arange(7)
        rotate_cells(a, 3)
        np.testing.assert_array_equal(a, want)
    with pytest.raises(TypeError, match=r"`a` holds elements of shape \(2, 2\)"):
        rotate_cells(np.zeros((7, 2, 3), np.float32), 1)


def test_python_scope_vectors_and_matrices_are_qd_matrix_values():
    v, w = qd.Vector([3, 4]), qd.Vector([5, -12])
    m = qd.Matrix([[1.0, 2.0], [3.0, 4.0]])
    assert isinstance(v, qd.Matrix) and isinstance(v, qd.Vector) and isinstance(np.cos(0) + v, qd.Matrix)
    assert isinstance(m, qd.Matrix) and not isinstance(m, qd.Vector) and not isinstance(np.ones(2), qd.Matrix)
    assert v.cross(w) == 3 * -12 - 4 * 5 and list(qd.Vector([1, 0, 0]).cross(qd.Vector([0, 1, 0]))) == [0, 0, 1]
    assert m.trace() == 5.0 and m.determinant() == pytest.approx(-2.0) and (m.n, m.m, v.n, v.m) == (2, 2, 2, 1)
    np.testing.assert_allclose(m.inverse() @ m, np.eye(2), atol=1e-12)
    np.testing.assert_array_equal(v.outer_product(w), np.outer([3, 4], [5, -12]))
    assert v.normalized().tolist() == [1 / 5 * 3, 1 / 5 * 4]  # (1 / |v|) * v, as Quadrants
    assert v.norm_inv() == 0.2 and m.frobenius_inner(m) == 30.0
    c = qd.Vector([1.5, 2.5]).cast(qd.i32)
    assert c.to_list() == [1, 2] and c.entries.dtype == np.int32 and c.get_shape() == (2,)
    s = qd.math.vec3(0, 1, 2)  # swizzles, read and written, in xyzw, rgba and stpq
    s.rgb += 1
    s.zyx += qd.math.vec3(10, 20, 30)
    assert s.tolist() == [31.0, 22.0, 13.0] and s.stp.tolist() == [31.0, 22.0, 13.0]
    assert qd.math.vec4(s.xy, s.zz).tolist() == [31.0, 22.0, 13.0, 13.0] and s.b == 13.0
    with pytest.raises(qd.TranspileError, match=r"vec2 only has attributes=\('x', 'y'\), got=\('x', 'y', 'z'\)"):
        qd.math.vec2(1, 2).xyz = [1, 2, 3]
    with pytest.raises(RuntimeError, match="value len does not match the swizzle pattern=xy"):
        qd.math.vec2(1, 2).xy = [1, 2, 3]
    with pytest.raises(ValueError, match=r"`.trace\(\)` expected a square matrix, got shape \(3, 2\)"):
        qd.Matrix([[0.1, 3.0], [5.0, 7.0], [1.0, 2.0]]).trace()  # (was the 2x2 diagonal's sum, 7.1)


@qd.kernel
def sizes_of(a: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    x = qd.Vector([a[0], 0])
    y = qd.Matrix([[1, 1, 1], [2, 2, 2], [3, 3, a[1]]])
    w = (a[0], a[1], 3, 4)
    for i in range(1):
        a[0] = len(x) * 100 + len(y) * 10 + len(w)  # a vector's size, a matrix's rows, a tuple's length


def test_len_of_vectors_matrices_and_tuples(executor):
    a = np.array([5, 6], np.int32)
    sizes_of(a)
    assert a[0] == 234


@qd.kernel
def reassign_from_own_components(a: qd.types.ndarray(dtype=qd.f32, ndim=2), out: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(a.shape[0]):
        uv = qd.math.vec2(a[i, 0], a[i, 1])
        uv = qd.math.vec2(-uv[1], uv[0])  # a rotation, as Taichi's laplace_equation writes it
        w = vec3(a[i, 0], a[i, 1], a[i, 2])
        w = w.zxy
        p = qd.math.vec2(a[i, 0], a[i, 1])
        p.xy = p.yx
        m = qd.Matrix([[a[i, 0], a[i, 1]], [a[i, 2], a[i, 3]]])
        m = m.transpose()
        r = vec3(a[i, 0], a[i, 1], a[i, 2])
        r = vec3(r[1], r[2], r[0])
        q = qd.math.vec2(a[i, 0], a[i, 1])
        q[0], q[1] = q[1], q[0]
        row = [uv[0], uv[1], w[0], w[1], w[2], p[0], p[1], m[0, 1], m[1, 0], r[0], r[1], r[2], q[0], q[1]]
        for k in qd.static(range(14)):
            out[i, k] = row[k]


def test_a_vector_assigned_from_its_own_components_reads_the_old_ones(executor, rng):
    """Components are assigned in order: one that reads a component assigned before it must
    read the old value, a plain `uv[0]` as much as `-uv[1]` (was: the new one)."""
    a = rng.uniform(-1, 1, (23, 4)).astype(np.float32)
    out = np.zeros((23, 14), np.float32)
    reassign_from_own_components(a, out)
    x, y, z, t = a.T
    np.testing.assert_array_equal(out, np.stack([-y, x, z, x, y, y, x, z, y, y, z, x, y, x], 1))


pairs = qd.Vector.field(2, qd.f32, shape=11)


@qd.kernel
def update_from_own_components(a: qd.types.ndarray(dtype=qd.f32, ndim=2), e: qd.types.ndarray(dtype=qd.math.vec2, ndim=1),
                               out: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(a.shape[0]):
        v = qd.math.vec2(a[i, 0], a[i, 1])
        v += v.yx
        m = qd.Matrix([[a[i, 0], a[i, 1]], [a[i, 2], a[i, 3]]])
        m += m.transpose()
        w = vec3(a[i, 0], a[i, 1], a[i, 2])
        w *= w.x  # a scalar read from the vector itself, for every component
        p = qd.math.vec2(a[i, 0], a[i, 1])
        p.xy -= p.yx
        e[i] += e[i].yx  # an ndarray element: atomics per component, each of the old values
        pairs[i] += pairs[i].yx
        q = vec3(a[i, 0], a[i, 1], a[i, 2])
        q.xy += [10.0, 20.0]  # lists, as vectors
        q += [100.0, 200.0, 300.0]
        row = [v[0], v[1], m[0, 1], m[1, 0], w[0], w[1], w[2], p[0], p[1], q[0], q[1], q[2]]
        for k in qd.static(range(12)):
            out[i, k] = row[k]


def test_a_vector_updated_by_its_own_components_reads_the_old_ones(executor, rng):
    a = rng.uniform(-1, 1, (11, 4)).astype(np.float32)
    e = rng.uniform(-1, 1, (11, 2)).astype(np.float32)
    f = rng.uniform(-1, 1, (11, 2)).astype(np.float32)
    e0 = e.copy()
    pairs.from_numpy(f)
    out = np.zeros((11, 12), np.float32)
    update_from_own_components(a, e, out)
    x, y, z, _ = a.T
    np.testing.assert_allclose(out, np.stack([x + y, y + x, y + z, z + y, x * x, y * x, z * x, x - y, y - x,
                                              x + 110, y + 220, z + 300], 1), rtol=1e-6)
    np.testing.assert_allclose(e, e0 + e0[:, ::-1], rtol=1e-6)
    np.testing.assert_allclose(pairs.to_numpy(), f + f[:, ::-1], rtol=1e-6)


Swap = qd.types.struct(a=qd.f32, b=qd.f32, v=qd.math.vec2)


@qd.kernel
def reassign_a_struct_from_its_members(a: qd.types.ndarray(dtype=qd.f32, ndim=2),
                                       out: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(a.shape[0]):
        s = Swap(a=a[i, 0], b=a[i, 1], v=qd.math.vec2(a[i, 2], a[i, 3]))
        s = Swap(a=s.b, b=s.a, v=qd.math.vec2(-s.v[1], s.v[0] + s.a))
        out[i, 0] = s.a
        out[i, 1] = s.b
        out[i, 2] = s.v[0]
        out[i, 3] = s.v[1]


def test_a_struct_assigned_from_its_own_members_reads_the_old_ones(executor, rng):
    a = rng.uniform(-1, 1, (19, 4)).astype(np.float32)
    out = np.zeros((19, 4), np.float32)
    reassign_a_struct_from_its_members(a, out)
    x, y, z, t = a.T
    np.testing.assert_allclose(out, np.stack([y, x, -t, z + x], 1), rtol=1e-6)


swaps = Swap.field(shape=16)


@qd.kernel
def swap_struct_field_members():
    for i in swaps:
        swaps[i] = Swap(a=swaps[i].b, b=swaps[i].a, v=qd.math.vec2(-swaps[i].v[1], swaps[i].v[0]))


def test_a_struct_field_element_assigned_from_itself_reads_the_old_members(executor, rng):
    d = {"a": rng.uniform(-1, 1, 16).astype(np.float32), "b": rng.uniform(-1, 1, 16).astype(np.float32),
         "v": rng.uniform(-1, 1, (16, 2)).astype(np.float32)}
    swaps.from_numpy(d)
    swap_struct_field_members()
    got = swaps.to_numpy()
    np.testing.assert_array_equal(got["a"], d["b"])
    np.testing.assert_array_equal(got["b"], d["a"])  # (was the new a: d["b"])
    np.testing.assert_array_equal(got["v"], np.stack([-d["v"][:, 1], d["v"][:, 0]], 1))


@qd.kernel
def reassign_a_kernel_scope_vector(a: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    v = qd.math.vec2(a[0], a[1])
    for i in range(1000):
        v[0] += 1.0  # updated by a parallel loop: atomic, as Quadrants makes it (was a racing load and store)
        v.y -= 0.5
    v = qd.math.vec2(-v[1], v[0])  # serial code, reading the buffer
    for i in range(1):
        out[0] = v[0]
        out[1] = v[1]


def test_a_kernel_scope_vector_assigned_from_its_own_components_reads_the_old_ones(executor, rng):
    a = rng.uniform(-1, 1, 2).astype(np.float32)
    out = np.zeros(2, np.float32)
    reassign_a_kernel_scope_vector(a, out)
    np.testing.assert_allclose(out, [-(a[1] - 500), a[0] + 1000], rtol=1e-5)


@pytest.mark.toolchain
@pytest.mark.parametrize("target", target_names())
def test_reassignment_from_own_components_compiles(target):
    from conftest import assert_compiles

    for kernel in (reassign_from_own_components, update_from_own_components, reassign_a_struct_from_its_members,
                   swap_struct_field_members, reassign_a_kernel_scope_vector):
        assert_compiles(target, qd.translate(kernel, target), kernel.__name__)


@qd.kernel
def update_two_components_by_three(out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(out.shape[0]):
        v = vec3(1.0, 2.0, 3.0)
        v.xy += vec3(1.0, 1.0, 1.0)
        out[i] = v[0]


def test_components_updated_by_a_vector_of_another_length_is_a_located_error():
    with pytest.raises(qd.TranspileError) as err:
        qd.translate(update_two_components_by_three, "cuda")
    line = update_two_components_by_three.fn.__code__.co_firstlineno + 4
    assert f"test_vectors.py:{line}:" in str(err.value) and "2 components cannot be updated by 3" in str(err.value)

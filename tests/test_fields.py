"""Fields (qd.field, vector/matrix/struct fields, qd.root placement, data-oriented classes)
on Vulkan and the CPU executors against NumPy, three Taichi-style programs written with
fields (every kernel also compiled by every toolchain), and the diagnostics."""
import dataclasses

import numpy as np
import pytest

import transpiler as qd
from transpiler.toolchains import check_sources

from conftest import target_names

N = 48
life = qd.field(qd.i32, shape=(N, N))
life_next = qd.field(qd.i32, shape=(N, N))


@qd.kernel
def life_step():
    for i, j in life:
        alive = 0
        for di in qd.static(range(-1, 2)):
            for dj in qd.static(range(-1, 2)):
                if qd.static(di != 0 or dj != 0):
                    alive += life[(i + di) % N, (j + dj) % N]
        life_next[i, j] = 1 if alive == 3 or (alive == 2 and life[i, j] == 1) else 0
    for i, j in life:
        life[i, j] = life_next[i, j]


def life_reference(board: np.ndarray) -> np.ndarray:
    alive = sum(np.roll(np.roll(board, di, 0), dj, 1) for di in (-1, 0, 1) for dj in (-1, 0, 1)
                if (di, dj) != (0, 0))
    return ((alive == 3) | ((alive == 2) & (board == 1))).astype(np.int32)


def test_game_of_life(executor, rng):
    board = (rng.random((N, N)) < 0.3).astype(np.int32)
    life.from_numpy(board)
    for _ in range(8):
        life_step()
        board = life_reference(board)
    np.testing.assert_array_equal(life.to_numpy(), board)


W = 40
u = qd.field(qd.f32, shape=(W, W))
u_prev = qd.field(qd.f32, shape=(W, W))
u_next = qd.field(qd.f32, shape=(W, W))


@qd.kernel
def wave_step(c2: qd.f32):
    for I in qd.grouped(u):
        i, j = I[0], I[1]
        if 0 < i < W - 1 and 0 < j < W - 1:
            lap = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[I]
            u_next[I] = 2.0 * u[I] - u_prev[I] + c2 * lap
        else:
            u_next[I] = 0.0
    for I in qd.grouped(u):
        u_prev[I] = u[I]
        u[I] = u_next[I]


def test_wave_solver(executor):
    x = np.linspace(-1, 1, W, dtype=np.float32)
    start = np.exp(-20 * (x[:, None] ** 2 + x[None, :] ** 2)).astype(np.float32)
    u.from_numpy(start)
    u_prev.from_numpy(start)
    a, b = start.astype(np.float64), start.astype(np.float64)
    for _ in range(10):
        wave_step(0.2)
        nxt = np.zeros_like(a)
        nxt[1:-1, 1:-1] = 2 * a[1:-1, 1:-1] - b[1:-1, 1:-1] + 0.2 * (
            a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] - 4 * a[1:-1, 1:-1])
        a, b = nxt, a
    np.testing.assert_allclose(u.to_numpy(), a, atol=1e-4)


Particle = qd.types.struct(x=qd.math.vec2, v=qd.math.vec2, m=qd.f32)
P, G = 600, 16
particles = Particle.field(shape=P)
grid_m = qd.field(qd.f32, shape=(G, G))
grid_v = qd.Vector.field(2, qd.f32, shape=(G, G))


@qd.kernel
def p2g(dx: qd.f32):
    for i, j in grid_m:
        grid_m[i, j] = 0.0
        grid_v[i, j] = qd.math.vec2(0.0)
    for p in particles:
        base = qd.cast(particles[p].x / dx - 0.5, qd.i32)
        fx = particles[p].x / dx - qd.cast(base, qd.f32)
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
        for a in qd.static(range(3)):
            for b in qd.static(range(3)):
                weight = w[a].x * w[b].y
                cell = base + qd.math.ivec2(a, b)
                grid_m[cell] += weight * particles[p].m
                grid_v[cell] += weight * particles[p].m * particles[p].v


def p2g_reference(x, v, m, dx):
    gm = np.zeros((G, G))
    gv = np.zeros((G, G, 2))
    base = (x / dx - 0.5).astype(np.int64)
    fx = x / dx - base
    w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
    for a in range(3):
        for b in range(3):
            weight = w[a][:, 0] * w[b][:, 1]
            cx, cy = base[:, 0] + a, base[:, 1] + b
            np.add.at(gm, (cx, cy), weight * m)
            np.add.at(gv, (cx, cy), (weight * m)[:, None] * v)
    return gm, gv


def test_particle_to_grid_with_struct_and_vector_fields(executor, rng):
    dx = 1.0 / G
    x = (rng.random((P, 2)) * 0.8 + 0.1).astype(np.float32)
    v = rng.standard_normal((P, 2)).astype(np.float32)
    m = (rng.random(P) + 0.5).astype(np.float32)
    particles.from_numpy({"x": x, "v": v, "m": m})
    p2g(dx)
    gm, gv = p2g_reference(x.astype(np.float64), v.astype(np.float64), m.astype(np.float64), dx)
    np.testing.assert_allclose(grid_m.to_numpy(), gm, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grid_v.to_numpy(), gv, rtol=1e-4, atol=1e-4)


counts = qd.field(qd.i32, shape=8)
tally = qd.field(qd.i32, shape=())
cube = qd.field(qd.f32)
qd.root.dense(qd.ijk, (4, 5, 6)).place(cube)
frames = qd.Matrix.field(2, 2, qd.f32, shape=5)


@qd.kernel
def histogram(values: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(values.shape[0]):
        counts[values[i] % 8] += 1
        qd.atomic_add(tally[None], 1)


@qd.kernel
def fill_cube():
    for i, j, k in cube:
        cube[i, j, k] = i * 100 + j * 10 + k
    for f in frames:
        frames[f] = qd.math.mat2([[f, 1.0], [0.0, f]]) @ qd.math.mat2([[1.0, f], [0.0, 1.0]])


@qd.kernel
def scaled_copy(src: qd.template(), dst: qd.template(), k: qd.f32):
    for I in qd.grouped(src):
        dst[I] = src[I] * k


def test_atomics_struct_for_in_3d_matrix_fields_and_template_fields(executor, rng):
    values = rng.integers(0, 1000, 5000).astype(np.int32)
    counts.fill(0)
    tally[None] = 0
    histogram(values)
    np.testing.assert_array_equal(counts.to_numpy(), np.bincount(values % 8, minlength=8))
    assert tally[None] == 5000
    fill_cube()
    i, j, k = np.meshgrid(np.arange(4), np.arange(5), np.arange(6), indexing="ij")
    np.testing.assert_array_equal(cube.to_numpy(), i * 100 + j * 10 + k)
    f = np.arange(5, dtype=np.float32)
    want = np.einsum("nij,njk->nik", np.stack([np.stack([f, np.ones(5)], 1), np.stack([0 * f, f], 1)], 1),
                     np.stack([np.stack([np.ones(5), f], 1), np.stack([0 * f, np.ones(5)], 1)], 1))
    np.testing.assert_allclose(frames.to_numpy(), want)
    a = qd.field(qd.f32, shape=(3, 4))
    b = qd.field(qd.f32, shape=(3, 4))
    a.from_numpy(rng.random((3, 4)).astype(np.float32))
    scaled_copy(a, b, 2.0)
    np.testing.assert_allclose(b.to_numpy(), a.to_numpy() * 2, rtol=1e-6)
    c = qd.field(qd.f32, shape=7)  # another field: another instantiation
    d = qd.field(qd.f32, shape=7)
    c.fill(1.5)
    scaled_copy(c, d, 3.0)
    assert (d.to_numpy() == 4.5).all()


@qd.data_oriented
class Diffusion:
    def __init__(self, n, rate):
        self.n = n
        self.rate = rate
        self.t = qd.field(qd.f32, shape=n)

    @qd.kernel
    def step(self):
        for i in self.t:
            if 0 < i < self.n - 1:
                self.t[i] += self.rate * (self.t[i - 1] + self.t[i + 1] - 2.0 * self.t[i])


def test_data_oriented_classes_with_two_instances(executor, rng):
    a, b = Diffusion(20, 0.0), Diffusion(30, 1.0)
    start_a, start_b = rng.random(20).astype(np.float32), rng.random(30).astype(np.float32)
    a.t.from_numpy(start_a)
    b.t.from_numpy(start_b)
    a.step()
    b.step()
    np.testing.assert_array_equal(a.t.to_numpy(), start_a)  # rate 0: unchanged
    assert not np.allclose(b.t.to_numpy(), start_b)  # the racy in-place update makes no exact reference
    assert qd.translate(a.step, "cuda").manifest["fields"][0]["shape"] == [20]
    assert qd.translate(b.step, "cuda").manifest["fields"][0]["shape"] == [30]


single = qd.field(qd.i32, shape=())
placed_single = qd.field(qd.f32)
qd.root.place(placed_single)


@qd.kernel
def singletons(k: qd.i32, box: qd.types.ndarray(dtype=qd.f32, ndim=0)):
    for I in qd.grouped(single):                # a 0-d field: one iteration, single[I] is single[None]
        single[I] = k * 3
    for I in qd.grouped(placed_single):
        placed_single[I] += 1.5
    for j in range(k):
        for I in qd.grouped(box):               # serial, inside a parallel loop
            qd.atomic_add(box[I], 1.0)


def test_grouped_loops_over_0d_fields_and_ndarrays(executor, rng):
    k = int(rng.integers(2, 9))
    placed_single[None] = 0.25
    box = qd.ndarray(qd.f32, shape=())
    box[None] = 0.5
    singletons(k, box)
    assert single[None] == 3 * k and placed_single[None] == 1.75 and box[None] == 0.5 + k


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("target", target_names())
def test_field_programs_compile(target):
    for kernel in (life_step, wave_step, p2g, histogram, fill_cube, singletons, diffuse_centred):
        tr = qd.translate(kernel, target, warn=False)
        for v in check_sources(target, tr.sources, tr.manifest):
            assert v.ok, f"{kernel.__name__}: {v.tool} rejected {v.file}:\n{v.message}"


def test_two_kernels_share_a_field_by_name():
    a = qd.translate(life_step, "glsl").manifest
    assert [f["name"] for f in a["fields"]] == ["life", "life_next"]
    assert a["fields"][0] == {"name": "life", "dtype": "i32", "shape": [N, N], "bytes": N * N * 4}
    text = next(iter(qd.translate(p2g, "cuda").sources.values()))
    assert "grid_m[" in text and "particles_m[" in text and "grid_m_shape" not in text


unplaced = qd.field(qd.f32)


@qd.kernel
def uses_unplaced():
    for i in range(4):
        unplaced[i] = 1.0


@qd.kernel
def out_of_range():
    for i in range(4):
        counts[8] = i


def test_field_mistakes_are_located():
    with pytest.raises(qd.TranspileError, match="field `unplaced` has no shape yet") as info:
        qd.translate(uses_unplaced, "cuda")
    assert info.value.loc.line == uses_unplaced.fn.__code__.co_firstlineno + 3
    with pytest.raises(qd.TranspileError, match=r"index 8 is out of range for dimension 0 of `counts` \(shape \(8,\)\)"):
        qd.translate(out_of_range, "cuda")
    with pytest.raises(AttributeError, match="quantized and hashed SNodes are not supported"):
        qd.root.quant_array(qd.i, 8, 32)


@qd.data_oriented
class Mixed:
    def __init__(self, n):
        self.n = n
        self.a = qd.tensor(qd.f32, shape=(n,), backend=qd.Backend.FIELD)
        self.b = qd.tensor(qd.f32, shape=(n,))  # the default backend: a qd.ndarray
        self.v = qd.math.vec3.field(shape=n)

    @qd.kernel
    def step(self, k: qd.f32):
        for i in range(self.n):
            self.a[i] += k
            self.b[i] += 2 * k
            self.v[i] = qd.math.vec3(self.a[i], self.b[i], i)


def test_data_oriented_members_fields_ndarrays_and_tensors(executor):
    m = Mixed(10)
    m.step(1.5)
    m.step(1.0)
    assert (m.a.to_numpy() == 2.5).all() and (m.b.to_numpy() == 5.0).all()
    np.testing.assert_array_equal(m.v.to_numpy(), np.stack([np.full(10, 2.5), np.full(10, 5.0), np.arange(10)], 1))
    assert isinstance(m.a, qd.lang.field.Field) and not isinstance(m.b, qd.lang.field.Field)


level = qd.field(qd.f32, shape=(6, 7))
level_sum = qd.field(qd.f32, shape=())


@qd.kernel
def raise_level(by: qd.f32):
    for i, j in level:
        level[i, j] += by * (i + 1)


@qd.kernel
def measure_level():
    level_sum[None] = 0.0
    for i, j in level:
        level_sum[None] += qd.volatile_load(level[i, j])


def test_two_kernels_share_fields_across_calls(executor):
    level.fill(0.0)
    raise_level(1.0)
    raise_level(0.5)
    measure_level()
    want = 1.5 * (np.arange(1, 7)[:, None] * np.ones(7)).sum()
    assert level_sum[None] == pytest.approx(want)
    level[2, 3] = 100.0  # the host writes between launches; the next kernel sees it
    measure_level()
    assert level_sum[None] == pytest.approx(want - 1.5 * 3 + 100.0)


def test_host_side_field_api_and_its_refusals():
    a = qd.field(qd.i32, shape=(2, 3))
    b = qd.field(qd.i32, shape=(2, 3))
    a.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3))
    b.copy_from(a)
    assert b[1, 2] == 5 and b.shape == (2, 3) and b.dtype == qd.i32
    v, m = qd.Vector.field(3, qd.f32, shape=4), qd.Matrix.field(2, 5, qd.f32, shape=4)
    assert (v.n, v.m, m.n, m.m) == (3, 1, 2, 5)
    nv = qd.Matrix.ndarray(2, 5, qd.i32, (2, 2))  # Quadrants': .dtype the scalar type, .element_type the matrix
    assert (nv.n, nv.m, nv.dtype, nv.element_type, nv.element_shape) == (2, 5, qd.i32, qd.types.matrix(2, 5, qd.i32),
                                                                           (2, 5))
    with pytest.raises(AttributeError, match="a scalar field or ndarray has no .n"):
        b.n
    with pytest.raises(ValueError, match="does not match the field's"):
        a.from_numpy(np.zeros(5, np.int32))
    nested, blocked, scalar = qd.field(qd.f32), qd.field(qd.f32), qd.field(qd.f32)
    qd.root.dense(qd.ij, (2, 3)).dense(qd.k, 4).place(nested)  # Quadrants' shape: each axis's extents multiplied
    qd.root.dense(qd.ij, 2).dense(qd.axes(1, 0), 4).place(blocked)  # qd.axes: the axes by number
    qd.root.place(scalar)
    assert nested.shape == (2, 3, 4) and blocked.shape == (8, 8) and scalar.shape == ()
    with pytest.raises(ValueError, match=r"qd.axes\(0, 4\): give distinct axis numbers from 0 to 3"):
        qd.axes(0, 4)
    small, tiny, pair = qd.field(qd.u8, shape=2), qd.ndarray(qd.i8, (2,)), qd.Vector.field(2, qd.u16, shape=())
    small[0], small[1], tiny[0], tiny[1], pair[None] = -128, 300, 200, -1, [-1, 70000]  # wrapped, as C stores them
    assert small.to_numpy().tolist() == [128, 44] and tiny.to_numpy().tolist() == [-56, -1]
    assert pair.to_numpy().tolist() == [65535, 4464]
    with pytest.raises(ValueError, match="one extent per axis"):
        qd.root.dense(qd.ij, (2, 3, 4))
    with pytest.raises(ValueError, match="must be a permutation of range\\(1\\)"):
        qd.tensor(qd.f32, (4,), layout=(1, 0))
    with pytest.raises(TypeError, match="the physical order is layout="):
        qd.tensor(qd.f32, (4, 5), order="ji")
    t = qd.tensor(qd.f32, (4, 5), layout=(1, 0))  # a hint no access can observe: stored row-major
    t[1, 2] = 3.0
    assert t.shape == (4, 5) and t.to_numpy()[1, 2] == 3.0
    vec, col = qd.Vector.field(3, qd.i32, shape=(4, 7)), qd.Matrix.field(4, 1, qd.f32, shape=5)
    vec.from_numpy(np.arange(84, dtype=np.int32).reshape(4, 7, 3, 1))  # n x 1 for a vector, as Quadrants takes it
    assert vec.to_numpy().shape == (4, 7, 3) and vec.to_numpy(keep_dims=True).shape == (4, 7, 3, 1)
    assert vec.to_numpy(dtype=qd.f32).dtype == np.float32 and vec[3, 6].tolist() == [81, 82, 83]
    assert col.to_numpy().shape == (5, 4) and col.to_numpy(keep_dims=True).shape == (5, 4, 1)
    vt, mt = qd.Vector.tensor(3, qd.f32, (4,), backend=qd.Backend.FIELD), qd.Matrix.tensor(2, 5, qd.i32, (3,))
    assert isinstance(vt, qd.lang.field.Field) and (vt.n, vt.shape) == (3, (4,)) and (mt.n, mt.m, mt.shape) == (2, 5, (3,))
    s = Particle.field(shape=3)
    s[1] = {"m": 2.0, "x": np.array([1.0, 2.0], np.float32)}
    assert s[1]["m"] == 2.0 and s.x.to_numpy()[1].tolist() == [1.0, 2.0] and s.to_numpy()["v"].shape == (3, 2)


@qd.data_oriented
class Holder:
    def __init__(self, x):
        self.x = x


@qd.data_oriented
class Outer:
    def __init__(self, inner):
        self.inner = inner


@dataclasses.dataclass(frozen=True)
class FrozenOuter:
    inner: Holder


@qd.kernel
def fill_member(s: qd.template(), base: qd.i32):
    for i in range(s.inner.x.shape[0]):
        s.inner.x[i] = base + i


def test_reassigned_ndarray_members_are_the_ones_a_call_binds(executor):
    # Quadrants binds a data-oriented instance's ndarray members at each call: a member
    # reassigned after a call (through a nested instance or a frozen dataclass) is the one
    # the next call writes.
    n = 5
    x1, x2, x3 = qd.ndarray(qd.i32, (n,)), qd.ndarray(qd.i32, (n,)), qd.ndarray(qd.f32, (n,))
    for outer in (Outer(Holder(x1)), FrozenOuter(Holder(x1))):
        outer.inner.x = x1
        x1.fill(0)
        x2.fill(0)
        fill_member(outer, 10)
        outer.inner.x = x2
        fill_member(outer, 20)
        np.testing.assert_array_equal(x1.to_numpy(), 10 + np.arange(n))
        np.testing.assert_array_equal(x2.to_numpy(), 20 + np.arange(n))
        outer.inner.x = x3  # another dtype: another instantiation
        fill_member(outer, 30)
        np.testing.assert_array_equal(x3.to_numpy(), 30 + np.arange(n, dtype=np.float32))
    holder = Holder(x1)
    fill_member(FrozenOuter(holder), 1)
    translations = len(fill_member.__dict__["_ir_cache"])
    fill_member(FrozenOuter(holder), 2)                  # an equal dataclass: the same translation
    assert len(fill_member.__dict__["_ir_cache"]) == translations
    np.testing.assert_array_equal(x1.to_numpy(), 2 + np.arange(n))
    with pytest.warns(DeprecationWarning, match="@qd.pure is deprecated"):
        pure_fill = qd.pure(fill_member)
    assert pure_fill is fill_member


lazy_x, lazy_count, lazy_v = qd.field(qd.f32), qd.field(qd.i32), qd.Vector.field(2, qd.f32)
qd.root.dense(qd.i, 8).place(lazy_x, lazy_count)
qd.root.dense(qd.i, 4).place(lazy_v)
qd.root.lazy_grad()  # Taichi's spelling: every float field placed so far gets its .grad


@qd.kernel
def seed_grads():
    for i in lazy_x:
        lazy_x.grad[i] = lazy_x[i] * 2.0
    for i in lazy_v:
        lazy_v.grad[i] = qd.Vector([i, -i])


def test_lazy_grad_gives_placed_float_fields_their_grad(executor, rng):
    x = rng.standard_normal(8).astype(np.float32)
    lazy_x.from_numpy(x)
    seed_grads()
    np.testing.assert_array_equal(lazy_x.grad.to_numpy(), x * 2)
    np.testing.assert_array_equal(lazy_v.grad.to_numpy(), np.stack([np.arange(4), -np.arange(4)], 1))
    with pytest.raises(AttributeError, match="has no grad"):
        lazy_count.grad  # an integer field has none, as in Quadrants


def test_a_field_named_like_a_later_scalar_parameter(executor):
    b = qd.field(qd.f32, shape=4)  # a field of the module named `b` ...
    y = qd.field(qd.f32, shape=4)

    @qd.kernel
    def combine(y: qd.template(), a: qd.f32, x: qd.template(), b: qd.f32):  # ... and a scalar `b`
        for i in y:
            y[i] = a * x[i] + b * y[i]

    b.from_numpy(np.arange(4, dtype=np.float32))
    y.fill(1.0)
    combine(y, 2.0, b, 0.5)
    np.testing.assert_array_equal(y.to_numpy(), 2.0 * np.arange(4) + 0.5)


# Fields indexed from an offset (qd.field(..., offset=...), place(x, offset=...)), as Taichi's
# examples centre a grid on 0: kernels, struct-for loops and Python scope all use the
# offset indices; the storage (to_numpy) holds the elements in order from the first.
heat = qd.field(qd.f32, shape=(12, 10), offset=(-6, 3))
heat_next = qd.field(qd.f32, shape=(12, 10), offset=(-6, 3))
tracer = qd.Vector.field(2, qd.f32, shape=7, offset=-3)
placed = qd.field(qd.i32)
qd.root.dense(qd.ij, (5, 4)).place(placed, offset=(100, -50))


@qd.kernel
def diffuse_centred(k: qd.f32):
    for i, j in heat:
        left = heat[max(i - 1, -6), j]
        right = heat[min(i + 1, 5), j]
        heat_next[i, j] = heat[i, j] + k * (left + right - 2.0 * heat[i, j]) + qd.f32(j)
    for I in qd.grouped(tracer):
        tracer[I] = [qd.f32(I[0]), heat[I[0], 3 + I[0] + 3]]
    for i, j in placed:
        placed[i, j] = i * 1000 + j
    heat_next[-6, 3] = -1.0


def test_fields_with_an_index_offset(executor, rng):
    h = rng.random((12, 10), dtype=np.float32)
    heat.from_numpy(h)
    diffuse_centred(0.25)
    left = np.concatenate([h[:1], h[:-1]])
    right = np.concatenate([h[1:], h[-1:]])
    want = h + np.float32(0.25) * (left + right - 2 * h) + np.arange(3, 13, dtype=np.float32)
    want[0, 0] = -1.0
    np.testing.assert_allclose(heat_next.to_numpy(), want, rtol=1e-6)
    assert heat_next[-6, 3] == -1.0 and heat_next[5, 12] == pytest.approx(want[11, 9])
    assert heat.offset == (-6, 3) and heat.shape == (12, 10)
    t = tracer.to_numpy()
    np.testing.assert_array_equal(t[:, 0], np.arange(-3, 4))
    np.testing.assert_allclose(t[:, 1], [h[k + 6, k + 3] for k in range(-3, 4)])
    ii, jj = np.meshgrid(np.arange(100, 105), np.arange(-50, -46), indexing="ij")
    np.testing.assert_array_equal(placed.to_numpy(), ii * 1000 + jj)
    assert placed[104, -47] == 104 * 1000 - 47
    with pytest.raises(IndexError, match=r"index 4 is out of range for dimension 0 of the field \(from -3 to 3\)"):
        tracer[4]
    text = next(iter(qd.translate(diffuse_centred, "cuda").sources.values()))
    assert "(i + 6) * 10" in text  # the offset taken off where the element is addressed


@qd.kernel
def offset_out_of_range():
    for i in range(4):
        heat[6, 3] = 1.0


def test_field_offset_mistakes():
    with pytest.raises(qd.TranspileError, match=r"index 6 is out of range for dimension 0 of `heat` \(from -6 to 5\)"):
        qd.translate(offset_out_of_range, "cuda")
    with pytest.raises(qd.TranspileError, match=r"The dimensionality of shape and offset must be the same \(1 != 2\)"):
        qd.field(qd.f32, shape=3, offset=(3, 4))
    with pytest.raises(qd.TranspileError, match="shape cannot be None when offset is set"):
        qd.Vector.field(3, qd.f32, shape=None, offset=(3,))
    with pytest.raises(ValueError, match="under a pointer, bitmasked or dynamic level is not supported yet"):
        qd.root.pointer(qd.i, 4).place(qd.field(qd.f32), offset=2)


def test_a_field_kernel_works_in_place_and_replays(executor, rng, monkeypatch):
    """A field's storage is the executor's memory where the host sees it (Vulkan's mapped
    memory: bound in place, nothing copied around a launch), and a kernel whose only own
    arguments are fields replays its last launch while each field keeps the storage that
    launch bound: Python-scope writes between calls are seen; storage made anew is not
    replayed over (the old one is gone)."""
    from transpiler.lang.field import reset_fields
    from transpiler.runtime import current

    backend = current()
    counts = {"replay": 0, "run": 0}
    for name in counts:
        def spy(*args, _name=name, _real=getattr(backend, name)):  # noqa: B008 - bound now, per name
            counts[_name] += 1
            return _real(*args)
        monkeypatch.setattr(backend, name, spy)
    n = 1000
    x = qd.field(qd.f32, shape=n)
    y = qd.Vector.field(2, qd.f32, shape=n)

    @qd.kernel
    def axpy(a: qd.f32):
        for i in x:
            y[i] += a * qd.math.vec2(x[i], 1.0)

    x0 = rng.random(n, dtype=np.float32)
    x.from_numpy(x0)
    for _ in range(3):
        axpy(np.float32(2.0))
    np.testing.assert_allclose(y.to_numpy(), np.stack([6 * x0, np.full(n, 6.0, np.float32)], 1), rtol=1e-6)
    assert counts == {"run": 1, "replay": 2}
    x[5] = 100.0  # written between calls, straight into the memory the replay binds
    axpy(np.float32(2.0))
    assert counts == {"run": 1, "replay": 3}
    assert y[5][0] == pytest.approx(8 * x0[5] + 200 - 2 * x0[5])
    axpy(np.float32(0.5))  # another scalar: a new launch
    assert counts["run"] == 2
    reset_fields()  # (what qd.reset() does to fields) new storage, zeros: not the old recording's
    x.from_numpy(x0)
    axpy(np.float32(0.5))
    assert counts["run"] == 3
    np.testing.assert_allclose(y.to_numpy(), np.stack([0.5 * x0, np.full(n, 0.5, np.float32)], 1), rtol=1e-6)


def test_a_field_too_large_to_allocate_says_which_and_why(executor):
    """A dynamic level holds its whole capacity here (Quadrants allocates chunks as they fill):
    one too large for the executor's memory is a MemoryError naming the field and the level,
    not the driver's bare out-of-memory code."""
    too_big = qd.field(qd.f32)
    level = qd.root.dense(qd.ij, (1 << 16, 1 << 16))
    level.dynamic(qd.k, 1 << 16, chunk_size=64).place(too_big)  # 1 PiB

    @qd.kernel
    def first(out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in range(1):
            out[i] = too_big[i, i, i]

    try:
        with pytest.raises(MemoryError) as err:
            first(np.zeros(1, np.float32))
        text = str(err.value)
        assert "allocate 1.00 PiB for an array" in text  # Vulkan's, or NumPy's on the CPU
        assert f"the field of shape {(1 << 16, 1 << 16, 1 << 16)} under qd.root.dynamic reserves its whole " \
               "capacity" in text
        small = qd.field(qd.i32, shape=5)  # the executor keeps working
        small.from_numpy(np.arange(5, dtype=np.int32))
        assert small.to_numpy().tolist() == [0, 1, 2, 3, 4]
    finally:  # taken off qd.root again: qd.deactivate_all_snodes() in a later test would allocate it
        qd.root.children.remove(level)

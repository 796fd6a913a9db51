"""Kernels spelled as the Genesis engine spells them (our own, modelled on its solvers and
geometry helpers): dataclasses of ndarrays handed to @qd.func helpers inside loops,
``qd.floor(x, qd.i32)`` to a grid cell, ``.fill()`` on a vector or matrix, ``field.n``,
``n, m = a.shape``, a loop iterator chosen by ``qd.static``, ``qd.math.isnan / isinf``, extents
from a NumPy array (``qd.ndrange(*res)``), ``qd.math``'s 4x4 transforms, @qd.func parameters
with defaults, ``qd.u1`` ndarrays, fields and dataclass members (NumPy's bools), slices of matrix
variables (``T[:3, :3]``, ``T[:3, 3] = t``), list comprehensions over translation-time ranges,
components of struct-field members (``cell[i].m[0, 2] = x``), and the host-side ``qd.Vector.ndarray``,
``qd.Layout`` and NumPy extents. Each runs on Vulkan and the CPU executors against NumPy; every kernel compiles with
every target's toolchain."""
import dataclasses

import numpy as np
import pytest

import transpiler as qd
from transpiler.toolchains import check_sources

from conftest import target_names

V3 = qd.types.ndarray(dtype=qd.math.vec3, ndim=1)
F1 = qd.types.ndarray(dtype=qd.f32, ndim=1)
I2 = qd.types.ndarray(dtype=qd.i32, ndim=2)
GRID_RES = np.array([6, 5], np.int32)  # Genesis keeps resolutions as NumPy arrays
CELL = 0.25


@dataclasses.dataclass(frozen=True)
class ParticleState:
    pos: V3
    vel: V3
    mass: F1


@qd.func
def push(i, state: ParticleState, dt, damping: qd.f32 = 0.5):
    state.vel[i] = state.vel[i] * damping
    state.pos[i] += dt * state.vel[i]


@qd.func
def to_cell(p):
    return qd.floor(p / CELL, qd.i32)


@qd.kernel
def step(state: ParticleState, counts: I2, dt: qd.f32, flags: qd.types.ndarray(dtype=qd.i32, ndim=2)):
    for i in range(state.pos.shape[0]):
        push(i, state, dt)  # the default damping
        cell = to_cell(state.pos[i])
        cell = qd.max(qd.min(cell, qd.Vector([GRID_RES[0] - 1, GRID_RES[1] - 1, 0])), 0)
        qd.atomic_add(counts[cell[0], cell[1]], 1)
        flags[i, 0] = qd.math.isnan(state.mass[i])
        flags[i, 1] = qd.math.isinf(state.mass[i])
    n, m = counts.shape
    for i, j in (qd.ndrange(*GRID_RES) if qd.static(GRID_RES[0] > 1) else qd.ndrange(1, 1)):
        if i == n - 1 and j == m - 1:
            counts[i, j] += 1000


def test_dataclass_state_through_funcs_cells_and_float_classes(executor, rng):
    n = 300
    pos = (rng.random((n, 3)) * 1.4).astype(np.float32)
    vel = rng.standard_normal((n, 3)).astype(np.float32)
    mass = rng.random(n).astype(np.float32)
    mass[3], mass[7], mass[11] = np.nan, np.inf, -np.inf
    state = ParticleState(pos.copy(), vel.copy(), mass)
    counts = np.zeros(tuple(GRID_RES), np.int32)
    flags = np.zeros((n, 2), np.int32)
    step(state, counts, 0.1, flags)
    want_vel = vel * np.float32(0.5)
    np.testing.assert_allclose(state.vel, want_vel, rtol=1e-6)  # written through the func's parameter
    np.testing.assert_allclose(state.pos, pos + np.float32(0.1) * want_vel, rtol=1e-6, atol=1e-7)
    cells = np.clip(np.floor(state.pos[:, :2] / CELL).astype(int), 0, GRID_RES - 1)
    want = np.zeros(tuple(GRID_RES), np.int32)
    np.add.at(want, (cells[:, 0], cells[:, 1]), 1)
    want[-1, -1] += 1000
    np.testing.assert_array_equal(counts, want)
    np.testing.assert_array_equal(flags[:, 0], np.isnan(mass))
    np.testing.assert_array_equal(flags[:, 1], np.isinf(mass))


HESS = qd.Matrix.field(3, 3, qd.f32, shape=8)
DPOS = qd.Vector.field(3, qd.f32, shape=8)


@qd.kernel
def clear_and_accumulate(w: F1):
    for i in HESS:
        HESS[i].fill(0.0)
        d = qd.Vector([1.0, 2.0, 3.0])
        d.fill(w[i])
        for k in qd.static(range(DPOS.n)):
            HESS[i][k, k] = d[k] * (k + 1)
        DPOS[i] = d


def test_fill_on_vectors_and_matrices_and_field_extents(executor, rng):
    HESS.from_numpy(rng.standard_normal((8, 3, 3)).astype(np.float32))
    w = rng.standard_normal(8).astype(np.float32)
    clear_and_accumulate(w)
    want = np.zeros((8, 3, 3), np.float32)
    for k in range(3):
        want[:, k, k] = w * (k + 1)
    np.testing.assert_array_equal(HESS.to_numpy(), want)
    np.testing.assert_array_equal(DPOS.to_numpy(), np.repeat(w[:, None], 3, 1))


@qd.kernel
def transforms(axis: V3, ang: F1, out: qd.types.ndarray(dtype=qd.math.mat4, ndim=2)):
    for i in range(ang.shape[0]):
        out[i, 0] = qd.math.rot_by_axis(axis[i], ang[i])
        out[i, 1] = qd.math.rot_yaw_pitch_roll(ang[i], axis[i][0], axis[i][1])
        out[i, 2] = qd.math.scale(axis[i][0], axis[i][1], axis[i][2]) @ qd.math.translate(1.0, 2.0, ang[i])


def rodrigues_rows(u: np.ndarray, a: float) -> np.ndarray:
    """The rotation by ``a`` about unit ``u`` as Quadrants lays it out: its transpose of the
    usual column convention (the rows are the images of the basis vectors)."""
    k = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    r = np.eye(3) + np.sin(a) * k + (1 - np.cos(a)) * (k @ k)
    out = np.eye(4)
    out[:3, :3] = r.T
    return out


def test_qd_math_transforms(executor, rng):
    n = 40
    axis = rng.standard_normal((n, 3)).astype(np.float32)
    ang = rng.uniform(-3, 3, n).astype(np.float32)
    out = np.zeros((n, 3, 4, 4), np.float32)
    transforms(axis, ang, out)
    for i in range(n):
        u = axis[i].astype(np.float64) / np.linalg.norm(axis[i])
        np.testing.assert_allclose(out[i, 0], rodrigues_rows(u, float(ang[i])), atol=2e-6)
        rotation = out[i, 1, :3, :3].astype(np.float64)
        np.testing.assert_allclose(rotation @ rotation.T, np.eye(3), atol=2e-6)
        np.testing.assert_allclose(np.linalg.det(rotation), 1.0, atol=2e-6)
        sx, sy, sz = axis[i]
        want = np.diag([sx, sy, sz, 1.0]) @ np.array([[1, 0, 0, 1], [0, 1, 0, 2], [0, 0, 1, ang[i]], [0, 0, 0, 1]])
        np.testing.assert_allclose(out[i, 2], want, rtol=1e-6, atol=1e-6)


B1 = qd.types.ndarray(dtype=qd.u1, ndim=1)  # Genesis' gs.qd_bool off Metal
awake = qd.field(qd.u1, shape=64)


@dataclasses.dataclass(frozen=True)
class LinkState:
    fixed: B1
    height: F1


@qd.kernel
def settle(links: LinkState, moved: B1, out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(links.height.shape[0]):
        if not links.fixed[i]:
            links.height[i] -= 1.0
        moved[i] = links.height[i] < 0.0 and not links.fixed[i]
        awake[i] = moved[i]
        out[i] = qd.cast(links.fixed[i], qd.i32) * 10 + moved[i]


def test_u1_ndarrays_fields_and_dataclass_members_as_numpy_bools(executor, rng):
    n = 64
    fixed = rng.random(n) < 0.3
    height = rng.uniform(0.0, 2.0, n).astype(np.float32)
    links = LinkState(fixed, height.copy())
    moved = np.zeros(n, bool)
    out = np.zeros(n, np.int32)
    settle(links, moved, out)
    want_h = np.where(fixed, height, height - 1)
    np.testing.assert_allclose(links.height, want_h, rtol=1e-6)
    want_moved = (want_h < 0) & ~fixed
    np.testing.assert_array_equal(moved, want_moved)
    np.testing.assert_array_equal(out, fixed * 10 + want_moved)
    assert awake.to_numpy().dtype == np.bool_
    np.testing.assert_array_equal(awake.to_numpy(), want_moved)
    manifest = qd.translate(settle, "cuda", arg_types={"links": LinkState}).manifest
    assert {p["name"]: p["dtype"] for p in manifest["params"]}["moved"] == "u8"  # a byte per bool, as NumPy's


CellType = qd.types.struct(v=qd.math.vec3, m=qd.math.mat3)
cells = CellType.field(shape=(np.int64(4), np.int32(2)), layout=qd.Layout.SOA)  # NumPy extents, as Genesis passes


@qd.kernel
def homogeneous(pose: qd.types.ndarray(dtype=qd.math.mat4, ndim=1), p: V3, out: V3):
    for i in range(p.shape[0]):
        T = pose[i]
        R = T[:3, :3]
        T[:3, 3] = T[:3, 3] * 2.0  # a slice of a matrix variable, written
        out[i] = R @ p[i] + T[:3, 3] + qd.Vector([T[r, r] for r in range(3)])
    for i, j in cells:
        cells[i, j].v[1] = i * 10.0 + j
        cells[i, j].m[0, 2] = -1.0
        cells[i, j].m[2] = [j for _ in range(3)]


def test_matrix_slices_comprehensions_and_struct_member_components(executor, rng):
    n = 50
    pose = rng.standard_normal((n, 4, 4)).astype(np.float32)
    p = rng.standard_normal((n, 3)).astype(np.float32)
    out = np.zeros((n, 3), np.float32)
    cells.v.fill(0.0)
    cells.m.fill(0.0)
    homogeneous(pose, p, out)
    want = np.einsum("nij,nj->ni", pose[:, :3, :3], p) + 2 * pose[:, :3, 3] + np.diagonal(pose[:, :3, :3], 0, 1, 2)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    i, j = np.meshgrid(np.arange(4), np.arange(2), indexing="ij")
    np.testing.assert_array_equal(cells.v.to_numpy()[..., 1], i * 10.0 + j)
    np.testing.assert_array_equal(cells.v.to_numpy()[..., 0], np.zeros((4, 2)))
    m = cells.m.to_numpy()
    np.testing.assert_array_equal(m[..., 0, 2], -np.ones((4, 2)))
    np.testing.assert_array_equal(m[..., 2, :], np.repeat(j[..., None], 3, -1))
    vecs = qd.Vector.ndarray(3, qd.f32, shape=5)
    mats = qd.Matrix.ndarray(2, 2, qd.f32, shape=(2, 3))
    assert vecs.to_numpy().shape == (5, 3) and mats.to_numpy().shape == (2, 3, 2, 2) and cells.shape == (4, 2)


USE_HIBERNATION = False


@qd.kernel
def bit_reduction(bits: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> qd.i32:
    flag = qd.i32(0)
    for i in range(bits.shape[0]):
        flag = qd.atomic_or(flag, bits[i])  # Genesis' spelling of an OR reduction
    return flag


@qd.kernel
def all_finite(x: F1) -> qd.i32:
    ok = True
    for i in range(x.shape[0]):
        if qd.math.isnan(x[i]):
            ok = False  # the same constant from every thread that writes
    return ok


@qd.kernel
def render_transforms(pos: V3, out: qd.types.ndarray(dtype=qd.f32, ndim=3), stacked: qd.types.ndarray(dtype=qd.f32,
                                                                                                         ndim=2)):
    for i in range(pos.shape[0]):
        for _ in (range(i) if qd.static(USE_HIBERNATION) else qd.static(range(1))):
            T = qd.math.translate(pos[i][0], pos[i][1], pos[i][2])
            for J in qd.static(qd.grouped(qd.ndrange(4, 4))):
                out[(i, *J)] = qd.cast(T[J], qd.f32)
        x = qd.Vector.zero(qd.f32, 6)
        for k in qd.static(range(2)):
            x[k * 3: k * 3 + 3] += pos[i] * (k + 1)
        for k in qd.static(range(6)):
            stacked[i, k] = x[k]


def test_flag_and_bit_reductions_starred_indices_and_vector_slice_updates(executor, rng):
    bits = rng.choice([0, 1, 4, 64, 1024], 5000).astype(np.int32)
    assert bit_reduction(bits) == np.bitwise_or.reduce(bits)
    x = rng.standard_normal(4000).astype(np.float32)
    assert all_finite(x) == 1
    x[1777] = np.nan
    assert all_finite(x) == 0
    pos = rng.standard_normal((20, 3)).astype(np.float32)
    out = np.zeros((20, 4, 4), np.float32)
    stacked = np.zeros((20, 6), np.float32)
    render_transforms(pos, out, stacked)
    want = np.broadcast_to(np.eye(4, dtype=np.float32), (20, 4, 4)).copy()
    want[:, :3, 3] = pos
    np.testing.assert_array_equal(out, want)
    np.testing.assert_allclose(stacked, np.concatenate([pos, 2 * pos], 1), rtol=1e-6)


@qd.kernel
def run_time_rows(rows: qd.types.ndarray(dtype=qd.i32, ndim=1), v: V3, out: qd.types.ndarray(dtype=qd.f32, ndim=3),
                  picked: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(rows.shape[0]):
        r = rows[i]
        m = qd.Matrix.zero(qd.f32, 3, 3)
        m[r, :] = v[i]            # a row chosen at run time, written through a slice
        m[:, (r + 1) % 3] += v[i]  # and a column, updated
        m[r, 1:] = m[r, 1:] * 2.0  # a partial row, read and written
        for a, b in qd.static(qd.ndrange(3, 3)):
            out[i, a, b] = m[a, b]
        w = m[:, r]
        for a in qd.static(range(3)):
            picked[i, a] = w[a]


def test_a_slice_beside_an_index_known_at_run_time(executor, rng):
    n = 40
    rows = rng.integers(0, 3, n).astype(np.int32)
    v = rng.standard_normal((n, 3)).astype(np.float32)
    out = np.zeros((n, 3, 3), np.float32)
    picked = np.zeros((n, 3), np.float32)
    run_time_rows(rows, v, out, picked)
    want = np.zeros((n, 3, 3), np.float32)
    for i, r in enumerate(rows):
        want[i, r, :] = v[i]
        want[i, :, (r + 1) % 3] += v[i]
        want[i, r, 1:] *= 2.0
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_allclose(picked, want[np.arange(n), :, rows], rtol=1e-6)


def test_a_run_time_row_slice_of_the_wrong_size_is_a_located_error():
    @qd.kernel
    def short_row(rows: qd.types.ndarray(dtype=qd.i32, ndim=1)):
        for i in range(rows.shape[0]):
            m = qd.Matrix.zero(qd.f32, 3, 3)
            m[rows[i], :] = qd.Vector([1.0, 2.0])
            rows[i] = qd.i32(m[0, 0])

    line = short_row.fn.__code__.co_firstlineno + 4
    with pytest.raises(qd.TranspileError) as err:
        qd.translate(short_row, "cuda")
    assert f"test_genesis_style.py:{line}:" in str(err.value)
    assert "a vector of 3 of `m` cannot hold a vector of 2" in str(err.value)


@qd.func
def add_at(field: qd.template(), I, value):
    field[I] = field[I] + value


@qd.func
def three_parts():
    return qd.Vector([1.0, 2.0, 3.0]), qd.Vector([4.0, 5.0, 6.0]), 7


@qd.func
def accumulate_row(a: qd.template(), i_b):
    qd.loop_config(serialize=True)  # before an inner loop: it changes nothing, as in Quadrants
    for i in range(a.shape[0]):
        a[i, i_b] += 1.0


@qd.kernel
def solver_step(grid: qd.types.ndarray(dtype=qd.f32, ndim=2), order: qd.types.ndarray(dtype=qd.i32, ndim=1),
                pick: qd.types.ndarray(dtype=qd.math.ivec3, ndim=2), col: F1):
    qd.loop_config(name="accumulate", parallelize=4, block_dim=64)
    for i_b in range(grid.shape[1]):
        accumulate_row(grid, i_b)
    for i, j in qd.ndrange(grid.shape[0], grid.shape[1]):
        add_at(grid, [i, j], 0.5)  # a list of indices as a @qd.func argument
    for i in range(order.shape[0]):
        j = order[i]
        v, _, _ = three_parts()  # `_` takes a vector, then an int
        order[i] = qd.cast(grid[(j, i) if i > j else (i, j)], qd.i32) + qd.cast(v[0], qd.i32) * 100
        pick[i, 0][j % 3] = 7  # a component picked at run time
        m = qd.Matrix([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
        c = m[:, j % 3]  # a column picked at run time
        col[i] = c[0] + 10 * c[2] + 1000 * (c @ c)  # `@` of two vectors: their dot product
    for I in qd.grouped(qd.ndrange(*pick.shape)):  # extents read at run time
        pick[I][2] += qd.raw_mod(I[0] - 3, 2) * 10 + qd.raw_div(I[0] - 3, 2)  # C's remainder and quotient


def test_genesis_solver_spellings(executor, rng):
    n = 6
    grid = rng.integers(0, 50, (n, n)).astype(np.float32)
    order = rng.integers(0, n, n).astype(np.int32)
    pick = np.zeros((n, 2, 3), np.int32)
    col = np.zeros(n, np.float32)
    want_grid = grid + 1.5
    i = np.arange(n)
    j = order.copy()
    want_order = np.where(i > j, want_grid[j, i], want_grid[i, j]).astype(np.int32) + 100
    solver_step(grid, order, pick, col)
    np.testing.assert_array_equal(grid, want_grid)
    np.testing.assert_array_equal(order, want_order)
    want_pick = np.zeros((n, 2, 3), np.int32)
    want_pick[i, 0, j % 3] = 7
    d = (np.arange(n) - 3)[:, None]
    want_pick[:, :, 2] += np.fmod(d, 2) * 10 + np.trunc(d / 2).astype(np.int32)
    np.testing.assert_array_equal(pick, want_pick)
    m = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    cols = m[:, j % 3]
    np.testing.assert_array_equal(col, cols[0] + 10 * cols[2] + 1000 * (cols * cols).sum(0))


@qd.kernel
def box_lines(lines: qd.types.ndarray(dtype=qd.types.vector(6, qd.f32), ndim=1), pts: V3):
    for i in range(pts.shape[0]):
        lines[i][0:3] = pts[i]  # slices of a vector element, as Genesis' box contact fills its lines
        lines[i][3:6] = pts[i] * 2.0
        lines[i][::5] += 1.0


def test_slices_of_vector_elements_written_and_updated(executor, rng):
    pts = rng.standard_normal((40, 3)).astype(np.float32)
    lines = np.zeros((40, 6), np.float32)
    box_lines(lines, pts)
    want = np.concatenate([pts, 2 * pts], 1)
    want[:, [0, 5]] += 1
    np.testing.assert_allclose(lines, want, rtol=1e-6)


@qd.perf_dispatch(get_geometry_hash=lambda a, b: a.shape[0], warmup=1, active=1, repeat_after_seconds=5)
def quantize(a, b) -> None:
    ...


@quantize.register(is_compatible=lambda a, b: a.shape[0] > 100)
@qd.kernel
def quantize_large(a: F1, b: qd.types.ndarray(dtype=qd.u32, ndim=1)):
    for i in range(a.shape[0]):
        b[i] = qd.floor(a[i] * 2.0, dtype=qd.u32)


@quantize.register
@qd.kernel
def quantize_any(a: F1, b: qd.types.ndarray(dtype=qd.u32, ndim=1)):
    for i in range(a.shape[0]):
        v = qd.floor(qd.Vector([a[i], a[i]]) * 2.0, dtype=qd.u32)
        b[i] = v[1] + 1  # (registrations compute the same by contract; this one differs so the test sees it ran)


def test_perf_dispatch_runs_the_first_compatible_registration(executor, rng):
    for n, extra in ((10, 1), (200, 0)):  # quantize_large is registered first, for more than 100 elements
        a = (rng.random(n) * 50).astype(np.float32)
        b = np.zeros(n, np.uint32)
        quantize(a, b)
        np.testing.assert_array_equal(b, np.floor(a * np.float32(2)).astype(np.uint32) + extra)


@qd.kernel
def factor(a: F1, decompose: qd.template()):
    if decompose:  # a template flag at the top level: the loop under it stays a parallel task
        qd.loop_config(block_dim=32)
        for i in range(a.shape[0]):
            a[i] = a[i] * 2.0
    else:
        for i in range(a.shape[0]):
            a[i] = -a[i]


def test_a_template_flag_at_the_top_level_keeps_its_loops_parallel(executor, rng):
    a = rng.standard_normal(300).astype(np.float32)
    want = a * 2
    factor(a, True)
    np.testing.assert_array_equal(a, want)
    entries = qd.translate(factor, "cuda", template_args={"decompose": True}).manifest["entry_points"]
    assert [(e["kind"], e["block_dim"]) for e in entries] == [("parallel", 32)]


# A BVH walk, as Genesis' raycaster hands LBVH.nodes (a field of structs) to bvh_ray_cast.
BvhNode = qd.types.struct(left=qd.i32, right=qd.i32, weight=qd.f32)
bvh_nodes = BvhNode.field(shape=(15,))


@qd.func
def leftmost_weight(nodes: qd.template(), start):
    k = start
    while nodes[k].left >= 0:
        k = nodes[k].left
    return nodes[k].weight


@qd.kernel
def walk_tree(nodes: qd.template(), out: F1):
    for i in range(out.shape[0]):
        out[i] = leftmost_weight(nodes, i) + nodes[i].weight


def test_a_field_of_structs_passed_on_to_a_func_template(executor, rng):
    left = np.array([2 * k + 1 if 2 * k + 1 < 15 else -1 for k in range(15)], np.int32)
    weight = rng.random(15).astype(np.float32)
    bvh_nodes.from_numpy({"left": left, "right": np.where(left >= 0, left + 1, -1).astype(np.int32),
                          "weight": weight})
    out = np.zeros(7, np.float32)
    walk_tree(bvh_nodes, out)
    want = []
    for i in range(7):
        k = i
        while left[k] >= 0:
            k = left[k]
        want.append(weight[k] + weight[i])
    np.testing.assert_allclose(out, np.array(want, np.float32), rtol=1e-6)


# Hand-written backward passes, as Genesis' MPM solver writes them: fields made with
# needs_grad=True, their .grad read and written like the fields themselves.
ParticleGrad = qd.types.struct(F=qd.math.mat2, mass=qd.f32, alive=qd.i32)
particles_ad = ParticleGrad.field(shape=(4, 32), needs_grad=True)
loss_ad = qd.field(qd.f32, shape=(), needs_grad=True)


@qd.kernel
def reset_grads(f: qd.i32):
    for p in range(particles_ad.shape[1]):
        particles_ad.grad[f, p].F = qd.Matrix.zero(qd.f32, 2, 2)
        particles_ad.grad[f, p].mass = 0.0


@qd.kernel
def backward_step(f: qd.i32):
    for p in range(particles_ad.shape[1]):
        if particles_ad[f, p].alive:
            # d(loss)/dF of loss = mass * trace(F^T F): 2 * mass * F
            particles_ad.grad[f, p].F += 2.0 * particles_ad[f, p].mass * particles_ad[f, p].F * loss_ad.grad[None]
            particles_ad.grad[f, p].mass += (particles_ad[f, p].F * particles_ad[f, p].F).sum() * loss_ad.grad[None]


def test_hand_written_backward_passes_through_grad_fields(executor, rng):
    F = rng.standard_normal((4, 32, 2, 2)).astype(np.float32)
    mass = rng.random((4, 32)).astype(np.float32) + 0.5
    alive = rng.integers(0, 2, (4, 32)).astype(np.int32)
    particles_ad.from_numpy({"F": F, "mass": mass, "alive": alive})
    particles_ad.grad.F.fill(7.0)
    loss_ad.grad[None] = 1.5
    reset_grads(1)
    backward_step(1)
    backward_step(1)
    gF = particles_ad.grad.F.to_numpy()
    gm = particles_ad.grad.mass.to_numpy()
    live = alive[1].astype(bool)
    want_F = np.where(live[:, None, None], 2 * (2 * mass[1][:, None, None] * F[1] * np.float32(1.5)), 0)
    want_m = np.where(live, 2 * (F[1] * F[1]).sum(axis=(1, 2)) * np.float32(1.5), 0)
    np.testing.assert_allclose(gF[1], want_F, rtol=1e-5)
    np.testing.assert_allclose(gm[1], want_m, rtol=1e-5)
    np.testing.assert_array_equal(gF[0], 7.0)                       # other frames untouched
    with pytest.raises(AttributeError, match="member `alive` is an integer: it has no grad"):
        particles_ad.grad.alive  # noqa: B018


@qd.kernel
def backward_scale(x: F1, y: F1, t: qd.Tensor):
    for i in range(x.shape[0]):
        x.grad[i] += 2.0 * x[i] * y.grad[i]
        t.grad[i] = y.grad[i]


def test_the_grad_of_ndarrays_and_tensors(executor, rng):
    x = qd.ndarray(qd.f32, shape=(40,), needs_grad=True)
    y = qd.ndarray(qd.f32, shape=(40,), needs_grad=True)
    t = qd.tensor(qd.f32, shape=(40,), backend=qd.Backend.FIELD, needs_grad=True)
    xs, gy = rng.standard_normal(40).astype(np.float32), rng.standard_normal(40).astype(np.float32)
    x.from_numpy(xs)
    y.grad.from_numpy(gy)
    backward_scale(x, y, t)
    backward_scale(x, y, t)
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * (2 * xs * gy), rtol=1e-6)
    np.testing.assert_array_equal(t.grad.to_numpy(), gy)
    entry = {p["name"]: p for p in qd.translate(backward_scale, "cuda", template_args={"t": t}).manifest["params"]}
    assert entry["x_grad"]["role"] == "grad" and entry["x_grad"]["of"] == "x"
    with pytest.raises(TypeError, match=r"the kernel uses `x.grad`: pass a qd.ndarray made with needs_grad=True"):
        backward_scale(np.zeros(40, np.float32), y, t)
    with pytest.raises(AttributeError, match="this ndarray has no grad: create it with needs_grad=True"):
        qd.ndarray(qd.f32, shape=(2,)).grad  # noqa: B018


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("target", target_names())
def test_genesis_style_kernels_compile(target):
    state_types = {"state": ParticleState}
    for kernel, types in ((step, state_types), (clear_and_accumulate, {}), (transforms, {}),
                          (settle, {"links": LinkState}), (homogeneous, {}), (bit_reduction, {}),
                          (all_finite, {}), (render_transforms, {}), (solver_step, {}), (box_lines, {}),
                          (run_time_rows, {})):
        tr = qd.translate(kernel, target, arg_types=types, warn=False)
        for verdict in check_sources(target, tr.sources, tr.manifest):
            assert verdict.ok, f"{verdict.tool} rejected {verdict.file}:\n{verdict.message}"
    grads = qd.tensor(qd.f32, shape=(40,), backend=qd.Backend.FIELD, needs_grad=True)
    for kernel, targs in ((reset_grads, {}), (backward_step, {}), (backward_scale, {"t": grads})):
        tr = qd.translate(kernel, target, template_args=targs, warn=False)
        for verdict in check_sources(target, tr.sources, tr.manifest):
            assert verdict.ok, f"{verdict.tool} rejected {verdict.file}:\n{verdict.message}"
    tr = qd.translate(walk_tree, target, template_args={"nodes": bvh_nodes}, warn=False)
    for verdict in check_sources(target, tr.sources, tr.manifest):
        assert verdict.ok, f"{verdict.tool} rejected {verdict.file}:\n{verdict.message}"


@dataclasses.dataclass
class TemplateMember:
    out: qd.Template                               # a field or an ndarray, fixed per instantiation
    src: qd.types.NDArray[qd.i32, 1]
    k: qd.i32


scaled_field = qd.field(qd.i32, shape=(16,))


@qd.kernel
def scale_into(p: TemplateMember):
    for i in range(p.src.shape[0]):
        p.out[i] = p.src[i] * p.k


def test_a_dataclass_member_annotated_template_takes_a_field_or_an_ndarray(executor, rng):
    src = rng.integers(-50, 50, 16).astype(np.int32)
    scale_into(TemplateMember(scaled_field, src, 3))
    np.testing.assert_array_equal(scaled_field.to_numpy(), src * 3)
    out = qd.ndarray(qd.i32, (16,))
    scale_into(TemplateMember(out, src, -2))
    np.testing.assert_array_equal(out.to_numpy(), src * -2)

"""Sparse fields, spelled as Quadrants' docs and Taichi's examples spell them (our own kernels,
modelled on taichi_sparse, taichi_bitmasked, mgpcg, comet and the dynamic-list examples):
pointer, bitmasked and dynamic levels, writes that activate, struct-for over active cells,
``qd.is_active`` / ``activate`` / ``deactivate`` / ``append`` / ``length`` /
``rescale_index``. Each runs on Vulkan and the CPU executors against a NumPy model of
Quadrants' behaviour (checked against Quadrants 1.3.3 on its CPU backend, the one that has
sparse levels), and every kernel compiles with every target's toolchain."""
import numpy as np
import pytest

import transpiler as qd
from transpiler.toolchains import check_sources

from conftest import target_names

# ----------------------------------------------------------------------------- pointer over dense

N = 32
B = 4                                       # elements per pointer cell along each axis
grid = qd.field(qd.f32)
blocks = qd.root.pointer(qd.ij, N // B)
blocks.dense(qd.ij, B).place(grid)


@qd.kernel
def splat(px: qd.types.ndarray(dtype=qd.i32, ndim=1), py: qd.types.ndarray(dtype=qd.i32, ndim=1),
          w: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for p in range(px.shape[0]):
        grid[px[p], py[p]] += w[p]          # an atomic that activates its cell


@qd.kernel
def double_active() -> qd.i32:
    n = 0
    for i, j in grid:                       # every element of every active cell
        grid[i, j] = grid[i, j] * 2.0 + 1.0
        n += 1
    return n


@qd.kernel
def active_block_ids(out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for bi, bj in blocks:                   # the active cells of the level, in its own index space
        out[bi * (N // B) + bj] = qd.is_active(blocks, [bi, bj]) * 10 + 1


@qd.kernel
def drop_rows(limit: qd.i32):
    for bi, bj in blocks:
        if bi < limit:
            qd.deactivate(blocks, [bi, bj])


def test_pointer_cells_activate_on_write_and_struct_for_visits_only_them(executor, rng):
    blocks.deactivate_all()
    k = 40
    px, py = rng.integers(0, N, k).astype(np.int32), rng.integers(0, N, k).astype(np.int32)
    w = rng.random(k).astype(np.float32) + 0.5
    splat(px, py, w)
    want = np.zeros((N, N), np.float32)
    np.add.at(want, (px, py), w)
    active = np.zeros((N // B, N // B), bool)
    active[px // B, py // B] = True
    np.testing.assert_allclose(grid.to_numpy(), want, rtol=1e-6)
    assert double_active() == active.sum() * B * B
    mask = np.repeat(np.repeat(active, B, 0), B, 1)
    want = np.where(mask, want * 2 + 1, 0)
    np.testing.assert_allclose(grid.to_numpy(), want, rtol=1e-6)
    ids = np.zeros((N // B) ** 2, np.int32)
    active_block_ids(ids)
    np.testing.assert_array_equal(ids, np.where(active.reshape(-1), 11, 0))
    drop_rows(4)                            # a deactivated pointer cell is zero-filled
    active[:4] = False
    mask = np.repeat(np.repeat(active, B, 0), B, 1)
    np.testing.assert_allclose(grid.to_numpy(), np.where(mask, want, 0), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(grid.storage())[~mask], 0)
    assert double_active() == active.sum() * B * B
    grid[0, 0] = 5.0                        # a host write activates too
    assert grid.to_numpy()[0, 0] == 5.0 and double_active() == (active.sum() + 1) * B * B


# ----------------------------------------------------------------------------- bitmasked

M = 64
img = qd.field(qd.i32)
pixels = qd.root.bitmasked(qd.ij, (M, M))
pixels.place(img)


@qd.kernel
def paint_rect(x0: qd.i32, y0: qd.i32, w: qd.i32, h: qd.i32, value: qd.i32):
    for i, j in qd.ndrange((x0, x0 + w), (y0, y0 + h)):
        img[i, j] = value + i - j


@qd.kernel
def sum_active() -> qd.i32:
    s = 0
    for i, j in img:
        s += img[i, j]
    return s


@qd.kernel
def clear_diagonal():
    for i in range(M):
        qd.deactivate(pixels, [i, i])


@qd.kernel
def read_back(i: qd.i32, j: qd.i32) -> qd.i32:
    return img[i, j] * 10 + qd.is_active(pixels, [i, j])


def test_bitmasked_cells_are_elements_and_keep_their_data_when_deactivated(executor, rng):
    qd.deactivate_all_snodes()
    x0, y0 = (int(v) for v in rng.integers(0, M // 2, 2))
    w, h = (int(v) for v in rng.integers(4, M // 2, 2))
    paint_rect(x0, y0, w, h, 7)
    want = np.zeros((M, M), np.int64)
    ii, jj = np.meshgrid(np.arange(M), np.arange(M), indexing="ij")
    inside = (ii >= x0) & (ii < x0 + w) & (jj >= y0) & (jj < y0 + h)
    want[inside] = (7 + ii - jj)[inside]
    assert sum_active() == want.sum()
    clear_diagonal()
    diag = inside & (ii == jj)
    assert sum_active() == want.sum() - want[diag].sum()
    np.testing.assert_array_equal(img.to_numpy(), np.where(diag, 0, want))  # inactive reads 0 on the host
    if diag.any():
        d = int(np.argmax(diag.reshape(-1)))
        i, j = divmod(d, M)
        assert read_back(i, j) == want[i, j] * 10     # a kernel still reads the old value, as in Quadrants
    i, j = np.argwhere(inside & ~diag)[0]
    assert read_back(int(i), int(j)) == want[i, j] * 10 + 1
    before = sum_active()
    for j in range(3):                       # host writes activate what they name, and only that
        img[M - 1, j] = 5
    assert sum_active() == before + 15 and read_back(M - 1, 3) == 0


# ----------------------------------------------------------------------------- dynamic lists

L = 8                                        # lists
CAP = 16
items = qd.field(qd.i32)
lists = qd.root.dense(qd.i, L).dynamic(qd.j, CAP, chunk_size=4)
lists.place(items)
Edge = qd.types.struct(a=qd.math.vec2, b=qd.math.vec2)
edges = Edge.field()
qd.root.dynamic(qd.i, 64, chunk_size=8).place(edges)


@qd.kernel
def bucket(values: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for p in range(values.shape[0]):
        qd.append(items.parent(), values[p] % L, values[p])


@qd.kernel
def lengths(out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for b in range(L):
        out[b] = qd.length(items.parent(), b)


@qd.kernel
def list_sums(out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for b, k in items:                        # the elements below each list's length
        qd.atomic_add(out[b], items[b, k])


@qd.kernel
def drop_list(b: qd.i32):
    qd.deactivate(lists, [b])


@qd.kernel
def march(n: qd.i32) -> qd.i32:               # Taichi's methods of a dynamic field
    edges.deactivate()
    for k in range(n):
        if k % 3 != 0:
            edges.append(Edge(qd.math.vec2(k, 0), (0.5 * k, 1.0)))
    return edges.length()


@qd.kernel
def edge_sum() -> qd.f32:
    s = 0.0
    for k in range(edges.length()):
        s += edges[k].a.x + edges[k].b.x * 10.0 + edges[k].b.y
    return s


def test_dynamic_lists_append_in_parallel_and_struct_for_stops_at_each_length(executor, rng):
    qd.deactivate_all_snodes()
    values = rng.integers(0, 1000, 100).astype(np.int32)
    bucket(values)
    got = np.zeros(L, np.int32)
    lengths(got)
    counts = np.bincount(values % L, minlength=L)
    np.testing.assert_array_equal(got, counts)          # the count goes on past the capacity
    kept = np.minimum(counts, CAP)
    sums = np.zeros(L, np.int32)
    list_sums(sums)
    stored = items.to_numpy()
    for b in range(L):                                  # which values won the slots depends on timing
        row = stored[b, :kept[b]]
        assert sorted(set(row.tolist()) - set(values[values % L == b].tolist())) == []
        assert np.all(stored[b, kept[b]:] == 0) and sums[b] == row.sum()
    drop_list(3)
    lengths(got)
    assert got[3] == 0 and np.all(items.to_numpy()[3] == 0) and np.all(np.asarray(items.storage())[3] == 0)
    n = int(rng.integers(10, 40))
    ks = [k for k in range(n) if k % 3 != 0]
    assert march(n) == len(ks)
    assert edge_sum() == pytest.approx(sum(k + 5.0 * k + 1.0 for k in ks), rel=1e-6)
    assert march(4) == 2                                # deactivate() empties the list first


# ----------------------------------------------------------------------------- a pointer tree, rescaled

S = 64
cells = qd.field(qd.f32)
level1 = qd.root.pointer(qd.ij, S // 16)
level2 = level1.pointer(qd.ij, 4)
level2.dense(qd.ij, 4).place(cells)


@qd.kernel
def disk(cx: qd.f32, cy: qd.f32, r: qd.f32):
    for i, j in qd.ndrange(S, S):
        if (i - cx) ** 2 + (j - cy) ** 2 < r * r:
            cells[i, j] = 1.0


@qd.kernel
def depth_map(out: qd.types.ndarray(dtype=qd.i32, ndim=2)):
    for i, j in qd.ndrange(S, S):
        i1 = qd.rescale_index(cells, level1, [i, j])
        i2 = qd.rescale_index(cells, level2, qd.Vector([i, j]))
        out[i, j] = qd.is_active(level1, i1) + qd.is_active(level2, i2) + qd.is_active(level2, [i // 4, j // 4])


def test_nested_pointers_rescale_indices_and_deactivate_all(executor, rng):
    qd.deactivate_all_snodes()
    cx, cy, r = (float(v) for v in rng.uniform(10, 50, 3))
    r = min(r, 20.0)
    disk(cx, cy, r)
    ii, jj = np.meshgrid(np.arange(S), np.arange(S), indexing="ij")
    hit = (ii - cx) ** 2 + (jj - cy) ** 2 < r * r
    a1 = hit.reshape(S // 16, 16, S // 16, 16).any(axis=(1, 3))
    a2 = hit.reshape(S // 4, 4, S // 4, 4).any(axis=(1, 3))
    out = np.zeros((S, S), np.int32)
    depth_map(out)
    want = np.repeat(np.repeat(a1, 16, 0), 16, 1) + 2 * np.repeat(np.repeat(a2, 4, 0), 4, 1)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(cells.to_numpy(), hit.astype(np.float32))
    level1.deactivate_all()
    depth_map(out)
    assert not out.any() and not cells.to_numpy().any()


# ----------------------------------------------------------------------------- particles that leave (comet)

NP = 256
pos = qd.Vector.field(2, qd.f32)
vel = qd.Vector.field(2, qd.f32)
heat = qd.field(qd.f32)
qd.root.bitmasked(qd.i, NP).place(pos, vel, heat)
far = qd.field(qd.i32, shape=())


@qd.kernel
def drift(dt: qd.f32):
    qd.no_activate(pos)
    for i in pos:
        pos[i] += vel[i] * dt
        heat[i] *= 0.5
        if not all(-0.1 <= pos[i] <= 1.1):       # chained comparisons of a vector, per component
            qd.deactivate(pos.snode.parent(), [i])
        elif any(pos[i] > 0.9):
            far[None] += 1


def test_particles_deactivated_by_a_vector_range_test(executor, rng):
    qd.deactivate_all_snodes()
    far[None] = 0
    p = rng.random((NP, 2)).astype(np.float32)
    v = (rng.standard_normal((NP, 2)) * 0.5).astype(np.float32)
    h = rng.random(NP).astype(np.float32)
    pos.from_numpy(p)                            # activates every particle
    vel.from_numpy(v)
    heat.from_numpy(h)
    drift(0.25)
    q = p + v * np.float32(0.25)
    alive = np.all((q >= -0.1) & (q <= 1.1), axis=1)
    np.testing.assert_allclose(pos.to_numpy(), np.where(alive[:, None], q, 0), rtol=1e-6)
    np.testing.assert_allclose(heat.to_numpy(), np.where(alive, h * 0.5, 0), rtol=1e-6)
    assert far[None] == int(np.sum(alive & np.any(q > 0.9, axis=1)))
    drift(0.0)
    assert far[None] == 2 * int(np.sum(alive & np.any(q > 0.9, axis=1)))


# ----------------------------------------------------------------------------- mistakes
# (the located errors of sparse kernels are in bad_kernels.py)

def test_sparse_layout_mistakes():
    with pytest.raises(AttributeError, match="qd.root.hash: quantized and hashed SNodes are not supported"):
        qd.root.hash(qd.i, 4)
    with pytest.raises(ValueError, match="a dynamic SNode holds fields only"):
        qd.root.dynamic(qd.i, 4).dense(qd.j, 2)


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("target", target_names())
def test_sparse_kernels_compile(target):
    for kernel in (splat, double_active, active_block_ids, drop_rows, paint_rect, sum_active, clear_diagonal,
                   read_back, bucket, lengths, list_sums, drop_list, march, edge_sum, disk, depth_map, drift):
        tr = qd.translate(kernel, target, warn=False)
        for verdict in check_sources(target, tr.sources, tr.manifest):
            assert verdict.ok, f"{verdict.tool} rejected {verdict.file}:\n{verdict.message}"

"""Register tiles, ``qd.simt.Tile16x16`` and ``qd.simt.Tile32x32``, as Quadrants 1.3.3 has them.

Run on every executor at every subgroup width: Vulkan (lavapipe, 8 lanes), the CPU emulator
(the CUDA text at 8, 16 and 32 lanes, the HIP text at wave 32 and 64) and CUDA when there is
a GPU, against NumPy on random data: loads and stores (whole, partial, clamped to the array,
batched, fields and SharedArrays), identity tiles, rank-1 updates from scalars and column
slices, Cholesky and the triangular solve, and a blocked Cholesky that combines them. On
subgroups narrower than the tile, the tile is carried out through shared memory (see
tests/test_wide_tiles.py for its own checks). Every target's text is compiled by its
toolchain."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import transpiler as qd
from transpiler.runtime import current
from conftest import assert_compiles

Tile16, Tile32 = qd.simt.Tile16x16, qd.simt.Tile32x32
TILES = [pytest.param(Tile16, id="tile16"), pytest.param(Tile32, id="tile32")]
DTYPES = [pytest.param(qd.f32, id="f32"), pytest.param(qd.f64, id="f64")]
NP = {qd.f32: np.float32, qd.f64: np.float64}
TOL = {qd.f32: 2e-4, qd.f64: 1e-10}


NARROW = {"cpu-cuda-8": {"arch": "cpu", "subgroup_size": 8}, "cpu-cuda-16": {"arch": "cpu", "subgroup_size": 16},
          "cpu-hip-32": {"arch": "cpu", "dialect": "hip", "wave32": True}}


@pytest.fixture(params=["vulkan", "cpu-cuda-8", "cpu-cuda-16", "cpu-cuda", "cpu-hip-32", "cpu-hip", "cuda"])
def executor(request):
    """Every executor, at subgroup widths 8 (lavapipe, the narrowed CUDA text), 16, 32 and 64:
    narrower than a tile, a tile goes through shared memory."""
    from conftest import have_gpu, init_executor

    if request.param == "cuda" and not have_gpu():
        pytest.skip("needs an NVIDIA GPU with CuPy; this machine has none")
    if request.param in NARROW:
        qd.init(**NARROW[request.param])
    else:
        init_executor(request.param)
    return request.param


def spd(rng, n: int, dtype) -> np.ndarray:
    """A random symmetric positive definite matrix, well conditioned."""
    m = rng.standard_normal((n, n))
    return (m @ m.T / n + np.eye(n)).astype(dtype)


# ----------------------------------------------------------------------------- kernels

@qd.kernel
def copy_block(src: qd.types.ndarray(ndim=2), dst: qd.types.ndarray(ndim=2), tile: qd.template(),
               dt: qd.template(), r0: qd.i32, r1: qd.i32, c0: qd.i32, c1: qd.i32, d0: qd.i32, d1: qd.i32,
               e0: qd.i32, e1: qd.i32):
    qd.loop_config(block_dim=tile.SIZE)
    for _ in range(tile.SIZE):
        t = tile.zeros(dtype=dt)
        t[:] = src[r0:r1, c0:c1]
        dst[d0:d1, e0:e1] = t


@qd.kernel
def copy_batch(src: qd.types.ndarray(ndim=3), dst: qd.types.ndarray(ndim=3), tile: qd.template(), b: qd.i32,
               r0: qd.i32, r1: qd.i32, c0: qd.i32, c1: qd.i32):
    qd.loop_config(block_dim=tile.SIZE)
    for _ in range(tile.SIZE):
        t = tile.eye()  # rows and columns outside the slice stay the identity's
        t[:] = src[b, r0:r1, c0:c1]
        dst[b, 0:tile.SIZE, 0:tile.SIZE] = t


@qd.kernel
def identities(out: qd.types.ndarray(ndim=3), junk: qd.types.ndarray(ndim=2), tile: qd.template(),
               dt: qd.template()):
    qd.loop_config(block_dim=tile.SIZE)
    for _ in range(tile.SIZE):
        n = qd.static(tile.SIZE)
        a = tile.eye(dtype=dt)
        out[0, 0:n, 0:n] = a
        b = tile.zeros(dtype=dt)
        out[1, 0:n, 0:n] = b
        b[:] = junk[0:n, 0:n]
        b.eye_()
        out[2, 0:n, 0:n] = b


@qd.kernel
def rank1(m: qd.types.ndarray(ndim=2), x: qd.types.ndarray(ndim=1), y: qd.types.ndarray(ndim=1),
          out: qd.types.ndarray(ndim=2), tile: qd.template(), dt: qd.template()):
    qd.loop_config(block_dim=tile.SIZE)
    for _ in range(tile.SIZE):
        n = qd.static(tile.SIZE)
        # The row of this thread: its lane, or on subgroups narrower than the tile its place
        # among the tile's threads (the block is one tile here; see docs/tiles.md).
        lane = qd.simt.block.thread_idx()
        t = tile.zeros(dtype=dt)
        t[:] = m[0:n, 0:n]
        t -= qd.outer(x[lane], y[lane])   # each lane gives its element of each vector
        op = qd.outer(y[lane] * 0.5, y[lane])
        t -= op                            # an outer product named first
        out[0:n, 0:n] = t


@qd.kernel
def column_updates(m: qd.types.ndarray(ndim=2), v: qd.types.ndarray(ndim=2), v3: qd.types.ndarray(ndim=3),
                   out: qd.types.ndarray(ndim=2), tile: qd.template(), k0: qd.i32, k1: qd.i32, ncols: qd.i32):
    qd.loop_config(block_dim=tile.SIZE)
    for _ in range(tile.SIZE):
        n = qd.static(tile.SIZE)
        t = tile.zeros()
        t[:] = m[0:n, 0:n]
        for c in range(ncols):
            col = v[k0:k1, c]          # rows past k1 (or the array) give 0
            t -= qd.outer(col, col)
        t -= qd.outer(v3[1, k0:k1, 0], v[k0:k1, 1])
        out[0:n, 0:n] = t


@qd.kernel
def factor_and_solve(a: qd.types.ndarray(ndim=2), b: qd.types.ndarray(ndim=2), tile: qd.template(),
                     dt: qd.template(), eps: float):
    qd.loop_config(block_dim=tile.SIZE)
    for _ in range(tile.SIZE):
        n = qd.static(tile.SIZE)
        L = tile.zeros(dtype=dt)
        L[:] = a[0:n, 0:n]
        L.cholesky_(eps)
        X = tile.zeros(dtype=dt)
        X[:] = b[0:n, 0:n]
        L.solve_triangular_(X, lower=True)
        a[0:n, 0:n] = L
        b[0:n, 0:n] = X


@qd.func
def factor_padded(a, k: qd.i32, n: qd.i32, tile: qd.template(), eps):
    """The diagonal block at (k, k), padded with the identity past n, less the columns before k."""
    d = tile.eye()
    d[:] = a[k:n, k:n]
    for c in range(k):
        col = a[k:n, c]
        d -= qd.outer(col, col)
    d.cholesky_(eps)
    return d


@qd.kernel
def blocked_cholesky(a: qd.types.ndarray(qd.f32, ndim=2), tile: qd.template()):
    """Left-looking blocked Cholesky of the n x n matrix in ``a`` (n need not be a multiple of
    the tile): each lane reads back only rows it wrote itself, so no barrier is needed."""
    qd.loop_config(block_dim=tile.SIZE)
    for _ in range(tile.SIZE):
        n = a.shape[0]
        s = qd.static(tile.SIZE)
        for k in range(0, n, s):
            d = factor_padded(a, k, n, tile, 1e-9)
            a[k:k + s, k:k + s] = d
            for i in range(k + s, n, s):
                p = tile.zeros()
                p[:] = a[i:i + s, k:k + s]
                for c in range(k):
                    p -= qd.outer(a[i:i + s, c], a[k:k + s, c])
                d.solve_triangular_(p)
                a[i:i + s, k:k + s] = p


@qd.kernel
def through_shared(src: qd.types.ndarray(qd.f32, ndim=2), out: qd.types.ndarray(qd.f32, ndim=2), tile: qd.template()):
    qd.loop_config(block_dim=tile.SIZE)
    for _ in range(tile.SIZE):
        n = qd.static(tile.SIZE)
        sh = qd.simt.block.SharedArray((n, 10), qd.f32)   # narrower than the tile: columns clamp
        t = tile.zeros()
        t[:] = src[0:n, 0:n]
        sh[0:n, 0:n] = t
        qd.simt.block.sync()
        u = tile.zeros()
        u[:] = sh[0:n, 0:n]
        col = sh[0:n, 9]
        u -= qd.outer(col, col)
        out[0:n, 0:n] = u


grid = qd.field(qd.f32, shape=(40, 40))
narrow = qd.field(qd.f32, shape=(16, 10))  # fewer columns than a tile


@qd.kernel
def narrow_field(out: qd.types.ndarray(qd.f32, ndim=2), c1: qd.i32):
    """A run-time column stop past a field's 10 columns: registers 10.. are never indexed
    (a constant index past the end would be refused at translation)."""
    qd.loop_config(block_dim=16)
    for _ in range(16):
        t = qd.simt.Tile16x16.zeros()
        t[:] = narrow[0:16, 0:c1]
        out[0:16, 0:16] = t
        t.r[0] = -1.0
        narrow[0:16, 0:c1] = t


@qd.kernel
def field_tile(out: qd.types.ndarray(qd.f32, ndim=2), r0: qd.i32, c0: qd.i32):
    qd.loop_config(block_dim=16)
    for _ in range(16):
        t = qd.simt.Tile16x16.zeros()
        t[:] = grid[r0:r0 + 16, c0:c0 + 16]   # clamped to the field's 40 x 40
        out[0:16, 0:16] = t
        lane = qd.simt.block.thread_idx()
        out[lane, 16] = t.r[3]                 # a register of this lane's row
        t.r[0] = -1.0
        grid[r0:r0 + 16, c0:c0 + 1] = t


@qd.kernel
def whole_subgroup(a: qd.types.ndarray(qd.f32, ndim=2), x: qd.types.ndarray(qd.f32, ndim=1),
                   out: qd.types.ndarray(qd.f32, ndim=2), width: qd.template()):
    """A block as wide as the subgroup, one Tile16x16: lanes past 16 are rows past the tile."""
    qd.loop_config(block_dim=width)
    for _ in range(width):
        lane = qd.simt.subgroup.invocation_id()
        t = qd.simt.Tile16x16.zeros()
        t[:] = a[0:width, 0:16]
        t -= qd.outer(x[lane], x[lane])
        out[0:width, 0:16] = t


@qd.kernel
def factor_batch(a: qd.types.ndarray(qd.f32, ndim=3), b: qd.types.ndarray(qd.f32, ndim=3)):
    """docs/tiles.md's example: one tile per block of 16 lanes, one block per matrix."""
    N = qd.static(qd.simt.Tile16x16.SIZE)
    qd.loop_config(block_dim=N)                 # one lane per tile row
    for i in range(a.shape[0] * N):
        e = i // N
        L = qd.simt.Tile16x16.zeros(dtype=qd.f32)   # or .eye(); dtype f32 (default_fp if left out) or f64
        L[:] = a[e, 0:N, 0:N]                   # load: lane r reads row r
        col = b[e, 0:N, 0]                      # a column: each lane's element
        L -= qd.outer(col, col)                 # rank-1 update, one shuffle per column
        L.cholesky_(1e-6)                       # in place: the lower triangle is L
        X = qd.simt.Tile16x16.zeros()
        X[:] = b[e, 0:N, 0:N]
        L.solve_triangular_(X)                  # X @ L.T = B, in place in X (lower=True only)
        b[e, 0:N, 0:N] = X                      # store


@qd.kernel
def named_slice(a: qd.types.ndarray(qd.f32, ndim=2), out: qd.types.ndarray(qd.f32, ndim=2), i0: qd.i32):
    qd.loop_config(block_dim=16)
    for _ in range(16):
        i = i0
        s = a[i + 1:i + 17, 0:16]   # its bounds are read here, as Python evaluates them
        i += 5
        t = Tile16.zeros()
        t[:] = s
        out[i:i + 16, 0:16] = t


@qd.func
def factored_copy(t, eps):
    t.cholesky_(eps)  # the callee's own copy: arguments are passed by value
    return t


@qd.func
def factor_in_place(t: qd.template(), eps):
    t.cholesky_(eps)  # a qd.template() parameter is the caller's variable


@qd.kernel
def tiles_through_functions(a: qd.types.ndarray(qd.f32, ndim=2), out: qd.types.ndarray(qd.f32, ndim=3)):
    qd.loop_config(block_dim=16)
    for _ in range(16):
        t = Tile16.zeros()
        t[:] = a[0:16, 0:16]
        u = factored_copy(t, 1e-9)
        out[0, 0:16, 0:16] = t
        out[1, 0:16, 0:16] = u
        factor_in_place(t, 1e-9)
        out[2, 0:16, 0:16] = t
        w = t  # a copy, not another name for t
        w.eye_()
        out[3, 0:16, 0:16] = t


# ----------------------------------------------------------------------------- NumPy models

def load_model(src: np.ndarray, n: int, r0, r1, c0, c1, base: np.ndarray) -> np.ndarray:
    """The tile ``t[:] = src[r0:r1, c0:c1]`` leaves, starting from ``base``: lane i (< n)
    reads row r0 + i when it is below r1 and the array's end, columns likewise."""
    t = base.copy()
    rows = max(0, min(r1, src.shape[0], r0 + n) - r0)
    cols = max(0, min(c1, src.shape[1], c0 + n) - c0)
    t[:rows, :cols] = src[r0:r0 + rows, c0:c0 + cols]
    return t


def store_model(dst: np.ndarray, t: np.ndarray, d0, d1, e0, e1) -> np.ndarray:
    out = dst.copy()
    n = t.shape[0]
    rows = max(0, min(d1, dst.shape[0], d0 + n) - d0)
    cols = max(0, min(e1, dst.shape[1], e0 + n) - e0)
    out[d0:d0 + rows, e0:e0 + cols] = t[:rows, :cols]
    return out


# ----------------------------------------------------------------------------- execution

# (r0, r1, c0, c1, d0, d1, e0, e1) in units of the tile size n, as (multiple, offset) pairs
# resolved per size: whole tiles, shifted, partial rows, partial columns, past the array's end.
BLOCKS = {
    "whole": lambda n: (0, n, 0, n, 0, n, 0, n),
    "shifted": lambda n: (3, 3 + n, 7, 7 + n, n + 1, 2 * n + 1, 5, 5 + n),
    "partial_rows": lambda n: (2, 2 + n // 2 + 1, 0, n, 1, 1 + n, 0, n),
    "partial_cols": lambda n: (0, n, 4, 9, 0, n, 2, 2 + n - 3),
    "past_the_end": lambda n: (3 * n - 5, 3 * n + 20, 3 * n - 2, 3 * n + 9, 3 * n - 7, 3 * n + 40, 3 * n - 4,
                               3 * n),
}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("tile", TILES)
def test_load_store_round_trips(executor, rng, tile, dt):
    n = tile.SIZE
    src = rng.standard_normal((3 * n, 3 * n)).astype(NP[dt])
    for name, block in BLOCKS.items():
        r0, r1, c0, c1, d0, d1, e0, e1 = block(n)
        dst = rng.standard_normal((3 * n, 3 * n)).astype(NP[dt])
        want = store_model(dst, load_model(src, n, r0, r1, c0, c1, np.zeros((n, n))), d0, d1, e0, e1)
        copy_block(src, dst, tile, dt, r0, r1, c0, c1, d0, d1, e0, e1)
        np.testing.assert_array_equal(dst, want, err_msg=name)


def test_an_f64_tile_carries_f32_data_exactly(executor, rng):
    src = rng.standard_normal((16, 16)).astype(np.float32)
    dst = np.zeros_like(src)
    copy_block(src, dst, Tile16, qd.f64, 0, 16, 0, 16, 0, 16, 0, 16)
    np.testing.assert_array_equal(dst, src)


@pytest.mark.parametrize("tile", TILES)
def test_batched_slices(executor, rng, tile):
    n = tile.SIZE
    src = rng.standard_normal((4, n + 3, n + 5)).astype(np.float32)
    for b, (r0, r1, c0, c1) in [(0, (0, n, 0, n)), (2, (3, 3 + n, 5, 5 + n)), (3, (1, n - 4, 2, 9))]:
        dst = np.full_like(src, 7.0)
        copy_batch(src, dst, tile, b, r0, r1, c0, c1)
        want = load_model(src[b], n, r0, r1, c0, c1, np.eye(n))
        np.testing.assert_array_equal(dst[b, :n, :n], want)
        untouched = np.ones(src.shape, bool)
        untouched[b, :n, :n] = False
        assert (dst[untouched] == 7.0).all()


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("tile", TILES)
def test_identity_and_zero_tiles(executor, rng, tile, dt):
    n = tile.SIZE
    out = np.full((3, n, n), 5.0, NP[dt])
    identities(out, rng.standard_normal((n, n)).astype(NP[dt]), tile, dt)
    np.testing.assert_array_equal(out, np.stack([np.eye(n), np.zeros((n, n)), np.eye(n)]))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("tile", TILES)
def test_rank1_updates_of_scalars(executor, rng, tile, dt):
    n = tile.SIZE
    m, x, y = (rng.standard_normal(s).astype(NP[dt]) for s in ((n, n), n, n))
    out = np.zeros_like(m)
    rank1(m, x, y, out, tile, dt)
    np.testing.assert_allclose(out, m - np.outer(x, y) - np.outer(y * 0.5, y), rtol=TOL[dt], atol=TOL[dt])


@pytest.mark.parametrize("tile", TILES)
def test_rank1_updates_of_column_slices(executor, rng, tile):
    n = tile.SIZE
    m = rng.standard_normal((n, n)).astype(np.float32)
    v = rng.standard_normal((2 * n + 5, 6)).astype(np.float32)
    v3 = rng.standard_normal((2, 2 * n + 5, 3)).astype(np.float32)
    for k0, k1, ncols in [(0, n, 4), (n, 2 * n, 6), (n + 3, 2 * n + 100, 2), (5, 5 + n // 3, 3)]:
        out = np.zeros_like(m)
        column_updates(m, v, v3, out, tile, k0, k1, ncols)

        def col(a, c):  # rows k0 .. k1 of a column, 0 past k1 or the array, as the lanes see it
            got = np.zeros(n, np.float64)
            rows = max(0, min(k1, a.shape[0], k0 + n) - k0)
            got[:rows] = a[k0:k0 + rows, c]
            return got

        want = m.astype(np.float64)
        for c in range(ncols):
            want -= np.outer(col(v, c), col(v, c))
        want -= np.outer(col(v3[1], 0), col(v, 1))
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("tile", TILES)
def test_cholesky_and_triangular_solve(executor, rng, tile, dt):
    n = tile.SIZE
    a = spd(rng, n, NP[dt])
    a[np.triu_indices(n, 1)] = 99.0  # only the lower triangle is read, and the upper is kept
    b = rng.standard_normal((n, n)).astype(NP[dt])
    got_l, got_x = a.copy(), b.copy()
    factor_and_solve(got_l, got_x, tile, dt, 1e-12)
    full = np.tril(a) + np.tril(a, -1).T
    want_l = np.linalg.cholesky(full.astype(np.float64))
    np.testing.assert_allclose(np.tril(got_l), want_l, rtol=TOL[dt], atol=TOL[dt])
    assert (got_l[np.triu_indices(n, 1)] == 99.0).all()
    # X @ L.T = B, with the L the kernel computed: X = (L^-1 B^T)^T.
    want_x = np.linalg.solve(np.tril(got_l).astype(np.float64), b.T.astype(np.float64)).T
    np.testing.assert_allclose(got_x, want_x, rtol=10 * TOL[dt], atol=10 * TOL[dt])


def test_cholesky_floors_its_pivots(executor):
    a = np.eye(16, dtype=np.float32)
    a[5, 5] = -3.0  # not positive definite: the pivot becomes sqrt(eps)
    b = np.eye(16, dtype=np.float32)
    factor_and_solve(a, b, Tile16, qd.f32, 0.25)
    assert a[5, 5] == 0.5 and b[5, 5] == 2.0


@pytest.mark.parametrize("n", [40, 57])
@pytest.mark.parametrize("tile", TILES)
def test_blocked_cholesky_of_a_larger_matrix(executor, rng, tile, n):
    a = spd(rng, n, np.float32)
    got = a.copy()
    blocked_cholesky(got, tile)
    np.testing.assert_allclose(np.tril(got), np.linalg.cholesky(a.astype(np.float64)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tile", TILES)
def test_shared_arrays_as_tile_operands(executor, rng, tile):
    n = tile.SIZE
    src = rng.standard_normal((n, n)).astype(np.float32)
    out = np.zeros_like(src)
    through_shared(src, out, tile)
    t = np.zeros((n, n))
    t[:, :10] = src[:, :10]
    want = t - np.outer(src[:, 9], src[:, 9])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_fields_as_tile_operands(executor, rng):
    data = rng.standard_normal((40, 40)).astype(np.float32)
    grid.from_numpy(data)
    out = np.zeros((16, 17), np.float32)
    field_tile(out, 30, 2)
    want = load_model(data, 16, 30, 46, 2, 18, np.zeros((16, 16)))
    np.testing.assert_array_equal(out[:, :16], want)
    np.testing.assert_array_equal(out[:, 16], want[:, 3])
    stored = data.copy()
    stored[30:40, 2] = -1.0
    np.testing.assert_array_equal(grid.to_numpy(), stored)


def test_a_field_narrower_than_the_tile(executor, rng):
    data = rng.standard_normal((16, 10)).astype(np.float32)
    narrow.from_numpy(data)
    out = np.zeros((16, 16), np.float32)
    narrow_field(out, 16)
    np.testing.assert_array_equal(out, load_model(data, 16, 0, 16, 0, 16, np.zeros((16, 16))))
    data[:, 0] = -1.0
    np.testing.assert_array_equal(narrow.to_numpy(), data)


def test_the_documented_batch_of_factorizations(executor, rng):
    batch = 5
    b = rng.standard_normal((batch, 16, 16)).astype(np.float32)
    a = np.stack([spd(rng, 16, np.float64) + np.outer(b[e, :, 0], b[e, :, 0]) for e in range(batch)])
    got_a, got_b = a.astype(np.float32), b.copy()
    factor_batch(got_a, got_b)
    for e in range(batch):
        L = np.linalg.cholesky(a[e] - np.outer(b[e, :, 0], b[e, :, 0]))
        np.testing.assert_allclose(got_b[e], np.linalg.solve(L, b[e].T).T, rtol=1e-3, atol=1e-3)


def test_a_named_slice_keeps_the_bounds_it_was_written_with(executor, rng):
    a = rng.standard_normal((40, 16)).astype(np.float32)
    out = np.zeros_like(a)
    named_slice(a, out, 3)
    want = np.zeros_like(a)
    want[8:24] = a[4:20]
    np.testing.assert_array_equal(out, want)


def test_tiles_passed_to_functions_by_value_or_by_reference(executor, rng):
    a = spd(rng, 16, np.float32)
    out = np.zeros((4, 16, 16), np.float32)
    tiles_through_functions(a, out)
    want = np.linalg.cholesky(a.astype(np.float64))
    np.testing.assert_array_equal(out[0], a)
    for k in (1, 2, 3):
        np.testing.assert_allclose(np.tril(out[k]), want, rtol=1e-5, atol=1e-5)


def test_lanes_past_the_tile_are_rows_past_it(executor, rng):
    """Quadrants' semantics on a subgroup wider than the tile (a warp of 32, a wave of 64): the
    row index is the lane index, so a row range longer than the tile reaches the lanes past
    it; b's elements come from the tile's own lanes."""
    width = current().subgroup_size
    if width < 16:
        pytest.skip("a subgroup narrower than the tile: a tile is then its own 16 threads of the block")
    a = rng.standard_normal((width, 16)).astype(np.float32)
    x = rng.standard_normal(width).astype(np.float32)
    out = np.zeros_like(a)
    whole_subgroup(a, x, out, width)
    np.testing.assert_allclose(out, a - np.outer(x, x[:16]), rtol=1e-5, atol=1e-5)


@qd.kernel
def internal_spellings(m: qd.types.ndarray(qd.f64, ndim=3), x: qd.types.ndarray(qd.f64, ndim=1),
                       out: qd.types.ndarray(qd.f64, ndim=3), tile: qd.template()):
    """Quadrants' internal API, which its own tests use: the class of one dtype, called for a
    zero tile, and the methods behind the slice syntax."""
    qd.loop_config(block_dim=tile.SIZE)
    for _ in range(tile.SIZE):
        t = tile()
        t._load3d(m, 1, 0, tile.SIZE, 0, tile.SIZE)
        row = qd.simt.block.thread_idx()
        t._ger_sub(x[row], x[row])
        L = tile.eye()
        L._ger_sub(x[row], 1.0)
        t._store3d(out, 0, 0, tile.SIZE, 0, tile.SIZE)
        out[1, 0:tile.SIZE, 0:tile.SIZE] = L


@qd.kernel
def internal_solve(a: qd.types.ndarray(qd.f64, ndim=2), b: qd.types.ndarray(qd.f64, ndim=2), tile: qd.template()):
    qd.loop_config(block_dim=tile.SIZE)
    for _ in range(tile.SIZE):
        L = tile.zeros()
        L._load(a, 0, tile.SIZE, 0, tile.SIZE)
        L.cholesky_(1e-12)
        B = tile()
        B._load(b, 0, tile.SIZE, 0, tile.SIZE)
        B._trsm(L)
        B._store(b, 0, tile.SIZE, 0, tile.SIZE)


@pytest.mark.parametrize("size", [16, 32])
def test_quadrants_internal_tile_api(executor, rng, size):
    from transpiler.lang.simt._tile import _make_tile, _tile_cache

    tile = _make_tile(size, qd.f64)
    assert tile is _tile_cache[(size, qd.f64)] and tile.SIZE == size and tile.zeros is tile
    a = spd(rng, size, np.float64)
    b = rng.standard_normal((size, size))
    x = b.copy()
    internal_solve(a, x, tile)
    L = np.linalg.cholesky(a)
    np.testing.assert_allclose(x @ L.T, b, rtol=1e-9, atol=1e-9)
    m = rng.standard_normal((2, size, size))
    out = np.zeros((2, size, size))
    internal_spellings(m, x[:, 0].copy(), out, tile)
    np.testing.assert_allclose(out[0], m[1] - np.outer(x[:, 0], x[:, 0]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[1], np.eye(size) - np.outer(x[:, 0], np.ones(size)), rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- narrow subgroups

def translate(kernel, target: str, tile=Tile16, dt=None, **options):
    """``qd.translate`` of a kernel above, its untyped ndarrays given ``dt`` (f32 by default)."""
    nd = {name: qd.types.ndarray(dt or qd.f32, ndim=2) for name in ("a", "b", "m", "v", "out")}
    nd["v3"] = qd.types.ndarray(qd.f32, ndim=3)
    template_args = {"tile": tile, **({"dt": dt} if dt is not None else {})}
    return qd.translate(kernel, target, template_args=template_args, arg_types=nd, **options)


@pytest.mark.toolchain
def test_vulkan_here_refuses_a_block_that_is_not_whole_tiles_at_its_line(tmp_path):
    """lavapipe's subgroups have 8 lanes: a tile is 16 threads of the block, so a block of 24
    cannot hold whole tiles; the kernel is not run, the tile's line is named."""
    from conftest import init_executor

    init_executor("vulkan")
    assert current().subgroup_size < 16
    err = _error("", tmp_path, target=None, block=24)
    assert "bad_tiles.py:7:" in err and "t = T.zeros()" in err and "^" in err, err
    assert ("qd.simt.Tile16x16 on this target's 8-lane subgroups is carried out by 16 consecutive threads of the "
            "block, and the block of 24 threads is not a whole number of tiles") in err, err
    assert "hint: qd.loop_config(block_dim=N) with N a multiple of 16" in err, err


@pytest.mark.parametrize("tile,size", [(Tile16, 8), (Tile16, 16), (Tile32, 8), (Tile32, 16), (Tile32, 32),
                                       (Tile32, 64)])
def test_glsl_at_every_subgroup_size_holds_the_tile(tile, size):
    """Narrower than the tile: shared memory, said in a comment; as wide or wider: shuffles."""
    tr = translate(factor_and_solve, "glsl", tile=tile, dt=qd.f32, subgroup_size=size)
    assert tr.manifest["requirements"]["required_subgroup_size"] == size
    text = "\n".join(tr.sources.values())
    n = tile.SIZE
    wide = size < n
    assert (f"// Tile{n}x{n} on {size}-lane subgroups: {n} consecutive threads of the block per tile" in text) == wide
    assert ("subgroupShuffle(" in text) != wide
    assert text.count(f"// Tile{n}x{n} on {size}-lane subgroups: Cholesky through shared memory") == wide
    assert text.count(f"// Tile{n}x{n} on {size}-lane subgroups: triangular solve through shared memory") == wide


# ----------------------------------------------------------------------------- mistakes

def _error(src: str, tmp_path, target: str | None = "cuda", block: int = 16) -> str:
    """The error of a kernel with a tile and ``src`` after it, translated for ``target`` (None:
    called on the current executor)."""
    import runpy

    path = tmp_path / "bad_tiles.py"
    path.write_text("import transpiler as qd\nT = qd.simt.Tile16x16\n"
                    "@qd.kernel\ndef k(a: qd.types.ndarray(qd.f32, ndim=2), x: qd.types.ndarray(qd.f32, ndim=1)):\n"
                    f"    qd.loop_config(block_dim={block})\n    for _ in range({block}):\n        t = T.zeros()\n" +
                    "".join(f"        {line}\n" for line in src.splitlines()))
    kernels = runpy.run_path(str(path))
    with pytest.raises(qd.TranspileError) as info:
        if target is None:
            kernels["k"](np.zeros((16, 16), np.float32), np.zeros(16, np.float32))
        else:
            qd.translate(kernels["k"], target)
    return str(info.value)


FIRST = 8  # the first line of the snippet in bad_tiles.py


@pytest.mark.parametrize("src,message", [
    ("t[:] = a[:16, 0:16]", "needs both the start and the stop of its row range"),
    ("t[:] = a[0:16, 0:]", "needs both the start and the stop of its column range"),
    ("a[0:16, -1:16] = t", "negative indices are not supported in kernels (a column bound of -1)"),
    ("t[:] = a[0:16:2, 0:16]", "a tile slice has no step"),
    ("t[:] = a[0:16]", "slices are not supported in kernels, except the operands of tile operations"),
    ("x[0:4] = 1.0", "slices are not supported in kernels, except the operands of tile operations"),
    ("t[:] = a[0, 0:16, 0:16]", "`a` has 2 dimension(s) but is indexed with 3"),
    ("t[:] = a[0:16, 0:16.0]", "a column bound must be an integer, not 16.0"),
    ("y = a[0:16, 0] + 1.0", "the array slice `a[0:16, 0]` is not a value"),
    ("x[0] = a[0:16, 0]", "the array slice `a[0:16, 0]` is not a value"),
    ("v = qd.outer(x[0], x[1]) * 2.0", "`qd.outer(x[0], x[1])` is not a value"),
    ("t = a[0:16, 0:16]", "`t` is a Tile16x16: load it with `t[:] = a[0:16, 0:16]`"),
    ("t[:] = a[0:16, 3]", "loads a tile from an array block"),
    ("t[0] = 1.0", "a Tile16x16 is loaded whole"),
    ("x[0] = t[0]", "a Tile16x16 is not indexed"),
    ("x[0] = t + 1.0", "a Tile16x16 cannot be used as a single value here"),
    ("a[0:16, 0] = t", "is a column: a tile is stored into a block"),
    ("a[0:16, 0:16] = 0.0", "only a tile can be stored into the array block `a[0:16, 0:16]`"),
    ("a[0:16, 0:16] += t", "an array slice cannot be updated in place"),
    ("t += qd.outer(x[0], x[0])", "the only update of a Tile16x16 is `t -= qd.outer(a, b)`"),
    ("t -= 1.0", "the only update of a Tile16x16 is `t -= qd.outer(a, b)`"),
    ("t -= qd.outer(a[0:16, 0:16], x[0])", "qd.outer takes columns, one element per lane"),
    ("t.cholesky()", "Tile16x16 has no method `cholesky`"),
    ("t.solve_triangular_(t, lower=False)", "solve_triangular_ supports lower=True only"),
    ("t.solve_triangular_(x[0])", "B must be a tile variable"),
    ("u = qd.simt.Tile32x32.zeros()\nt.solve_triangular_(u)", "B is a Tile32x32, L a Tile16x16"),
    ("u = T.zeros(dtype=qd.i32)", "a tile holds f32 or f64, not 'i32'"),
    ("u = T.eye(qd.f32)", "takes the dtype as a keyword: dtype=qd.f32"),
    ("T.eye().cholesky_(1e-6)", "`.cholesky_` of a Tile16x16 value: a tile's methods update a variable"),
    ("t._load(a, 0, 16)", "Tile16x16._load(arr, r0, r1, c0, c1)"),
    ("t._store3d(a, 0, 0, 16, 0, 16)", "Tile16x16._store3d() takes a 3-dimensional array"),
])
def test_tile_mistakes_are_located(tmp_path, src, message):
    err = _error(src, tmp_path)
    line = FIRST + len(src.splitlines()) - 1
    assert message in err and f"bad_tiles.py:{line}:" in err, err


def test_a_tile_needs_a_parallel_loop(tmp_path):
    import runpy

    path = tmp_path / "serial_tile.py"
    path.write_text("import transpiler as qd\n@qd.kernel\ndef k(a: qd.types.ndarray(qd.f32, ndim=2)):\n"
                    "    t = qd.simt.Tile16x16.zeros()\n    a[0:16, 0:16] = t\n")
    with pytest.raises(qd.TranspileError, match="works on the threads of a block") as info:
        qd.translate(runpy.run_path(str(path))["k"], "cuda")
    assert "serial_tile.py:4:" in str(info.value)


def test_tile_names_outside_kernels():
    assert Tile16.SIZE == 16 and Tile32.SIZE == 32
    with pytest.raises(RuntimeError, match="inside a @qd.kernel"):
        Tile16.zeros()
    with pytest.raises(RuntimeError, match="inside a @qd.kernel"):
        qd.outer(1.0, 2.0)
    with pytest.raises(AttributeError, match="qd.simt has no `Tile8x8`"):
        _ = qd.simt.Tile8x8


# ----------------------------------------------------------------------------- the emitted text

def test_a_tile_is_its_registers_and_shuffles():
    tr = translate(factor_and_solve, "cuda", tile=Tile16, dt=qd.f32)
    (text,) = tr.sources.values()
    assert "float L_r_15 = 0.0f;" in text and "L_r_16" not in text
    assert "__shared__" not in text  # shuffles only
    # Cholesky and the solve: one shuffle per finished entry of a row, and one per pivot.
    assert text.count("__shfl_sync") == 2 * (16 * 15 // 2 + 16)
    assert tr.manifest["subgroup_size"] == 32


COMPILE_CASES = [
    ("factor_and_solve_16_f32", factor_and_solve, {"tile": Tile16, "dt": qd.f32}),
    ("factor_and_solve_32_f64", factor_and_solve, {"tile": Tile32, "dt": qd.f64}),
    ("column_updates_32", column_updates, {"tile": Tile32}),
    ("blocked_cholesky_16", blocked_cholesky, {"tile": Tile16}),
    ("through_shared_32", through_shared, {"tile": Tile32}),
]
VARIANTS = [("cuda", {}), ("hip", {}), ("hip", {"wave32": True}), ("msl", {}),
            *(("glsl", {"subgroup_size": n}) for n in (8, 16, 32, 64))]
TOOLS = {"cuda": None, "hip": "hipcc", "glsl": "glslangValidator", "msl": None}


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v[0] + "".join(f"-{k}={x}" for k, x in v[1].items()))
@pytest.mark.parametrize("case", COMPILE_CASES, ids=[c[0] for c in COMPILE_CASES])
def test_compiles(case, variant):
    _, kernel, template_args = case
    target, options = variant
    if TOOLS[target] and shutil.which(TOOLS[target]) is None:
        pytest.skip(f"needs {TOOLS[target]}")
    if target == "msl" and template_args.get("dt") is qd.f64:
        with pytest.raises(qd.TranspileError, match="f64 is not supported on the msl target"):
            translate(kernel, target, **template_args, **options)
        return
    assert_compiles(target, translate(kernel, target, **template_args, **options))

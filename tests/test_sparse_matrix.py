"""``qd.linalg`` sparse matrices, as Quadrants has them: kernels fill a SparseMatrixBuilder with
``A[i, j] += v`` (one atomic slot claim per entry, duplicates summed at build()) on Vulkan and
both CPU executors; the built matrix's arithmetic, products and element access against NumPy;
SparseSolver and SparseCG against np.linalg.solve; the builder kernel compiled by every
target's toolchain."""
from __future__ import annotations

import numpy as np
import pytest

import transpiler as qd
from transpiler.runtime.ndarray import Ndarray
from transpiler.toolchains import check_sources

from conftest import target_names


@qd.kernel
def scatter(A: qd.types.sparse_matrix_builder(), rows: qd.types.ndarray(dtype=qd.i32, ndim=1),
            cols: qd.types.ndarray(dtype=qd.i32, ndim=1), values: qd.types.ndarray(ndim=1)):
    for k in rows:
        A[rows[k], cols[k]] += values[k]
        if values[k] < 0:
            A[cols[k], rows[k]] -= values[k]  # an entry may be taken away too


@qd.kernel
def laplacian(A: qd.types.sparse_matrix_builder(), n: qd.i32, shift: qd.f32):
    """The 1-d Laplacian plus ``shift`` on the diagonal: symmetric positive definite."""
    for i in range(n):
        A[i, i] += 2.0 + shift
        if i > 0:
            A[i, i - 1] -= 1.0
        if i < n - 1:
            A[i, i + 1] += -1.0


def dense_of(n, m, rows, cols, values):
    """What scatter() builds, summed with NumPy."""
    out = np.zeros((n, m))
    np.add.at(out, (rows, cols), values)
    neg = values < 0
    np.add.at(out, (cols[neg], rows[neg]), -values[neg])
    return out


def random_builder(rng, n, m, count, dtype=qd.f64):
    rows = rng.integers(0, min(n, m), count).astype(np.int32)  # (square block: transposed entries stay inside)
    cols = rng.integers(0, min(n, m), count).astype(np.int32)
    values = rng.uniform(-2, 3, count).astype(dtype.np_dtype)
    builder = qd.linalg.SparseMatrixBuilder(n, m, max_num_triplets=2 * count, dtype=dtype)
    scatter(builder, rows, cols, values)
    return builder, dense_of(n, m, rows, cols, values.astype(np.float64))


@pytest.mark.parametrize("dtype", [qd.f32, qd.f64])
def test_kernels_fill_a_builder(executor, rng, dtype):
    builder, want = random_builder(rng, 40, 50, 600, dtype)  # many entries at the same place
    A = builder.build()
    assert A.shape == (40, 50) and A.dtype is dtype
    np.testing.assert_allclose(A.to_numpy(), want, rtol=1e-5 if dtype is qd.f32 else 1e-12, atol=1e-5)
    r, c = np.nonzero(want)
    assert A[int(r[0]), int(c[0])] == pytest.approx(want[r[0], c[0]], rel=1e-5)
    assert A[39, 49] == 0.0  # outside the square block: never set


def test_arithmetic_matches_numpy(executor, rng):
    (ba, a), (bb, b) = random_builder(rng, 30, 30, 200), random_builder(rng, 30, 30, 200)
    A, B = ba.build(), bb.build()
    for got, want in ((A + B, a + b), (A - B, a - b), (A * B, a * b), (A * 2.5, a * 2.5), (0.5 * A, 0.5 * a),
                      (A.transpose(), a.T), (A @ B, a @ b)):
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-12, atol=1e-12)
    x = rng.standard_normal(30)
    np.testing.assert_allclose(A @ x, a @ x, rtol=1e-12)
    field = qd.field(qd.f64, shape=30)
    field.from_numpy(x)
    np.testing.assert_allclose(A @ field, a @ x, rtol=1e-12)
    nd = qd.ndarray(qd.f64, (30,))
    nd.from_numpy(x)
    out = A @ nd
    assert isinstance(out, Ndarray) and out.shape == (30,)  # a qd.ndarray times: a qd.ndarray back
    np.testing.assert_allclose(out.to_numpy(), a @ x, rtol=1e-12)
    A += B
    np.testing.assert_allclose(A.to_numpy(), a + b, rtol=1e-12)
    A -= B
    np.testing.assert_allclose(A.to_numpy(), a, rtol=1e-12, atol=1e-12)


def test_rectangular_products(rng):
    left = qd.linalg.SparseMatrixBuilder(3, 5, max_num_triplets=15)
    right = qd.linalg.SparseMatrixBuilder(5, 4, max_num_triplets=20)
    r1, c1 = np.divmod(np.arange(15), 5)
    r2, c2 = np.divmod(np.arange(20), 4)
    v1, v2 = rng.uniform(-1, 1, 15).astype(np.float32), rng.uniform(-1, 1, 20).astype(np.float32)

    @qd.kernel
    def fill(A: qd.types.sparse_matrix_builder(), rows: qd.types.ndarray(), cols: qd.types.ndarray(),
             values: qd.types.ndarray()):
        for k in rows:
            A[rows[k], cols[k]] += values[k]

    fill(left, r1.astype(np.int32), c1.astype(np.int32), v1)
    fill(right, r2.astype(np.int32), c2.astype(np.int32), v2)
    product = left.build() @ right.build()
    assert product.shape == (3, 4)
    np.testing.assert_allclose(product.to_numpy(), v1.reshape(3, 5) @ v2.reshape(5, 4), rtol=1e-5)


def test_elements_text_and_files(tmp_path):
    A = qd.linalg.SparseMatrix(n=3, m=3, dtype=qd.f32)
    triplets = qd.Vector.ndarray(3, qd.f32, shape=4)
    triplets.from_numpy(np.array([[0, 1, 5], [2, 0, 7], [0, 1, 1], [1, 1, -2]], np.float32))
    A.build_from_ndarray(triplets)
    assert (A[0, 1], A[2, 0], A[1, 1], A[2, 2]) == (6.0, 7.0, -2.0, 0.0)
    A[2, 2] = 4.0  # a new entry
    A[0, 1] = 3.0
    assert str(A) == "[0, 3, 0]\n[0, -2, 0]\n[7, 0, 4]\n"
    A.mmwrite(tmp_path / "a.mtx")
    lines = (tmp_path / "a.mtx").read_text().splitlines()
    assert lines[:2] == ["%%MatrixMarket matrix coordinate real general", "3 3 4"]
    assert lines[2:] == ["1 2 3.0", "2 2 -2.0", "3 1 7.0", "3 3 4.0"]


def test_solvers_match_numpy(executor):
    n = 64
    builder = qd.linalg.SparseMatrixBuilder(n, n, max_num_triplets=3 * n, dtype=qd.f64)
    laplacian(builder, n, 0.25)
    A = builder.build()
    want_matrix = np.diag(np.full(n, 2.25)) - np.eye(n, k=1) - np.eye(n, k=-1)
    np.testing.assert_array_equal(A.to_numpy(), want_matrix)
    b = np.linspace(-1, 1, n)
    want = np.linalg.solve(want_matrix, b)
    for solver_type in ("LLT", "LDLT", "LU"):
        for ordering in ("AMD", "COLAMD"):
            solver = qd.linalg.SparseSolver(qd.f64, solver_type, ordering)
            solver.analyze_pattern(A)
            solver.factorize(A)
            np.testing.assert_allclose(solver.solve(b), want, rtol=1e-10)
            assert solver.info()
    rhs = qd.ndarray(qd.f64, (n,))
    rhs.from_numpy(b)
    solver = qd.linalg.SparseSolver(qd.f64)
    solver.compute(A)
    np.testing.assert_allclose(solver.solve(rhs).to_numpy(), want, rtol=1e-10)
    x, converged = qd.linalg.SparseCG(A, b, max_iter=200, atol=1e-10).solve()
    assert converged
    np.testing.assert_allclose(x, want, rtol=1e-8)


def test_a_singular_matrix_fails_visibly():
    A = qd.linalg.SparseMatrix(3, 3, dtype=qd.f64)
    A[0, 0] = 1.0
    solver = qd.linalg.SparseSolver(qd.f64, "LU")
    solver.compute(A)
    assert not solver.info()
    assert np.isnan(solver.solve(np.ones(3))).all()


def test_misuse_is_named(rng):
    builder = qd.linalg.SparseMatrixBuilder(10, 10, max_num_triplets=5, dtype=qd.f64)
    laplacian(builder, 10, 0.0)  # 28 entries for 5 slots: none lost silently
    with pytest.raises(RuntimeError, match=r"kernels added 28 entries, more than max_num_triplets=5: make the "
                                           r"builder with max_num_triplets >= 28"):
        builder.build()
    small = qd.linalg.SparseMatrixBuilder(4, 4, max_num_triplets=10, dtype=qd.f64)
    scatter(small, np.array([1, 7], np.int32), np.array([0, 2], np.int32), np.array([1.0, 2.0]))
    with pytest.raises(IndexError, match=r"entry \(7, 2\) is outside the 4 x 4 matrix"):
        small.build()
    with pytest.raises(ValueError, match="Dimension mismatch between sparse matrices"):
        qd.linalg.SparseMatrix(2, 3) + qd.linalg.SparseMatrix(3, 2)
    with pytest.raises(ValueError, match="storage_format must be 'col_major' or 'row_major'"):
        qd.linalg.SparseMatrixBuilder(2, 2, max_num_triplets=4, storage_format="diagonal")
    with pytest.raises(ValueError, match="The solver type QR with AMD is not supported"):
        qd.linalg.SparseSolver(qd.f32, "QR")

    @qd.kernel
    def one_index(A: qd.types.sparse_matrix_builder()):
        for i in range(4):
            A[i] += 1.0

    with pytest.raises(qd.TranspileError, match=r"test_sparse_matrix.py:\d+:\d+: error: a sparse matrix builder "
                                                r"takes `A\[i, j\] \+= value`"):
        one_index(small)


@pytest.mark.toolchain
@pytest.mark.parametrize("target", target_names())
def test_the_builder_kernel_compiles(target):
    tr = qd.translate(laplacian, target, arg_types={"A_values": qd.lang.NdarrayAnnotation(qd.f32, 1)}, warn=False)
    source = "\n".join(tr.sources.values())
    assert "A_count" in source and "A_rows" in source
    for v in check_sources(target, tr.sources, tr.manifest):
        assert v.ok, f"{v.tool} rejected {v.file}:\n{v.message}"

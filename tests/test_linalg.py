"""qd.linalg's matrix-free solvers (LinearOperator, MatrixFreeCG, MatrixFreeBICGSTAB): each step a
kernel of this package; the solutions checked against NumPy's dense solve of the same operator."""
from __future__ import annotations

import numpy as np
import pytest

import transpiler as qd
from transpiler.linalg import LinearOperator, MatrixFreeBICGSTAB, MatrixFreeCG

G = 8


def _dense(weight_below: float) -> np.ndarray:
    """The operator of `stencil` below as a dense (G*G, G*G) matrix."""
    m = np.zeros((G, G, G, G))
    for i in range(G):
        for j in range(G):
            m[i, j, i, j] = 20.0
            for (di, dj), w in (((-1, 0), 1.0), ((1, 0), 1.0), ((0, 1), 1.0), ((0, -1), weight_below)):
                if 0 <= i + di < G and 0 <= j + dj < G:
                    m[i, j, i + di, j + dj] = -w
    return m.reshape(G * G, G * G)


@pytest.mark.parametrize("solver,below", [(MatrixFreeCG, 1.0), (MatrixFreeBICGSTAB, 2.5)])
def test_matrix_free_solvers_solve_what_numpy_solves(executor, rng, solver, below):
    x = qd.field(qd.f32, shape=(G, G))
    b = qd.field(qd.f32, shape=(G, G))

    @qd.kernel
    def stencil(v: qd.template(), mv: qd.template(), below: qd.f32):
        for i, j in v:
            left = v[i - 1, j] if i - 1 >= 0 else 0.0
            right = v[i + 1, j] if i + 1 <= G - 1 else 0.0
            up = v[i, j + 1] if j + 1 <= G - 1 else 0.0
            down = v[i, j - 1] if j - 1 >= 0 else 0.0
            mv[i, j] = 20.0 * v[i, j] - left - right - up - below * down

    bv = rng.standard_normal((G, G)).astype(np.float32)
    b.from_numpy(bv)
    A = LinearOperator(lambda v, mv: stencil(v, mv, below))  # symmetric only for below == 1: CG's case
    assert solver(A, b, x, tol=1e-5, maxiter=200)
    want = np.linalg.solve(_dense(below), bv.reshape(-1).astype(np.float64)).reshape(G, G)
    np.testing.assert_allclose(x.to_numpy(), want, rtol=1e-4, atol=1e-5)


def test_what_qd_linalg_lacks_is_named():
    with pytest.raises(AttributeError, match="did you mean qd.linalg.SparseMatrix"):
        qd.linalg.SparseMatrx  # noqa: B018
    with pytest.raises(RuntimeError, match="Dimension mismatch"):
        MatrixFreeCG(LinearOperator(None), qd.field(qd.f32, shape=4), qd.field(qd.f32, shape=5))

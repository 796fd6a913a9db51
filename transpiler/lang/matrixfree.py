"""``qd.linalg``'s matrix-free solvers, as Quadrants has them: ``LinearOperator`` wraps a kernel
``matvec(x, Ax)`` over fields, and ``MatrixFreeCG`` / ``MatrixFreeBICGSTAB`` solve ``A x = b``
with it, each step a kernel of this package (the dot products are kernel-scope reductions).
The sparse-matrix classes (``SparseMatrix``, its builder and solvers) are not provided."""
# (no `from __future__ import annotations`: the kernels below annotate with a closure variable)

import math

from . import ops
from .field import Field, field
from .kernel import kernel, template
from .names import Namespace

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..ir.types import DType

# The work fields of a solve, by (shape, dtype): kept so that the kernels over them are
# translated once, not at every solve.
_work: dict = {}
_kernels: dict = {}


class LinearOperator:
    """``A = LinearOperator(matvec)``: ``matvec(x, Ax)`` writes ``A @ x`` into ``Ax``."""

    def __init__(self, matvec_kernel: "Callable[[Field, Field], None]"):
        self._matvec = matvec_kernel

    def matvec(self, x: Field, Ax: Field) -> None:
        if x.shape != Ax.shape:
            raise RuntimeError(f"Dimension mismatch x.shape{x.shape} != Ax.shape{Ax.shape}.")
        self._matvec(x, Ax)


def _vector_kernels(dtype: "DType"):
    """The solvers' vector operations over fields of ``dtype``: dot, y = a x + b y, y = x."""
    found = _kernels.get(dtype)
    if found is not None:
        return found

    @kernel
    def dot(p: template(), q: template()) -> dtype:
        total = dtype(0.0)
        for I in ops.grouped(p):
            total += p[I] * q[I]
        return total

    @kernel
    def combine(y: template(), a: dtype, x: template(), b: dtype):
        for I in ops.grouped(y):
            y[I] = a * x[I] + b * y[I]

    @kernel
    def combine3(y: template(), a: dtype, x: template(), b: dtype, z: template()):
        for I in ops.grouped(y):
            y[I] = y[I] + a * x[I] + b * z[I]

    found = _kernels[dtype] = (dot, combine, combine3)
    return found


def _checked(b: Field, x: Field, solver: str):
    if b.dtype != x.dtype:
        raise TypeError(f"Dtype mismatch b.dtype({b.dtype}) != x.dtype({x.dtype}).")
    if not b.dtype.is_float:
        raise TypeError(f"Not supported dtype: {b.dtype}")
    if b.shape != x.shape:
        raise RuntimeError(f"Dimension mismatch b.shape{b.shape} != x.shape{x.shape}.")
    if not 1 <= len(b.shape) <= 3:
        raise RuntimeError(f"{solver} only support 1D, 2D, 3D inputs; your inputs is {len(b.shape)}-D.")
    key = (b.shape, b.dtype)
    work = _work.get(key)
    if work is None:
        work = _work[key] = [field(b.dtype, shape=b.shape) for _ in range(6)]
    return work, _vector_kernels(b.dtype)


def MatrixFreeCG(A: LinearOperator, b: Field, x: Field, tol: float = 1e-6, maxiter: int = 5000,
                 quiet: bool = True) -> bool:
    """Conjugate gradients for a symmetric positive-definite ``A``: ``x`` (the initial guess)
    becomes the solution; True when the residual's norm fell below ``tol``."""
    (r, p, Ap, Ax, _, _), (dot, combine, _) = _checked(b, x, "MatrixFreeCG")
    A.matvec(x, Ax)
    combine(r, 1.0, b, 0.0)
    combine(r, -1.0, Ax, 1.0)      # r = b - A x
    combine(p, 1.0, r, 0.0)        # p = r
    rr = dot(r, r)
    if not quiet:
        print(f">>> Initial residual = {rr:e}")
    if math.sqrt(rr) < tol:
        return True
    for i in range(maxiter):
        A.matvec(p, Ap)
        alpha = rr / dot(p, Ap)
        combine(x, alpha, p, 1.0)
        combine(r, -alpha, Ap, 1.0)
        new = dot(r, r)
        if not quiet:
            print(f">>> Iter = {i + 1:4}, Residual = {math.sqrt(new):e}")
        if math.sqrt(new) < tol:
            return True
        combine(p, 1.0, r, new / rr)  # p = r + beta p
        rr = new
    return False


def MatrixFreeBICGSTAB(A: LinearOperator, b: Field, x: Field, tol: float = 1e-6, maxiter: int = 5000,
                       quiet: bool = True) -> bool:
    """Stabilized biconjugate gradients for a general (non-symmetric) ``A``: ``x`` becomes the
    solution; True when the residual's norm fell below ``tol``."""
    (r, r0, p, v, s, t), (dot, combine, combine3) = _checked(b, x, "MatrixFreeBICGSTAB")
    A.matvec(x, v)
    combine(r, 1.0, b, 0.0)
    combine(r, -1.0, v, 1.0)       # r = b - A x
    combine(r0, 1.0, r, 0.0)
    if math.sqrt(dot(r, r)) < tol:
        return True
    rho_old = alpha = omega = 1.0
    for i in range(maxiter):
        rho = dot(r0, r)
        if rho == 0.0:
            return False
        if i == 0:
            combine(p, 1.0, r, 0.0)
        else:
            beta = (rho / rho_old) * (alpha / omega)
            combine(p, -omega, v, 1.0)    # p - omega v
            combine(p, 1.0, r, beta)      # r + beta (p - omega v)
        A.matvec(p, v)
        alpha = rho / dot(r0, v)
        combine(s, 1.0, r, 0.0)
        combine(s, -alpha, v, 1.0)        # s = r - alpha v
        if math.sqrt(dot(s, s)) < tol:
            combine(x, alpha, p, 1.0)
            return True
        A.matvec(s, t)
        omega = dot(t, s) / dot(t, t)
        combine3(x, alpha, p, omega, s)   # x += alpha p + omega s
        combine(r, 1.0, s, 0.0)
        combine(r, -omega, t, 1.0)        # r = s - omega t
        residual = math.sqrt(dot(r, r))
        if not quiet:
            print(f">>> Iter = {i + 1:4}, Residual = {residual:e}")
        if residual < tol:
            return True
        rho_old = rho
    return False


def namespace() -> Namespace:
    """``qd.linalg``: the matrix-free solvers, and the sparse matrices (lang/sparse.py) once asked for."""
    sparse = {name: "transpiler.lang.sparse" for name in
              ("SparseMatrix", "SparseMatrixBuilder", "SparseSolver", "SparseCG", "sparse_matrix_builder")}
    return Namespace("qd.linalg", lazy=sparse, LinearOperator=LinearOperator, MatrixFreeCG=MatrixFreeCG,
                     MatrixFreeBICGSTAB=MatrixFreeBICGSTAB)

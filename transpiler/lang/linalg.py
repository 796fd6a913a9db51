"""``qd.polar_decompose`` and ``qd.svd`` of 2x2 matrices, written once in the kernel language
(the frontend inlines them like any ``@qd.func``). The arithmetic is the closed form and the
single Jacobi rotation Quadrants uses for 2x2 (Jiang et al., "Notes on the SVD of 2x2 and 3x3
matrices"), in the same order, so results match Quadrants' as well as NumPy's decompositions."""
from __future__ import annotations

from . import ops
from .kernel import func, template
from .matrix import Matrix


@func
def polar_decompose2d(A, dt: template()):
    """A = U @ P, U orthogonal (a reflection when det A < 0), P symmetric; the zero matrix
    gives (I, 0)."""
    U = Matrix.identity(dt, 2)
    P = ops.cast(A, dt)
    if A[0, 0] != 0 or A[0, 1] != 0 or A[1, 0] != 0 or A[1, 1] != 0:
        det = A[0, 0] * A[1, 1] - A[1, 0] * A[0, 1]
        B = Matrix([[A[0, 0] + A[1, 1], A[0, 1] - A[1, 0]],
                    [A[1, 0] - A[0, 1], A[1, 1] + A[0, 0]]], dt)
        if det < 0:
            B = Matrix([[A[0, 0] - A[1, 1], A[0, 1] + A[1, 0]],
                        [A[1, 0] + A[0, 1], A[1, 1] - A[0, 0]]], dt)
        scale = ops.cast(1.0, dt) / ops.sqrt(abs(B[0, 0] * B[1, 1] - B[1, 0] * B[0, 1]))
        U = B * scale
        P = (A.transpose() @ A + abs(det) * Matrix.identity(dt, 2)) * scale
    return U, P


@func
def svd2d(A, dt: template()):
    """A = U @ diag(s1, s2) @ V.T with s1 >= s2: the polar decomposition's symmetric factor
    diagonalised by one rotation."""
    R, S = polar_decompose2d(A, dt)
    c = ops.cast(1.0, dt)
    s = ops.cast(0.0, dt)
    s1 = S[0, 0]
    s2 = S[1, 1]
    if abs(S[0, 1]) >= 1e-5:
        tau = ops.cast(0.5, dt) * (S[0, 0] - S[1, 1])
        w = ops.sqrt(tau * tau + S[0, 1] * S[0, 1])
        t = ops.cast(0.0, dt)
        if tau > 0:
            t = S[0, 1] / (tau + w)
        else:
            t = S[0, 1] / (tau - w)
        c = 1 / ops.sqrt(t * t + 1)
        s = -t * c
        s1 = c * c * S[0, 0] - 2 * c * s * S[0, 1] + s * s * S[1, 1]
        s2 = s * s * S[0, 0] + 2 * c * s * S[0, 1] + c * c * S[1, 1]
    V = Matrix([[c, s], [-s, c]], dt)
    if s1 < s2:
        s1, s2 = s2, s1
        V = Matrix([[-s, c], [-c, -s]], dt)
    return R @ V, Matrix([[s1, 0.0], [0.0, s2]], dt), V

"""``qd.polar_decompose`` and ``qd.svd`` of 2x2 and 3x3 matrices (and ``qd.sym_eig`` and
``qd.make_spd`` of symmetric 2x2 to 6x6 ones, at the end), written once in the kernel
language (the frontend inlines them like any ``@qd.func``). For 2x2 the arithmetic is the
closed form and the single Jacobi rotation Quadrants uses (Jiang et al., "Notes on the SVD of
2x2 and 3x3 matrices"), in the same order, so results match Quadrants'. For 3x3, cyclic
Jacobi on A^T A with Quadrants' conventions (rotations, singular values in decreasing order,
det A's sign on the last): the same factors up to rounding, and NumPy's singular values."""
from __future__ import annotations

from ..ir.types import f32
from . import ops
from .kernel import func, static, template
from .matrix import Matrix, Vector


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


@func
def _jacobi_rotate(S, V, p: template(), q: template()):
    """One Jacobi rotation zeroing the symmetric S[p, q] (and S[q, p]): S = J^T S J, V = V J."""
    if S[p, q] != 0:
        theta = (S[q, q] - S[p, p]) / (2 * S[p, q])
        t = 1 / (abs(theta) + ops.sqrt(theta * theta + 1))
        if theta < 0:
            t = -t
        c = 1 / ops.sqrt(t * t + 1)
        s = t * c
        J = Matrix.identity(ops.typeof(c), 3)
        J[p, p] = c
        J[q, q] = c
        J[p, q] = s
        J[q, p] = -s
        S = J.transpose() @ S @ J
        V = V @ J
    return S, V


@func
def svd3d(A, dt: template()):
    """A = U @ diag(s1, s2, s3) @ V.T, U and V rotations (determinant +1) and s1 >= s2 >= |s3|:
    the sign of det A is carried by s3, as in Quadrants. V holds the eigenvectors of A^T A
    (cyclic Jacobi, a fixed number of sweeps: quadratic convergence reaches the dtype's
    precision well within them); U's columns are A's images of them, orthonormalised."""
    S = A.transpose() @ A
    V = Matrix.identity(dt, 3)
    for _ in range(static(6 if dt == f32 else 10)):
        S, V = _jacobi_rotate(S, V, 0, 1)
        S, V = _jacobi_rotate(S, V, 0, 2)
        S, V = _jacobi_rotate(S, V, 1, 2)
    # Columns in decreasing order of the eigenvalues (the singular values squared).
    for i, j in static(((0, 1), (0, 2), (1, 2))):
        if S[j, j] > S[i, i]:
            S[i, i], S[j, j] = S[j, j], S[i, i]
            for r in static(range(3)):
                V[r, i], V[r, j] = V[r, j], V[r, i]
    if V.determinant() < 0:
        for r in static(range(3)):
            V[r, 2] = -V[r, 2]
    AV = A @ V
    u0 = Vector([AV[0, 0], AV[1, 0], AV[2, 0]])
    u1 = Vector([AV[0, 1], AV[1, 1], AV[2, 1]])
    n0 = u0.norm()
    if n0 > 0:
        u0 = u0 / n0
    else:
        u0 = Vector([1.0, 0.0, 0.0], dt)
    u1 = u1 - u0.dot(u1) * u0
    n1 = u1.norm()
    if n1 > n0 * 1e-6 and n1 > 0:
        u1 = u1 / n1
    else:  # rank 1 (or 0): any unit vector orthogonal to u0
        u1 = Vector([-u0[1], u0[0], 0.0], dt)
        if abs(u0[2]) > abs(u0[0]):
            u1 = Vector([0.0, -u0[2], u0[1]], dt)
        u1 = u1.normalized()
    u2 = u0.cross(u1)
    U = Matrix.cols([u0, u1, u2])
    s3 = u2.dot(Vector([AV[0, 2], AV[1, 2], AV[2, 2]]))
    return U, Matrix([[n0, 0.0, 0.0], [0.0, u1.dot(Vector([AV[0, 1], AV[1, 1], AV[2, 1]])), 0.0],
                      [0.0, 0.0, s3]], dt), V


@func
def polar_decompose3d(A, dt: template()):
    U, sig, V = svd3d(A, dt)
    return U @ V.transpose(), V @ sig @ V.transpose()


@func
def solve_small(A, b, dt: template()):
    """``qd.solve(A, b)`` for 2x2 and 3x3: Gaussian elimination on [A | b] with partial
    pivoting (the row with the largest magnitude in the column, the first of equals), then
    back substitution, in Quadrants' order of operations."""
    n = static(A.n)
    Ab = Matrix.zero(dt, n, n + 1)
    for i in static(range(n)):
        for j in static(range(n)):
            Ab[i, j] = A[i, j]
        Ab[i, n] = b[i]
    for i in static(range(n)):
        pivot = i
        largest = abs(Ab[i, i])
        for j in static(range(i + 1, n)):
            if abs(Ab[j, i]) > largest:
                pivot = j
                largest = abs(Ab[j, i])
        for j in static(range(i + 1, n)):  # one swap, of row i with the pivot's
            if pivot == j:
                for col in static(range(n + 1)):
                    Ab[i, col], Ab[j, col] = Ab[j, col], Ab[i, col]
        for j in static(range(i + 1, n)):
            scale = Ab[j, i] / Ab[i, i]
            Ab[j, i] = 0.0
            for k in static(range(i + 1, n + 1)):
                Ab[j, k] -= Ab[i, k] * scale
    x = Vector.zero(dt, n)
    for i in static(range(n - 1, -1, -1)):
        x[i] = Ab[i, n]
        for k in static(range(i + 1, n)):
            x[i] -= Ab[i, k] * x[k]
        x[i] = x[i] / Ab[i, i]
    return x


@func
def sym_eig_small(A, dt: template()):
    """``qd.sym_eig(A)`` of a symmetric n x n A, 2 <= n <= 6: (w, Q) with A = Q diag(w) Q^T,
    w ascending and Q's columns the eigenvectors. Cyclic Jacobi as Quadrants runs it (Golub
    and Van Loan 8.5): 12 sweeps, each zeroing every off-diagonal W[p, q] (p < q, row by row)
    larger than 1e-30 with one rotation applied to W's columns, then its rows, then Q's
    columns; then a selection sort of the eigenvalues, Q's columns swapped along. The same
    operations in the same order, so the same results."""
    n = static(A.n)
    W = Matrix.zero(dt, n, n)
    for i in static(range(n)):
        for j in static(range(n)):
            W[i, j] = A[i, j]
    Q = Matrix.identity(dt, n)
    one = ops.cast(1.0, dt)
    for _ in range(12):
        for p in static(range(n)):
            for q in static(range(p + 1, n)):
                apq = W[p, q]
                if abs(apq) > 1e-30:
                    diff = W[q, q] - W[p, p]
                    t = one
                    if abs(diff) < 1e-30:
                        if apq < 0.0:
                            t = -one
                    else:
                        theta = diff / (2.0 * apq)
                        t = 1.0 / (abs(theta) + ops.sqrt(1.0 + theta * theta))
                        if theta < 0.0:
                            t = -t
                    c = 1.0 / ops.sqrt(1.0 + t * t)
                    s = t * c
                    for r in static(range(n)):
                        wrp, wrq = W[r, p], W[r, q]
                        W[r, p] = c * wrp - s * wrq
                        W[r, q] = s * wrp + c * wrq
                    for k in static(range(n)):
                        wpk, wqk = W[p, k], W[q, k]
                        W[p, k] = c * wpk - s * wqk
                        W[q, k] = s * wpk + c * wqk
                    W[p, q] = 0.0
                    W[q, p] = 0.0
                    for r in static(range(n)):
                        vrp, vrq = Q[r, p], Q[r, q]
                        Q[r, p] = c * vrp - s * vrq
                        Q[r, q] = s * vrp + c * vrq
    w = Vector.zero(dt, n)
    for i in static(range(n)):
        w[i] = W[i, i]
    for i in static(range(n)):
        smallest = w[i]
        at = i
        for j in static(range(i + 1, n)):
            if w[j] < smallest:
                smallest = w[j]
                at = j
        if at != i:
            for j in static(range(i + 1, n)):  # the swap, with column `at` picked at run time
                if at == j:
                    w[j] = w[i]
                    for r in static(range(n)):
                        Q[r, i], Q[r, j] = Q[r, j], Q[r, i]
            w[i] = smallest
    return w, Q


@func
def make_spd_small(A, dt: template()):
    """``qd.make_spd(A)``: the nearest positive semi-definite matrix to a symmetric A in the
    Frobenius norm, Q diag(max(w, 0)) Q^T (a negative eigenvalue times 0.0, as Quadrants)."""
    n = static(A.n)
    w, Q = sym_eig_small(A, dt)
    for i in static(range(n)):
        if w[i] < 0.0:
            w[i] = w[i] * 0.0
    out = Matrix.zero(dt, n, n)
    for i in static(range(n)):
        for j in static(range(n)):
            acc = ops.cast(0.0, dt)
            for k in static(range(n)):
                acc = acc + Q[i, k] * w[k] * Q[j, k]
            out[i, j] = acc
    return out


@func
def eig2x2(A, dt: template()):
    """``qd.eig(A)`` of a real 2x2 A: the eigenvalues as rows (re, im) and the eigenvectors as
    columns (re0, im0, re1, im1), normalised. By Cayley-Hamilton the first column of
    A - l2 I is an eigenvector for l1 (and the other way round); a multiple of the identity
    takes the unit vectors. Quadrants' closed form, in its order of operations."""
    tr = A.trace()
    det = A.determinant()
    gap = tr ** 2 - 4 * det
    l1 = Vector.zero(dt, 2)
    l2 = Vector.zero(dt, 2)
    v1 = Vector.zero(dt, 4)
    v2 = Vector.zero(dt, 4)
    if gap > 0:
        l1 = Vector([tr + ops.sqrt(gap), 0.0], dt) * 0.5
        l2 = Vector([tr - ops.sqrt(gap), 0.0], dt) * 0.5
        A1 = A - l1[0] * Matrix.identity(dt, 2)
        A2 = A - l2[0] * Matrix.identity(dt, 2)
        if A1[0, 0] == 0 and A1[0, 1] == 0 and A1[1, 0] == 0 and A1[1, 1] == 0:
            v1 = Vector([0.0, 0.0, 1.0, 0.0], dt)
            v2 = Vector([1.0, 0.0, 0.0, 0.0], dt)
        else:
            v1 = Vector([A2[0, 0], 0.0, A2[1, 0], 0.0], dt).normalized()
            v2 = Vector([A1[0, 0], 0.0, A1[1, 0], 0.0], dt).normalized()
    else:
        l1 = Vector([tr, ops.sqrt(-gap)], dt) * 0.5
        l2 = Vector([tr, -ops.sqrt(-gap)], dt) * 0.5
        A1r = A - l1[0] * Matrix.identity(dt, 2)
        A1i = -l1[1] * Matrix.identity(dt, 2)
        A2r = A - l2[0] * Matrix.identity(dt, 2)
        A2i = -l2[1] * Matrix.identity(dt, 2)
        v1 = Vector([A2r[0, 0], A2i[0, 0], A2r[1, 0], A2i[1, 0]], dt).normalized()
        v2 = Vector([A1r[0, 0], A1i[0, 0], A1r[1, 0], A1i[1, 0]], dt).normalized()
    return Matrix.rows([l1, l2]), Matrix.cols([v1, v2])


@func
def inverse_lu(mat, n: template()):
    """``m.inverse()`` of an n x n matrix, 5 <= n <= 12 (the frontend calls it; 1 to 4 are closed
    forms): Gauss elimination with partial pivoting, in Quadrants' order of operations so that
    the results are Quadrants', bit for bit. The pivot row is chosen at run time; the swap tests
    each candidate row, so that every index stays a translation-time one."""
    a = mat
    b = mat * 0
    for d in static(range(n)):
        b[d, d] = b[d, d] + 1
    for k in static(range(n)):
        pivot = k
        pivot_abs = abs(a[k, k])
        for p in static(range(k + 1, n)):
            cur_abs = abs(a[p, k])
            if cur_abs > pivot_abs:
                pivot_abs = cur_abs
                pivot = p
        for p in static(range(k + 1, n)):
            if pivot == p:
                for j in static(range(n)):
                    ta = a[k, j]
                    a[k, j] = a[p, j]
                    a[p, j] = ta
                    tb = b[k, j]
                    b[k, j] = b[p, j]
                    b[p, j] = tb
        for i in static(range(k + 1, n)):
            m = a[i, k] / a[k, k]
            a[i, k] = m
            for j in static(range(k + 1, n)):
                a[i, j] = a[i, j] - m * a[k, j]
            for j in static(range(n)):
                b[i, j] = b[i, j] - m * b[k, j]
    inv = mat * 0
    for col in static(range(n)):
        for i in static(range(n - 1, -1, -1)):
            s = b[i, col]
            for j in static(range(i + 1, n)):
                s = s - a[i, j] * inv[j, col]
            inv[i, col] = s / a[i, i]
    return inv

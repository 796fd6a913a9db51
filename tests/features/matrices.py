"""Matrices as their scalars: qd.Matrix literals, `@` with a vector and a matrix, transpose,
determinant and inverse (3x3), an outer product, and rows indexed statically."""
import transpiler as qd


@qd.kernel
def matrices(m: qd.types.ndarray(dtype=qd.math.mat3, ndim=1), out: qd.types.ndarray(dtype=qd.math.vec3, ndim=1)):
    for i in range(m.shape[0]):
        a = m[i]
        r = qd.Matrix([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
        b = r @ a.transpose() + qd.math.vec3(1.0).outer_product(a[0])
        out[i] = b.inverse() @ a[1] * a.determinant()

"""Multi-dimensional arrays: qd.ndrange over two and three dimensions, row-major indexing."""
import transpiler as qd


@qd.kernel
def transpose_scale(a: qd.types.ndarray(dtype=qd.f32, ndim=2), b: qd.types.ndarray(dtype=qd.f32, ndim=2),
                    s: qd.f32):
    for i, j in qd.ndrange(a.shape[0], a.shape[1]):
        b[j, i] = a[i, j] * s


@qd.kernel
def box3(v: qd.types.ndarray(dtype=qd.i32, ndim=3), out: qd.types.ndarray(dtype=qd.i32, ndim=3)):
    for i, j, k in qd.ndrange((1, v.shape[0] - 1), (1, v.shape[1] - 1), v.shape[2]):
        out[i, j, k] = v[i - 1, j, k] + v[i + 1, j, k] + v[i, j - 1, k] + v[i, j + 1, k]

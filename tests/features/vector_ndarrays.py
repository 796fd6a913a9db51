"""ndarrays of vectors and matrices laid out as NumPy's (..., 3) arrays: whole elements read
and written, a component through a[i][k] and a[i].y, and `+=` on an element as one atomic
per component."""
import transpiler as qd


@qd.kernel
def vector_ndarrays(points: qd.types.ndarray(dtype=qd.math.vec3, ndim=2), cell: qd.types.ndarray(dtype=qd.i32, ndim=1),
                    sums: qd.types.ndarray(dtype=qd.math.vec3, ndim=1), frames: qd.types.ndarray(dtype=qd.math.mat2, ndim=1)):
    for i, j in qd.ndrange(points.shape[0], points.shape[1]):
        p = points[i, j]
        sums[cell[i]] += p
        points[i, j].y = p[0] + frames[i][1, 0]

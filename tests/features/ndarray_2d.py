"""A 2-D ndarray: row-major indexing over its extents, and a qd.ndrange task."""
import transpiler as qd


@qd.kernel
def transpose(src: qd.types.ndarray(dtype=qd.f32, ndim=2), dst: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i, j in qd.ndrange(src.shape[0], src.shape[1]):
        dst[j, i] = src[i, j]

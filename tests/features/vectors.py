"""Vectors as their scalars: construction, element-wise arithmetic with broadcast, swizzles,
component assignment, dot / cross / normalized, qd.math functions, a comparison reduced
with .any(), and a vector indexed at run time."""
import transpiler as qd


@qd.kernel
def vectors(a: qd.types.ndarray(dtype=qd.f32, ndim=2), out: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(a.shape[0]):
        p = qd.math.vec3(a[i, 0], a[i, 1], a[i, 2])
        up = qd.math.vec3(0.0, 1.0, 0.0)
        n = qd.math.normalize(p.cross(up))
        q = p * 2.0 - n.zxy
        q.y = qd.math.clamp(q.y, -1.0, 1.0)
        if (q < 0.0).any():
            q = -q
        for k in range(3):
            out[i, k] = q[k] + p.dot(n)

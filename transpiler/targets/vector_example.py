"""The kernel docs/lowering.md shows line by line for vectors and matrices (see
lowering_tables.vector_rows): each table row is what the targets emit for one line here."""
import transpiler as qd

vec3, mat3 = qd.math.vec3, qd.math.mat3


@qd.kernel
def vectors(p: qd.types.ndarray(dtype=vec3, ndim=1), m: qd.types.ndarray(dtype=mat3, ndim=1)):  # noqa: ANN201 - a kernel: no return annotation
    for i in range(p.shape[0]):
        a = p[i]
        b = a * 2.0 + 1.0
        c = a.cross(b)
        r = m[i] @ c
        p[i] = r.normalized() * a.dot(b)
        p[0] += r

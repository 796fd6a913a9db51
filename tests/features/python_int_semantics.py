"""Python's // and % (floor, sign of the divisor), ** on integers, and / giving a float."""
import transpiler as qd


@qd.kernel
def int_semantics(a: qd.types.ndarray(dtype=qd.i32, ndim=1), b: qd.types.ndarray(dtype=qd.i32, ndim=1),
                  q: qd.types.ndarray(dtype=qd.i32, ndim=1), r: qd.types.ndarray(dtype=qd.i32, ndim=1),
                  p: qd.types.ndarray(dtype=qd.i32, ndim=1), t: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(a.shape[0]):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
        p[i] = a[i] ** 3
        t[i] = a[i] / b[i]

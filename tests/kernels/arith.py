"""Arithmetic with Python semantics and Quadrants' promotion rules."""
import transpiler as qd


@qd.kernel
def arith(a: qd.types.ndarray(dtype=qd.i32, ndim=1), b: qd.types.ndarray(dtype=qd.i32, ndim=1),
          u: qd.types.ndarray(dtype=qd.u32, ndim=1), f: qd.types.ndarray(dtype=qd.f32, ndim=1),
          out_i: qd.types.ndarray(dtype=qd.i32, ndim=2), out_u: qd.types.ndarray(dtype=qd.u32, ndim=2),
          out_f: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(a.shape[0]):
        x = a[i]
        y = b[i]
        out_i[i, 0] = x // y
        out_i[i, 1] = x % y
        out_i[i, 2] = x * 3 - y + 7
        out_i[i, 3] = (x << 2) ^ (y >> 1) | (x & 0xFF)
        out_i[i, 4] = -x + ~y
        out_i[i, 5] = x ** 3
        out_f[i, 0] = x / y          # true division: an f32
        out_f[i, 1] = f[i] // 0.75   # float floor division
        out_f[i, 2] = f[i] % 0.75    # float modulo takes the divisor's sign
        out_f[i, 3] = f[i] * x + 0.5
        out_f[i, 4] = f[i] ** 2.0
        out_u[i, 0] = u[i] // 7
        out_u[i, 1] = u[i] % 7
        out_u[i, 2] = u[i] * 2654435761 + 1
        out_u[i, 3] = u[i] >> 3

"""Every scalar dtype as a parameter, narrow and wide integers, f16 and f64."""
import transpiler as qd


@qd.kernel
def widen(a8: qd.i8, a16: qd.i16, a32: qd.i32, a64: qd.i64, b8: qd.u8, b16: qd.u16, b32: qd.u32, b64: qd.u64,
          h: qd.f16, f: qd.f32, d: qd.f64, out: qd.types.ndarray(dtype=qd.f64, ndim=1)):
    for i in range(1):
        out[0] = a8 + a16 + a32 + a64
        out[1] = b8 + b16 + b32 + b64
        out[2] = h + f + d
        out[3] = a8 * b8
        out[4] = qd.cast(a64 * 3, qd.f64)


@qd.kernel
def narrow(x: qd.types.ndarray(dtype=qd.u8, ndim=1), y: qd.types.ndarray(dtype=qd.i16, ndim=1),
           h: qd.types.ndarray(dtype=qd.f16, ndim=1), big: qd.types.ndarray(dtype=qd.i64, ndim=1)):
    for i in range(x.shape[0]):
        x[i] = x[i] + qd.u8(200)          # wraps modulo 256
        y[i] = y[i] * qd.i16(3) - 1
        h[i] = h[i] * 0.5 + 1.0
        big[i] = big[i] * 4000000000 + i

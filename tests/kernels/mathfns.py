"""Math functions, min/max/abs/select, and the integer bit helpers."""
import transpiler as qd


@qd.kernel
def mathfns(x: qd.types.ndarray(dtype=qd.f32, ndim=1), k: qd.types.ndarray(dtype=qd.u32, ndim=1),
            out: qd.types.ndarray(dtype=qd.f32, ndim=2), bits: qd.types.ndarray(dtype=qd.i32, ndim=2)):
    for i in range(x.shape[0]):
        v = x[i]
        out[i, 0] = qd.sqrt(abs(v)) + qd.exp(-v * v) + qd.log(1.0 + abs(v))
        out[i, 1] = qd.sin(v) * qd.cos(v) + qd.tanh(v)
        out[i, 2] = qd.floor(v) + qd.ceil(v) + qd.round(v) + qd.trunc(v)
        out[i, 3] = qd.atan2(v, 1.5) + qd.pow(abs(v), 1.5)
        out[i, 4] = max(v, 0.25) - min(v, -0.25, 0.5 * v)
        out[i, 5] = qd.select(v > 0.0, v, 0.0)
        bits[i, 0] = qd.math.popcnt(k[i])
        bits[i, 1] = qd.math.clz(k[i])
        bits[i, 2] = qd.math.ffs(k[i])
        bits[i, 3] = qd.math.popcnt(qd.i64(k[i]) << 20)

"""Math functions on f32, Python's ** and % on floats, and infinities."""
import transpiler as qd


@qd.kernel
def float_math(x: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(x.shape[0]):
        v = x[i]
        out[i, 0] = qd.sqrt(qd.abs(v)) + qd.exp(-v * v)
        out[i, 1] = qd.atan2(v, 2.0) + qd.tanh(v)
        out[i, 2] = v ** 2.5 if v > 0.0 else qd.math.inf
        out[i, 3] = v % 1.5
        out[i, 4] = qd.floor(v) + qd.round(v)

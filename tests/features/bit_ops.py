"""Bit helpers (popcnt, clz, ffs) on 32- and 64-bit integers, shifts and masks."""
import transpiler as qd


@qd.kernel
def bit_ops(u: qd.types.ndarray(dtype=qd.u32, ndim=1), w: qd.types.ndarray(dtype=qd.u64, ndim=1),
            out: qd.types.ndarray(dtype=qd.i32, ndim=2)):
    for i in range(u.shape[0]):
        out[i, 0] = qd.math.popcnt(u[i])
        out[i, 1] = qd.math.clz(u[i])
        out[i, 2] = qd.math.ffs(w[i])
        out[i, 3] = qd.cast((u[i] >> 3) & 0xff ^ (u[i] << 1), qd.i32)

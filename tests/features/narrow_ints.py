"""8- and 16-bit integers: arithmetic in int, results wrap back to the narrow type."""
import transpiler as qd


@qd.kernel
def narrow_ints(a: qd.types.ndarray(dtype=qd.i8, ndim=1), b: qd.types.ndarray(dtype=qd.u16, ndim=1)):
    for i in range(a.shape[0]):
        a[i] = a[i] * qd.i8(3) + qd.i8(1)
        b[i] = b[i] // qd.u16(3) + qd.u16(40000)

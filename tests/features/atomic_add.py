"""`a[i] += v` is an atomic add; qd.atomic_add returns the old value (a ticket)."""
import transpiler as qd


@qd.kernel
def histogram_tickets(x: qd.types.ndarray(dtype=qd.f32, ndim=1), bins: qd.types.ndarray(dtype=qd.i32, ndim=1),
               total: qd.types.ndarray(dtype=qd.f32, ndim=1), tickets: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(x.shape[0]):
        bins[i % bins.shape[0]] += 1
        total[0] += x[i]
        tickets[i] = qd.atomic_add(bins[0], 0)

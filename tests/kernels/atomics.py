"""Augmented assignment on memory is an atomic add; qd.atomic_* return the old value."""
import transpiler as qd


@qd.kernel
def histogram(data: qd.types.ndarray(dtype=qd.i32, ndim=1), bins: qd.types.ndarray(dtype=qd.i32, ndim=1),
              total: qd.types.ndarray(dtype=qd.f32, ndim=1), tickets: qd.types.ndarray(dtype=qd.i32, ndim=1),
              counter: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(data.shape[0]):
        b = data[i] % bins.shape[0]
        bins[b] += 1
        total[0] += 0.5
        tickets[i] = qd.atomic_add(counter[0], 1)
        qd.atomic_max(counter[1], data[i])
        counter[2] -= 2

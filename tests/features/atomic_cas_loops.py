"""Atomics a target has no instruction for become compare-and-swap loops (float min, mul);
float exchange goes through the value's bits where needed."""
import transpiler as qd


@qd.kernel
def cas_loops(x: qd.types.ndarray(dtype=qd.f32, ndim=1), lo: qd.types.ndarray(dtype=qd.f32, ndim=1),
                     prod: qd.types.ndarray(dtype=qd.i32, ndim=1), last: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        qd.atomic_min(lo[0], x[i])
        qd.atomic_mul(prod[0], 2)
        qd.atomic_exchange(last[0], x[i])

"""A kernel-scope variable updated in a parallel loop is a reduction (a block fold, one
atomic per block into the kernel's scratch buffer), and the kernel returns a value (its
result buffer; the manifest's `result`)."""
import transpiler as qd


@qd.kernel
def mean(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
    return total / x.shape[0]

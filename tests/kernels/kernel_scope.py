"""Kernel-scope variables, a reduction, a returned value and random numbers: the kernel's own
buffers (scratch, result) and its seed parameter, through every target and the C++ header."""
import transpiler as qd


@qd.kernel
def mean_and_noise(x: qd.types.ndarray(dtype=qd.f32, ndim=1), noise: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
        noise[i] = qd.random()
    return total / x.shape[0]

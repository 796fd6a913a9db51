"""y = a * x + y over a vector: the hello-world of GPU kernels."""
import transpiler as qd


@qd.kernel
def saxpy(a: qd.f32, x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]

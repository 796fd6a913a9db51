"""f64 arithmetic and transcendentals: native on CUDA/HIP, the f64 library's helpers on GLSL
(templates/glsl/f64.j2), a located error on Metal (no 64-bit float)."""
import transpiler as qd


@qd.kernel
def double_math(d: qd.types.ndarray(dtype=qd.f64, ndim=1)):
    for i in range(d.shape[0]):
        d[i] = qd.sqrt(d[i]) + qd.exp(d[i]) * 0.5

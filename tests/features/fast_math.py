"""The fast_math option: GLSL drops `precise` (floats may be reassociated and fused); other
targets are unchanged."""
# options: {"fast_math": True}
import transpiler as qd


@qd.kernel
def fast_math(x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        t = x[i] * y[i]
        y[i] = t + x[i]

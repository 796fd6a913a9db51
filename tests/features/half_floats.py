"""f16 storage and arithmetic: computed in f32 where the language has no half arithmetic."""
import transpiler as qd


@qd.kernel
def half_floats(h: qd.types.ndarray(dtype=qd.f16, ndim=1), scale: qd.f16):
    for i in range(h.shape[0]):
        h[i] = h[i] * scale + qd.f16(0.5)

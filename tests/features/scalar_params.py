"""Scalar parameters of every width: by value on CUDA/HIP, in the push constants (narrow ones
widened) on GLSL, in the params struct on Metal."""
import transpiler as qd


@qd.kernel
def scalar_params(flag: qd.u1, small: qd.i8, wide: qd.i64, ratio: qd.f32, half: qd.f16, count: qd.u32,
                  out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(out.shape[0]):
        v = out[i] * ratio + qd.cast(small, qd.f32) + qd.cast(half, qd.f32) + qd.cast(count, qd.f32)
        if flag:
            v += qd.cast(wide, qd.f32)
        out[i] = v

"""Reverse-mode autodiff (`kernel.grad`): the primal replayed, then walked backwards; a branch
under the condition the replay took, an inner loop run backwards (its carried product replayed
from the loop's start), reads adding into `.grad` (each its own: plain adds), a store moving `.grad` out."""
import transpiler as qd

vec = qd.types.ndarray(dtype=qd.f32, ndim=1)


@qd.kernel
def smooth_loss(x: vec, w: vec, y: vec, n: qd.i32):
    for i in range(x.shape[0]):
        t = qd.sin(x[i]) * w[i]
        if t > 0.0:
            t = qd.sqrt(t + 1.0)
        p = 1.0
        for j in range(n):
            p = p * (t + j)
        y[i] = p / (1.0 + x[i] * x[i])


FEATURE = smooth_loss.grad

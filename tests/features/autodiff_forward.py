"""Forward-mode autodiff (what a `qd.ad.FwdMode` block runs): the primal with a tangent beside
each float local, stored into `.dual` beside each store and atomic."""
import transpiler as qd

vec = qd.types.ndarray(dtype=qd.f32, ndim=1)


@qd.kernel
def energy(x: vec, y: vec, total: qd.types.ndarray(dtype=qd.f32, ndim=0)):
    for i in range(x.shape[0]):
        r = qd.exp(-x[i]) + qd.atan2(x[i], 2.0)
        y[i] = r * r
        total[None] += qd.max(r, 0.5)


FEATURE = energy._derivative("forward")

"""@qd.func: a one-expression function inlines as an expression, one with statements gets a
result variable; names of the callee never capture the caller's."""
import transpiler as qd


@qd.func
def lerp(a, b, t):
    return a + (b - a) * t


@qd.func
def clamp_count(v, hi):
    n = 0
    while v > hi:
        v -= hi
        n += 1
    return n


@qd.kernel
def funcs_inlined(x: qd.types.ndarray(dtype=qd.f32, ndim=1), n: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(x.shape[0]):
        v = lerp(x[i], 1.0, 0.25)
        x[i] = v
        n[i] = clamp_count(n[i], 7)

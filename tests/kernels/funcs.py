"""@qd.func inlining: expression functions, statement bodies, tuples, nested calls."""
import transpiler as qd


@qd.func
def square(x):
    return x * x


@qd.func
def clamp(x, lo, hi):
    return max(lo, min(x, hi))


@qd.func
def sign_and_magnitude(x: qd.f32):
    s = 1.0
    if x < 0.0:
        s = -1.0
    return s, abs(x)


@qd.func
def smoothstep(e0, e1, x):
    t = clamp((x - e0) / (e1 - e0), 0.0, 1.0)
    if t > 0.5:
        return t * t * (3.0 - 2.0 * t)
    else:
        return square(t) * (3.0 - 2.0 * t)


@qd.func
def bump(arr: qd.template(), i, amount):
    arr[i] = arr[i] + amount


@qd.kernel
def funcs(x: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=2),
          acc: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        v = x[i]
        out[i, 0] = square(v) + square(2.0)
        out[i, 1] = clamp(v, -0.5, 0.5)
        s, m = sign_and_magnitude(v)
        out[i, 2] = s * m
        out[i, 3] = smoothstep(-1.0, 1.0, v)
        bump(acc, i, v)

"""Loops over an ndarray's indices (`for i, j in a`) and over grouped indices (`qd.grouped`),
with `I[0]` and `a[I]`, and a 0-d ndarray indexed with `[None]`."""
import transpiler as qd


@qd.kernel
def struct_for(a: qd.types.ndarray(dtype=qd.f32, ndim=2), c: qd.types.ndarray(dtype=qd.f32, ndim=0)):
    for i, j in a:
        a[i, j] = a[i, j] * c[None]
    for I in qd.grouped(a):
        a[I] += I[0] * 0.5

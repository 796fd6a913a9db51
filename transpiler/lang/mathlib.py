"""``qd.math``'s GLSL-style functions, written once in the kernel language: each works on
scalars and, component by component, on vectors (the frontend inlines them like any
``@qd.func``)."""
from __future__ import annotations

import math as _pymath

from ..ir.types import f64, i32, u32, u64
from . import ops
from .kernel import func, static, template
from .ops import grouped
from .matrix import Matrix, matrix
from .vector_types import vec2


@func
def int_pow(x, n):
    """``x ** n`` on integers with ``n`` known at run time (the frontend calls it), by
    squaring. A negative ``n`` gives Python's ``x ** n`` truncated toward zero, as C's ``1 /
    x**-n``: 0 unless ``x`` is 1 or -1."""
    result = ops.cast(1, ops.typeof(x))
    base = x
    e = n
    if e < 0:
        e = -e
        if x != 1 and x != -1:
            result = ops.cast(0, ops.typeof(x))
            e = 0
    while e > 0:
        if e & 1:
            result *= base
        base *= base
        e >>= 1
    return result


@func
def float_int_pow(x, n):
    """``x ** n`` for a float ``x`` and an integer ``n`` known at run time (the frontend calls
    it), as Quadrants computes it: the running square joins the product at each set bit of
    ``|n|``, lowest first, and the reciprocal is taken for a negative ``n``."""
    result = ops.cast(1, ops.typeof(x))
    base = x
    e = n
    if e < 0:
        e = -e
    while e > 0:
        if e & 1:
            result *= base
        base *= base
        e >>= 1
    if n < 0:
        result = 1 / result
    return result


@func
def raw_mod(a, b):
    """``qd.raw_mod``: C's remainder (the dividend's sign), from Python's (the divisor's),
    which every target computes the same way."""
    r = a % b
    if r != 0 and (a < 0) != (b < 0):
        r -= b
    return r


@func
def raw_div(a, b):
    """``qd.raw_div``: C's quotient (truncated toward zero); exact, as the remainder is removed."""
    return (a - raw_mod(a, b)) // b


@func
def fill(a: template(), value):
    """``a.fill(value)`` in a kernel (the frontend calls it): every element of a field or
    ndarray set to ``value``; at the top level of a kernel its loop is a parallel task."""
    for I in grouped(a):
        a[I] = value


@func
def mix(x, y, a):
    return x * (1.0 - a) + y * a


@func
def clamp(x, xmin, xmax):
    return ops.min(xmax, ops.max(xmin, x))


@func
def step(edge, x):
    return ops.cast(x >= edge, float)


@func
def fract(x):
    return x - ops.floor(x)


@func
def smoothstep(edge0, edge1, x):
    t = clamp((x - edge0) / (edge1 - edge0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


@func
def sign(x):
    return ops.cast(x >= 0.0, float) - ops.cast(x <= 0.0, float)


@func
def normalize(v):
    return v / v.norm()  # (Quadrants divides here; v.normalized() multiplies by the reciprocal)


@func
def log2(x):
    return ops.log(x) / static(_pymath.log(2.0))


@func
def reflect(x, n):
    k = x.dot(n)
    return x - 2.0 * k * n


@func
def degrees(x):
    return x * static(180.0 / _pymath.pi)


@func
def radians(x):
    return x * static(_pymath.pi / 180.0)


@func
def distance(x, y):
    return (x - y).norm()


@func
def refract(x, n, eta):
    dxn = x.dot(n)
    k = 1.0 - eta * eta * (1.0 - dxn * dxn)
    result = x * 0  # (Quadrants' qd.zero(x): an integer x stays integer)
    if k >= 0.0:
        result = eta * x - (eta * dxn + ops.sqrt(k)) * n
    return result


@func
def dot(x, y):
    return x.dot(y)


@func
def cross(x, y):
    return x.cross(y)


@func
def mod(x, y):
    return x - y * ops.floor(x / y)


@func
def length(x):
    return x.norm()


@func
def determinant(m):
    return m.determinant()


@func
def inverse(m):
    return m.inverse()


@func
def eye(n):
    return Matrix.identity(float, n)


@func
def rotation2d(ang):
    ca, sa = ops.cos(ang), ops.sin(ang)
    return matrix(2, 2, float)([[ca, -sa], [sa, ca]])


@func
def vdir(ang):
    return vec2(ops.cos(ang), ops.sin(ang))  # a vec2: of the default float, whatever the angle's type


@func
def isinf(x):
    """1 where ``x`` is an infinity, in the default float (as Quadrants: an f64 beyond the f32
    range is an infinity when the default float is f32)."""
    return ops.isinf(ops.cast(x, float))


@func
def frexp(x):
    """``qd.frexp(x)``: ``(m, e)`` with ``x == m * 2**e`` and ``0.5 <= |m| < 1``, as C's frexp
    (0 gives (0, 0); an infinity or NaN itself and 0). Written with the bits of the value, as
    GLSL, Metal and CUDA name frexp differently (and HIP's does not lower everywhere); a
    subnormal is first scaled into the normal range."""
    m = x
    e = 0
    if static(ops.typeof(x) == f64):
        scaled = x * static(2.0 ** 64) if ops.abs(x) < static(2.0 ** -1022) else x
        bits = ops.bit_cast(scaled, u64)
        biased = i32((bits >> u64(52)) & u64(0x7FF))
        if x != 0.0 and biased != 0x7FF:
            e = biased - 1022 - (64 if ops.abs(x) < static(2.0 ** -1022) else 0)
            m = ops.bit_cast((bits & u64(0x800FFFFFFFFFFFFF)) | u64(0x3FE0000000000000), f64)
    else:
        small = ops.abs(x) < static(2.0 ** -126)
        scaled = x * static(2.0 ** 32) if small else x
        bits = ops.bit_cast(scaled, u32)
        biased = i32((bits >> u32(23)) & u32(0xFF))
        if x != 0.0 and biased != 0xFF:
            e = biased - 126 - (32 if small else 0)
            m = ops.bit_cast((bits & u32(0x807FFFFF)) | u32(0x3F000000), ops.typeof(x))
    return m, e


@func
def isnan(x):
    return ops.isnan(ops.cast(x, float))


@func
def fns(mask, base, offset):
    """CUDA's ``__fns``: the position of the ``|offset|``-th set bit of the u32 ``mask``,
    counting up from bit ``base`` (offset > 0) or down from it (offset < 0), both inclusive;
    with offset 0, ``base`` if that bit is set. 0xFFFFFFFF when there is no such bit.
    Written with one step per skipped bit (clearing the lowest or highest), not per bit."""
    m = u32(mask)
    b = u32(base)
    n = i32(offset)
    found = u32(0xFFFFFFFF)
    if n == 0:
        if b < u32(32):
            if (m >> b) & u32(1) != u32(0):
                found = b
    elif n > 0:
        if b < u32(32):
            left = m & (u32(0xFFFFFFFF) << b)
            for _ in range(n - 1):
                left &= left - u32(1)
            if left != u32(0):
                found = u32(ops.ffs(left) - 1)
    else:
        top = ops.min(b, u32(31))
        left = m & (u32(0xFFFFFFFF) >> (u32(31) - top))
        for _ in range(-n - 1):
            if left != u32(0):
                left &= ~(u32(0x80000000) >> u32(ops.clz(left)))
        if left != u32(0):
            found = u32(31 - ops.clz(left))
    return found


__all__ = ["mix", "clamp", "step", "fract", "smoothstep", "sign", "normalize", "log2", "reflect", "degrees",
           "radians", "distance", "refract", "dot", "cross", "mod", "length", "determinant", "inverse", "eye",
           "rotation2d", "vdir", "isinf", "isnan", "fns"]

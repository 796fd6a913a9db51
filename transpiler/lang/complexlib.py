"""``qd.math``'s complex-number functions: a complex number is a vec2 holding (real,
imaginary), as in Quadrants. Written in the kernel language and inlined like any ``@qd.func``."""
from __future__ import annotations

from . import ops
from .kernel import func
from .vector_types import vec2
from .mathlib import dot


@func
def cmul(z1, z2):
    return vec2(z1[0] * z2[0] - z1[1] * z2[1], z1[0] * z2[1] + z1[1] * z2[0])


@func
def cconj(z):
    return vec2(z[0], -z[1])


@func
def cdiv(z1, z2):
    # The numerator rounded to a vec2 before the division, as Quadrants has it
    return vec2(z1[0] * z2[0] + z1[1] * z2[1], -z1[0] * z2[1] + z2[0] * z1[1]) / dot(z2, z2)


@func
def cinv(z):
    return cconj(z) / dot(z, z)


@func
def cexp(z):
    scale = ops.exp(z[0])
    return vec2(scale * ops.cos(z[1]), scale * ops.sin(z[1]))


@func
def clog(z):
    return vec2(ops.log(dot(z, z)) / 2.0, ops.atan2(z[1], z[0]))


@func
def csqrt(z):
    root = vec2(0.0, 0.0)  # the square root of 0 is 0 (its angle is undefined)
    if z.any():
        half = ops.atan2(z[1], z[0]) / 2.0
        root = ops.sqrt(z.norm()) * vec2(ops.cos(half), ops.sin(half))
    return root


@func
def cpow(z, n):
    power = vec2(0.0, 0.0)  # 0 to any power is 0 here, as in Quadrants
    if z.any():
        angle = ops.atan2(z[1], z[0]) * n
        power = ops.pow(dot(z, z), n / 2.0) * vec2(ops.cos(angle), ops.sin(angle))
    return power

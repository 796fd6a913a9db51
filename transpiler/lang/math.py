"""``qd.math``: the math functions, the integer bit helpers (all return i32), the GLSL-style
vector types and functions (``vec3``, ``mat3``, ``dot``, ``clamp``, ``smoothstep``, ...)."""
from __future__ import annotations

from ..ir.types import f32, i32, u32
from ..ir.types import unsigned as _unsigned
from .mathlib import (  # noqa: F401
    clamp, cross, degrees, determinant, distance, dot, eye, fns, fract, inverse, length, log2, mix, mod, normalize,
    radians, reflect, refract, rotation2d, sign, smoothstep, step, vdir,
)
from .matrix import MatrixType
from .ops import (  # noqa: F401
    abs, acos, asin, atan, atan2, ceil, clz, cos, cosh, exp, ffs, floor, isinf, isnan, log, max, min,
    popcnt, pow, round, rsqrt, sin, sinh, sqrt, tan, tanh, trunc,
)

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ir.types import DType

# Of qd.init's default types, as in Quadrants: f32, i32 and u32 until a qd.init says otherwise
# (follow_defaults), and the same objects after it (a module that imported vec3 sees it too).
vec2, vec3, vec4 = (MatrixType((n,), f32, f"vec{n}") for n in (2, 3, 4))
ivec2, ivec3, ivec4 = (MatrixType((n,), i32, f"ivec{n}") for n in (2, 3, 4))
uvec2, uvec3, uvec4 = (MatrixType((n,), u32, f"uvec{n}") for n in (2, 3, 4))
mat2, mat3, mat4 = (MatrixType((n, n), f32, f"mat{n}") for n in (2, 3, 4))


def follow_defaults(fp: DType, ip: DType) -> None:
    """``qd.init(default_fp=..., default_ip=...)``: vecN / matN hold the float type, ivecN the
    int type and uvecN its unsigned twin."""
    for types, dtype in (((vec2, vec3, vec4, mat2, mat3, mat4), fp), ((ivec2, ivec3, ivec4), ip),
                         ((uvec2, uvec3, uvec4), _unsigned(ip))):
        for t in types:
            t.dtype = dtype

pi = 3.141592653589793
e = 2.718281828459045
inf = float("inf")
nan = float("nan")

from .complexlib import cconj, cdiv, cexp, cinv, clog, cmul, cpow, csqrt  # noqa: E402, F401  (uses vec2)
from .transforms import rot_by_axis, rot_yaw_pitch_roll, rotation3d, scale, translate  # noqa: E402, F401

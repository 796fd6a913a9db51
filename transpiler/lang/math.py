"""``qd.math``: the math functions, the integer bit helpers (all return i32), the GLSL-style
vector types and functions (``vec3``, ``mat3``, ``dot``, ``clamp``, ``smoothstep``, ...)."""
from .complexlib import cconj, cdiv, cexp, cinv, clog, cmul, cpow, csqrt  # noqa: F401
from .mathlib import (  # noqa: F401
    clamp, cross, degrees, determinant, distance, dot, eye, fns, fract, frexp, inverse, isinf, isnan, length, log2, mix,
    mod, normalize, radians, reflect, refract, rotation2d, sign, smoothstep, step, vdir,
)
from .ops import (  # noqa: F401
    abs, acos, asin, atan, atan2, ceil, clz, cos, cosh, exp, ffs, floor, log, max, min,
    popcnt, pow, round, rsqrt, sin, sinh, sqrt, tan, tanh, trunc,
)
from .transforms import rot_by_axis, rot_yaw_pitch_roll, rotation3d, scale, translate  # noqa: F401
from .vector_types import (  # noqa: F401
    follow_defaults, ivec2, ivec3, ivec4, mat2, mat3, mat4, uvec2, uvec3, uvec4, vec2, vec3, vec4,
)

pi = 3.141592653589793
e = 2.718281828459045
inf = float("inf")
nan = float("nan")


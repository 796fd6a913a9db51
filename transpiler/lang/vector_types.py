"""``qd.math``'s GLSL-style vector and matrix types (``vec3``, ``ivec2``, ``mat4``, ...), in a
module of their own so that the functions written with them (complexlib, transforms) and
``qd.math``, which gathers those functions, import them without importing each other."""
from ..ir.types import DType, f32, i32, u32
from ..ir.types import unsigned as _unsigned
from .matrix import MatrixType

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

"""``qd.math``: the math functions and integer bit helpers (all return i32)."""
from .ops import (  # noqa: F401
    abs, acos, asin, atan, atan2, ceil, clz, cos, cosh, exp, ffs, floor, log, max, min,
    popcnt, pow, round, rsqrt, sin, sinh, sqrt, tan, tanh, trunc,
)

pi = 3.141592653589793
e = 2.718281828459045
inf = float("inf")
nan = float("nan")

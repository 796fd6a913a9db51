"""The f64 math library of the GLSL target: which helper functions (templates/glsl/f64.j2)
compute each f64 function GLSL lacks, and the constants those helpers read.

GLSL declares sin, exp, pow, atan, ... for 16- and 32-bit floats only. The library computes
them in f64 as a libm does (argument reduction, then a polynomial; double-double arithmetic
where the reduction or the result needs more than 53 bits). On lavapipe every function is
within 1 ulp of the correctly rounded result (tests/test_glsl_f64_math.py prints the table).

Helpers are emitted in name order (``Usage.sorted_helpers``), and a function must be
declared before its call, so the names say the layer: ``f64_0dd`` (double-double arithmetic)
comes first, then the kernels ``f64_1*`` (each calls only ``f64_0dd``), then the public
``f64_<fn>`` (which call kernels).
"""
from __future__ import annotations

from fractions import Fraction
from math import factorial

from .dialect import float_text

# IR math function -> (its helper, the kernels it calls). Every one needs f64_0dd too.
F64_FUNCS = {
    "sin": ("f64_sin", ("f64_1rempio2", "f64_1sincos")),
    "cos": ("f64_cos", ("f64_1rempio2", "f64_1sincos")),
    "tan": ("f64_tan", ("f64_1rempio2", "f64_1sincos")),
    "asin": ("f64_asin", ("f64_1asin",)),
    "acos": ("f64_acos", ("f64_1asin",)),
    "atan": ("f64_atan", ("f64_1atan",)),
    "atan2": ("f64_atan2", ("f64_1atan",)),
    "exp": ("f64_exp", ("f64_1exp",)),
    "log": ("f64_log", ("f64_1log",)),
    "pow": ("f64_pow", ("f64_1log", "f64_1exp")),
    "sinh": ("f64_sinh", ("f64_1exp", "f64_1expm1")),
    "cosh": ("f64_cosh", ("f64_1exp", "f64_1expm1")),
    "tanh": ("f64_tanh", ("f64_1expm1",)),
}


def _lit(v: float) -> str:
    return float_text(repr(float(v))) + "lf"


def _horner(var: str, coeffs: list[Fraction | float]) -> str:
    """c0 + var * (c1 + var * (...)), each coefficient rounded once to f64."""
    text = _lit(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        text = f"{_lit(c)} + {var} * ({text})"
    return text


def _asin_coefficient(n: int) -> Fraction:
    # asin(s) = sum over n of (2n)! / (4^n (n!)^2 (2n + 1)) s^(2n+1)
    return Fraction(factorial(2 * n), 4**n * factorial(n) ** 2 * (2 * n + 1))


# Taylor polynomials, truncated where the next term is below 2^-58 of the result on the
# kernel's interval (see each kernel in f64.j2 for the interval).
POLYNOMIALS = {
    # (e^r - 1 - r) / r^2 on |r| <= ln2/2: 1/2 + r/6 + ... + r^13/15!
    "exp": _horner("r", [Fraction(1, factorial(n)) for n in range(2, 16)]),
    # (sin(y) - y) / y^3 in z = y^2 on |y| <= pi/4: -1/3! + z/5! - ... (to y^17)
    "sin": _horner("z", [Fraction((-1) ** k, factorial(2 * k + 1)) for k in range(1, 9)]),
    # (cos(y) - 1 + y^2/2) / y^4 in z = y^2 on |y| <= pi/4: 1/4! - z/6! + ... (to y^18)
    "cos": _horner("z", [Fraction((-1) ** k, factorial(2 * k)) for k in range(2, 10)]),
    # (2 atanh(s) - 2s - 2s^3/3) / s^5 in z = s^2 on |s| <= 3 - 2 sqrt(2): 2/5 + 2z/7 + ... (to s^25)
    "log": _horner("z", [Fraction(2, 2 * n + 1) for n in range(2, 13)]),
    # (atan(t) - t) / t^3 in z = t^2 on |t| <= 1/16: -1/3 + z/5 - ... (to t^17)
    "atan": _horner("z", [Fraction((-1) ** n, 2 * n + 1) for n in range(1, 9)]),
    # (asin(s) - s) / s^3 in z = s^2 on |s| <= 1/2: 1/6 + 3z/40 + ... (to s^55)
    "asin": _horner("z", [_asin_coefficient(n) for n in range(1, 28)]),
}

# Constants split so that their leading part times a small integer is exact (Cody and Waite):
# pi/2 in three 33-bit parts and the rest (times n < 2^19), ln 2 in a 42-bit part and the rest
# (times |k| < 2^11).
PIO2_CW = (1.5707963267341256, 6.077100506303966e-11, 2.0222662487111665e-21, 8.4784276603689e-32)
LN2 = (0.6931471805598903, 5.497923018708371e-14)
# Double-double constants: value = hi + lo.
PIO2 = (1.5707963267948966, 6.123233995736766e-17)
PI = (3.141592653589793, 1.2246467991473532e-16)
TWO_THIRDS = (0.6666666666666666, 3.700743415417188e-17)
# atan(k/8), k = 0..8, as double-doubles.
ATAN_EIGHTHS = ((0.0, 0.0), (0.12435499454676144, -3.1253241424539383e-18),
                (0.24497866312686414, 1.0698755618734451e-17), (0.35877067027057225, -2.4623815582638635e-17),
                (0.4636476090008061, 2.2698777452961687e-17), (0.5585993153435624, -5.4556305485916264e-18),
                (0.6435011087932844, 1.5834785051444286e-17), (0.7188299996216245, -2.1478388444456983e-17),
                (0.7853981633974483, 3.061616997868383e-17))
# The bits of 2/pi after the binary point, 32 to a word (1184 bits: where the window that
# Payne and Hanek's reduction of the largest f64 reads ends), after two zero words that stand
# for the bits before the point (the window of an argument below 2^54 starts there).
TWO_OVER_PI = (
    0x00000000, 0x00000000,
    0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0, 0xdb629599, 0x3c439041, 0xfe5163ab, 0xdebbc561,
    0xb7246e3a, 0x424dd2e0, 0x06492eea, 0x09d1921c, 0xfe1deb1c, 0xb129a73e, 0xe88235f5, 0x2ebb4484,
    0xe99c7026, 0xb45f7e41, 0x3991d639, 0x835339f4, 0x9c845f8b, 0xbdf9283b, 0x1ff897ff, 0xde05980f,
    0xef2f118b, 0x5a0a6d1f, 0x6d367ecf, 0x27cb09b7, 0x4f463f66, 0x9e5fea2d, 0x7527bac7, 0xebe5f17b,
    0x3d0739f7, 0x8a5292ea, 0x6bfb5fb1, 0x1f8d5d08, 0x56033046,
)

# What f64.j2 reads (as `f64`): spellings only, the same for every translation.
VALUES = {
    "poly": POLYNOMIALS,
    "pio2_cw": tuple(_lit(v) for v in PIO2_CW),
    "ln2": tuple(_lit(v) for v in LN2),
    "inv_ln2": _lit(1.4426950408889634),
    "pio2": tuple(_lit(v) for v in PIO2),
    "pi": tuple(_lit(v) for v in PI),
    "three_pio4": _lit(2.356194490192345),
    "two_thirds": tuple(_lit(v) for v in TWO_THIRDS),
    "sqrt2": _lit(1.4142135623730951),
    "atan_hi": ", ".join(_lit(hi) for hi, _ in ATAN_EIGHTHS),
    "atan_lo": ", ".join(_lit(lo) for _, lo in ATAN_EIGHTHS),
    "atan_count": len(ATAN_EIGHTHS),
    "two_over_pi": ",\n    ".join(", ".join(f"0x{w:08x}u" for w in TWO_OVER_PI[i:i + 8])
                                  for i in range(0, len(TWO_OVER_PI), 8)),
    "two_over_pi_count": len(TWO_OVER_PI),
    "word_scales": tuple(_lit(2.0 ** (-32 * i)) for i in range(1, 5)),  # 2^-32, 2^-64, 2^-96, 2^-128
}


def helpers_of(fn: str) -> tuple[str, ...] | None:
    """The helpers (in the order they are emitted) that compute f64 ``fn``; None where the
    library has no such function."""
    entry = F64_FUNCS.get(fn)
    if entry is None:
        return None
    public, kernels = entry
    return ("f64_0dd", *kernels, public)

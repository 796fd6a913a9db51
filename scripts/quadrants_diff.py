"""Differential test of the math against Quadrants 1.3.3: every ``qd.math`` function and every
vector/matrix method (with each optional argument), and the top-level operations whose
definitions have choices (rounding, promotion), run on the same seeded random inputs (plus edge
inputs where the definition matters: zero vectors, signed zeros, halves, infinities, NaN) in
Quadrants (its own venv) and here (Vulkan and the CPU executors of the CUDA and HIP text), in
f32 and f64 kernels and in Python scope. Prints one row per case and executor (max abs/rel
difference from Quadrants, match or not) and exits non-zero on any mismatch.

    python scripts/quadrants_diff.py [--quadrants-python /tmp/qvenv/bin/python]
        [--executors vulkan,cpu-cuda,cpu-hip] [--dtypes f32,f64] [--only SUBSTRING] [--json FILE]

One source for both: each kernel is written as Quadrants spells it, into a file (Quadrants reads
kernel source) whose ``qd`` is the package ``QD_MODULE`` names; a worker process per framework
and executor runs them (``--worker``), as bench/vs_runner.py does. Quadrants runs on its CPU
backend (``--quadrants-arch``), the reference every executor here is compared with.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ROWS, EDGE_ROWS, SEED = 64, 8, 2024
CHUNK = 16  # cases per kernel: fewer compilations; a failing chunk is retried case by case
# What "the same" means: a few ulp of the result's scale (libm and device math differ in the
# last bits); a definition that differs is off by far more.
RTOL = {"f32": 3e-5, "f64": 1e-11, "f64-fp32": 1e-11, "py": 1e-13}
# Modes: (the inputs' float type, qd.init's default_fp). In "f64-fp32" (f64 data, the default
# f32) Quadrants rounds every Python float constant of a kernel to f32 first, where this package
# keeps its double value (docs/differences.md): rows with such a constant differ there.
MODES = {"f32": ("f32", "f32"), "f64": ("f64", "f64"), "f64-fp32": ("f64", "f32")}

# Differences this package keeps on purpose (docs/differences.md), as (case pattern, modes,
# executors, why): their rows say "doc" instead of "no" and do not fail the run.
LITERALS = r"\(1e-3\)|degrees|radians|log2|math\.e \*"
DOCUMENTED = [
    (LITERALS, {"f64-fp32"}, {"vulkan", "cpu-cuda", "cpu-hip"},
     "a Python float constant keeps its double value in an f64 expression (Quadrants: rounded to f32 first)"),
    (r"round\(", {"f32", "f64", "f64-fp32"}, {"cpu-cuda", "cpu-hip"},
     "halves round to even on every executor (Quadrants: to even on Vulkan, away from zero on its CPU)"),
    (r"isinf\(b\)", {"f64-fp32"}, {"cpu-cuda", "cpu-hip"},
     "Quadrants' CPU backend folds isinf of a narrowed f64 to 0 (fast math); its Vulkan gives 1, as here"),
    (r"atan2\(s, t\)", {"f32"}, {"vulkan"},
     "atan2(0, 0) is 0 on every executor (C's); Quadrants' Vulkan gives the driver's (3pi/4 on lavapipe)"),
]
# Rows of f64 math that Quadrants' Vulkan refuses are compared with its CPU backend instead: GLSL's
# f64 library (templates/glsl/f64.j2) gives the same results.

# Input kinds: (low, high) of uniform floats, or an integer range ("i" kinds).
KINDS = {"f": (-2.0, 2.0), "pos": (0.1, 4.0), "unit": (-1.0, 1.0), "ang": (-3.0, 3.0), "half": (-3.0, 3.0),
         "big": (-1e3, 1e3), "i": (-20, 20), "ipos": (0, 32), "mask": (0, 2**31 - 1), "off": (-6, 6),
         "nz": (1, 7)}  # a divisor: never 0 (an integer division by 0 traps on Quadrants' CPU backend)


@dataclasses.dataclass
class Case:
    """``expr`` over the named inputs ``args`` (name, shape, kind), with a result of ``out``
    shape; ``edges``: rows of input values (flat, in ``args`` order) put first; ``py``: also run
    in Python scope (a vector/matrix method Quadrants has there)."""

    expr: str
    args: tuple
    out: tuple = ()
    edges: tuple = ()
    py: bool = False

    @property
    def width(self) -> int:
        return math.prod(self.out)


V3, W3, U2, T2 = ("v", (3,), "f"), ("w", (3,), "f"), ("u", (2,), "f"), ("t", (2,), "f")
S, T, A = ("s", (), "f"), ("t", (), "f"), ("a", (), "unit")
ZERO3 = ((0.0,) * 3,)
SMALL = ((0.03, 0.04, 0.0), (0.0, 0.0, 0.0), (-0.0, 0.0, 0.0), (1e-3, -2e-3, 0.0), (3.0, 4.0, 0.0))


def m(name: str, n: int, kind: str = "mat") -> tuple:
    return (name, (n, n), kind)


def vector_method_cases() -> list[Case]:
    cases = []
    for call in ("norm()", "norm(1e-3)", "norm(eps=0.5)", "norm_sqr()", "norm_inv()", "norm_inv(1e-3)",
                 "norm_inv(eps=0.5)", "normalized()", "normalized(1e-3)", "normalized(eps=0.5)"):
        out = (3,) if call.startswith("normalized") else ()
        cases.append(Case(f"v.{call}", (V3,), out, SMALL, py=True))
    cases += [
        Case("v.dot(w)", (V3, W3), (), py=True), Case("v.cross(w)", (V3, W3), (3,), py=True),
        Case("u.cross(t)", (U2, T2), (), py=True), Case("v.outer_product(u)", (V3, U2), (3, 2), py=True),
        Case("v.sum()", (V3,), (), py=True), Case("v.max()", (V3,), (), py=True),
        Case("v.min()", (V3,), (), py=True),
        Case("v.any()", (("v", (3,), "half"),), (), ((0.0, 0.0, 0.0), (0.0, -0.0, 1.0)), py=True),
        Case("v.all()", (("v", (3,), "half"),), (), ((0.0, 1.0, 1.0), (1.0, 2.0, -0.0), (1.0, 2.0, 3.0)), py=True),
        Case("v.transpose()", (V3,), (1, 3)), Case("v.cast(qd.i32)", (("v", (3,), "half"),), (3,)),
        Case("v.frobenius_inner(w)", (V3, W3), ()),
    ]
    iv, iw = ("iv", (3,), "i"), ("iw", (3,), "i")
    izero = ((0, 0, 0, 1, 2, 3),)
    for call, out in (("norm()", ()), ("norm_sqr()", ()), ("norm_inv()", ()), ("normalized()", (3,)),
                      ("sum()", ()), ("max()", ()), ("min()", ()), ("any()", ()), ("all()", ()),
                      ("dot(iw)", ()), ("cross(iw)", (3,)), ("outer_product(iw)", (3, 3))):
        cases.append(Case(f"iv.{call}", (iv, iw), out, izero, py=True))
    return cases


def matrix_method_cases() -> list[Case]:
    cases = []
    for n in (2, 3, 4):
        mn = m("m", n)
        cases += [Case(f"m.determinant()  # {n}x{n}", (mn,), ()), Case(f"m.inverse()  # {n}x{n}", (mn,), (n, n)),
                  Case(f"m.trace()  # {n}x{n}", (mn,), (), py=True),
                  Case(f"m.transpose()  # {n}x{n}", (mn,), (n, n), py=True)]
    m3, v3 = m("m", 3), V3
    cases += [
        Case("m.sum()", (m3,), (), py=True), Case("m.max()", (m3,), (), py=True), Case("m.min()", (m3,), (), py=True),
        Case("m.norm()", (m3,), (), py=True), Case("m.norm(1e-3)", (m3,), (), py=True),
        Case("m.norm_sqr()", (m3,), (), py=True), Case("m.norm_inv()", (m3,), (), py=True),
        Case("m.frobenius_inner(m)", (m3,), ()), Case("m.any()", (m3,), (), py=True),
        Case("m.all()", (m3,), (), py=True), Case("m @ v", (m3, v3), (3,)), Case("m @ m", (m3,), (3, 3)),
        Case("v @ m", (v3, m3), (3,)), Case("m.cast(qd.i32)", (("m", (3, 3), "half"),), (3, 3)),
        Case("im.determinant()", (("im", (3, 3), "i"),), ()), Case("im.inverse()", (("im", (2, 2), "ipos"),), (2, 2)),
        Case("im.trace()", (("im", (3, 3), "i"),), ()),
        Case("qd.Matrix.identity(qd.f32, 3) * s", (S,), (3, 3)), Case("qd.Matrix.diag(3, s)", (S,), (3, 3)),
        Case("qd.Vector.unit(3, 1) * s", (S,), (3,)), Case("qd.Matrix.zero(qd.f32, 2, 3) + s", (S,), (2, 3)),
        Case("qd.Matrix.one(qd.i32, 2, 2) * s", (S,), (2, 2)), Case("qd.Vector.one(qd.f32, 3) * s", (S,), (3,)),
        Case("qd.Matrix.rows([v, w])", (V3, W3), (2, 3)), Case("qd.Matrix.cols([v, w])", (V3, W3), (3, 2)),
        Case("m.inverse()  # 5x5", (m("m", 5),), (5, 5)),
        Case("m.inverse()  # 6x6 pivoting", (m("m", 6, "pmat"),), (6, 6)),  # (larger: minutes in Quadrants)
        Case("m.determinant()  # 4x4 pivoting", (m("m", 4, "pmat"),), ()),
        Case("m.determinant()  # 1x1", (m("m", 1),), ()),
        Case("m.inverse()  # 1x1", (m("m", 1),), (1, 1)),
    ]
    return cases


def math_cases() -> list[Case]:
    mm = "qd.math."
    x = ("x", (), "half")
    zero_edges = ((0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (1e-20, 0.0))
    c = [Case(f"{mm}mix(v, w, a)", (V3, W3, A), (3,)), Case(f"{mm}mix(s, t, a)", (S, T, A)),
         Case(f"{mm}mix(v, w, 0.25)", (V3, W3), (3,)),
         Case(f"{mm}clamp(v, -0.5, 0.75)", (V3,), (3,)), Case(f"{mm}clamp(s, -0.5, t)", (S, T)),
         Case(f"{mm}step(s, t)", (S, T), (), ((1.0, 1.0), (0.0, -0.0))), Case(f"{mm}step(v, w)", (V3, W3), (3,)),
         Case(f"{mm}step(0.5, iv)", (("iv", (3,), "i"),), (3,)),
         Case(f"{mm}fract(x)", (x,), (), ((-1.5,), (-0.0,), (2.0,), (-2.0,))), Case(f"{mm}fract(v)", (V3,), (3,)),
         Case(f"{mm}smoothstep(-0.5, 0.5, x)", (x,)), Case(f"{mm}smoothstep(s, s + 1.0, t)", (S, T)),
         Case(f"{mm}smoothstep(-0.5, 0.5, v)", (V3,), (3,)),
         Case(f"{mm}sign(x)", (x,), (), ((0.0,), (-0.0,), (-1e-30,), (1e-30,))),
         Case(f"{mm}sign(v)", (V3,), (3,)), Case(f"{mm}sign(i)", (("i", (), "i"),), (), ((0,), (-3,), (5,))),
         Case(f"{mm}normalize(v)", (V3,), (3,), SMALL), Case(f"{mm}normalize(iv)", (("iv", (3,), "i"),), (3,)),
         Case(f"{mm}log2(p)", (("p", (), "pos"),), (), ((1.0,), (2.0,), (1024.0,), (0.5,))),
         Case(f"{mm}log2(pv)", (("pv", (3,), "pos"),), (3,)),
         Case(f"{mm}reflect(v, w)", (V3, W3), (3,)), Case(f"{mm}reflect(v, w.normalized())", (V3, W3), (3,)),
         Case(f"{mm}degrees(s)", (S,)), Case(f"{mm}degrees(v)", (V3,), (3,)), Case(f"{mm}radians(s)", (S,)),
         Case(f"{mm}radians(iv)", (("iv", (3,), "i"),), (3,)),
         Case(f"{mm}distance(v, w)", (V3, W3)), Case(f"{mm}distance(s, t)", (S, T)),
         Case(f"{mm}refract(v.normalized(), w.normalized(), a)", (V3, W3, A), (3,)),
         Case(f"{mm}refract(v, w, s)", (V3, W3, S), (3,)),
         Case(f"{mm}dot(v, w)", (V3, W3)), Case(f"{mm}cross(v, w)", (V3, W3), (3,)),
         Case(f"{mm}cross(u, t)", (U2, T2)),
         Case(f"{mm}mod(x, 0.75)", (x,), (), ((-1.5,), (1.5,), (-0.0,), (0.75,))), Case(f"{mm}mod(s, t)", (S, T)),
         Case(f"{mm}mod(v, 0.5)", (V3,), (3,)), Case(f"{mm}mod(i, 7)", (("i", (), "i"),), (), ((-3,), (7,), (-14,))),
         Case(f"{mm}length(v)", (V3,)), Case(f"{mm}length(iv)", (("iv", (3,), "i"),)),
         Case(f"{mm}determinant(m)", (m("m", 3),)), Case(f"{mm}inverse(m)", (m("m", 3),), (3, 3)),
         Case(f"{mm}inverse(m)  # 4x4", (m("m", 4),), (4, 4)),
         Case(f"{mm}eye(3)", (), (3, 3)), Case(f"{mm}eye(2) * s", (S,), (2, 2)),
         Case(f"{mm}rotation2d(s)", (("s", (), "ang"),), (2, 2)),
         Case(f"{mm}rotation3d(a, b, c)", (("a", (), "ang"), ("b", (), "ang"), ("c", (), "ang")), (4, 4)),
         Case(f"{mm}rot_yaw_pitch_roll(a, b, c)", (("a", (), "ang"), ("b", (), "ang"), ("c", (), "ang")), (4, 4)),
         Case(f"{mm}rot_by_axis(v, s)", (V3, ("s", (), "ang")), (4, 4)),
         Case(f"{mm}scale(a, b, c)", (("a", (), "f"), ("b", (), "f"), ("c", (), "f")), (4, 4)),
         Case(f"{mm}translate(a, b, c)", (("a", (), "f"), ("b", (), "f"), ("c", (), "f")), (4, 4)),
         Case(f"{mm}vdir(s)", (("s", (), "ang"),), (2,)),
         Case(f"{mm}isinf(b)", (("b", (), "big"),), (), ((math.inf,), (-math.inf,), (math.nan,), (1e300,),
                                                          (3.5e38,), (-1e300,), (0.0,))),
         Case(f"{mm}isnan(b)", (("b", (), "big"),), (), ((math.inf,), (math.nan,), (-math.nan,), (1e300,), (0.0,))),
         Case(f"{mm}isinf(i)", (("i", (), "i"),)), Case(f"{mm}isnan(i)", (("i", (), "i"),)),
         Case(f"{mm}popcnt(k)", (("k", (), "mask"),), (), ((0,), (-1,), (1,))),
         Case(f"{mm}clz(k)", (("k", (), "mask"),), (), ((0,), (-1,), (1,))),
         Case(f"{mm}ffs(k)", (("k", (), "mask"),), (), ((0,), (-1,), (-2147483648,))),
         Case(f"{mm}fns(qd.u32(k), qd.u32(b), o)", (("k", (), "mask"), ("b", (), "ipos"), ("o", (), "off")), (),
              ((0, 0, 1), (-1, 31, 1), (-1, 0, -1), (5, 2, 0), (5, 1, 0), (12, 40, -1))),
         Case(f"{mm}cmul(u, t)", (U2, T2), (2,)), Case(f"{mm}cconj(u)", (U2,), (2,)),
         Case(f"{mm}cdiv(u, t)", (U2, T2), (2,)), Case(f"{mm}cinv(u)", (U2,), (2,)),
         Case(f"{mm}cexp(u)", (U2,), (2,)), Case(f"{mm}clog(u)", (U2,), (2,)),
         Case(f"{mm}csqrt(u)", (U2,), (2,), zero_edges), Case(f"{mm}cpow(u, 3)", (U2,), (2,), zero_edges),
         Case(f"{mm}cpow(u, s)", (U2, S), (2,), tuple(e + (0.5,) for e in zero_edges))]
    for fn, kind in (("acos", "unit"), ("asin", "unit"), ("ceil", "half"), ("cos", "ang"), ("exp", "f"),
                     ("floor", "half"), ("log", "pos"), ("round", "half"), ("sin", "ang"), ("sqrt", "pos"),
                     ("tan", "unit"), ("tanh", "f")):
        edges = ((0.5,), (1.5,), (2.5,), (-0.5,), (-1.5,), (-0.0,)) if fn in ("round", "ceil", "floor") else ()
        c.append(Case(f"{mm}{fn}(x)", (("x", (), kind),), (), edges))
    c += [Case(f"{mm}atan2(s, t)", (S, T), (), ((0.0, -1.0), (-0.0, -1.0), (0.0, 0.0), (1.0, 0.0))),
          Case(f"{mm}pow(p, s)", (("p", (), "pos"), S)), Case(f"{mm}pow(i, 3)", (("i", (), "i"),)),
          Case(f"{mm}max(s, t)", (S, T)), Case(f"{mm}min(v, w)", (V3, W3), (3,)),
          Case(f"{mm}max(i, s)", (("i", (), "i"), S)), Case(f"{mm}sqrt(i)", (("i", (), "ipos"),)),
          Case(f"{mm}round(x, qd.i32)", (x,), (), ((0.5,), (1.5,), (2.5,), (-0.5,), (-1.5,))),
          Case(f"{mm}floor(x, qd.i32)", (x,)), Case(f"{mm}ceil(x, qd.i32)", (x,)),
          Case(f"{mm}exp(i)", (("i", (), "off"),)), Case(f"{mm}cos(i)", (("i", (), "i"),)),
          Case(f"{mm}e * s + {mm}pi * t", (S, T)),
          Case(f"{mm}vec3(s) + {mm}vec3(s, t, 1)", (S, T), (3,)),
          Case(f"{mm}ivec2(s, t)", (("s", (), "half"), ("t", (), "half")), (2,)),
          Case(f"{mm}uvec3(k, 2, 3)", (("k", (), "ipos"),), (3,)),
          Case(f"{mm}mat2(s, t, t, s) @ {mm}vec2(1, s)", (S, T), (2,))]
    return c


def top_level_cases() -> list[Case]:
    x = ("x", (), "half")
    return [Case("qd.rsqrt(p)", (("p", (), "pos"),)), Case("qd.round(x)", (x,), (), ((0.5,), (2.5,), (-0.5,))),
            Case("qd.abs(i)", (("i", (), "i"),)), Case("qd.abs(v)", (V3,), (3,)), Case("qd.atan2(s, t)", (S, T)),
            Case("qd.exp(s) + qd.log(p)", (S, ("p", (), "pos"))), Case("qd.sqrt(i)", (("i", (), "ipos"),)),
            Case("i // j + i % j", (("i", (), "i"), ("j", (), "nz")), (), ((-7, 2), (7, -2), (-7, -2))),
            Case("s // t + s % t", (S, T)), Case("i / j", (("i", (), "i"), ("j", (), "nz")), (), ((-7, 2),)),
            Case("i ** 2 + s ** 2", (("i", (), "i"), S)), Case("p ** s", (("p", (), "pos"), S)),
            Case("qd.raw_div(i, j) + qd.raw_mod(i, j)", (("i", (), "i"), ("j", (), "nz")), (), ((-7, 2), (7, -2))),
            Case("qd.max(v, s)", (V3, S), (3,)), Case("qd.min(i, s)", (("i", (), "i"), S))]


def all_cases() -> list[Case]:
    cases = vector_method_cases() + matrix_method_cases() + math_cases() + top_level_cases()
    for c in cases:  # an input never reads another's column: the edge rows are checked against the args
        assert all(len(e) == sum(math.prod(s) for _, s, _ in c.args) for e in c.edges), c.expr
    return cases


# ---------------------------------------------------------------------------------------------
# Inputs (the driver's, in NumPy) and kernel source (the same text for both frameworks)

def is_int(kind: str) -> bool:
    return kind in ("i", "ipos", "mask", "off", "nz")


def make_inputs(cases: list[Case]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per case, its float and int input columns: (rows, n) arrays in float64 / int64, edges first."""
    import numpy as np  # noqa: PLC0415 - the driver's and ours' worker's; not imported at module level

    rng = np.random.default_rng(SEED)
    out = []
    for c in cases:
        cols_f, cols_i = [], []
        for name, shape, kind in c.args:
            lo, hi = KINDS.get(kind, (-1.0, 1.0))
            n = math.prod(shape)
            if kind in ("mat", "pmat"):  # well conditioned: random plus a dominant diagonal
                vals = rng.uniform(-1.0, 1.0, (ROWS, *shape)) + 2.0 * np.eye(shape[0])
                if kind == "pmat":  # its rows shuffled: elimination has to pivot
                    vals = np.stack([v[rng.permutation(shape[0])] for v in vals])
                vals = vals.reshape(ROWS, n)
            elif kind == "half":  # halves, so that rounding and truncation choices show
                vals = rng.integers(int(lo * 4), int(hi * 4), (ROWS, n)) / 4.0
                vals += rng.uniform(-0.1, 0.1, (ROWS, n)) * (rng.random((ROWS, n)) < 0.5)
            elif is_int(kind):
                vals = rng.integers(lo, hi, (ROWS, n)) * (rng.choice([-1, 1], (ROWS, n)) if kind == "nz" else 1)
            else:
                vals = rng.uniform(lo, hi, (ROWS, n))
            (cols_i if is_int(kind) else cols_f).append((name, vals))
        flat = [np.concatenate([v for _, v in cols], axis=1) if cols else np.zeros((ROWS, 0)) for cols in
                (cols_f, cols_i)]
        fl, il = flat[0].astype(np.float64), flat[1].astype(np.int64)
        for r, edge in enumerate(c.edges):  # edges in args order, split into the two arrays
            fi = ii = 0
            pos = 0
            for _name, shape, kind in c.args:
                n = math.prod(shape)
                for k in range(n):
                    if is_int(kind):
                        il[r, ii + k] = edge[pos + k]
                    else:
                        fl[r, fi + k] = edge[pos + k]
                pos += n
                if is_int(kind):
                    ii += n
                else:
                    fi += n
        out.append((fl, il))
    return out


def rename(expr: str, names: list[str], suffix: str) -> str:
    """The case's input names made unique in a kernel holding many cases (attributes untouched)."""
    for name in sorted(names, key=len, reverse=True):
        expr = re.sub(rf"(?<![.\w]){name}(?!\w)", f"{name}_{suffix}", expr)
    return expr


def kernel_source(name: str, cases: list[tuple[int, Case, int, int, int]], float_t: str) -> str:
    """One kernel running ``cases`` (index, case, float column, int column, output column)."""
    lines = ["@qd.kernel",
             f"def {name}(fin: qd.types.ndarray(dtype=qd.{float_t}, ndim=2), "
             "iin: qd.types.ndarray(dtype=qd.i32, ndim=2), out: qd.types.ndarray(dtype=qd.f64, ndim=2)):",
             "    for i in range(out.shape[0]):"]
    for idx, c, fc, ic, oc in cases:
        for arg, shape, kind in c.args:
            src = "iin" if is_int(kind) else "fin"
            col = ic if is_int(kind) else fc
            if is_int(kind):
                ic += math.prod(shape)
            else:
                fc += math.prod(shape)
            if shape == ():
                value = f"{src}[i, {col}]"
            elif len(shape) == 1:
                value = "qd.Vector([" + ", ".join(f"{src}[i, {col + k}]" for k in range(shape[0])) + "])"
            else:
                rows = ["[" + ", ".join(f"{src}[i, {col + r * shape[1] + k}]" for k in range(shape[1])) + "]"
                        for r in range(shape[0])]
                value = "qd.Matrix([" + ", ".join(rows) + "])"
            lines.append(f"        {arg}_{idx} = {value}")
        expr = rename(c.expr.split("  #")[0], [a for a, _, _ in c.args], str(idx))
        lines.append(f"        r_{idx} = {expr}")
        if c.out == ():
            lines.append(f"        out[i, {oc}] = r_{idx}")
        elif len(c.out) == 1:
            lines += [f"        out[i, {oc + k}] = r_{idx}[{k}]" for k in range(c.out[0])]
        else:
            lines += [f"        out[i, {oc + r * c.out[1] + k}] = r_{idx}[{r}, {k}]"
                      for r in range(c.out[0]) for k in range(c.out[1])]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The worker: one framework, one executor; reads the inputs, writes the results

def init_framework(qd: Any, module: str, executor: str, default_fp: str = "f32") -> None:
    fp = getattr(qd, default_fp)
    if module == "quadrants":
        qd.init(arch=getattr(qd, executor), offline_cache=False, default_fp=fp)
    else:
        qd.init(**{"vulkan": {"arch": "vulkan"}, "cpu-cuda": {"arch": "cpu"},
                   "cpu-hip": {"arch": "cpu", "dialect": "hip"}, "cuda": {"arch": "cuda"}}[executor], default_fp=fp)


def run_kernel(qd: Any, source: str, name: str, fin: np.ndarray, iin: np.ndarray, width: int, folder: str,
               float_t: str) -> np.ndarray:
    import numpy as np  # noqa: PLC0415

    path = Path(folder) / f"{name}.py"
    path.write_text("import importlib\nimport os\n\nqd = importlib.import_module(os.environ['QD_MODULE'])\n\n\n"
                    + source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np_t = np.float32 if float_t == "f32" else np.float64
    a = qd.ndarray(getattr(qd, float_t), shape=(ROWS, max(fin.shape[1], 1)))
    a.from_numpy(np.ascontiguousarray(fin if fin.shape[1] else np.zeros((ROWS, 1)), dtype=np_t))
    b = qd.ndarray(qd.i32, shape=(ROWS, max(iin.shape[1], 1)))
    b.from_numpy(np.ascontiguousarray(iin if iin.shape[1] else np.zeros((ROWS, 1)), dtype=np.int32))
    o = qd.ndarray(qd.f64, shape=(ROWS, max(width, 1)))
    o.from_numpy(np.full((ROWS, max(width, 1)), -12345.0))
    getattr(module, name)(a, b, o)
    qd.sync()
    return o.to_numpy()


def python_scope(qd: Any, c: Case, fl: np.ndarray, il: np.ndarray) -> np.ndarray:
    """The case run in Python scope, row by row, on Python numbers (as a user's script does)."""
    import numpy as np  # noqa: PLC0415

    out = np.full((ROWS, c.width), np.nan)
    for r in range(ROWS):
        env, fc, ic = {"qd": qd}, 0, 0
        for arg, shape, kind in c.args:
            n = math.prod(shape)
            vals = [int(x) for x in il[r, ic:ic + n]] if is_int(kind) else [float(x) for x in fl[r, fc:fc + n]]
            ic, fc = (ic + n, fc) if is_int(kind) else (ic, fc + n)
            env[arg] = vals[0] if shape == () else qd.Vector(vals) if len(shape) == 1 else qd.Matrix(
                [vals[k * shape[1]:(k + 1) * shape[1]] for k in range(shape[0])])
        with np.errstate(all="ignore"):
            res = eval(c.expr.split("  #")[0], env)  # noqa: S307 - the case's own expression
        res = res.to_numpy() if hasattr(res, "to_numpy") else res
        out[r] = np.asarray(res, dtype=np.float64).reshape(-1)
    return out


def worker(args: argparse.Namespace) -> None:
    import numpy as np  # noqa: PLC0415

    qd = importlib.import_module(args.module)
    if args.executor == "python":  # (Python scope: any executor will do)
        init_framework(qd, args.module, "cpu" if args.module == "quadrants" else "cpu-cuda")
    cases = all_cases()
    data = np.load(args.inputs)
    results, errors = {}, {}
    picked = [k for k in range(len(cases)) if f"f{k}" in data]
    if args.executor == "python":
        for k in picked:
            if not cases[k].py:
                continue
            try:
                results[f"py_{k}"] = python_scope(qd, cases[k], data[f"f{k}"], data[f"i{k}"])
            except Exception as e:  # noqa: BLE001 - reported in the table
                errors[f"py_{k}"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
    else:
        with tempfile.TemporaryDirectory() as folder:
            for mode in args.dtypes.split(","):
                init_framework(qd, args.module, args.executor, MODES[mode][1])
                run_chunks(qd, cases, picked, data, mode, folder, results, errors)
    np.savez(args.output, **results)
    Path(args.output + ".json").write_text(json.dumps(errors))


def run_chunks(qd: Any, cases: list[Case], picked: list[int], data: Any, mode: str, folder: str, results: dict,
               errors: dict) -> None:
    import numpy as np  # noqa: PLC0415

    float_t = MODES[mode][0]

    def run(group: list[int], name: str) -> None:
        entries, fcols, icols, width = [], [], [], 0
        for k in group:
            fl, il = data[f"f{k}"], data[f"i{k}"]
            entries.append((k, cases[k], sum(x.shape[1] for x in fcols), sum(x.shape[1] for x in icols), width))
            fcols.append(fl)
            icols.append(il)
            width += cases[k].width
        out = run_kernel(qd, kernel_source(name, entries, float_t), name, np.concatenate(fcols, axis=1),
                         np.concatenate(icols, axis=1), width, folder, float_t)
        for k, c, _, _, oc in entries:
            results[f"{mode}_{k}"] = out[:, oc:oc + c.width]

    for start in range(0, len(picked), CHUNK):
        group = picked[start:start + CHUNK]
        try:
            run(group, f"chunk_{mode.replace('-', '_')}_{start}")
        except Exception:  # noqa: BLE001 - find which case fails, each on its own
            for k in group:
                try:
                    run([k], f"case_{mode.replace('-', '_')}_{k}")
                except Exception as e:  # noqa: BLE001
                    first = ([ln for ln in str(e).splitlines() if ln.strip()] or [""])[-1]
                    errors[f"{mode}_{k}"] = f"{type(e).__name__}: {first[:160]}"


# ---------------------------------------------------------------------------------------------
# The driver

def find_quadrants_python(given: str | None) -> str | None:
    for candidate in (given, os.environ.get("QD_QUADRANTS_PYTHON"), "/tmp/qvenv/bin/python"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def spawn(python: str, module: str, executor: str, dtypes: str, inputs: str, output: str) -> str | None:
    env = dict(os.environ, QD_MODULE=module, PYTHONPATH=str(ROOT) if module == "transpiler" else "")
    cmd = [python, str(Path(__file__).resolve()), "--worker", "--module", module, "--executor", executor,
           "--dtypes", dtypes, "--inputs", inputs, "--output", output]
    proc = subprocess.run(cmd, env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        return "\n".join((proc.stderr or proc.stdout or "failed").strip().splitlines()[-12:])
    return None


def compare(want: np.ndarray, got: np.ndarray, rtol: float) -> tuple[float, float, bool]:
    """Max abs and rel difference, and whether they agree: NaN where NaN, the same infinities,
    else within ``rtol`` of the larger magnitude (or of 1 near zero)."""
    import numpy as np  # noqa: PLC0415

    nan_w, nan_g = np.isnan(want), np.isnan(got)
    same_special = (nan_w == nan_g).all() and (np.isinf(want) == np.isinf(got)).all() and (
        want[np.isinf(want)] == got[np.isinf(want)]).all()
    fin = np.isfinite(want) & np.isfinite(got)
    diff = np.abs(want[fin] - got[fin])
    scale = np.maximum(np.maximum(np.abs(want[fin]), np.abs(got[fin])), 1.0)
    abs_d = float(diff.max()) if diff.size else 0.0
    rel_d = float((diff / np.maximum(np.abs(want[fin]), 1e-300)).max()) if diff.size else 0.0
    return abs_d, rel_d, bool(same_special and (diff <= rtol * scale).all())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quadrants-python")
    p.add_argument("--quadrants-arch", default="cpu")
    p.add_argument("--executors", default="vulkan,cpu-cuda,cpu-hip")
    p.add_argument("--dtypes", default="f32,f64,f64-fp32", help="modes: " + ", ".join(MODES))
    p.add_argument("--only", default="", help="run the cases whose expression contains this")
    p.add_argument("--no-python-scope", action="store_true")
    p.add_argument("--json", help="write the rows here too")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--module", help=argparse.SUPPRESS)
    p.add_argument("--executor", help=argparse.SUPPRESS)
    p.add_argument("--inputs", help=argparse.SUPPRESS)
    p.add_argument("--output", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return 0
    return drive(args)


def drive(args: argparse.Namespace) -> int:
    import numpy as np  # noqa: PLC0415

    qpython = find_quadrants_python(args.quadrants_python)
    if qpython is None:
        print("no Quadrants venv: give --quadrants-python, QD_QUADRANTS_PYTHON, or install it in /tmp/qvenv")
        return 2
    cases = all_cases()
    inputs = make_inputs(cases)
    picked = [k for k, c in enumerate(cases) if args.only in c.expr]
    if not picked:
        print(f"no case's expression contains {args.only!r}")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        inp = f"{tmp}/inputs.npz"
        np.savez(inp, **{f"f{k}": inputs[k][0] for k in picked}, **{f"i{k}": inputs[k][1] for k in picked})
        execs = [e for e in args.executors.split(",") if e]
        runs = [("quadrants", qpython, a) for a in sorted({reference(e, args) for e in execs})]
        runs += [("transpiler", sys.executable, e) for e in args.executors.split(",") if e]
        if not args.no_python_scope:
            runs += [("quadrants", qpython, "python"), ("transpiler", sys.executable, "python")]
        got = {}
        for module, python, executor in runs:
            out = f"{tmp}/{module}_{executor}.npz"
            failure = spawn(python, module, executor, args.dtypes, inp, out)
            if failure:
                print(f"{module} on {executor} failed: {failure}")
                return 1
            got[module, executor] = (dict(np.load(out)), json.loads(Path(out + ".json").read_text()))
    rows = table_rows(cases, picked, got, args)
    print_table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    bad = [r for r in rows if r["match"] == "no"]
    counts = {m: sum(r["match"] == m for r in rows) for m in ("yes", "doc", "n/a", "no")}
    print(f"\n{len(rows)} rows: " + ", ".join(f"{n} {m}" for m, n in counts.items())
          + " (doc: a documented difference; n/a: Quadrants refuses it)")
    return 1 if bad else 0


def reference(executor: str, args: argparse.Namespace) -> str:
    """Quadrants' backend an executor is compared with: Vulkan with Vulkan (the same device, whose
    math and rounding of halves are the device's), the others with ``--quadrants-arch``."""
    return "vulkan" if executor == "vulkan" else args.quadrants_arch


def table_rows(cases: list[Case], picked: list[int], got: dict, args: argparse.Namespace) -> list[dict]:
    rows = []
    execs = [e for e in args.executors.split(",") if e]
    for k in picked:
        c = cases[k]
        keys = [(f"{t}_{k}", t, e, *got["quadrants", reference(e, args)]) for t in args.dtypes.split(",")
                for e in execs]
        if c.py and not args.no_python_scope:
            pres, perr = got["quadrants", "python"]
            keys.append((f"py_{k}", "py", "python", pres, perr))
        for key, dtype, executor, want_res, want_err in keys:
            rows.append(table_row(c, key, dtype, executor, (want_res, want_err), got, args))
    return rows


def table_row(c: Case, key: str, dtype: str, executor: str, want: tuple, got: dict,
              args: argparse.Namespace) -> dict:
    (want_res, want_err), (ours_res, ours_err) = want, got["transpiler", executor]
    row = {"case": c.expr, "dtype": dtype, "executor": executor, "abs": "", "rel": "", "match": "no", "note": ""}
    fallback = executor == "vulkan" and any(w in want_err.get(key, "") for w in ("64bits", "32bits"))
    if fallback:  # Quadrants' Vulkan has no f64 transcendental functions: its CPU is the reference
        want_res, want_err = got["quadrants", args.quadrants_arch]
        row["note"] = "vs Quadrants' CPU (its Vulkan refuses f64 math)"
    if key in want_err:
        row["match"], row["note"] = "n/a", f"Quadrants: {want_err[key]}"
        return row
    if key in ours_err:
        row["note"] = f"here: {ours_err[key]}"
        return row
    a, r, ok = compare(want_res[key], ours_res[key], RTOL[dtype])
    row.update({"abs": f"{a:.2e}", "rel": f"{r:.2e}", "match": "yes" if ok else "no"})
    why = next((w for pat, modes, execs, w in DOCUMENTED if re.search(pat, c.expr) and dtype in modes
                and executor in execs), None)
    if not ok and why:
        row["match"], row["note"] = "doc", why
    return row


def print_table(rows: list[dict]) -> None:
    width = max(len(r["case"]) for r in rows)
    print(f"{'function / method':<{width}}  {'mode':<8}  {'executor':<8}  {'max abs':>8}  {'max rel':>8}  match")
    for r in rows:
        note = f"  {r['note']}" if r["note"] else ""
        print(f"{r['case']:<{width}}  {r['dtype']:<8}  {r['executor']:<8}  {r['abs']:>8}  {r['rel']:>8}  "
              f"{r['match']}{note}")


if __name__ == "__main__":
    sys.exit(main())

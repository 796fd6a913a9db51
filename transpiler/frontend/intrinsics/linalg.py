"""Small-matrix linear algebra (``qd.svd``, ``qd.polar_decompose``, ``qd.solve``, ...),
written in the kernel language (lang/linalg.py)."""
from __future__ import annotations

from ..values import CT, MatrixValue
from .table import handler, float_dtype
from ...lang import linalg


# qd.<name>(A, dt=None) of a small square matrix, written in the kernel language
# (lang/linalg.py): the sizes it takes, how to say so, and its function for a size.
_DECOMPOSITIONS = {
    "svd": ((2, 3), "a 2x2 or 3x3 matrix", lambda la, n: la.svd2d if n == 2 else la.svd3d),
    "polar_decompose": ((2, 3), "a 2x2 or 3x3 matrix",
                        lambda la, n: la.polar_decompose2d if n == 2 else la.polar_decompose3d),
    "sym_eig": ((2, 3, 4, 5, 6), "a symmetric matrix of 2x2 to 6x6", lambda la, n: la.sym_eig_small),
    "make_spd": ((2, 3, 4, 5, 6), "a symmetric matrix of 2x2 to 6x6", lambda la, n: la.make_spd_small),
    "eig": ((2,), "a 2x2 matrix (qd.sym_eig: symmetric ones up to 6x6)", lambda la, n: la.eig2x2),
}


@handler(*_DECOMPOSITIONS)
def _decompose(lo, name, node):
    sizes, what, pick = _DECOMPOSITIONS[name]
    if not node.args:
        raise lo.error(node, f"qd.{name}(A, dt=None) takes {what} and an optional dtype")
    dtype = float_dtype(lo, node, name, 1)
    a = lo.expr(node.args[0])
    if not isinstance(a, MatrixValue) or len(a.shape) != 2 or a.shape[0] != a.shape[1] or a.shape[0] not in sizes:
        raise lo.error(node, f"qd.{name}() takes {what}")
    fn = pick(linalg, a.shape[0])
    return lo.inline_values(fn, lo.loc(node), [lo.make_matrix(a.shape, a.items, node, dtype), CT(dtype)])


@handler("solve")
def _solve(lo, name, node):
    if len(node.args) < 2:
        raise lo.error(node, "qd.solve(A, b, dt=None) takes a matrix, a vector and an optional dtype")
    dtype = float_dtype(lo, node, name, 2)
    a, b = (lo.expr(x) for x in node.args[:2])
    if not isinstance(a, MatrixValue) or a.shape not in ((2, 2), (3, 3)):
        raise lo.error(node.args[0], "qd.solve() takes a 2x2 or 3x3 matrix")
    b = lo.as_matrix(b, node.args[1])
    if not isinstance(b, MatrixValue) or b.shape != (a.shape[0],):
        raise lo.error(node.args[1], f"qd.solve() of a {a.shape[0]}x{a.shape[0]} matrix takes a vector of {a.shape[0]}")
    return lo.inline_values(linalg.solve_small, lo.loc(node), [lo.make_matrix(a.shape, a.items, node, dtype),
                                                                lo.make_matrix(b.shape, b.items, node, dtype),
                                                                CT(dtype)])

"""The table of ``qd.*`` built-ins (``HANDLERS``, filled by ``@handler``), the call that
looks one up, and the argument helpers the domains share."""
from __future__ import annotations

import ast
import warnings

from ...ir import nodes as ir
from ...ir import types as T
from ...lang.simt import DEPRECATED
from ..handlers import HandlerTable, Lowering


FLOAT_MATH = ("sqrt", "rsqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan",
               "sinh", "cosh", "tanh", "floor", "ceil", "round", "trunc")


BIT_MATH = ("popcnt", "clz", "ffs")


HANDLERS = HandlerTable()  # the qd.* built-ins, by the name they are known by (``_qd_builtin``)


handler = HANDLERS.handler


# Built-ins that apply to each component of a vector or matrix argument.
ELEMENTWISE = {"cast", "select", "min", "max", "abs", "atan2", "pow", "isnan", "isinf", "zero", "one", *FLOAT_MATH,
               *BIT_MATH}


def call_builtin(lo: Lowering, name: str, node: ast.Call):
    fn = HANDLERS.get(name)
    if fn is None:
        raise lo.error(node, f"qd.{name}() is not supported here")
    if name in ELEMENTWISE and (not node.keywords or (name in ("floor", "ceil", "round") and
                                                      [k.arg for k in node.keywords] == ["dtype"])):
        return lo.builtin_elementwise(lambda n: fn(lo, name, n), node)
    return fn(lo, name, node)


def call_args(lo: Lowering, node: ast.Call, name: str, n: int | tuple[int, int]):
    lo_n, hi_n = (n, n) if isinstance(n, int) else n
    if node.keywords:
        raise lo.error(node, f"qd.{name}() takes positional arguments only")
    if not lo_n <= len(node.args) <= hi_n:
        want = str(lo_n) if lo_n == hi_n else f"{lo_n} to {hi_n}"
        raise lo.error(node, f"qd.{name}() takes {want} argument(s), got {len(node.args)}")
    return [lo.expr(a) for a in node.args]


def float_dtype(lo, node, name: str, position: int) -> T.DType:
    """The optional ``dt`` of qd.randn / svd / polar_decompose / solve (the ``position``-th
    argument, or ``dt=``): f32 or f64, qd.init's default float when left out."""
    n = len(node.args) + len(node.keywords)
    if n > position + 1 or (node.keywords and (len(node.keywords) > 1 or node.keywords[0].arg != "dt")):
        raise lo.error(node, f"qd.{name}() takes {position} argument(s) and an optional dtype (dt=qd.f32 or qd.f64)")
    arg = node.keywords[0].value if node.keywords else (node.args[position] if len(node.args) > position else None)
    dtype = T.defaults().fp if arg is None else lo.static_value(arg, what=f"the dtype of qd.{name}()")
    dtype = T.python_type(dtype) or dtype
    if dtype not in (T.f32, T.f64):
        raise lo.error(arg, f"qd.{name}() computes in f32 or f64, not {dtype!r}")
    return dtype


def float_arg(lo, v, node) -> ir.Expr:
    e = lo.to_expr(v, node)
    return e if e.type.is_float else lo.coerce(e, T.defaults().fp, node, explicit=True)


def current_name(lo, name: str, node) -> str:
    """``name``, or what replaces a deprecated alias of it (with Quadrants' DeprecationWarning)."""
    if name in DEPRECATED:
        warnings.warn(f"{lo.loc(node)}: qd.simt.{name}() is deprecated; use qd.simt.{DEPRECATED[name]}()",
                      DeprecationWarning, stacklevel=3)
        return DEPRECATED[name]
    return name

"""Arithmetic and math built-ins: min/max, abs, the float functions, pow, atan2, the bit
counts, raw division."""
from __future__ import annotations

import ast

from ...ir import nodes as ir
from ...ir import types as T
from ..common import has_side_effects
from ..values import CT
from .table import FLOAT_MATH, BIT_MATH, handler, call_args, float_arg
from ...lang import mathlib


@handler("raw_div", "raw_mod")
def _raw_division(lo, name, node):
    fn = mathlib.raw_div if name == "raw_div" else mathlib.raw_mod

    def scalar(a, b):
        ea, eb = lo.to_expr(a, node.args[0]), lo.to_expr(b, node.args[1])
        if not (ea.type.is_int and eb.type.is_int):
            raise lo.error(node, f"qd.{name}() takes integers", hint="for floats use x / y, or x - y * qd.trunc(x / y)")
        t = T.promote(*lo.operand_types(a, ea, b, eb))
        return lo.to_expr(lo.inline_values(fn, lo.loc(node), [lo.coerce(ea, t, node), lo.coerce(eb, t, node)]), node)

    values = call_args(lo, node, name, 2)
    return lo.elementwise(scalar, [lo.as_matrix(v, arg) for v, arg in zip(values, node.args, strict=False)],
                          node)  # of vectors and matrices, component by component


@handler("logical_not")
def _logical_not(lo, name, node):
    """``not x``, as written (component by component of a vector)."""
    if len(node.args) != 1 or node.keywords:
        raise lo.error(node, "qd.lang.ops.logical_not(x) takes one argument")
    return lo.expr(ast.copy_location(ast.UnaryOp(ast.Not(), node.args[0]), node))


@handler("bit_shr")
def _bit_shr(lo, name, node):
    """The bits of ``x`` as the unsigned type of its width, shifted (zeros come in), read back
    as ``x``'s type."""

    def scalar(a, b):
        ea, eb = lo.to_expr(a, node.args[0]), lo.to_expr(b, node.args[1])
        if ea.type is T.bool_:
            ea = lo.coerce(ea, T.i32, node)
        if not (ea.type.is_int and (eb.type.is_int or eb.type is T.bool_)):
            raise lo.error(node, f"qd.bit_shr() takes integers, got {ea.type.name} and {eb.type.name}")
        loc, u = lo.loc(node), T.unsigned(ea.type)
        shifted = ir.BinOp(u, loc, "rshift", lo.coerce(ea, u, node, explicit=True), lo.coerce(eb, u, node))
        return shifted if u == ea.type else ir.Cast(ea.type, loc, shifted)

    values = call_args(lo, node, name, 2)
    return lo.elementwise(scalar, [lo.as_matrix(v, arg) for v, arg in zip(values, node.args, strict=False)], node)


@handler("min", "max")
def _minmax(lo, name, node):
    args = call_args(lo, node, name, (2, 64))
    result = args[0]
    for nxt in args[1:]:
        if isinstance(result, CT) and isinstance(nxt, CT):
            result = CT(min(result.value, nxt.value) if name == "min" else max(result.value, nxt.value))
            continue
        ea, eb = lo.to_expr(result, node), lo.to_expr(nxt, node)
        ta, tb = lo.operand_types(result, ea, nxt, eb)
        t = T.promote(ta, tb)
        result = ir.Math(t, lo.loc(node), name, [lo.coerce(ea, t, node), lo.coerce(eb, t, node)])
    return result


@handler("abs")
def _abs(lo, name, node):
    (a,) = call_args(lo, node, name, 1)
    if isinstance(a, CT):
        return CT(abs(a.value))
    e = lo.to_expr(a, node.args[0])
    if e.type is T.bool_:
        e = lo.coerce(e, T.i32, node)
    if e.type.kind == "uint":
        return e
    return ir.Math(e.type, lo.loc(node), "abs", [e])


@handler(*FLOAT_MATH)
def _float_math(lo, name, node):
    if name in ("floor", "ceil", "round") and len(node.args) + len(node.keywords) == 2:  # qd.floor(x, qd.i32)
        if node.keywords and (node.keywords[0].arg != "dtype" or len(node.args) != 1):
            raise lo.error(node, f"qd.{name}(x, dtype) takes the value and a dtype (dtype= by keyword)")
        a = lo.expr(node.args[0])
        dt = lo.expr(node.keywords[0].value if node.keywords else node.args[1])
        dtype = (T.python_type(dt.value) or dt.value) if isinstance(dt, CT) else None
        if not isinstance(dtype, T.DType):
            raise lo.error(node.args[1], f"the dtype of qd.{name}(x, dtype) must be a type such as qd.i32")
        e = float_arg(lo, a, node.args[0])
        return lo.coerce(ir.Math(e.type, lo.loc(node), name, [e]), dtype, node, explicit=True)
    (a,) = call_args(lo, node, name, 1)
    e = float_arg(lo, a, node.args[0])
    return ir.Math(e.type, lo.loc(node), name, [e])


@handler("zero", "one")
def _zero_one(lo, name, node):
    (a,) = call_args(lo, node, name, 1)
    e = lo.to_expr(a, node.args[0])
    if has_side_effects(e):
        lo.once(e, node, "arg")  # evaluated, as in Python, though only its type is used
    value = 0 if name == "zero" else 1
    typed = bool(value) if e.type is T.bool_ else float(value) if e.type.is_float else value
    return ir.Const(e.type, lo.loc(node), typed)


@handler("isnan", "isinf")
def _float_class(lo, name, node):
    (a,) = call_args(lo, node, name, 1)
    e = lo.to_expr(a, node.args[0])
    loc = lo.loc(node)
    if not e.type.is_float:
        return ir.Const(T.bool_, loc, False)  # an integer is never NaN nor infinite
    if name == "isnan":
        return ir.Math(T.bool_, loc, "isnan", [e])
    magnitude = ir.Math(e.type, loc, "abs", [e])
    return ir.Compare(T.bool_, loc, "eq", magnitude, ir.Const(e.type, loc, float("inf")))


@handler("pow")
def _pow(lo, name, node):
    a, b = call_args(lo, node, name, 2)
    return lo.binop("pow", a, b, node)  # as `a ** b`: an integer exponent keeps the base's type


@handler("atan2")
def _float_math2(lo, name, node):
    a, b = call_args(lo, node, name, 2)
    ea, eb = float_arg(lo, a, node.args[0]), float_arg(lo, b, node.args[1])
    t = T.promote(ea.type, eb.type)
    return ir.Math(t, lo.loc(node), name, [lo.coerce(ea, t, node), lo.coerce(eb, t, node)])


@handler(*BIT_MATH)
def _bit_math(lo, name, node):
    (a,) = call_args(lo, node, name, 1)
    e = lo.to_expr(a, node.args[0])
    if not e.type.is_int or e.type.bits not in (32, 64):
        raise lo.error(node.args[0],
                       f"qd.math.{name} takes integral inputs only (i32, u32, i64 or u64), got {e.type.name}")
    return ir.Math(T.i32, lo.loc(node), name, [e])

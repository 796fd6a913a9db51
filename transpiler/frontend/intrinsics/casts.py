"""Conversions: ``qd.cast``, dtype calls, ``qd.bit_cast``, and ``qd.select``."""
from __future__ import annotations

import ast

from ...ir import nodes as ir
from ...ir import types as T
from ..values import CT, MatrixValue, MatrixVar, StructValue, StructVar, TupleValue
from .table import handler, call_args
from ..common import retype_const
from ..handlers import Lowering


def cast_call(lo: Lowering, dtype: T.DType, node: ast.Call):
    _one_argument(lo, dtype, node)
    return _cast_value(lo, dtype, lo.expr(node.args[0]), node)


def dtype_call(lo: Lowering, dtype: T.DType, node: ast.Call):
    """``qd.f32(x)`` in a kernel: ``x`` converted as by qd.cast, under Quadrants' rules for
    what a dtype may decorate: one scalar expression, and a number known at translation time
    only of the dtype's kind and within its range (``qd.f32(0)``, ``qd.i32(0.5)``,
    ``qd.u16(-1)`` are refused there, so code that runs on both writes ``qd.cast``)."""
    _one_argument(lo, dtype, node)
    v = lo.expr(node.args[0])
    if isinstance(v, (MatrixValue, MatrixVar, StructValue, StructVar, TupleValue)):
        raise lo.error(node, "A primitive type cannot decorate an expression with a compound type.",
                       hint=f"convert each component with qd.cast(v, qd.{dtype.name}) or v.cast(qd.{dtype.name})")
    if isinstance(v, CT) and isinstance(v.value, (int, float)) and not isinstance(v.value, bool) \
            and dtype is not T.bool_:
        problem = _literal_problem(v.value, dtype)
        if problem is not None:
            raise lo.error(node, problem, hint=f"convert it with qd.cast({ast.unparse(node.args[0])}, qd.{dtype.name})"
                           if "literals must" in problem else f"write a value of {dtype.name}'s range")
    return _cast_value(lo, dtype, v, node)


def _one_argument(lo: Lowering, dtype: T.DType, node: ast.Call) -> None:
    if len(node.args) != 1 or node.keywords:
        raise lo.error(node, f"qd.{dtype.name}(x) takes exactly one argument: A primitive type can only decorate a "
                             "single expression.")


def _literal_problem(value: int | float, dtype: T.DType) -> str | None:
    """What Quadrants says of a number known at translation time decorated with ``dtype``."""
    if isinstance(value, float) and not dtype.is_float:
        return "Floating-point literals must be annotated with a floating-point type. For type casting, use `qd.cast`."
    if isinstance(value, int) and dtype.is_float:
        return "Integer literals must be annotated with a integer type. For type casting, use `qd.cast`."
    if isinstance(value, int):
        low, high = (0, 2**dtype.bits - 1) if dtype.kind == "uint" else (-2**(dtype.bits - 1), 2**(dtype.bits - 1) - 1)
        if not low <= value <= high:
            return f"Integer literal {value} exceeded the range of specified dtype: {dtype.name}"
    return None


def _cast_value(lo: Lowering, dtype: T.DType, v, node: ast.Call):
    if isinstance(v, CT) and isinstance(v.value, (bool, int, float)):
        return ir.Const(dtype, lo.loc(node), _convert_const(v.value, dtype))
    return lo.coerce(lo.to_expr(v, node.args[0]), dtype, node, explicit=True)


def _convert_const(value, dtype: T.DType):
    if dtype is T.bool_:
        return bool(value)
    if dtype.is_float:
        return float(value)

    return retype_const(ir.Const(T.i64, None, int(value)), dtype).value


@handler("cast")
def _cast(lo, name, node):
    if len(node.args) != 2 or node.keywords:
        raise lo.error(node, "qd.cast(x, dtype) takes exactly two arguments")
    dtype = lo.static_value(node.args[1], what="the dtype of qd.cast")
    dtype = T.python_type(dtype) or dtype
    if not isinstance(dtype, T.DType):
        raise lo.error(node.args[1], f"`{ast.unparse(node.args[1])}` is not a scalar type")
    fake = getattr(node, "_qd_value_call", None)  # made once per call site, as the parsed trees are shared
    if fake is None:
        fake = node._qd_value_call = ast.copy_location(ast.Call(func=node.func, args=[node.args[0]], keywords=[]),
                                                       node)
    return cast_call(lo, dtype, fake)


@handler("bit_cast")
def _bit_cast(lo, name, node):
    if len(node.args) != 2 or node.keywords:
        raise lo.error(node, "qd.bit_cast(x, dtype) takes exactly two arguments")
    dtype = lo.static_value(node.args[1], what="the dtype of qd.bit_cast")
    dtype = T.python_type(dtype) or dtype
    if not isinstance(dtype, T.DType) or dtype is T.bool_:
        raise lo.error(node.args[1], f"`{ast.unparse(node.args[1])}` is not a numeric scalar type")
    v = lo.expr(node.args[0])
    if isinstance(v, CT):
        raise lo.error(node.args[0], "qd.bit_cast needs a typed run-time value",
                       hint=f"cast the constant first, e.g. qd.bit_cast(qd.u32({ast.unparse(node.args[0])}), ...)")
    e = lo.to_expr(v, node.args[0])
    if not isinstance(e.type, T.DType) or e.type is T.bool_ or e.type.bits != dtype.bits:
        shown = getattr(e.type, "name", repr(e.type))
        raise lo.error(node, f"qd.bit_cast from {shown} to {dtype.name}: the widths differ",
                       hint="bit_cast reinterprets bits of the same width (i32/u32/f32, i64/u64/f64); "
                            "use qd.cast to convert values")
    if e.type == dtype:
        return e
    if e.type.is_int and dtype.is_int:  # same width: a conversion keeps the bits in every language
        return ir.Cast(dtype, lo.loc(node), e)
    return ir.BitCast(dtype, lo.loc(node), e)


@handler("select")
def _select(lo, name, node):
    c, a, b = call_args(lo, node, name, 3)
    if isinstance(c, CT):
        return a if c.value else b
    cond = lo.truth(lo.to_expr(c, node.args[0]), node.args[0])
    ea, eb = lo.to_expr(a, node.args[1]), lo.to_expr(b, node.args[2])
    ta, tb = lo.operand_types(a, ea, b, eb)
    t = T.bool_ if ta is T.bool_ and tb is T.bool_ else T.promote(ta, tb)
    return ir.Select(t, lo.loc(node), cond, lo.coerce(ea, t, node), lo.coerce(eb, t, node))

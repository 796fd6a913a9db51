"""Constant folding at node construction: keeps unrolled and inlined code readable
(``x[i + 0 - 1]`` becomes ``x[i - 1]``). Only rewrites that are exact in wrapping
integer arithmetic; floats are left alone (reassociation changes rounding)."""
from __future__ import annotations

import operator

from ..ir import nodes as ir
from ..ir import types as T


def _const(e: ir.Expr):
    return e.value if isinstance(e, ir.Const) and not isinstance(e.value, bool) else None


def _wrap(value: int, t: T.DType) -> int:
    value &= (1 << t.bits) - 1
    if t.kind == "int" and value >= 1 << (t.bits - 1):
        value -= 1 << t.bits
    return value


def binop(t: T.DType, loc: ir.Loc, op: str, a: ir.Expr, b: ir.Expr) -> ir.Expr:
    """``ir.BinOp(t, loc, op, a, b)``, simplified when that is exact."""
    if not t.is_int or t.bits < 32:
        return ir.BinOp(t, loc, op, a, b)
    ca, cb = _const(a), _const(b)
    if op in ("add", "sub", "mul") and ca is not None and cb is not None:
        value = {"add": ca + cb, "sub": ca - cb, "mul": ca * cb}[op]
        return ir.Const(t, loc, _wrap(value, t))
    if op in ("add", "sub") and cb == 0:
        return a
    if op == "add" and ca == 0:
        return b
    if op == "mul" and cb == 1:
        return a
    if op == "mul" and ca == 1:
        return b
    # (x + c1) + c2  ->  x + (c1 + c2), and the same with subtractions.
    if op in ("add", "sub") and cb is not None and isinstance(a, ir.BinOp) and a.op in ("add", "sub") \
            and a.type == t and _const(a.b) is not None:
        inner = a.b.value if a.op == "add" else -a.b.value
        total = _wrap(inner + (cb if op == "add" else -cb), t)
        if total == 0:
            return a.a
        if total < 0 and t.kind == "int" and total != -(1 << (t.bits - 1)):  # -min is out of range
            return ir.BinOp(t, loc, "sub", a.a, ir.Const(t, loc, -total))
        return ir.BinOp(t, loc, "add", a.a, ir.Const(t, loc, total))
    return ir.BinOp(t, loc, op, a, b)


_COMPARE = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
            "ne": operator.ne}


def compare(loc: ir.Loc, op: str, a: ir.Expr, b: ir.Expr) -> ir.Expr:
    """``ir.Compare``, or its value when both sides are integer constants: a condition known
    when translating reads as one, and lavapipe miscompiled 64-bit arithmetic next to such a
    select that glslang had folded itself (fuzz seed 20297)."""
    ca, cb = _const(a), _const(b)
    if ca is not None and cb is not None and a.type.is_int and b.type.is_int:
        return ir.Const(T.bool_, loc, _COMPARE[op](ca, cb))
    return ir.Compare(T.bool_, loc, op, a, b)


def select(t: T.DType, loc: ir.Loc, cond: ir.Expr, a: ir.Expr, b: ir.Expr) -> ir.Expr:
    """``ir.Select``, or the side a constant condition picks (only that side is evaluated)."""
    if isinstance(cond, ir.Const) and isinstance(cond.value, bool):
        return a if cond.value else b
    return ir.Select(t, loc, cond, a, b)

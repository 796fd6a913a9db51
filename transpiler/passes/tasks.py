"""Turn each parallel task into the loop a GPU thread runs: a grid-stride loop over the
flattened index space, with the user's loop variables recovered row-major from it."""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir import types as T
from . import fold


def _sub(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return fold.binop(T.i32, a.loc, "sub", a, b)


def _add(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return fold.binop(T.i32, a.loc, "add", a, b)


def _mul(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return fold.binop(T.i32, a.loc, "mul", a, b)


def _div(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    # The linear index and the extents are non-negative, so C division is floor division.
    return ir.BinOp(T.i32, a.loc, "truncdiv", a, b)


def _rem(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.BinOp(T.i32, a.loc, "truncmod", a, b)


def task_loop(task: ir.Task) -> list[ir.Stmt]:
    """The statements of a task's entry point (the body of the generated function)."""
    return task.prelude + _loop(task) + task.epilogue


def _loop(task: ir.Task) -> list[ir.Stmt]:
    if task.kind == "serial":
        return task.body
    loc = task.loc
    gtid = ir.ThreadIndex(T.i32, loc, "global_thread_idx")
    stride = ir.ThreadIndex(T.i32, loc, "grid_stride")
    if len(task.ranges) == 1:
        (begin, end), var = task.ranges[0], task.loop_vars[0]
        return [ir.For(loc, var, _add(begin, gtid), end, stride, 1, task.body)]
    extents = [_sub(end, begin) for begin, end in task.ranges]
    total = extents[0]
    for e in extents[1:]:
        total = _mul(total, e)
    linear = ir.Local("linear", T.i32, loc, loop_var=True)
    lin = ir.LocalRef(T.i32, loc, linear)
    decls: list[ir.Stmt] = []
    inner = None
    for k in range(len(extents) - 1, -1, -1):
        value = lin if inner is None else _div(lin, inner)
        if k > 0:
            value = _rem(value, extents[k])
        begin = task.ranges[k][0]
        decls.insert(0, ir.Declare(task.loop_vars[k].loc, task.loop_vars[k], _add(begin, value)))
        inner = extents[k] if inner is None else _mul(extents[k], inner)
    return [ir.For(loc, linear, gtid, total, stride, 1, decls + task.body)]

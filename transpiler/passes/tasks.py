"""Turn each parallel task into the loop a GPU thread runs: a grid-stride loop over the
flattened index space, with the user's loop variables recovered row-major from it."""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir import types as T
from ..ir.memo import per_kernel
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


@per_kernel
def task_loop(task: ir.Task, stepped: bool = False) -> list[ir.Stmt]:
    """The statements of a task's entry point (the body of the generated function).
    ``stepped``: a multi-dimensional task's indices are stepped from one iteration to the next
    instead of divided out of the linear index in each (see ``_stepped``). Built once per
    task: every target then renders the same statements, and what is computed from them
    (ranges.index_locals) is computed once."""
    return task.prelude + _loop(task, stepped) + task.epilogue


def _loop(task: ir.Task, stepped: bool) -> list[ir.Stmt]:
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
    before, heads = _stepped(task, extents, gtid, stride) if stepped else ([], _divided(task, extents, linear))
    return before + [ir.For(loc, linear, gtid, total, stride, 1, heads + task.body)]


def _divided(task: ir.Task, extents: list[ir.Expr], linear: ir.Local) -> list[ir.Stmt]:
    """Each loop variable recovered row-major from the linear index, in every iteration."""
    lin = ir.LocalRef(T.i32, task.loc, linear)
    decls: list[ir.Stmt] = []
    inner = None
    for k in range(len(extents) - 1, -1, -1):
        value = lin if inner is None else _div(lin, inner)
        if k > 0:
            value = _rem(value, extents[k])
        begin = task.ranges[k][0]
        decls.insert(0, ir.Declare(task.loop_vars[k].loc, task.loop_vars[k], _add(begin, value)))
        inner = extents[k] if inner is None else _mul(extents[k], inner)
    return decls


def _stepped(task: ir.Task, extents: list[ir.Expr], gtid: ir.Expr,
             stride: ir.Expr) -> tuple[list[ir.Stmt], list[ir.Stmt]]:
    """What comes before the grid-stride loop and what opens each iteration, with each index a
    digit of the linear index in the extents' mixed radix, advanced by the stride's digits with
    a carry (each digit plus its step stays below twice its extent, so one conditional
    subtraction): a thread divides before its loop, not in every iteration. For a device that
    runs a thread's loop many times (lavapipe's grid is capped) and divides slowly. The advance
    opens each iteration, from digits set one stride back, so that a `continue` in the body
    leaves nothing undone."""
    loc = task.loc
    ref = lambda v: ir.LocalRef(v.type, loc, v)  # noqa: E731
    names = [v.name for v in task.loop_vars]
    before: list[ir.Stmt] = []
    digits: list[ir.Local] = []
    steps: list[ir.Local] = []
    inner = None
    for k in range(len(extents) - 1, -1, -1):
        at = gtid if inner is None else _div(gtid, inner)
        step = stride if inner is None else _div(stride, inner)
        if k > 0:
            at, step = _rem(at, extents[k]), _rem(step, extents[k])
        sv = ir.Local(f"{names[k]}_step", T.i32, loc, nonneg=True)
        dv = ir.Local(f"{names[k]}_at", T.i32, loc)
        before += [ir.Declare(loc, sv, step), ir.Declare(loc, dv, _sub(at, ref(sv)))]
        digits.insert(0, dv)
        steps.insert(0, sv)
        inner = extents[k] if inner is None else _mul(extents[k], inner)
    advance: list[ir.Stmt] = []
    carry = None
    for k in range(len(extents) - 1, -1, -1):
        value = _add(ref(digits[k]), ref(steps[k]))
        if carry is not None:
            value = _add(value, ir.Select(T.i32, loc, ref(carry), ir.Const(T.i32, loc, 1), ir.Const(T.i32, loc, 0)))
        advance.append(ir.Assign(loc, digits[k], value))
        if k > 0:
            carry = ir.Local(f"{names[k]}_wraps", T.bool_, loc)
            advance.append(ir.Declare(loc, carry, ir.Compare(T.bool_, loc, "ge", ref(digits[k]), extents[k])))
            advance.append(ir.Assign(loc, digits[k], ir.Select(T.i32, loc, ref(carry), _sub(ref(digits[k]), extents[k]),
                                                               ref(digits[k]))))
    decls = [ir.Declare(var.loc, var, _add(begin, ref(d)))
             for var, (begin, _), d in zip(task.loop_vars, task.ranges, digits)]
    return before, advance + decls

"""Automatic differentiation of a kernel's IR, as Quadrants derives it: ``kernel.grad()``
(reverse mode) and the kernel a ``qd.ad.FwdMode`` block runs (forward mode).

Reverse mode: each task becomes a task over the same range whose body first replays the
primal computation (locals only: the stores are dropped, the forward kernel already made
them) and then walks the statements backwards, applying the chain rule:

- ``v = e`` moves ``v``'s adjoint into ``e``'s operands (and clears it);
- ``a[i] = e`` moves ``a.grad[i]`` into ``e`` and clears it; ``a[i] += e`` adds ``a.grad[i]``
  into ``e`` (Quadrants' MakeAdjoint does both so);
- a read ``a[i]`` adds its adjoint into ``a.grad[i]`` atomically;
- an ``if`` is walked under the condition the replay took; an inner loop runs backwards, each
  iteration replaying its own primal values first (Quadrants without its adstack), which is
  exact unless a derivative needs a value a previous iteration carried in: that needs the
  adstack, and is refused at the loop.

Locals every part needs are declared at the task's top, and a value a later statement
overwrites is kept in a snapshot where the backward walk needs it. Tasks run in reverse
order; a kernel-scope variable's buffer gets a zeroed adjoint buffer of its own.

Forward mode carries a tangent beside each float local and stores it into ``a.dual[i]``
beside each store, in the primal's own order.

Arrays with no adjoint (integer ones, fields made without ``needs_grad``) are constants.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.walk import all_stmts, iter_expr, rebuild, stmt_bodies, stmt_exprs

# The adjoint or tangent companion of an array parameter (None: it has none, a constant).
Companions = Callable[[ir.Param], "ir.Param | None"]

_DROPPED = (ir.Print, ir.Fence)  # nothing to differentiate, and not repeated by a derived kernel
_ZERO_DERIVATIVE = ("floor", "ceil", "round", "trunc")


def _is_float(t: object) -> bool:
    return isinstance(t, T.DType) and t.is_float


def _const(value: float, dtype: T.DType, loc: ir.Loc) -> ir.Const:
    return ir.Const(dtype, loc, float(value) if dtype.is_float else int(value))


def _bin(op: str, a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.BinOp(a.type, a.loc, op, a, b)


def _mul(a: ir.Expr | None, b: ir.Expr | None) -> ir.Expr | None:
    """``a * b`` where None stands for 1."""
    if a is None:
        return b
    if b is None:
        return a
    return _bin("mul", a, b)


def _math(fn: str, *args: ir.Expr) -> ir.Expr:
    return ir.Math(args[0].type, args[0].loc, fn, list(args))


def _neg(a: ir.Expr) -> ir.Expr:
    return ir.Unary(a.type, a.loc, "neg", a)


def partials(e: ir.Expr) -> list[tuple[ir.Expr, ir.Expr | None]]:
    """``e``'s float operands, each with the derivative of ``e`` by it (None: 1), in terms
    of ``e``'s own operands (and ``e`` itself, where that reads shorter)."""
    t, loc = e.type, e.loc
    one = _const(1, t, loc) if _is_float(t) else None
    if isinstance(e, ir.BinOp):
        a, b = e.a, e.b
        if e.op == "add":
            return [(a, None), (b, None)]
        if e.op == "sub":
            return [(a, None), (b, _const(-1, t, loc))]
        if e.op == "mul":
            return [(a, b), (b, a)]
        if e.op == "truediv":
            return [(a, _bin("truediv", one, b)), (b, _neg(_bin("truediv", a, _bin("mul", b, b))))]
        if e.op == "pow":
            return _pow_partials(e, a, b)
        if e.op == "mod":  # a - b * floor(a / b)
            return [(a, None), (b, _neg(_math("floor", _bin("truediv", a, b))))]
        return []  # floordiv: piecewise constant
    if isinstance(e, ir.Unary):
        return [(e.a, _const(-1, t, loc))] if e.op == "neg" else []
    if isinstance(e, ir.Cast):
        return [(e.a, None)] if _is_float(e.a.type) else []
    if isinstance(e, ir.Math):
        return _math_partials(e)
    return []


def _pow_partials(e: ir.Expr, a: ir.Expr, b: ir.Expr) -> list[tuple[ir.Expr, ir.Expr | None]]:
    t, loc = e.type, e.loc
    if isinstance(b, ir.Const):  # the common x ** 2: 2 * x, not 2 * pow(x, 1)
        less = b.value - 1
        power = a if less == 1 else _const(1, t, loc) if less == 0 else _math("pow", a, _const(less, b.type, loc))
        return [(a, _bin("mul", _cast(b, t), power))]
    b = _cast(b, t)
    return [(a, _bin("mul", b, _math("pow", a, _bin("sub", b, _const(1, t, loc))))),
            (b, _bin("mul", e, _math("log", a)))]


def _math_partials(e: ir.Math):
    t, loc, fn = e.type, e.loc, e.fn
    if not _is_float(t) or fn in _ZERO_DERIVATIVE:
        return []
    one = _const(1, t, loc)
    a = e.args[0]
    if fn == "atan2":
        y, x = e.args
        r = _bin("add", _bin("mul", x, x), _bin("mul", y, y))
        return [(y, _bin("truediv", x, r)), (x, _neg(_bin("truediv", y, r)))]
    if fn == "pow":
        return _pow_partials(e, a, e.args[1])
    if fn in ("min", "max"):
        b = e.args[1]
        first = ir.Compare(T.bool_, loc, "lt" if fn == "min" else "gt", a, b)
        zero = _const(0, t, loc)
        return [(a, ir.Select(t, loc, first, one, zero)), (b, ir.Select(t, loc, first, zero, one))]
    table = {
        "sqrt": lambda: _bin("truediv", _const(0.5, t, loc), e),
        "rsqrt": lambda: _bin("mul", _const(-0.5, t, loc), _bin("mul", e, _bin("mul", e, e))),
        "exp": lambda: e,
        "log": lambda: _bin("truediv", one, a),
        "sin": lambda: _math("cos", a),
        "cos": lambda: _neg(_math("sin", a)),
        "tan": lambda: _bin("add", one, _bin("mul", e, e)),
        "asin": lambda: _bin("truediv", one, _math("sqrt", _bin("sub", one, _bin("mul", a, a)))),
        "acos": lambda: _neg(_bin("truediv", one, _math("sqrt", _bin("sub", one, _bin("mul", a, a))))),
        "atan": lambda: _bin("truediv", one, _bin("add", one, _bin("mul", a, a))),
        "sinh": lambda: _math("cosh", a),
        "cosh": lambda: _math("sinh", a),
        "tanh": lambda: _bin("sub", one, _bin("mul", e, e)),
        "abs": lambda: ir.Select(t, loc, ir.Compare(T.bool_, loc, "gt", a, _const(0, t, loc)), one,  # sign(a):
                                 ir.Select(t, loc, ir.Compare(T.bool_, loc, "lt", a, _const(0, t, loc)),  # 0 at 0,
                                           _const(-1, t, loc), _const(0, t, loc))),               # as Quadrants
    }
    rule = table.get(fn)
    if rule is None:
        raise TranspileError(f"automatic differentiation of `{fn}` is not supported", loc)
    return [(a, rule())]


def _refuse(loc: ir.Loc, what: str, hint: str | None = None) -> TranspileError:
    return TranspileError(f"automatic differentiation: {what}", loc, hint)


def _check_expr(e: ir.Expr) -> None:
    """Refuse what has no derivative the kernel could compute."""
    for n in iter_expr(e):
        if isinstance(n, ir.Load) and isinstance(n.array, ir.SharedArray) and _is_float(n.type):
            raise _refuse(n.loc, "a read of block shared memory cannot be differentiated")
        if isinstance(n, ir.Call):
            raise _refuse(n.loc, "a call of a @qd.real_func cannot be differentiated",
                          hint="make it a @qd.func (inlined into the kernel)")
        if isinstance(n, (ir.Atomic, ir.SubgroupOp, ir.WarpOp, ir.VolatileLoad)) and _is_float(n.type):
            raise _refuse(n.loc, "the value of an atomic or subgroup operation cannot be differentiated",
                          hint="use the atomic as a statement (`a[i] += v`), not its old value")


def _assigned(stmts: list[ir.Stmt]) -> dict[int, int]:
    """How often each local is assigned (an assignment inside a loop counts twice)."""
    counts: dict[int, int] = {}

    def walk(block: list[ir.Stmt], weight: int) -> None:
        for st in block:
            if isinstance(st, (ir.Declare, ir.Assign)) and (not isinstance(st, ir.Declare) or st.init is not None):
                counts[id(st.var)] = counts.get(id(st.var), 0) + weight
            for b in stmt_bodies(st):
                walk(b, 2 if isinstance(st, (ir.For, ir.While)) else weight)

    walk(stmts, 1)
    return counts


def _locals_read(exprs: Iterable[ir.Expr]) -> list[ir.Local]:
    seen, out = set(), []
    for e in exprs:
        for n in iter_expr(e):
            if isinstance(n, ir.LocalRef) and id(n.var) not in seen:
                seen.add(id(n.var))
                out.append(n.var)
    return out


class _TaskAdjoint:
    """The reverse-mode body of one task."""

    def __init__(self, task: ir.Task, params: list[ir.Param], companions: Companions):
        self.companions = companions
        self.top: list[ir.Stmt] = []                  # hoisted declarations
        # The locals declared before the body (a prelude's) count as hoisted already.
        self.hoisted: set[int] = {id(st.var) for st in task.prelude if isinstance(st, ir.Declare)}
        self.adj: dict[int, ir.Local] = {}            # id(local) -> its adjoint
        self.subst: dict[int, ir.Local] = {}          # a loop variable -> the reverse loop's copy of it
        self.multi = _assigned(task.body)
        # The names taken, which the locals made here avoid.
        self.names: set[str] = {st.var.name for st in all_stmts(task.code()) if isinstance(st, (ir.Declare, ir.For))} \
            | {v.name for v in task.loop_vars} | {p.name for p in params}
        self.snap_of: dict[int, ir.Local] = {}        # id(snapshot) -> the local it copies

    # -------------------------------------------------------------- locals

    def fresh(self, base: str, dtype: T.DType, loc: ir.Loc) -> ir.Local:
        name, k = base, 1
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        var = ir.Local(name, dtype, loc)
        self.declare(var)
        return var

    def declare(self, var: ir.Local) -> None:
        if id(var) not in self.hoisted:
            self.hoisted.add(id(var))
            self.top.append(ir.Declare(var.loc, var, _const(0, var.type, var.loc)))

    def adjoint(self, var: ir.Local) -> ir.Local:
        found = self.adj.get(id(var))
        if found is None:
            found = self.adj[id(var)] = self.fresh(f"{var.name}_adj", var.type, var.loc)
        return found

    def fix(self, e: ir.Expr, snaps: dict[int, ir.Local]) -> ir.Expr:
        """``e`` reading the snapshots (and reverse-loop copies) in place of the locals."""
        if isinstance(e, ir.LocalRef):
            v = snaps.get(id(e.var)) or self.subst.get(id(e.var))
            return e if v is None else ir.LocalRef(v.type, e.loc, v)
        return rebuild(e, lambda _, c: self.fix(c, snaps))

    # -------------------------------------------------------------- replay

    def replay(self, block: list[ir.Stmt]) -> tuple[list[ir.Stmt], list]:
        """The primal code of ``block`` without its stores, with every declaration hoisted,
        and per statement the snapshots its backward step reads."""
        out, notes = [], []
        for st in block:
            atomic = st.expr if isinstance(st, ir.ExprStmt) and isinstance(st.expr, ir.Atomic) else None
            for e in ([atomic.value, *atomic.indices] if atomic is not None else stmt_exprs(st)):
                _check_expr(e)
            snaps: dict[int, ir.Local] = {}
            for v in _locals_read(stmt_exprs(st)):
                if self.multi.get(id(v), 0) > 1:
                    s = self.fresh(f"{v.name}_was", v.type, st.loc)
                    self.snap_of[id(s)] = v
                    out.append(ir.Assign(st.loc, s, self.fix(ir.LocalRef(v.type, st.loc, v), {})))
                    snaps[id(v)] = s
            sub = self.fix_stmt(st)
            if isinstance(st, (ir.Declare, ir.Assign)):
                self.declare(st.var)
                value = sub.init if isinstance(sub, ir.Declare) else sub.value
                if value is not None:
                    out.append(ir.Assign(st.loc, st.var, value))
                notes.append((st, snaps, None))
            elif isinstance(st, ir.If):
                cond = self.fresh("cond", T.bool_, st.loc)
                out.append(ir.Assign(st.loc, cond, sub.cond))
                then, then_notes = self.replay(st.then)
                orelse, else_notes = self.replay(st.orelse)
                out.append(ir.If(st.loc, ir.LocalRef(T.bool_, st.loc, cond), then, orelse))
                notes.append((st, snaps, (cond, then_notes, else_notes)))
            elif isinstance(st, ir.For):
                bounds = []
                for part, e in (("start", sub.start), ("stop", sub.stop), ("step", sub.step)):
                    if isinstance(e, ir.Const):
                        bounds.append(e)
                    else:
                        b = self.fresh(f"{st.var.name}_{part}", e.type, st.loc)
                        out.append(ir.Assign(st.loc, b, e))
                        bounds.append(ir.LocalRef(b.type, st.loc, b))
                entry = []  # what the loop's locals hold before it (for a backward step to start from)
                inside = {id(s.var) for s in all_stmts(st.body) if isinstance(s, ir.Declare)}
                for v in _assigned_locals(st.body):
                    if id(v) not in inside:
                        kept = self.fresh(f"{v.name}_entry", v.type, st.loc)
                        self.snap_of[id(kept)] = v
                        out.append(ir.Assign(st.loc, kept, ir.LocalRef(v.type, st.loc, v)))
                        entry.append((v, kept))
                body, _ = self.replay(st.body)
                out.append(ir.For(st.loc, st.var, *bounds, st.step_sign, body))
                notes.append((st, snaps, (bounds, entry)))
            elif isinstance(st, ir.Store):
                if isinstance(st.array, ir.SharedArray):
                    raise _refuse(st.loc, "a store to block shared memory cannot be differentiated")
                notes.append((st, snaps, None))
            elif isinstance(st, ir.ExprStmt):
                notes.append((st, snaps, None))
            elif isinstance(st, ir.While):
                raise _refuse(st.loc, "a `while` loop cannot be differentiated in reverse mode (Quadrants needs its "
                                      "adstack for one)", hint="use a `for` loop with a bound, or qd.ad.FwdMode")
            elif isinstance(st, (ir.Break, ir.Continue)):
                raise _refuse(st.loc, "`break` and `continue` cannot be differentiated in reverse mode")
            elif isinstance(st, ir.Return):
                raise _refuse(st.loc, "a kernel that returns a value cannot be differentiated",
                              hint="store the value into a field instead")
            elif isinstance(st, (ir.Barrier, ir.DeclareShared)):
                raise _refuse(st.loc, "block-level code (shared memory, barriers) cannot be differentiated")
            elif not isinstance(st, _DROPPED):
                raise _refuse(st.loc, f"this statement ({type(st).__name__}) cannot be differentiated")
        return out, notes

    def fix_stmt(self, st: ir.Stmt) -> ir.Stmt:
        return rebuild(st, lambda _, e: self.fix(e, {}))

    # -------------------------------------------------------------- backward walk

    def backward(self, notes: list) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for st, snaps, extra in reversed(notes):
            loc = st.loc
            if isinstance(st, (ir.Declare, ir.Assign)):
                value = st.init if isinstance(st, ir.Declare) else st.value
                if not _is_float(st.var.type):
                    continue
                adj = self.adjoint(st.var)
                g = self.fresh(f"{st.var.name}_g", st.var.type, loc)
                out.append(ir.Assign(loc, g, ir.LocalRef(adj.type, loc, adj)))
                out.append(ir.Assign(loc, adj, _const(0, adj.type, loc)))
                if value is not None:
                    self.flow(self.fix(value, snaps), ir.LocalRef(g.type, loc, g), out)
            elif isinstance(st, ir.Store):
                grad = self.companions(st.array) if _is_float(st.array.type.dtype) else None
                if grad is None:
                    continue
                idx = [self.fix(i, snaps) for i in st.indices]
                g = self.fresh(f"{st.array.name}_g", grad.type.dtype, loc)
                out.append(ir.Assign(loc, g, ir.Load(grad.type.dtype, loc, grad, idx)))
                out.append(ir.Store(loc, grad, idx, _const(0, grad.type.dtype, loc)))
                self.flow(self.fix(st.value, snaps), ir.LocalRef(g.type, loc, g), out)
            elif isinstance(st, ir.ExprStmt):
                self.backward_atomic(st, snaps, out)
            elif isinstance(st, ir.If):
                cond, then_notes, else_notes = extra
                out.append(ir.If(loc, ir.LocalRef(T.bool_, loc, cond), self.backward(then_notes),
                                 self.backward(else_notes)))
            elif isinstance(st, ir.For):
                out += self.backward_loop(st, extra)
        return out

    def backward_atomic(self, st: ir.ExprStmt, snaps: dict[int, ir.Local], out: list[ir.Stmt]) -> None:
        a = st.expr
        if not isinstance(a, ir.Atomic) or not _is_float(a.array.type.dtype):
            return
        grad = self.companions(a.array) if isinstance(a.array, ir.Param) else None
        if grad is None:
            if isinstance(a.array, ir.SharedArray):
                raise _refuse(st.loc, "an atomic on block shared memory cannot be differentiated")
            return
        if a.op not in ("add", "sub"):
            raise _refuse(st.loc, f"an atomic {a.op} cannot be differentiated", hint="only atomic add and sub can")
        idx = [self.fix(i, snaps) for i in a.indices]
        g = self.fresh(f"{a.array.name}_g", grad.type.dtype, st.loc)
        out.append(ir.Assign(st.loc, g, ir.Load(grad.type.dtype, st.loc, grad, idx)))
        ref = ir.LocalRef(g.type, st.loc, g)
        self.flow(self.fix(a.value, snaps), ref if a.op == "add" else _neg(ref), out)

    def backward_loop(self, st: ir.For, extra: tuple[list[ir.Expr], list[tuple[ir.Local, ir.Local]]]) -> list[ir.Stmt]:
        """The loop run backwards: iteration ``k`` of ``count`` is the primal's
        ``count - 1 - k``, its primal values replayed first. Where a backward step needs a
        value an earlier iteration carried in (``v = v * x[j]``), the iterations before it
        are replayed too, from the values the loop started with: Quadrants keeps such values
        on its adstack instead (memory per iteration; this costs time, quadratic in the
        loop's trip count)."""
        bounds, entry = extra
        loc, t = st.loc, st.var.type
        start, stop, step = bounds
        one, zero = _const(1, t, loc), _const(0, t, loc)
        if st.step_sign == 0:
            raise _refuse(loc, "a loop whose step's sign is not known cannot be differentiated")
        span = _bin("sub", stop, start) if st.step_sign > 0 else _bin("sub", start, stop)
        mag = step if st.step_sign > 0 else _neg(step)
        if isinstance(step, ir.Const) and abs(step.value) == 1:
            raw = span
        else:
            raw = _bin("floordiv", _bin("sub", _bin("add", span, mag), one), mag)
        count = self.fresh(f"{st.var.name}_count", t, loc)
        k = self.loop_var(f"{st.var.name}_rev", t, loc)
        copy = self.fresh(st.var.name, t, loc)
        saved = self.subst.get(id(st.var))
        self.subst[id(st.var)] = copy
        last = _bin("sub", _bin("sub", ir.LocalRef(t, loc, count), one), ir.LocalRef(t, loc, k))
        body = [ir.Assign(loc, copy, _bin("add", start, _bin("mul", last, step)))]
        replay, notes = self.replay(st.body)
        backward = self.backward(notes)
        if self.needs_carried(backward, _carried(replay)):  # (the replay: its branch conditions too)
            again = self.loop_var(f"{st.var.name}_again", t, loc)
            self.subst[id(st.var)] = again
            before, _ = self.replay(st.body)
            body += [ir.Assign(loc, v, ir.LocalRef(v.type, loc, kept)) for v, kept in entry]
            body.append(ir.For(loc, again, start, ir.LocalRef(t, loc, copy), step, st.step_sign, before))
        body += replay + backward
        if saved is None:
            del self.subst[id(st.var)]
        else:
            self.subst[id(st.var)] = saved
        ahead = ir.Assign(loc, count, ir.Select(t, loc, ir.Compare(T.bool_, loc, "gt", raw, zero), raw, zero))
        return [ahead, ir.For(loc, k, zero, ir.LocalRef(t, loc, count), one, 1, body)]

    def loop_var(self, base: str, dtype: T.DType, loc: ir.Loc) -> ir.Local:
        name, n = base, 1
        while name in self.names:
            name, n = f"{base}_{n}", n + 1
        self.names.add(name)
        return ir.Local(name, dtype, loc, loop_var=True)

    def needs_carried(self, backward: list[ir.Stmt], tainted: set[int]) -> bool:
        """Whether a backward step reads a value an earlier iteration carried in."""
        if not tainted:
            return False
        for e in _all_exprs(backward):
            for n in iter_expr(e):
                if isinstance(n, ir.LocalRef) and id(self.snap_of.get(id(n.var), n.var)) in tainted:
                    return True
        return False

    # -------------------------------------------------------------- the chain rule

    def flow(self, e: ir.Expr, g: ir.Expr, out: list[ir.Stmt]) -> None:
        """Add ``g`` (the adjoint of ``e``'s value) into the adjoints of what ``e`` reads."""
        if not _is_float(e.type):
            return
        if isinstance(e, ir.LocalRef):
            adj = self.adjoint(self.snap_of.get(id(e.var), e.var))  # a snapshot's adjoint is its local's
            out.append(ir.Assign(e.loc, adj, _bin("add", ir.LocalRef(adj.type, e.loc, adj), _cast(g, adj.type))))
            return
        if isinstance(e, ir.Load):
            grad = self.companions(e.array) if isinstance(e.array, ir.Param) else None
            if grad is not None:
                out.append(ir.ExprStmt(e.loc, ir.Atomic(grad.type.dtype, e.loc, "add", grad, list(e.indices),
                                                        _cast(g, grad.type.dtype))))
            return
        if isinstance(e, ir.Select):
            g = self.named(g, out)
            zero = _const(0, e.type, e.loc)
            self.flow(e.a, ir.Select(e.type, e.loc, e.cond, g, zero), out)
            self.flow(e.b, ir.Select(e.type, e.loc, e.cond, zero, g), out)
            return
        parts = [(c, f) for c, f in partials(e) if _is_float(c.type)]
        if len(parts) > 1:
            g = self.named(g, out)
        for child, factor in parts:
            self.flow(child, _cast(_mul(g, factor), child.type), out)

    def named(self, g: ir.Expr, out: list[ir.Stmt]) -> ir.Expr:
        if isinstance(g, (ir.LocalRef, ir.Const)):
            return g
        t = self.fresh("adj_t", g.type, g.loc)
        out.append(ir.Assign(g.loc, t, g))
        return ir.LocalRef(t.type, g.loc, t)


def _without_unread(body: list[ir.Stmt], snapshots: set[int]) -> list[ir.Stmt]:
    """``body`` without the snapshots nothing reads (most: a local's later value was not
    needed after all)."""
    read = {id(v) for v in _locals_read(_all_exprs(body))}
    unread = snapshots - read

    def keep(block: list[ir.Stmt]) -> list[ir.Stmt]:
        out = []
        for st in block:
            if isinstance(st, (ir.Declare, ir.Assign)) and id(st.var) in unread:
                continue
            out.append(rebuild(st, lambda _, e: e, lambda _, b: keep(b)) if stmt_bodies(st) else st)
        return out

    return keep(body)


def _cast(e: ir.Expr, dtype: T.DType) -> ir.Expr:
    return e if e.type == dtype else ir.Cast(dtype, e.loc, e)


def _all_exprs(stmts: list[ir.Stmt]):
    for st in all_stmts(stmts):
        yield from stmt_exprs(st)


def _assigned_locals(body: list[ir.Stmt]) -> list[ir.Local]:
    out, seen = [], set()
    for st in all_stmts(body):
        if isinstance(st, (ir.Declare, ir.Assign)) and id(st.var) not in seen:
            seen.add(id(st.var))
            out.append(st.var)
    return out


def _carried(body: list[ir.Stmt]) -> set[int]:
    """The locals of a loop body that may hold a previous iteration's value where read, and
    those computed from them."""
    assigned = {id(st.var) for st in all_stmts(body) if isinstance(st, (ir.Declare, ir.Assign))}
    seen_assigned: set[int] = set()
    tainted: set[int] = set()
    for st in all_stmts(body):
        for v in _locals_read(stmt_exprs(st)):
            if id(v) in assigned and id(v) not in seen_assigned:
                tainted.add(id(v))
        if isinstance(st, (ir.Declare, ir.Assign)):
            seen_assigned.add(id(st.var))
    changed = bool(tainted)
    while changed:
        changed = False
        for st in all_stmts(body):
            if isinstance(st, (ir.Declare, ir.Assign)) and id(st.var) not in tainted:
                value = st.init if isinstance(st, ir.Declare) else st.value
                if value is not None and any(id(v) in tainted for v in _locals_read([value])):
                    tainted.add(id(st.var))
                    changed = True
    return tainted


def reverse(kernel: ir.Kernel, companions: Companions) -> ir.Kernel:
    """The reverse-mode derivative of ``kernel``: the primal tasks that compute kernel-scope
    variables (their buffers are the derivative's own, zeroed), then each task's adjoint,
    last task first."""
    _check_kernel(kernel)
    tasks = [dataclasses.replace(t, body=_scratch_writes(t.body)) for t in kernel.tasks if _writes_scratch(t)]
    for task in reversed(kernel.tasks):
        if task.epilogue or task.shared:
            raise _refuse(task.loc, "block-level code (shared memory, block reductions) cannot be differentiated")
        adj = _TaskAdjoint(task, kernel.params, companions)
        replay, notes = adj.replay(task.body)
        backward = adj.backward(notes)
        body = _without_unread(adj.top + replay + backward, set(adj.snap_of))
        tasks.append(dataclasses.replace(task, body=body, shared=[], epilogue=[]))
    return _renamed(kernel, tasks)


def _writes_scratch(task: ir.Task) -> bool:
    return any(isinstance(st, ir.Store) and _is_scratch(st.array) or isinstance(st, ir.ExprStmt) and
               isinstance(st.expr, ir.Atomic) and _is_scratch(st.expr.array) for st in all_stmts(task.body))


def _is_scratch(array: ir.Array) -> bool:
    return isinstance(array, ir.Param) and array.role == "scratch"


def _scratch_writes(block: list[ir.Stmt]) -> list[ir.Stmt]:
    """``block`` writing only kernel-scope variables (the user's arrays hold what the forward
    kernel wrote there already)."""
    out = []
    for st in block:
        if isinstance(st, ir.Store) and not _is_scratch(st.array) or isinstance(st, ir.ExprStmt) and \
                isinstance(st.expr, ir.Atomic) and not _is_scratch(st.expr.array) or isinstance(st, _DROPPED):
            continue
        out.append(rebuild(st, lambda _, e: e, lambda _, b: _scratch_writes(b)) if stmt_bodies(st) else st)
    return out


def _renamed(kernel: ir.Kernel, tasks: list[ir.Task]) -> ir.Kernel:
    """The derivative (named by the lowering: ``f_grad``) with its tasks named after it."""
    names = [f"{kernel.name}_{k}" for k in range(len(tasks))] if len(tasks) > 1 else [kernel.name]
    tasks = [dataclasses.replace(t, name=n) for t, n in zip(tasks, names)]
    return dataclasses.replace(kernel, tasks=tasks, loops=[])


def _check_kernel(kernel: ir.Kernel) -> None:
    if kernel.loops:
        raise _refuse(kernel.loops[0].loc, "qd.graph loops cannot be differentiated")
    if kernel.functions:
        raise _refuse(kernel.functions[0].loc, "a call of a @qd.real_func cannot be differentiated",
                      hint="make it a @qd.func (inlined into the kernel)")


def forward(kernel: ir.Kernel, companions: Companions) -> ir.Kernel:
    """The forward-mode derivative of ``kernel``: the primal with a tangent beside each value."""
    _check_kernel(kernel)
    tasks = []
    for task in kernel.tasks:
        if task.epilogue:
            raise _refuse(task.loc, "block reductions cannot be differentiated")
        tangents: dict[int, ir.Local] = {}
        top: list[ir.Stmt] = []
        body = _tangent_block(task.body, tangents, companions, top)
        tasks.append(dataclasses.replace(task, body=top + body))
    return _renamed(kernel, tasks)


def _tangent_block(block: list[ir.Stmt], tangents: dict, companions: Companions, top: list) -> list[ir.Stmt]:
    out = []

    def dual(var: ir.Local, declared_here: bool) -> ir.Local:
        """The tangent of ``var``: a new one where ``var`` is declared (each declaration has
        its own scope), else the one in scope."""
        d = tangents.get(id(var))
        if d is None or declared_here:
            d = tangents[id(var)] = ir.Local(f"{var.name}_dual", var.type, var.loc)
            if not declared_here:  # (a local the prelude declared, assigned in the body)
                top.append(ir.Declare(var.loc, d, _const(0, var.type, var.loc)))
        return d

    def tangent(e: ir.Expr) -> ir.Expr | None:
        """The tangent of ``e`` (None: zero)."""
        if not _is_float(e.type):
            return None
        if isinstance(e, ir.LocalRef):
            d = tangents.get(id(e.var))
            return None if d is None else ir.LocalRef(d.type, e.loc, d)
        if isinstance(e, ir.Load):
            d = companions(e.array) if isinstance(e.array, ir.Param) else None
            return None if d is None else ir.Load(d.type.dtype, e.loc, d, list(e.indices))
        if isinstance(e, ir.Select):
            ta, tb = tangent(e.a), tangent(e.b)
            if ta is None and tb is None:
                return None
            zero = _const(0, e.type, e.loc)
            return ir.Select(e.type, e.loc, e.cond, ta or zero, tb or zero)
        _check_expr(e)
        total = None
        for child, factor in partials(e):
            tc = tangent(child) if _is_float(child.type) else None
            if tc is None:
                continue
            term = _cast(_mul(tc, factor), e.type)
            total = term if total is None else _bin("add", total, term)
        return total

    for st in block:
        if isinstance(st, (ir.Declare, ir.Assign)) and _is_float(st.var.type):
            value = st.init if isinstance(st, ir.Declare) else st.value
            t = tangent(value) if value is not None else None
            declaring = isinstance(st, ir.Declare)
            d = dual(st.var, declaring)
            init = t if t is not None else _const(0, d.type, st.loc)
            out.append(ir.Declare(st.loc, d, init) if declaring else ir.Assign(st.loc, d, init))
            out.append(st)
            continue
        if isinstance(st, ir.Store) and isinstance(st.array, ir.Param) and _is_float(st.array.type.dtype):
            d = companions(st.array)
            if d is not None:
                t = tangent(st.value)
                out.append(ir.Store(st.loc, d, list(st.indices), t if t is not None else _const(0, d.type.dtype,
                                                                                                   st.loc)))
        if isinstance(st, ir.ExprStmt) and isinstance(st.expr, ir.Atomic) and isinstance(st.expr.array, ir.Param) \
                and _is_float(st.expr.array.type.dtype) and st.expr.op in ("add", "sub"):
            d = companions(st.expr.array)
            t = tangent(st.expr.value)
            if d is not None and t is not None:
                out.append(ir.ExprStmt(st.loc, ir.Atomic(d.type.dtype, st.loc, st.expr.op, d, list(st.expr.indices),
                                                         t)))
        bodies = stmt_bodies(st)
        if bodies:
            st = rebuild(st, lambda _, e: e, lambda _, b: _tangent_block(b, tangents, companions, top))
        out.append(st)
    return out

"""Checks a kernel makes under ``qd.init(debug=True)`` (``translate(..., debug=True)``), as
Quadrants' debug mode does: a failed ``assert`` stops the call with an AssertionError on the
host, its message formatted with the values the failing thread had.

Indices are checked too (``add_bounds_checks``): an access out of an array's bounds is an
AssertionError ("Out of bound access ...") instead of a read or write of other memory.

Every target reports the same way, with what they all have: a hidden buffer of u32 words
(``Param.role == "assert"``, zeroed per launch). The first failing thread claims word 0 with
a compare-and-swap, writing its assert's number there (1, 2, ...), and stores the values its
message formats into the words after it (a 64-bit value in two words, low first). The
manifest's ``asserts`` entry says, per number, where the assert is and how to format them;
``runtime.asserts`` reads the buffer back after the launch.
"""
from __future__ import annotations

import ast
import dataclasses
import linecache
import re

from ..ir import nodes as ir
from ..ir import types as T
from ..ir import walk
from ..passes.ranges import value_range
from .common import has_side_effects
from .values import CT

MAX_WORDS = 16  # the values one message may format, in 32-bit words
# Integer operations debug mode watches for wrapping, and the word its report begins with.
OVERFLOW_WORDS = {"add": "Addition", "sub": "Subtraction", "mul": "Multiplication", "lshift": "Shift left"}

# One printf-style field: %[flags][width][.precision]type (a length modifier is ignored).
_PERCENT = re.compile(r"%(?P<spec>[-#0 +]*\d*(?:\.\d+)?)[hlLqjzt]*(?P<type>[diouxXeEfFgGcrsa%])")


class DebugCheckLowering:
    """Methods of KernelLowering for debug-mode checks."""

    def debug_checks(self) -> bool:
        """Whether this lowering keeps checks: debug mode, the kernel's own body or a
        @qd.func it inlines (a @qd.real_func, a separate function, and a derivative kernel
        compile them away)."""
        return T.defaults().debug and self.kernel.autodiff is None and not self.function_stack

    def debug_assert(self, s: ast.Assert) -> None:
        test = self.expr(s.test)
        if isinstance(test, CT) and test.value:
            return  # true at translation time
        failed = (None if isinstance(test, CT)
                  else ir.Unary(T.bool_, self.loc(s), "not", self.condition_of(test, s.test)))
        parts, values = self.assert_message(s)
        for st in self.failure_report(s, failed, parts, values, f"assert {ast.unparse(s.test)}"):
            self.emit(st)

    def check_component_index(self, k: ir.Expr, n: int, node: ast.AST | ir.Loc, what: str) -> None:
        """Debug mode: a run-time index ``k`` into the ``n`` components (or rows) of a local
        vector or matrix is checked (the code picks the last one for any index beyond)."""
        if not self.debug_checks():
            return
        loc = node if isinstance(node, ir.Loc) else self.loc(node)
        extent = ir.Const(T.i32, loc, n)
        if _within_extent(k, extent, {}):
            return
        parts = [f"Out of bound access to {what} with index [", {"arg": 0, "spec": "", "style": "format"},
                 f"] (it has {n})"]
        for st in self.failure_report(loc, _outside(_copy(k), extent, loc), parts, [_copy(k)], f"index into {what}"):
            self.emit(st)

    def check_exponent(self, exp: ir.Expr, node: ast.AST) -> ir.Expr:
        """Debug mode: an integer power's exponent is not negative (its result would not be an
        integer: Quadrants stops there too). Returns the exponent, to use once."""
        if not self.debug_checks() or isinstance(exp, ir.Const) and exp.value >= 0:
            return exp
        loc = self.loc(node)
        exp = self.once(exp, node, "exp")
        negative = ir.Compare(T.bool_, loc, "lt", _copy(exp), ir.Const(exp.type, loc, 0))
        parts = ["Negative exponent in pow(int, int) is not allowed: ", {"arg": 0, "spec": "", "style": "format"}]
        for st in self.failure_report(loc, negative, parts, [_copy(exp)], "pow(int, int)"):
            self.emit(st)
        return exp

    def checked_arithmetic(self, op: str, t: T.DType, a: ir.Expr, b: ir.Expr, node: ast.AST) -> ir.Expr | None:
        """Debug mode: ``a op b`` on integers of type ``t`` (both converted), with a report
        printed where it wraps ("Addition overflow detected", the line), as Quadrants prints it
        and goes on; None where nothing is checked."""
        if not (self.debug_checks() and t.is_int and op in OVERFLOW_WORDS) or \
                isinstance(a, ir.Const) and isinstance(b, ir.Const):
            return None
        loc = self.loc(node)
        a, b = self.once(a, node, "lhs"), self.once(b, node, "rhs")
        r = self.once(ir.BinOp(t, loc, op, _copy(a), _copy(b)), node, "result")
        source = linecache.getline(loc.file, loc.line).strip()
        report = ir.Print(loc, (f"{OVERFLOW_WORDS[op]} overflow detected in {loc.file}:{loc.line}\n    {source}\n",),
                          [], ())
        self.emit(ir.If(loc, _wraps(op, t, a, b, r, loc), [report], []))
        return _copy(r)

    def add_task_bounds_checks(self, task: ir.Task) -> None:
        known = {}
        for v, (begin, end) in zip(task.loop_vars, task.ranges):
            known[id(v)] = _LoopRange(begin, end)
        task.body = self.add_bounds_checks(task.body, known)

    def add_bounds_checks(self, stmts: list[ir.Stmt], known: dict) -> list[ir.Stmt]:
        """``stmts`` with a check before each statement of every index it is sure to use (as
        Quadrants' debug mode checks them): an ndarray's against its shape, a field's, a
        shared array's and a vector element's against theirs. An index evaluated under a
        condition (a side of ``a if c else b``, the right of ``and`` / ``or``) is checked
        under it; a while loop's condition is not checked, nor an index whose computation
        has side effects (computing it twice would repeat them). ``known``: the ranges of
        the loop variables in scope, which prove ``a[i]`` in ``for i in range(a.shape[0])``."""
        out = []
        for st in stmts:
            inner = known
            if isinstance(st, ir.For) and st.step_sign > 0:  # (a loop's own variable: not assigned in its body)
                inner = {**known, id(st.var): _LoopRange(st.start, st.stop)}
            for f in walk.fields_of(type(st)).bodies if id(st) not in self.reports else ():
                setattr(st, f, self.add_bounds_checks(getattr(st, f), inner))  # (a report reads what was checked)
            accesses = []
            for e in [] if isinstance(st, ir.While) else walk.stmt_exprs(st):
                _accesses(e, accesses)
            accesses.reverse()  # an index read from memory is checked before the access it indexes
            if isinstance(st, ir.Store):
                accesses.append((st.array, st.indices, ()))
            seen = set()
            for array, indices, guards in accesses:
                key = (id(array), tuple(_key(i) for i in indices), tuple(_key(g) for g in guards))
                if key in seen or any(has_side_effects(g) for g in guards):  # (`x[i] + x[i]`: once)
                    continue
                seen.add(key)
                check = self.bounds_check(array, indices, st.loc, known)
                for g in reversed(guards) if check else ():  # checked where it is evaluated: `i < n and a[i] > 0`
                    check = [ir.If(st.loc, _copy(g), check, [])]
                out += check
            out.append(st)
        return out

    def bounds_check(self, array, indices: list[ir.Expr], loc: ir.Loc, known: dict) -> list[ir.Stmt]:
        if isinstance(array, ir.Param):
            if array.role not in ("arg", "field", "grad", "dual") or not indices:
                return []
            t = array.type
            shape = t.static_shape or self.field_shape(array)
            outer = [ir.Const(T.i32, loc, n) for n in shape] if shape is not None else \
                [ir.Shape(T.i32, loc, array, d) for d in range(t.ndim)]
            extents = outer + [ir.Const(T.i32, loc, n) for n in t.element_shape]
        else:  # a block-shared array
            extents = [ir.Const(T.i32, loc, n) for n in array.type.shape]
        if len(extents) != len(indices) or any(has_side_effects(i) for i in indices):
            return []
        tests = [k for k, (i, n) in enumerate(zip(indices, extents)) if not _within_extent(i, n, known)]
        if not tests:
            return []
        bad = None
        for k in tests:
            outside = _outside(_copy(indices[k]), _copy(extents[k]), loc)
            bad = outside if bad is None else ir.Logical(T.bool_, loc, "or", bad, outside)
        parts, values = [f"Out of bound access to `{array.name}` with indices ["], []
        for k, i in enumerate(indices):
            parts += [", "] if k else []
            parts.append({"arg": len(values), "spec": "", "style": "format"})
            values.append(_copy(i))
        for k in tests:  # after the report, the access itself stays in bounds (element 0)
            i = indices[k]
            indices[k] = ir.Select(i.type, loc, _outside(_copy(i), _copy(extents[k]), loc), ir.Const(i.type, loc, 0), i)
        parts.append("] (shape [")
        for k, n in enumerate(extents):
            parts += [", "] if k else []
            if isinstance(n, ir.Const):
                parts.append(str(n.value))
            else:
                parts.append({"arg": len(values), "spec": "", "style": "format"})
                values.append(_copy(n))
        parts.append("])")
        return self.failure_report(loc, bad, parts, values, f"index into `{array.name}`")

    def assert_message(self, s: ast.Assert) -> tuple[list, list[ir.Expr]]:
        """The message as parts (text, or {"arg", "spec", "style"} for a run-time value) and
        those values, in order."""
        if s.msg is None:
            return [], []
        msg = s.msg
        if isinstance(msg, ast.BinOp) and isinstance(msg.op, ast.Mod) and isinstance(msg.left, ast.Constant) \
                and isinstance(msg.left.value, str):
            return self.percent_message(msg)
        if isinstance(msg, ast.Constant) and isinstance(msg.value, str):
            return [msg.value], []
        if not (isinstance(msg, ast.JoinedStr) or isinstance(msg, ast.Call) and isinstance(msg.func, ast.Attribute)
                and msg.func.attr == "format"):
            value = self.expr(msg)
            if isinstance(value, CT):
                return [str(value.value)], []
        parts, values = [], []
        for piece, spec, at in self.print_parts(msg):  # an f-string, "...".format(...), a value
            if isinstance(piece, str):
                parts.append(piece)
            elif isinstance(piece, CT):
                parts.append(format(piece.value, spec))
            else:
                parts.append({"arg": len(values), "spec": spec, "style": "format"})
                values.append(self.to_expr(piece, at))
        return parts, values

    def percent_message(self, msg: ast.BinOp) -> tuple[list, list[ir.Expr]]:
        """``"x[%d] = %f" % (i, x[i])``: the fields filled in order; values known now are text."""
        right = msg.right.elts if isinstance(msg.right, ast.Tuple) else [msg.right]
        fmt = msg.left.value
        parts, values, at, k = [], [], 0, 0
        for m in _PERCENT.finditer(fmt):
            parts.append(fmt[at:m.start()])
            at = m.end()
            if m.group("type") == "%":
                parts.append("%")
                continue
            if k >= len(right):
                raise self.error(msg, "the assert message has more % fields than values")
            value = self.expr(right[k])
            k += 1
            spec = "%" + m.group("spec") + m.group("type")
            if isinstance(value, CT):
                parts.append(spec % value.value)
            else:
                parts.append({"arg": len(values), "spec": spec, "style": "percent"})
                values.append(self.to_expr(value, right[k - 1]))
        if k != len(right):
            raise self.error(msg, "the assert message has fewer % fields than values")
        parts.append(fmt[at:])
        return parts, values

    def failure_report(self, node: ast.AST | ir.Loc, failed: ir.Expr | None, parts: list, values: list[ir.Expr],
                       what: str) -> list[ir.Stmt]:
        """The statements that, when ``failed`` holds (always, for None), claim the report
        buffer for this check and store ``values`` there."""
        loc = node if isinstance(node, ir.Loc) else self.loc(node)
        words = []
        for e in values:
            words += _words(e, loc)
        if len(words) > MAX_WORDS:
            raise self.error(node, f"an assert message in a kernel formats at most {MAX_WORDS} 32-bit values "
                                   f"(this one {len(words)})", hint="format fewer values")
        if self.assert_param is None:
            self.assert_param = self.hidden_param("assert", T.u32, loc, "assert", (1 + MAX_WORDS,))
        buf = self.assert_param
        check = {"id": len(self.asserts) + 1, "file": loc.file, "line": loc.line, "what": what,
                 "parts": [p if isinstance(p, dict) else {"text": p} for p in parts if p != ""],
                 "args": [e.type.name for e in values]}
        self.asserts.append(check)
        zero = ir.Const(T.u32, loc, 0)
        first = ir.Local(f"qd_assert_{check['id']}", T.u32, loc)
        claim = ir.Atomic(T.u32, loc, "cas", buf, [ir.Const(T.i32, loc, 0)], ir.Const(T.u32, loc, check["id"]), zero)
        stores = [ir.Store(loc, buf, [ir.Const(T.i32, loc, 1 + k)], w) for k, w in enumerate(words)]
        report = [ir.Declare(loc, first, claim),
                  ir.If(loc, ir.Compare(T.bool_, loc, "eq", ir.LocalRef(T.u32, loc, first), zero), stores, [])]
        out = report if failed is None else [ir.If(loc, failed, report, [])]
        self.reports.update(id(st) for st in out)
        return out


class _LoopRange:
    """A loop variable's bounds: from ``begin`` to ``end`` - 1, step +1."""

    def __init__(self, begin: ir.Expr, end: ir.Expr):
        self.begin, self.end = begin, end


def _within_extent(i: ir.Expr, n: ir.Expr, known: dict) -> bool:
    """Whether index ``i`` is provably in [0, n): a constant; a loop variable running from a
    non-negative start to n itself (``for i in range(a.shape[0]): a[i]``) or to a constant
    no larger; an expression whose value range is inside a constant extent."""
    lo_hi = value_range(i)
    if isinstance(n, ir.Const) and lo_hi is not None and 0 <= lo_hi[0] and lo_hi[1] < n.value:
        return True
    loop = known.get(id(i.var)) if isinstance(i, ir.LocalRef) else None
    if loop is None:
        return False
    start = value_range(loop.begin)
    if start is None or start[0] < 0:
        return False
    if _key(loop.end) == _key(n):
        return True
    end = value_range(loop.end)
    return isinstance(n, ir.Const) and end is not None and end[1] <= n.value


def _key(e: ir.Expr) -> tuple:
    """What an expression computes, for telling two spellings of one index apart (its
    class, plain data, the locals and arrays it names, and its children's keys)."""
    return (type(e), walk.attributes(e), tuple(id(r) for r in walk.references(e)),
            tuple(_key(c) for c in walk.children(e)))


def _outside(i: ir.Expr, n: ir.Expr, loc: ir.Loc) -> ir.Expr:
    """``i < 0 or i >= n``, compared in 64 bits when either is."""
    wide = T.i64 if i.type.bits == 64 or n.type.bits == 64 else T.i32
    i, n = (i if i.type is wide else ir.Cast(wide, loc, i)), (n if n.type is wide else ir.Cast(wide, loc, n))
    return ir.Logical(T.bool_, loc, "or", ir.Compare(T.bool_, loc, "lt", i, ir.Const(wide, loc, 0)),
                      ir.Compare(T.bool_, loc, "ge", i, n))


def _copy(e: ir.Expr) -> ir.Expr:
    """A new tree of the same expression (naming the same locals and arrays): IR nodes are
    not shared between the places that evaluate them."""
    changes = {}
    for f, group in walk.fields_of(type(e)).order:
        old = getattr(e, f)
        if group == "exprs" and old is not None:
            changes[f] = _copy(old)
        elif group == "expr_lists":
            changes[f] = [_copy(x) for x in old]
    return dataclasses.replace(e, **changes)


def _accesses(e: ir.Expr, out: list) -> None:
    """Append (array, indices, guards) for each memory access evaluating ``e`` makes: guards
    are the conditions under which it is evaluated (the chosen side of ``a if c else b``,
    the right of ``and`` / ``or``), empty when it always is."""
    stack = [(e, ())]
    while stack:
        n, guards = stack.pop()
        cls = type(n)
        if cls is ir.Select:
            stack += [(n.cond, guards), (n.a, guards + (n.cond,)), (n.b, guards + (_not(n.cond),))]
            continue
        if cls is ir.Logical:
            stack += [(n.a, guards), (n.b, guards + ((n.a,) if n.op == "and" else (_not(n.a),)))]
            continue
        if cls in (ir.Load, ir.Atomic, ir.VolatileLoad):
            out.append((n.array, n.indices, guards))
        stack += [(c, guards) for c in walk.children(n)]


def _not(e: ir.Expr) -> ir.Expr:
    return ir.Unary(T.bool_, e.loc, "not", e)


def _words(e: ir.Expr, loc: ir.Loc) -> list[ir.Expr]:
    """A scalar's bits as u32 words, low first (a narrow integer or a bool widened to 32 bits)."""
    t = e.type
    if t.bits == 64:
        bits = e if t is T.u64 else ir.BitCast(T.u64, loc, e) if t.is_float else ir.Cast(T.u64, loc, e)
        high = ir.BinOp(T.u64, loc, "rshift", bits, ir.Const(T.u64, loc, 32))
        return [ir.Cast(T.u32, loc, bits), ir.Cast(T.u32, loc, high)]
    if t.is_float:
        return [ir.BitCast(T.u32, loc, e if t is T.f32 else ir.Cast(T.f32, loc, e))]
    if t is T.u32:
        return [e]
    if t is T.bool_ or t.bits == 32:
        return [ir.Cast(T.u32, loc, e)]
    return [ir.Cast(T.u32, loc, ir.Cast(T.i32 if t.kind == "int" else T.u32, loc, e))]  # (sign-extended)


def _wraps(op: str, t: T.DType, a: ir.Expr, b: ir.Expr, r: ir.Expr, loc: ir.Loc) -> ir.Expr:
    """Whether ``r``, ``a op b`` computed in ``t``, wrapped (each operand a local, read again)."""
    def bits(name: str, x: ir.Expr, y: ir.Expr) -> ir.Expr:
        return ir.BinOp(t, loc, name, _copy(x), _copy(y))

    def cmp(name: str, x: ir.Expr, y: ir.Expr) -> ir.Expr:
        return ir.Compare(T.bool_, loc, name, _copy(x), _copy(y))

    zero, signed = ir.Const(t, loc, 0), t.kind == "int"
    if op == "lshift":  # shifted back, it is not what it was
        return cmp("ne", bits("rshift", r, b), a)
    if op == "add":  # signed: the result's sign differs from both operands'
        return cmp("lt", bits("bitand", bits("bitxor", a, r), bits("bitxor", b, r)), zero) if signed else \
            cmp("lt", r, a)
    if op == "sub":
        return cmp("lt", bits("bitand", bits("bitxor", a, b), bits("bitxor", a, r)), zero) if signed else \
            cmp("lt", a, b)
    if t.bits <= 32:  # mul: the product of the operands widened to 64 bits is not the result's
        wide = T.i64 if signed else T.u64
        product = ir.BinOp(wide, loc, "mul", ir.Cast(wide, loc, _copy(a)), ir.Cast(wide, loc, _copy(b)))
        return ir.Compare(T.bool_, loc, "ne", product, ir.Cast(wide, loc, _copy(r)))
    # 64-bit mul: divided back by a (never by 0, nor -1 where MIN / -1 itself overflows), it is not b
    unit = cmp("eq", a, zero) if not signed else \
        ir.BinOp(T.bool_, loc, "bitor", cmp("eq", a, zero), cmp("eq", a, ir.Const(t, loc, -1)))
    divisor = ir.Select(t, loc, unit, ir.Const(t, loc, 1), _copy(a))
    differs = ir.Compare(T.bool_, loc, "ne", ir.BinOp(t, loc, "truncdiv", _copy(r), divisor), _copy(b))
    if signed:  # a == -1 wraps only b == MIN
        differs = ir.Select(T.bool_, loc, cmp("eq", a, ir.Const(t, loc, -1)),
                            cmp("eq", b, ir.Const(t, loc, -(1 << (t.bits - 1)))), differs)
    return ir.BinOp(T.bool_, loc, "bitand", cmp("ne", a, zero), differs)

"""Checks a kernel makes under ``qd.init(debug=True)`` (``translate(..., debug=True)``), as
Quadrants' debug mode does: a failed ``assert`` stops the call with an AssertionError on the
host, its message formatted with the values the failing thread had.

Every target reports the same way, with what they all have: a hidden buffer of u32 words
(``Param.role == "assert"``, zeroed per launch). The first failing thread claims word 0 with
a compare-and-swap, writing its assert's number there (1, 2, ...), and stores the values its
message formats into the words after it (a 64-bit value in two words, low first). The
manifest's ``asserts`` entry says, per number, where the assert is and how to format them;
``runtime.asserts`` reads the buffer back after the launch.
"""
from __future__ import annotations

import ast
import re

from ..ir import nodes as ir
from ..ir import types as T
from .values import CT

MAX_WORDS = 16  # the values one message may format, in 32-bit words

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
        failed = None if isinstance(test, CT) else ir.Unary(T.bool_, self.loc(s), "not", self.condition_of(test, s.test))
        parts, values = self.assert_message(s)
        self.report_failure(s, failed, parts, values, f"assert {ast.unparse(s.test)}")

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

    def report_failure(self, node: ast.AST, failed: ir.Expr | None, parts: list, values: list[ir.Expr],
                       what: str) -> None:
        """Emit: when ``failed`` holds (always, for None), claim the report buffer for this
        check and store ``values`` there."""
        loc = self.loc(node)
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
        for st in report if failed is None else [ir.If(loc, failed, report, [])]:
            self.emit(st)


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

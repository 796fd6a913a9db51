"""The shape every IR-to-IR legalization shares: rebuild statements bottom-up, letting an
expression's rewrite put statements in front of the statement that holds it (a CAS loop,
an emulated block vote). Subclasses override ``rewrite`` (and ``stmt`` for statement kinds
they treat specially); the walk itself is ``ir.walk.rebuild``."""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir import types as T
from ..ir.walk import rebuild


class HoistingRewriter:
    def block(self, stmts: list[ir.Stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for st in stmts:
            out.extend(self.stmt(st))
        return out

    def stmt(self, st: ir.Stmt) -> list[ir.Stmt]:
        """``st`` rebuilt, preceded by whatever its expressions' rewrites hoisted."""
        pre: list[ir.Stmt] = []
        new = rebuild(st, lambda _, e: self.expr(e, pre, conditional=False), lambda _, body: self.block(body))
        return pre + [new]

    def loop_with_hoisted_condition(self, st: ir.While) -> list[ir.Stmt]:
        """A while loop whose condition needs hoisted statements evaluates them before every
        test: at the top of the loop (a `continue` comes back there too)."""
        pre: list[ir.Stmt] = []
        cond = self.expr(st.cond, pre, conditional=False)
        body = self.block(st.body)
        if not pre:
            return [ir.While(st.loc, cond, body)]
        test = ir.If(st.loc, ir.Unary(T.bool_, st.loc, "not", cond), [ir.Break(st.loc)], [])
        return [ir.While(st.loc, ir.Const(T.bool_, st.loc, True), pre + [test] + body)]

    def expr(self, e: ir.Expr, pre: list[ir.Stmt], conditional: bool) -> ir.Expr:
        """``e`` with its operands rewritten first; ``conditional`` says whether it is only
        sometimes evaluated (the right of and/or, an arm of a select), where hoisting would
        change which threads evaluate it."""
        def child(name: str, sub: ir.Expr) -> ir.Expr:
            cond_child = conditional or (isinstance(e, ir.Logical) and name == "b") or \
                (isinstance(e, ir.Select) and name in ("a", "b"))
            return self.expr(sub, pre, cond_child)

        return self.rewrite(rebuild(e, child), pre, conditional)

    def rewrite(self, e: ir.Expr, pre: list[ir.Stmt], conditional: bool) -> ir.Expr:
        return e

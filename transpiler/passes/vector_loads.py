"""Vector loads on targets without them: each lane of a ``VectorLane`` becomes the plain
element ``index * width + lane``, and ``Aligned`` becomes False, so code that checks the
alignment before its vector loop takes its scalar loop there (the one whose loads are
coalesced across threads); an ``if`` on the alignment alone keeps only its other branch."""
from __future__ import annotations

import dataclasses

from ..ir import nodes as ir
from ..ir import types as T
from ..ir.memo import per_kernel
from ..ir.walk import contains
from .rewrite import HoistingRewriter


@per_kernel
def scalarize_vector_loads(kernel: ir.Kernel) -> ir.Kernel:
    """A copy of ``kernel`` with no VectorLane or Aligned node."""
    if not contains(kernel, ir.VectorLane, ir.Aligned):
        return kernel
    rw = _Rewriter()
    tasks = [dataclasses.replace(t, body=rw.block(t.body), prelude=rw.block(t.prelude), epilogue=rw.block(t.epilogue))
             for t in kernel.tasks]
    functions = [dataclasses.replace(f, body=rw.block(f.body)) for f in kernel.functions]
    return dataclasses.replace(kernel, tasks=tasks, functions=functions)


class _Rewriter(HoistingRewriter):
    def stmt(self, st: ir.Stmt) -> list[ir.Stmt]:
        if isinstance(st, ir.If) and isinstance(st.cond, ir.Aligned):  # the vector branch is dead: drop it
            return self.block(st.orelse)
        return super().stmt(st)

    def rewrite(self, e: ir.Expr, pre: list[ir.Stmt], conditional: bool) -> ir.Expr:
        if isinstance(e, ir.Aligned):
            return ir.Const(T.bool_, e.loc, False)
        if not isinstance(e, ir.VectorLane):
            return e
        t = e.index.type
        scaled = ir.BinOp(t, e.loc, "mul", e.index, ir.Const(t, e.loc, e.width))
        index = ir.BinOp(t, e.loc, "add", scaled, ir.Const(t, e.loc, e.lane)) if e.lane else scaled
        return ir.Load(e.type, e.loc, e.array, [index])

"""Tables of handlers: what the frontend does with a built-in, a method or an attribute is
looked up in a table filled by ``@TABLE.handler(key, ...)`` next to each handler (as Warp's
``add_builtin`` registers its built-ins), instead of tested for in a chain of ``if``s.
A handler is given the lowering it works for as its first argument (``lo``)."""
from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Protocol

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T


class Lowering(Protocol):
    """What the built-ins' shared helpers call on ``lo``: lower.py's ``KernelLowering``, which
    assembles every handler's module and so sits above them."""

    def loc(self, node: ast.AST | ir.Loc) -> ir.Loc: ...
    def error(self, node: ast.AST | ir.Loc, message: str, hint: str | None = None) -> TranspileError: ...
    def expr(self, node: ast.expr): ...
    def to_expr(self, v, node: ast.AST | ir.Loc) -> ir.Expr: ...
    def static_value(self, node: ast.expr, what: str = "qd.static()"): ...
    def coerce(self, e: ir.Expr, t: T.DType, node, *, explicit: bool = False,
               assigning: ir.Local | None = None) -> ir.Expr: ...
    def truth(self, e: ir.Expr, node: ast.AST) -> ir.Expr: ...
    def operand_types(self, a, ea: ir.Expr, b, eb: ir.Expr) -> tuple[T.DType, T.DType]: ...
    def builtin_elementwise(self, call_scalar, node: ast.Call): ...


class HandlerTable(dict):
    """Key (a name, or a Python callable) -> the function that lowers it."""

    def handler(self, *keys: object) -> Callable[[Callable], Callable]:
        def register(fn: Callable) -> Callable:
            for key in keys:
                self[key] = fn
            return fn

        return register

    def find(self, key: object) -> Callable | None:
        """The handler of ``key``; None for a key with none (or one that cannot be a key)."""
        try:
            return self.get(key)
        except TypeError:  # an unhashable value
            return None

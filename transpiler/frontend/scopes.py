"""Name scopes (C-like: a name first assigned in a block lives in that block) and the
per-function state of inlining."""
from __future__ import annotations


from collections.abc import Callable

from ..ir import nodes as ir
from .common import closure_vars, store_counts
from .source import ParsedFunction


class Scope:
    def __init__(self, parent: Scope | None, task_root: bool = False, isolated: bool = False):
        self.parent = parent
        self.names: dict[str, object] = {}
        self.task_root = task_root  # the outermost scope of a parallel loop body
        self.isolated = isolated    # an inlined function's root: the caller's names are not visible

    def lookup(self, name: str):
        scope = self
        while scope is not None:
            if name in scope.names:
                found = scope.names[name]
                if type(found) is NameAlias:  # the caller's variable, where the caller sees it
                    return found.scope.lookup(found.name)
                return found, scope
            if scope.isolated:
                break
            scope = scope.parent
        return None, None


class NameAlias:
    """A @qd.func's qd.template() parameter given a variable: the caller's name in the
    caller's scope, so reading and assigning it are the caller's own (a top-level variable
    shared between tasks included)."""

    __slots__ = ("name", "scope")

    def __init__(self, name: str, scope: Scope):
        self.name, self.scope = name, scope


class _FuncFrame:
    """Per inlined-function state: where names resolve and where ``return`` goes."""

    def __init__(self, fn: Callable, parsed: ParsedFunction, result_name: str):
        self.fn = fn
        self.parsed = parsed
        self.globals = fn.__globals__
        self.closure = closure_vars(fn)
        self.result: ir.Local | None = None
        self.result_name = result_name
        self.returns_tuple: list[ir.Local] | None = None
        self.return_type = None  # a scalar `-> qd.i32` annotation: every return converts to it
        self.function: ir.Function | None = None  # set for a @qd.real_func's body: `return` is ir.Return
        # How often each name is assigned in the function: a name assigned once keeps
        # what is known about its first value (e.g. that it is non-negative).
        self.stores: dict[str, int] = store_counts(parsed.node)  # shared: read only



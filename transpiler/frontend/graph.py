"""Quadrants' graph constructs at a kernel's top level: ``while qd.graph.do_while(flag):``
(the tasks of its body repeat while a 0-d i32 ndarray is nonzero: ``ir.TaskLoop``, which the
runtimes and the C++ headers drive from the host) and ``with qd.graph.parallel_context():``
with its ``qd.graph.parallel()`` sections (independent by contract: lowered in order)."""
from __future__ import annotations

import ast
import warnings

from .. import lang
from ..ir import nodes as ir
from ..ir import types as T
from .values import ArrayHandle


class GraphLowering:
    """Graph methods of KernelLowering (called from its top-level walk)."""

    def require_graph(self, call: ast.Call, what: str) -> None:
        """As in Quadrants: the graph constructs belong to graph kernels (which is also what
        tells a loop on a flag from a loop a missing update would never end)."""
        if not getattr(self.kernel, "graph", False):
            raise self.error(call, f"{what} requires @qd.kernel(graph=True)",
                             hint="declare the kernel with @qd.kernel(graph=True)")

    def warn_deprecated(self, call: ast.Call, old: str, new: str) -> None:
        """The flat spellings (``qd.graph_do_while``) are the same objects: told apart as written."""
        spelled = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
        if spelled == old:
            warnings.warn(f"{self.loc(call)}: qd.{old}() is deprecated: use {new}()", DeprecationWarning,
                          stacklevel=2)

    def graph_loop(self, s: ast.While) -> None:
        """``while qd.graph.do_while(flag):``: the tasks its body makes run, then run again
        while the 0-d i32 ndarray ``flag`` is nonzero (the runtime reads it between rounds)."""
        call = s.test
        if s.orelse:
            raise self.error(s, "while/else is not supported in kernels")
        if len(call.args) != 1 or call.keywords:
            raise self.error(call, "qd.graph.do_while() takes one argument: a 0-d qd.i32 ndarray")
        flag = self.expr(call.args[0])
        array = flag.array if isinstance(flag, ArrayHandle) else None
        if not isinstance(array, ir.Param) or array.type.ndim != 0 or array.type.dtype is not T.i32 or \
                isinstance(self.field_of(array), (lang.field.Field, lang.field.StructField)):
            raise self.error(call.args[0], "the flag of qd.graph.do_while must be a 0-d qd.i32 ndarray",
                             hint="a parameter `counter: qd.types.ndarray(qd.i32, ndim=0)` (or a data-oriented "
                                  "instance's or a dataclass's member ndarray); a field cannot be one")
        if self.graph_region == "section":
            raise self.error(s, "a qd.graph.parallel() section is straight-line task work: no qd.graph.do_while "
                                "inside it", hint="put the loop around the qd.graph.parallel_context() instead")
        self.require_graph(call, "qd.graph.do_while")
        self.warn_deprecated(call, "graph_do_while", "qd.graph.do_while")
        self.flush_serial()
        first, index, parent = len(self.tasks), len(self.task_loops), self.graph_parent
        self.task_loops.append(None)  # its place: outer loops before the loops inside them
        self.graph_parent = index
        try:
            self.top_level(s.body)
            self.flush_serial()
        finally:
            self.graph_parent = parent
        if len(self.tasks) == first:
            raise self.error(s, "the body of this qd.graph.do_while does nothing a launch could run",
                             hint="give it a loop or a statement that writes memory (and updates the flag)")
        self.task_loops[index] = ir.TaskLoop(first, len(self.tasks), array, self.loc(s), parent)

    def graph_section(self, s: ast.With) -> str | None:
        """``with qd.graph.parallel_context():`` ("context") or ``with qd.graph.parallel():``
        ("section"), in either spelling; None for any other ``with``."""
        if len(s.items) != 1 or s.items[0].optional_vars is not None:
            return None
        call = s.items[0].context_expr
        for kind, name in (("context", "graph.parallel_context"), ("section", "graph.parallel")):
            if self.is_call_to(call, name):
                return kind
        return None

    def graph_fork(self, s: ast.With, kind: str) -> None:
        """A fork / join of independent sections: their tasks in order, which their
        independence allows (Quadrants' graph may run them at once)."""
        if kind == "context" and self.graph_region is not None:
            raise self.error(s, "qd.graph.parallel_context() cannot be nested")
        if kind == "section" and self.graph_region != "context":
            raise self.error(s, "qd.graph.parallel() may appear only directly inside a qd.graph.parallel_context()")
        call = s.items[0].context_expr
        if kind == "context":
            self.require_graph(call, "qd.graph.parallel_context")
        if call.args or call.keywords:
            raise self.error(call, f"{ast.unparse(call.func)}() takes no arguments")
        self.warn_deprecated(call, "graph_parallel_context", "qd.graph.parallel_context")
        self.warn_deprecated(call, "graph_parallel", "qd.graph.parallel")
        saved, self.graph_region = self.graph_region, kind
        try:
            self.top_level(s.body)
        finally:
            self.graph_region = saved
        if kind == "section":
            self.flush_serial()  # a section's statements are its own


"""The frontend's mutable state, grouped by how long it lives.

``KernelLowering`` holds what lives as long as one translation (one kernel instantiation)
and one record of each kind below; the context managers in lower.py swap a record in and
back out (``function_body``, ``task``) or change one field for a while (``collecting``,
``scoped``, ``loop_body``, ``inlining``), so no method restores state by hand.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from collections.abc import Callable

from ..ir import nodes as ir
from .scopes import Scope


@dataclass
class FunctionBody:
    """The body being lowered: the kernel's, or a real function's (lowered on its own)."""

    scope: Scope                                          # where names resolve now
    block: list[ir.Stmt] = field(default_factory=list)    # where emitted statements go now
    in_parallel: bool = False                             # inside a parallel loop's body
    loop_depth: int = 0                                   # serial loops around the statement lowered
    static_jumps: list[tuple[int, ir.Local | None]] = field(default_factory=list)  # qd.static loops: depth, break flag
    inline_stack: list[Callable] = field(default_factory=list)  # the @qd.func being inlined, outermost first
    library_site: ir.Loc | None = None                    # the user's call into library code, while inlining it
    frame_declares: list[ir.Stmt] = field(default_factory=list)  # result variables of the function being inlined
    statement_call: ast.Call | None = None                # a call whose value is not used


@dataclass
class TaskState:
    """The task being lowered: a parallel loop, a serialized one, or the kernel's serial part."""

    stmts: list[ir.Stmt] = field(default_factory=list)    # its body (the random stream's setup goes first)
    loop_vars: list[ir.Local] = field(default_factory=list)  # its loop indices, which key the random stream
    rng: ir.Local | None = None                           # its random stream, once a draw needs it
    parallel_ast: list[ast.stmt] | None = None            # a parallel loop's body as written
    block_dim: int = 128                                  # a parallel loop's block size
    shared: list[ir.SharedArray] = field(default_factory=list)  # its qd.block.SharedArray buffers
    reductions: dict = field(default_factory=dict)        # its folded reductions: key -> Reduction


@dataclass
class SerialPart:
    """The kernel's top-level statements since the last task: one serial task when flushed."""

    task: TaskState = field(default_factory=TaskState)    # its statements are task.stmts
    loc: ir.Loc | None = None                             # where its first statement is
    declared: set[ir.Local] = field(default_factory=set)  # the locals it declares

    @property
    def stmts(self) -> list[ir.Stmt]:
        return self.task.stmts

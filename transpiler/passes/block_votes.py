"""Emulate ``block.sync_{all,any,count}_nonzero(p)`` on targets without a fused
barrier-with-reduction (GLSL, MSL): a shared counter every thread adds its predicate to,
one block barrier, then every thread reads the count.

Each task that votes gets three shared i32 slots and a phase counter (uniform across the
block, since every thread makes the same sequence of votes). Vote k counts in slot
``s = phase``; before its barrier, thread 0 zeroes slot ``(s + 1) % 3`` for vote k + 1.

    thread 0: slots[(s + 1) % 3] = 0
    all:      atomic_add(slots[s], p ? 1 : 0)
    barrier
    all:      count = slots[s];  phase = (s + 1) % 3

Why this is race-free with one barrier per vote: slot s is zeroed during vote k - 1 before
its barrier, so every add of vote k (after that barrier) sees the zero. The zeroing of
slot s + 1 during vote k happens after thread 0 passed the barrier of vote k - 1, so after
every thread finished vote k - 2, the last one to read slot s + 1. Two slots would not do:
the slot zeroed during vote k would be the one slow threads are still reading for vote
k - 1. The first vote's slot is zeroed in the task's prelude, behind one barrier.

The counter goes through atomic_add, never atomic_or / atomic_and: OpAtomicOr on
threadgroup memory silently does nothing through MoltenVK / SPIRV-Cross (Quadrants' guide to
block primitives says so of its own emulation).
"""
from __future__ import annotations

import dataclasses

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir.memo import per_kernel
from ..ir import types as T
from ..ir.walk import all_exprs, contains
from .rewrite import HoistingRewriter

SLOTS = 3


@per_kernel
def emulate_block_votes(kernel: ir.Kernel, slots: int = SLOTS) -> ir.Kernel:
    """A copy of ``kernel`` with every BlockVote replaced by the shared-counter form
    (``slots`` is there for the test that shows two do not suffice)."""
    if not contains(kernel, ir.BlockVote):
        return kernel
    tasks = [_task(t, slots) if _has_vote(t.code()) else t for t in kernel.tasks]
    if all(a is b for a, b in zip(tasks, kernel.tasks, strict=True)):
        return kernel
    return dataclasses.replace(kernel, tasks=tasks)


def _has_vote(stmts: list[ir.Stmt]) -> bool:
    return any(isinstance(e, ir.BlockVote) for e in all_exprs(stmts))


def _task(task: ir.Task, n_slots: int) -> ir.Task:
    loc = task.loc
    slots = ir.SharedArray("vote_slots", T.SharedArrayType(T.i32, (n_slots,)), loc)
    phase = ir.Local("vote_phase", T.i32, loc)
    rw = _Rewriter(slots, phase, task.block_dim)
    body, epilogue = rw.block(task.body), rw.block(task.epilogue)
    setup = [
        ir.Declare(loc, phase, _i32(0, loc)),
        ir.If(loc, _is_thread0(loc), [ir.Store(loc, slots, [_i32(0, loc)], _i32(0, loc))], []),
        ir.Barrier(loc, "block"),
    ]
    return dataclasses.replace(task, body=body, epilogue=epilogue, prelude=task.prelude + setup,
                               shared=task.shared + [slots])


def _i32(value: int, loc: ir.Loc) -> ir.Const:
    return ir.Const(T.i32, loc, value)


def _is_thread0(loc: ir.Loc) -> ir.Expr:
    return ir.Compare(T.bool_, loc, "eq", ir.ThreadIndex(T.i32, loc, "thread_idx"), _i32(0, loc))


class _Rewriter(HoistingRewriter):
    def __init__(self, slots: ir.SharedArray, phase: ir.Local, block_dim: int):
        self.slots = slots
        self.phase = phase
        self.block_dim = block_dim

    def stmt(self, st: ir.Stmt) -> list[ir.Stmt]:
        if isinstance(st, ir.While):
            return self.loop_with_hoisted_condition(st)
        if isinstance(st, ir.For):
            pre: list[ir.Stmt] = []
            start = self.expr(st.start, pre, conditional=False)
            header: list[ir.Stmt] = []
            stop = self.expr(st.stop, header, conditional=False)
            step = self.expr(st.step, header, conditional=False)
            if header:
                raise TranspileError("a block.sync_*_nonzero vote cannot sit in a loop bound on this target",
                                     st.loc, hint="vote into a variable before the loop and at the end of its body")
            return pre + [dataclasses.replace(st, start=start, stop=stop, step=step, body=self.block(st.body))]
        return super().stmt(st)

    def rewrite(self, e: ir.Expr, pre: list[ir.Stmt], conditional: bool) -> ir.Expr:
        if not isinstance(e, ir.BlockVote):
            return e
        if conditional:
            # A barrier only some evaluations reach is a deadlock; hoisting it would change
            # which threads evaluate the predicate.
            raise TranspileError(f"block.sync_{e.op}_nonzero is evaluated conditionally here (the right of "
                                 "and/or, or an arm of a conditional expression)", e.loc,
                                 hint="every thread of the block must reach it: call it in a statement of its own")
        return self.vote(e, pre)

    def vote(self, v: ir.BlockVote, pre: list[ir.Stmt]) -> ir.Expr:
        loc = v.loc
        phase = ir.LocalRef(T.i32, loc, self.phase)
        last = self.slots.type.shape[0] - 1
        following = ir.Select(T.i32, loc, ir.Compare(T.bool_, loc, "eq", phase, _i32(last, loc)),
                              _i32(0, loc), ir.BinOp(T.i32, loc, "add", phase, _i32(1, loc)))
        count = ir.Local("vote_count", T.i32, loc)
        pre += [
            ir.If(loc, _is_thread0(loc), [ir.Store(loc, self.slots, [following], _i32(0, loc))], []),
            ir.ExprStmt(loc, ir.Atomic(T.i32, loc, "add", self.slots, [phase], ir.Cast(T.i32, loc, v.pred))),
            ir.Barrier(loc, "block"),
            ir.Declare(loc, count, ir.Load(T.i32, loc, self.slots, [phase])),
            ir.Assign(loc, self.phase, following),
        ]
        n = ir.LocalRef(T.i32, loc, count)
        if v.op == "count":
            return n
        if v.op == "all":
            return ir.Cast(T.i32, loc, ir.Compare(T.bool_, loc, "eq", n, _i32(self.block_dim, loc)))
        return ir.Cast(T.i32, loc, ir.Compare(T.bool_, loc, "ne", n, _i32(0, loc)))

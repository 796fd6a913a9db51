"""Legalize atomics per target: an atomic the target has no instruction for becomes a
compare-and-swap loop (or, for exchange, a native exchange on the value's bits), built
here once in the IR rather than spelled by hand at each call site.

Which form an atomic takes comes from the dialect's capability table:
``dialect.atomic_support(op, dtype, space)`` answers "native", "bits" (native on the
unsigned integer of the same width, e.g. f32 exchange on SPIR-V), "cas", or raises a
located ``TranspileError`` naming op, dtype and target.
"""
from __future__ import annotations

import dataclasses
from typing import Protocol

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.memo import per_kernel
from ..ir.walk import all_exprs, contains, task_node_kinds
from .rewrite import HoistingRewriter


class AtomicsTable(Protocol):
    """What legalizing reads of a target's dialect: passes sit below targets, so the dialect
    is passed in and only its shape is named here."""

    name: str
    shared_views: bool  # shared memory can be viewed as another type of the same width

    def atomic_support(self, op: str, t: T.DType, space: str, loc: ir.Loc | None) -> str: ...

UINT_OF_WIDTH = {16: T.u16, 32: T.u32, 64: T.u64}


def legalize_atomics(kernel: ir.Kernel, dialect: AtomicsTable) -> ir.Kernel:
    """A copy of ``kernel`` whose atomics the dialect can all spell directly."""
    return _legalize(kernel, dialect)


@per_kernel(key=lambda dialect: type(dialect))
def _legalize(kernel: ir.Kernel, dialect: AtomicsTable) -> ir.Kernel:
    if not contains(kernel, ir.Atomic):
        return kernel
    needs = False
    bits_shared: set[int] = set()
    for e in _atomics(kernel):
        form = dialect.atomic_support(e.op, e.type, ir.space_of(e.array), e.loc)
        needs |= form != "native"
        if form != "native" and isinstance(e.array, ir.SharedArray) and not dialect.shared_views:
            bits_shared.add(id(e.array))
    if not needs:
        return kernel
    rw = _Rewriter(dialect, bits_shared)
    tasks = [dataclasses.replace(t, body=rw.block(t.body), prelude=rw.block(t.prelude), epilogue=rw.block(t.epilogue))
             for t in kernel.tasks]
    functions = [dataclasses.replace(f, body=rw.block(f.body)) for f in kernel.functions]
    return dataclasses.replace(kernel, tasks=tasks, functions=functions)


@per_kernel
def _atomics(kernel: ir.Kernel) -> list[ir.Atomic]:
    """The kernel's atomics, in code order: one walk per IR, whichever targets legalize it.
    (Only the tasks with an atomic are walked; their node classes are known from demotion.)"""
    return [e for stmts in [t.code() for t in kernel.tasks if ir.Atomic in task_node_kinds(t)] +
            [f.body for f in kernel.functions] for e in all_exprs(stmts) if isinstance(e, ir.Atomic)]


class _Rewriter(HoistingRewriter):
    def __init__(self, dialect: AtomicsTable, bits_shared: set[int]) -> None:
        self.dialect = dialect
        # Shared arrays that must hold their bits (the dialect cannot view shared memory as
        # another type, and some atomic on them works on the bits): every float atomic on
        # them becomes a CAS loop on the bits, even one the target has natively.
        self.bits_shared = bits_shared

    def stmt(self, st: ir.Stmt) -> list[ir.Stmt]:
        if isinstance(st, ir.ExprStmt) and isinstance(st.expr, ir.Atomic):
            pre: list[ir.Stmt] = []
            atomic = dataclasses.replace(st.expr, **{
                "indices": [self.expr(i, pre, conditional=False) for i in st.expr.indices],
                "value": self.expr(st.expr.value, pre, conditional=False)})
            expr = self.atomic(atomic, pre, result_used=False)
            return pre + ([] if expr is None else [ir.ExprStmt(st.loc, expr)])
        if isinstance(st, ir.While):
            return self.loop_with_hoisted_condition(st)
        return super().stmt(st)

    def rewrite(self, e: ir.Expr, pre: list[ir.Stmt], conditional: bool) -> ir.Expr:
        if not isinstance(e, ir.Atomic):
            return e
        form = self.dialect.atomic_support(e.op, e.type, ir.space_of(e.array), e.loc)
        if form == "native" and e.type.is_float and id(e.array) in self.bits_shared:
            form = "cas"
        if form != "native" and conditional:
            raise TranspileError(f"qd.atomic_{e.op} on {e.type.name} needs a compare-and-swap loop on the "
                                 f"{self.dialect.name} target and cannot be evaluated conditionally here", e.loc,
                                 hint="call it in a statement of its own")
        return self.atomic(e, pre, result_used=True)

    def atomic(self, a: ir.Atomic, pre: list[ir.Stmt], result_used: bool) -> ir.Expr | None:
        form = self.dialect.atomic_support(a.op, a.type, ir.space_of(a.array), a.loc)
        if form == "native" and a.type.is_float and id(a.array) in self.bits_shared:
            form = "bits" if a.op == "exchange" else "cas"
        if form == "native":
            return a
        t = a.type
        loc = a.loc
        if form == "word":
            return self.word_cas_loop(a, pre, result_used)
        if form == "wide":
            return self.cas_loop(a, pre, result_used, wide=True)
        if form == "bits":
            u = UINT_OF_WIDTH[t.bits]
            expected = None if a.expected is None else ir.BitCast(u, loc, a.expected)
            native = ir.Atomic(u, loc, a.op, a.array, a.indices, ir.BitCast(u, loc, a.value), expected)
            return ir.BitCast(t, loc, native)
        return self.cas_loop(a, pre, result_used)

    def cas_loop(self, a: ir.Atomic, pre: list[ir.Stmt], result_used: bool, wide: bool = False) -> ir.Expr | None:
        """``wide``: a 16-bit float in shared memory that holds each element in a 32-bit word
        of its own, its bits in the low half (the target has no 16-bit atomics and cannot view
        shared memory as words); the loop swaps the whole word."""
        t, loc = a.type, a.loc
        mem = T.u32 if wide else UINT_OF_WIDTH[t.bits] if t.is_float else t
        try:
            cas_form = self.dialect.atomic_support("cas", mem, ir.space_of(a.array), loc)
        except TranspileError:
            cas_form = None
        if cas_form != "native":
            raise TranspileError(f"qd.atomic_{a.op} on {t.name} needs a compare-and-swap loop, and the "
                                 f"{self.dialect.name} target has no {mem.bits}-bit compare-and-swap "
                                 f"on {ir.space_of(a.array)} memory", loc)
        indices = [self.once(i, "index", pre) for i in a.indices]
        value = self.once(a.value, "operand", pre)
        # Named after the array so they read as its story and leave the user's names alone.
        old = ir.Local(f"{a.array.name}_old", t, loc)
        pre.append(ir.Declare(loc, old, ir.Load(t, loc, a.array, indices)))
        assumed = ir.Local(f"{a.array.name}_assumed", t, loc)
        seen = ir.Local(f"{a.array.name}_seen", mem, loc)

        def ref(var: ir.Local) -> ir.Expr:
            return ir.LocalRef(var.type, loc, var)

        def bits(e: ir.Expr) -> ir.Expr:
            if wide:
                return ir.Cast(mem, loc, ir.BitCast(T.u16, loc, e))
            return ir.BitCast(mem, loc, e) if t.is_float else e

        def value_of(e: ir.Expr) -> ir.Expr:
            if wide:
                return ir.BitCast(t, loc, ir.Cast(T.u16, loc, e))
            return ir.BitCast(t, loc, e) if t.is_float else e

        desired = combine(a.op, ref(assumed), value, t, loc)
        cas = ir.Atomic(mem, loc, "cas", a.array, indices, bits(desired), bits(ref(assumed)))
        body = [
            ir.Declare(loc, assumed, ref(old)),
            ir.Declare(loc, seen, cas),
            ir.Assign(loc, old, value_of(ref(seen))),
            ir.If(loc, ir.Compare(T.bool_, loc, "eq", ref(seen), bits(ref(assumed))), [ir.Break(loc)], []),
        ]
        pre.append(ir.While(loc, ir.Const(T.bool_, loc, True), body))
        return ref(old) if result_used else None

    def word_cas_loop(self, a: ir.Atomic, pre: list[ir.Stmt], result_used: bool) -> ir.Expr | None:
        """A 16-bit float atomic on a target whose smallest atomics are 32-bit: a CAS loop on
        the 32-bit word holding the element (its half at bit 0 or 16), the array viewed as
        u32 words. The element's word is its linear index halved: the runtime rounds buffers
        up to 4 bytes, so the last element's word is in bounds."""
        t, loc = a.type, a.loc
        u32, i32 = T.u32, T.i32

        def c(v: int, ty: T.DType = u32) -> ir.Expr:
            return ir.Const(ty, loc, v)

        def ref(var: ir.Local) -> ir.Expr:
            return ir.LocalRef(var.type, loc, var)

        def local(name: str, init: ir.Expr) -> ir.Local:
            var = ir.Local(f"{a.array.name}_{name}", init.type, loc)
            pre.append(ir.Declare(loc, var, init))
            return var

        linear = self.linear_index(a, loc)
        value = self.once(a.value, "operand", pre)
        word = local("word", ir.BinOp(i32, loc, "rshift", linear, c(1, i32)))
        shift = local("shift", ir.BinOp(u32, loc, "mul", ir.Cast(u32, loc, ir.BinOp(i32, loc, "bitand", linear,
                                                                                          c(1, i32))), c(16)))
        words = [ref(word)]
        old_word = local("old_word", ir.Atomic(u32, loc, "or", a.array, words, c(0)))
        old = ir.Local(f"{a.array.name}_old", t, loc)
        pre.append(ir.Declare(loc, old, None))
        half = ir.Cast(T.u16, loc, ir.BinOp(u32, loc, "bitand", ir.BinOp(u32, loc, "rshift", ref(old_word),
                                                                         ref(shift)), c(0xFFFF)))
        desired = combine(a.op, ref(old), value, t, loc)
        new_half = ir.Cast(u32, loc, ir.BitCast(T.u16, loc, desired))
        keep = ir.Unary(u32, loc, "invert", ir.BinOp(u32, loc, "lshift", c(0xFFFF), ref(shift)))
        new_word = ir.BinOp(u32, loc, "bitor", ir.BinOp(u32, loc, "bitand", ref(old_word), keep),
                            ir.BinOp(u32, loc, "lshift", new_half, ref(shift)))
        seen = ir.Local(f"{a.array.name}_seen", u32, loc)
        body = [
            ir.Assign(loc, old, ir.BitCast(t, loc, half)),
            ir.Declare(loc, seen, ir.Atomic(u32, loc, "cas", a.array, words, new_word, ref(old_word))),
            ir.If(loc, ir.Compare(T.bool_, loc, "eq", ref(seen), ref(old_word)), [ir.Break(loc)], []),
            ir.Assign(loc, old_word, ref(seen)),
        ]
        pre.append(ir.While(loc, ir.Const(T.bool_, loc, True), body))
        return ref(old) if result_used else None

    def linear_index(self, a: ir.Atomic, loc: ir.Loc) -> ir.Expr:
        """The element's index in the array's flat (row-major) storage."""
        array = a.array
        extents = [ir.Shape(T.i32, loc, array, d) for d in range(array.type.ndim)] + \
            [ir.Const(T.i32, loc, n) for n in array.type.element_shape]
        acc = a.indices[0]
        for idx, extent in zip(a.indices[1:], extents[1:]):
            acc = ir.BinOp(T.i32, loc, "add", ir.BinOp(T.i32, loc, "mul", acc, extent), idx)
        return acc

    def once(self, e: ir.Expr, name: str, pre: list[ir.Stmt]) -> ir.Expr:
        """``e`` evaluated a single time: simple expressions as they are, others in a local."""
        if isinstance(e, (ir.Const, ir.LocalRef, ir.ParamRef, ir.Shape, ir.ThreadIndex)):
            return e
        var = ir.Local(name, e.type, e.loc)
        pre.append(ir.Declare(e.loc, var, e))
        return ir.LocalRef(e.type, e.loc, var)


def combine(op: str, cur: ir.Expr, v: ir.Expr, t: T.DType, loc: ir.Loc) -> ir.Expr:
    """The value a CAS loop tries to store for ``op``."""
    if op in ("add", "mul"):
        return ir.BinOp(t, loc, op, cur, v)
    if op == "exchange":
        return v
    if op in ("min", "max"):
        chosen = ir.Math(t, loc, op, [cur, v])
        if not t.is_float:
            return chosen
        # minNum / maxNum: when exactly one operand is NaN the other one wins.
        cur_nan = ir.Math(T.bool_, loc, "isnan", [cur])
        v_nan = ir.Math(T.bool_, loc, "isnan", [v])
        return ir.Select(t, loc, cur_nan, v, ir.Select(t, loc, v_nan, cur, chosen))
    raise TranspileError(f"internal error: no CAS form for atomic_{op}", loc)

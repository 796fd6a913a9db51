"""Atomic demotion: an atomic on an element no other thread can touch becomes a plain
read-modify-write (``a[i] += x`` on the task's own ``i`` is a load, an add and a store), as
Quadrants' demote_atomics does. On the CPU executor a float atomic is a CAS loop per element
and on a GPU an atomic costs a round trip to L2, so particle, grid and MPM updates written
``a[i] += ...`` run many times faster. Run once per kernel, before every target.

An array's accesses in a task are private to their thread when:

- the task is serial (one thread runs it); or
- every access to the array in the task (each load, store and atomic; anything else naming
  it, an NVSHMEM transfer or a use in a called ``@qd.real_func``, rules it out) has the same
  *owner axes*: the axes whose index is a pure function of the thread's own indices (the task's
  loop variables, ``global_thread_idx``, and for a block-shared array ``thread_idx``) and of
  values every thread sees alike (constants, scalar parameters, shapes), compared as
  expressions; and those axes are injective in the thread: each loop variable of the task is
  the one own index of some owner axis, reached only through bijections (``+ c``, ``- c``,
  ``^ c``, negation, a widening cast), or one axis is such a function of ``global_thread_idx``
  (or, for shared memory, ``thread_idx``). Then two threads never share an element. The other
  axes may hold anything (``v[i, 0]``, ``v[i, 1]`` and ``g[i, j]`` with ``j`` an inner loop's are
  row ``i``'s). ``a[i] += b[i]`` next to a read of ``a[i + 1]`` stays atomic, as does a scatter
  ``a[idx[i]] += x``.

An array on NVSHMEM's symmetric heap is never demoted (other PEs write it), nor is any atomic of a
task with a memory fence, a volatile load or an NVSHMEM operation: such a task publishes to
observers outside it (another kernel on another stream, the host, another PE), so its atomics stay
as written (Quadrants demotes regardless). Like Quadrants, the analysis takes two ndarray
parameters for different memory.

Only an atomic that is a whole statement, a local's whole value, or a store's whole value is
rewritten, and only when its indices read nothing the task writes (they are evaluated twice:
for the load and for the store) and its operand holds no atomic on the same array; anything
else stays atomic. The result is the loaded old value, so ``old = qd.atomic_add(a[i], x)``
keeps its meaning.
"""
from __future__ import annotations

import dataclasses

from ..ir import nodes as ir
from ..ir import types as T
from ..ir.memo import per_kernel
from ..ir.records import record
from ..ir.walk import all_exprs, all_stmts, attributes, called_by, children, contains, fields_of, iter_expr, \
    references, task_node_kinds
from .legalize import combine

_BIJECTIVE_BINOPS = ("add", "sub", "bitxor")
_UNIFORM_INDICES = ("block_dim", "grid_dim", "grid_stride")
# A task that orders memory or talks to other PEs publishes to observers this analysis cannot
# see (a kernel on another stream, the host, another PE): its atomics stay as written.
_OBSERVED = (ir.Fence, ir.VolatileLoad, ir.ShmemOp, ir.ShmemFence, ir.ShmemQuiet, ir.ShmemBarrierAll)
_SIMPLE = (ir.Const, ir.LocalRef, ir.ParamRef)
# Expression classes that neither call nor write: the use index skips them at once.
_NOT_WRITES = frozenset((ir.Const, ir.LocalRef, ir.ParamRef, ir.Load, ir.BinOp, ir.Compare, ir.Logical, ir.Unary,
                         ir.Cast, ir.Select, ir.Math, ir.ThreadIndex, ir.Shape))
_PURE = (ir.BinOp, ir.Compare, ir.Logical, ir.Unary, ir.Cast, ir.Select, ir.Math, ir.BitCast)


@per_kernel
def demote_atomics(kernel: ir.Kernel) -> ir.Kernel:
    """A copy of ``kernel`` whose thread-private atomics are plain read-modify-writes."""
    if not contains(kernel, ir.Atomic):
        return kernel
    tasks = [_task(kernel, t) if _demotable_task(t) else t for t in kernel.tasks]
    if all(a is b for a, b in zip(tasks, kernel.tasks, strict=True)):
        return kernel
    return dataclasses.replace(kernel, tasks=tasks)


def _demotable_task(task: ir.Task) -> bool:
    kinds = task_node_kinds(task)
    return ir.Atomic in kinds and not any(issubclass(k, _OBSERVED) for k in kinds)


def _task(kernel: ir.Kernel, task: ir.Task) -> ir.Task:
    facts = _Facts(kernel, task)
    private = {id(a): a for a in facts.atomic_arrays() if facts.private(a)}
    if not private:
        return task
    why = "a serial task runs on one thread" if task.kind == "serial" else "no other thread touches the element"
    body = _Rewriter(facts, private, why).block(task.body)
    return dataclasses.replace(task, body=body)


@record(frozen=True)
class _Kind:
    """What an index expression is: ``own`` the thread's own indices it depends on (loop
    variables, "gtid", "tid"); ``bijective`` the one of them it is a bijection of, if any;
    ``pure`` a function of those and of values alike in every thread only; ``stable`` the same
    when evaluated twice in a row (reads nothing the task writes, no side effects)."""

    own: frozenset = frozenset()
    bijective: object = None
    pure: bool = True
    stable: bool = True


_UNIFORM = _Kind()
_OPAQUE = _Kind(pure=False, stable=False)


class _Facts:
    """What one task's code says about its locals and arrays."""

    def __init__(self, kernel: ir.Kernel, task: ir.Task) -> None:
        self.task = task
        self.code = task.code()
        self.values: dict[ir.Local, ir.Expr] = {}  # a local's value, where one Declare is its only definition
        redefined: set[ir.Local] = set()
        self.written: set[int] = set()  # ids of the arrays the task (or what it calls) writes
        self.stmts = list(all_stmts(self.code))
        for st in self.stmts:
            cls = type(st)  # (statement classes have no subclasses: one dispatch by class)
            if cls is ir.Declare:
                if st.init is None or st.var in self.values:
                    redefined.add(st.var)
                self.values[st.var] = st.init
            elif cls is ir.Assign or cls is ir.For:
                redefined.add(st.var)
            elif cls is ir.Store:
                self.written.add(id(st.array))
        self.exprs = list(all_exprs(self.code))
        for e in self.exprs:
            cls = type(e)
            if cls in _NOT_WRITES:  # (most expressions: no isinstance test for ShmemOp's family)
                continue
            if cls is ir.Call:
                redefined.update(e.outs)
            elif cls is ir.Atomic or isinstance(e, ir.ShmemOp):
                self.written.update(id(r) for r in _arrays_named(e))
        for v in redefined:
            self.values.pop(v, None)
        self.loop_vars = [v for v in task.loop_vars if v not in redefined]
        self.called: set[int] = set()  # arrays a called function names: not analysed, never private
        for f in called_by(kernel, self.code):
            for n in list(all_stmts(f.body)) + list(all_exprs(f.body)):
                self.called.update(id(r) for r in _arrays_named(n))
                if isinstance(n, (ir.Store, ir.Atomic, ir.ShmemOp)):
                    self.written.update(id(r) for r in _arrays_named(n))
        self._kinds: dict[tuple[int, bool], _Kind] = {}
        self._uses: dict[int, list] | None = None

    def uses(self, array: ir.Array) -> list:
        """The statements and expressions that name ``array``, in program order (statements
        first): one walk for every array the task's atomics update, not one each."""
        if self._uses is None:
            self._uses = {}
            ref_fields: dict[type, tuple[str, ...]] = {}  # most node classes name nothing
            for n in self.stmts + self.exprs:
                names = ref_fields.get(type(n))
                if names is None:
                    names = ref_fields[type(n)] = fields_of(type(n)).refs
                if not names:
                    continue
                if len(names) == 1:  # (most that name anything name one: no set to build)
                    self._uses.setdefault(id(getattr(n, names[0])), []).append(n)
                    continue
                for key in {id(getattr(n, f)) for f in names}:
                    self._uses.setdefault(key, []).append(n)
        return self._uses.get(id(array), [])

    def atomic_arrays(self) -> list[ir.Array]:
        seen: dict[int, ir.Array] = {}
        for st in all_stmts(self.task.body):
            for e in children(st):
                if isinstance(e, ir.Atomic):
                    seen.setdefault(id(e.array), e.array)
        return list(seen.values())

    def private(self, array: ir.Array) -> bool:
        """Whether no two threads of the task reach the same element of ``array``."""
        if getattr(array, "symmetric", False) or id(array) in self.called:
            return False
        if self.task.kind == "serial":
            return True
        owners = set()
        for n in self.uses(array):
            if isinstance(n, (ir.Shape, ir.DeclareShared)):
                continue
            if not isinstance(n, (ir.Load, ir.Store, ir.Atomic, ir.VolatileLoad)):
                return False
            owners.add(self.owner_axes(n.indices, isinstance(array, ir.SharedArray)))
            if len(owners) > 1:
                return False
        return len(owners) == 1 and self.injective(next(iter(owners)), isinstance(array, ir.SharedArray))

    def owner_axes(self, indices: list[ir.Expr], shared: bool) -> tuple:
        """Per axis, the index's structure where it is a pure function of the thread's own
        indices, else None."""
        out = []
        for e in indices:
            k = self.kind(e, shared)
            out.append((self.key(e), k.bijective) if k.pure and k.own else None)
        return tuple(out)

    def injective(self, axes: tuple, shared: bool) -> bool:
        covered = {b for axis in axes if axis is not None for b in [axis[1]] if b is not None}
        if "gtid" in covered or (shared and "tid" in covered):
            return True
        return bool(self.loop_vars) and all(id(v) in covered for v in self.loop_vars)

    def kind(self, e: ir.Expr, shared: bool) -> _Kind:
        slot = (id(e), shared)
        hit = self._kinds.get(slot)
        if hit is None:
            hit = self._kinds[slot] = self._kind(e, shared)
        return hit

    def _kind(self, e: ir.Expr, shared: bool) -> _Kind:
        if isinstance(e, (ir.Const, ir.Shape)) or (isinstance(e, ir.ParamRef) and not e.param.is_array):
            return _UNIFORM
        if isinstance(e, ir.ThreadIndex):
            own = {"global_thread_idx": "gtid", "thread_idx": "tid" if shared else None}.get(e.kind)
            if own is not None:
                return _Kind(frozenset([own]), own)
            return _UNIFORM if e.kind in _UNIFORM_INDICES or (shared and e.kind == "block_idx") else \
                _Kind(pure=False)
        if isinstance(e, ir.LocalRef):
            if any(e.var is v for v in self.loop_vars):
                return _Kind(frozenset([id(e.var)]), id(e.var))
            value = self.values.get(e.var)
            return self.kind(value, shared) if value is not None else _Kind(pure=False)
        if isinstance(e, ir.Load):
            parts = [self.kind(i, shared) for i in e.indices]
            return _Kind(pure=False, stable=id(e.array) not in self.written and all(p.stable for p in parts))
        if isinstance(e, _PURE):
            return self._operation(e, [self.kind(c, shared) for c in children(e)])
        return _OPAQUE

    def _operation(self, e: ir.Expr, parts: list[_Kind]) -> _Kind:
        own = frozenset().union(*(p.own for p in parts))
        kind = _Kind(own, None, all(p.pure for p in parts), all(p.stable for p in parts))
        if not (kind.pure and len(own) == 1 and e.type.is_int):
            return kind
        bijective = None
        if isinstance(e, ir.BinOp) and e.op in _BIJECTIVE_BINOPS:
            a, b = parts
            bijective = a.bijective if not b.own else b.bijective if not a.own else None
        elif isinstance(e, ir.Unary) and e.op in ("neg", "invert"):
            bijective = parts[0].bijective
        elif isinstance(e, ir.Cast) and e.a.type.is_int and e.type.bits >= e.a.type.bits:
            bijective = parts[0].bijective
        return dataclasses.replace(kind, bijective=bijective)

    def key(self, e: ir.Expr) -> tuple:
        """``e``'s structure, a local with one definition read as its value."""
        if isinstance(e, ir.LocalRef) and e.var in self.values:
            return self.key(self.values[e.var])
        return (type(e).__name__, e.type.name, attributes(e), tuple(id(r) for r in references(e)),
                tuple(self.key(c) for c in children(e)))


def _arrays_named(node: ir.Expr | ir.Stmt) -> list:
    return [r for r in references(node) if isinstance(r, (ir.Param, ir.SharedArray))]


class _Rewriter:
    """The task's body with each demotable atomic rewritten, a Note before the first of a run
    on one array and line (a vector's components are one atomic each)."""

    def __init__(self, facts: _Facts, private: dict[int, ir.Array], why: str) -> None:
        self.facts, self.private, self.why = facts, private, why

    def block(self, stmts: list[ir.Stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        noted = None
        for st in stmts:
            new = self.demoted(st)
            if new is None:
                bodies = {f: self.block(getattr(st, f)) for f in fields_of(type(st)).bodies}
                changed = {f: b for f, b in bodies.items() if b is not getattr(st, f)}
                out.append(dataclasses.replace(st, **changed) if changed else st)
                noted = None
                continue
            atomic, replacement = new
            if noted != (atomic.loc.line, id(atomic.array)):
                noted = (atomic.loc.line, id(atomic.array))
                out.append(ir.Note(atomic.loc, f"atomic_{atomic.op} on {atomic.array.name} not atomic: {self.why}"))
            out.extend(replacement)
        return out if len(out) != len(stmts) or any(a is not b for a, b in zip(out, stmts)) else stmts

    def demoted(self, st: ir.Stmt) -> tuple[ir.Atomic, list[ir.Stmt]] | None:
        """The statements that replace ``st`` and its atomic, or None where it stays."""
        if isinstance(st, ir.ExprStmt) and self.demotable(st.expr):
            return st.expr, self.update(st.expr, None)
        if isinstance(st, (ir.Declare, ir.Assign)):
            a = st.init if isinstance(st, ir.Declare) else st.value
            if not (self.demotable(a) and st.var.type == a.type):
                return None
            if isinstance(st, ir.Declare) and not _reads(a, st.var):
                old = ir.LocalRef(a.type, a.loc, st.var)
                return a, [ir.Declare(st.loc, st.var, _load(a))] + self.update(a, old)
            stmts, old = self.with_old(a)
            return a, stmts + [ir.Assign(st.loc, st.var, old)]
        if isinstance(st, ir.Store) and self.demotable(st.value) and \
                not any(r is st.value.array for i in st.indices for x in iter_expr(i) for r in _arrays_named(x)):
            stmts, old = self.with_old(st.value)
            return st.value, stmts + [dataclasses.replace(st, value=old)]
        return None

    def demotable(self, e: ir.Expr | None) -> bool:
        if not isinstance(e, ir.Atomic) or id(e.array) not in self.private:
            return False
        if not all(self.facts.kind(i, isinstance(e.array, ir.SharedArray)).stable for i in e.indices):
            return False
        operands = [e.value] + ([e.expected] if e.expected is not None else [])
        return not any(isinstance(x, ir.Atomic) and x.array is e.array for o in operands for x in iter_expr(o))

    def with_old(self, a: ir.Atomic) -> tuple[list[ir.Stmt], ir.Expr]:
        """The element's old value in a new local, and the update: for a result used where a
        local cannot simply be declared with it."""
        old = ir.Local(f"{a.array.name}_old", a.type, a.loc)
        ref = ir.LocalRef(a.type, a.loc, old)
        return [ir.Declare(a.loc, old, _load(a))] + self.update(a, ref), ref

    def update(self, a: ir.Atomic, old: ir.Expr | None) -> list[ir.Stmt]:
        """The store that does what ``a`` does to its element, ``old`` its value before."""
        cur = old if old is not None else _load(a)
        loc, t = a.loc, a.type
        pre: list[ir.Stmt] = []
        if a.op in ("min", "max") and t.is_float and not isinstance(a.value, _SIMPLE):
            # minNum / maxNum read the operand three times: evaluated once, as the atomic did.
            operand = ir.Local("operand", t, loc)
            pre.append(ir.Declare(loc, operand, a.value))
            a = dataclasses.replace(a, value=ir.LocalRef(t, loc, operand))
        if a.op == "cas":
            value = ir.Select(t, loc, ir.Compare(T.bool_, loc, "eq", cur, a.expected), a.value, cur)
        elif a.op in ("and", "or", "xor"):
            value = ir.BinOp(t, loc, "bit" + a.op, cur, a.value)
        elif a.op == "sub":
            value = ir.BinOp(t, loc, "sub", cur, a.value)
        else:
            value = combine(a.op, cur, a.value, t, loc)
        return pre + [ir.Store(loc, a.array, a.indices, value)]


def _load(a: ir.Atomic) -> ir.Load:
    return ir.Load(a.type, a.loc, a.array, a.indices)


def _reads(e: ir.Expr, var: ir.Local) -> bool:
    return any(isinstance(x, ir.LocalRef) and x.var is var for x in iter_expr(e))



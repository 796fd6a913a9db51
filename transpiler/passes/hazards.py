"""SIMT hazards found before anything runs, from a uniformity analysis of the typed IR.

Every value gets a level: UNIFORM (the same in every thread of a block: parameters,
shapes, constants, block-wide votes, loads from uniform addresses, ``i // k`` of a 1-d loop
index from 0 over a multiple of the block size, k a multiple of it), SUBGROUP (the same in
every lane of a subgroup: subgroup reductions, ballots, broadcasts) or THREAD (differs
per thread: thread and lane indices, the loop index, atomics' old values, volatile loads,
loads from thread-dependent addresses). Locals take the join of everything assigned to
them, including the level of the control flow they are assigned under.

Diagnostics (each located, explained, with the fix that Quadrants' guides to block and grid
primitives and atomics, or NVSHMEM's memory-ordering rules, give):
- error: a block barrier, block vote or block collective under control flow that differs
  within a block (the threads that skip it deadlock the others);
- error: a subgroup collective under control flow that differs between lanes;
- warning: a spin-wait whose condition reads memory with a plain load and whose body has
  no fence, atomic or volatile load (the compiler may hoist the load: an endless loop);
- warning (Metal): a plain store published to other blocks through a grid.mem_fence()
  handshake (Metal's device fence orders only atomics);
- warning: block.mem_fence() ordering a publication that other blocks read.
- NVSHMEM (qd.shmem; its memory-ordering rules: nvshmem_fence orders delivery to one PE,
  nvshmem_quiet completes): warnings
  where a signal (a put / p / atomic to an array some thread waits on) can overtake the data
  put before it, where a thread's puts are left incomplete at the end of a task, where a
  non-blocking get's destination is read or a non-blocking put's source written before
  quiet(), and where barrier_all() is called by every thread of a parallel loop.

Warnings can be silenced on their line with a `# qd: ignore-hazard` comment.
"""
from __future__ import annotations

import linecache

from ..errors import Diagnostic, TranspileError
from ..ir import nodes as ir
from ..ir.records import record
from ..ir.walk import (
    all_stmts, attributes, children, contains, iter_expr, node_kinds, references, stmt_exprs, task_node_kinds,
)
from .capabilities import TargetProfile

UNIFORM, SUBGROUP, THREAD = 0, 1, 2
# What orders memory in a spin-wait's body (_Checker.spin_waits' body_orders): statements,
# then expressions.
_ORDERING_STMTS = (ir.Fence, ir.Barrier)
_ORDERING_EXPRS = (ir.Atomic, ir.VolatileLoad, ir.BlockVote)
_ORDERING = _ORDERING_STMTS + _ORDERING_EXPRS
_LEVEL_WORDS = {SUBGROUP: "the subgroup (lane) it runs in", THREAD: "the thread index"}
SILENCE = "qd: ignore-hazard"

_SUBGROUP_UNIFORM_OPS = {"broadcast", "ballot", "all", "any", "reduce_add", "reduce_min", "reduce_max"}
_LEAVES = frozenset((ir.Const, ir.ParamRef, ir.Shape, ir.BlockVote))  # uniform, nothing below them to read


# A hazard is a located diagnostic whose kind names it ("divergent-barrier", "spin-wait", ...).
Hazard = Diagnostic


def silenced(loc: ir.Loc) -> bool:
    return SILENCE in linecache.getline(loc.file, loc.line)


class _Levels:
    """The level of every local of a task: a fixpoint over all assignments."""

    def __init__(self, task: ir.Task, subgroup_size: int | None):
        self.locals: dict[int, int] = {}
        self.task = task
        self.subgroup_size = subgroup_size
        self.width_read = False  # whether a level hinged on the width (subgroup_index)
        self.summaries: dict[int, tuple] = {}  # expression id -> (expression, *_summary)
        self.calls = ir.Call in task_node_kinds(task)  # a real function may write the caller's locals
        # Locals defined once from the thread index: `tid // 32` is the same across a warp.
        self.defs: dict[int, list[ir.Expr]] = {}
        for st in all_stmts(task.code()):
            if isinstance(st, ir.Declare):
                self.defs.setdefault(id(st.var), []).append(st.init)
            elif isinstance(st, ir.Assign):
                self.defs.setdefault(id(st.var), []).append(st.value)
        for var in task.loop_vars:
            self.locals[id(var)] = THREAD
        # A 1-d loop from 0 over a multiple of the block size gives each block, in each round of
        # the grid-stride loop, block_dim consecutive indices starting at a multiple of it: then
        # `i // k` (k a multiple of block_dim) is the same in the whole block (Genesis' tiled
        # kernels: `i_b = i // BLOCK_DIM` with loop_config(block_dim=BLOCK_DIM)).
        self.block_var = None
        if task.kind == "parallel" and len(task.loop_vars) == 1:
            begin, end = task.ranges[0]
            if isinstance(begin, ir.Const) and begin.value % task.block_dim == 0 and \
                    self.multiple_of(end, task.block_dim):
                self.block_var = task.loop_vars[0]
        changed = True
        while changed:
            changed = False
            for stmts in (task.prelude, task.body, task.epilogue):
                changed |= self._assignments(stmts, UNIFORM)

    def _raise(self, var: ir.Local, level: int) -> bool:
        if level > self.locals.get(id(var), UNIFORM):
            self.locals[id(var)] = level
            return True
        return False

    def _assignments(self, stmts: list[ir.Stmt], control: int) -> bool:
        changed = False
        for st in stmts:
            cls = type(st)  # (statement classes have no subclasses: one dispatch by class)
            value = st.init if cls is ir.Declare else st.value if cls is ir.Assign else \
                st.expr if cls is ir.ExprStmt else None
            if value is not None and self.calls:
                for call in iter_expr(value):
                    if isinstance(call, ir.Call):  # a real function writes these locals of the caller
                        for var in call.outs:
                            changed |= self._raise(var, max(control, self.of(call)))
            if cls is ir.Declare and st.init is not None:
                changed |= self._raise(st.var, max(control, self.of(st.init)))
            elif cls is ir.Declare:
                changed |= self._raise(st.var, control)
            elif cls is ir.Assign:
                changed |= self._raise(st.var, max(control, self.of(st.value)))
            elif cls is ir.If:
                inner = max(control, self.of(st.cond))
                changed |= self._assignments(st.then, inner) | self._assignments(st.orelse, inner)
            elif cls is ir.For or cls is ir.While:
                inner = max(control, self.loop_level(st))
                if cls is ir.For:
                    changed |= self._raise(st.var, inner)
                changed |= self._assignments(st.body, inner)
        return changed

    def loop_level(self, st: ir.For | ir.While) -> int:
        """How much the trip count can differ: the bounds, and any break/continue condition."""
        level = self.of(st.cond) if isinstance(st, ir.While) else \
            max(self.of(st.start), self.of(st.stop), self.of(st.step))
        return max(level, self._exit_level(st.body))

    def _exit_level(self, stmts: list[ir.Stmt]) -> int:
        level = UNIFORM
        for st in stmts:
            if isinstance(st, ir.If):
                inner = max(self._exit_level(st.then), self._exit_level(st.orelse))
                if inner or _exits(st.then) or _exits(st.orelse):
                    level = max(level, inner, self.of(st.cond))
        return level

    def of(self, e: ir.Expr) -> int:
        summary = self.summaries.get(id(e))
        if summary is None or summary[0] is not e:
            summary = self.summaries[id(e)] = (e, *self._summary(e))
        _, level, reads = summary
        for var in reads:
            v = self.locals.get(var, UNIFORM)
            if v > level:
                level = v
        return level

    def _summary(self, e: ir.Expr) -> tuple[int, tuple[int, ...]]:
        """``e``'s level apart from the locals it reads, and those locals (by id): the fixpoint
        re-reads each expression once per round, and only its locals' levels change."""
        level, reads = UNIFORM, []
        stack = [e]
        while stack:
            n = stack.pop()
            cls = type(n)  # (these expression classes have no subclasses: one dispatch by class)
            if cls in _LEAVES:
                continue
            if cls is ir.LocalRef:
                reads.append(id(n.var))
            elif cls is ir.ThreadIndex:
                if n.kind in ("thread_idx", "global_thread_idx"):
                    level = THREAD
            elif cls is ir.Atomic or cls is ir.VolatileLoad or cls is ir.ShmemAtomic:
                level = THREAD
            elif cls is ir.SubgroupOp:
                level = max(level, SUBGROUP if n.op in _SUBGROUP_UNIFORM_OPS else THREAD)
            elif cls is ir.Load:
                stack += n.indices
            elif cls is ir.BinOp and self.subgroup_index(n):
                level = max(level, SUBGROUP)
            elif cls is ir.BinOp and self.block_var is not None and self.block_index(n):
                stack.append(n.b)  # uniform, as long as the divisor is
            else:
                stack += children(n)
        return level, tuple(reads)

    def subgroup_index(self, e: ir.BinOp) -> bool:
        """``tid // k`` (or ``tid >> s``) with k a multiple of the subgroup size."""
        if not isinstance(e.b, ir.Const) or not e.type.is_int:
            return False
        if e.op in ("truncdiv", "floordiv"):
            k = e.b.value
        elif e.op == "rshift" and 0 <= e.b.value < 63:
            k = 1 << e.b.value
        else:
            return False
        if k <= 0 or not self.is_thread_index(e.a):
            return False
        self.width_read = True
        return self.subgroup_size is not None and k % self.subgroup_size == 0

    def block_index(self, e: ir.BinOp) -> bool:
        """``i // k`` (or ``i >> s``) of the block-aligned loop variable, k a multiple of the
        block size."""
        if e.op in ("truncdiv", "floordiv"):
            if not self.multiple_of(e.b, self.task.block_dim):
                return False
        elif not (e.op == "rshift" and isinstance(e.b, ir.Const) and 0 <= e.b.value < 31 and
                  (1 << e.b.value) % self.task.block_dim == 0):
            return False
        a = e.a.a if isinstance(e.a, ir.Cast) else e.a
        while isinstance(a, ir.LocalRef) and a.var is not self.block_var:
            defs = self.defs.get(id(a.var), [])
            if len(defs) != 1 or defs[0] is None:
                return False
            a = defs[0].a if isinstance(defs[0], ir.Cast) else defs[0]
        return isinstance(a, ir.LocalRef)

    def multiple_of(self, e: ir.Expr, k: int, depth: int = 0) -> bool:
        """Whether ``e`` is, as written, a nonzero constant multiple of ``k`` times other factors."""
        if depth > 8:
            return False
        if isinstance(e, ir.Const):
            return isinstance(e.value, int) and not isinstance(e.value, bool) and e.value and e.value % k == 0
        if isinstance(e, ir.Cast):
            return self.multiple_of(e.a, k, depth + 1)
        if isinstance(e, ir.BinOp) and e.op == "mul":
            return self.multiple_of(e.a, k, depth + 1) or self.multiple_of(e.b, k, depth + 1)
        if isinstance(e, ir.LocalRef):
            defs = self.defs.get(id(e.var), [])
            return len(defs) == 1 and defs[0] is not None and self.multiple_of(defs[0], k, depth + 1)
        return False

    def is_thread_index(self, e: ir.Expr) -> bool:
        if isinstance(e, ir.ThreadIndex):
            return e.kind in ("thread_idx", "global_thread_idx")
        if isinstance(e, ir.LocalRef):
            defs = self.defs.get(id(e.var), [])
            return len(defs) == 1 and defs[0] is not None and self.is_thread_index(defs[0])
        if isinstance(e, ir.Cast):
            return self.is_thread_index(e.a)
        return False


def _exits(stmts: list[ir.Stmt]) -> bool:
    for st in stmts:
        if isinstance(st, (ir.Break, ir.Continue)):
            return True
        if isinstance(st, ir.If) and (_exits(st.then) or _exits(st.orelse)):
            return True
    return False


class _Checker:
    def __init__(self, task: ir.Task, target: TargetProfile, subgroup_size: int | None):
        self.task = task
        self.target = target
        self.subgroup_size = subgroup_size
        self.levels: _Levels | None = None
        self.hazards: list[Hazard] = []

    def run(self) -> list[Hazard]:
        # Each check walks the task only when what it looks for is there.
        kinds = task_node_kinds(self.task)
        if any(issubclass(k, (ir.Barrier, ir.BlockVote, ir.SubgroupOp)) for k in kinds):
            self.levels = _Levels(self.task, self.subgroup_size)
            # Collectives in expressions: only where the task has some (barriers are statements).
            self.expression_collectives = any(issubclass(k, (ir.BlockVote, ir.SubgroupOp)) for k in kinds)
            self.walk(self.task.body + self.task.epilogue, UNIFORM, None)
        if ir.While in kinds:
            self.spin_waits()
        if ir.Fence in kinds:
            self.publications()
        return self.hazards

    # ---------------------------------------------------------------- divergence

    def walk(self, stmts: list[ir.Stmt], control: int, why: ir.Loc | None) -> None:
        for st in stmts:
            if self.expression_collectives:
                for e in stmt_exprs(st):
                    self.collectives(e, control, why)
            if isinstance(st, ir.Barrier):
                self.check_collective("block.sync()" if st.scope == "block" else "subgroup.sync()",
                                      st.scope, control, why, st.loc)
            if isinstance(st, ir.If):
                level = self.levels.of(st.cond)
                inner, inner_why = (level, st.loc) if level > control else (control, why)
                self.walk(st.then, inner, inner_why)
                self.walk(st.orelse, inner, inner_why)
            elif isinstance(st, (ir.For, ir.While)):
                level = self.levels.loop_level(st)
                inner, inner_why = (level, st.loc) if level > control else (control, why)
                self.walk(st.body, inner, inner_why)

    def collectives(self, e: ir.Expr, control: int, why: ir.Loc | None) -> None:
        for sub in iter_expr(e):
            if isinstance(sub, ir.BlockVote):
                self.check_collective(f"block.sync_{sub.op}_nonzero()", "block", control, why, sub.loc)
            elif isinstance(sub, ir.SubgroupOp) and sub.op != "invocation_id":
                self.check_collective(f"subgroup.{sub.op}()", "subgroup", control, why, sub.loc)

    def check_collective(self, what: str, scope: str, control: int, why: ir.Loc | None, loc: ir.Loc) -> None:
        limit = UNIFORM if scope == "block" else SUBGROUP
        if control <= limit:
            return
        where = f"the condition at line {why.line}" if why is not None else "a condition"
        if scope == "block":
            message = (f"{what} is reached only by some threads of the block: {where} depends on "
                       f"{_LEVEL_WORDS[control]}; the threads that skip it leave the others waiting forever")
            hint = ("call it where every thread of the block gets (e.g. before the `if`), and branch on its "
                    "result instead")
        else:
            message = (f"{what} is reached only by some lanes of the subgroup: {where} depends on "
                       f"{_LEVEL_WORDS[control]}; a subgroup collective needs every lane")
            hint = "call it outside the branch (every lane), then use the result under the condition"
        self.hazards.append(Hazard("error", f"divergent-{scope}", message, loc, hint))

    # ---------------------------------------------------------------- spin-waits

    def spin_waits(self) -> None:
        for st in all_stmts(self.task.body):
            if not isinstance(st, ir.While):
                continue
            # A location the loop body itself writes is not waited on (a serial task counting
            # up a kernel-scope variable): only another thread's store could end that wait.
            written = {id(s.array) for s in all_stmts(st.body) if isinstance(s, ir.Store)}
            # A condition on a local the body steps (`while k < n[t]: ...; k += 1`) counts; it
            # does not wait for another thread.
            stepped = {id(s.var) for s in all_stmts(st.body) if isinstance(s, ir.Assign)}
            if any(isinstance(e, ir.LocalRef) and id(e.var) in stepped for e in iter_expr(st.cond)):
                continue
            plain = [e for e in iter_expr(st.cond) if isinstance(e, ir.Load) and id(e.array) not in written]
            ordered = any(isinstance(e, (ir.VolatileLoad, ir.Atomic)) for e in iter_expr(st.cond))
            body_orders = any(isinstance(s, _ORDERING_STMTS) or any(
                isinstance(e, _ORDERING_EXPRS)
                for x in stmt_exprs(s) for e in iter_expr(x)) for s in all_stmts(st.body))
            # On Metal only an atomic read sees another block's store (qd.volatile_load is one
            # there); a plain load kept fresh by a fence in the loop is not enough.
            fenced_read = [e for e in iter_expr(st.cond) if isinstance(e, ir.Load)
                           and isinstance(e.array, ir.Param) and id(e.array) not in written]
            if fenced_read and not ordered and body_orders and not self.target.caps.fence_orders_plain_stores:
                flag = fenced_read[0].array.name
                self.hazards.append(Hazard(
                    "warning", "metal-spin-wait",
                    f"on {self.target.title}, a fence orders only atomic accesses: a flag read with a plain load "
                    f"of `{flag}[...]` may never see another block's store, fence or not (so on Vulkan on macOS, "
                    "which runs on Metal through MoltenVK)", st.loc,
                    hint=f"spin on qd.volatile_load({flag}[...]) or qd.atomic_or({flag}[...], 0), and raise the "
                         "flag with an atomic"))
                continue
            if plain and not ordered and not body_orders:
                load = plain[0]
                self.hazards.append(Hazard(
                    "warning", "spin-wait",
                    f"this loop waits on `{load.array.name}[...]` with a plain load and nothing in its body "
                    "orders memory: the compiler may read it once and spin forever",
                    st.loc, hint=f"read it with qd.volatile_load({load.array.name}[...]) (or an atomic)"))

    # ---------------------------------------------------------------- publication

    def publications(self) -> None:
        """A global store, then a fence, then an atomic on global memory: a flag published
        to other blocks. Check the fence's scope and, on Metal, that the data is atomic."""
        seq = [st for st in all_stmts(self.task.body)]
        spun = {id(e.array) for st in seq if isinstance(st, ir.While) for e in iter_expr(st.cond)
                if isinstance(e, (ir.Load, ir.VolatileLoad)) and isinstance(e.array, ir.Param)}
        for k, st in enumerate(seq):
            if not isinstance(st, ir.Fence):
                continue
            before = [s for s in seq[:k] if isinstance(s, ir.Store) and isinstance(s.array, ir.Param)]
            after_atomic = any(isinstance(e, ir.Atomic) and isinstance(e.array, ir.Param)
                               for s in seq[k + 1:] for x in stmt_exprs(s) for e in iter_expr(x))
            # The look-back scan in Quadrants' grid.mem_fence guide raises its flag with a plain
            # store after the fence, for a reader that spins on it.
            after_plain = any(isinstance(s, ir.Store) and id(s.array) in spun for s in seq[k + 1:])
            if not before or not (after_atomic or after_plain):
                continue
            if st.scope == "block" and after_atomic:
                self.hazards.append(Hazard(
                    "warning", "block-fence",
                    "block.mem_fence() orders these stores only for threads of this block, but an atomic after it "
                    "publishes them to other blocks", st.loc,
                    hint="use qd.simt.grid.mem_fence() for cross-block publication"))
            elif st.scope == "device" and not self.target.caps.fence_orders_plain_stores:
                store = before[-1]
                self.hazards.append(Hazard(
                    "warning", "metal-publication",
                    f"on {self.target.title}, grid.mem_fence() orders only atomic accesses: the plain store to "
                    f"`{store.array.name}` may not be visible to the block that sees the flag (so on Vulkan on "
                    "macOS, which runs on Metal through MoltenVK)", store.loc,
                    hint="publish the value itself with an atomic (e.g. "
                         f"qd.atomic_exchange({store.array.name}[...], v)), raise the flag with one too, or split "
                         "the kernel into two launches"))


def target_key(kernel: ir.Kernel, target: TargetProfile) -> str | None:
    """What check_hazards reads of ``target`` for ``kernel``: the findings for two targets
    with the same key are the same (at one width). Only the publication check (a fence) and
    the spin-wait check (a loop whose body orders memory: _ORDERING) read it, and only on a
    target whose fences do not order plain stores (its title is in their messages)."""
    if target.caps.fence_orders_plain_stores:
        return None
    if contains(kernel, ir.Fence) or (contains(kernel, ir.While) and contains(kernel, *_ORDERING)):
        return target.title
    return None


def check_hazards(kernel: ir.Kernel, target: TargetProfile, subgroup_size: int | None = None) -> list[Hazard]:
    """Errors raise a TranspileError (the first one); warnings are returned, minus the
    silenced ones."""
    return check_hazards_at(kernel, target, subgroup_size)[0]


def check_hazards_at(kernel: ir.Kernel, target: TargetProfile, subgroup_size: int | None) -> tuple[list[Hazard], bool]:
    """check_hazards' findings, and whether they hinged on the width (a ``tid // k`` uniform
    across a subgroup or not): when not, they are the findings at every width."""
    checkers = [_Checker(task, target, subgroup_size) for task in kernel.tasks]
    if contains(kernel, *_SHMEM):
        signals = _signal_arrays(kernel)
        checkers += [_ShmemChecker(task, signals, subgroup_size) for task in kernel.tasks]
    found: list[Hazard] = []
    for checker in checkers:
        found.extend(checker.run())
    width_read = any(c.levels is not None and c.levels.width_read for c in checkers)
    errors = [h for h in found if h.severity == "error"]
    if errors:
        # The first in the source; at one call site the block-level finding explains more
        # (a block reduction contains subgroup collectives too).
        first = min(errors, key=lambda h: (h.loc.line, h.loc.col, h.kind != "divergent-block"))
        raise TranspileError(first.message, first.loc, first.hint)
    seen, out = set(), []
    for h in found:
        key = (h.kind, h.loc)
        if key not in seen and not silenced(h.loc):
            seen.add(key)
            out.append(h)
    return out, width_read


# ----------------------------------------------------------------------------- NVSHMEM ordering

_SHMEM = (ir.ShmemFence, ir.ShmemQuiet, ir.ShmemBarrierAll, ir.ShmemOp)  # what the NVSHMEM checks look at

def _signal_arrays(kernel: ir.Kernel) -> set[int]:
    """Arrays used as signals: some thread waits on them (wait_until, or a loop polling them)."""
    found: set[int] = set()
    for task in kernel.tasks:
        for st in all_stmts(task.code()):
            for x in stmt_exprs(st):
                for e in iter_expr(x):
                    if isinstance(e, ir.ShmemWaitUntil):
                        found.add(id(e.ivar.array))
            if isinstance(st, ir.While):
                for e in iter_expr(st.cond):
                    if isinstance(e, (ir.Load, ir.VolatileLoad, ir.Atomic, ir.ShmemElement)):
                        found.add(id(e.array))
    return found


def _remote_write(e: ir.Expr) -> ir.ShmemElement | None:
    """The remote element an operation writes (and so can signal with): put, p, every atomic
    but fetch."""
    if isinstance(e, (ir.ShmemPut, ir.ShmemP)):
        return e.dest
    if isinstance(e, ir.ShmemAtomic) and e.op != "fetch":
        return e.target
    return None


def _op_name(e: ir.ShmemOp) -> str:
    if isinstance(e, ir.ShmemTransfer):
        return f"{'put' if isinstance(e, ir.ShmemPut) else 'get'}{'_nbi' if e.nbi else ''}"
    if isinstance(e, ir.ShmemAtomic):
        return f"atomic_{e.op}"
    return "p" if isinstance(e, ir.ShmemP) else "g"


@record
class _Pending:
    op: ir.ShmemOp
    element: ir.ShmemElement
    fenced: bool = False


@record(frozen=True)
class _NbiRule:
    """A use of a local array that a non-blocking transfer still in flight makes a race."""

    kind: str
    local: str  # the transfer's local side: "dest" (a get fills it), "source" (a put reads it)
    use: str
    why: str
    hint: str


_READ_DURING_GET = _NbiRule(
    "shmem-nbi-get", "dest", "reads",
    "may still be filling it: a non-blocking get is complete only at qd.shmem.quiet()",
    "call qd.shmem.quiet() before reading it (fence() does not order non-blocking gets)")
_WRITE_DURING_PUT = _NbiRule(
    "shmem-nbi-put", "source", "writes",
    "may still be reading it: a non-blocking put is done with its source only at qd.shmem.quiet()",
    "call qd.shmem.quiet() before changing the source of a non-blocking put")


class _ShmemChecker:
    """NVSHMEM's ordering rules over one task, in program order (a thread's view: NVSHMEM's
    fence and quiet order and complete only the calling thread's operations)."""

    def __init__(self, task: ir.Task, signals: set[int], subgroup_size: int | None):
        self.task = task
        self.signals = signals
        self.subgroup_size = subgroup_size
        self.levels: _Levels | None = None
        self.hazards: list[Hazard] = []

    def run(self) -> list[Hazard]:
        if not any(issubclass(k, (ir.ShmemFence, ir.ShmemQuiet, ir.ShmemBarrierAll, ir.ShmemOp))
                   for k in node_kinds(self.task.body)):
            return []
        self.levels = _Levels(self.task, self.subgroup_size)
        self.ordering()
        if self.task.kind == "parallel" and not self.single_index():
            self.barriers(self.task.body, UNIFORM)
        return self.hazards

    def warn(self, kind: str, message: str, loc: ir.Loc, hint: str) -> None:
        self.hazards.append(Hazard("warning", kind, message, loc, hint))

    # ---------------------------------------------------------------- PE expressions

    def key(self, e: ir.Expr, depth: int = 0):
        """A structural key: equal keys, the same PE (locals assigned once stand for their value)."""
        if isinstance(e, ir.LocalRef) and depth < 16:
            defs = self.levels.defs.get(id(e.var), [])
            if len(defs) == 1 and defs[0] is not None:
                return self.key(defs[0], depth + 1)
            return ("local", id(e.var))
        if isinstance(e, ir.Const):
            return ("const", e.value)
        if isinstance(e, ir.ParamRef):
            return ("param", e.param.name)
        if isinstance(e, ir.Cast) and e.a.type.is_int:
            return self.key(e.a, depth)
        refs = tuple(id(r) for r in references(e))
        return (type(e).__name__, attributes(e), refs, tuple(self.key(c, depth + 1) for c in children(e)))

    @staticmethod
    def pe_text(e: ir.Expr) -> str:
        if isinstance(e, ir.LocalRef):
            return e.var.name
        if isinstance(e, ir.ParamRef):
            return e.param.name
        if isinstance(e, ir.Const):
            return str(e.value)
        return "..."

    # ---------------------------------------------------------------- fence, quiet, signals

    def ordering(self) -> None:
        pending: list[_Pending] = []   # remote writes not yet completed by quiet()
        nbi_gets: list[ir.ShmemGet] = []
        nbi_puts: list[ir.ShmemPut] = []
        for st in all_stmts(self.task.body):
            if isinstance(st, ir.ShmemFence):
                for p in pending:
                    p.fenced = True
                continue
            if isinstance(st, (ir.ShmemQuiet, ir.ShmemBarrierAll)):
                pending.clear()
                nbi_gets.clear()
                nbi_puts.clear()
                continue
            for x in stmt_exprs(st):
                for e in iter_expr(x):
                    if isinstance(e, ir.Load):
                        self.during_nbi(e.array, e.loc, nbi_gets, _READ_DURING_GET)
                    elif isinstance(e, ir.Atomic):
                        self.during_nbi(e.array, e.loc, nbi_puts, _WRITE_DURING_PUT)
                    if not isinstance(e, ir.ShmemOp):
                        continue
                    if isinstance(e, ir.ShmemPut):  # the local side: a put reads it, a get fills it
                        self.during_nbi(e.source.array, e.loc, nbi_gets, _READ_DURING_GET)
                    elif isinstance(e, ir.ShmemGet):
                        self.during_nbi(e.dest.array, e.loc, nbi_puts, _WRITE_DURING_PUT)
                    if isinstance(e, ir.ShmemTransfer) and e.nbi:
                        (nbi_puts if isinstance(e, ir.ShmemPut) else nbi_gets).append(e)
                    element = _remote_write(e)
                    if element is None:
                        continue
                    if id(element.array) in self.signals:
                        self.signal(e, element, pending)
                    if not (isinstance(e, ir.ShmemAtomic) and ir.SHMEM_ATOMICS[e.op]):
                        pending.append(_Pending(e, element))  # a fetching atomic is complete on return
            if isinstance(st, ir.Store):
                self.during_nbi(st.array, st.loc, nbi_puts, _WRITE_DURING_PUT)
        incomplete = pending + [_Pending(g, g.dest) for g in nbi_gets]
        if incomplete:
            first = min(incomplete, key=lambda p: (p.op.loc.line, p.op.loc.col))
            what = _op_name(first.op)
            self.warn("shmem-no-quiet",
                      f"the {what} to `{first.element.array.name}` is not known to be complete when this task ends: "
                      "NVSHMEM completes a thread's operations at qd.shmem.quiet() or a barrier, not when the kernel "
                      "returns", first.op.loc,
                      hint=f"call qd.shmem.quiet() after the last {what} (or nvshmemx_quiet_on_stream on the host "
                           "after the launch)")

    def signal(self, e: ir.ShmemOp, element: ir.ShmemElement, pending: list[_Pending]) -> None:
        """``e`` writes a signal: the data put before it must be there when a PE sees it."""
        pe = self.key(e.pe)
        for p in pending:
            if id(p.element.array) in self.signals:
                continue
            data, line = p.element.array.name, p.op.loc.line
            if self.key(p.op.pe) == pe:
                if not p.fenced:
                    self.warn("shmem-unordered-signal",
                              f"the signal `{element.array.name}` can reach PE `{self.pe_text(e.pe)}` before the "
                              f"{_op_name(p.op)} to `{data}` at line {line}: NVSHMEM delivers a thread's operations "
                              "to a PE in any order unless a fence separates them", e.loc,
                              hint="call qd.shmem.fence() between the data and the signal (it orders delivery to "
                                   "that PE; qd.shmem.quiet() also does, and completes the data for every PE)")
                    return
            else:
                self.warn("shmem-signal-other-pe",
                          f"the signal `{element.array.name}` to PE `{self.pe_text(e.pe)}` can arrive before the "
                          f"{_op_name(p.op)} to `{data}` on PE `{self.pe_text(p.op.pe)}` at line {line} is complete: "
                          "fence() orders delivery only to one PE", e.loc,
                          hint="call qd.shmem.quiet() between them: it completes the data (visible to every PE) "
                               "before the signal is issued")
                return

    def during_nbi(self, array: ir.Array, loc: ir.Loc, in_flight: list[ir.ShmemTransfer], rule: _NbiRule) -> None:
        """This thread uses ``array`` (``rule`` says how) while a non-blocking transfer still
        in flight holds it as its local side."""
        for t in in_flight:
            if getattr(t, rule.local).array is array:
                self.warn(rule.kind, f"this {rule.use} `{array.name}` while the {_op_name(t)} at line {t.loc.line} "
                          f"{rule.why}", loc, hint=rule.hint)
                in_flight.remove(t)
                return

    # ---------------------------------------------------------------- barrier_all

    def single_index(self) -> bool:
        """A parallel loop over exactly one index runs its body on one thread."""
        sizes = []
        for begin, end in self.task.ranges:
            if not (isinstance(begin, ir.Const) and isinstance(end, ir.Const)):
                return False
            sizes.append(end.value - begin.value)
        return all(n == 1 for n in sizes)

    def barriers(self, stmts: list[ir.Stmt], control: int) -> None:
        for st in stmts:
            if isinstance(st, ir.ShmemBarrierAll) and control == UNIFORM:
                self.warn("shmem-barrier-threads",
                          "qd.shmem.barrier_all() is reached by every thread of this parallel loop: NVSHMEM's device "
                          "barrier_all takes one calling thread per PE", st.loc,
                          hint="call qd.shmem.barrier_all() in a serial part of the kernel (outside the top-level "
                               "loops), or under a condition only one thread meets (e.g. `if i == 0:`)")
            if isinstance(st, ir.If):
                inner = max(control, self.levels.of(st.cond))
                self.barriers(st.then, inner)
                self.barriers(st.orelse, inner)
            elif isinstance(st, (ir.For, ir.While)):
                self.barriers(st.body, max(control, self.levels.loop_level(st)))

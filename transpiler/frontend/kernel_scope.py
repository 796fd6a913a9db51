"""Kernel-scope variables, reductions and the kernel's return value, as Quadrants has them.

A top-level local that one task computes and another reads, or that a parallel loop
updates, lives in a scratch buffer of the kernel's own (a hidden 0-d ndarray parameter,
``Param.role == "scratch"``) instead of a register: each top-level loop is a separate
launch. Inside a parallel loop:

- ``n += v`` / ``n -= v`` / ``qd.atomic_add(n, v)`` (and min / max) whose old value is not
  used, on a variable the loop does not otherwise read, is a *reduction*: each thread folds
  into a private accumulator, the block folds the accumulators (the block library), and one
  thread per block adds the block's total into the buffer with one atomic; so is such an
  update of an array element at an index the loop does not change (``total[None] += x[i]``,
  Taichi's everyday sum) when the loop names that array nowhere else: Quadrants keeps a
  thread-local sum there too, which also spares the GPU one contended atomic per iteration;
- any other update is an atomic on the buffer (its old value is the atomic's);
- ``n = max(n, v)``, ``n = n + v`` and the like are those updates spelled as assignments;
- a variable the loop body assigns before it reads it, at the body's top, and that the kernel
  does not read after the loop, is the thread's own (Taichi's comet reuses its `r` so): the
  body declares it anew;
- any other plain assignment stores into the variable's buffer, Quadrants' shared value (each
  thread its own component in the usual ``v[i] = ...``); a value that differs between threads
  is warned of as a race (after the loop the variable holds one thread's value).

``return value`` at the end of the kernel stores into the result buffer
(``Param.role == "result"``), which the Python call reads back and the manifest describes.
These are methods of KernelLowering (see lower.py for the state they use).
"""
from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.records import record
from ..ir.walk import all_exprs, all_stmts, iter_expr, node_kinds, rebuild, stmt_exprs
from ..lang.matrix import MatrixType
from .common import ast_nodes
from .values import CT, KernelVar, MatrixValue, MatrixVar, StructValue, StructVar, TupleValue
from ..lang.matrix import StructType
from ..passes.legalize import combine

# Updates a reduction can fold privately, and the block library's name for each.
_REDUCIBLE = {"add": "add", "sub": "add", "min": "min", "max": "max"}
# `n = n OP v` spellings of an update, by operator.
_UPDATE_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.BitAnd: "and", ast.BitOr: "or",
                  ast.BitXor: "xor"}
# What a loop that does its own block work contains.
_COLLECTIVES = frozenset({ir.Barrier, ir.SubgroupOp, ir.BlockVote, ir.WarpOp})
# The dtypes the block library folds (its shared slots and subgroup operations).
_FOLDABLE = ("i32", "u32", "i64", "u64", "f32", "f64")
# `n = qd.max(n, v)`, and `n = qd.atomic_or(n, v)` (Genesis' bit reduction): the reduction it means.
_CALL_REDUCTIONS = {"max": "max", "min": "min", "atomic_max": "max", "atomic_min": "min", "atomic_add": "add",
                    "atomic_and": "and", "atomic_or": "or", "atomic_xor": "xor"}


@record
class Reduction:
    array: ir.Param       # the kernel-scope variable's scratch buffer, or the user's array
    indices: list         # the element (loop-invariant), [] for a 0-d buffer
    op: str               # "add", "min" or "max"
    acc: ir.Local         # the thread's private accumulator
    loc: ir.Loc           # the first update (where the block fold is attributed)
    element: bool = False  # an element of the user's array (else a kernel-scope variable)


class KernelScopeLowering:
    """Methods of KernelLowering for variables that outlive a task."""

    # ------------------------------------------------------------------ promotion

    def hidden_param(self, base: str, dtype: T.DType, loc: ir.Loc, role: str,
                     element_shape: tuple[int, ...] = (), bool_elements: bool = False) -> ir.Param:
        names = {p.name for p in self.hidden_params}
        name, k = f"qd_{base}", 1
        while name in names:
            name, k = f"qd_{base}_{k}", k + 1
        p = ir.Param(name, T.NdarrayType(dtype, 0, element_shape, bool_elements=bool_elements), -1, loc, role=role)
        self.hidden_params.append(p)
        return p

    def promote(self, var: ir.Local, scope) -> KernelVar:
        """Move the top-level local ``var`` into a scratch buffer from here on: statements
        already lowered read and write the buffer, and a value it holds from pure top-level
        definitions is stored there before the first task that uses it."""
        param = self.hidden_param(var.name, var.type, var.loc, "scratch")
        kv = KernelVar(param, var.name)
        scope.names[var.name] = kv
        # A vector's component is found through its variable, not by name. The local is kept
        # (its id must not be reused by a later local while the lowering runs).
        self.promoted[id(var)] = (var, kv)
        self.serial_locals.pop(var, None)

        def expr(e: ir.Expr) -> ir.Expr:
            if isinstance(e, ir.LocalRef) and e.var is var:
                return ir.Load(var.type, e.loc, param, [])
            return rebuild(e, lambda _, c: expr(c))

        def stmts(block: list[ir.Stmt]) -> list[ir.Stmt]:
            out = []
            for st in block:
                if isinstance(st, (ir.Declare, ir.Assign)) and st.var is var:
                    value = st.init if isinstance(st, ir.Declare) else st.value
                    if value is not None:
                        out.append(ir.Store(st.loc, param, [], expr(value)))
                    continue
                calls = [e for root in stmt_exprs(st) for e in iter_expr(root)
                         if isinstance(e, ir.Call) and any(v is var for v in e.outs)]
                if calls:  # a @qd.real_func takes it by reference: a local of its value, stored back after
                    tmp = ir.Local(var.name, var.type, st.loc)
                    out.append(ir.Declare(st.loc, tmp, ir.Load(var.type, st.loc, param, [])))
                    for call in calls:
                        call.outs = [tmp if v is var else v for v in call.outs]
                out.append(rebuild(st, lambda _, e: expr(e), lambda _, b: stmts(b)))
                if calls:
                    out.append(ir.Store(st.loc, param, [], ir.LocalRef(var.type, st.loc, tmp)))
            return out

        for task in self.tasks:
            task.body = stmts(task.body)  # preludes keep their own pure copies
        self.serial.stmts[:] = stmts(self.serial.stmts)
        if any(isinstance(st, (ir.Declare, ir.Assign)) and st.var is var for st in self.uniform_defs):
            body = [ir.Store(var.loc, param, [], ir.LocalRef(var.type, var.loc, var))]
            init = ir.Task("", "serial", [], [], 1, body, var.loc, prelude=self.uniform_prelude(body, []))
            first = next((k for k, t in enumerate(self.tasks) if _touches(t.body, param)), len(self.tasks))
            self.tasks.insert(first, init)
        return kv

    def shared_for_read(self, bound, scope) -> KernelVar | None:
        """``bound`` as a kernel-scope variable where reading it here needs one: a top-level
        local that serial code computed, read by another task."""
        if isinstance(bound, KernelVar):
            return bound
        if isinstance(bound, ir.Local) and id(bound) in self.promoted:
            return self.promoted[id(bound)][1]
        if isinstance(bound, ir.Local) and scope is self.kernel_scope and bound in self.serial_locals and (
                self.body.in_parallel or bound not in self.serial.declared):
            return self.promote(bound, scope)
        return None

    def shared_for_update(self, bound, scope) -> KernelVar | None:
        """``bound`` as a kernel-scope variable where updating it here needs one: a
        top-level local updated by a parallel loop."""
        if isinstance(bound, KernelVar):
            return bound
        if isinstance(bound, ir.Local) and id(bound) in self.promoted:
            return self.promoted[id(bound)][1]
        if isinstance(bound, ir.Local) and self.body.in_parallel and scope is self.kernel_scope and not bound.loop_var:
            return self.promote(bound, scope)
        return None

    def load_var(self, kv: KernelVar, loc: ir.Loc) -> ir.Expr:
        return ir.Load(kv.type, loc, kv.param, [])

    # ------------------------------------------------------------------ updates

    def update_var(self, kv: KernelVar, op: str, value: ir.Expr, node: ast.AST, spelled: str,
                   result_used: bool, expected: ir.Expr | None = None) -> ir.Expr | None:
        """``op`` ("add", "sub", "mul", "min", "max", "and", "or", "xor", "exchange", "cas")
        applied to a kernel-scope variable; the old value when ``result_used``."""
        loc = self.loc(node)
        if not self.body.in_parallel:
            return self.update_serially(ir.Load(kv.type, loc, kv.param, []),
                                        lambda v: self.emit(ir.Store(loc, kv.param, [], v)),
                                        op, value, node, result_used, expected)
        if not result_used and op in _REDUCIBLE and self.can_fold(kv) and \
                self.fold_update(kv.param, [], kv.name, op, value, node):
            return None
        atomic = self.make_atomic(op, kv.param, [], value, node, spelled, expected)
        if result_used:
            return atomic
        self.emit(ir.ExprStmt(loc, atomic))
        return None

    def fold_update(self, array: ir.Param, indices: list, name: str, op: str, value: ir.Expr, node: ast.AST) -> bool:
        """``array[indices] op= value`` into this thread's accumulator for it (added into the
        element once per block after the loop); False where another update of the same
        element in this loop folds with another operation."""
        loc, dtype = self.loc(node), array.type.dtype
        key = (id(array), tuple(map(_index_key, indices)))
        red = self.task_state.reductions.get(key)
        if red is not None and red.op != _REDUCIBLE[op]:
            return False
        if red is None:
            acc = ir.Local(f"{name}_partial", dtype, loc)
            red = Reduction(array, indices, _REDUCIBLE[op], acc, loc, array.role != "scratch")
            self.task_state.reductions[key] = red
        acc_ref = ir.LocalRef(dtype, loc, red.acc)
        v = self.coerce(value, dtype, node)
        if op == "sub":
            new = ir.BinOp(dtype, loc, "sub", acc_ref, v)
        elif red.op == "add":
            new = ir.BinOp(dtype, loc, "add", acc_ref, v)
        else:
            new = ir.Math(dtype, loc, red.op, [acc_ref, v])
        self.emit(ir.Assign(loc, red.acc, new))
        return True

    def update_element(self, op: str, array: ir.Param, indices: list, value: ir.Expr, target: ast.Subscript,
                       node: ast.AST, spelled: str) -> None:
        """An update of an array element whose old value is not used (``a[j] += v``,
        ``qd.atomic_max(a[j], v)``): folded per block when the element is the same for every
        iteration of the parallel loop and the loop names the array nowhere else; else an
        atomic."""
        # Only an update written in the loop's own body (not in a function it calls, whose other
        # uses of the array the loop's text does not show); cheapest test first, and the
        # subgroup width consulted only for an element that folds.
        body = self.body
        if op in _REDUCIBLE and body.in_parallel and not body.inline_stack and body.library_site is None \
                and not self.function_stack and isinstance(array, ir.Param) \
                and array.name not in self.sparse_fields and array.type.dtype.bits == 32 and \
                all(self.invariant(i) for i in indices) and self.only_updated(ast.unparse(target.value)) and \
                self.foldable_dtype(array.type.dtype) and \
                self.fold_update(array, indices, re.sub(r"\W", "_", ast.unparse(target.value)), op, value, node):
            return
        self.emit(ir.ExprStmt(self.loc(node), self.make_atomic(op, array, indices, value, node, spelled)))

    def only_updated(self, base: str) -> bool:
        """Whether the array spelled ``base`` (``total``, ``self.acc``) appears in the parallel
        loop's body only as the element an update writes (``base[j] += v``,
        ``qd.atomic_add(base[j], v)`` as a statement). One walk of the body per loop."""
        body = self.task_state.parallel_ast
        if self.names_of_loop[0] is not body:
            updated, named = set(), {}
            for st in body or []:
                for n in ast_nodes(st):  # (by exact class: every node of the loop body is looked at)
                    cls = type(n)
                    if cls is ast.Name:
                        named.setdefault(n.id, []).append(n)
                    elif cls is ast.Attribute:
                        named.setdefault(n.attr, []).append(n)
                    elif cls is ast.AugAssign or cls is ast.Expr:
                        target = n.target if cls is ast.AugAssign else n.value.args[0] if (
                            isinstance(n.value, ast.Call) and n.value.args and
                            self.is_atomic_call(n.value.func)) else None
                        if isinstance(target, ast.Subscript):
                            updated.add(id(target.value))
            self.names_of_loop = (body, updated, named)
        _, updated, named = self.names_of_loop
        return not any(id(n) not in updated and ast.unparse(n) == base for n in named.get(base.rsplit(".", 1)[-1], ()))

    def is_atomic_call(self, func: ast.expr) -> bool:
        """Whether a call of ``func`` is a call of a ``qd.atomic_*``, however it is spelled
        (``qd.atomic_add``, or ``op`` / ``OPS[k]`` naming one)."""
        if getattr(func, "attr", getattr(func, "id", "")).startswith("atomic_"):
            return True
        return str(getattr(self.named_value(func), "_qd_builtin", "")).startswith("atomic_")

    def invariant(self, e: ir.Expr) -> bool:
        """Whether ``e`` is the same in every iteration of the parallel loop: constants,
        parameters, shapes and the kernel's pure top-level values, combined."""
        return all(isinstance(n, (ir.Const, ir.ParamRef, ir.Shape, ir.BinOp, ir.Unary, ir.Cast, ir.Compare)) or
                   isinstance(n, ir.LocalRef) and n.var in self.top_level_locals and n.var not in self.serial_locals
                   for n in iter_expr(e))

    def serial_by_idiom(self, loop: ast.For) -> bool:
        """Whether a top-level loop runs once (``range(1)``, constant bounds) and writes a
        variable of the kernel's scope: then it is serial code, as Quadrants runs it."""
        it = loop.iter
        if not (isinstance(it, ast.Call) and self.static_callee(it) is range and not it.keywords and
                all(isinstance(a, ast.Constant) and type(a.value) is int for a in it.args) and
                len(range(*(a.value for a in it.args))) == 1):
            return False
        written = set()
        for n in ast_nodes(loop):
            target = n.target if isinstance(n, ast.AugAssign) else n if isinstance(getattr(n, "ctx", None), ast.Store) \
                else None
            while isinstance(target, (ast.Subscript, ast.Attribute)):
                target = target.value
            if isinstance(target, ast.Name):
                written.add(target.id)
        return any(isinstance(self.body.scope.lookup(name)[0], (ir.Local, KernelVar, MatrixVar, StructVar))
                   for name in written)

    def private_names(self, loop: ast.For) -> list[str]:
        """The kernel-scope names a parallel loop directly in the kernel's body (no graph loop
        around it) may make its own: the first statement of the body that mentions one is
        ``name = value`` with no ``name`` in the value, and nothing after the loop reads it."""
        outer = self.body.scope.parent
        candidates = {st.targets[0].id for st in loop.body if isinstance(st, ast.Assign) and len(st.targets) == 1
                      and isinstance(st.targets[0], ast.Name) and outer.lookup(st.targets[0].id)[0] is not None}
        kernel = self.parsed.node
        if not candidates or self.frames[-1].fn is not self.kernel.fn or not _directly_in(kernel.body, loop):
            return []  # (most loops assign only names of their own: no walk)
        read_after = {n.id for n in ast_nodes(kernel) if isinstance(n, ast.Name) and
                      isinstance(n.ctx, ast.Load) and (n.lineno, n.col_offset) > (loop.end_lineno, loop.end_col_offset)}
        out, seen = [], set()
        for st in loop.body:
            mentioned = {n.id for n in ast_nodes(st) if isinstance(n, ast.Name)}
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                name = st.targets[0].id
                if name in candidates and name not in seen and name not in read_after and \
                        name not in {n.id for n in ast_nodes(st.value) if isinstance(n, ast.Name)}:
                    out.append(name)
            seen |= mentioned
        return out

    def reduction_by_assignment(self, s: ast.Assign) -> bool:
        """``n = max(n, v)``, ``n = min(v, n)``, ``n = n + v``, ``n = n - v``, ``n = v * n`` (and
        ``&``, ``|``, ``^``) and ``n = qd.atomic_or(n, v)`` in a parallel loop, on a kernel-scope
        ``n`` that ``v`` does not read: the reduction the assignment means. (Quadrants accepts
        these spellings and races on them: every thread reads and writes ``n``.) Lowered as
        ``n max= v``, ``n += v``, ...; ``n = False`` (a constant) is a plain store, the same value
        from every thread that writes. Returns False for any other assignment."""
        if not self.body.in_parallel or len(s.targets) != 1 or not isinstance(s.targets[0], ast.Name):
            return False
        name = s.targets[0].id
        bound, scope = self.body.scope.lookup(name)
        if not isinstance(bound, (KernelVar, ir.Local)):
            return False
        form = self.reduction_form(s.value, name)
        constant = form is None and self.is_translation_constant(s.value)
        if form is None and not constant:
            return False
        shared = self.shared_for_update(bound, scope)
        if shared is None:
            return False
        if constant:
            # `found = True` in a parallel loop (Genesis' `is_success = False` on a NaN): every
            # thread that writes stores the same value, so their order cannot matter.
            self.emit(ir.Store(self.loc(s), shared.param, [], self.coerce(self.rvalue(s.value), shared.type, s)))
            return True
        op, other = form
        self.update_var(shared, op, self.rvalue(other), s, f"`{ast.unparse(s)}`", result_used=False)
        return True

    def is_translation_constant(self, value: ast.expr) -> bool:
        """A literal or a name bound to a number known at translation time (no lowering)."""
        if isinstance(value, ast.Constant):
            return isinstance(value.value, (bool, int, float))
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
            return self.is_translation_constant(value.operand)
        found = self.named_value(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
        return isinstance(found, (bool, int, float))

    def reduction_form(self, value: ast.expr, name: str) -> tuple[str, ast.expr] | None:
        """(op, the other operand) when ``value`` combines ``name`` with something that does
        not read it."""
        def other(a: ast.expr, b: ast.expr) -> ast.expr | None:
            if isinstance(a, ast.Name) and a.id == name and not any(
                    isinstance(n, ast.Name) and n.id == name for n in ast.walk(b)):
                return b
            return None

        if isinstance(value, ast.BinOp) and type(value.op) in _UPDATE_BINOPS:
            op = _UPDATE_BINOPS[type(value.op)]
            found = other(value.left, value.right)
            if found is None and op != "sub":
                found = other(value.right, value.left)
            return (op, found) if found is not None else None
        if isinstance(value, ast.Call) and len(value.args) == 2 and not value.keywords:
            try:
                f = self.expr(value.func)
            except TranspileError:
                return None
            fn = f.value if isinstance(f, CT) else None
            # `n = qd.atomic_or(n, v)` (Genesis' bit reduction) means n |= v: the old value it
            # assigns back is some other thread's partial result, which Quadrants races on.
            op = {builtins.max: "max", builtins.min: "min"}.get(fn) or \
                _CALL_REDUCTIONS.get(getattr(fn, "_qd_builtin", None))
            if op is None:
                return None
            found = other(value.args[0], value.args[1])
            if found is None:
                found = other(value.args[1], value.args[0])
            return (op, found) if found is not None else None
        return None

    def update_serially(self, cur: ir.Expr, store, op: str, value: ir.Expr, node: ast.AST, result_used: bool,
                        expected: ir.Expr | None = None) -> ir.Expr | None:
        """An atomic's effect where one thread owns the value (a local, or a kernel-scope
        variable in a serial part): read, combine, write; the old value when used."""
        loc = self.loc(node)
        t = cur.type
        old = None
        if result_used:
            tmp = ir.Local("old", t, loc)
            self.emit(ir.Declare(loc, tmp, cur))
            old = cur = ir.LocalRef(t, loc, tmp)
        v = self.coerce(value, t, node)
        if op == "cas":
            e = self.coerce(expected, t, node)
            store(ir.Select(t, loc, ir.Compare(T.bool_, loc, "eq", cur, e), v, cur))
        elif op in ("and", "or", "xor", "sub"):
            store(ir.BinOp(t, loc, "bit" + op if op != "sub" else op, cur, v))
        else:
            store(combine(op, cur, v, t, loc))
        return old

    def can_fold(self, kv: KernelVar) -> bool:
        """Whether this loop may fold ``kv`` privately: a dtype the block library folds at
        this block size, and no other read in the loop (it would see the buffer while
        threads still hold their parts)."""
        return self.foldable_dtype(kv.type) and not _reads(self.task_state.parallel_ast, kv.name, self.is_atomic_call)

    def foldable_dtype(self, dtype: T.DType) -> bool:
        """A dtype the block library folds, with a subgroup width known here that divides
        the block."""
        if self.kernel.autodiff is not None:  # a derivative differentiates the plain atomics
            return False
        self.width_consulted = True
        block_dim = self.task_state.block_dim
        return dtype.name in _FOLDABLE and self.subgroup_size is not None and not block_dim % self.subgroup_size

    def finish_reductions(self) -> tuple[list[ir.Stmt], list[ir.Stmt]]:
        """The accumulators' declarations (before the loop) and, after it, each block's fold
        and one atomic per block into the buffer."""
        prelude, epilogue = [], []
        if any(red.element for red in self.task_state.reductions.values()) and (
                self.task_state.shared or node_kinds(self.body.block) & _COLLECTIVES):
            # The loop does its own block work (a hand-written block reduction and one atomic
            # per block, Genesis' tiles): its updates of array elements stay atomics.
            for key, red in list(self.task_state.reductions.items()):
                if red.element:
                    self.body.block[:] = self.unfolded(self.body.block, red)
                    del self.task_state.reductions[key]
        with self.collecting(epilogue):
            for red in self.task_state.reductions.values():
                loc, dtype = red.loc, red.array.type.dtype
                prelude.append(ir.Declare(loc, red.acc, ir.Const(dtype, loc, T.identity(red.op, dtype))))
                # (imported here, where a reduction is folded: an import statement costs even when loaded)
                from ..lang import blocklib  # noqa: PLC0415 - lang/blocklib.py is kernel-language code that imports the package; loaded on first use

                total = self.inline_values(blocklib.reduce, loc, [
                    ir.LocalRef(dtype, loc, red.acc), CT(self.task_state.block_dim), CT(red.op), CT(dtype)])
                tid = ir.ThreadIndex(T.i32, loc, "thread_idx")
                first = ir.Compare(T.bool_, loc, "eq", tid, ir.Const(T.i32, loc, 0))
                total = self.to_expr(total, loc)
                if dtype.is_float and red.op in ("min", "max"):
                    # A block that met only NaNs (they lose to the +-inf it starts from) leaves the
                    # element as the atomics would: min(NaN, NaN) is NaN, not inf.
                    total = ir.LocalRef(dtype, loc, self.new_temp(f"{red.acc.name}_block", total, loc))
                    first = ir.Logical(T.bool_, loc, "and", first, ir.Compare(
                        T.bool_, loc, "ne", total, ir.Const(dtype, loc, T.identity(red.op, dtype))))
                atomic = ir.Atomic(dtype, loc, red.op, red.array, red.indices, total)
                self.emit(ir.If(loc, first, [ir.ExprStmt(loc, atomic)], []))
        self.task_state.reductions = {}
        return prelude, epilogue

    def unfolded(self, stmts: list[ir.Stmt], red: Reduction) -> list[ir.Stmt]:
        """``stmts`` with each update of ``red``'s accumulator an atomic on its element again."""
        out = []
        for st in stmts:
            if isinstance(st, ir.Assign) and st.var is red.acc:
                v = st.value  # acc + x, acc - x, or min / max(acc, x)
                op, x = (v.op, v.b) if isinstance(v, ir.BinOp) else (red.op, v.args[1])
                out.append(ir.ExprStmt(st.loc, self.make_atomic(op, red.array, red.indices, x, st.loc, "")))
                continue
            out.append(rebuild(st, lambda _, e: e, lambda _, b: self.unfolded(b, red)))
        return out

    # ------------------------------------------------------------------ random numbers

    def random_state(self, loc: ir.Loc) -> ir.Local:
        """This iteration's random stream (see lang/random.py): its state is set up once, at
        the top of the task's body (each iteration of a parallel loop, or the serial part),
        from the launch's seed, the task and the loop indices."""
        from ..lang import random as rnd  # noqa: PLC0415 - lang/random.py is kernel-language code that imports the package; loaded on first use

        if self.function_stack:  # a real function draws from its caller's stream, passed by reference
            fn = self.function_stack[-1]
            if fn.name not in self.function_rngs:
                self.function_rngs[fn.name] = ir.Local("rng", T.u32, loc)
                fn.inouts.append(self.function_rngs[fn.name])
            return self.function_rngs[fn.name]
        if self.task_state.rng is not None:
            return self.task_state.rng
        if self.seed_param is None:
            self.seed_param = ir.Param("qd_random_seed", T.u32, -1, loc, role="random_seed")
            self.hidden_params.append(self.seed_param)
        u32 = T.u32
        with self.collecting() as setup:
            key = self.to_expr(self.inline_values(rnd.pcg, loc, [ir.Const(u32, loc, len(self.tasks) + 1)]), loc)
            for var in self.task_state.loop_vars:
                index = ir.Cast(u32, loc, ir.LocalRef(var.type, loc, var))
                key = self.to_expr(self.inline_values(rnd.pcg, loc, [ir.BinOp(u32, loc, "bitxor", key, index)]), loc)
            seed = ir.ParamRef(u32, loc, self.seed_param)
            start = self.to_expr(self.inline_values(rnd.pcg, loc, [ir.BinOp(u32, loc, "bitxor", seed, key)]), loc)
            self.task_state.rng = ir.Local("rng", u32, loc)
            self.emit(ir.Declare(loc, self.task_state.rng, start))
        self.task_state.stmts[0:0] = setup
        return self.task_state.rng

    # ------------------------------------------------------------------ return

    def kernel_return(self, s: ast.Return) -> None:
        ret = self.return_type
        void = s.value is None or isinstance(s.value, ast.Constant) and s.value.value is None
        if ret is None and not void:
            raise self.error(s, "this kernel returns a value but its signature does not say which type",
                             hint="annotate the kernel, e.g. `def k(...) -> qd.f32:`")
        if ret is not None and void:
            raise self.error(s, f"the kernel is annotated to return {_type_name(ret)}: return a value")
        if self.body.in_parallel or self.body.loop_depth or self.body.scope is not self.kernel_scope:
            raise self.error(s, "Return inside non-static if/for is not supported: `return` can only end the kernel, "
                                "at its top level",
                             hint="assign the value to a kernel-scope variable and return it at the end")
        if void:  # `return` / `return None` ending a kernel that returns nothing
            self.ended = True
            return
        loc = self.loc(s)
        parts = _result_parts(ret)
        if parts == [((), ret)] and isinstance(ret, T.DType):
            self.result_param = self.store_result("result", ret, self.rvalue(s.value), s.value, loc)
            return
        value = self.expr(s.value)
        for path, t in parts:  # a vector, a struct, a tuple: a buffer per scalar or vector / matrix part
            param = self.store_result("_".join(("result",) + tuple(map(str, path))), t,
                                      self.result_part(value, path, ret, s.value), s.value, loc)
            if path:
                self.result_paths[param.name] = ".".join(map(str, path))
            self.result_param = self.result_param or param

    def result_part(self, value, path: tuple, ret, node: ast.AST):
        """The part of a returned value that ``path`` (member names, tuple positions) names."""
        for step in path:
            if isinstance(step, int):
                items = value.items if isinstance(value, TupleValue) else \
                    [CT(v) for v in value.value] if isinstance(value, CT) and isinstance(value.value, tuple) else None
                if items is None or len(items) != len(ret):
                    raise self.error(node, f"the kernel is annotated to return {len(ret)} values; return them as "
                                           "a tuple (`return a, b`)")
                value, ret = items[step], ret[step]
            else:
                if not isinstance(value, StructValue) or step not in value.members:
                    raise self.error(node, f"the kernel is annotated to return {_type_name(ret)}; "
                                           "this value is not one")
                if value.type is not None and not _same_struct(value.type, ret):  # (members are not converted)
                    raise self.error(node, f"the kernel is annotated to return a struct {_members(ret)}; this "
                                           f"value is another struct type, {_members(value.type)}",
                                     hint="return a value of the annotated struct type (its members are not "
                                          "converted)")
                value, ret = value.members[step], ret.members[step]
        return value

    def store_result(self, base: str, t, value, node: ast.AST, loc: ir.Loc) -> ir.Param:
        """``value`` into a result buffer of its own: a scalar (a bool as a byte, as a qd.u1
        field keeps it) or a vector / matrix, its components in the buffer's element shape."""
        t = T.python_type(t) or t
        if isinstance(t, MatrixType):
            dtype = self.as_dtype(t.dtype, node) or T.defaults().fp
            value = self.as_matrix(value, node)
            if isinstance(value, MatrixValue) and value.shape != t.shape or \
                    isinstance(value, (StructValue, TupleValue)):
                raise self.error(node, f"the kernel is annotated to return {t!r} here; this value has another shape")
            if not isinstance(value, MatrixValue):
                value = MatrixValue(t.shape, [self.once(self.to_expr(value, node), node, "tmp")] * (t.n * t.m))
            param = self.hidden_param(base, dtype, loc, "result", t.shape)
            comps = [(k,) for k in range(t.n)] if len(t.shape) == 1 else \
                [(i, j) for i in range(t.n) for j in range(t.m)]
            for comp, e in zip(comps, value.items, strict=False):
                self.emit(ir.Store(loc, param, [ir.Const(T.i32, loc, c) for c in comp], self.coerce(e, dtype, node)))
            return param
        if isinstance(value, (MatrixValue, StructValue, TupleValue)):
            raise self.error(node, f"the kernel is annotated to return {t.name} here; this value is not a scalar")
        value = self.coerce(self.to_expr(value, node), t, node)
        boolean = t is T.bool_  # a byte the host reads as a bool
        if boolean:
            t, value = T.u8, ir.Cast(T.u8, loc, value)
        param = self.hidden_param(base, t, loc, "result", bool_elements=boolean)
        self.emit(ir.Store(loc, param, [], value))
        return param

    def return_annotation(self, fdef: ast.FunctionDef, annotations: dict):
        """The kernel's return type: a dtype, a vector / matrix or struct type, a tuple of them
        (``-> (qd.f32, s0)``, ``-> tuple[qd.f32, s0]``), or None (no annotation, ``-> None``)."""
        if fdef.returns is None or "return" not in annotations or annotations["return"] is None:
            return None
        ann = result_type(annotations["return"])
        if ann is None:
            raise self.error(fdef.returns, f"a kernel returns a scalar, a vector, a matrix, a struct or a tuple of "
                                           f"them, not {annotations['return']!r}",
                             hint="annotate it with a type such as qd.f32, qd.i32, int, float or qd.math.vec3")
        return ann


def result_type(ann):
    """A kernel's return annotation as the frontend reads it (tuples spelled ``(a, b)``,
    ``tuple[a, b]`` or ``typing.Tuple[a, b]`` as Python tuples of types), or None."""
    if getattr(ann, "__origin__", None) is tuple:
        ann = ann.__args__
    if isinstance(ann, (tuple, list)):
        items = tuple(result_type(t) for t in ann)
        return items if items and None not in items and not any(isinstance(t, tuple) for t in items) else None
    t = T.python_type(ann) or ann
    return t if isinstance(t, (T.DType, MatrixType, StructType)) else None


def _result_parts(t, path: tuple = ()) -> list[tuple[tuple, object]]:
    """(path, type) of each buffer a kernel's result comes back in: a scalar or a vector /
    matrix each; a struct or a tuple by its members, in order."""
    if isinstance(t, tuple):
        return [p for k, item in enumerate(t) for p in _result_parts(item, path + (k,))]
    members = getattr(t, "members", None)
    if isinstance(members, dict):
        return [p for name, mt in members.items() for p in _result_parts(T.python_type(mt) or mt, path + (name,))]
    return [(path, t)]


def _same_struct(a: StructType, b: StructType) -> bool:
    """Whether two struct types have the same members, of the same types, in the same order
    (two ``qd.types.struct(...)`` calls with the same members are the same type)."""
    if a is b:
        return True
    if list(a.members) != list(b.members):
        return False
    for x, y in zip(a.members.values(), b.members.values(), strict=True):
        x, y = T.python_type(x) or x, T.python_type(y) or y
        if isinstance(x, StructType) and isinstance(y, StructType):
            if not _same_struct(x, y):
                return False
        elif x != y:
            return False
    return True


def _members(t: StructType) -> str:
    """A struct type's members as a user reads them: ``(center: vec3 of f32, radius: f32)``."""
    def one(m) -> str:
        m = T.python_type(m) or m
        if isinstance(m, StructType):
            return f"struct {_members(m)}"
        if isinstance(m, MatrixType):
            dtype = T.python_type(m.dtype) or m.dtype
            return f"{'vector' if len(m.shape) == 1 else 'matrix'} {'x'.join(map(str, m.shape))} of " \
                   f"{getattr(dtype, 'name', dtype)}"
        return getattr(m, "name", repr(m))
    return "(" + ", ".join(f"{k}: {one(m)}" for k, m in t.members.items()) + ")"


def _type_name(t) -> str:
    return t.name if isinstance(t, T.DType) else repr(t)


def _touches(stmts: list[ir.Stmt], param: ir.Param) -> bool:
    return any(isinstance(st, ir.Store) and st.array is param for st in all_stmts(stmts)) or \
        any(isinstance(e, (ir.Load, ir.Atomic)) and e.array is param for e in all_exprs(stmts))


def _reads(body: list[ast.stmt] | None, name: str, is_atomic_call: Callable[[ast.expr], bool]) -> bool:
    """Whether ``name`` is read in ``body`` other than as the target of an update
    (``name += v``, ``qd.atomic_*(name, v)``)."""
    skip = set()
    for st in body or []:
        for n in ast_nodes(st):
            if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Name) and n.args[0].id == name \
                    and is_atomic_call(n.func):
                skip.add(id(n.args[0]))
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                # `n = max(n, v)`, `n = n + v`: the update's own operand
                operands = n.value.args if isinstance(n.value, ast.Call) else \
                    [n.value.left, n.value.right] if isinstance(n.value, ast.BinOp) else []
                skip |= {id(a) for a in operands if isinstance(a, ast.Name) and a.id == n.targets[0].id}
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in skip
               for st in body or [] for n in ast_nodes(st))


def _directly_in(body: list[ast.stmt], loop: ast.For) -> bool:
    """Whether ``loop`` is a statement of ``body`` or of a ``with`` / ``if`` in it: no loop
    around it runs it twice."""
    for st in body:
        if st is loop:
            return True
        if isinstance(st, (ast.If, ast.With)) and (_directly_in(st.body, loop) or
                                                  _directly_in(getattr(st, "orelse", []), loop)):
            return True
    return False


def _index_key(e: ir.Expr):
    """An index's identity for finding the same element again: a constant by value (another
    expression by identity: updates spelled twice fold apart, each with its own atomic)."""
    return ("const", e.value) if isinstance(e, ir.Const) else ("expr", id(e))

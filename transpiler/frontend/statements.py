"""Lowering of statements: assignment, augmented assignment, if / while / for, static loops,
break / continue / return."""
from __future__ import annotations

import ast
from collections.abc import Callable
from functools import lru_cache

from .. import lang
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.walk import iter_expr
from ..passes.ranges import loop_bounds, value_range
from .common import (
    ATOMIC_AUGASSIGN, BINOPS, SYMBOL, UNSUPPORTED_STMT, ast_nodes, has_side_effects,
    is_loop_invariant, is_py_scalar, nonneg,
)
from .values import (
    CT, ArrayHandle, ArraySlice, KernelVar, MatrixValue, MatrixVar, OuterProduct, ShapeHandle, StructValue, StructVar,
    StaticIndex, TupleValue, component_locals,
)
from ..lang.matrix import MatrixType
from .scopes import Scope
from .matrices import component_suffixes, describe



@lru_cache(maxsize=4096)  # (parsed trees live as long as the process and are never changed)
def loop_jumps(loop: ast.For) -> frozenset[str]:
    """Which of break / continue a loop's body uses for itself (not those of loops inside it)."""
    found: set[str] = set()
    stack = list(loop.body)  # (a stack, not a closure that calls itself: that is a reference cycle per call)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Break):
            found.add("break")
        elif isinstance(node, ast.Continue):
            found.add("continue")
        elif not isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return frozenset(found)


class StaticJump(Exception):
    """``break`` / ``continue`` reached while unrolling a ``qd.static`` loop in the kernel's body
    (under ``if qd.static(...)``): the unrolling skips to the next item, or stops."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


class StatementLowering:
    """Statement methods of KernelLowering (see lower.py for the state they use)."""

    _stmt_methods: dict[type, Callable | None] = {}  # node class -> stmt_<name>, per lowering class

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._stmt_methods = {}

    def stmt(self, s: ast.stmt) -> None:
        try:
            method = self._stmt_methods[type(s)]
        except KeyError:
            method = self._stmt_methods[type(s)] = getattr(type(self), "stmt_" + type(s).__name__, None)
        if method is None:
            if isinstance(s, ast.With):  # the context it names may say more (qd.checkpoint: not supported)
                for item in s.items:
                    self.expr(item.context_expr.func if isinstance(item.context_expr, ast.Call) else
                              item.context_expr)
                hint = "with qd.stream_parallel() and the qd.graph contexts are accepted at the top level of a kernel"
                raise self.error(s, "with statements are not supported here", hint=hint)
            what = UNSUPPORTED_STMT.get(type(s), type(s).__name__)
            raise self.error(s, f"{what} statements are not supported in kernels")
        method(self, s)

    def stmt_Pass(self, s: ast.Pass) -> None:
        pass

    def stmt_Expr(self, s: ast.Expr) -> None:
        if isinstance(s.value, ast.Constant) and (isinstance(s.value.value, str) or s.value.value is Ellipsis):
            return  # a docstring, a string used as a comment, or `...` for an empty body
        if isinstance(s.value, ast.Call) and self.is_call_to(s.value, "loop_config"):
            self.loop_config(s.value, top_level=False)  # checked; before an inner loop it changes nothing
            return
        self.body.statement_call = s.value if isinstance(s.value, ast.Call) else None
        v = self.expr(s.value)
        if isinstance(v, ir.Expr) and has_side_effects(v):
            self.emit(ir.ExprStmt(self.loc(s), v))

    def stmt_Assign(self, s: ast.Assign) -> None:
        if self.reduction_by_assignment(s):
            return
        if self.is_static_call(s.value) and all(isinstance(t, ast.Name) for t in s.targets):
            value = self.expr(s.value)  # `n = qd.static(...)` names a translation-time value (or a field)
            for t in s.targets:
                self.body.scope.names[t.id] = value
            return
        value = self.expr(s.value)
        if len(s.targets) > 1:
            # `a = b = a + b`: the value is computed once, before the first target changes
            # what it reads (and a side effect happens once)
            if isinstance(value, ir.Expr) and not isinstance(value, ir.Const):
                tmp = self.new_temp("tmp", value, s)
                value = ir.LocalRef(tmp.type, tmp.loc, tmp)
            elif isinstance(value, MatrixValue):
                value = self.materialize(value, s, "tmp")
        for target in s.targets:
            self.assign(target, value, s)

    def stmt_AnnAssign(self, s: ast.AnnAssign) -> None:
        if not isinstance(s.target, ast.Name):
            raise self.error(s.target, "only a plain name can carry a type annotation")
        dtype = self.static_value(s.annotation, what="a type annotation")
        dtype = T.python_type(dtype) or dtype
        if isinstance(dtype, MatrixType):
            self.declare_annotated_matrix(s, dtype)
            return
        if not isinstance(dtype, T.DType):
            raise self.error(s.annotation, f"`{ast.unparse(s.annotation)}` is not a scalar type",
                             hint="annotate a local with a scalar type such as qd.f32")
        name = s.target.id
        bound, _ = self.body.scope.lookup(name)
        if name in self.body.scope.names and isinstance(bound, ir.Local):
            raise self.error(s.target, f"`{name}` is already declared in this block")
        var = ir.Local(name, dtype, self.loc(s.target))
        init = None
        if s.value is not None:
            init = self.coerce(self.rvalue(s.value), dtype, s.value, explicit=True)
        self.body.scope.names[name] = var
        self.emit(ir.Declare(self.loc(s), var, init))

    def declare_annotated_matrix(self, s: ast.AnnAssign, mt: MatrixType) -> None:
        """``v: qd.math.vec3 = ...`` (zero without a value)."""
        dtype = self.as_dtype(mt.dtype, s.annotation) or T.defaults().fp
        size = mt.n * mt.m
        if s.value is None:
            value = self.make_matrix(mt.shape, [CT(0)] * size, s, dtype)
        else:
            value = self.expr(s.value)
            if not isinstance(value, MatrixValue):
                value = self.make_matrix(mt.shape, [value] * size, s, dtype)
            if value.shape != mt.shape:
                raise self.error(s.value, f"`{s.target.id}` is annotated {mt!r} but is given a value of shape "
                                          f"{value.shape}")
            value = self.make_matrix(mt.shape, value.items, s, dtype)
        self.body.scope.names[s.target.id] = self.declare_matrix(s.target.id, value, s)

    def assign(self, target: ast.expr, value, stmt: ast.stmt) -> None:
        if self.assign_tile(target, value, stmt):
            return
        if isinstance(target, ast.Name):
            if target.id == "_":  # a throwaway name: each assignment a new variable, of the value's own type
                self.body.scope.names.pop("_", None)
            self.assign_name(target, value, stmt)
        elif isinstance(target, ast.Attribute) and (member := self.resolve_var(target)) is not None:
            self.assign_var(*member, value, target, stmt)
        elif isinstance(target, (ast.Subscript, ast.Attribute)) and self.component_target(target) is not None:
            self.assign_component(target, value, stmt)
        elif (sp := self.struct_places(target)) is not None:
            self.store_struct_place(*sp, value, target, stmt)
        elif (places := self.element_places(target)) is not None:
            self.store_places(*places, value, target, stmt)
        elif isinstance(target, ast.Subscript):
            array, indices = self.lvalue(target)
            elem = array.type.dtype
            v = self.coerce(self.to_expr(value, target), elem, stmt.value if hasattr(stmt, "value") else stmt)
            self.emit(ir.Store(self.loc(stmt), array, indices, v))
        elif isinstance(target, ast.Tuple):
            items = self.unpack(value, len(target.elts), stmt)
            # Every right-hand side is evaluated before any target is assigned (`a, b = b, a`,
            # `u, v = v, u` of vectors, `x[i], x[j] = x[j], x[i]`): through temporaries, unless
            # every target is a name and no right-hand side reads what one of them holds.
            written: set = set()
            for t in target.elts:
                bound = self.body.scope.lookup(t.id)[0] if isinstance(t, ast.Name) else None
                written.update(component_locals(bound))
                if isinstance(bound, KernelVar):
                    written.add(bound.param)
            independent = all(isinstance(t, ast.Name) for t in target.elts) and not any(
                (n.var if isinstance(n, ir.LocalRef) else n.array if isinstance(n, ir.Load) else None) in written
                for item in items for e in _scalars(item) for n in iter_expr(e))
            temps = items if independent else [self.frozen(item, stmt) for item in items]
            for t, item in zip(target.elts, temps, strict=False):
                self.assign(t, item, stmt)
        elif isinstance(target, ast.Attribute):
            raise self.error(target, "assigning to an attribute is not supported in kernels")
        else:
            raise self.error(target, "cannot assign to this expression")

    def frozen(self, value, stmt: ast.stmt):
        """``value`` with each run-time scalar of it copied into a temporary (constants and
        parameters, which nothing assigns, as they are)."""
        if isinstance(value, MatrixValue):
            return MatrixValue(value.shape, [self.frozen(e, stmt) for e in value.items])
        if isinstance(value, StructValue):
            return StructValue(value.type, {k: self.frozen(v, stmt) for k, v in value.members.items()})
        if isinstance(value, TupleValue):
            return TupleValue([self.frozen(v, stmt) for v in value.items])
        if isinstance(value, ir.Expr) and not isinstance(value, (ir.Const, ir.ParamRef, ir.Shape)):
            tmp = self.new_temp("tmp", value, stmt)
            return ir.LocalRef(tmp.type, tmp.loc, tmp)
        return value

    def unpack(self, value, n: int, node: ast.AST) -> list:
        if isinstance(value, TupleValue):
            items = value.items
        elif isinstance(value, MatrixValue):
            items = list(value.items) if value.is_vector else [
                MatrixValue((value.shape[1],), value.items[r * value.shape[1]:(r + 1) * value.shape[1]])
                for r in range(value.shape[0])]
        elif isinstance(value, CT) and isinstance(value.value, (tuple, list)):
            items = [CT(v) for v in value.value]
        elif isinstance(value, ShapeHandle):  # n, m = a.shape
            items = [ir.Shape(T.i32, self.loc(node), value.array, d) for d in range(value.array.type.ndim)]
        else:
            raise self.error(node, "cannot unpack a single value into several names")
        if len(items) != n:
            raise self.error(node, f"cannot unpack {len(items)} values into {n} names")
        return items

    def assign_name(self, target: ast.Name, value, stmt: ast.stmt) -> None:
        name = target.id
        bound, scope = self.body.scope.lookup(name)
        if isinstance(value, (ArraySlice, OuterProduct)):
            self.bind_slice(target, value, bound)
            return
        if isinstance(bound, ir.Local) and not self.body.in_parallel:
            # A top-level local an earlier serial task declared: this serial task has no
            # declaration of it, so it lives in a scratch buffer from here on, as for a read
            # (`r = x[0]`, a parallel loop, then `r = 0`: the fuzzer's seed 1733).
            bound = self.shared_for_read(bound, scope) or bound
        if isinstance(bound, ir.Local) and self.body.in_parallel and scope is self.kernel_scope and not bound.loop_var:
            bound = self.shared_for_update(bound, scope)  # every thread stores into the variable's buffer
        if isinstance(bound, KernelVar):
            v = self.coerce(self.to_expr(value, target), bound.type, stmt)
            if self.body.in_parallel:
                self.warn_shared_store(v, target, name)
            self.emit(ir.Store(self.loc(stmt), bound.param, [], v))
            return
        if isinstance(bound, (MatrixVar, StructVar)):
            self.assign_var(bound, scope, value, target, stmt)
            return
        if isinstance(bound, ir.Local):
            self.assign_local_name(bound, scope, value, target, stmt)
            return
        self.bind_name(bound, scope, value, target, stmt)

    def assign_local_name(self, bound: ir.Local, scope, value, target: ast.Name, stmt: ast.stmt) -> None:
        """``x = value`` where ``x`` is a scalar local already."""
        name = target.id
        if isinstance(value, StructValue):
            raise self.error(target, f"`{name}` is a {bound.type.name} scalar (from its first assignment at line "
                                     f"{bound.loc.line}); it cannot hold a struct", hint="use a new name")
        if isinstance(value, MatrixValue):
            raise self.error(target, f"`{name}` is a {bound.type.name} scalar (from its first assignment at line "
                                     f"{bound.loc.line}); it cannot hold {describe(value.shape)}",
                             hint="use a new name for the vector")
        if bound.loop_var and scope is self.body.scope:
            # `i = qd.cast(i, qd.i32)` in the loop's own body: a new local from here to the end of
            # this iteration, as in Python (the next iteration takes the range's next value)
            v = self.to_expr(value, target)
            var = ir.Local(name, v.type, self.loc(target))
            self.emit(ir.Declare(self.loc(stmt), var, v))
            scope.names[name] = var
            return
        self.check_writable(bound, scope, target)
        v = self.coerce(self.to_expr(value, target), bound.type, stmt, assigning=bound)
        self.emit(ir.Assign(self.loc(stmt), bound, v))

    def bind_name(self, bound, scope, value, target: ast.Name, stmt: ast.stmt) -> None:
        """``x = value`` where ``x`` names no variable yet (or a parameter, an alias): a new
        variable, or an alias of an array or a translation-time object."""
        name = target.id
        if isinstance(value, MatrixValue):
            self.body.scope.names[name] = self.declare_matrix(name, value, target)
            return
        if isinstance(value, TupleValue):  # `w = [a, b, c]`: each item computed once, read by index
            self.body.scope.names[name] = self.freeze_sequence(name, value, target)
            return
        if isinstance(value, StructValue):
            self.body.scope.names[name] = self.declare_struct(name, value, target)
            return
        if isinstance(value, CT) and isinstance(value.value, str):
            raise self.error(stmt.value if hasattr(stmt, "value") else target, "strings are not supported in kernels")
        if isinstance(value, ArrayHandle) and isinstance(value.array, ir.SharedArray) and not value.array.name:
            value.array.name = name  # a SharedArray takes the name it is first bound to
        if isinstance(value, (ArrayHandle, ShapeHandle)) or (
                isinstance(value, CT) and not is_py_scalar(value.value)):
            self.body.scope.names[name] = value  # an alias of an array or a translation-time object
            return
        if isinstance(bound, (ir.Param, ArrayHandle)) and scope is not None and scope.parent is None:
            raise self.error(target, f"cannot assign to parameter `{name}`",
                             hint=f"copy it into a local first: `{name}_local = {name}`")
        v = self.to_expr(value, target)
        var = ir.Local(name, v.type, self.loc(target))
        if v.type.is_int and self.frame.stores.get(name, 0) == 1 and name not in self.ref_names():
            # Its one value, for good (a call that takes it by reference may change it)
            var.nonneg, var.bounds = nonneg(v), value_range(v)
        self.body.scope.names[name] = var
        self.emit(ir.Declare(self.loc(stmt), var, v))

    def freeze_sequence(self, name: str, value: TupleValue, node) -> TupleValue:
        items = []
        for k, item in enumerate(value.items):
            if isinstance(item, MatrixValue):
                item = self.read_matrix(self.declare_matrix(f"{name}_{k}", item, node), None, self.loc(node))
            elif isinstance(item, ir.Expr) and not isinstance(item, (ir.Const, ir.LocalRef, ir.ParamRef)):
                var = ir.Local(f"{name}_{k}", item.type, self.loc(node))
                self.emit(ir.Declare(self.loc(node), var, item))
                item = ir.LocalRef(var.type, self.loc(node), var)
            items.append(item)
        return TupleValue(items)

    def require_parallel(self, node: ast.AST, what: str) -> None:
        if self.function_stack:
            raise self.error(node, f"{what} cannot be used in @qd.real_func `{self.function_stack[-1].name}`: a real "
                                   "function runs on its calling thread alone, outside the block's collective context",
                             hint="make it a @qd.func (inlined into the kernel)")
        if not self.body.in_parallel:
            raise self.error(node, f"{what} works on the threads of a block: call it inside a parallel "
                                   "(top-level) loop")

    def require_subgroup_size(self, node: ast.AST) -> int:
        if self.subgroup_size is None:
            raise self.error(node, "the subgroup size of this target is not known at translation time",
                             hint="pass subgroup_size=N to qd.translate (the device's size)")
        self.subgroup_size_used = True
        return self.subgroup_size

    def check_writable(self, var: ir.Local, scope: Scope, node: ast.AST, shown: str | None = None) -> None:
        if var.loop_var:
            raise self.error(node, f"cannot assign to the loop variable `{var.name}`",
                             hint="assign to a new local instead")
        if self.body.in_parallel:
            s = self.body.scope
            while s is not None and s is not scope:
                if s.task_root:
                    raise self.race(node, shown or var.name)
                s = s.parent

    def warn_shared_store(self, value: ir.Expr, node: ast.AST, name: str) -> None:
        """A parallel loop's store into a kernel-scope variable: Quadrants' shared value, which
        every thread that stores overwrites; a race unless the value is the same for all."""
        if not self.invariant(value):
            self.warn(node, "shared-store", f"every thread of this parallel loop stores into `{name}`, a variable "
                                            "defined outside it: after the loop it holds one thread's value (a race, "
                                            "as in Quadrants)",
                      hint=f"update it with `{name} += v` (a reduction), or qd.atomic_min({name}, v) / "
                           f"qd.atomic_max({name}, v)")

    def race(self, node: ast.AST, name: str):
        return self.error(node, f"cannot assign to `{name}` inside a parallel loop: it is defined outside the loop, "
                                "so every thread would overwrite it", hint=f"update it with `{name} += v` (a "
                                f"reduction), or qd.atomic_min({name}, v) / qd.atomic_max({name}, v)")

    def new_temp(self, base: str, value: ir.Expr, node: ast.AST) -> ir.Local:
        var = ir.Local(base, value.type, self.loc(node))
        self.emit(ir.Declare(self.loc(node), var, value))
        return var

    def stmt_AugAssign(self, s: ast.AugAssign) -> None:
        if isinstance(s.op, ast.MatMult):
            raise self.error(s, "`@=` is not supported; write `m = m @ x`")
        if self.update_tile(s) or self.add_entry(s):
            return
        op = BINOPS[type(s.op)]
        if isinstance(s.target, ast.Name):
            self.update_name(s, op)
            return
        if isinstance(s.target, ast.Attribute) and (member := self.resolve_var(s.target)) is not None \
                and not isinstance(member[0], StructVar):
            self.assign_var(*member, self.binop(op, self.expr(s.target), self.expr(s.value), s), s.target, s)
            return
        if isinstance(s.target, (ast.Subscript, ast.Attribute)) and (found := self.component_target(s.target)):
            places = self.named_components(s.target, found[0])
            if places is not None:  # `v[0] += x`: each component as a local (atomic where tasks share it)
                value = self.expr(s.value) if len(places) == 1 else self.as_matrix(self.expr(s.value), s.value)
                if isinstance(value, MatrixValue) and len(value.items) != len(places):
                    raise self.error(s, f"{len(places)} components cannot be updated by {len(value.items)}")
                parts = value.items if isinstance(value, MatrixValue) else [value] * len(places)
                parts = self.copied_where_read_early(places, parts, s, [p.name for p in places])
                for local, part in zip(places, parts, strict=False):
                    self.update_local(local, found[1], op, part, s, s.target)
                return
            self.assign_component(s.target, self.binop(op, self.expr(s.target), self.expr(s.value), s), s)
            return
        sp = self.struct_places(s.target)
        if sp is not None:
            self.store_struct_place(*sp, self.expr(s.value), s.target, s, op)
            return
        places = self.element_places(s.target)
        if places is not None:
            self.update_places(*places, op, self.expr(s.value), s.target, s)
            return
        if isinstance(s.target, ast.Subscript):
            array, indices = self.lvalue(s.target)
            elem = array.type.dtype
            if op in ATOMIC_AUGASSIGN:
                self.update_element(ATOMIC_AUGASSIGN[op], array, indices, self.rvalue(s.value), s.target, s,
                                    f"`{SYMBOL[op]}=`")
                return
            cur = ir.Load(elem, self.loc(s.target), array, indices)
            result = self.binop(op, cur, self.expr(s.value), s)
            self.emit(ir.Store(self.loc(s), array, indices, self.coerce(result, elem, s)))
            return
        raise self.error(s.target, "cannot update this expression")

    def update_name(self, s: ast.AugAssign, op: str) -> None:
        """``x op= value``, ``v op= value`` on a variable."""
        bound, scope = self.body.scope.lookup(s.target.id)
        if isinstance(bound, MatrixVar):
            value = self.as_matrix(self.expr(s.value), s.value)  # `v += [1, 0]`
            if isinstance(value, MatrixValue) and value.shape != bound.shape:
                raise self.error(s, f"shape mismatch: {describe(bound.shape)} and {describe(value.shape)}")

            parts = value.items if isinstance(value, MatrixValue) else [value] * len(bound.locals)
            # `v += v.yx`: a component that reads one updated before it reads the old value
            parts = self.copied_where_read_early(bound.locals, parts, s, component_suffixes(bound.shape))
            for local, part in zip(bound.locals, parts, strict=False):
                self.update_local(local, scope, op, part, s, s.target)
            return
        if isinstance(bound, ir.Local) or self.shared_for_read(bound, scope) is not None:
            self.update_local(bound, scope, op, None, s, s.target)
            return
        if bound is None and self.global_lookup(s.target.id) is None:
            raise self.error(s.target, f"undefined name `{s.target.id}`")
        raise self.error(s.target, f"cannot update `{s.target.id}`: it is not a local variable")

    def update_local(self, bound, scope, op: str, value, s: ast.AugAssign, target: ast.Name) -> None:
        """``x op= value`` on a local (or one component of a vector): a reduction or an
        atomic when it is a kernel-scope variable updated by a parallel loop. ``value``:
        already lowered, or None to lower ``s.value`` here."""
        shared = self.shared_for_update(bound, scope) or self.shared_for_read(bound, scope)
        if shared is not None:
            value = self.rvalue(s.value) if value is None else self.to_expr(value, s.value)
            if op in ATOMIC_AUGASSIGN or op == "mul":
                self.update_var(shared, ATOMIC_AUGASSIGN.get(op, op), value, s, f"`{SYMBOL[op]}=`",
                                result_used=False)
            elif self.body.in_parallel:
                raise self.race(target, bound.name)
            else:
                cur = self.load_var(shared, self.loc(target))
                result = self.coerce(self.binop(op, cur, value, s), shared.type, s)
                self.emit(ir.Store(self.loc(s), shared.param, [], result))
            return
        self.check_writable(bound, scope, target)
        cur = ir.LocalRef(bound.type, self.loc(target), bound)
        result = self.binop(op, cur, self.expr(s.value) if value is None else value, s)
        self.emit(ir.Assign(self.loc(s), bound, self.coerce(result, bound.type, s, assigning=bound)))

    def stmt_If(self, s: ast.If) -> None:
        if self.is_static_call(s.test):
            chosen = s.body if self.static_value(s.test) else s.orelse
            for st in self.lower_block(chosen):
                self.emit(st)
            return
        test = self.expr(s.test)
        known = test.value if isinstance(test, CT) and is_py_scalar(test.value) else \
            test.value if isinstance(test, ir.Const) else None
        if known is not None:
            # A condition known at translation time (a module constant: `if use_fixed_range:`)
            # runs one branch, as Python would: the other is never lowered, so what it could
            # not do (assign a kernel variable in a parallel loop) is no error.
            for st in self.lower_block(s.body if known else s.orelse):
                self.emit(st)
            return
        cond = self.condition_of(test, s.test)
        then = self.lower_block(s.body)
        orelse = self.lower_block(s.orelse)
        self.emit(ir.If(self.loc(s), cond, then, orelse))

    def stmt_While(self, s: ast.While) -> None:
        if s.orelse:
            raise self.error(s, "while/else is not supported in kernels")
        with self.collecting() as pre:
            cond = self.condition(s.test)
        with self.loop_body():
            body = self.lower_block(s.body)
        loc = self.loc(s)
        if pre:  # the condition needs statements: evaluate them on every iteration
            exit_ = ir.If(loc, ir.Unary(T.bool_, loc, "not", cond), [ir.Break(loc)], [])
            self.emit(ir.While(loc, ir.Const(T.bool_, loc, True), pre + [exit_] + body))
        else:
            self.emit(ir.While(loc, cond, body))

    def stmt_For(self, s: ast.For) -> None:
        if s.orelse:
            raise self.error(s, "for/else is not supported in kernels")
        s = self.plain_loop(s)
        if self.is_static_call(s.iter):
            self.static_for(s, top_level=False)
            return
        it = s.iter
        f = self.expr(it.func) if isinstance(it, ast.Call) else None
        fv = f.value if isinstance(f, CT) else None
        if fv is range:
            self.serial_range(s)
            return
        # qd.ndrange, an ndarray, qd.grouped: nested serial loops, outermost first.
        ranges, grouped = self.loop_ranges(it)
        guard = self.take_guard()
        with self.scoped():
            bound = self.bind_loop_targets(s.target, ranges, grouped)
            loop_vars, ranges = self.loop_order(it, bound, ranges)
            self.nested_ranges(s, list(zip(loop_vars, ranges, strict=False)), (guard, bound))

    def nested_ranges(self, s: ast.For, dims, guard: tuple = (None, [])) -> None:
        (var, (begin, end)), rest = dims[0], dims[1:]
        loc = self.loc(s)
        with self.scoped(), self.collecting() as body, self.loop_body():
            if rest:
                self.nested_ranges(s, rest, guard)
            else:
                self.struct_for_guard(*guard, s)
                for st in s.body:
                    self.stmt(st)
        self.emit(ir.For(loc, var, begin, end, ir.Const(T.i32, loc, 1), 1, body))

    def serial_range(self, s: ast.For) -> None:
        it = s.iter
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(it, "range() takes 1 to 3 positional arguments")
        vals = [self.expr(a) for a in it.args]
        typed = [self.to_expr(v, a) for v, a in zip(vals, it.args, strict=False)]
        for e, a in zip(typed, it.args, strict=False):
            if not e.type.is_int:
                raise self.error(a, f"range() needs integer arguments, not {e.type.name}")
        loc = self.loc(s)
        t = T.i32
        for e, v in zip(typed, vals, strict=False):
            if not isinstance(v, CT):
                t = T.promote(t, e.type)
        typed = [self.coerce(e, t, a) for e, a in zip(typed, it.args, strict=False)]
        zero, one = ir.Const(t, loc, 0), ir.Const(t, loc, 1)
        if len(typed) == 1:
            start, stop, step = zero, typed[0], one
        elif len(typed) == 2:
            start, stop, step = typed[0], typed[1], one
        else:
            start, stop, step = typed
        sign = 0
        if len(vals) == 3 and isinstance(vals[2], CT):
            # The literal's sign, read before the step takes the bounds' type: range(n_u32, 0, -1)
            # steps by 0xFFFFFFFF, which wraps to n - 1, but counts down.
            if vals[2].value == 0:
                raise self.error(it.args[2], "range() step must not be zero")
            sign = 1 if vals[2].value > 0 else -1
        elif isinstance(step, ir.Const):
            if step.value == 0:
                raise self.error(it.args[2], "range() step must not be zero")
            sign = 1 if step.value > 0 else -1
        # Python evaluates the bounds once; a bound the body may change is copied first.
        changed = {n.id for st in s.body for n in ast_nodes(st) if isinstance(n, ast.Name)
                   and isinstance(n.ctx, ast.Store)}
        if not is_loop_invariant(stop, changed):
            stop = self.hoist(stop, "end", s)
        if not is_loop_invariant(step, changed):
            step = self.hoist(step, "step", s)
        if not isinstance(s.target, ast.Name):
            raise self.error(s.target, "a loop variable must be a plain name")
        var = ir.Local(s.target.id, t, self.loc(s.target), loop_var=True, bounds=loop_bounds(start, stop, sign, t))
        var.nonneg = nonneg(start) and sign > 0
        with self.scoped() as scope, self.collecting() as body, self.loop_body():
            scope.names[s.target.id] = var
            for st in s.body:
                self.stmt(st)
        self.emit(ir.For(loc, var, start, stop, step, sign, body))

    def hoist(self, e: ir.Expr, base: str, node: ast.AST) -> ir.Expr:
        var = self.new_temp(base, e, node)
        return ir.LocalRef(e.type, e.loc, var)

    def static_for(self, s: ast.For, top_level: bool) -> None:
        seq = self.static_value(s.iter)
        try:
            items = list(seq)
        except TypeError:
            raise self.error(s.iter, f"qd.static(...) in a for loop must be iterable, got {type(seq).__name__}") \
                from None
        if top_level:
            self.static_top_loops += 1
            self.static_nesting += 1
            try:
                for item in items:
                    self.bind_static_target(s.target, item)
                    try:
                        self.top_level(s.body)
                    except StaticJump as jump:  # `if qd.static(...): break / continue` in the kernel's body
                        if jump.kind == "break":
                            break
                    if self.result_param is not None or self.ended:  # a `return` in this copy
                        break
            finally:
                self.static_top_loops -= 1
                self.static_nesting -= 1
            self.returned_statically = self.result_param is not None or self.ended
            return
        jumps = loop_jumps(s)
        if not jumps:
            for item in items:
                self.static_copy(s, item)
            return
        # `continue` goes to the next copy: each copy is a loop of one iteration. `break` ends
        # the unrolling: the copies sit in one such loop, which a break leaves (through a flag
        # when it is inside a copy's own loop).
        loc = self.loc(s)
        flag = None
        if jumps == {"break", "continue"}:
            flag = ir.Local("broke", T.bool_, loc)
            self.emit(ir.Declare(loc, flag, ir.Const(T.bool_, loc, False)))
        outer = self.static_jump_loop(s, lambda: self.static_copies(s, items, "continue" in jumps, flag),
                                      "break" in jumps, None)
        if outer is not None:
            self.emit(outer)

    def static_copies(self, s: ast.For, items: list, each_in_loop: bool, flag: ir.Local | None) -> None:
        loc = self.loc(s)
        for k, item in enumerate(items):
            if not each_in_loop:
                self.static_copy(s, item)
                continue
            self.emit(self.static_jump_loop(s, lambda item=item: self.static_copy(s, item), True, flag))
            if flag is not None and k + 1 < len(items):
                self.emit(ir.If(loc, ir.LocalRef(T.bool_, loc, flag), [ir.Break(loc)], []))

    def static_jump_loop(self, s: ast.For, lower_body, wanted: bool, flag: ir.Local | None) -> ir.For | None:
        """``lower_body`` inside ``for (once = 0; once < 1; ++once)``, where ``break`` and
        ``continue`` of the static loop land (``flag``: a break sets it for the loop outside)."""
        if not wanted:
            lower_body()
            return None
        loc = self.loc(s)
        once = ir.Local("once", T.i32, loc, loop_var=True)
        with self.collecting() as body, self.loop_body(), self.static_jump_target(flag):
            lower_body()
        return ir.For(loc, once, ir.Const(T.i32, loc, 0), ir.Const(T.i32, loc, 1), ir.Const(T.i32, loc, 1), 1, body)

    def static_copy(self, s: ast.For, item) -> None:
        with self.scoped():
            self.bind_static_target(s.target, item)
            for st in s.body:
                self.stmt(st)

    def bind_static_target(self, target: ast.expr, item) -> None:
        if isinstance(target, ast.Name) and isinstance(item, StaticIndex):  # qd.static(qd.grouped(qd.ndrange()))
            self.body.scope.names[target.id] = self.make_matrix((len(item),), [CT(k) for k in item], target, T.i32)
        elif isinstance(target, ast.Name):  # a field or a Python-scope vector in the list is what a kernel sees of it
            self.body.scope.names[target.id] = self.module_object(CT(item), target.id, target)
        elif isinstance(target, ast.Tuple):
            items = list(item)
            if len(items) != len(target.elts):
                raise self.error(target, f"cannot unpack {len(items)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, items, strict=False):
                self.bind_static_target(t, v)
        else:
            raise self.error(target, "a loop variable must be a plain name")

    def stmt_Break(self, s: ast.Break) -> None:
        jumps = self.body.static_jumps
        if jumps and jumps[-1][0] == self.body.loop_depth and jumps[-1][1] is not None:
            loc = self.loc(s)
            self.emit(ir.Assign(loc, jumps[-1][1], ir.Const(T.bool_, loc, True)))
        if self.body.loop_depth == 0:
            raise self.error(s, "break outside a serial loop" if not self.body.in_parallel else
                             "break is not allowed in a parallel loop: its iterations run on different threads",
                             hint=None if not self.body.in_parallel else "use `continue` to skip an iteration")
        self.emit(ir.Break(self.loc(s)))

    def stmt_Continue(self, s: ast.Continue) -> None:
        if self.body.loop_depth == 0 and not self.body.in_parallel:
            raise self.error(s, "continue outside a loop")
        self.emit(ir.Continue(self.loc(s)))

    def stmt_Return(self, s: ast.Return) -> None:
        if len(self.frames) == 1:
            self.kernel_return(s)
            return
        if self.real_function is not None:
            self.function_return(s)
            return
        frame = self.frame
        if s.value is None:
            return
        value = self.expr(s.value)
        if isinstance(value, TupleValue):
            if frame.returns_tuple is None:
                frame.returns_tuple = []
                for k, item in enumerate(value.items):
                    e = self.to_expr(item, s.value)
                    var = ir.Local(f"{frame.result_name}_{k}", e.type, self.loc(s))
                    frame.returns_tuple.append(var)
                    self.body.frame_declares.append(ir.Declare(self.loc(s), var, None))
            for var, item in zip(frame.returns_tuple, value.items, strict=False):
                self.emit(ir.Assign(self.loc(s), var, self.coerce(self.to_expr(item, s.value), var.type, s.value)))
            return
        if isinstance(value, (MatrixValue, StructValue)) or isinstance(frame.result, (MatrixVar, StructVar)):
            self.return_compound(frame, value, s)
            return
        e = self.to_expr(value, s.value)
        if frame.result is None:
            frame.result = ir.Local(frame.result_name, frame.return_type or e.type, self.loc(s))
            self.body.frame_declares.append(ir.Declare(self.loc(s), frame.result, None))
        self.emit(ir.Assign(self.loc(s), frame.result, self.coerce(e, frame.result.type, s.value,
                                                                   explicit=frame.return_type is not None)))

    def return_compound(self, frame, value, s: ast.Return) -> None:
        """A @qd.func returning a vector, matrix or struct from more than its last line: into
        a result variable of that shape."""
        loc = self.loc(s)
        if frame.result is None:
            if not isinstance(value, (MatrixValue, StructValue)):
                raise self.error(s.value, "this function returns a vector, matrix or struct here and a scalar "
                                          "elsewhere")
            frame.result = self.result_var(frame.result_name, value, loc)
        self.assign_result(frame.result, value, s.value)

    def result_var(self, name: str, value, loc: ir.Loc):
        """An uninitialized variable shaped like ``value``, declared where the inlined call is."""
        if isinstance(value, MatrixValue):
            var = MatrixVar(value.shape, [ir.Local(f"{name}_{c}", e.type, loc)
                                          for c, e in zip(component_suffixes(value.shape), value.items, strict=False)])
            self.body.frame_declares.extend(ir.Declare(loc, v, None) for v in var.locals)
            return var
        if isinstance(value, StructValue):
            return StructVar(value.type, {k: self.result_var(f"{name}_{k}", m, loc) for k, m in value.members.items()})
        e = self.to_expr(value, loc)
        var = ir.Local(name, e.type, loc)
        self.body.frame_declares.append(ir.Declare(loc, var, None))
        return var

    def assign_result(self, var, value, node) -> None:
        loc = self.loc(node)
        if isinstance(var, StructVar):
            if not isinstance(value, StructValue) or value.type is not var.type:
                raise self.error(node, f"this function returns a {var.type.name} elsewhere; return one here too")
            for k, m in var.members.items():
                self.assign_result(m, value.members[k], node)
        elif isinstance(var, MatrixVar):
            if not isinstance(value, MatrixValue) or value.shape != var.shape:
                raise self.error(node, "this function returns values of different shapes")
            for local, e in zip(var.locals, value.items, strict=False):
                self.emit(ir.Assign(loc, local, self.coerce(e, local.type, node)))
        else:
            if isinstance(value, (MatrixValue, StructValue)):
                raise self.error(node, "this function returns a scalar elsewhere")
            self.emit(ir.Assign(loc, var, self.coerce(self.to_expr(value, node), var.type, node)))

    def stmt_Assert(self, s: ast.Assert) -> None:
        if self.debug_checks():
            self.debug_assert(s)
            return
        # Quadrants checks `assert` only under qd.init(debug=True) and compiles it away
        # otherwise; so does this translation. Its names must still exist: a typo in one is
        # reported.
        for n in ast.walk(s.test):
            if isinstance(n, ast.Name) and self.body.scope.lookup(n.id)[0] is None and self.global_lookup(n.id) is None:
                raise self.error(n, f"undefined name `{n.id}`")
        # What the condition does besides testing still happens, as in Quadrants: a call of a
        # @qd.func or @qd.real_func (which may write memory) or an atomic in it.
        if any(isinstance(n, ast.Call) and _acts(self.named_value(n.func)) for n in ast.walk(s.test)):
            value = self.expr(s.test)
            if isinstance(value, ir.Expr) and has_side_effects(value):
                self.emit(ir.ExprStmt(self.loc(s), value))


def _acts(fn) -> bool:
    """Whether a call of ``fn`` may do more than compute a value."""
    return isinstance(fn, (lang.Func, lang.RealFunc)) or str(getattr(fn, "_qd_builtin", "")).startswith("atomic_")


def _scalars(value) -> list:
    """The run-time scalar expressions a value (a scalar, vector, matrix, struct or tuple) holds."""
    if isinstance(value, MatrixValue):
        return [e for item in value.items for e in _scalars(item)]
    if isinstance(value, StructValue):
        return [e for m in value.members.values() for e in _scalars(m)]
    if isinstance(value, TupleValue):
        return [e for item in value.items for e in _scalars(item)]
    return [value] if isinstance(value, ir.Expr) else []

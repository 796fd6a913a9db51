"""Vectors and matrices in kernels, lowered to their scalars.

A vector or matrix value is a ``MatrixValue``: its components as scalar IR expressions,
row-major. A variable is a ``MatrixVar``: one local per component, named for it (``v_x``,
``v_y``; ``m_0_1``). Every operation (arithmetic with scalar broadcast, comparisons, ``@``,
the methods, the math built-ins) is lowered component by component, with Quadrants'
promotion rules applied to each, so every target gets the scalar code a person would
write and the vendor compiler vectorizes what its hardware has (docs/lowering.md).

Expressions that an operation reads several times (a norm divided into every component,
the rows of a product) go through temporaries first, so nothing is computed twice and no
side effect is repeated.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass

from ..ir import nodes as ir
from ..ir import types as T
from ..lang.matrix import MatrixType
from ..lang.linalg import inverse_lu
from ..lang.swizzle import SWIZZLE_SETS
from .common import has_side_effects, is_py_scalar
from .handlers import HandlerTable
from .values import CT, ArrayHandle, KernelVar, MatrixValue, MatrixVar, MethodValue, TupleValue
from ..ir.walk import iter_expr
from .common import ATOMIC_AUGASSIGN, SYMBOL

MATRIX_METHODS = HandlerTable()  # a vector's or matrix's methods, by name (the handlers end this module)
_NO_ARGUMENTS = ("sum", "max", "min", "any", "all", "norm_sqr", "trace", "transpose", "determinant", "inverse")


def describe(shape: tuple[int, ...]) -> str:
    return f"a vector of {shape[0]}" if len(shape) == 1 else f"a {shape[0]}x{shape[1]} matrix"


def component_suffixes(shape: tuple[int, ...]) -> list[str]:
    """How a variable's component locals are named: v_x .. v_w for short vectors."""
    if len(shape) == 1:
        return list("xyzw"[:shape[0]]) if shape[0] <= 4 else [str(k) for k in range(shape[0])]
    return [f"{i}_{j}" for i in range(shape[0]) for j in range(shape[1])]


class MatrixLowering:
    """Vector and matrix methods of KernelLowering."""

    # ------------------------------------------------------------------ building values

    def make_matrix(self, shape: tuple[int, ...], items: list, node, dtype: T.DType | None = None) -> MatrixValue:
        """A value from scalar values (CT or IR), all converted to one dtype: ``dtype``, or
        the promotion of the items (a Python literal adapts, as in arithmetic)."""
        loc = node if isinstance(node, ir.Loc) else self.loc(node)
        if dtype is None:
            runtime = [v.type for v in items if isinstance(v, ir.Expr)]
            literals = [v.value for v in items if isinstance(v, CT)]
            if runtime:
                dtype = runtime[0]
                for t in runtime[1:]:
                    dtype = T.bool_ if dtype is T.bool_ and t is T.bool_ else T.promote(dtype, t)
                if any(isinstance(x, float) for x in literals) and not dtype.is_float:
                    dtype = T.defaults().fp
            elif any(isinstance(x, float) for x in literals):
                dtype = T.defaults().fp
            elif literals and all(isinstance(x, bool) for x in literals):
                dtype = T.bool_
            else:
                dtype = T.defaults().ip
        out = []
        for v in items:
            if isinstance(v, CT) and not is_py_scalar(v.value):
                raise self.error(node, f"a vector or matrix holds scalars, not {v.value!r}")
            e = self.to_expr(v, loc)
            e = self.coerce(e, dtype, loc, explicit=True)
            if has_side_effects(e):  # evaluated once, here, whatever reads the value later
                e = ir.LocalRef(e.type, loc, self.new_temp("tmp", e, loc))
            out.append(e)
        return MatrixValue(tuple(shape), out)

    def as_matrix(self, value, node):
        """A list or tuple of scalars (``[a, b]``, ``1.0, 2.0``), or of equally long rows of
        them, as the vector or matrix it stands for where one is expected: stored into a
        vector element, assigned to a vector variable, combined with a vector. Quadrants reads
        them so (MPM's ``grid_v[i] = [0, 0]``). Anything else is returned unchanged."""
        if isinstance(value, CT) and isinstance(value.value, (tuple, list)):
            items = [CT(v) for v in value.value]
        elif isinstance(value, TupleValue):
            items = list(value.items)
        else:
            return value
        if not items:
            return value
        rows = [self.as_matrix(v, node) for v in items]
        if all(isinstance(r, MatrixValue) and len(r.shape) == 1 for r in rows) and len({r.shape for r in rows}) == 1:
            return self.make_matrix((len(rows), rows[0].shape[0]), [e for r in rows for e in r.items], node)
        if all(isinstance(v, ir.Expr) or (isinstance(v, CT) and is_py_scalar(v.value)) for v in items):
            return self.make_matrix((len(items),), items, node)
        return value

    def materialize(self, v: MatrixValue, node, base: str) -> MatrixValue:
        """``v`` with every component that is more than a name or a constant computed once
        into a temporary (for operations that read each component several times)."""
        if all(isinstance(e, (ir.Const, ir.LocalRef, ir.ParamRef, ir.Shape)) for e in v.items):
            return v
        loc = self.loc(node) if isinstance(node, ast.AST) else node
        items = []
        for suffix, e in zip(component_suffixes(v.shape), v.items, strict=False):
            if isinstance(e, (ir.Const, ir.LocalRef, ir.ParamRef, ir.Shape)):
                items.append(e)
            else:
                items.append(ir.LocalRef(e.type, loc, self.new_temp(f"{base}_{suffix}", e, loc)))
        return MatrixValue(v.shape, items)

    def once(self, e: ir.Expr, node, base: str) -> ir.Expr:
        """A scalar read several times: into a temporary unless it is a name or a constant."""
        if isinstance(e, (ir.Const, ir.LocalRef, ir.ParamRef, ir.Shape)):
            return e
        loc = self.loc(node) if isinstance(node, ast.AST) else node
        return ir.LocalRef(e.type, loc, self.new_temp(base, e, loc))

    def elementwise(self, fn, values: list, node):
        """``fn`` applied to each component of the vector/matrix operands, scalars broadcast;
        a scalar result when no operand is a vector or matrix."""
        mats = [v for v in values if isinstance(v, MatrixValue)]
        if not mats:
            return fn(*values)
        shape = mats[0].shape
        for m in mats[1:]:
            if m.shape != shape:
                raise self.error(node, f"shape mismatch: {describe(shape)} and {describe(m.shape)}",
                                 hint="both operands of an element-wise operation need the same shape")
        # A scalar broadcast to every component is computed once (it may be long, or an atomic).
        values = [self.once(v, node, "s") if isinstance(v, ir.Expr) and not _cheap(v) else v for v in values]
        items = [fn(*[v.items[k] if isinstance(v, MatrixValue) else v for v in values])
                 for k in range(len(mats[0].items))]
        if any(isinstance(i, MatrixValue) for i in items):
            raise self.error(node, "an element-wise operation gave a vector per component")
        return self.make_matrix(shape, items, node, None)

    # ------------------------------------------------------------------ construction

    def construct(self, kind, node: ast.Call):
        """``vec3(...)``, ``qd.Vector([...])``, ``qd.Matrix([[...]])`` and the factories."""
        if isinstance(kind, MatrixType):
            return self.construct_typed(kind, node)
        name = kind
        kwargs = {kw.arg: kw.value for kw in node.keywords}
        args = list(node.args)
        if name in ("Vector", "Matrix"):
            if not args or len(args) > 2 or set(kwargs) - {"dt"}:
                raise self.error(node, f"qd.{name}(values, dt=None) takes the values as a list")
            dt_node = kwargs.get("dt", args[1] if len(args) > 1 else None)
            dtype = self.dtype_arg(dt_node)
            rows = self.list_literal(args[0])
            if name == "Vector" or not isinstance(rows[0], list):
                if any(isinstance(r, list) for r in rows):
                    raise self.error(args[0], "qd.Vector takes a flat list of values")
                return self.make_matrix((len(rows),), rows, node, dtype)
            width = len(rows[0])
            if any(not isinstance(r, list) or len(r) != width for r in rows):
                raise self.error(args[0], "every row of a qd.Matrix has the same number of values")
            return self.make_matrix((len(rows), width), [x for r in rows for x in r], node, dtype)
        values = [self.static_or_value(a) for a in args]
        kw = {k: self.static_or_value(v) for k, v in kwargs.items()}
        if name in ("Vector.zero", "Vector.one"):
            dt, n = self.factory_args(node, values, kw, ("dt", "n"))
            return self.make_matrix((n,), [CT(0 if name.endswith("zero") else 1)] * n, node, self.as_dtype(dt, node))
        if name == "Vector.unit":
            n, i, dt = self.factory_args(node, values, kw, ("n", "i", "dt"), defaults={"dt": None})
            return self.make_matrix((n,), [CT(1 if k == i else 0) for k in range(n)], node, self.as_dtype(dt, node))
        if name in ("Matrix.zero", "Matrix.one"):
            dt, n, m = self.factory_args(node, values, kw, ("dt", "n", "m"), defaults={"m": None})
            m = n if m is None else m
            return self.make_matrix((n, m), [CT(0 if name.endswith("zero") else 1)] * (n * m), node,
                                    self.as_dtype(dt, node))
        if name == "Matrix.identity":
            dt, n = self.factory_args(node, values, kw, ("dt", "n"))
            return self.make_matrix((n, n), [CT(int(i == j)) for i in range(n) for j in range(n)], node,
                                    self.as_dtype(dt, node))
        if name == "Matrix.diag":
            n, val = self.factory_args(node, values, kw, ("dim", "val"))
            zero = CT(0)
            return self.make_matrix((n, n), [val if i == j else zero for i in range(n) for j in range(n)], node)
        if name in ("Matrix.rows", "Matrix.cols"):
            vecs = [self.as_matrix(TupleValue(v) if isinstance(v, list) else v, node)  # a list: a vector
                    for v in self.list_literal(args[0])] if args else []
            if not vecs or not all(isinstance(v, MatrixValue) and v.is_vector for v in vecs) or \
                    len({v.shape for v in vecs}) != 1:
                raise self.error(node, f"qd.{name}([v0, v1, ...]) takes a list of vectors of one size")
            k, n = len(vecs), vecs[0].shape[0]
            if name == "Matrix.rows":
                return self.make_matrix((k, n), [x for v in vecs for x in v.items], node)
            return self.make_matrix((n, k), [vecs[j].items[i] for i in range(n) for j in range(k)], node)
        raise self.error(node, f"qd.{name}() is not supported here")

    def construct_typed(self, mt: MatrixType, node: ast.Call):
        if node.keywords:
            raise self.error(node, f"{mt!r}(...) takes positional values")
        dtype = self.as_dtype(mt.dtype, node)
        flat = []
        for a in node.args:
            if isinstance(a, (ast.List, ast.Tuple)):
                flat += self.flatten(self.list_literal(a))
                continue
            v = self.as_matrix(self.expr(a), a)  # a tuple (`vec2(res)`, res = (8, 4)) gives its items
            flat += v.items if isinstance(v, MatrixValue) else [v]
        size = math.prod(mt.shape)
        if len(flat) == 1:
            flat = flat * size
        if len(flat) != size:
            raise self.error(node, f"{mt!r} has {size} components, not {len(flat)}",
                             hint="give one value for every component, or a single value for all of them")
        return self.make_matrix(mt.shape, flat, node, dtype)

    def list_literal(self, node: ast.expr) -> list:
        """The elements of a list/tuple literal (nested lists stay lists), or of a
        translation-time sequence."""
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.list_literal(e) if isinstance(e, (ast.List, ast.Tuple)) else self.expr(e) for e in node.elts]
        v = self.expr(node)
        if isinstance(v, CT) and isinstance(v.value, (list, tuple)):
            return [list(map(CT, x)) if isinstance(x, (list, tuple)) else CT(x) for x in v.value]
        if isinstance(v, MatrixValue) and v.is_vector:
            return list(v.items)
        if isinstance(v, TupleValue):  # a comprehension with run-time items: [M[r, c] for r in range(3)]
            return [list(x.items) if isinstance(x, TupleValue) else x for x in v.items]
        raise self.error(node, "expected a list of values, e.g. [x, y, z]")

    def flatten(self, rows: list) -> list:
        out = []
        for r in rows:
            if isinstance(r, list):
                out += self.flatten(r)
            elif isinstance(r, MatrixValue):
                out += r.items
            else:
                out.append(r)
        return out

    def static_or_value(self, node: ast.expr):
        v = self.expr(node)
        return v.value if isinstance(v, CT) else v

    def factory_args(self, node, values: list, kw: dict, names: tuple[str, ...], defaults: dict | None = None):
        got = dict(zip(names, values, strict=False))
        got.update(kw)
        for k, v in (defaults or {}).items():
            got.setdefault(k, v)
        missing = [n for n in names if n not in got]
        if missing or set(got) - set(names):
            raise self.error(node, f"expected the arguments ({', '.join(names)})")
        for k in names:
            if k in ("n", "m", "i", "dim") and got[k] is not None and not isinstance(got[k], int):
                raise self.error(node, f"`{k}` must be an int known at translation time")
        return [got[n] if n != "val" or not isinstance(got[n], (int, float, bool)) else CT(got[n]) for n in names]

    def dtype_arg(self, node: ast.expr | None) -> T.DType | None:
        return None if node is None else self.as_dtype(self.static_value(node, what="a dtype"), node)

    def as_dtype(self, dt, node) -> T.DType | None:
        if dt is None:
            return None
        dt = T.python_type(dt) or dt
        if not isinstance(dt, T.DType):
            raise self.error(node, f"{dt!r} is not a scalar type")
        return dt

    # ------------------------------------------------------------------ variables

    def declare_matrix(self, name: str, value: MatrixValue, node) -> MatrixVar:
        loc = self.loc(node) if isinstance(node, ast.AST) else node
        var = MatrixVar(value.shape, [])
        for suffix, e in zip(component_suffixes(value.shape), value.items, strict=False):
            local = ir.Local(f"{name}_{suffix}", e.type, loc)
            var.locals.append(local)
            self.emit(ir.Declare(loc, local, e))
        return var

    def read_matrix(self, var: MatrixVar, scope, loc: ir.Loc) -> MatrixValue:
        items = []
        for local in var.locals:
            shared = self.shared_for_read(local, scope)
            items.append(self.load_var(shared, loc) if shared is not None else ir.LocalRef(local.type, loc, local))
        return MatrixValue(var.shape, items)

    def assign_matrix(self, var: MatrixVar, scope, value, node, stmt) -> None:
        value = self.as_matrix(value, node)
        if not isinstance(value, MatrixValue):
            raise self.error(node, f"`{self.var_name(var)}` is {describe(var.shape)}; it cannot hold a scalar",
                             hint=f"assign {describe(var.shape)}, or one component: `{self.var_name(var)}[0] = ...`")
        if value.shape != var.shape:
            raise self.error(node, f"`{self.var_name(var)}` is {describe(var.shape)}; it cannot hold "
                                   f"{describe(value.shape)}")
        for local, e in zip(var.locals, self.materialize_if_reads(value, var, node).items, strict=False):
            self.assign_local(local, scope, e, node, stmt, self.var_name(var))

    def materialize_if_reads(self, value: MatrixValue, var: MatrixVar, node) -> MatrixValue:
        """``v = v.yzx``, ``uv = vec2(-uv[1], uv[0])``: the components are assigned in order, so
        each that reads one assigned before it is computed first, into a temporary (a plain
        ``uv[0]`` too: it must be the old value). ``v += w`` reads only its own: no copy."""
        copied = self.copied_where_read_early(var.locals, value.items, node, component_suffixes(value.shape))
        return value if copied is value.items else MatrixValue(value.shape, copied)

    def copied_where_read_early(self, targets: list, items: list, node, suffixes) -> list:
        """``items``, to be assigned to ``targets`` (locals or kernel-scope variables) in order,
        with each that reads a target assigned before its own copied into a temporary first;
        ``items`` itself when none does."""
        position = {}
        for k, local in enumerate(targets):
            position[id(local)] = k
            shared = local if isinstance(local, KernelVar) else self.promoted.get(id(local), (None, None))[1]
            if shared is not None:  # a kernel-scope variable: read as a load of its buffer
                position[id(shared.param)] = k
        crossed = [isinstance(e, ir.Expr) and any(
            position.get(id(n.var if isinstance(n, ir.LocalRef) else n.array), k) < k
            for n in _walk(e) if isinstance(n, (ir.LocalRef, ir.Load))) for k, e in enumerate(items)]
        if not any(crossed):
            return items
        loc = self.loc(node) if isinstance(node, ast.AST) else node
        return [ir.LocalRef(e.type, loc, self.new_temp(f"tmp_{suffix}", e, loc)) if cross else e
                for suffix, e, cross in zip(suffixes, items, crossed, strict=False)]

    def assign_local(self, local: ir.Local, scope, e: ir.Expr, node, stmt, shown: str | None = None) -> None:
        """One component of a variable: a local, or a kernel-scope variable's buffer.
        ``shown``: the variable's name as the user wrote it (``r``, not its component ``r_x``)."""
        shared = self.shared_for_read(local, scope) or self.shared_for_update(local, scope)
        if shared is not None:
            # (in a parallel loop: Quadrants' shared vector, a component per thread in the usual
            # `v[i] = ...`; not warned of, as that is not a race)
            self.emit(ir.Store(self.loc(stmt), shared.param, [], self.coerce(e, shared.type, stmt)))
            return
        self.check_writable(local, scope, node, shown)
        self.emit(ir.Assign(self.loc(stmt), local, self.coerce(e, local.type, stmt, assigning=local)))

    def component_target(self, target: ast.expr):
        """``v[k]``, ``m[i, j]``, ``v.x``, ``v.xy`` on a vector or matrix variable: (var, scope);
        None for any other target."""
        found = self.resolve_var(target.value)
        return found if found is not None and isinstance(found[0], MatrixVar) else None

    def named_components(self, target: ast.expr, var: MatrixVar) -> list | None:
        """The locals of ``v.xy``, ``v[0]`` or ``m[i, j]`` with indices known without lowering
        anything (numbers, names of translation-time values); None for any other target."""
        if isinstance(target, ast.Attribute):
            picked = None if target.attr in MATRIX_METHODS else self.swizzle(var.shape, target.attr, target)
            return [var.locals[k] for k in picked] if picked and len(set(picked)) == len(picked) else None
        parts = list(target.slice.elts) if isinstance(target.slice, ast.Tuple) else [target.slice]
        idx = [p.value if isinstance(p, ast.Constant) else self.named_value(p) for p in parts]
        if len(idx) != len(var.shape) or not all(type(i) is int for i in idx):
            return None
        flat = 0
        for i, n, p in zip(idx, var.shape, parts, strict=False):
            flat = flat * n + self.static_index(i, n, p)
        return [var.locals[flat]]

    def assign_component(self, target: ast.expr, value, stmt) -> None:
        var, scope = self.component_target(target)
        if isinstance(target, ast.Attribute):
            if target.attr in ("n", "m") or target.attr in MATRIX_METHODS:
                raise self.error(target, f"`.{target.attr}` cannot be assigned")
            picked = self.swizzle(var.shape, target.attr, target)
            if picked is None:
                raise self.error(target, f"{describe(var.shape)} has no component `{target.attr}`")
            if len(set(picked)) != len(picked):
                raise self.error(target, f"`.{target.attr}` names a component twice")
            self.assign_places([var.locals[k] for k in picked], scope, value, target, stmt)
            return
        sl = target.slice
        parts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        if len(parts) > len(var.shape):
            raise self.error(target, f"{describe(var.shape)} takes at most {len(var.shape)} index(es)")
        row_slice = self.slice_at_run_time(var.shape, parts, target)
        sliced = None if row_slice else self.sliced(var.shape, parts, target)
        if sliced is not None:  # T[:3, 3] = t
            positions, shape = sliced
            value = self.as_matrix(value, target)
            if isinstance(value, MatrixValue) and len(value.items) != len(positions):
                raise self.error(target, f"{describe(shape)} of `{self.var_name(var)}` cannot hold "
                                         f"{describe(value.shape)}")
            self.assign_places([var.locals[k] for k in positions], scope, value, target, stmt)
            return
        idx = [] if row_slice else [self.expr(p) for p in parts]
        width = var.shape[1] if len(var.shape) == 2 else 1
        if row_slice:  # m[i, :] = v, i known at run time: the slice of each row (column), chosen
            k, index, picks = row_slice
            value = self.as_matrix(value, target)
            if isinstance(value, MatrixValue) and len(value.items) != len(picks[0][0]):
                raise self.error(target, f"{describe(picks[0][1])} of `{self.var_name(var)}` cannot hold "
                                         f"{describe(value.shape)}")
            choices = [[var.locals[q] for q in positions] for positions, _ in picks]
            node, n = parts[k], var.shape[k]
        elif len(parts) == 1 and len(var.shape) == 2:  # a whole row
            choices = [var.locals[r * width:(r + 1) * width] for r in range(var.shape[0])]
            index, node, n = idx[0], parts[0], var.shape[0]
        elif len(parts) == 2:
            choices = [[local] for local in var.locals]
            index = CT(self.static_index(idx[0].value, var.shape[0], parts[0]) * width +
                       self.static_index(idx[1].value, var.shape[1], parts[1])) \
                if all(isinstance(i, CT) for i in idx) else \
                self.binop("add", self.binop("mul", idx[0], CT(width), target), idx[1], target)
            node, n = target, len(var.locals)
        else:
            choices = [[local] for local in var.locals]
            index, node, n = idx[0], parts[0], var.shape[0]
        self.assign_choice(choices, index, node, n, scope, value, target, stmt)

    def assign_choice(self, choices: list[list], index, node: ast.AST, n: int, scope, value, target: ast.expr,
                      stmt) -> None:
        """Assigns ``value`` to the components ``choices[index]`` (``index`` over ``n``
        choices, written at ``node``); a run-time index chooses among branches."""
        if isinstance(index, CT):
            self.assign_places(choices[self.static_index(index.value, n, node)], scope, value, target, stmt)
            return
        # A run-time index: one branch per component (a vector written in a loop).
        k = self.once(self.coerce(self.to_expr(index, node), T.i32, node), node, "k")
        self.check_component_index(k, n, node, f"`{ast.unparse(target.value)}`")
        value = self.materialize(value, target, "tmp") if isinstance(value, MatrixValue) else \
            self.once(self.to_expr(value, target), target, "tmp")
        loc = self.loc(target)
        orelse: list[ir.Stmt] = []
        for j in range(len(choices) - 1, -1, -1):
            with self.collecting() as body:
                self.assign_places(choices[j], scope, value, target, stmt)
            if j == len(choices) - 1:
                orelse = body  # the last one: whatever index is left (Quadrants does not check bounds)
            else:
                orelse = [ir.If(loc, ir.Compare(T.bool_, loc, "eq", k, ir.Const(T.i32, loc, j)), body, orelse)]
        for st in orelse:
            self.emit(st)

    def assign_places(self, places: list, scope, value, target, stmt) -> None:
        root = target
        while isinstance(root, (ast.Subscript, ast.Attribute)):
            root = root.value
        shown = root.id if isinstance(root, ast.Name) else None  # `r` of `r.x = ...`
        if len(places) == 1:
            if isinstance(value, MatrixValue):
                raise self.error(target, f"one component cannot hold {describe(value.shape)}")
            self.assign_local(places[0], scope, self.to_expr(value, target), target, stmt, shown)
            return
        if not isinstance(value, MatrixValue):
            value = MatrixValue((len(places),), [self.once(self.to_expr(value, target), target, "tmp")] * len(places))
        if len(value.items) != len(places):
            raise self.error(target, f"{len(places)} components cannot hold {describe(value.shape)}")
        value = self.materialize_if_reads(value, MatrixVar((len(places),), places), target)
        for local, e in zip(places, value.items, strict=False):
            self.assign_local(local, scope, e, target, stmt, shown)

    # ------------------------------------------------------------------ ndarrays of vectors and matrices

    def array_element(self, array: ir.Param, indices: list[ir.Expr], node) -> MatrixValue:
        """``a[i]`` of an ndarray of vectors or matrices: its components, read."""
        array, places, shape = self.whole_element(array, indices, node)
        loc = self.loc(node)
        return MatrixValue(shape, [ir.Load(array.type.dtype, loc, array, idx) for idx in places])

    def struct_member_element(self, target: ast.Attribute):
        """The components of ``p[i].v`` when ``v`` is a vector or matrix member of a field of
        structs (see element_places), else None."""
        sp = self.struct_places(target)
        if sp is None or not isinstance(sp[0], ArrayHandle) or not sp[0].array.type.element_shape:
            return None
        return self.whole_element(sp[0].array, sp[1], target)

    def whole_element(self, array: ir.Param, indices: list[ir.Expr], node):
        loc = self.loc(node)
        indices = [self.once(i, node, "idx") if has_side_effects(i) else i for i in indices]
        es = array.type.element_shape
        comps = [(k,) for k in range(es[0])] if len(es) == 1 else [(i, j) for i in range(es[0]) for j in range(es[1])]
        return array, [indices + [ir.Const(T.i32, loc, c) for c in comp] for comp in comps], es

    def element_places(self, target: ast.expr):
        """The components a target names in an ndarray of vectors or matrices: ``a[i]``
        (all of them), ``a[i][k]``, ``a[i][r, c]``, ``a[i][r]`` (a row), ``a[i].x``, ``a[i].xy``.
        Returns (array, the full indices of each component, the shape they form: () for one
        component), or None when the target is not in such an ndarray."""
        if not isinstance(target, (ast.Subscript, ast.Attribute)):
            return None
        if isinstance(target, ast.Attribute):
            member = self.struct_member_element(target)
            if member is not None:  # p[i].v of a field of structs: the member's whole element
                return member
        if isinstance(target, ast.Subscript) and isinstance(target.value, (ast.Name, ast.Attribute)):
            inner = self.struct_member_element(target.value) if isinstance(target.value, ast.Attribute) else None
            if inner is None:
                base = self.expr(target.value)
                if isinstance(base, ArrayHandle) and getattr(base.array.type, "element_shape", ()):
                    array, indices = self.array_index(base.array, target)
                    return self.whole_element(array, indices, target)
                return None
        else:
            inner = self.element_places(target.value)
        if inner is None:
            return None
        array, places, shape = inner
        if not shape:
            raise self.error(target, "a scalar component has no components")
        return self.picked_places(target, array, places, shape)

    def picked_places(self, target: ast.Subscript | ast.Attribute, array, places: list, shape: tuple):
        """The components ``target`` picks (``.xy``, ``[k]``, ``[r, c]``, ``[0:3]``) among
        ``places``, the components of ``shape`` it applies to: as ``element_places`` returns."""
        if isinstance(target, ast.Attribute):
            picked = self.swizzle(shape, target.attr, target)
            if picked is None:
                raise self.error(target, f"{describe(shape)} has no component `{target.attr}`")
            chosen = [places[k] for k in picked]
            return array, chosen, (() if len(chosen) == 1 else (len(chosen),))
        sl = target.slice
        parts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        sliced = self.sliced(shape, parts, target) if len(places) == math.prod(shape) else None
        if sliced is not None:  # a[k][0:3] = v (Genesis' box_lines): those components of the element
            positions, sub = sliced
            return array, [places[q] for q in positions], sub
        values = [self.expr(p) for p in parts]
        if len(values) == 1 and isinstance(values[0], MatrixValue) and values[0].is_vector and \
                len(values[0].items) == len(shape) > 1:  # a[k][I], I a 2-vector index (qd.grouped)
            values = [CT(e.value) if isinstance(e, ir.Const) else e for e in values[0].items]
            parts = parts * len(values)
        laid_out = len(places) == math.prod(shape) and all(  # a whole element or row, not a slice's pick
            isinstance(p[-1], ir.Const) and p[-1].value == k % shape[-1] for k, p in enumerate(places))
        if len(parts) <= len(shape) and not all(isinstance(v, (CT, ir.Const)) for v in values):
            if not laid_out:
                raise self.error(target, "a component of a slice or swizzle of an element is picked with a "
                                         "translation-time index", hint="index the element itself: a[i][k]")
            # A component picked at run time (`a[i][k] = x`, Genesis' EPA): the element's last
            # indices computed, as a read of one would be; Quadrants checks no bounds here either.
            runtime = [self.coerce(self.to_expr(v, p), T.i32, p, explicit=True)
                       for v, p in zip(values, parts, strict=False)]
            outer = places[0][:len(places[0]) - len(shape)]
            if len(runtime) == len(shape):
                return array, [outer + runtime], ()
            loc = self.loc(target)
            return array, [outer + runtime + [ir.Const(T.i32, loc, c)] for c in range(shape[1])], (shape[1],)
        idx = [v.value for v in values]
        if len(idx) == 2 and len(shape) == 2:
            return array, [places[self.static_index(idx[0], shape[0], parts[0]) * shape[1] +
                                  self.static_index(idx[1], shape[1], parts[1])]], ()
        if len(idx) == 1 and len(shape) == 2:
            r = self.static_index(idx[0], shape[0], parts[0])
            return array, places[r * shape[1]:(r + 1) * shape[1]], (shape[1],)
        if len(idx) == 1:
            return array, [places[self.static_index(idx[0], shape[0], parts[0])]], ()
        raise self.error(target, f"{describe(shape)} takes {len(shape)} index(es)")

    def store_places(self, array, places: list, shape: tuple, value, target, stmt) -> None:
        loc = self.loc(stmt)
        if not shape:
            e = self.coerce(self.to_expr(value, target), array.type.dtype, target)
            self.emit(ir.Store(loc, array, places[0], e))
            return
        value = self.as_matrix(value, target)
        if not isinstance(value, MatrixValue):
            e = self.once(self.coerce(self.to_expr(value, target), array.type.dtype, target), target, "tmp")
            value = MatrixValue(shape, [e] * len(places))
        if len(value.items) != len(places):
            raise self.error(target, f"an element of {describe(shape)} cannot hold {describe(value.shape)}")
        value = self.materialize(value, target, "tmp") if any(
            isinstance(n, ir.Load) and n.array is array for e in value.items for n in _walk(e)) else value
        for idx, e in zip(places, value.items, strict=False):
            self.emit(ir.Store(loc, array, idx, self.coerce(e, array.type.dtype, target)))

    def update_places(self, array, places: list, shape: tuple, op: str, value, target, stmt) -> None:
        """``a[i] += v`` on ndarray components: an atomic per component, as Quadrants has it."""
        loc = self.loc(stmt)
        if shape:
            value = self.as_matrix(value, target)
        values = value.items if isinstance(value, MatrixValue) else [value] * len(places)
        if isinstance(value, MatrixValue) and len(value.items) != len(places):
            raise self.error(target, f"an element of {describe(shape)} cannot be updated with "
                                     f"{describe(value.shape)}")
        if not isinstance(value, MatrixValue) and len(places) > 1:
            values = [self.once(self.to_expr(value, target), target, "tmp")] * len(places)
        elif isinstance(value, MatrixValue) and any(isinstance(n, ir.Load) and n.array is array
                                                    for e in values if isinstance(e, ir.Expr) for n in _walk(e)):
            values = self.materialize(value, target, "tmp").items  # `a[i] += a[i].yx`: read before any update
        for idx, v in zip(places, values, strict=False):
            if op in ATOMIC_AUGASSIGN and isinstance(target, ast.Subscript):  # folded per block where it can be
                self.update_element(ATOMIC_AUGASSIGN[op], array, idx, self.to_expr(v, target), target, stmt,
                                    f"`{SYMBOL[op]}=`")
            elif op in ATOMIC_AUGASSIGN:
                self.emit(ir.ExprStmt(loc, self.make_atomic(ATOMIC_AUGASSIGN[op], array, idx, self.to_expr(v, target),
                                                            stmt, f"`{SYMBOL[op]}=`")))
            else:
                cur = ir.Load(array.type.dtype, loc, array, idx)
                new = self.coerce(self.to_expr(self.binop(op, cur, v, stmt), stmt), array.type.dtype, stmt)
                self.emit(ir.Store(loc, array, idx, new))

    def var_name(self, var: MatrixVar) -> str:
        return var.locals[0].name.rsplit("_", 2 if len(var.shape) == 2 else 1)[0]

    # ------------------------------------------------------------------ attributes, methods, indexing

    def matrix_attribute(self, v: MatrixValue, attr: str, node: ast.Attribute):
        if attr == "n":
            return CT(v.shape[0])
        if attr == "m":
            return CT(v.shape[1] if len(v.shape) == 2 else 1)
        if attr in MATRIX_METHODS:
            return MethodValue(v, attr)
        picked = self.swizzle(v.shape, attr, node)
        if picked is not None:
            return v.items[picked[0]] if len(picked) == 1 else MatrixValue((len(picked),), [v.items[k] for k in picked])
        raise self.error(node, f"{describe(v.shape)} has no attribute `{attr}`",
                         hint="components are .x .y .z .w (or v[k]); methods: " + ", ".join(sorted(MATRIX_METHODS)))

    def swizzle(self, shape: tuple[int, ...], attr: str, node) -> list[int] | None:
        for letters in SWIZZLE_SETS:
            if attr and all(c in letters for c in attr):
                if len(shape) != 1:
                    raise self.error(node, f"`.{attr}` is for vectors; index a matrix as m[i, j]")
                picked = [letters.index(c) for c in attr]
                if max(picked) >= shape[0]:
                    raise self.error(node, f"`.{attr}` is out of range for {describe(shape)}: vec{shape[0]} only has "
                                           f"attributes={tuple(letters[:shape[0]])}, got={tuple(attr)}")
                if len(picked) > 4:
                    raise self.error(node, f"`.{attr}`: a swizzle has at most 4 components")
                return picked
        return None

    def matrix_index(self, v: MatrixValue, node: ast.Subscript):
        """``v[k]``, ``m[i, j]``, ``m[i]`` (a row), ``T[:3, :3]`` / ``T[:3, 3]`` (slices with
        bounds known at translation time); a run-time index selects among the components (the
        value of a vector indexed in a loop)."""
        sl = node.slice
        named = f"`{ast.unparse(node.value)}`"
        parts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        if len(parts) > len(v.shape):
            raise self.error(node, f"Expected {len(v.shape)} indices, got {len(parts)}: {describe(v.shape)} takes at "
                                   f"most {len(v.shape)}")
        if any(isinstance(p, ast.Slice) for p in parts):
            row_slice = self.slice_at_run_time(v.shape, parts, node)
            if row_slice:  # m[:, k] with k known at run time: each column's slice, selected
                k, index, picks = row_slice
                choices = [MatrixValue(shape, [v.items[q] for q in positions]) for positions, shape in picks]
                return self.select_static_or_dynamic(choices, index, parts[k], v.shape[k], named)
            positions, shape = self.sliced(v.shape, parts, node)
            return MatrixValue(shape, [v.items[k] for k in positions])
        idx = [self.expr(p) for p in parts]
        if len(idx) == 1 and isinstance(idx[0], MatrixValue) and idx[0].is_vector and len(idx[0].items) == len(v.shape):
            idx = [CT(e.value) if isinstance(e, ir.Const) else e for e in idx[0].items]  # m[J], J a 2-vector index
            parts = parts * len(idx)
        if len(v.shape) == 2 and len(idx) == 1:
            rows = [MatrixValue((v.shape[1],), v.items[r * v.shape[1]:(r + 1) * v.shape[1]]) for r in range(v.shape[0])]
            return self.select_static_or_dynamic(rows, idx[0], parts[0], v.shape[0], named)
        if len(idx) == 2 and all(isinstance(i, CT) for i in idx):
            i, j = (self.static_index(i.value, n, p) for i, n, p in zip(idx, v.shape, parts, strict=False))
            return v.at(i, j)
        if len(idx) == 2:  # one or both at run time: one flat index, row-major
            row = self.binop("mul", idx[0], CT(v.shape[1]), node)
            return self.select_static_or_dynamic(list(v.items), self.binop("add", row, idx[1], node), node,
                                                 len(v.items), named)
        return self.select_static_or_dynamic(list(v.items), idx[0], parts[0], v.shape[0], named)

    def slice_at_run_time(self, shape: tuple[int, ...], parts: list[ast.expr], node):
        """For a subscript with a slice beside one index known only at run time (``m[i, :]``,
        ``m[1:, j]``): (that index's position, its value, and for each value it may take the
        components and shape the subscript picks); None for any other subscript."""
        if not any(isinstance(p, ast.Slice) for p in parts):
            return None
        values = {k: self.expr(p) for k, p in enumerate(parts) if not isinstance(p, ast.Slice)}
        runtime = [k for k, value in values.items() if not isinstance(value, (CT, ir.Const))]
        if len(runtime) != 1:
            return None
        k = runtime[0]
        picks = []
        for j in range(shape[k]):
            fixed = list(parts)
            fixed[k] = ast.copy_location(ast.Constant(j), parts[k])
            picks.append(self.sliced(shape, fixed, node))
        return k, values[k], picks

    def sliced(self, shape: tuple[int, ...], parts: list[ast.expr], node) -> tuple[list[int], tuple] | None:
        """The components (flat, row-major) and the shape a subscript with a slice picks, as
        NumPy would (``T[:3, 3]``: a vector of 3); None when no part is a slice."""
        if not any(isinstance(p, ast.Slice) for p in parts):
            return None
        axes, kept = [], []
        for k, n in enumerate(shape):
            p = parts[k] if k < len(parts) else ast.Slice()
            if isinstance(p, ast.Slice):
                bounds = [None if b is None else self.static_value(b, what="a slice bound") for b in
                          (p.lower, p.upper, p.step)]
                axes.append(list(range(n))[slice(*bounds)])
                kept.append(len(axes[-1]))
            else:
                axes.append([self.static_index(self.static_value(p, what="an index beside a slice"), n, p)])
        if not all(axes) or not 1 <= len(kept) <= 2:
            raise self.error(node, f"this slice of {describe(shape)} is empty")
        width = shape[1] if len(shape) == 2 else 1
        positions = [i * width + j for i in axes[0] for j in (axes[1] if len(shape) == 2 else [0])]
        return positions, tuple(kept)

    def static_index(self, k, n: int, node) -> int:
        if not isinstance(k, int) or isinstance(k, bool):
            raise self.error(node, f"an index must be an integer, not {k!r}")
        if not -n <= k < n:
            raise self.error(node, f"index {k} is out of range for a dimension of {n}")
        return k % n

    def select_static_or_dynamic(self, choices: list, index, node, n: int, what: str | None = None):
        if isinstance(index, CT):
            return choices[self.static_index(index.value, n, node)]
        e = self.to_expr(index, node)
        if not e.type.is_int:
            raise self.error(node, f"an index must be an integer, not {e.type.name}")
        k = self.once(self.coerce(e, T.i32, node), node, "k")
        self.check_component_index(k, n, node, what or f"a vector of {n}")
        loc = self.loc(node) if isinstance(node, ast.AST) else node

        def pick(items: list) -> ir.Expr:
            out = items[-1]
            for j in range(len(items) - 2, -1, -1):
                chosen = ir.Compare(T.bool_, loc, "eq", k, ir.Const(T.i32, loc, j))
                out = ir.Select(out.type, loc, chosen, items[j], out)
            return out

        if isinstance(choices[0], MatrixValue):
            width = len(choices[0].items)
            return MatrixValue(choices[0].shape, [pick([c.items[q] for c in choices]) for q in range(width)])
        return pick(choices)

    def call_method(self, mv: MethodValue, node: ast.Call):
        """``v.norm()``, ``m.transpose()``, ...: the method's handler in ``MATRIX_METHODS``."""
        call = MethodCall(self, mv.value, mv.name, [self.expr(a) for a in node.args],
                          {k.arg: self.expr(k.value) for k in node.keywords}, node)
        if call.args and mv.name in _NO_ARGUMENTS:
            raise self.error(node, f"`.{mv.name}()` takes no arguments")
        method = MATRIX_METHODS.get(mv.name)
        if method is None:
            raise self.error(node, f"`.{mv.name}()` is not supported")
        return method(self, call)

    def fold(self, items: list, op: str, node):
        out = items[0]
        for e in items[1:]:
            out = self.binop("add", out, e, node) if op == "add" else self.minmax(op, out, e, node)
        return out

    def minmax(self, op: str, a, b, node):
        ea, eb = self.to_expr(a, node), self.to_expr(b, node)
        ta, tb = self.operand_types(a, ea, b, eb)
        t = T.promote(ta, tb)
        return ir.Math(t, self.loc(node), op, [self.coerce(ea, t, node), self.coerce(eb, t, node)])

    # ------------------------------------------------------------------ linear algebra

    def matmul(self, a, b, node):
        if not isinstance(a, MatrixValue) or not isinstance(b, MatrixValue):
            raise self.error(node, "`@` multiplies matrices and vectors; use `*` with a scalar")
        if a.is_vector and b.is_vector:  # Quadrants' reading of `a @ b`: the dot product
            if a.shape != b.shape:
                raise self.error(node, f"`@` of {describe(a.shape)} and {describe(b.shape)}: the sizes differ")
            return self.fold([self.binop("mul", x, y, node) for x, y in zip(a.items, b.items, strict=False)], "add",
                             node)
        rows_a = (a.shape[0], a.shape[1]) if not a.is_vector else (1, a.shape[0])
        rows_b = (b.shape[0], b.shape[1]) if not b.is_vector else (b.shape[0], 1)
        if rows_a[1] != rows_b[0]:
            outer = a.is_vector and not b.is_vector and b.shape[0] == 1  # `a @ b.transpose()`: Quadrants' words
            raise self.error(node, f"`@` of {describe(a.shape)} and {describe(b.shape)}: the inner sizes differ"
                             + ("; `transpose()` cannot apply to a vector. If you want something like "
                                "`a @ b.transpose()`, write `a.outer_product(b)` instead." if outer else ""))
        a, b = self.materialize(a, node, "lhs"), self.materialize(b, node, "rhs")
        n, k, m = rows_a[0], rows_a[1], rows_b[1]

        def ga(i, j):
            return a.items[i * k + j] if not a.is_vector else a.items[j]

        def gb(i, j):
            return b.items[i * m + j] if not b.is_vector else b.items[i]

        items = [self.fold([self.binop("mul", ga(i, p), gb(p, j), node) for p in range(k)], "add", node)
                 for i in range(n) for j in range(m)]
        if b.is_vector:
            return self.make_matrix((n,), items, node)
        if a.is_vector:
            return self.make_matrix((m,), items, node)
        return self.make_matrix((n, m), items, node)

    # The determinant and inverse are Quadrants' formulas in its order of operations, so that
    # their rounding is Quadrants' too: expansion along the first column, the rows of each 3x3
    # minor taken cyclically (indices mod n), and the inverse as 1/det times the cofactors.

    def determinant(self, v: MatrixValue, node):
        n = v.shape[0]
        if n == 1:
            return v.at(0, 0)
        if n == 2:
            return self.binop("sub", self.binop("mul", v.at(0, 0), v.at(1, 1), node),
                              self.binop("mul", v.at(0, 1), v.at(1, 0), node), node)
        if n == 3:
            return self.minor3(v, (0, 1, 2), (0, 1, 2), node)
        det = None
        for i in range(4):
            term = self.binop("mul", v.at(i, 0), self.minor3(v, (i + 1, i + 2, i + 3), (1, 2, 3), node), node)
            det = term if det is None else self.binop("sub" if i % 2 else "add", det, term, node)
        return det

    def minor3(self, v: MatrixValue, rows: tuple, cols: tuple, node):
        """The 3x3 determinant of ``v``'s rows and columns (indices mod n), along its first column."""
        n = v.shape[0]

        def at(r: int, c: int):
            return v.at(rows[r] % n, cols[c] % n)

        def det2(p: tuple, q: tuple, r: tuple, s: tuple):  # at(p) * at(q) - at(r) * at(s)
            return self.binop("sub", self.binop("mul", at(*p), at(*q), node), self.binop("mul", at(*r), at(*s), node),
                              node)

        out = self.binop("mul", at(0, 0), det2((1, 1), (2, 2), (2, 1), (1, 2)), node)
        out = self.binop("sub", out, self.binop("mul", at(1, 0), det2((0, 1), (2, 2), (2, 1), (0, 2)), node), node)
        return self.binop("add", out, self.binop("mul", at(2, 0), det2((0, 1), (1, 2), (1, 1), (0, 2)), node), node)

    def inverse(self, v: MatrixValue, node):
        n = v.shape[0]
        det = self.to_expr(self.determinant(v, node), node)
        fp = det.type if det.type.is_float else T.defaults().fp
        inv_det = self.once(ir.BinOp(fp, self.loc(node), "truediv", ir.Const(fp, self.loc(node), 1.0),
                                     self.coerce(det, fp, node, explicit=True)), node, "inv_det")
        if n == 1:
            return self.make_matrix((1, 1), [inv_det], node)

        def cofactor(i: int, j: int):  # of row i, column j: its sign comes from the cyclic order
            if n == 2:
                return v.at(1 - i, 1 - j) if i == j else self.expr_negate(v.at(j, i), node)
            if n == 3:
                def at(r: int, c: int):
                    return v.at((i + r) % 3, (j + c) % 3)

                return self.binop("sub", self.binop("mul", at(1, 1), at(2, 2), node),
                                  self.binop("mul", at(2, 1), at(1, 2), node), node)
            d = self.minor3(v, (i + 1, i + 2, i + 3), (j + 1, j + 2, j + 3), node)
            return d if (i + j) % 2 == 0 else self.expr_negate(d, node)

        # inverse[r][c] = cofactor(c, r) / det
        items = [self.binop("mul", inv_det, cofactor(c, r), node) for r in range(n) for c in range(n)]
        return self.make_matrix((n, n), items, node, fp)

    def expr_negate(self, e, node):
        e = self.to_expr(e, node)
        return ir.Unary(e.type, e.loc, "neg", e)

    # ------------------------------------------------------------------ built-ins on components

    def builtin_elementwise(self, call_scalar, node: ast.Call):
        """A math built-in (qd.sqrt, qd.min, qd.cast, ...): applied to each component where
        an argument is a vector or matrix. The built-in sees names bound to the arguments,
        lowered once here, so each is evaluated once however many components there are."""
        values = [self.expr(a) for a in node.args]
        call, names = _bound_call(node)

        def one(*components):
            with self.scoped() as scope:
                scope.names.update(zip(names, components, strict=False))
                return call_scalar(call)

        return self.elementwise(one, values, node)


def _bound_call(node: ast.Call) -> tuple[ast.Call, list[str]]:
    """``node`` with each argument replaced by a name (``__qd_arg0``...) the caller binds to
    its lowered value, and those names. Made once per call site: the parsed trees are shared
    and never changed."""
    hit = getattr(node, "_qd_bound_call", None)
    if hit is None:
        names = [f"__qd_arg{k}" for k in range(len(node.args))]
        call = ast.Call(func=node.func, args=[ast.copy_location(ast.Name(id=n, ctx=ast.Load()), a)
                                              for n, a in zip(names, node.args, strict=False)], keywords=node.keywords)
        hit = node._qd_bound_call = (ast.copy_location(call, node), names)
    return hit


def _cheap(e: ir.Expr) -> bool:
    """Worth repeating in every component rather than naming: a name, a constant, an element."""
    return isinstance(e, (ir.Const, ir.LocalRef, ir.ParamRef, ir.Shape)) or (
        isinstance(e, ir.Load) and all(isinstance(i, (ir.Const, ir.LocalRef, ir.ParamRef)) for i in e.indices)) or (
        isinstance(e, ir.Cast) and _cheap(e.a))


def _walk(e: ir.Expr):
    return iter_expr(e)


# ----------------------------------------------------------------------------- methods


@dataclass
class MethodCall:
    """A method called on a vector or matrix ``v``, with its arguments lowered."""

    lo: MatrixLowering
    v: MatrixValue
    name: str
    args: list
    kw: dict
    node: ast.Call

    def other(self, k: int = 0) -> MatrixValue:
        if len(self.args) <= k or not isinstance(self.args[k], MatrixValue):
            raise self.lo.error(self.node, f"`.{self.name}()` takes a vector or matrix")
        return self.args[k]

    def vector_only(self) -> None:
        if not self.v.is_vector:
            raise self.lo.error(self.node, f"`.{self.name}()` is for vectors; this is {describe(self.v.shape)}")

    def square(self, largest: int | None = None) -> None:
        shape = self.v.shape
        if len(shape) != 2 or shape[0] != shape[1]:
            raise self.lo.error(self.node, f"`.{self.name}()` expected a square matrix, got shape {tuple(shape)}: "
                                           f"this is {describe(shape)}")
        if largest is not None and shape[0] > largest:
            raise self.lo.error(self.node, f"`.{self.name}()` is for matrices up to {largest}x{largest}")


@MATRIX_METHODS.handler("sum")
def _sum(lo: MatrixLowering, c: MethodCall):
    return lo.fold(c.v.items, "add", c.node)


@MATRIX_METHODS.handler("max", "min")
def _extreme(lo: MatrixLowering, c: MethodCall):
    return lo.fold(c.v.items, c.name, c.node)


@MATRIX_METHODS.handler("any", "all")
def _any_all(lo: MatrixLowering, c: MethodCall):
    loc = lo.loc(c.node)
    truths = [lo.truth(e, c.node) for e in c.v.items]
    out = truths[0]
    for t in truths[1:]:
        out = ir.Logical(T.bool_, loc, "or" if c.name == "any" else "and", out, t)
    return ir.Cast(T.i32, loc, out)


@MATRIX_METHODS.handler("dot")
def _dot(lo: MatrixLowering, c: MethodCall):
    c.vector_only()
    v, w, node = c.v, c.other(), c.node
    if w.shape != v.shape:
        raise lo.error(node, f"`.dot()` of {describe(v.shape)} and {describe(w.shape)}")
    return lo.fold([lo.binop("mul", a, b, node) for a, b in zip(v.items, w.items, strict=False)], "add", node)


@MATRIX_METHODS.handler("frobenius_inner")
def _frobenius_inner(lo: MatrixLowering, c: MethodCall):
    v, w, node = c.v, c.other(), c.node
    if w.shape != v.shape:
        raise lo.error(node, f"`.frobenius_inner()` of {describe(v.shape)} and {describe(w.shape)}")
    return lo.fold([lo.binop("mul", a, b, node) for a, b in zip(v.items, w.items, strict=True)], "add", node)


@MATRIX_METHODS.handler("norm_sqr", "norm", "norm_inv", "normalized")
def _norm(lo: MatrixLowering, c: MethodCall):
    name, node, loc = c.name, c.node, lo.loc(c.node)
    if name == "normalized":
        c.vector_only()
    eps = c.args[0] if c.args else c.kw.get("eps", CT(0))
    m = lo.materialize(c.v, node, "tmp")
    sq = lo.fold([lo.binop("mul", a, a, node) for a in m.items], "add", node)
    if name == "norm_sqr":
        return sq
    zero_eps = isinstance(eps, CT) and eps.value == 0
    if name == "normalized":
        # Quadrants' definition: (1 / (|v| + eps)) * v, eps added to the norm, not under the
        # root (its `normalized(eps)` is not `v * norm_inv(eps)`).
        norm = _sqrt(lo, sq, node)
        if not zero_eps:
            norm = lo.to_expr(lo.binop("add", norm, eps, node), node)
        inv = ir.BinOp(norm.type, loc, "truediv", ir.Const(norm.type, loc, 1.0), norm)
        inv = lo.once(inv, node, "inv_norm")
        return lo.elementwise(lambda a: lo.binop("mul", inv, a, node), [m], node)
    if not zero_eps:
        sq = lo.binop("add", sq, eps, node)
    return _sqrt(lo, sq, node, "sqrt" if name == "norm" else "rsqrt")


def _sqrt(lo: MatrixLowering, sq, node, fn: str = "sqrt") -> ir.Expr:
    """sqrt (or rsqrt) of a sum of squares, in its float type (the default float for integers)."""
    sq = lo.to_expr(sq, node)
    fp = sq.type if sq.type.is_float else T.defaults().fp
    return ir.Math(fp, lo.loc(node), fn, [lo.coerce(sq, fp, node, explicit=True)])


@MATRIX_METHODS.handler("cross")
def _cross(lo: MatrixLowering, c: MethodCall):
    c.vector_only()
    v, w, node = c.v, c.other(), c.node
    if v.shape != w.shape or v.shape[0] not in (2, 3):
        raise lo.error(node, f"`.cross()` needs two 2- or 3-vectors, not {describe(v.shape)} and "
                             f"{describe(w.shape)}")
    a, b = lo.materialize(v, node, "lhs").items, lo.materialize(w, node, "rhs").items

    def det2(p, q, r, s):
        return lo.binop("sub", lo.binop("mul", p, q, node), lo.binop("mul", r, s, node), node)

    if v.shape[0] == 2:
        return det2(a[0], b[1], a[1], b[0])
    return lo.make_matrix((3,), [det2(a[1], b[2], a[2], b[1]), det2(a[2], b[0], a[0], b[2]),
                                 det2(a[0], b[1], a[1], b[0])], node)


@MATRIX_METHODS.handler("outer_product")
def _outer_product(lo: MatrixLowering, c: MethodCall):
    c.vector_only()
    w, node = c.other(), c.node
    a, b = lo.materialize(c.v, node, "lhs").items, lo.materialize(w, node, "rhs").items
    return lo.make_matrix((len(a), len(b)), [lo.binop("mul", x, y, node) for x in a for y in b], node)


@MATRIX_METHODS.handler("transpose")
def _transpose(lo: MatrixLowering, c: MethodCall):
    v = c.v
    if v.is_vector:
        return lo.make_matrix((1, v.shape[0]), v.items, c.node)
    n, m = v.shape
    return MatrixValue((m, n), [v.items[i * m + j] for j in range(m) for i in range(n)])


@MATRIX_METHODS.handler("trace")
def _trace(lo: MatrixLowering, c: MethodCall):
    c.square()
    return lo.fold([c.v.at(i, i) for i in range(c.v.shape[0])], "add", c.node)


@MATRIX_METHODS.handler("determinant")
def _determinant(lo: MatrixLowering, c: MethodCall):
    c.square(largest=4)
    return lo.determinant(lo.materialize(c.v, c.node, "m"), c.node)


@MATRIX_METHODS.handler("inverse")
def _inverse(lo: MatrixLowering, c: MethodCall):
    c.square(largest=12)
    n = c.v.shape[0]
    if n > 4:  # by elimination, as Quadrants (closed forms up to 4x4)
        return lo.inline_values(inverse_lu, c.node, [lo.materialize(c.v, c.node, "m"), CT(n)])
    return lo.inverse(lo.materialize(c.v, c.node, "m"), c.node)


@MATRIX_METHODS.handler("cast")
def _cast(lo: MatrixLowering, c: MethodCall):
    if len(c.args) != 1 or not isinstance(c.args[0], CT):
        raise lo.error(c.node, "`.cast(dtype)` takes a dtype")
    return lo.make_matrix(c.v.shape, c.v.items, c.node, lo.as_dtype(c.args[0].value, c.node))


@MATRIX_METHODS.handler("to_list")
def _to_list(lo: MatrixLowering, c: MethodCall):
    raise lo.error(c.node, "`.to_list()` is for Python scope; in a kernel index the components")

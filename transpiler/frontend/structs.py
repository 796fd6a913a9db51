"""Structs in kernels (``qd.types.struct``, ``@qd.dataclass``), lowered to their members.

A struct value is a ``StructValue``: each member a scalar expression, a ``MatrixValue`` or
a nested ``StructValue``. A variable is a ``StructVar`` whose members are variables
(locals named ``p_mass``, ``p_pos_x``). ``@qd.func`` methods are inlined with ``self``
bound to the variable they are called on, so a method that assigns ``self.x`` updates it.

A kernel parameter annotated with a struct, a vector or a matrix type is passed by value as
its scalars, each a kernel parameter of its own (``p_pos_x``, in member order); one
annotated with a Python ``@dataclasses.dataclass`` of ndarrays and scalars (the Genesis
style) is its members, each a kernel parameter (``state_pos``), as Quadrants flattens it.
"""
from __future__ import annotations

import ast

from ..ir import nodes as ir
from ..ir import types as T
from ..lang.matrix import MatrixType, StructType, dataclass_members
from ..lang.tile import TileType
from .common import is_py_scalar
from .matrices import component_suffixes
from .values import (
    CT, ArrayHandle, BoundMethod, MatrixValue, MatrixVar, StructValue, StructVar, TupleValue, map_scalars,
)
from .. import lang
from .common import has_side_effects


def member_type(t):
    """A member's type with Python's int / float / bool resolved."""
    return T.python_type(t) or t


def leaves(t, prefix: str) -> list[tuple[str, T.DType, tuple]]:
    """The scalars of a struct, vector or matrix type, in memory order: (flat name, dtype,
    path of member names and component indices)."""
    t = member_type(t)
    if isinstance(t, T.DType):
        return [(prefix, t, ())]
    if isinstance(t, MatrixType):
        dtype = member_type(t.dtype) or T.defaults().fp
        shape = t.shape
        comps = [(k,) for k in range(shape[0])] if len(shape) == 1 else \
            [(i, j) for i in range(shape[0]) for j in range(shape[1])]
        return [(f"{prefix}_{s}", dtype, c) for s, c in zip(component_suffixes(shape), comps, strict=False)]
    out = []
    for name, mt in t.members.items():
        out += [(n, d, (name,) + path) for n, d, path in leaves(mt, f"{prefix}_{name}")]
    return out


class StructLowering:
    """Struct methods of KernelLowering."""

    # ------------------------------------------------------------------ values

    def construct_struct(self, st: StructType, node: ast.Call) -> StructValue:
        names = list(st.members)
        if len(node.args) > len(names):
            raise self.error(node, f"{st.name} has {len(names)} member(s), given {len(node.args)} values")
        given = dict(zip(names, node.args, strict=False))
        for kw in node.keywords:
            if kw.arg not in st.members:
                raise self.error(kw, f"{st.name} has no member `{kw.arg}`",
                                 hint=f"its members: {', '.join(names)}")
            if kw.arg in given:
                raise self.error(kw, f"member `{kw.arg}` given twice")
            given[kw.arg] = kw.value
        members = {}
        for name, t in st.members.items():
            value = self.expr(given[name]) if name in given else None
            members[name] = self.member_value(t, value, given.get(name, node))
        return StructValue(st, members)

    def anonymous_struct(self, pairs: list, node) -> StructValue:
        """``qd.Struct(a=1, b=v)`` / ``qd.Struct({"a": 1, "line": {...}})``: a struct whose
        members take their values' types (a nested dict, a struct of its own)."""
        members, types = {}, {}
        for key, value_node in pairs:
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise self.error(value_node, "qd.Struct's member names are strings known at translation time")
            if isinstance(value_node, ast.Dict):
                value = self.anonymous_struct(list(zip(value_node.keys, value_node.values, strict=False)), value_node)
            else:
                value = self.as_matrix(self.expr(value_node), value_node)
            if isinstance(value, StructValue):
                types[key.value] = value.type
            elif isinstance(value, MatrixValue):
                types[key.value] = MatrixType(value.shape, value.items[0].type if value.items else T.f32)
            else:
                e = self.to_expr(value, value_node)
                value, types[key.value] = e, e.type
            members[key.value] = value
        st = StructType(types)
        return StructValue(st, {k: self.member_value(types[k], v, node) for k, v in members.items()})

    def member_value(self, t, value, node):
        """``value`` (None: zero) as a member of type ``t``."""
        t = member_type(t)
        if isinstance(t, T.DType):
            if value is None:
                return ir.Const(t, self.loc(node), 0.0 if t.is_float else (False if t is T.bool_ else 0))
            if isinstance(value, (MatrixValue, StructValue)):
                raise self.error(node, f"a {t.name} member cannot hold this value")
            e = self.coerce(self.to_expr(value, node), t, node, explicit=True)  # a constructor casts
            return self.once(e, node, "tmp") if _has_effects(e) else e
        if isinstance(t, MatrixType):
            dtype = self.as_dtype(t.dtype, node) or T.defaults().fp
            size = t.n * t.m
            if value is None:
                return self.make_matrix(t.shape, [CT(0)] * size, node, dtype)
            value = self.as_matrix(value, node)  # a list or tuple of components: Sphere(color=(r, g, b, a))
            if not isinstance(value, MatrixValue):
                return self.make_matrix(t.shape, [value] * size, node, dtype)
            if value.shape != t.shape:
                raise self.error(node, f"a {t!r} member cannot hold a value of shape {value.shape}")
            return self.make_matrix(t.shape, value.items, node, dtype)
        if value is None:
            return StructValue(t, {k: self.member_value(mt, None, node) for k, mt in t.members.items()})
        if not isinstance(value, (StructValue, MatrixValue, TupleValue)) and not (
                isinstance(value, CT) and not is_py_scalar(value.value)):
            # a scalar for a struct member is that struct's first argument, as Quadrants builds
            # `mystruct(1)`: line = line3f(1), whose linedir = vec3f(1) and length = 0
            members = iter(t.members.items())
            first, first_type = next(members)
            return StructValue(t, {first: self.member_value(first_type, value, node),
                                   **{k: self.member_value(mt, None, node) for k, mt in members}})
        if not isinstance(value, StructValue) or value.type is not t:
            raise self.error(node, f"a {t.name} member needs a {t.name} value")
        return value

    # ------------------------------------------------------------------ variables

    def declare_struct(self, name: str, value: StructValue, node) -> StructVar:
        members = {}
        for k, v in value.members.items():
            full = f"{name}_{k}"
            if isinstance(v, StructValue):
                members[k] = self.declare_struct(full, v, node)
            elif isinstance(v, MatrixValue):
                members[k] = self.declare_matrix(full, v, node)
            else:
                local = ir.Local(full, v.type, self.loc(node))
                self.emit(ir.Declare(self.loc(node), local, v))
                members[k] = local
        return StructVar(value.type, members)

    def read_struct(self, var: StructVar, scope, loc: ir.Loc) -> StructValue:
        members = {}
        for k, m in var.members.items():
            if isinstance(m, StructVar):
                members[k] = self.read_struct(m, scope, loc)
            elif isinstance(m, MatrixVar):
                members[k] = self.read_matrix(m, scope, loc)
            else:
                shared = self.shared_for_read(m, scope)
                members[k] = self.load_var(shared, loc) if shared is not None else ir.LocalRef(m.type, loc, m)
        return StructValue(var.type, members)

    def assign_var(self, var, scope, value, node, stmt) -> None:
        """A whole variable (scalar local, vector, struct) takes a value of its type."""
        if isinstance(var, MatrixVar):
            self.assign_matrix(var, scope, value, node, stmt)
        elif isinstance(var, StructVar):
            if not isinstance(value, StructValue) or value.type is not var.type:
                raise self.error(node, f"a {var.type.name} variable needs a {var.type.name} value")
            value = self.struct_copied_where_read_early(var, value, node)
            for k, m in var.members.items():
                self.assign_var(m, scope, value.members[k], node, stmt)
        else:
            if isinstance(value, (MatrixValue, StructValue)):
                raise self.error(node, f"`{var.name}` is a {var.type.name} scalar; it cannot hold this value")
            self.assign_local(var, scope, self.to_expr(value, node), node, stmt)

    def struct_copied_where_read_early(self, var: StructVar, value: StructValue, node) -> StructValue:
        """``s = S(a=s.b, b=s.a)``: the members are assigned one by one, so each scalar of the
        value that reads one of ``s`` assigned before it is computed first (as a vector's
        components are, see ``copied_where_read_early``)."""
        targets, items, names = [], [], []

        def flatten(v, val, name: str) -> None:
            if isinstance(v, StructVar) and isinstance(val, StructValue):
                for k, m in v.members.items():
                    flatten(m, val.members[k], f"{name}_{k}" if name else k)
                return
            if isinstance(v, MatrixVar):
                targets.extend(v.locals)
                # (a list or scalar given to a vector member is read as that member is assigned)
                items.extend(val.items if isinstance(val, MatrixValue) else [None] * len(v.locals))
                names.extend(f"{name}_{c}" for c in component_suffixes(v.shape))
                return
            targets.append(v)
            items.append(val)
            names.append(name)

        flatten(var, value, "")
        copied = self.copied_where_read_early(targets, items, node, names)
        if copied is items:
            return value
        # (the same expression in two places is copied in both: the copy holds its old value)
        new = {id(old): e for old, e in zip(items, copied, strict=False) if e is not old}
        return map_scalars(value, lambda e: new.get(id(e), e))

    def resolve_var(self, node: ast.expr):
        """The variable a name or a member chain (``p``, ``p.pos``, ``s.inner.v``) denotes:
        (var, scope), or None when it is not a variable."""
        if isinstance(node, ast.Name):
            bound, scope = self.body.scope.lookup(node.id)
            return (bound, scope) if isinstance(bound, (MatrixVar, StructVar)) else None
        if isinstance(node, ast.Attribute):
            inner = self.resolve_var(node.value)
            if inner is not None and isinstance(inner[0], StructVar):
                var, scope = inner
                if node.attr not in var.members:
                    raise self.error(node, f"{var.type.name} has no member `{node.attr}`",
                                     hint=f"its members: {', '.join(var.members)}")
                return var.members[node.attr], scope
        return None

    # ------------------------------------------------------------------ members and methods

    def struct_attribute(self, v: StructValue, attr: str, node: ast.Attribute):
        if attr in v.members:
            return v.members[attr]
        if isinstance(v.type, TileType):
            raise self.error(node, f"`.{attr}` of a {v.type.name} value: a tile's methods update a variable",
                             hint=f"name it first: `t = ...`, then `t.{attr}(...)`")
        methods = getattr(v.type, "methods", {})
        if attr in methods:
            return CT(BoundMethod(methods[attr], v))
        what = getattr(v.type, "name", None) or getattr(v.type, "__name__", "struct")
        raise self.error(node, f"{what} has no member `{attr}`",
                         hint=f"its members: {', '.join(v.members)}")

    def call_struct_method(self, node: ast.Call):
        """``p.method(...)`` on a struct variable: the method inlined with ``self`` bound to
        the variable (its assignments to ``self.x`` update it); on a value, to the value."""
        if not isinstance(node.func, ast.Attribute):
            return None
        found = self.resolve_var(node.func.value)
        if found is None or not isinstance(found[0], StructVar):
            return None
        var = found[0]
        if isinstance(var.type, TileType):
            return self.call_tile_method(var, node)
        method = var.type.methods.get(node.func.attr) if isinstance(var.type, StructType) else None
        if method is None:
            return None
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        return self.inline_values(method, node, [var, *args], kwargs)

    def add_entry(self, s: ast.AugAssign) -> bool:
        """``A[i, j] += v`` / ``-= v`` on a value whose type says how to add an entry (a
        ``qd.types.sparse_matrix_builder()`` parameter): its ``_qd_add_entry`` @qd.func inlined."""
        target = s.target
        if not isinstance(target, ast.Subscript) or not isinstance(target.value, ast.Name):
            return False
        value, _ = self.body.scope.lookup(target.value.id)
        add = getattr(getattr(value, "type", None), "_qd_add_entry", None) if isinstance(value, StructValue) else None
        if add is None:
            return False
        index = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        if len(index) != 2 or not isinstance(s.op, (ast.Add, ast.Sub)):
            raise self.error(s, f"a sparse matrix builder takes `{target.value.id}[i, j] += value` (or `-=`)")
        self.inline_values(add, s, [value, self.expr(index[0]), self.expr(index[1]), self.expr(s.value),
                                    CT(-1 if isinstance(s.op, ast.Sub) else 1)])
        return True

    # ------------------------------------------------------------------ kernel parameters

    def bind_compound(self, a: ast.arg, name: str, ann, index: int):
        """A vector / matrix / struct parameter (its scalars, each a parameter) or a Python
        dataclass parameter (its members, each a parameter): the value the kernel sees, and
        the parameters in order."""
        loc = self.loc(a)
        if lang.param_kind(ann) == "compound":
            params = [ir.Param(flat, dtype, index + k, loc) for k, (flat, dtype, _) in enumerate(leaves(ann, name))]
            return self.compound_value(ann, iter(params), loc), params
        params, members = [], {}
        for member, t in dataclass_members(ann):
            flat = f"{name}_{member}"
            kind = lang.param_kind(t)
            if kind == "ndarray" and (flat in self.template_args and self.template_args[flat] is None or isinstance(
                    self.template_args.get(flat), (lang.field.Field, lang.field.StructField))):
                kind = "template"  # a field (or None) for a qd.Tensor / ndarray member: bound as the field
            if kind == "ndarray":
                fake = ast.copy_location(ast.arg(arg=flat), a)
                p = ir.Param(flat, self.ndarray_type(fake, lang.ndarray_annotation(t), self.arg_types.get(flat)),
                             index + len(params), loc)
                params.append(p)
                members[member] = ArrayHandle(p)
            elif kind == "scalar":
                p = ir.Param(flat, T.i32 if t is bool else member_type(t), index + len(params), loc)
                params.append(p)
                members[member] = ir.ParamRef(p.type, loc, p)
            elif kind in ("compound", "dataclass"):
                value, inner = self.bind_compound(a, flat, t, index + len(params))
                params += inner
                members[member] = value
            elif kind == "template" and isinstance(self.arg_types.get(flat), lang.NdarrayAnnotation):
                fake = ast.copy_location(ast.arg(arg=flat), a)  # an ndarray in a qd.template() member
                p = ir.Param(flat, self.ndarray_type(fake, self.arg_types[flat], None), index + len(params), loc)
                params.append(p)
                members[member] = ArrayHandle(p)
            elif kind == "template" and flat in self.template_args:  # a field, or a value known now
                members[member] = self.module_object(CT(self.template_args[flat]), flat, a)
            else:
                raise self.error(a, f"member `{member}` of dataclass {ann.__name__} has an unsupported type {t!r}",
                                 hint="members may be ndarrays, scalars, vectors, matrices, structs, dataclasses "
                                      "or qd.template() values")
        return StructValue(ann, members), params

    def compound_value(self, t, params, loc: ir.Loc):
        """The value of a vector / matrix / struct type whose scalars are the next ``params``."""
        t = member_type(t)
        if isinstance(t, T.DType):
            p = next(params)
            return ir.ParamRef(p.type, loc, p)
        if isinstance(t, MatrixType):
            return MatrixValue(t.shape, [self.compound_value(self.as_dtype(t.dtype, loc) or T.defaults().fp, params,
                                                             loc) for _ in range(t.n * t.m)])
        return StructValue(t, {k: self.compound_value(mt, params, loc) for k, mt in t.members.items()})


def _has_effects(e: ir.Expr) -> bool:
    return has_side_effects(e)



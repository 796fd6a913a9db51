"""Sparse fields in kernels (see ``lang/snode.py`` for the model): a write to an element of a
field under a pointer, bitmasked or dynamic level also activates the cells above it; a
struct-for over such a field (or over a level) skips inactive cells; ``qd.is_active``,
``qd.activate``, ``qd.deactivate``, ``qd.append``, ``qd.length`` and ``qd.rescale_index``
read and write the levels' masks and lengths, which are fields of their own."""
from __future__ import annotations

import ast

from ..ir import nodes as ir
from ..ir import types as T
from ..lang.snode import SNode
from .fields import StructArray, struct_leaves
from .values import CT, ArrayHandle, MatrixValue, StructValue


class SparseLowering:
    """Sparse-field methods of KernelLowering."""

    # ------------------------------------------------------------------ the levels' own fields

    def level_mask(self, level: SNode, loc: ir.Loc) -> ir.Param:
        """The parameter of a level's mask (or, for a dynamic level, its lengths)."""
        what = "length" if level.kind == "dynamic" else "active"
        first = level.subtree_fields()[:1]
        named = self.name_of_field(first[0]) if first else "field"
        base = f"{named}_{what}" if named != "field" else f"snode{level.serial}_{what}"
        return self.field_param(level.mask, base, loc)

    def name_of_field(self, field) -> str:
        """What to call a field the kernel reaches through its SNode (``qd.append(blk, ...)``):
        its name, the name it had before, or the global naming it."""
        named = field.name or getattr(field, "_qd_name", None)
        if named:
            return named
        for scope in (self.frame.globals, self.frame.closure):
            for k, v in scope.items():
                if v is field:
                    return k
        return "field"

    def cell_indices(self, level: SNode, space: SNode, indices: list[ir.Expr], node) -> list[ir.Expr]:
        """Indices in ``space``'s index space (a field's elements, a level's cells) rescaled to
        ``level``'s cells (an ancestor of ``space``, or itself)."""
        loc = self.loc(node)
        out = []
        for a in level.axes:
            e = indices[space.axes.index(a)]
            div = space.extents[a] // level.extents[a]
            out.append(e if div == 1 else self.to_expr(self.binop("floordiv", e, CT(div), node), loc))
        return out

    def active_condition(self, space: SNode, indices: list[ir.Expr], node) -> ir.Expr | None:
        """Whether the cell ``indices`` of ``space`` is active: every sparse level on its path
        holds it (None when none is sparse)."""
        loc = self.loc(node)
        cond = None
        for level in space.path():
            if level.kind == "dynamic":
                mask = self.level_mask(level, loc)
                length = ir.Load(T.i32, loc, mask, self.parent_cells(level, space, indices, node))
                j = self.cell_indices(level, space, indices, node)[level.dynamic_axis]
                c = ir.Compare(T.bool_, loc, "lt", j, length)
            elif level.kind in ("pointer", "bitmasked"):
                load = ir.Load(T.i32, loc, self.level_mask(level, loc), self.cell_indices(level, space, indices, node))
                c = ir.Compare(T.bool_, loc, "ne", load, ir.Const(T.i32, loc, 0))
            else:
                continue
            cond = c if cond is None else ir.Logical(T.bool_, loc, "and", cond, c)
        return cond

    def parent_cells(self, dynamic: SNode, space: SNode, indices: list[ir.Expr], node) -> list[ir.Expr]:
        """The cell of a dynamic level's parent that holds ``space``'s cell ``indices``."""
        return self.cell_indices(dynamic._parent, space, indices, node)

    # ------------------------------------------------------------------ writes activate

    def activate_cells(self, space: SNode, indices: list[ir.Expr], node) -> None:
        """Mark the cell ``indices`` of ``space`` active in every sparse level above it: a mask
        store of 1 (threads that race store the same value), a dynamic length raised to cover it."""
        loc = self.loc(node)
        for level in space.path():
            if level.kind == "dynamic":
                a = level.dynamic_axis
                j = self.cell_indices(level, space, indices, node)[a]
                need = self.to_expr(self.binop("add", j, CT(1), node), loc)
                self.emit(ir.ExprStmt(loc, ir.Atomic(T.i32, loc, "max", self.level_mask(level, loc),
                                                     self.parent_cells(level, space, indices, node), need)))
            elif level.kind in ("pointer", "bitmasked"):
                self.emit(ir.Store(loc, self.level_mask(level, loc), self.cell_indices(level, space, indices, node),
                                   ir.Const(T.i32, loc, 1)))

    def before_write(self, array, indices: list[ir.Expr], loc: ir.Loc) -> list[ir.Expr]:
        """Before a store or an atomic on ``array[indices]`` of a sparse field: activate the
        element (its indices evaluated once, first); the indices to write with."""
        snode = self.sparse_fields.get(array.name) if isinstance(array, ir.Param) else None
        if snode is None:
            return indices
        n = len(snode.shape)
        if tuple(id(e.var) if type(e) is ir.LocalRef else None for e in indices[:n]) in self.visited.get(id(snode), ()):
            return indices  # x[i, j] in `for i, j in x`: active already (loop variables cannot be reassigned)
        indices = [self.once(e, loc, "idx") for e in indices[:n]] + list(indices[n:])
        self.activate_cells(snode, indices[:n], loc)
        return indices

    # ------------------------------------------------------------------ qd.is_active & co.

    def snode_arg(self, node: ast.expr, what: str, kinds: tuple[str, ...]) -> SNode:
        v = self.expr(node)
        level = v.value if isinstance(v, CT) else None
        if not isinstance(level, SNode) or level.kind not in kinds:
            got = f"a {level.kind} SNode" if isinstance(level, SNode) else "this"
            raise self.error(node, f"{what} takes a {' or '.join(kinds)} SNode, not {got}",
                             hint="name the level: blk = qd.root.pointer(qd.ij, n) ... qd.is_active(blk, [i, j]), "
                                  "or x.parent() for the one a field is placed in")
        return level

    def snode_indices(self, node: ast.expr, n: int) -> list[ir.Expr]:
        """The cell indices of a call: an int, a list or tuple of them, or an integer vector."""
        if isinstance(node, (ast.List, ast.Tuple)):
            items, subs = [self.expr(e) for e in node.elts], node.elts
        else:
            v = self.expr(node)
            if isinstance(v, MatrixValue):
                items = v.items
            elif isinstance(v, CT) and isinstance(v.value, (list, tuple)):
                items = [CT(x) for x in v.value]
            else:
                items = [v]
            subs = [node] * len(items)
        if len(items) != n:
            raise self.error(node, f"the SNode takes {n} index(es) here, not {len(items)}")
        out = []
        for e, sub in zip(items, subs, strict=False):
            x = self.to_expr(e, sub)
            if not x.type.is_int:
                raise self.error(sub, f"an SNode index is an integer, not {x.type.name}")
            out.append(self.once(self.coerce(x, T.i32, sub), sub, "idx"))
        return out

    def sparse_call(self, name: str, node: ast.Call):
        loc = self.loc(node)
        if node.keywords:
            raise self.error(node, f"qd.{name}() takes positional arguments only")
        if name == "no_activate":  # a promise that the cells written are active: writes still activate here
            for a in node.args:
                self.expr(a)
            return CT(None)
        if name == "rescale_index":
            return self.rescale_index(node)
        want = {"is_active": 2, "activate": 2, "deactivate": 2, "length": 2, "append": 3}[name]
        if len(node.args) != want:
            raise self.error(node, f"qd.{name}() takes {want} arguments, got {len(node.args)}")
        if name in ("append", "length"):
            level = self.snode_arg(node.args[0], f"qd.{name}", ("dynamic",))
            cell = self.snode_indices(node.args[1], len(level._parent.shape))
            lengths = self.level_mask(level, loc)
            if name == "length":
                return ir.Load(T.i32, loc, lengths, cell)
            return self.append(level, cell, node)
        kinds = ("pointer", "bitmasked", "dynamic") if name == "deactivate" else ("pointer", "bitmasked")
        level = self.snode_arg(node.args[0], f"qd.{name}", kinds)
        n = len(level._parent.shape) if level.kind == "dynamic" else len(level.shape)
        cell = self.snode_indices(node.args[1], n)
        if name == "is_active":
            return ir.Cast(T.i32, loc, self.active_condition(level, cell, node))
        if name == "activate":
            self.activate_cells(level, cell, node)
        else:
            self.deactivate(level, cell, node)
        return CT(None)

    def dynamic_list_method(self, node: ast.Call):
        """Taichi's methods of a field in a dynamic SNode: ``x.append(v)``, ``x.length()``,
        ``x.deactivate()`` for a list under ``qd.root``, ``x[i, j].append(v)`` for the list at
        cell ``(i, j)`` of its parent; None when ``node`` is not one of them."""
        owner = node.func.value
        cell_node = None
        if isinstance(owner, ast.Subscript):
            cell_node, owner = owner.slice, owner.value
        if not isinstance(owner, (ast.Name, ast.Attribute)):
            return None
        base = self.expr(owner)
        if isinstance(base, StructArray):
            base = next(struct_leaves(base))
        field = self.field_of(base.array) if isinstance(base, ArrayHandle) and isinstance(base.array, ir.Param) \
            else None
        level = field.parent() if field is not None else None
        if level is None or level.kind != "dynamic":
            return None
        name = node.func.attr
        want = 1 if name == "append" else 0
        if node.keywords or len(node.args) != want:
            raise self.error(node, f"`.{name}()` of a dynamic field takes {want} argument(s)")
        n = len(level._parent.shape)
        if cell_node is None and n:
            raise self.error(node.func, f"this dynamic field holds a list per cell of a {n}-d parent",
                             hint=f"name the cell: {ast.unparse(owner)}[{', '.join('ijkl'[:n])}].{name}(...)")
        cell = self.snode_indices(cell_node, n) if cell_node is not None else []
        loc = self.loc(node)
        if name == "length":
            return ir.Load(T.i32, loc, self.level_mask(level, loc), cell)
        if name == "deactivate":
            self.deactivate(level, cell, node)
            return CT(None)
        return self.append(level, cell, node, node.args[0])

    def append(self, level: SNode, cell: list[ir.Expr], node: ast.Call, value_node: ast.expr | None = None) -> ir.Expr:
        """``qd.append(dyn, I, v)``: the old length, atomically raised by one; ``v`` stored
        there when it is below the capacity (Quadrants' length keeps counting past it)."""
        loc = self.loc(node)
        if level._parent.sparse:
            self.activate_cells(level._parent, cell, node)
        old = self.once(ir.Atomic(T.i32, loc, "add", self.level_mask(level, loc), cell, ir.Const(T.i32, loc, 1)),
                        node, "slot")
        value_node = value_node or node.args[2]
        value = self.expr(value_node)
        scalars = list(_struct_scalars(value)) if isinstance(value, StructValue) else \
            value.items if isinstance(value, MatrixValue) else [value]
        fields = level.fields
        width = sum(len(_components(f.element_shape)) for f in fields)
        if len(scalars) != width:
            raise self.error(value_node, f"qd.append: the dynamic SNode holds {width} value(s) per element, "
                                           f"the value has {len(scalars)}")
        a = level.dynamic_axis
        index = [*cell[:a], old, *cell[a:]]
        k = 0
        with self.collecting() as body:
            for f in fields:
                p = self.field_param(f, self.name_of_field(f), loc)
                comps = _components(f.element_shape)
                for comp in comps:
                    e = self.coerce(self.to_expr(scalars[k], node), p.type.dtype, node)
                    # (not through emit: the atomic add made the slot part of the list already)
                    body.append(ir.Store(loc, p, index + [ir.Const(T.i32, loc, c) for c in comp], e))
                    k += 1
        self.emit(ir.If(loc, ir.Compare(T.bool_, loc, "lt", old, ir.Const(T.i32, loc, level.capacity)), body, []))
        return old

    def deactivate(self, level: SNode, cell: list[ir.Expr], node) -> None:
        """``qd.deactivate(blk, I)``: the cell's mask cleared. A pointer cell (or a dynamic
        level's list) also loses what it holds, zero-filled: its fields' elements, the masks
        and lengths of the levels under it."""
        loc = self.loc(node)
        if level.kind == "dynamic":
            self.emit(ir.Store(loc, self.level_mask(level, loc), cell, ir.Const(T.i32, loc, 0)))
            self.zero_region(level._parent, cell, level.fields, [], node)
            return
        self.emit(ir.Store(loc, self.level_mask(level, loc), cell, ir.Const(T.i32, loc, 0)))
        if level.kind == "pointer":
            masked = [d for d in level.subtree_levels() if d.mask is not None]
            self.zero_region(level, cell, level.subtree_fields(), masked, node)

    def zero_region(self, level: SNode, cell: list[ir.Expr], fields: list, levels: list[SNode], node) -> None:
        """Zero what lies under cell ``cell`` of ``level`` in each of ``fields`` and in the
        masks of ``levels``: a loop over the cell's block of each."""
        loc = self.loc(node)
        for f in fields:
            self.zero_block(level, cell, f._snode, self.field_param(f, self.name_of_field(f), loc),
                            f.element_shape, node)
        for sub in levels:
            space = sub._parent if sub.kind == "dynamic" else sub
            self.zero_block(level, cell, space, self.level_mask(sub, loc), (), node)

    def zero_block(self, level: SNode, cell: list[ir.Expr], space: SNode, array: ir.Param,
                   element_shape: tuple, node) -> None:
        loc = self.loc(node)
        loops = []  # (var, begin, span) per axis of ``space`` the cell spans more than one index of
        index = []
        for a in space.axes:
            if a in level.extents:
                span = space.extents[a] // level.extents[a]
                base = cell[level.axes.index(a)]
                begin = base if span == 1 else self.to_expr(self.binop("mul", base, CT(span), node), loc)
            else:
                span, begin = space.extents[a], ir.Const(T.i32, loc, 0)
            if span == 1:
                index.append(begin)
                continue
            var = ir.Local(f"z{a}", T.i32, loc, loop_var=True)
            var.nonneg = True
            loops.append((var, begin, span))
            index.append(ir.LocalRef(T.i32, loc, var))
        zero = ir.Const(array.type.dtype, loc, 0)
        body = [ir.Store(loc, array, index + [ir.Const(T.i32, loc, c) for c in comp], zero)
                for comp in _components(element_shape)]
        for var, begin, span in reversed(loops):
            stop = ir.Const(T.i32, loc, span) if isinstance(begin, ir.Const) and begin.value == 0 else \
                ir.BinOp(T.i32, loc, "add", begin, ir.Const(T.i32, loc, span))
            body = [ir.For(loc, var, begin, stop, ir.Const(T.i32, loc, 1), 1, body)]
        for st in body:
            self.emit(st)

    def rescale_index(self, node: ast.Call):
        """``qd.rescale_index(a, b, I)``: index ``I`` of field or level ``a`` as an index of
        level ``b`` (each axis divided, or multiplied, by the ratio of their extents)."""
        if len(node.args) != 3:
            raise self.error(node, f"qd.rescale_index() takes 3 arguments, got {len(node.args)}")
        spaces = []
        for a in node.args[:2]:
            v = self.expr(a)
            if isinstance(v, ArrayHandle) and isinstance(v.array, ir.Param) and self.field_of(v.array) is not None:
                spaces.append(self.field_of(v.array).parent())
            elif isinstance(v, CT) and isinstance(v.value, SNode):
                spaces.append(v.value)
            else:
                raise self.error(a, "qd.rescale_index takes a field or an SNode here")
        src, dst = spaces
        v = self.expr(node.args[2])
        items = v.items if isinstance(v, MatrixValue) else None
        if isinstance(node.args[2], (ast.List, ast.Tuple)):
            items = [self.expr(e) for e in node.args[2].elts]
        if items is None:
            raise self.error(node.args[2], "qd.rescale_index takes an index vector or list, e.g. [i, j]")
        out = list(items)
        for d in range(min(len(items), len(src.shape), len(dst.shape))):
            a, b = src.shape[d], dst.shape[d]
            if a > b:
                out[d] = self.binop("floordiv", items[d], CT(a // b), node)
            elif a < b:
                out[d] = self.binop("mul", items[d], CT(b // a), node)
        return self.make_matrix((len(out),), out, node)

    def take_guard(self) -> SNode | None:
        guard, self.pending_guard = self.pending_guard, None
        return guard

    def struct_for_guard(self, guard: SNode | None, loop_vars: list[ir.Local], node) -> None:
        """First in a struct-for's body over a sparse field or level: skip an inactive cell."""
        if guard is None:
            return
        loc = self.loc(node)
        cond = self.active_condition(guard, [ir.LocalRef(T.i32, loc, v) for v in loop_vars], node)
        if cond is not None:
            self.emit(ir.If(loc, ir.Unary(T.bool_, loc, "not", cond), [ir.Continue(loc)], []))
            self.visited.setdefault(id(guard), set()).add(tuple(id(v) for v in loop_vars))


def _components(element_shape: tuple) -> list[tuple[int, ...]]:
    out = [()]
    for n in element_shape:
        out = [c + (k,) for c in out for k in range(n)]
    return out


def _struct_scalars(value):
    for m in value.members.values():
        if isinstance(m, StructValue):
            yield from _struct_scalars(m)
        elif isinstance(m, MatrixValue):
            yield from m.items
        else:
            yield m

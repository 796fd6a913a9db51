"""Register tiles in kernels: the syntax of ``qd.simt.Tile16x16`` / ``Tile32x32``.

A tile is a struct (``lang/tile.py``'s ``TileType``: one member ``r``, the lane's row), so
its variables, copies and ``t.r[j]`` are the struct machinery's. This module adds what is
particular to tiles:

- construction (``Tile16x16.zeros(dtype=...)``, ``.eye()``); on a target whose subgroups are
  narrower than the tile, the block must be a whole number of tiles (``lang/tile.py``
  carries such a tile out through shared memory);
- array slices (``arr[r0:r1, c0:c1]``, ``arr[b, r0:r1, c0:c1]``, ``arr[r0:r1, col]``), which
  are not values (``ArraySlice``) but the operands of the statements below;
- ``t[:] = slice`` (a load), ``arr[slice] = t`` (a store), ``t -= qd.outer(a, b)``;
- the methods: ``eye_()``, ``cholesky_(eps)`` (inlined from ``lang/tile.py`` with ``self``
  the variable), ``L.solve_triangular_(B, lower=True)`` (``B`` is the variable updated).
"""
from __future__ import annotations

import ast

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..lang import tile as lib
from .common import has_side_effects, is_simple
from .intrinsics import handler
from .values import CT, ArrayHandle, ArraySlice, MatrixValue, OuterProduct, StructValue, StructVar

SLICE_FORMS = "a tile block `arr[r0:r1, c0:c1]` (or `arr[b, r0:r1, c0:c1]`) or a column `arr[r0:r1, col]`"


def is_tile(x) -> bool:
    """A tile value or variable."""
    return isinstance(x, (StructValue, StructVar)) and isinstance(x.type, lib.TileType)


class TileLowering:
    """Tile methods of KernelLowering."""

    # ------------------------------------------------------------------ construction

    def construct_tile(self, size: int, kind: str, node: ast.Call, stub_dtype=None) -> StructValue:
        spelled = f"qd.simt.Tile{size}x{size}.{kind}"
        self.require_parallel(node, f"{spelled}()")
        self.require_tile_width(size, node)
        if node.args:
            raise self.error(node.args[0], f"{spelled}() takes the dtype as a keyword: dtype=qd.f32")
        dtype = None
        for kw in node.keywords:
            if kw.arg != "dtype":
                raise self.error(kw, f"{spelled}() takes dtype= only, not {kw.arg}=")
            dtype = self.static_value(kw.value, what="a tile's dtype")
        dtype = dtype if dtype is not None else stub_dtype
        dtype = T.defaults().fp if dtype is None else (T.python_type(dtype) or dtype)
        if dtype not in (T.f32, T.f64):
            raise self.error(node, f"{spelled}(): a tile holds f32 or f64, not {getattr(dtype, 'name', dtype)!r}",
                             hint="dtype=qd.f32 or dtype=qd.f64")
        loc = self.loc(node)
        if kind == "zeros":
            row = [ir.Const(dtype, loc, 0.0)] * size
        else:  # eye: lane i's register i is 1
            row = ir.SubgroupOp(T.i32, loc, "invocation_id", [])
            if lib.wide(size, self.subgroup_size):  # row: the thread's place among the tile's threads
                row = ir.BinOp(T.i32, loc, "bitand", ir.ThreadIndex(T.i32, loc, "thread_idx"),
                               ir.Const(T.i32, loc, size - 1))
            lane = self.once(row, node, "lane")
            row = [ir.Select(dtype, loc, ir.Compare(T.bool_, loc, "eq", lane, ir.Const(T.i32, loc, j)),
                             ir.Const(dtype, loc, 1.0), ir.Const(dtype, loc, 0.0)) for j in range(size)]
        return StructValue(lib.tile_type(size, dtype), {"r": MatrixValue((size,), row)})

    def require_tile_width(self, size: int, node: ast.AST) -> None:
        """A tile's rows are lanes, or, on narrower subgroups, threads of the block: the path is
        chosen from the width the code is translated for, which it is then bound to (GLSL:
        required_subgroup_size)."""
        name = f"qd.simt.Tile{size}x{size}"
        width = self.subgroup_size
        if width is None:
            # (which lowering, shuffles or shared memory, depends on it)
            raise self.error(node, f"{name} needs subgroups of at least {size} lanes, and the subgroup size of this "
                                   "target is not known at translation time",
                             hint=f"pass subgroup_size=N (N >= {size}, the device's) to qd.translate")
        self.subgroup_size_used = True
        block_dim = self.task_state.block_dim
        if lib.wide(size, width):
            if block_dim % size:
                raise self.error(node, f"{name} on this target's {width}-lane subgroups is carried out by {size} "
                                       f"consecutive threads of the block, and the block of {block_dim} threads is "
                                       f"not a whole number of tiles",
                                 hint=f"qd.loop_config(block_dim=N) with N a multiple of {size}, before the loop")
            self.emit(ir.Note(self.loc(node), f"Tile{size}x{size} on {width}-lane subgroups: {size} consecutive "
                                              "threads of the block per tile, rows exchanged through shared memory "
                                              "between block barriers"))

    # ------------------------------------------------------------------ slices

    def array_slice(self, handle: ArrayHandle, node: ast.Subscript) -> ArraySlice:
        """``arr[...]`` with slices in it: which of the tile forms it is, its bounds checked
        and lowered once, here (a run-time bound is read when the slice is written)."""
        sl = node.slice
        parts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        form = tuple(isinstance(p, ast.Slice) for p in parts)
        array = handle.array
        text = ast.unparse(node)
        if form not in ((True, True), (False, True, True), (True, False), (False, True, False)):
            raise self.error(sl, f"`{text}`: slices are not supported in kernels, except the operands of tile "
                                 f"operations: {SLICE_FORMS}", hint="index one element at a time")
        if getattr(array.type, "element_shape", ()):
            raise self.error(node, f"`{text}`: tiles load and store arrays of scalars; `{array.name}` holds "
                                   "vectors or matrices")
        if array.type.ndim != len(parts):
            raise self.error(node, f"`{text}`: `{array.name}` has {array.type.ndim} dimension(s) but is indexed with "
                                   f"{len(parts)}", hint="a batch index comes first: arr[b, r0:r1, c0:c1]")
        batched = len(parts) == 3
        batch = self.slice_index(parts[0], "batch index") if batched else None
        rows = self.slice_bounds(parts[1 if batched else 0], "row")
        last = parts[-1]
        if isinstance(last, ast.Slice):
            return ArraySlice(array, batch, rows, self.slice_bounds(last, "column"), None, text)
        return ArraySlice(array, batch, rows, None, self.slice_index(last, "column index"), text)

    def slice_bounds(self, s: ast.Slice, what: str) -> tuple:
        if s.lower is None or s.upper is None:
            raise self.error(s, f"a tile slice needs both the start and the stop of its {what} range",
                             hint="write them out, e.g. arr[0:16, 0:16]")
        if s.step is not None:
            raise self.error(s.step, "a tile slice has no step")
        return self.slice_index(s.lower, f"{what} bound"), self.slice_index(s.upper, f"{what} bound")

    def slice_index(self, node: ast.expr, what: str):
        v = self.expr(node)
        if isinstance(v, CT):
            if not isinstance(v.value, int) or isinstance(v.value, bool):
                raise self.error(node, f"a {what} must be an integer, not {v.value!r}")
            if v.value < 0:
                raise self.error(node, f"negative indices are not supported in kernels (a {what} of {v.value})")
            return v
        e = self.to_expr(v, node)
        if not e.type.is_int:
            raise self.error(node, f"a {what} must be an integer, not {e.type.name}")
        e = self.coerce(e, T.i32, node, explicit=True)
        return self.once(e, node, "idx") if has_side_effects(e) else e

    def bind_slice(self, target: ast.Name, value, bound) -> None:
        """``v = arr[r0:r1, col]`` (or a block, or ``op = qd.outer(a, b)``): the name stands for
        the operand, used by a later statement; its run-time bounds are computed here, once,
        as Python would evaluate them."""
        if is_tile(bound):
            raise self.error(target, f"`{target.id}` is a {bound.type.name}: load it with "
                                     f"`{target.id}[:] = {getattr(value, 'text', '...')}`")
        if bound is not None and not isinstance(bound, (ArraySlice, OuterProduct)):
            raise deferred_error(value, self.loc(target))

        def freeze(v, part: str):  # into a local named for the name and the part: s_r0, v_col
            if isinstance(v, ir.Expr) and not is_simple(v):
                return self.once(v, target, f"{target.id}_{part}")
            return v

        if isinstance(value, ArraySlice):
            rows = tuple(freeze(v, p) for v, p in zip(value.rows, ("r0", "r1"), strict=False))
            cols = tuple(freeze(v, p) for v, p in zip(value.cols, ("c0", "c1"), strict=False)) if value.cols else None
            value = ArraySlice(value.array, freeze(value.batch, "b"), rows, cols, freeze(value.col, "col"), value.text)
        else:
            value = OuterProduct(freeze(value.a, "a"), freeze(value.b, "b"), value.text)
        self.body.scope.names[target.id] = value

    def extent(self, array: ir.Array, dim: int, loc: ir.Loc):
        """The length of a dimension: known now (a field, a SharedArray) or read at run time."""
        if isinstance(array, ir.SharedArray):
            return CT(array.type.shape[dim])
        shape = self.field_shape(array)
        return CT(shape[dim]) if shape is not None else ir.Shape(T.i32, loc, array, dim)

    def clamp(self, stop, extent, node):
        """min(stop, extent): a slice past the array's end stops at it, as in Quadrants."""
        if isinstance(stop, CT) and isinstance(extent, CT):
            return CT(min(stop.value, extent.value))
        return self.minmax("min", stop, extent, node)

    def block_args(self, sl: ArraySlice, node) -> list:
        """(array, batched, batch, r0, r1, c0, c1, room) for ``_load`` / ``_store``; room: the
        columns from c0 the array is known to have (the tile's size where not known)."""
        array, loc, nd = sl.array, self.loc(node), sl.array.type.ndim
        r0, r1 = sl.rows
        c0, c1 = sl.cols
        width = self.extent(array, nd - 1, loc)
        room = 1 << 30
        if isinstance(width, CT):
            room = max(0, width.value - (c0.value if isinstance(c0, CT) else 0))
        return [ArrayHandle(array), CT(sl.batch is not None), sl.batch if sl.batch is not None else CT(0),
                r0, self.clamp(r1, self.extent(array, nd - 2, loc), node),
                c0, self.clamp(c1, width, node), CT(room)]

    def column_value(self, sl: ArraySlice, dtype: T.DType, size: int, node) -> ir.Expr:
        """This lane's element of a column slice, as ``dtype``, for a tile of ``size`` rows."""
        array, nd = sl.array, sl.array.type.ndim
        r0, r1 = sl.rows
        args = [ArrayHandle(array), CT(sl.batch is not None), sl.batch if sl.batch is not None else CT(0),
                r0, self.clamp(r1, self.extent(array, nd - 2, self.loc(node)), node), sl.col, CT(dtype), CT(size)]
        return self.to_expr(self.inline_values(lib._column, self.loc(node), args), node)

    # ------------------------------------------------------------------ statements

    def assign_tile(self, target: ast.expr, value, stmt: ast.stmt) -> bool:
        """``t[:] = arr[...]`` and ``arr[...] = t``; False for any other assignment."""
        if not isinstance(target, ast.Subscript):
            return False
        found = self.resolve_var(target.value)
        if found is not None and is_tile(found[0]):
            var = found[0]
            sl = target.slice
            if not (isinstance(sl, ast.Slice) and sl.lower is None and sl.upper is None and sl.step is None):
                raise self.error(target, f"a {var.type.name} is loaded whole: `{ast.unparse(target.value)}[:] = "
                                         "arr[r0:r1, c0:c1]`", hint="one register of this lane's row is t.r[j]")
            if not isinstance(value, ArraySlice) or value.cols is None:
                raise self.error(stmt, f"`{ast.unparse(target)} = ...` loads a tile from an array block",
                                 hint="write t[:] = arr[r0:r1, c0:c1] (or arr[b, r0:r1, c0:c1]); to copy a tile, "
                                      "t2 = t")
            self.inline_values(lib._load, self.loc(stmt), [var, *self.block_args(value, stmt)])
            return True
        if not self.has_slice(target):
            return False
        base = self.expr(target.value)
        if isinstance(base, MatrixValue):
            return False  # a slice of a vector or matrix variable: assign_component's
        if not isinstance(base, ArrayHandle):
            raise self.error(target, "only arrays, vectors and matrices can be sliced in kernels")
        sl = self.array_slice(base, target)
        if sl.cols is None:
            raise self.error(target, f"`{sl.text}` is a column: a tile is stored into a block, "
                                     "arr[r0:r1, c0:c1] = t")
        if not is_tile(value):
            raise self.error(stmt, f"only a tile can be stored into the array block `{sl.text}`",
                             hint="assign elements one at a time: arr[i, j] = x")
        self.inline_values(lib._store, self.loc(stmt), [value, *self.block_args(sl, stmt)])
        return True

    def has_slice(self, target: ast.Subscript) -> bool:
        sl = target.slice
        return isinstance(sl, ast.Slice) or (isinstance(sl, ast.Tuple) and any(isinstance(p, ast.Slice)
                                                                                for p in sl.elts))

    def update_tile(self, s: ast.AugAssign) -> bool:
        """``t -= qd.outer(a, b)``; False when the target is not a tile."""
        found = self.resolve_var(s.target) if isinstance(s.target, (ast.Name, ast.Attribute)) else None
        if found is None or not is_tile(found[0]):
            base = s.target.value if isinstance(s.target, ast.Subscript) else None
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and self.has_slice(s.target) and self.component_target(s.target) is None:
                # (a vector variable's slice, `v[3:6] += w`, and an element's, `a[i][0:3] += w`, are updated)
                raise self.error(s, "an array slice cannot be updated in place",
                                 hint="load it into a tile, update the tile, store it back")
            return False
        var = found[0]
        value = self.expr(s.value)
        if not isinstance(s.op, ast.Sub) or not isinstance(value, OuterProduct):
            raise self.error(s, f"the only update of a {var.type.name} is `t -= qd.outer(a, b)`",
                             hint="other arithmetic goes through its registers, t.r[j]")
        dtype, size = var.type.dtype, var.type.size
        a = self.outer_operand(value.a, dtype, size, s.value)
        b = a if value.b is value.a else self.outer_operand(value.b, dtype, size, s.value)
        self.inline_values(lib._ger_sub, self.loc(s), [var, a, b])
        return True

    def outer_operand(self, v, dtype: T.DType, size: int, node) -> ir.Expr:
        if isinstance(v, ArraySlice):
            if v.cols is not None:
                raise self.error(node, f"qd.outer takes columns, one element per lane; `{v.text}` is a block",
                                 hint="a column is arr[r0:r1, col]")
            return self.once(self.column_value(v, dtype, size, node), node, "col")
        if is_tile(v) or not isinstance(v, (ir.Expr, CT)):
            raise self.error(node, "qd.outer(a, b) takes this lane's element of each vector: a scalar or a column "
                                   "slice arr[r0:r1, col]")
        e = self.coerce(self.to_expr(v, node), dtype, node, explicit=True)
        return self.once(e, node, "v")

    # ------------------------------------------------------------------ methods

    def call_tile_method(self, var: StructVar, node: ast.Call):
        name = node.func.attr
        tt = var.type
        if name in tt.methods:
            args = [self.expr(a) for a in node.args]
            kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
            return self.inline_values(tt.methods[name], node, [var, *args], kwargs)
        if name == "solve_triangular_":
            return self.solve_triangular(var, node)
        if name in lib.BLOCK_METHODS or name in ("_ger_sub", "_trsm"):
            return self.internal_method(var, name, node)
        methods = ", ".join(sorted([*tt.methods, *lib.FRONTEND_METHODS]))
        raise self.error(node.func, f"{tt.name} has no method `{name}`", hint=f"its methods: {methods}")

    def internal_method(self, var: StructVar, name: str, node: ast.Call):
        """Quadrants' internal spellings (lang/tile.py's BLOCK_METHODS, ``_ger_sub``, ``_trsm``)."""
        if node.keywords:
            raise self.error(node, f"{var.type.name}.{name}() takes positional arguments only")
        if name == "_ger_sub":
            if len(node.args) != 2:
                raise self.error(node, f"{var.type.name}._ger_sub(a, b) takes two arguments")
            dtype, size = var.type.dtype, var.type.size
            a, b = (self.outer_operand(self.expr(x), dtype, size, x) for x in node.args)
            self.inline_values(lib._ger_sub, self.loc(node), [var, a, b])
            return CT(None)
        if name == "_trsm":
            found = self.resolve_var(node.args[0]) if len(node.args) == 1 else None
            if found is None or not is_tile(found[0]) or found[0].type.size != var.type.size:
                raise self.error(node, f"{var.type.name}._trsm(L) takes one tile of its size, L")
            self.inline_values(lib._trsm, node, [var, self.read_struct(found[0], None, self.loc(node))])
            return CT(None)
        fn, batched = lib.BLOCK_METHODS[name]
        if len(node.args) != (6 if batched else 5):
            raise self.error(node, f"{var.type.name}.{name}(arr, {'batch, ' if batched else ''}r0, r1, c0, c1)")
        handle = self.expr(node.args[0])
        if not isinstance(handle, ArrayHandle) or handle.array.type.ndim != (3 if batched else 2):
            raise self.error(node.args[0], f"{var.type.name}.{name}() takes a {3 if batched else 2}-dimensional array")
        bounds = [self.slice_index(a, "tile bound") for a in node.args[1:]]
        sl = ArraySlice(handle.array, bounds[0] if batched else None, tuple(bounds[-4:-2]), tuple(bounds[-2:]),
                        None, ast.unparse(node))
        self.inline_values(fn, self.loc(node), [var, *self.block_args(sl, node)])
        return CT(None)

    def solve_triangular(self, L: StructVar, node: ast.Call):
        """``L.solve_triangular_(B, lower=True)``: B becomes X with X @ L.T = B."""
        spelled = f"{ast.unparse(node.func)}(B, lower=True)"
        lower = True
        for kw in node.keywords:
            if kw.arg != "lower":
                raise self.error(kw, f"solve_triangular_() takes B and lower=, not {kw.arg}=")
            lower = self.static_value(kw.value, what="lower=")
        if len(node.args) != 1:
            raise self.error(node, f"{spelled} takes one tile, B")
        if not lower:
            raise self.error(node, "solve_triangular_ supports lower=True only (L from cholesky_())",
                             hint="for an upper-triangular U, solve with its transpose loaded as a lower tile")
        found = self.resolve_var(node.args[0])
        if found is None or not is_tile(found[0]):
            raise self.error(node.args[0], f"{spelled}: B must be a tile variable (it is solved in place)")
        B = found[0]
        if B.type.size != L.type.size:
            raise self.error(node.args[0], f"{spelled}: B is a {B.type.name}, L a {L.type.name}")
        L_value = self.read_struct(L, None, self.loc(node))
        self.inline_values(lib._trsm, node, [B, L_value])
        return CT(None)


@handler("tile.zeros", "tile.eye")
def _construct_tile(lo, name: str, node: ast.Call):
    stub = lo.expr(node.func).value
    return lo.construct_tile(stub.tile_size, name.split(".")[1], node, stub.tile_dtype)


@handler("outer")
def _outer(lo, name: str, node: ast.Call):
    if len(node.args) != 2 or node.keywords:
        raise lo.error(node, "qd.outer(a, b) takes two arguments")
    a, b = (lo.expr(x) for x in node.args)
    return OuterProduct(a, b, ast.unparse(node))


def deferred_error(v, loc: ir.Loc) -> TranspileError:
    """A slice or an outer product where a value is needed."""
    if isinstance(v, OuterProduct):
        return TranspileError(f"`{v.text}` is not a value: it is only the right-hand side of `t -= qd.outer(a, b)` "
                              "on a tile t", loc)
    return TranspileError(f"the array slice `{v.text}` is not a value", loc,
                          hint="slices are tile operands: t[:] = arr[r0:r1, c0:c1], arr[r0:r1, c0:c1] = t, "
                               "t -= qd.outer(arr[r0:r1, c], arr[r0:r1, c]); index one element with arr[i, j]")

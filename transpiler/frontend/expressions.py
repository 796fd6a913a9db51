"""Lowering of expressions, with Python semantics and Quadrants' type promotion, and the
conversions and translation-time evaluation they rely on."""
from __future__ import annotations

import ast
import builtins
import functools
import math
import operator
import re
from collections.abc import Callable

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir.evaluate import PY_CMPOPS
from ..ir import types as T
from ..passes import fold
from .common import (
    BINOPS, CMPOPS, PY_BINOPS, SYMBOL, UNSUPPORTED_EXPR, adapt_literal, has_side_effects, is_py_scalar,
    nonneg, retype_const, weak_type,
)
from .fields import StructArray, struct_leaves
from .handlers import HandlerTable
from .tiles import deferred_error, is_tile
from .values import (
    CT, ArrayHandle, ArraySlice, BoundMethod, MatrixValue, MatrixVar, OuterProduct, ShapeHandle, StructValue, StructVar,
    TupleValue, sequence_items,
)
from ..lang.mathlib import fill, float_int_pow, int_pow
from ..lang.names import did_you_mean
from .matrices import MATRIX_METHODS, SWIZZLE_SETS, describe


# What Quadrants says where a value must be known at translation time, said here too.
_STATIC_WHY = {"qd.static()": ": its arguments must be compile-time constants",
               "a slice bound": ": variables in a slice are not supported (Quadrants does not support variables "
                                "in slice now)"}


class ElementShape:
    """``arr.element_shape()`` in a kernel, as Quadrants' ndarray answers it: the element's
    extents, empty for scalars. A tuple, as a list literal is in a kernel, so that
    ``if qd.static(vf.element_shape() == [2]):`` compares as Quadrants' list does."""

    _qd_comptime = True

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape

    def __call__(self) -> tuple[int, ...]:
        return tuple(self.shape)


class ExpressionLowering:
    """Expression methods of KernelLowering."""

    _expr_methods: dict[type, Callable | None] = {}  # node class -> expr_<name>, per lowering class

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._expr_methods = {}

    def expr(self, node: ast.expr):
        try:
            method = self._expr_methods[type(node)]
        except KeyError:
            method = self._expr_methods[type(node)] = getattr(type(self), "expr_" + type(node).__name__, None)
        if method is None:
            what = UNSUPPORTED_EXPR.get(type(node), type(node).__name__)
            raise self.error(node, f"{what} are not supported in kernels")
        return method(self, node)

    def rvalue(self, node: ast.expr) -> ir.Expr:
        return self.to_expr(self.expr(node), node)

    def to_expr(self, v, node: ast.AST | ir.Loc) -> ir.Expr:
        """A runtime expression for ``v``; translation-time scalars become constants."""
        if isinstance(v, ir.Expr):
            return v
        loc = node if isinstance(node, ir.Loc) else self.loc(node)
        if isinstance(v, CT):
            value = v.value
            if is_py_scalar(value):
                t = weak_type(value)
                py = bool(value) if t is T.bool_ else (float(value) if t.is_float else int(value))
                return ir.Const(t, loc, py)
            if isinstance(value, str):
                raise TranspileError("strings are not supported in kernels", loc)
            what = getattr(value, "__name__", type(value).__name__)
            raise TranspileError(f"`{what}` is not a value that can be used at run time in a kernel", loc)
        if isinstance(v, ArrayHandle):
            raise TranspileError(f"unsupported operand type: ndarray `{v.array.name}` used as a value; index it, e.g. "
                                 f"`{v.array.name}[i]`", loc)
        if isinstance(v, ShapeHandle):
            raise TranspileError(f"`{v.array.name}.shape` used as a value; index it, e.g. "
                                 f"`{v.array.name}.shape[0]`", loc)
        if isinstance(v, MatrixValue):
            raise TranspileError(f"{describe(v.shape)} cannot be used as a single value here", loc,
                                 hint="pick a component (v[0], v.x), or reduce it (v.sum(), v.norm(), v.any())")
        if isinstance(v, (ArraySlice, OuterProduct)):
            raise deferred_error(v, loc)
        if is_tile(v):
            raise TranspileError(f"a {v.type.name} cannot be used as a single value here", loc,
                                 hint="tiles are loaded, stored, updated with t -= qd.outer(a, b) and factored in "
                                      "place; this lane's register j is t.r[j]")
        if isinstance(v, StructValue):
            what = getattr(v.type, "name", None) or getattr(v.type, "__name__", "struct")
            raise TranspileError(f"a {what} struct cannot be used as a single value here", loc,
                                 hint="use one of its members, e.g. s.x")
        raise TranspileError("a tuple cannot be used as a single value here", loc)

    def expr_Constant(self, node: ast.Constant):
        # A string or None is a translation-time value (qd.static_assert messages, a @qd.func's
        # template argument); using one at run time is the error, reported by to_expr / assign_name.
        if node.value is Ellipsis or isinstance(node.value, (bytes, complex)):
            raise self.error(node, f"`{node.value!r}` is not supported in kernels")
        return CT(node.value)

    def expr_Name(self, node: ast.Name):
        bound, scope = self.body.scope.lookup(node.id)
        # The common cases first: a local of this task or function (shared_for_read's plain
        # case), and a value bound to the name (an inlined function's argument).
        if type(bound) is ir.Local:
            if scope is not self.kernel_scope and id(bound) not in self.promoted:
                return ir.LocalRef(bound.type, self.loc(node), bound)
        elif isinstance(bound, (ir.Expr, CT)):
            return bound
        elif bound is None:  # a global (`qd`, a @qd.func, a field): half the names a kernel reads
            return self.global_name(node)
        shared = self.shared_for_read(bound, scope)
        if shared is not None:
            return self.load_var(shared, self.loc(node))
        if isinstance(bound, ir.Local):
            return ir.LocalRef(bound.type, self.loc(node), bound)
        if isinstance(bound, ir.Param):
            return ir.ParamRef(bound.type, self.loc(node), bound)
        if isinstance(bound, MatrixVar):
            return self.read_matrix(bound, scope, self.loc(node))
        if isinstance(bound, StructVar):
            return self.read_struct(bound, scope, self.loc(node))
        return bound

    def global_name(self, node: ast.Name):
        found = self.global_lookup(node.id)
        if found is None:
            raise self.error(node, f"undefined name `{node.id}`")
        return self.module_object(found, node.id, node)

    def global_lookup(self, name: str) -> CT | None:
        frame = self.frame
        if name in frame.closure:
            return CT(frame.closure[name])
        if name in frame.globals:
            return CT(frame.globals[name])
        if hasattr(builtins, name):
            return CT(getattr(builtins, name))
        return None

    def expr_Attribute(self, node: ast.Attribute):
        base = self.expr(node.value)
        if isinstance(base, ArrayHandle):
            found = ARRAY_ATTRIBUTES.find(node.attr)
            value = found(self, base, node) if found is not None else None
            if value is None:
                raise self.error(node, f"fields and ndarrays have no attribute `{node.attr}` in kernels",
                                 hint="they have `.shape`, `.size`, `.dtype`, `.element_shape()` and `.fill(value)`")
            return value
        if isinstance(base, StructArray):
            return self.struct_array_attribute(base, node)
        if isinstance(base, CT):
            return self.static_attribute(base, node)
        if isinstance(base, MatrixValue):
            return self.matrix_attribute(base, node.attr, node)
        if isinstance(base, StructValue):
            return self.struct_attribute(base, node.attr, node)
        if isinstance(base, ir.Expr) and isinstance(base.type, T.DType):
            vector_like = node.attr in MATRIX_METHODS or any(set(node.attr) <= set(s) for s in SWIZZLE_SETS)
            raise self.error(node, f"`{ast.unparse(node.value)}` is a {base.type.name} scalar here: it has no "
                                   f"attribute `{node.attr}`",
                             hint="vectors come from vector fields and ndarrays (qd.Vector.field, "
                                  "qd.types.ndarray(dtype=qd.math.vec3, ...)); an ndarray typed by the call takes "
                                  "the element type of the array it is given" if vector_like else None)
        raise self.error(node, f"runtime values have no attribute `{node.attr}`")

    def struct_array_attribute(self, base: StructArray, node: ast.Attribute):
        """``x.pos`` on a field of structs: a member's array; its ``.grad``, ``.snode``,
        ``.shape`` where no member has that name."""
        if node.attr not in base.members:
            if node.attr in ("grad", "dual"):
                return self.derivative_attribute(base, node)
            tree = self.tree_attribute(base, node) if node.attr in ("parent", "snode") else None
            if tree is not None:
                return tree
            if node.attr == "shape":  # a field of structs: its members' shape
                return CT(self.field_shape(next(struct_leaves(base)).array))
            raise self.error(node, f"the struct field has no member `{node.attr}`",
                             hint=f"its members: {', '.join(base.members)}")
        return base.members[node.attr]

    def derivative_attribute(self, base: ArrayHandle | StructArray, node: ast.Attribute):
        """``x.grad``, ``x.dual``: the field of a field made with needs_grad=True, a float
        ndarray argument's companion; otherwise unsupported."""
        source = base.source if isinstance(base, StructArray) else self.field_of(base.array) \
            if isinstance(base.array, ir.Param) else None
        if source is not None and not getattr(type(source), "_qd_bound_like_field", False):
            try:  # a field made with needs_grad=True: its .grad is a field of its own
                found = getattr(source, node.attr)
            except AttributeError as exc:
                raise self.error(node, str(exc)) from None
            name = base.array.name if isinstance(base, ArrayHandle) else re.sub(r"\W", "_", ast.unparse(node.value))
            return self.module_object(CT(found), f"{name}_{node.attr}", node)
        if isinstance(base, ArrayHandle) and isinstance(base.array, ir.Param) and base.array.role == "arg" and \
                base.array.is_array and base.array.type.dtype.is_float:
            return ArrayHandle(self.companion_param(base.array, node.attr, node))
        raise self.error(node, f"`.{node.attr}`: automatic differentiation (needs_grad=True, qd.ad) is not "
                               "supported by this transpiler (it has no equivalent in the source it writes)",
                         hint="write the derivative out as a kernel of its own")

    def tree_attribute(self, base: ArrayHandle | StructArray, node: ast.Attribute):
        """``x.parent``, ``x.snode``: a field's place in its SNode tree, a translation-time
        value; None for an array that is no field."""
        field = self.field_of(base.array) if isinstance(base, ArrayHandle) else \
            self.field_of(next(struct_leaves(base)).array)
        return CT(getattr(field, node.attr)) if field is not None else None

    def static_attribute(self, base: CT, node: ast.Attribute):
        """An attribute of a value known at translation time: read in Python."""
        try:
            found = getattr(base.value, node.attr)
        except AttributeError as exc:
            what = getattr(base.value, "__name__", type(base.value).__name__)
            ours = str(exc) if str(exc).startswith("qd") else None  # the language's own account
            close = did_you_mean(node.attr, dir(base.value))
            raise self.error(node, ours or f"`{what}` has no attribute `{node.attr}`",
                             hint=f"did you mean `{ast.unparse(node.value)}.{close}`?"
                             if close and not ours else None) from None
        return self.module_object(CT(found), node.attr, node)

    def expr_Subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
        if isinstance(base, ArrayHandle) and self.has_slice(node):
            return self.array_slice(base, node)
        if isinstance(base, ArrayHandle):
            array, indices = self.array_index(base.array, node)
            return self.load_element(array, indices, node)
        if isinstance(base, ShapeHandle):
            k = self.static_value(node.slice, what="a shape index")
            nd = base.array.type.ndim
            if not isinstance(k, int) or not -nd <= k < nd:
                raise self.error(node.slice, f"`{base.array.name}` has {nd} dimension(s); "
                                             f"shape[{k!r}] is out of range")
            return ir.Shape(T.i32, self.loc(node), base.array, k % nd)
        if isinstance(base, CT):
            idx = self.expr(node.slice)
            if isinstance(idx, (CT, ir.Const)):
                try:
                    item = base.value[idx.value]
                except Exception as exc:  # noqa: BLE001 - report whatever Python said
                    raise self.error(node, f"cannot index a translation-time value: {exc}") from None
                # An item that is a field, a Python-scope vector or a bound @qd.func is what the
                # kernel sees of it (mgpcg's `r[l][I]` over a list of fields, one per level).
                owner = node.value.id if isinstance(node.value, ast.Name) else "item"
                return self.module_object(CT(item), f"{owner}_{idx.value}", node)
            self.not_a_captured_array(base, node)
            raise self.error(node.slice, "a translation-time tuple or list can only be indexed by a "
                                         "translation-time index", hint="use qd.static(range(...)) for the loop")
        if isinstance(base, TupleValue):
            k = self.static_value(node.slice, what="a tuple index")
            return base.items[k]
        if isinstance(base, MatrixValue):
            return self.matrix_index(base, node)
        if isinstance(base, StructArray):
            return self.struct_element(base, node)
        if is_tile(base):
            raise self.error(node, f"a {base.type.name} is not indexed: `t[:]` is only the target of a load "
                                   "(t[:] = arr[r0:r1, c0:c1])", hint="this lane's register j is t.r[j]")
        if isinstance(base, StructValue):  # `x["foo"]` of a dict literal (or any struct): its member
            key = self.static_value(node.slice, what="a member name")
            if not isinstance(key, str):
                raise self.error(node.slice, "a struct or dict is indexed by a member name known at translation time")
            return self.struct_attribute(base, key, node)
        raise self.error(node, "only ndarrays, shapes and translation-time tuples can be indexed")

    def expr_Dict(self, node: ast.Dict):
        """``{"foo": a, "bar": b}``: a struct value of those members (read as ``x["foo"]``),
        as Quadrants has dict expressions in kernels."""
        if not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
            raise self.error(node, "a dict in a kernel has string keys known at translation time",
                             hint='e.g. x = {"foo": a, "bar": b}, then x["foo"]')
        return self.anonymous_struct(list(zip(node.keys, node.values, strict=False)), node)

    def lvalue(self, node: ast.Subscript) -> tuple[ir.Array, list[ir.Expr]]:
        base = self.expr(node.value)
        if not isinstance(base, ArrayHandle):
            if isinstance(base, ShapeHandle):
                raise self.error(node, "the shape of an ndarray is read-only")
            if isinstance(base, CT):
                self.not_a_captured_array(base, node)
            raise self.error(node, "only ndarray elements can be assigned through an index")
        return self.array_index(base.array, node)

    def not_a_captured_array(self, base: CT, node: ast.Subscript) -> None:
        """An array from the enclosing Python scope (a global qd.ndarray or numpy array) is
        not part of the kernel (Quadrants refuses it too): only a translation-time index into
        it, a constant, is allowed."""
        value = base.value
        if hasattr(value, "shape") and hasattr(value, "dtype") and getattr(value, "shape", ()) != ():
            name = ast.unparse(node.value)
            raise self.error(node.value, f"`{name}` is an array from the enclosing Python scope, not a kernel "
                                         "parameter: the kernel cannot see it",
                             hint=f"pass it in: add a parameter `{name}: qd.types.ndarray()` (or qd.Tensor)")

    def array_index(self, array: ir.Array, node: ast.Subscript) -> tuple[ir.Array, list[ir.Expr]]:
        """The indices of ``array[...]``: one per dimension, written out (``a[i, j]``), as a
        tuple of them (``a[I]`` with I from qd.grouped), or none for a 0-d array (``a[None]``,
        ``a[()]``)."""
        sl = node.slice
        if isinstance(sl, ast.Tuple):
            items = []
            for i in sl.elts:  # an integer vector among them: an index per component (`grid[k, I]`, `a[(k, *J)]`)
                v = self.expr(i.value if isinstance(i, ast.Starred) else i)
                if isinstance(v, MatrixValue) and v.is_vector:
                    items.extend((c, i) for c in v.items)
                elif isinstance(v, TupleValue):  # `field[I, k]` with `I = (i, j)`: Quadrants spreads it too
                    items.extend((c, i) for c in v.items)
                elif isinstance(v, CT) and isinstance(v.value, tuple) or \
                        isinstance(i, ast.Starred) and isinstance(v, CT) and isinstance(v.value, list):
                    items.extend((CT(c), i) for c in v.value)
                else:
                    items.append((v, i))
        elif isinstance(sl, ast.Constant) and sl.value is None:
            items = []
        elif isinstance(sl, ast.Slice):
            items = [(sl, sl)]
        else:
            v = self.expr(sl)
            if isinstance(v, TupleValue):
                items = [(item, sl) for item in v.items]
            elif isinstance(v, MatrixValue) and v.is_vector:  # a[I] with an integer vector I, as Taichi has it
                items = [(item, sl) for item in v.items]
            elif isinstance(v, CT) and isinstance(v.value, tuple):
                items = [(CT(x), sl) for x in v.value]
            else:
                items = [(v, sl)]
        if any(isinstance(i, ast.Slice) for _, i in items):
            raise self.error(sl, "slices are not supported in kernels; index one element at a time")
        nd = array.type.ndim
        if len(items) != nd:
            raise self.error(node, f"`{array.name}` has {nd} dimension(s) but is indexed with {len(items)}",
                             hint="index a 0-d array with a[None] or a[()]" if nd == 0 else None)
        indices = []
        for v, i in items:
            e = self.to_expr(v, i)
            if not e.type.is_int and e.type is not T.bool_:
                raise self.error(i, f"an index must be an integer, not {e.type.name}",
                                 hint="convert it with qd.cast(x, qd.i32) or int(x)")
            indices.append(self.coerce(e, T.i32, i) if e.type.bits < 32 or e.type is T.bool_ else e)
        return array, self.field_indices(array, indices, node)

    def expr_NamedExpr(self, node: ast.NamedExpr):
        """``(p0 := v)``: assigned as ``p0 = v`` would be, then read back as the value."""
        self.assign(node.target, self.expr(node.value), node)
        return self.expr(ast.copy_location(ast.Name(id=node.target.id, ctx=ast.Load()), node.target))

    def expr_ListComp(self, node: ast.ListComp):
        """``[f(k) for k in range(3)]``: unrolled at translation time, as Quadrants does, into
        the sequence a list literal gives (so ``qd.Vector([... for ...])`` builds a vector)."""
        if len(node.generators) != 1 or node.generators[0].is_async:
            raise self.error(node, "a list comprehension in a kernel takes one `for` clause",
                             hint="nest the lists: [[a for a in ...] for b in ...]")
        gen = node.generators[0]
        runtime_range = isinstance(gen.iter, ast.Call) and self.named_value(gen.iter.func) is range and not all(
            isinstance(self.expr(a), CT) for a in gen.iter.args)
        seq = None if runtime_range else self.expr(gen.iter)
        if not isinstance(seq, CT) or isinstance(seq.value, str) or not hasattr(seq.value, "__iter__"):
            raise self.error(gen.iter, "a list comprehension in a kernel iterates over values known at "
                                       "translation time (range(3), a tuple, qd.static(...))",
                             hint="write a for loop that stores into a vector or an ndarray")
        items = []
        with self.scoped():  # the comprehension's own names, as in Python 3
            for item in seq.value:
                self.bind_static_target(gen.target, item)
                if all(self.static_value(c, what="a list comprehension's `if`") for c in gen.ifs):
                    items.append(self.expr(node.elt))
        if all(isinstance(i, CT) for i in items):
            return CT(tuple(i.value for i in items))
        return TupleValue(items)

    def expr_List(self, node: ast.List):
        # A list literal (`w = [a, b, c]`, as Taichi's MPM writes weights) is a fixed
        # sequence indexed at translation time, like a tuple.
        return self.expr_Tuple(node)

    def expr_Tuple(self, node: ast.Tuple):
        items = [self.expr(e) for e in node.elts]
        if all(isinstance(i, CT) for i in items):
            return CT(tuple(i.value for i in items))
        return TupleValue(items)

    def expr_BinOp(self, node: ast.BinOp):
        if isinstance(node.op, ast.MatMult):
            return self.matmul(self.expr(node.left), self.expr(node.right), node)
        op = BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"the operator `{type(node.op).__name__}` is not supported in kernels")
        return self.binop(op, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op: str, a, b, node: ast.AST):
        if isinstance(a, MatrixValue) or isinstance(b, MatrixValue):
            a, b = self.as_matrix(a, node), self.as_matrix(b, node)  # `v + [1, 0]`
            return self.elementwise(lambda x, y: self.binop(op, x, y, node), [a, b], node)
        if isinstance(a, CT) and isinstance(b, CT):
            try:
                return CT(PY_BINOPS[op](a.value, b.value))
            except Exception as exc:  # noqa: BLE001
                raise self.error(node, f"cannot evaluate `{SYMBOL[op]}` at translation time: {exc}") from None
        if op == "add":
            seqs = [sequence_items(v) for v in (a, b)]
            if None not in seqs:  # `[k, n] + [m]`: Python's concatenation
                return TupleValue(seqs[0] + seqs[1])
        loc = self.loc(node)
        ea, eb = self.to_expr(a, node), self.to_expr(b, node)
        ta, tb = self.operand_types(a, ea, b, eb)
        if op in ("lshift", "rshift", "bitand", "bitor", "bitxor"):
            if ta.is_float or tb.is_float:
                raise self.error(node, f"`{SYMBOL[op]}` needs integer operands, got {ea.type.name} and {eb.type.name}")
            if op in ("lshift", "rshift"):
                t = T.i32 if ta is T.bool_ else ta
                a, b = self.coerce(ea, t, node), self.coerce(eb, t, node)
                return self.checked_arithmetic(op, t, a, b, node) or ir.BinOp(t, loc, op, a, b)
            if ta is T.bool_ and tb is T.bool_:
                return ir.BinOp(T.bool_, loc, op, ea, eb)
        t = T.promote(ta, tb)
        if op == "truediv" and not t.is_float:
            t = T.defaults().fp
        if op == "pow":
            if t.is_float and isinstance(b, CT) and type(b.value) is int and abs(b.value) <= 64:
                return self.power_by_squaring(self.coerce(ea, t, node), b.value, node)
            if t.is_float and tb.is_int and not isinstance(b, CT):
                # An integer exponent known at run time: by squaring, as Quadrants defines it (its
                # DemoteOperations pass), not the target's pow (lavapipe's is off by ~8 ulp).
                return self.inline_values(float_int_pow, node, [self.coerce(ea, t, node), eb])
            if t.is_float:
                return ir.Math(t, loc, "pow", [self.coerce(ea, t, node), self.coerce(eb, t, node)])
            if not (isinstance(b, CT) and isinstance(b.value, int) and b.value >= 0):
                exp = self.check_exponent(self.coerce(eb, t, node), node)
                return self.inline_values(int_pow, node, [self.coerce(ea, t, node), exp])
        if op in ("floordiv", "mod") and t.is_int and t.kind == "int" and nonneg(ea) and nonneg(eb):
            # Both sides non-negative: Python's floor division is C's truncating one (by 0,
            # both divide by zero).
            k = eb.value if isinstance(eb, ir.Const) else 0
            if k > 0 and k & (k - 1) == 0:
                # By a power of two, a shift and a mask: C's / and % on a signed value the
                # compiler cannot see is non-negative cost three SASS instructions each.
                ec = self.coerce(ea, t, node)
                if op == "floordiv":
                    return fold.binop(t, loc, "rshift", ec, ir.Const(t, loc, k.bit_length() - 1))
                return fold.binop(t, loc, "bitand", ec, ir.Const(t, loc, k - 1))
            op = "truncdiv" if op == "floordiv" else "truncmod"
        if op == "floordiv" and t.is_float:
            q = ir.BinOp(t, loc, "truediv", self.coerce(ea, t, node), self.coerce(eb, t, node))
            return ir.Math(t, loc, "floor", [q])
        a, b = self.coerce(ea, t, node), self.coerce(eb, t, node)
        return self.checked_arithmetic(op, t, a, b, node) or fold.binop(t, loc, op, a, b)

    def power_by_squaring(self, x: ir.Expr, n: int, node) -> ir.Expr:
        """``x ** n`` for a float ``x`` and an integer literal ``n``, multiplied out as Quadrants
        computes it (and as fast): the running square joins the product at each set bit of
        ``|n|``, lowest first (x ** 3 is x * (x * x)); the reciprocal for a negative ``n``."""
        loc = self.loc(node)
        t = x.type
        k = abs(n)
        if k == 0 and has_side_effects(x):
            self.once(x, node, "base")  # evaluated, as Python would, though x ** 0 is 1
        product = ir.Const(t, loc, 1.0) if k == 0 else None
        square = self.once(x, node, "base") if k > 1 else x
        while k:
            if k & 1:
                product = square if product is None else ir.BinOp(t, loc, "mul", product, square)
            k >>= 1
            if k:
                square = ir.BinOp(t, loc, "mul", square, square)
                if k > 1:
                    square = self.once(square, node, "square")
        return ir.BinOp(t, loc, "truediv", ir.Const(t, loc, 1.0), product) if n < 0 else product

    def operand_types(self, a, ea: ir.Expr, b, eb: ir.Expr) -> tuple[T.DType, T.DType]:
        """Types for promotion: a Python literal adapts to the other operand's type."""
        ta, tb = ea.type, eb.type
        if isinstance(a, CT) and not isinstance(b, CT):
            ta = adapt_literal(a.value, ta, tb)
        elif isinstance(b, CT) and not isinstance(a, CT):
            tb = adapt_literal(b.value, tb, ta)
        return ta, tb

    def expr_UnaryOp(self, node: ast.UnaryOp):
        v = self.expr(node.operand)
        if isinstance(v, MatrixValue):
            return self.elementwise(lambda x: self.unary(node, x), [v], node)
        return self.unary(node, v)

    def unary(self, node: ast.UnaryOp, v):
        if isinstance(v, CT):
            ops = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                   ast.Invert: operator.invert}
            return CT(ops[type(node.op)](v.value))
        e = self.to_expr(v, node.operand)
        loc = self.loc(node)
        if isinstance(node.op, ast.UAdd):
            return e
        if isinstance(node.op, (ast.Not, ast.Invert)) and e.type.is_float:  # as Quadrants: `not x` too
            symbol = "not" if isinstance(node.op, ast.Not) else "~"
            raise self.error(node, f"`{symbol}` takes integral inputs only, got {e.type.name}",
                             hint="compare instead: x == 0.0" if symbol == "not" else None)
        if isinstance(node.op, ast.Not):
            return ir.Unary(T.bool_, loc, "not", self.truth(e, node.operand))
        if isinstance(node.op, ast.Invert):
            if e.type is T.bool_:
                return ir.Unary(T.bool_, loc, "not", e)
            return ir.Unary(e.type, loc, "invert", e)
        t = T.i32 if e.type is T.bool_ else e.type
        return ir.Unary(t, loc, "neg", self.coerce(e, t, node))

    def expr_Compare(self, node: ast.Compare):
        left = self.expr(node.left)
        result = None
        for op_node, right_node in zip(node.ops, node.comparators, strict=False):
            if isinstance(op_node, (ast.In, ast.NotIn)):
                # Membership is a question about translation-time values (`op in ("add", "min")`).
                right = self.expr(right_node)
                if not (isinstance(left, CT) and isinstance(right, CT)):
                    raise self.error(node, "`in` and `not in` work on translation-time values only",
                                     hint="compare with == and combine with `or`")
                part = CT((left.value in right.value) == isinstance(op_node, ast.In))
                result = part if result is None else self.logical("and", result, part, node)
                left = right
                continue
            op = CMPOPS.get(type(op_node))
            if isinstance(op_node, (ast.Is, ast.IsNot)) and len(node.ops) == 1:
                right = self.expr(right_node)
                if isinstance(left, CT) and isinstance(right, CT):  # `x is None` of translation-time values
                    return CT((left.value is right.value) == isinstance(op_node, ast.Is))
                if isinstance(left, CT) and left.value is None or isinstance(right, CT) and right.value is None:
                    # an array (or any run-time value) is not None: `if qd.static(bias is not None)`
                    return CT(isinstance(op_node, ast.IsNot))
            if op is None:
                raise self.error(node, f"the comparison `{type(op_node).__name__}` is not supported in kernels")
            right = self.expr(right_node)
            if isinstance(left, MatrixValue) or isinstance(right, MatrixValue):
                left, right = self.as_matrix(left, node), self.as_matrix(right, node)  # `v == (1, 1, 1)`
                if isinstance(right, MatrixValue) and right_node is not node.comparators[-1]:
                    right = self.materialize(right, right_node, "cmp")  # read by the next comparison too
                part = self.elementwise(lambda x, y, op=op, at=right_node: self.compare(op, x, y, node, at),
                                        [left, right], node)
                # `lo <= v <= hi`: per component, both comparisons (Quadrants' `all(lo <= v <= hi)`)
                result = part if result is None else \
                    self.elementwise(lambda a, b: self.logical("and", a, b, node), [result, part], node)
                left = right
                continue
            part = self.compare(op, left, right, node, right_node)
            result = part if result is None else self.logical("and", result, part, node)
            left = right
        return result

    def compare(self, op: str, left, right, node: ast.AST, right_node: ast.AST):
        if isinstance(left, CT) and isinstance(right, CT):
            return CT(PY_CMPOPS[op](left.value, right.value))
        ea, eb = self.to_expr(left, node), self.to_expr(right, right_node)
        ta, tb = self.operand_types(left, ea, right, eb)
        t = T.bool_ if ta is T.bool_ and tb is T.bool_ else T.promote(ta, tb)
        return fold.compare(self.loc(node), op, self.coerce(ea, t, node), self.coerce(eb, t, node))

    def expr_BoolOp(self, node: ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) else "or"
        result = self.expr(node.values[0])
        for v in node.values[1:]:
            if isinstance(result, CT):
                if bool(result.value) == (op == "or"):
                    return result  # short-circuit at translation time
                result = self.expr(v)
                continue
            with self.collecting() as pre:
                rhs = self.expr(v)
            if pre:  # the right side needs statements: run them only when Python would
                loc = self.loc(v)
                tmp = self.new_temp("cond", self.truth(self.to_expr(result, node), node), v)
                test = ir.LocalRef(T.bool_, loc, tmp)
                if op == "or":
                    test = ir.Unary(T.bool_, loc, "not", test)
                pre.append(ir.Assign(loc, tmp, self.truth(self.to_expr(rhs, v), v)))
                self.emit(ir.If(loc, test, pre, []))
                result = ir.LocalRef(T.bool_, loc, tmp)
            else:
                result = self.bool_op(op, result, rhs, node)
        return result

    def bool_op(self, op: str, a, b, node: ast.AST):
        """``a and b`` / ``a or b`` as Quadrants computes it: of booleans, a boolean; of other
        scalars, the value Python gives (``x and y``: y when x is true, else x); of vectors,
        component by component, each a boolean."""
        if isinstance(a, MatrixValue) or isinstance(b, MatrixValue):
            a, b = self.as_matrix(a, node), self.as_matrix(b, node)
            return self.elementwise(lambda x, y: self.logical(op, x, y, node), [a, b], node)
        ea, eb = self.to_expr(a, node), self.to_expr(b, node)
        if ea.type is T.bool_ and eb.type is T.bool_:
            return self.logical(op, ea, eb, node)
        first = self.once(ea, node, op)
        test = self.truth(first, node)
        # (only the chosen side is evaluated: b still runs only when Python would run it)
        return self.select_values(test, b, first, node) if op == "and" else self.select_values(test, first, b, node)

    def logical(self, op: str, a, b, node: ast.AST):
        if isinstance(a, CT) and isinstance(b, CT):
            return CT(bool(a.value and b.value) if op == "and" else bool(a.value or b.value))
        ea, eb = self.truth(self.to_expr(a, node), node), self.truth(self.to_expr(b, node), node)
        return ir.Logical(T.bool_, self.loc(node), op, ea, eb)

    def truth(self, e: ir.Expr, node: ast.AST) -> ir.Expr:
        """``e`` as a boolean, as Python's truthiness would test it."""
        if e.type is T.bool_:
            return e
        return ir.Compare(T.bool_, e.loc, "ne", e, ir.Const(e.type, e.loc, 0.0 if e.type.is_float else 0))

    def condition(self, node: ast.expr) -> ir.Expr:
        return self.condition_of(self.expr(node), node)

    def condition_of(self, v, node: ast.expr) -> ir.Expr:
        if isinstance(v, ArrayHandle):
            raise self.error(node, "an ndarray is not a condition")
        if isinstance(v, MatrixValue):
            raise self.error(node, "a vector or matrix is not a condition",
                             hint="test it with .any() or .all()")
        return self.truth(self.to_expr(v, node), node)

    def expr_IfExp(self, node: ast.IfExp):
        cond = self.expr(node.test)
        if isinstance(cond, CT):
            return self.expr(node.body if cond.value else node.orelse)
        if isinstance(cond, MatrixValue):  # (Quadrants' words, which say what to write instead)
            raise self.error(node.test, f"the condition of `a if cond else b` is {describe(cond.shape)}, not a "
                                        "scalar: it picks one of two values. Please use \"qd.select\" instead.",
                             hint="qd.select(cond, a, b) picks component by component")
        c = self.truth(self.to_expr(cond, node.test), node.test)
        with self.collecting() as pre_a:
            a = self.expr(node.body)
        with self.collecting() as pre_b:
            b = self.expr(node.orelse)
        if (isinstance(a, MatrixValue) or isinstance(b, MatrixValue)) and not (pre_a or pre_b):
            c = self.once(c, node.test, "cond")
            return self.elementwise(lambda x, y: self.select_values(c, x, y, node), [a, b], node)
        sequences = [list(v.items) if isinstance(v, TupleValue) else [CT(x) for x in v.value]
                     if isinstance(v, CT) and isinstance(v.value, tuple) else None for v in (a, b)]
        if None not in sequences and len(sequences[0]) == len(sequences[1]) and not (pre_a or pre_b) and not any(
                isinstance(x, ir.Expr) and has_side_effects(x) for seq in sequences for x in seq):
            # `(j, i) if i > j else (i, j)`: a tuple of selections (an index, as Genesis writes one)
            c = self.once(c, node.test, "cond")
            return TupleValue([self.select_values(c, x, y, node) for x, y in zip(*sequences, strict=False)])
        ea, eb = self.to_expr(a, node.body), self.to_expr(b, node.orelse)
        ta, tb = self.operand_types(a, ea, b, eb)
        t = T.bool_ if ta is T.bool_ and tb is T.bool_ else T.promote(ta, tb)
        ea, eb = self.coerce(ea, t, node.body), self.coerce(eb, t, node.orelse)
        loc = self.loc(node)
        if pre_a or pre_b:
            var = ir.Local("sel", t, loc)
            self.emit(ir.Declare(loc, var, None))
            self.emit(ir.If(loc, c, pre_a + [ir.Assign(loc, var, ea)], pre_b + [ir.Assign(loc, var, eb)]))
            return ir.LocalRef(t, loc, var)
        return fold.select(t, loc, c, ea, eb)


    def select_values(self, cond: ir.Expr, a, b, node):
        ea, eb = self.to_expr(a, node), self.to_expr(b, node)
        ta, tb = self.operand_types(a, ea, b, eb)
        t = T.bool_ if ta is T.bool_ and tb is T.bool_ else T.promote(ta, tb)
        return fold.select(t, self.loc(node), cond, self.coerce(ea, t, node), self.coerce(eb, t, node))

    def coerce(self, e: ir.Expr, t: T.DType, node, *, explicit: bool = False,
               assigning: ir.Local | None = None) -> ir.Expr:
        """Convert ``e`` to ``t``. An implicit float -> int conversion truncates, as Quadrants'
        does, with the located warning Quadrants gives ("may lose precision")."""
        if e.type is t or e.type == t:  # (dtypes are one object per name: `is` is the usual answer)
            return e
        loc = node if isinstance(node, ir.Loc) else self.loc(node)
        if not explicit and e.type.is_float and (t.is_int or t is T.bool_):
            if isinstance(e, ir.Const) and float(e.value).is_integer():
                return ir.Const(t, e.loc, int(e.value))
            if assigning is not None:
                self.warn(loc, "lossy-conversion",
                          f"`{assigning.name}` is {t.name} (from its first assignment at line {assigning.loc.line}): "
                          f"the {e.type.name} value assigned to it is truncated",
                          hint=f"initialize it as a float (e.g. `{assigning.name} = 0.0`), or convert with "
                               f"qd.cast to say the truncation is meant")
            else:
                self.warn(loc, "lossy-conversion", f"implicit conversion from {e.type.name} to {t.name} truncates",
                          hint=f"convert explicitly with qd.cast(x, qd.{t.name}) to say it is meant")
        if isinstance(e, ir.Const):
            return retype_const(e, t)
        return ir.Cast(t, e.loc, e)

    def static_value(self, node: ast.expr, what: str = "qd.static()"):
        if self.is_static_call(node):
            args = node.args
            if len(args) != 1 or node.keywords:
                vals = [self.static_value(a, what) for a in args]
                return tuple(vals)
            node = args[0]
        v = self.expr(node)
        if isinstance(v, ir.Const):  # a folded expression, or a component of an unrolled index vector
            return v.value
        if not isinstance(v, CT):
            raise self.error(node, f"{what} needs a value known at translation time{_STATIC_WHY.get(what, '')}",
                             hint="use constants, template parameters or module-level globals")
        return v.value

    def is_static_call(self, node: ast.expr) -> bool:
        return self.is_call_to(node, "static")

    def is_call_to(self, node: ast.expr, builtin_name: str) -> bool:
        if not isinstance(node, ast.Call):
            return False
        return getattr(self.named_value(node.func), "_qd_builtin", None) == builtin_name

    def named_value(self, node: ast.expr):
        """The translation-time value a name or dotted name stands for (a global, a closure
        value, a template argument, an attribute of one), found without lowering anything;
        None when it names a run-time value or nothing. What a call is a call to is asked of
        most statements before they are lowered: this keeps that question cheap and free of
        side effects."""
        if isinstance(node, ast.Name):
            bound, _ = self.body.scope.lookup(node.id)
            if bound is not None:
                return bound.value if isinstance(bound, CT) else None
            found = self.global_lookup(node.id)
            return None if found is None else found.value
        if isinstance(node, ast.Attribute):
            base = self.named_value(node.value)
            if base is None:
                return None
            try:
                return getattr(base, node.attr, None)
            except Exception:  # noqa: BLE001 - a property that raises names nothing
                return None
        if isinstance(node, ast.Subscript) and isinstance(base := self.named_value(node.value), (dict, list, tuple)):
            key = node.slice.value if isinstance(node.slice, ast.Constant) else self.named_value(node.slice)
            if key is None and not isinstance(node.slice, ast.Constant):
                return None  # a run-time index
            try:  # a table of functions: OPS[k], ops["add"]
                return base[key]
            except (KeyError, IndexError, TypeError):
                return None
        return None

    def make_atomic(self, op: str, array: ir.Array, indices: list[ir.Expr], value: ir.Expr, node: ast.AST,
                    spelled: str, expected: ir.Expr | None = None) -> ir.Atomic:
        elem = array.type.dtype
        loc = self.loc(node)
        if op in ("and", "or", "xor") and elem.is_float:
            raise TranspileError(f"{spelled} on {elem.name}: bitwise atomics need an integer element", loc)
        v = self.coerce(value, elem, node)
        indices = self.before_write(array, indices, loc)
        if op == "sub":
            op, v = "add", (ir.Unary(elem, loc, "neg", v) if not isinstance(v, ir.Const) else
                            ir.Const(elem, loc, -v.value))
        return ir.Atomic(elem, loc, op, array, indices, v, expected)


# ----------------------------------------------------------------------------- attributes of arrays

# A field's or ndarray's attributes in a kernel, by name. A handler returns None where the
# array has no such attribute (an error then).
ARRAY_ATTRIBUTES = HandlerTable()


@ARRAY_ATTRIBUTES.handler("shape")
def _shape(lo: ExpressionLowering, base: ArrayHandle, node: ast.Attribute):
    if not isinstance(base.array, ir.Param):
        return None
    shape = lo.field_shape(base.array)
    return CT(shape) if shape is not None else ShapeHandle(base.array)


@ARRAY_ATTRIBUTES.handler("dtype")
def _dtype(lo: ExpressionLowering, base: ArrayHandle, node: ast.Attribute):
    if not isinstance(base.array, ir.Param):
        return None
    field = lo.field_of(base.array)  # (a u1 field keeps bytes: its own dtype says bool)
    return CT(field.dtype if field is not None else base.array.type.dtype)


@ARRAY_ATTRIBUTES.handler("size")
def _size(lo: ExpressionLowering, base: ArrayHandle, node: ast.Attribute):
    if not (isinstance(base.array, ir.Param) and base.array.is_array):  # its element count (a qd.BufferView's length)
        return None
    shape = lo.field_shape(base.array)
    if shape is not None:
        return CT(math.prod(shape))
    loc = lo.loc(node)
    dims = [ir.Shape(T.i32, loc, base.array, d) for d in range(base.array.type.ndim)]
    return functools.reduce(lambda a, b: ir.BinOp(T.i32, loc, "mul", a, b), dims) if dims else \
        ir.Const(T.i32, loc, 1)


@ARRAY_ATTRIBUTES.handler("grad", "dual")
def _derivative(lo: ExpressionLowering, base: ArrayHandle, node: ast.Attribute):
    return lo.derivative_attribute(base, node)


@ARRAY_ATTRIBUTES.handler("parent", "snode")
def _tree(lo: ExpressionLowering, base: ArrayHandle, node: ast.Attribute):
    return lo.tree_attribute(base, node)


@ARRAY_ATTRIBUTES.handler("n", "m")
def _element_extent(lo: ExpressionLowering, base: ArrayHandle, node: ast.Attribute):
    if not (isinstance(base.array, ir.Param) and base.array.type.element_shape):
        return None
    es = base.array.type.element_shape  # a field of vectors or matrices: their extents
    return CT(es[0] if node.attr == "n" else (es[1] if len(es) == 2 else 1))


@ARRAY_ATTRIBUTES.handler("element_shape")
def _element_shape(lo: ExpressionLowering, base: ArrayHandle, node: ast.Attribute):
    return CT(ElementShape(base.array.type.element_shape)) if isinstance(base.array, ir.Param) else None


@ARRAY_ATTRIBUTES.handler("fill")
def _fill(lo: ExpressionLowering, base: ArrayHandle, node: ast.Attribute):
    return CT(BoundMethod(fill, base))

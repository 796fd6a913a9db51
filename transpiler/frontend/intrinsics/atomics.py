"""``qd.atomic_*`` and the augmented assignments' atomics on arrays, vectors and kernel-
scope variables."""
from __future__ import annotations

import ast

from ...errors import TranspileError
from ...ir import nodes as ir
from ..values import CT, ArrayHandle
from .table import handler
from ..values import MatrixValue


@handler("atomic_add", "atomic_sub", "atomic_mul", "atomic_min", "atomic_max", "atomic_and",
         "atomic_or", "atomic_xor", "atomic_exchange", "atomic_cas")
def _atomic(lo, name, node):
    op = name[len("atomic_"):]
    n = 3 if op == "cas" else 2
    if node.keywords or len(node.args) != n:
        raise lo.error(node, f"qd.{name}() takes {n} arguments")
    target = node.args[0]
    used = lo.body.statement_call is not node
    if isinstance(target, ast.Name):
        return _atomic_on_name(lo, name, op, node, target, used)
    if not isinstance(target, (ast.Subscript, ast.Attribute)):
        raise lo.error(target, f"cannot use a non-writable target as the first operand of qd.{name}: it must be an "
                               "ndarray element such as a[i], a local variable or a kernel-scope variable, not this "
                               "expression")
    sp = lo.struct_places(target)
    if sp is not None:  # a member of a struct-field element: ps[i].mass
        place, indices = sp
        if not isinstance(place, ArrayHandle):
            raise lo.error(target, f"qd.{name} on a whole struct is not supported; update one member")
        places = lo.whole_element(place.array, indices, target) if place.array.type.element_shape else \
            (place.array, [indices], ())
        return _atomic_on_components(lo, name, op, node, *places)
    places = lo.element_places(target)
    if places is not None:
        return _atomic_on_components(lo, name, op, node, *places)
    if isinstance(target, ast.Attribute):
        raise lo.error(target, f"the first argument of qd.{name} must be an ndarray element such as a[i]")
    array, indices = lo.lvalue(target)
    values = [lo.rvalue(a) for a in node.args[1:]]
    expected = None
    if op == "cas":
        expected = lo.coerce(values[0], array.type.dtype, node.args[1])
        values = values[1:]
        if array.type.dtype.is_float:
            raise TranspileError(f"qd.atomic_cas on {array.type.dtype.name}: compare-and-swap needs an integer "
                                 "element", lo.loc(node))
    elif lo.body.statement_call is node and isinstance(target, ast.Subscript):  # its old value unused
        lo.update_element(op, array, indices, values[0], target, node, f"qd.{name}")
        return CT(None)
    return lo.make_atomic(op, array, indices, values[0], node, f"qd.{name}", expected)


def _atomic_on_components(lo, name: str, op: str, node: ast.Call, array, places: list, shape: tuple):
    """An atomic on an element of an ndarray of vectors or matrices (or on components of
    one): one atomic per component, as Quadrants has it; the old values form the result."""
    if op == "cas":
        if shape or len(places) != 1:
            raise lo.error(node, f"qd.{name} on a vector or matrix element is not supported; compare-and-swap "
                                 "one component")
        if array.type.dtype.is_float:
            raise TranspileError(f"qd.atomic_cas on {array.type.dtype.name}: compare-and-swap needs an integer "
                                 "element", lo.loc(node))
        expected = lo.coerce(lo.rvalue(node.args[1]), array.type.dtype, node.args[1])
        return lo.make_atomic(op, array, places[0], lo.rvalue(node.args[2]), node, f"qd.{name}", expected)
    value = lo.expr(node.args[1])

    if isinstance(value, MatrixValue) and len(value.items) != len(places):
        raise lo.error(node.args[1], f"qd.{name}: the element has {len(places)} component(s), the value "
                                     f"{len(value.items)}")
    values = value.items if isinstance(value, MatrixValue) else \
        [lo.once(lo.to_expr(value, node.args[1]), node, "tmp")] * len(places)
    olds = [lo.make_atomic(op, array, idx, v, node, f"qd.{name}") for idx, v in zip(places, values, strict=False)]
    if lo.body.statement_call is node:
        for a in olds:
            lo.emit(ir.ExprStmt(lo.loc(node), a))
        return CT(None)
    if not shape:
        return olds[0]
    return lo.make_matrix(shape, olds, node)


def _atomic_on_name(lo, name: str, op: str, node: ast.Call, target: ast.Name, used: bool):
    """An atomic on a variable: a kernel-scope one is shared by threads (an atomic, or a
    reduction inside a parallel loop); a local belongs to its thread (read, combine, write).
    Either way it returns the old value, as Quadrants does."""
    bound, scope = lo.body.scope.lookup(target.id)
    values = [lo.rvalue(a) for a in node.args[1:]]
    expected = values[0] if op == "cas" else None
    value = values[-1]
    spelled = f"qd.{name}"
    shared = lo.shared_for_update(bound, scope) or lo.shared_for_read(bound, scope)
    if shared is not None:
        dtype = shared.type
        if op == "cas":
            expected = lo.coerce(expected, dtype, node.args[1])
        result = lo.update_var(shared, op, value, node, spelled, used, expected)
    elif isinstance(bound, ir.Local):
        lo.check_writable(bound, scope, target)
        dtype = bound.type
        ref = ir.LocalRef(dtype, lo.loc(target), bound)
        result = lo.update_serially(ref, lambda v: lo.emit(ir.Assign(lo.loc(node), bound, v)), op, value, node, used,
                                    expected)
    elif isinstance(bound, ir.Param):
        raise lo.error(target, f"the first argument of qd.{name} must be a variable or an ndarray element; "
                               f"`{target.id}` is a scalar parameter, which is read-only",
                       hint=f"copy it into a local first: `{target.id}_local = {target.id}`")
    else:
        raise lo.error(target, f"the first argument of qd.{name} must be a variable or an ndarray element; "
                               f"`{target.id}` is neither")
    if op in ("and", "or", "xor") and dtype.is_float:
        raise TranspileError(f"{spelled} on {dtype.name}: bitwise atomics need an integer element", lo.loc(node))
    return result if result is not None else CT(None)

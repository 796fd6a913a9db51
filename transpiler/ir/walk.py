"""The one way to traverse the IR: which fields of a node hold sub-expressions, expression
lists, nested statement bodies, references (locals, parameters, arrays) and plain data is
read once per node class from its dataclass annotations, so a new node kind is walked,
keyed and rebuilt without touching this file or any pass."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import TypeVar

from . import nodes as ir
from .memo import per_kernel
from .records import record

Node = TypeVar("Node", ir.Expr, ir.Stmt)


@record(frozen=True)
class NodeFields:
    exprs: tuple[str, ...]       # one sub-expression (or None)
    expr_lists: tuple[str, ...]  # a list of sub-expressions
    bodies: tuple[str, ...]      # a nested statement list
    refs: tuple[str, ...]        # a Local, Param or array the node names
    attrs: tuple[str, ...]       # plain data: an op name, a dimension, a flag
    order: tuple[tuple[str, str], ...]  # (field, group) of the sub-node fields, in declaration order


_REFS = {"Local", "Param", "SharedArray", "Array"}
_SKIP = {"loc", "type"}
_FIELDS: dict[type, NodeFields] = {}


def fields_of(cls: type) -> NodeFields:
    hit = _FIELDS.get(cls)
    if hit is None:
        groups: dict[str, list[str]] = {"exprs": [], "expr_lists": [], "bodies": [], "refs": [], "attrs": []}
        order = []
        for f in dataclasses.fields(cls):
            if f.name in _SKIP:
                continue
            t = str(f.type).replace(" ", "")
            if t in ("Expr", "Expr|None"):
                group = "exprs"
            elif t == "list[Expr]":
                group = "expr_lists"
            elif t == "list[Stmt]":
                group = "bodies"
            else:
                group = "refs" if t in _REFS else "attrs"
            groups[group].append(f.name)
            if group in ("exprs", "expr_lists", "bodies"):
                order.append((f.name, group))
        hit = _FIELDS[cls] = NodeFields(**{k: tuple(v) for k, v in groups.items()}, order=tuple(order))
    return hit


def _compile_children(cls: type) -> Callable[[ir.Expr], list[ir.Expr]]:
    """A function returning a node's direct sub-expressions, written out for its class: the
    walks below call it for every node, so it does no per-call field lookup."""
    fs = fields_of(cls)
    lines = ["def kids(e):", "    out = []"]
    for f in fs.exprs:
        lines += [f"    x = e.{f}", "    if x is not None:", "        out.append(x)"]
    lines += [f"    out.extend(e.{f})" for f in fs.expr_lists]
    lines.append("    return out")
    scope: dict = {}
    exec("\n".join(lines), scope)  # noqa: S102 - field names come from dataclass definitions
    return scope["kids"]


_CHILDREN: dict[type, Callable[[ir.Expr], list[ir.Expr]]] = {}
_BODIES: dict[type, tuple[str, ...]] = {}


def _children_of(cls: type) -> Callable[[ir.Expr], list[ir.Expr]]:
    fn = _CHILDREN.get(cls)
    if fn is None:
        fn = _CHILDREN[cls] = _compile_children(cls)
    return fn


def children(e: ir.Expr) -> list[ir.Expr]:
    """The direct sub-expressions of ``e``."""
    return _children_of(type(e))(e)


def _subtree(e: ir.Expr, out: list[ir.Expr]) -> list[ir.Expr]:
    """Append ``e`` and every expression below it to ``out``, depth first. One loop and a
    list: the walks run on every new IR, and generators cost more than the visit."""
    kids = _CHILDREN
    stack = [e]
    while stack:
        n = stack.pop()
        out.append(n)
        fn = kids.get(type(n))
        stack += fn(n) if fn is not None else _children_of(type(n))(n)
    return out


def iter_expr(e: ir.Expr) -> Iterator[ir.Expr]:
    """``e`` and every expression below it."""
    return iter(_subtree(e, []))


def stmt_exprs(st: ir.Stmt) -> list[ir.Expr]:
    """The expressions a statement evaluates itself (not those of its nested bodies)."""
    return children(st)  # the same fields hold them


def _body_fields(cls: type) -> tuple[str, ...]:
    hit = _BODIES.get(cls)
    if hit is None:
        hit = _BODIES[cls] = fields_of(cls).bodies
    return hit


def stmt_bodies(st: ir.Stmt) -> list[list[ir.Stmt]]:
    """The statement lists nested in a statement (if/else arms, loop bodies)."""
    return [getattr(st, f) for f in _body_fields(type(st))]


def _flatten(stmts: list[ir.Stmt], out: list[ir.Stmt]) -> list[ir.Stmt]:
    bodies = _BODIES
    for st in stmts:
        out.append(st)
        fields = bodies.get(type(st))
        if fields is None:
            fields = _body_fields(type(st))
        for f in fields:
            _flatten(getattr(st, f), out)
    return out


def all_stmts(stmts: list[ir.Stmt]) -> Iterator[ir.Stmt]:
    """Every statement, nested ones included, in program order."""
    return iter(_flatten(stmts, []))


def all_exprs(stmts: list[ir.Stmt]) -> Iterator[ir.Expr]:
    """Every expression evaluated anywhere in ``stmts``: each statement's own in field order,
    each tree depth first."""
    kids = _CHILDREN
    out: list[ir.Expr] = []
    for st in _flatten(stmts, []):
        fn = kids.get(type(st))
        for top in (fn(st) if fn is not None else _children_of(type(st))(st)):
            _subtree(top, out)
    return iter(out)


def node_kinds(stmts: list[ir.Stmt]) -> frozenset[type]:
    """The node classes (statements and expressions) anywhere in ``stmts``: one walk that
    lets a pass skip its own when what it looks for is not there (one loop over a stack of
    both kinds of node, as ``_subtree``)."""
    kinds: set[type] = set()
    kids, bodies = _CHILDREN, _BODIES
    stack = list(stmts)
    while stack:
        n = stack.pop()
        cls = type(n)
        kinds.add(cls)
        fn = kids.get(cls)
        stack += fn(n) if fn is not None else _children_of(cls)(n)
        fields = bodies.get(cls)
        if fields is None:
            fields = _body_fields(cls)
        for f in fields:
            stack += getattr(n, f)
    return frozenset(kinds)


@per_kernel
def task_node_kinds(task: ir.Task) -> frozenset[type]:
    """``node_kinds`` of a task's code, once per task."""
    return node_kinds(task.code())


@per_kernel
def kernel_node_kinds(kernel: ir.Kernel) -> frozenset[type]:
    """``node_kinds`` of every task's code and every function's body, once per kernel."""
    return frozenset().union(*(task_node_kinds(t) for t in kernel.tasks),
                             node_kinds([st for f in kernel.functions for st in f.body]))


def called_by(kernel: ir.Kernel, stmts: list[ir.Stmt]) -> list[ir.Function]:
    """The functions ``stmts`` call, directly or not, in ``kernel``'s definition order."""
    if not kernel.functions:  # most kernels call no @qd.real_func: no walk
        return []
    seen = {e.function for e in all_exprs(stmts) if isinstance(e, ir.Call)}
    todo = list(seen)
    while todo:
        for name in kernel.function(todo.pop()).calls:
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return [f for f in kernel.functions if f.name in seen]


def task_code(kernel: ir.Kernel, task: ir.Task) -> list[ir.Stmt]:
    """Every statement ``task``'s entry point may run: its own and those of the functions it
    calls."""
    code = task.code()
    for f in called_by(kernel, code):
        code = code + f.body
    return code


def contains(kernel: ir.Kernel, *classes: type) -> bool:
    """Whether a node of one of ``classes`` (or of a subclass) is anywhere in ``kernel``."""
    return any(issubclass(k, classes) for k in kernel_node_kinds(kernel))


def attributes(node: ir.Expr | ir.Stmt) -> tuple:
    """A node's plain data (op, fn, kind, dim, ...): with its class and references, what
    tells two nodes with the same children apart."""
    return tuple(getattr(node, f) for f in fields_of(type(node)).attrs)


def references(node: ir.Expr | ir.Stmt) -> tuple:
    """The locals, parameters and arrays a node names itself."""
    return tuple(getattr(node, f) for f in fields_of(type(node)).refs)


def rebuild(node: Node, expr: Callable[[str, ir.Expr], ir.Expr],
            body: Callable[[str, list[ir.Stmt]], list[ir.Stmt]] | None = None) -> Node:
    """``node`` with every sub-expression replaced by ``expr(field name, child)`` (in field
    order) and, for a statement, every nested body by ``body(field name, stmts)``. The node
    itself is returned when nothing changed."""
    changes = {}
    for f, group in fields_of(type(node)).order:
        old = getattr(node, f)
        if group == "exprs" and old is not None:
            new = expr(f, old)
        elif group == "expr_lists":
            new = [expr(f, x) for x in old]
            new = old if all(a is b for a, b in zip(new, old)) else new
        elif group == "bodies" and body is not None:
            new = body(f, old)
        else:
            continue
        if new is not old:
            changes[f] = new
    return dataclasses.replace(node, **changes) if changes else node

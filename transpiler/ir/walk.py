"""The one way to traverse the IR: which fields of a node hold sub-expressions, expression
lists, nested statement bodies, references (locals, parameters, arrays) and plain data is
read once per node class from its dataclass annotations, so a new node kind is walked,
keyed and rebuilt without touching this file or any pass."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterator

from . import nodes as ir


@dataclass(frozen=True)
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


def children(e: ir.Expr) -> list[ir.Expr]:
    """The direct sub-expressions of ``e``."""
    fs = fields_of(type(e))
    out = [getattr(e, f) for f in fs.exprs if getattr(e, f) is not None]
    for f in fs.expr_lists:
        out.extend(getattr(e, f))
    return out


def iter_expr(e: ir.Expr) -> Iterator[ir.Expr]:
    """``e`` and every expression below it."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(children(n))


def stmt_exprs(st: ir.Stmt) -> list[ir.Expr]:
    """The expressions a statement evaluates itself (not those of its nested bodies)."""
    return children(st)  # the same fields hold them


def stmt_bodies(st: ir.Stmt) -> list[list[ir.Stmt]]:
    """The statement lists nested in a statement (if/else arms, loop bodies)."""
    return [getattr(st, f) for f in fields_of(type(st)).bodies]


def all_stmts(stmts: list[ir.Stmt]) -> Iterator[ir.Stmt]:
    """Every statement, nested ones included, in program order."""
    for st in stmts:
        yield st
        for body in stmt_bodies(st):
            yield from all_stmts(body)


def all_exprs(stmts: list[ir.Stmt]) -> Iterator[ir.Expr]:
    """Every expression evaluated anywhere in ``stmts``."""
    for st in all_stmts(stmts):
        for e in stmt_exprs(st):
            yield from iter_expr(e)


def attributes(node) -> tuple:
    """A node's plain data (op, fn, kind, dim, ...): with its class and references, what
    tells two nodes with the same children apart."""
    return tuple(getattr(node, f) for f in fields_of(type(node)).attrs)


def references(node) -> tuple:
    """The locals, parameters and arrays a node names itself."""
    return tuple(getattr(node, f) for f in fields_of(type(node)).refs)


def rebuild(node, expr: Callable[[str, ir.Expr], ir.Expr],
            body: Callable[[str, list[ir.Stmt]], list[ir.Stmt]] | None = None):
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

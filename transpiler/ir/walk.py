"""Generic walks over the IR: the sub-expressions of an expression, the expressions and
nested bodies of a statement. Which fields hold what is read once per node class from its
dataclass annotations, so a new node kind is walked without touching this file."""
from __future__ import annotations

import dataclasses
from typing import Iterator

from . import nodes as ir

_FIELDS: dict[type, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {}


def _fields(cls: type) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(single-expression fields, expression-list fields, statement-list fields) of ``cls``."""
    hit = _FIELDS.get(cls)
    if hit is None:
        one, many, bodies = [], [], []
        for f in dataclasses.fields(cls):
            t = str(f.type).replace(" ", "")
            if t in ("Expr", "Expr|None"):
                one.append(f.name)
            elif t == "list[Expr]":
                many.append(f.name)
            elif t == "list[Stmt]":
                bodies.append(f.name)
        hit = _FIELDS[cls] = (tuple(one), tuple(many), tuple(bodies))
    return hit


def children(e: ir.Expr) -> list[ir.Expr]:
    """The direct sub-expressions of ``e``."""
    one, many, _ = _fields(type(e))
    out = [getattr(e, f) for f in one if getattr(e, f) is not None]
    for f in many:
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
    one, many, _ = _fields(type(st))
    out = [getattr(st, f) for f in one if getattr(st, f) is not None]
    for f in many:
        out.extend(getattr(st, f))
    return out


def stmt_bodies(st: ir.Stmt) -> list[list[ir.Stmt]]:
    """The statement lists nested in a statement (if/else arms, loop bodies)."""
    return [getattr(st, f) for f in _fields(type(st))[2]]


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

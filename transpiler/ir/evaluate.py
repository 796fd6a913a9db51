"""Evaluate the host-computable expressions of a kernel (its range bounds) with Python
integers, so a runtime can size the grid before launching."""
from __future__ import annotations

import operator

from . import nodes as ir

PY_CMPOPS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
             "ne": operator.ne}


class NotHostComputable(Exception):
    pass


def evaluate(e: ir.Expr, scalars: dict[str, object], shapes: dict[str, tuple[int, ...]],
             env: dict[int, ir.Expr] | None = None) -> int | float | bool:
    """``scalars``: parameter name -> value; ``shapes``: ndarray name -> shape;
    ``env``: values of the top-level locals the expression may read (see ``uniform_env``)."""
    return _ev(e, scalars, shapes, env or {})


_BINOPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv,
           "mod": operator.mod, "truediv": operator.truediv, "truncdiv": lambda a, b: int(a / b),
           "truncmod": lambda a, b: a - int(a / b) * b, "lshift": operator.lshift, "rshift": operator.rshift,
           "bitand": operator.and_, "bitor": operator.or_, "bitxor": operator.xor, "pow": operator.pow}
_MATH = {"min": min, "max": max, "abs": abs}


def _ev(x: ir.Expr, scalars: dict, shapes: dict, env: dict):
    # (a module function, not a closure that calls itself: that is a reference cycle per call)
    def ev(y: ir.Expr):
        return _ev(y, scalars, shapes, env)

    if isinstance(x, ir.Const):
        return x.value
    if isinstance(x, ir.ParamRef):
        return scalars[x.param.name]
    if isinstance(x, ir.Shape):
        return shapes[x.array.name][x.dim]
    if isinstance(x, ir.LocalRef) and id(x.var) in env:
        return ev(env[id(x.var)])
    if isinstance(x, ir.Cast):
        v = ev(x.a)
        return float(v) if x.type.is_float else int(v)
    if isinstance(x, ir.Unary) and x.op == "neg":
        return -ev(x.a)
    if isinstance(x, ir.Unary) and x.op == "not":
        return not ev(x.a)
    if isinstance(x, ir.Compare):
        return PY_CMPOPS[x.op](ev(x.a), ev(x.b))
    if isinstance(x, ir.Logical):
        return (ev(x.a) and ev(x.b)) if x.op == "and" else (ev(x.a) or ev(x.b))
    if isinstance(x, ir.Select):
        return ev(x.a) if ev(x.cond) else ev(x.b)
    if isinstance(x, ir.BinOp):
        a, b = ev(x.a), ev(x.b)
        return _BINOPS[x.op](a, b)
    if isinstance(x, ir.Math) and x.fn in ("min", "max", "abs"):
        args = [ev(a) for a in x.args]
        return _MATH[x.fn](*args)
    raise NotHostComputable(type(x).__name__)


def host_computable(e: ir.Expr, env: dict[int, ir.Expr]) -> bool:
    """Whether ``evaluate`` can compute ``e`` on the host (no memory reads)."""
    try:
        evaluate(e, _AnyValue(), _AnyValue(), env)
    except NotHostComputable:
        return False
    return True


class _AnyValue(dict):
    """Stands for every parameter value and shape when only computability matters."""

    def __missing__(self, key: str) -> _One:
        return _One()


class _One(int):
    def __new__(cls):
        return int.__new__(cls, 1)

    def __getitem__(self, _: int) -> int:
        return 1


def uniform_env(task: ir.Task) -> dict[int, ir.Expr]:
    """The values of the top-level locals a task recomputes first (its range may use them)."""
    env: dict[int, ir.Expr] = {}
    for st in task.prelude:
        if isinstance(st, ir.Declare) and st.init is not None:
            env[id(st.var)] = st.init
        elif isinstance(st, ir.Assign):
            env[id(st.var)] = st.value
    return env

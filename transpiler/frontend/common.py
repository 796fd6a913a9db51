"""Tables and helpers shared by the lowering modules: operator tables, what a kernel may
not use, and small facts about IR values (known non-negative, side effects, locals read)."""
from __future__ import annotations

import ast
import builtins
import inspect
import operator
import os
from functools import lru_cache
from collections.abc import Callable

from ..ir import nodes as ir
from ..ir import types as T
from ..ir.walk import all_exprs, all_stmts, iter_expr
from ..passes.ranges import value_range
from .values import CT


BINOPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
    ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift",
    ast.BitAnd: "bitand", ast.BitOr: "bitor", ast.BitXor: "bitxor",
}
PY_BINOPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "lshift": operator.lshift, "rshift": operator.rshift, "bitand": operator.and_,
    "bitor": operator.or_, "bitxor": operator.xor,
}
CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
           "pow": "**", "lshift": "<<", "rshift": ">>", "bitand": "&", "bitor": "|", "bitxor": "^"}
# Memory augmented assignments that Quadrants makes atomic.
ATOMIC_AUGASSIGN = {"add": "add", "sub": "sub", "bitand": "and", "bitor": "or", "bitxor": "xor"}

# Python built-ins a kernel may call on translation-time values.
CT_PY_CALLABLES = {range, len, builtins.min, builtins.max, builtins.abs, int, float, bool, tuple,
                    list, enumerate, zip, reversed, isinstance, sum}
UNSUPPORTED_STMT = {
    ast.Try: "try/except", ast.With: "with", ast.ClassDef: "class definitions",
    ast.FunctionDef: "nested function definitions", ast.AsyncFunctionDef: "async functions",
    ast.Raise: "raise", ast.Import: "import", ast.ImportFrom: "import", ast.Global: "global",
    ast.Nonlocal: "nonlocal", ast.Delete: "del", ast.AsyncFor: "async for",
    ast.AsyncWith: "async with",
}
UNSUPPORTED_EXPR = {
    ast.SetComp: "set comprehensions",
    ast.DictComp: "dict comprehensions", ast.GeneratorExp: "generator expressions",
    ast.Lambda: "lambdas", ast.Set: "sets",
    ast.JoinedStr: "f-strings", ast.Await: "await expressions", ast.Yield: "yield expressions",
    ast.YieldFrom: "yield expressions", ast.Starred: "starred arguments",
    ast.Slice: "slices",
}


def closure_vars(fn: Callable) -> dict[str, object]:
    code = fn.__code__
    if not fn.__closure__:
        return {}
    out = {}
    for name, cell in zip(code.co_freevars, fn.__closure__, strict=False):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # not yet bound
            pass
    return out


def weak_type(value: object) -> T.DType:
    """The type of a translation-time scalar: numpy scalars keep theirs, Python literals
    get the default int / float."""
    np_dtype = getattr(value, "dtype", None)
    if np_dtype is not None and getattr(value, "shape", None) == ():
        return T.from_numpy(np_dtype)
    return T.literal_type(value)


def is_py_scalar(value: object) -> bool:
    if isinstance(value, (bool, int, float)):
        return True
    return getattr(value, "shape", None) == () and hasattr(value, "dtype")


def target_nodes(target: ast.expr) -> list[ast.expr]:
    return list(target.elts) if isinstance(target, ast.Tuple) else [target]


def adapt_literal(value, own: T.DType, other: T.DType) -> T.DType:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return own
    if isinstance(value, int):
        if other.is_int and T.fits(value, other):
            return other
        if other.is_float:
            return other
        return own
    return other if other.is_float else own


def retype_const(c: ir.Const, t: T.DType) -> ir.Const:
    v = c.value
    if t is T.bool_:
        return ir.Const(t, c.loc, bool(v))
    if t.is_float:
        return ir.Const(t, c.loc, float(v))
    v = int(v)
    mask = (1 << t.bits) - 1
    v &= mask
    if t.kind == "int" and v >= 1 << (t.bits - 1):
        v -= 1 << t.bits
    return ir.Const(t, c.loc, v)


PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@lru_cache(maxsize=1024)
def is_library(file: str) -> bool:
    return os.path.abspath(file).startswith(PACKAGE_DIR + os.sep)


# The parsed trees are cached for the life of the process and never changed, and the same
# function is walked again for every call site, target and translation: walk each node once.
# (Profiled on bench/corpus.py: ast.walk was a quarter of the frontend's time.) Keyed by
# identity; the bound keeps nodes built on the fly (e.g. qd.cast's) from piling up.
@lru_cache(maxsize=8192)
def ast_nodes(node: ast.AST) -> tuple[ast.AST, ...]:
    """``node`` and every node below it, breadth first (ast.walk's order, at about half its
    cost: the first call of a kernel walks every function it inlines several times)."""
    out = [node]
    AST = ast.AST
    i = 0
    while i < len(out):
        n = out[i]
        i += 1
        for name in n._fields:
            v = getattr(n, name, None)
            if isinstance(v, list):
                out.extend(x for x in v if isinstance(x, AST))
            elif isinstance(v, AST):
                out.append(v)
    return tuple(out)


@lru_cache(maxsize=1024)
def calls_with_names(fdef: ast.AST) -> tuple[tuple[ast.Call, tuple[str, ...]], ...]:
    """The calls in ``fdef`` that take a plain name as an argument, each with those names (what
    a callee might assign through a reference; read once per function)."""
    out = []
    for call in ast_nodes(fdef):
        if isinstance(call, ast.Call):
            names = tuple(a.id for a in (*call.args, *(k.value for k in call.keywords)) if isinstance(a, ast.Name))
            if names:
                out.append((call, names))
    return tuple(out)


@lru_cache(maxsize=1024)
def without_docstring(fdef: ast.FunctionDef) -> list[ast.stmt]:
    """A function's statements, its docstring left out."""
    body = fdef.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


# Cached, as the comment says: the scope of every inlined call asks again (the decorator went
# to without_docstring when that was added above; 700 of 2,300 isinstance calls a translation).
@lru_cache(maxsize=1024)
def store_counts(fdef: ast.AST) -> dict[str, int]:
    """How often each name is assigned in ``fdef``; shared between callers, read only."""
    counts: dict[str, int] = {}
    for n in ast_nodes(fdef):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts


@lru_cache(maxsize=1024)
def component_stores(fdef: ast.AST) -> frozenset[str]:
    """The names ``fdef`` assigns a part of (``p[0] = x``, ``p.x += 1``, ``s.v[1] = y``): a
    vector or struct parameter so written needs its own copy, as arguments pass by value."""
    names = set()
    for n in ast_nodes(fdef):
        if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
            root = n.value
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            if isinstance(root, ast.Name):
                names.add(root.id)
    return frozenset(names)


@lru_cache(maxsize=1024)
def signature(fn: Callable) -> inspect.Signature:
    return inspect.signature(fn)


@lru_cache(maxsize=1024)
def positional_names(fn: Callable) -> tuple[str, ...] | None:
    """The parameter names when every parameter is a plain positional-or-keyword one without
    a default: a call with exactly that many positional arguments then binds them in order
    (``Signature.bind`` does the same, at a tenth of the speed)."""
    params = signature(fn).parameters.values()
    if all(p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty for p in params):
        return tuple(p.name for p in params)
    return None


def bind_arguments(fn: Callable, args: list, kwargs: dict) -> dict:
    """Parameter name -> argument value for a call of ``fn``, defaults applied; a call that
    does not fit raises TypeError with Python's message."""
    names = positional_names(fn)
    if names is not None and not kwargs and len(args) == len(names):
        return dict(zip(names, args, strict=False))

    sig = signature(fn)
    bound = sig.bind(*args, **kwargs)
    for p in sig.parameters.values():  # a default is a translation-time value (`scale: float = 0.5`)
        if p.name not in bound.arguments and p.default is not p.empty:
            bound.arguments[p.name] = CT(p.default)
    bound.apply_defaults()  # what is left: empty *args and **kwargs
    return dict(bound.arguments)


@lru_cache(maxsize=1024)
def annotations(fn: Callable) -> dict:
    """A @qd.func's evaluated annotations, read once per function as its signature is (shared
    between callers, read only)."""
    return inspect.get_annotations(fn, eval_str=True)


def name_loads(body: list[ast.stmt]) -> dict[str, int]:
    """How often each name is read in ``body``; shared between callers, read only."""
    return _name_loads(tuple(body))


@lru_cache(maxsize=4096)
def _name_loads(body: tuple[ast.stmt, ...]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for st in body:
        for n in ast_nodes(st):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                counts[n.id] = counts.get(n.id, 0) + 1
    return counts


@lru_cache(maxsize=4096)
def return_count(body: tuple[ast.stmt, ...]) -> int:
    """How many `return` statements ``body`` holds, nested ones included."""
    return sum(isinstance(n, ast.Return) for st in body for n in ast_nodes(st))


def nonneg(e: ir.Expr) -> bool:
    """Whether an integer expression is known to be >= 0 (lets // and % be C's / and %)."""
    if isinstance(e, ir.Const):
        return not isinstance(e.value, float) and e.value >= 0
    if isinstance(e, (ir.Shape, ir.ThreadIndex)):
        return True
    if isinstance(e, ir.LocalRef):
        return e.var.nonneg or (e.var.bounds is not None and e.var.bounds[0] >= 0)
    if isinstance(e, ir.BinOp):
        if e.op in ("truncdiv", "truncmod", "floordiv", "mod", "rshift"):
            return nonneg(e.a) and nonneg(e.b)
        if e.op == "bitand":
            return nonneg(e.a) or nonneg(e.b)
        # A sum or product of non-negative values may wrap negative past the type's max
        # ((i * 1000003) % n, a hash), where C's % is not Python's: only its range says ((i + 1)
        # % 16 of a loop variable over range(16)).
        r = value_range(e)
        return r is not None and r[0] >= 0
    if isinstance(e, ir.Cast):
        # Widening only: a narrowing cast of a large non-negative value may come out negative.
        return e.a.type.is_int and (e.a.type.kind == "uint" and e.type.bits > e.a.type.bits or
                                    e.type.bits >= e.a.type.bits and nonneg(e.a))
    if isinstance(e, ir.SubgroupOp) and e.op == "invocation_id":
        return True
    return False


def is_simple(e: ir.Expr) -> bool:
    return isinstance(e, (ir.Const, ir.LocalRef, ir.ParamRef, ir.Shape))


def is_loop_invariant(e: ir.Expr, assigned_in_body: set[str]) -> bool:
    """No memory reads and no locals the loop body assigns (by their Python names)."""
    for n in iter_expr(e):
        if isinstance(n, (ir.Load, ir.Atomic, ir.ShmemOp, ir.Call, ir.Clock)):
            return False
        if isinstance(n, ir.LocalRef) and n.var.name in assigned_in_body:
            return False
    return True


def has_side_effects(e: ir.Expr) -> bool:
    # (a clock read counts: evaluated twice or moved, it reads another time)
    return any(isinstance(n, (ir.Atomic, ir.ShmemOp, ir.Call, ir.Clock)) for n in iter_expr(e))


def locals_read_expr(e: ir.Expr) -> set[ir.Local]:
    return {n.var for n in iter_expr(e) if isinstance(n, ir.LocalRef)}


def locals_read(stmts: list[ir.Stmt]) -> set[ir.Local]:
    return {e.var for e in all_exprs(stmts) if isinstance(e, ir.LocalRef)}


def locals_assigned(stmts: list[ir.Stmt]) -> set[ir.Local]:
    return {st.var for st in all_stmts(stmts) if isinstance(st, ir.Assign)} | {
        var for e in all_exprs(stmts) if isinstance(e, ir.Call) for var in e.outs}

"""The language's translation-time built-ins: struct and matrix types, ``qd.static`` and
its checks, ``qd.ndrange``, ``qd.loop_config``, cache hints, graph and sparse calls."""
from __future__ import annotations

import ast

from ...ir import nodes as ir
from ..fields import StructArray
from ..values import CT, ArrayHandle, StaticIndex, StaticNdrange, TupleValue
from .table import handler, call_args
from ...lang.ops import HostNdrange


@handler("struct_type")
def _construct_struct(lo, name, node):
    return lo.construct_struct(lo.expr(node.func).value, node)


@handler("Struct")
def _anonymous_struct(lo, name, node):
    if len(node.args) > 1 or (node.args and not isinstance(node.args[0], ast.Dict)):
        raise lo.error(node, "qd.Struct() takes a dict of members, or members as keywords: qd.Struct(a=1, b=2.0)")
    pairs = list(zip(node.args[0].keys, node.args[0].values, strict=False)) if node.args else []
    pairs += [(ast.Constant(k.arg), k.value) for k in node.keywords]
    return lo.anonymous_struct(pairs, node)


@handler("matrix_type", "Vector", "Matrix", "Vector.zero", "Vector.one", "Vector.unit", "Matrix.zero", "Matrix.one",
         "Matrix.identity", "Matrix.diag", "Matrix.rows", "Matrix.cols")
def _construct(lo, name, node):
    return lo.construct(lo.expr(node.func).value if name == "matrix_type" else name, node)


@handler("static")
def _static(lo, name, node):
    if node.keywords or not node.args:
        return CT(lo.static_value(node))
    items = []
    for arg in node.args:
        v = lo.expr(arg)
        if isinstance(v, ir.Const):  # a folded expression
            v = CT(v.value)
        elif not isinstance(v, (CT, ArrayHandle, StructArray)):  # (a field: `b = qd.static(a)` aliases it)
            raise lo.error(arg, "qd.static() needs a value known at translation time: its arguments must be "
                                "compile-time constants",
                           hint="use constants, template parameters or module-level globals")
        items.append(v)
    if len(items) == 1:
        return items[0]
    if all(isinstance(v, CT) for v in items):
        return CT(tuple(v.value for v in items))
    return TupleValue(items)


@handler("static_assert")
def _static_assert(lo, name, node):
    args = node.args
    if not 1 <= len(args) <= 2:
        raise lo.error(node, "qd.static_assert(cond, msg=None) takes 1 or 2 arguments")
    cond = lo.static_value(args[0], what="qd.static_assert")
    if not cond:
        msg = lo.static_value(args[1], what="a qd.static_assert message") if len(args) > 1 else \
            f"static assertion failed: {ast.unparse(args[0])}"
        raise lo.error(node, str(msg))
    return CT(None)


@handler("static_print")
def _static_print(lo, name, node):
    def shown(value):
        if isinstance(value, CT):
            return value.value
        t = getattr(value, "type", None) or getattr(value, "shape", None)
        return f"<{getattr(t, 'name', t)} run-time value>"

    options = {}
    for kw in node.keywords:
        if kw.arg not in ("sep", "end"):
            raise lo.error(kw, f"qd.static_print takes sep= and end=, not {kw.arg}=")
        options[kw.arg] = lo.static_value(kw.value, what=f"qd.static_print({kw.arg}=...)")
    print(*(shown(lo.expr(a)) for a in node.args), **options)
    return CT(None)


@handler("assume_in_range")
def _assume_in_range(lo, name, node):
    if len(node.args) != 4 or node.keywords:
        raise lo.error(node, "qd.assume_in_range(val, base, low, high) takes 4 arguments")
    for bound in node.args[1:]:
        lo.expr(bound)  # checked, then dropped: a hint for Quadrants' scratchpad
    return lo.expr(node.args[0])


@handler("typeof")
def _typeof(lo, name, node):
    (v,) = call_args(lo, node, name, 1)
    if isinstance(v, CT) and not isinstance(v.value, (bool, int, float)):
        raise lo.error(node.args[0], "qd.typeof() needs a scalar value")
    return CT(lo.to_expr(v, node.args[0]).type)


@handler("ndrange", "grouped")
def _ndrange(lo, name, node):
    if name == "grouped":
        (v,) = call_args(lo, node, name, 1)
        if isinstance(v, CT) and isinstance(v.value, StaticNdrange):
            return CT(tuple(StaticIndex(i) for i in v.value))
    elif all(kw.arg == "axes" for kw in node.keywords):
        # extents known now (NumPy integers too): the indices, in the order `axes=` gives

        values = [v.value if isinstance(v, CT) else None for v in (lo.expr(a) for a in node.args)]
        axes = lo.static_value(node.keywords[0].value, what="qd.ndrange(axes=...)") if node.keywords else None
        try:
            return CT(StaticNdrange(HostNdrange(*values, axes=axes)))
        except ValueError as exc:  # axes that are no permutation
            raise lo.error(node.keywords[0].value, str(exc)) from None
        except TypeError as exc:
            if all(v is not None for v in values):  # known now, and not integers
                raise lo.error(node, str(exc)) from None
            # else an extent known only at run time
    raise lo.error(node, f"qd.{name}() drives a for loop (`for i, j in qd.{name}(...)`), or is unrolled by "
                         f"`qd.static(qd.{name}(...))` when its extents are known at translation time")


@handler("loop_config")
def _loop_config(lo, name, node):
    raise lo.error(node, "qd.loop_config() must be a statement right before a top-level for loop")


@handler("block_local", "cache_read_only")
def _cache_hint(lo, name, node):
    for a in node.args:
        if not isinstance(lo.expr(a), ArrayHandle):
            raise lo.error(a, f"qd.{name}() takes fields")
    return CT(None)


@handler("graph.do_while")
def _graph_do_while(lo, name, node):
    raise lo.error(node, f"qd.{name}(flag) is the condition of a `while` at the top level of a kernel (or directly "
                         "in the body of another such loop)",
                   hint="write `while qd.graph.do_while(flag):` as a statement of the kernel's own body")


@handler("graph.parallel_context", "graph.parallel")
def _graph_fork(lo, name, node):
    raise lo.error(node, f"qd.{name}() is a `with` block at the top level of a kernel (or of a qd.graph.do_while "
                         "body)", hint=f"write `with qd.{name}():` around top-level loops")


@handler("is_active", "activate", "deactivate", "append", "length", "rescale_index", "no_activate")
def _sparse(lo, name, node):
    return lo.sparse_call(name, node)

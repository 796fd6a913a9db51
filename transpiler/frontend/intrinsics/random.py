"""``qd.random`` and ``qd.randn``: draws from the task's stream (lang/random.py)."""
from __future__ import annotations

from ...ir import nodes as ir
from ...ir import types as T
from ..values import CT
from .table import handler, float_dtype


@handler("random")
def _random(lo, name, node):
    from ...lang import random as rnd  # noqa: PLC0415 - lang/random.py is kernel-language code that imports the package; loaded on first use

    if node.keywords and (len(node.keywords) != 1 or node.keywords[0].arg != "dtype" or node.args):
        raise lo.error(node, "qd.random() takes one optional argument, the dtype")
    arg = node.keywords[0].value if node.keywords else (node.args[0] if node.args else None)
    if len(node.args) > 1:
        raise lo.error(node, "qd.random() takes one optional argument, the dtype")
    dtype = T.defaults().fp if arg is None else lo.static_value(arg, what="the dtype of qd.random()")
    dtype = T.python_type(dtype) or dtype
    if not isinstance(dtype, T.DType) or dtype is T.bool_:
        raise lo.error(arg, f"qd.random() makes numbers: a dtype such as qd.f32 or qd.i32, not {dtype!r}")
    loc = lo.loc(node)
    state = lo.random_state(loc)
    ref = ir.LocalRef(T.u32, loc, state)
    lo.emit(ir.Assign(loc, state, ir.BinOp(T.u32, loc, "add", ref, ir.Const(T.u32, loc, rnd.GOLDEN))))
    return lo.inline_values(rnd.draw, loc, [ir.LocalRef(T.u32, loc, state), CT(dtype)])


@handler("randn")
def _randn(lo, name, node):
    from ...lang import random as rnd  # noqa: PLC0415 - lang/random.py is kernel-language code that imports the package; loaded on first use

    return lo.inline_values(rnd.normal, lo.loc(node), [CT(float_dtype(lo, node, name, 0))])

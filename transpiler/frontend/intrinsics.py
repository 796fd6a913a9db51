"""Calls to ``qd.*`` built-ins: each handler checks its arguments and builds IR nodes."""
from __future__ import annotations

import ast
import warnings
from typing import TYPE_CHECKING

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from .common import has_side_effects
from .fields import StructArray
from .handlers import HandlerTable
from .values import CT, ArrayHandle, MatrixValue, StaticIndex, StaticNdrange, TupleValue

if TYPE_CHECKING:
    from .lower import KernelLowering

_FLOAT_MATH = ("sqrt", "rsqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan",
               "sinh", "cosh", "tanh", "floor", "ceil", "round", "trunc")
_BIT_MATH = ("popcnt", "clz", "ffs")

HANDLERS = HandlerTable()  # the qd.* built-ins, by the name they are known by (``_qd_builtin``)
handler = HANDLERS.handler


# Built-ins that apply to each component of a vector or matrix argument.
ELEMENTWISE = {"cast", "select", "min", "max", "abs", "atan2", "pow", "isnan", "isinf", "zero", "one", *_FLOAT_MATH,
               *_BIT_MATH}


def call_builtin(lo: KernelLowering, name: str, node: ast.Call):
    fn = HANDLERS.get(name)
    if fn is None:
        raise lo.error(node, f"qd.{name}() is not supported here")
    if name in ELEMENTWISE and (not node.keywords or (name in ("floor", "ceil", "round") and
                                                      [k.arg for k in node.keywords] == ["dtype"])):
        return lo.builtin_elementwise(lambda n: fn(lo, name, n), node)
    return fn(lo, name, node)


@handler("struct_type")
def _construct_struct(lo, name, node):
    return lo.construct_struct(lo.expr(node.func).value, node)


@handler("Struct")
def _anonymous_struct(lo, name, node):
    if len(node.args) > 1 or (node.args and not isinstance(node.args[0], ast.Dict)):
        raise lo.error(node, "qd.Struct() takes a dict of members, or members as keywords: qd.Struct(a=1, b=2.0)")
    pairs = list(zip(node.args[0].keys, node.args[0].values)) if node.args else []
    pairs += [(ast.Constant(k.arg), k.value) for k in node.keywords]
    return lo.anonymous_struct(pairs, node)


@handler("matrix_type", "Vector", "Matrix", "Vector.zero", "Vector.one", "Vector.unit", "Matrix.zero", "Matrix.one",
         "Matrix.identity", "Matrix.diag", "Matrix.rows", "Matrix.cols")
def _construct(lo, name, node):
    return lo.construct(lo.expr(node.func).value if name == "matrix_type" else name, node)


def _args(lo: KernelLowering, node: ast.Call, name: str, n: int | tuple[int, int]):
    lo_n, hi_n = (n, n) if isinstance(n, int) else n
    if node.keywords:
        raise lo.error(node, f"qd.{name}() takes positional arguments only")
    if not lo_n <= len(node.args) <= hi_n:
        want = str(lo_n) if lo_n == hi_n else f"{lo_n} to {hi_n}"
        raise lo.error(node, f"qd.{name}() takes {want} argument(s), got {len(node.args)}")
    return [lo.expr(a) for a in node.args]


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
            raise lo.error(arg, "qd.static() needs a value known at translation time",
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


@handler("random")
def _random(lo, name, node):
    from ..lang import random as rnd

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


def _float_dtype(lo, node, name: str, position: int) -> T.DType:
    """The optional ``dt`` of qd.randn / svd / polar_decompose / solve (the ``position``-th
    argument, or ``dt=``): f32 or f64, qd.init's default float when left out."""
    n = len(node.args) + len(node.keywords)
    if n > position + 1 or (node.keywords and (len(node.keywords) > 1 or node.keywords[0].arg != "dt")):
        raise lo.error(node, f"qd.{name}() takes {position} argument(s) and an optional dtype (dt=qd.f32 or qd.f64)")
    arg = node.keywords[0].value if node.keywords else (node.args[position] if len(node.args) > position else None)
    dtype = T.defaults().fp if arg is None else lo.static_value(arg, what=f"the dtype of qd.{name}()")
    dtype = T.python_type(dtype) or dtype
    if dtype not in (T.f32, T.f64):
        raise lo.error(arg, f"qd.{name}() computes in f32 or f64, not {dtype!r}")
    return dtype


@handler("randn")
def _randn(lo, name, node):
    from ..lang import random as rnd

    return lo.inline_values(rnd.normal, lo.loc(node), [CT(_float_dtype(lo, node, name, 0))])


# qd.<name>(A, dt=None) of a small square matrix, written in the kernel language
# (lang/linalg.py): the sizes it takes, how to say so, and its function for a size.
_DECOMPOSITIONS = {
    "svd": ((2, 3), "a 2x2 or 3x3 matrix", lambda la, n: la.svd2d if n == 2 else la.svd3d),
    "polar_decompose": ((2, 3), "a 2x2 or 3x3 matrix",
                        lambda la, n: la.polar_decompose2d if n == 2 else la.polar_decompose3d),
    "sym_eig": ((2, 3, 4, 5, 6), "a symmetric matrix of 2x2 to 6x6", lambda la, n: la.sym_eig_small),
    "make_spd": ((2, 3, 4, 5, 6), "a symmetric matrix of 2x2 to 6x6", lambda la, n: la.make_spd_small),
    "eig": ((2,), "a 2x2 matrix (qd.sym_eig: symmetric ones up to 6x6)", lambda la, n: la.eig2x2),
}


@handler(*_DECOMPOSITIONS)
def _decompose(lo, name, node):
    from ..lang import linalg

    sizes, what, pick = _DECOMPOSITIONS[name]
    if not node.args:
        raise lo.error(node, f"qd.{name}(A, dt=None) takes {what} and an optional dtype")
    dtype = _float_dtype(lo, node, name, 1)
    a = lo.expr(node.args[0])
    if not isinstance(a, MatrixValue) or len(a.shape) != 2 or a.shape[0] != a.shape[1] or a.shape[0] not in sizes:
        raise lo.error(node, f"qd.{name}() takes {what}")
    fn = pick(linalg, a.shape[0])
    return lo.inline_values(fn, lo.loc(node), [lo.make_matrix(a.shape, a.items, node, dtype), CT(dtype)])


@handler("solve")
def _solve(lo, name, node):
    from ..lang import linalg

    if len(node.args) < 2:
        raise lo.error(node, "qd.solve(A, b, dt=None) takes a matrix, a vector and an optional dtype")
    dtype = _float_dtype(lo, node, name, 2)
    a, b = (lo.expr(x) for x in node.args[:2])
    if not isinstance(a, MatrixValue) or a.shape not in ((2, 2), (3, 3)):
        raise lo.error(node.args[0], "qd.solve() takes a 2x2 or 3x3 matrix")
    b = lo.as_matrix(b, node.args[1])
    if not isinstance(b, MatrixValue) or b.shape != (a.shape[0],):
        raise lo.error(node.args[1], f"qd.solve() of a {a.shape[0]}x{a.shape[0]} matrix takes a vector of {a.shape[0]}")
    return lo.inline_values(linalg.solve_small, lo.loc(node), [lo.make_matrix(a.shape, a.items, node, dtype),
                                                                lo.make_matrix(b.shape, b.items, node, dtype),
                                                                CT(dtype)])


@handler("raw_div", "raw_mod")
def _raw_division(lo, name, node):
    from ..lang import mathlib

    fn = mathlib.raw_div if name == "raw_div" else mathlib.raw_mod

    def scalar(a, b):
        ea, eb = lo.to_expr(a, node.args[0]), lo.to_expr(b, node.args[1])
        if not (ea.type.is_int and eb.type.is_int):
            raise lo.error(node, f"qd.{name}() takes integers", hint="for floats use x / y, or x - y * qd.trunc(x / y)")
        t = T.promote(*lo.operand_types(a, ea, b, eb))
        return lo.to_expr(lo.inline_values(fn, lo.loc(node), [lo.coerce(ea, t, node), lo.coerce(eb, t, node)]), node)

    return lo.elementwise(scalar, [lo.as_matrix(v, arg) for v, arg in zip(_args(lo, node, name, 2), node.args)],
                          node)  # of vectors and matrices, component by component


@handler("typeof")
def _typeof(lo, name, node):
    (v,) = _args(lo, node, name, 1)
    if isinstance(v, CT) and not isinstance(v.value, (bool, int, float)):
        raise lo.error(node.args[0], "qd.typeof() needs a scalar value")
    return CT(lo.to_expr(v, node.args[0]).type)


@handler("ndrange", "grouped")
def _ndrange(lo, name, node):
    if name == "grouped":
        (v,) = _args(lo, node, name, 1)
        if isinstance(v, CT) and isinstance(v.value, StaticNdrange):
            return CT(tuple(StaticIndex(i) for i in v.value))
    elif all(kw.arg == "axes" for kw in node.keywords):
        # extents known now (NumPy integers too): the indices, in the order `axes=` gives
        from ..lang.ops import HostNdrange

        values = [v.value if isinstance(v, CT) else None for v in (lo.expr(a) for a in node.args)]
        axes = lo.static_value(node.keywords[0].value, what="qd.ndrange(axes=...)") if node.keywords else None
        try:
            return CT(StaticNdrange(HostNdrange(*values, axes=axes)))
        except ValueError as exc:  # axes that are no permutation
            raise lo.error(node.keywords[0].value, str(exc)) from None
        except TypeError:
            pass  # an extent known only at run time
    raise lo.error(node, f"qd.{name}() drives a for loop (`for i, j in qd.{name}(...)`), or is unrolled by "
                         f"`qd.static(qd.{name}(...))` when its extents are known at translation time")


@handler("loop_config")
def _loop_config(lo, name, node):
    raise lo.error(node, "qd.loop_config() must be a statement right before a top-level for loop")


def cast_call(lo: KernelLowering, dtype: T.DType, node: ast.Call):
    if len(node.args) != 1 or node.keywords:
        raise lo.error(node, f"qd.{dtype.name}(x) takes exactly one argument")
    v = lo.expr(node.args[0])
    if isinstance(v, CT) and isinstance(v.value, (bool, int, float)):
        return ir.Const(dtype, lo.loc(node), _convert_const(v.value, dtype))
    return lo.coerce(lo.to_expr(v, node.args[0]), dtype, node, explicit=True)


def _convert_const(value, dtype: T.DType):
    if dtype is T.bool_:
        return bool(value)
    if dtype.is_float:
        return float(value)
    from .common import retype_const

    return retype_const(ir.Const(T.i64, None, int(value)), dtype).value


@handler("cast")
def _cast(lo, name, node):
    if len(node.args) != 2 or node.keywords:
        raise lo.error(node, "qd.cast(x, dtype) takes exactly two arguments")
    dtype = lo.static_value(node.args[1], what="the dtype of qd.cast")
    dtype = T.python_type(dtype) or dtype
    if not isinstance(dtype, T.DType):
        raise lo.error(node.args[1], f"`{ast.unparse(node.args[1])}` is not a scalar type")
    fake = getattr(node, "_qd_value_call", None)  # made once per call site, as the parsed trees are shared
    if fake is None:
        fake = node._qd_value_call = ast.copy_location(ast.Call(func=node.func, args=[node.args[0]], keywords=[]),
                                                       node)
    return cast_call(lo, dtype, fake)


@handler("bit_cast")
def _bit_cast(lo, name, node):
    if len(node.args) != 2 or node.keywords:
        raise lo.error(node, "qd.bit_cast(x, dtype) takes exactly two arguments")
    dtype = lo.static_value(node.args[1], what="the dtype of qd.bit_cast")
    dtype = T.python_type(dtype) or dtype
    if not isinstance(dtype, T.DType) or dtype is T.bool_:
        raise lo.error(node.args[1], f"`{ast.unparse(node.args[1])}` is not a numeric scalar type")
    v = lo.expr(node.args[0])
    if isinstance(v, CT):
        raise lo.error(node.args[0], "qd.bit_cast needs a typed run-time value",
                       hint=f"cast the constant first, e.g. qd.bit_cast(qd.u32({ast.unparse(node.args[0])}), ...)")
    e = lo.to_expr(v, node.args[0])
    if not isinstance(e.type, T.DType) or e.type is T.bool_ or e.type.bits != dtype.bits:
        shown = getattr(e.type, "name", repr(e.type))
        raise lo.error(node, f"qd.bit_cast from {shown} to {dtype.name}: the widths differ",
                       hint="bit_cast reinterprets bits of the same width (i32/u32/f32, i64/u64/f64); "
                            "use qd.cast to convert values")
    if e.type == dtype:
        return e
    if e.type.is_int and dtype.is_int:  # same width: a conversion keeps the bits in every language
        return ir.Cast(dtype, lo.loc(node), e)
    return ir.BitCast(dtype, lo.loc(node), e)


@handler("select")
def _select(lo, name, node):
    c, a, b = _args(lo, node, name, 3)
    if isinstance(c, CT):
        return a if c.value else b
    cond = lo.truth(lo.to_expr(c, node.args[0]), node.args[0])
    ea, eb = lo.to_expr(a, node.args[1]), lo.to_expr(b, node.args[2])
    ta, tb = lo.operand_types(a, ea, b, eb)
    t = T.bool_ if ta is T.bool_ and tb is T.bool_ else T.promote(ta, tb)
    return ir.Select(t, lo.loc(node), cond, lo.coerce(ea, t, node), lo.coerce(eb, t, node))


@handler("min", "max")
def _minmax(lo, name, node):
    args = _args(lo, node, name, (2, 64))
    result = args[0]
    for nxt in args[1:]:
        if isinstance(result, CT) and isinstance(nxt, CT):
            result = CT(min(result.value, nxt.value) if name == "min" else max(result.value, nxt.value))
            continue
        ea, eb = lo.to_expr(result, node), lo.to_expr(nxt, node)
        ta, tb = lo.operand_types(result, ea, nxt, eb)
        t = T.promote(ta, tb)
        result = ir.Math(t, lo.loc(node), name, [lo.coerce(ea, t, node), lo.coerce(eb, t, node)])
    return result


@handler("abs")
def _abs(lo, name, node):
    (a,) = _args(lo, node, name, 1)
    if isinstance(a, CT):
        return CT(abs(a.value))
    e = lo.to_expr(a, node.args[0])
    if e.type is T.bool_:
        e = lo.coerce(e, T.i32, node)
    if e.type.kind == "uint":
        return e
    return ir.Math(e.type, lo.loc(node), "abs", [e])


def _float_arg(lo, v, node) -> ir.Expr:
    e = lo.to_expr(v, node)
    return e if e.type.is_float else lo.coerce(e, T.defaults().fp, node, explicit=True)


@handler(*_FLOAT_MATH)
def _float_math(lo, name, node):
    if name in ("floor", "ceil", "round") and len(node.args) + len(node.keywords) == 2:  # qd.floor(x, qd.i32)
        if node.keywords and (node.keywords[0].arg != "dtype" or len(node.args) != 1):
            raise lo.error(node, f"qd.{name}(x, dtype) takes the value and a dtype (dtype= by keyword)")
        a = lo.expr(node.args[0])
        dt = lo.expr(node.keywords[0].value if node.keywords else node.args[1])
        dtype = (T.python_type(dt.value) or dt.value) if isinstance(dt, CT) else None
        if not isinstance(dtype, T.DType):
            raise lo.error(node.args[1], f"the dtype of qd.{name}(x, dtype) must be a type such as qd.i32")
        e = _float_arg(lo, a, node.args[0])
        return lo.coerce(ir.Math(e.type, lo.loc(node), name, [e]), dtype, node, explicit=True)
    (a,) = _args(lo, node, name, 1)
    e = _float_arg(lo, a, node.args[0])
    return ir.Math(e.type, lo.loc(node), name, [e])


@handler("block_local", "cache_read_only")
def _cache_hint(lo, name, node):
    for a in node.args:
        if not isinstance(lo.expr(a), ArrayHandle):
            raise lo.error(a, f"qd.{name}() takes fields")
    return CT(None)


@handler("zero", "one")
def _zero_one(lo, name, node):
    (a,) = _args(lo, node, name, 1)
    e = lo.to_expr(a, node.args[0])
    if has_side_effects(e):
        lo.once(e, node, "arg")  # evaluated, as in Python, though only its type is used
    value = 0 if name == "zero" else 1
    typed = bool(value) if e.type is T.bool_ else float(value) if e.type.is_float else value
    return ir.Const(e.type, lo.loc(node), typed)


@handler("isnan", "isinf")
def _float_class(lo, name, node):
    (a,) = _args(lo, node, name, 1)
    e = lo.to_expr(a, node.args[0])
    loc = lo.loc(node)
    if not e.type.is_float:
        return ir.Const(T.bool_, loc, False)  # an integer is never NaN nor infinite
    if name == "isnan":
        return ir.Math(T.bool_, loc, "isnan", [e])
    magnitude = ir.Math(e.type, loc, "abs", [e])
    return ir.Compare(T.bool_, loc, "eq", magnitude, ir.Const(e.type, loc, float("inf")))


@handler("pow")
def _pow(lo, name, node):
    a, b = _args(lo, node, name, 2)
    return lo.binop("pow", a, b, node)  # as `a ** b`: an integer exponent keeps the base's type


@handler("atan2")
def _float_math2(lo, name, node):
    a, b = _args(lo, node, name, 2)
    ea, eb = _float_arg(lo, a, node.args[0]), _float_arg(lo, b, node.args[1])
    t = T.promote(ea.type, eb.type)
    return ir.Math(t, lo.loc(node), name, [lo.coerce(ea, t, node), lo.coerce(eb, t, node)])


@handler(*_BIT_MATH)
def _bit_math(lo, name, node):
    (a,) = _args(lo, node, name, 1)
    e = lo.to_expr(a, node.args[0])
    if not e.type.is_int or e.type.bits not in (32, 64):
        raise lo.error(node.args[0], f"qd.math.{name} needs an i32, u32, i64 or u64 argument, got {e.type.name}")
    return ir.Math(T.i32, lo.loc(node), name, [e])


@handler("block.thread_idx", "block.global_thread_idx")
def _thread_index(lo, name, node):
    _args(lo, node, name, 0)
    return ir.ThreadIndex(T.i32, lo.loc(node), name.split(".")[1])


_DEPRECATED = {"block.mem_sync": "block.mem_fence", "grid.memfence": "grid.mem_fence",
               "subgroup.barrier": "subgroup.sync", "subgroup.memory_barrier": "subgroup.mem_fence",
               "subgroup.ballot_full_subgroup": "subgroup.ballot"}


def _current_name(lo, name: str, node) -> str:
    """``name``, or what replaces a deprecated alias of it (with Quadrants' DeprecationWarning)."""
    if name in _DEPRECATED:
        warnings.warn(f"{lo.loc(node)}: qd.simt.{name}() is deprecated; use qd.simt.{_DEPRECATED[name]}()",
                      DeprecationWarning, stacklevel=3)
        return _DEPRECATED[name]
    return name


@handler("block.mem_fence", "grid.mem_fence", "block.mem_sync", "grid.memfence")
def _fence(lo, name, node):
    _args(lo, node, name, 0)
    name = _current_name(lo, name, node)
    scope = "block" if name.startswith("block.") else "device"
    lo.emit(ir.Fence(lo.loc(node), scope))
    return CT(None)


@handler("volatile_load")
def _volatile_load(lo, name, node):
    if node.keywords or len(node.args) != 1:
        raise lo.error(node, "qd.volatile_load() takes exactly one argument")
    target = node.args[0]
    if not isinstance(target, ast.Subscript):
        what = "a local variable" if isinstance(target, ast.Name) else "this expression"
        raise lo.error(target, f"qd.volatile_load needs an ndarray element such as a[i], not {what}",
                       hint="a local cannot be changed by another thread; read it directly")
    array, indices = lo.lvalue(target)
    if isinstance(array, ir.SharedArray):
        raise lo.error(target, "qd.volatile_load reads global memory; this is a shared array",
                       hint="after block.sync() a plain read of shared memory sees the block's writes")
    return ir.VolatileLoad(array.type.dtype, lo.loc(node), array, indices)


# ----------------------------------------------------------------------------- block scope

@handler("block.SharedArray")
def _shared_array(lo, name, node):
    if node.keywords and any(k.arg not in ("shape", "dtype") for k in node.keywords):
        raise lo.error(node, "qd.simt.block.SharedArray(shape, dtype) takes a shape and a dtype")
    args = list(node.args) + [k.value for k in sorted(node.keywords, key=lambda k: k.arg != "shape")]
    if len(args) != 2:
        raise lo.error(node, "qd.simt.block.SharedArray(shape, dtype) takes a shape and a dtype")
    shape = lo.static_value(args[0], what="the shape of a SharedArray")
    shape = (shape,) if isinstance(shape, int) else tuple(shape) if isinstance(shape, (tuple, list)) else None
    if not shape or not all(isinstance(n, int) and n > 0 for n in shape):
        raise lo.error(args[0], "a SharedArray shape is a positive int or a tuple of them, known at translation time")
    dtype = lo.static_value(args[1], what="the dtype of a SharedArray")
    if not isinstance(dtype, T.DType) or dtype is T.bool_:
        raise lo.error(args[1], f"`{ast.unparse(args[1])}` is not a numeric scalar type")
    if not lo.body.in_parallel:
        raise lo.error(node, "a SharedArray belongs to a block: allocate it inside a parallel (top-level) loop")
    array = ir.SharedArray("", T.SharedArrayType(dtype, shape), lo.loc(node))
    lo.task_state.shared.append(array)
    lo.emit(ir.DeclareShared(lo.loc(node), array))
    return ArrayHandle(array)


@handler("block.sync")
def _block_sync(lo, name, node):
    _args(lo, node, name, 0)
    lo.require_parallel(node, "qd.simt.block.sync()")
    lo.emit(ir.Barrier(lo.loc(node), "block"))
    return CT(None)


@handler("block.sync_all_nonzero", "block.sync_any_nonzero", "block.sync_count_nonzero")
def _block_vote(lo, name, node):
    (p,) = _args(lo, node, name, 1)
    lo.require_parallel(node, f"qd.simt.{name}()")
    pred = lo.truth(lo.to_expr(p, node.args[0]), node.args[0])
    op = name.split("_")[1]  # sync_all_nonzero -> all
    return ir.BlockVote(T.i32, lo.loc(node), op, pred)


# ----------------------------------------------------------------------------- subgroup scope

@handler("subgroup.group_size")
def _group_size(lo, name, node):
    _args(lo, node, name, 0)
    return CT(lo.require_subgroup_size(node))


@handler("subgroup.log2_group_size")
def _log2_group_size(lo, name, node):
    _args(lo, node, name, 0)
    return CT(lo.require_subgroup_size(node).bit_length() - 1)


@handler("subgroup.invocation_id")
def _invocation_id(lo, name, node):
    _args(lo, node, name, 0)
    lo.require_parallel(node, "qd.simt.subgroup.invocation_id()")
    return ir.SubgroupOp(T.i32, lo.loc(node), "invocation_id", [])


@handler("subgroup.sync", "subgroup.barrier")
def _subgroup_sync(lo, name, node):
    _args(lo, node, name, 0)
    _current_name(lo, name, node)
    lo.emit(ir.Barrier(lo.loc(node), "subgroup"))
    return CT(None)


@handler("subgroup.mem_fence", "subgroup.memory_barrier")
def _subgroup_fence(lo, name, node):
    _args(lo, node, name, 0)
    _current_name(lo, name, node)
    lo.emit(ir.Fence(lo.loc(node), "subgroup"))
    return CT(None)


def _lane_arg(lo, v, node) -> ir.Expr:
    e = lo.to_expr(v, node)
    if not e.type.is_int:
        raise lo.error(node, f"a lane index or offset must be an integer, not {e.type.name}")
    return lo.coerce(e, T.u32, node, explicit=True)


@handler("subgroup.shuffle", "subgroup.shuffle_up", "subgroup.shuffle_down", "subgroup.shuffle_xor",
         "subgroup.broadcast")
def _shuffle(lo, name, node):
    v, k = _args(lo, node, name, 2)
    lo.require_parallel(node, f"qd.simt.{name}()")
    value = lo.to_expr(v, node.args[0])
    if value.type is T.bool_:
        value = lo.coerce(value, T.i32, node.args[0])
    return ir.SubgroupOp(value.type, lo.loc(node), name.split(".")[1], [value, _lane_arg(lo, k, node.args[1])])


@handler("subgroup.broadcast_first")
def _broadcast_first(lo, name, node):
    (v,) = _args(lo, node, name, 1)
    value = lo.to_expr(v, node.args[0])
    return ir.SubgroupOp(value.type, lo.loc(node), "broadcast", [value, ir.Const(T.u32, lo.loc(node), 0)])


@handler("subgroup.ballot", "subgroup.ballot_full_subgroup")
def _ballot(lo, name, node):
    (p,) = _args(lo, node, name, 1)
    _current_name(lo, name, node)
    lo.require_parallel(node, "qd.simt.subgroup.ballot()")
    return ir.SubgroupOp(T.u64, lo.loc(node), "ballot", [lo.truth(lo.to_expr(p, node.args[0]), node.args[0])])


@handler("subgroup.all_true", "subgroup.any_true")
def _vote(lo, name, node):
    (p,) = _args(lo, node, name, 1)
    lo.require_parallel(node, f"qd.simt.{name}()")
    op = "all" if name.endswith("all_true") else "any"
    vote = ir.SubgroupOp(T.bool_, lo.loc(node), op, [lo.truth(lo.to_expr(p, node.args[0]), node.args[0])])
    return lo.coerce(vote, T.i32, node)


@handler(*(f"subgroup.{kind}_{op}" for kind in ("reduce", "reduce_all", "inclusive", "exclusive")
           for op in ("add", "min", "max")))
def _subgroup_fold(lo, name, node):
    (v,) = _args(lo, node, name, 1)
    lo.require_parallel(node, f"qd.simt.{name}()")
    value = lo.to_expr(v, node.args[0])
    if value.type is T.bool_:
        value = lo.coerce(value, T.i32, node.args[0])
    kind, op = name.split(".")[1].rsplit("_", 1)
    kind = "reduce" if kind == "reduce_all" else kind
    return ir.SubgroupOp(value.type, lo.loc(node), f"{kind}_{op}", [value])


@handler("subgroup._scan")
def _subgroup_scan(lo, name, node):
    """``subgroup._scan(kind, op, value)``: the library's way to the scans Quadrants names only
    as functions (``inclusive_xor``), one subgroup collective each."""
    kind, op, v = _args(lo, node, name, 3)
    kind, op = lo.static_value(node.args[0], what="a scan kind"), lo.static_value(node.args[1], what="an operator")
    lo.require_parallel(node, f"qd.simt.subgroup.{kind}_{op}()")
    value = lo.to_expr(v, node.args[2])
    if value.type is T.bool_:
        value = lo.coerce(value, T.i32, node.args[2])
    return ir.SubgroupOp(value.type, lo.loc(node), f"{kind}_{op}", [value])


# ----------------------------------------------------------------------------- CUDA's warp API

# qd.simt.warp name -> (op, result type, value type): the value is the argument after the mask.
_WARP = {
    "all_nonzero": ("all", T.i32, T.i32), "any_nonzero": ("any", T.i32, T.i32), "unique": ("uni", T.i32, T.i32),
    "match_any": ("match_any", T.u32, T.i32), "match_all": ("match_all", T.u32, T.i32),
    **{f"shfl_{kind}_{t.name}": ("shfl" if kind == "sync" else f"shfl_{kind}", t, t)
       for kind in ("sync", "up", "down", "xor") for t in (T.i32, T.f32) if (kind, t) != ("xor", T.f32)},
}


@handler(*(f"warp.{name}" for name in (*_WARP, "ballot", "active_mask", "sync")))
def _warp(lo, name, node):
    short = name.split(".")[1]
    lo.require_parallel(node, f"qd.simt.{name}()")
    loc = lo.loc(node)
    if short == "ballot":
        (p,) = _args(lo, node, name, 1)
        return ir.WarpOp(T.i32, loc, "ballot", short, [lo.coerce(lo.truth(lo.to_expr(p, node.args[0]), node.args[0]),
                                                                  T.i32, node.args[0])])
    if short == "active_mask":
        _args(lo, node, name, 0)
        return ir.WarpOp(T.u32, loc, "active_mask", short, [])
    if short == "sync":
        (m,) = _args(lo, node, name, 1)
        mask = lo.coerce(lo.to_expr(m, node.args[0]), T.u32, node.args[0], explicit=True)
        lo.emit(ir.ExprStmt(loc, ir.WarpOp(ir.VOID, loc, "sync", short, [mask])))
        return CT(None)
    op, result, value_type = _WARP[short]
    n = 3 if op.startswith("shfl") else 2
    values = _args(lo, node, name, n)
    args = [lo.coerce(lo.to_expr(values[0], node.args[0]), T.u32, node.args[0], explicit=True),
            lo.coerce(lo.to_expr(values[1], node.args[1]), value_type, node.args[1], explicit=True)]
    if n == 3:
        args.append(lo.coerce(lo.to_expr(values[2], node.args[2]), T.i32, node.args[2], explicit=True))
    return ir.WarpOp(result, loc, op, short, args)


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
        raise lo.error(target, f"the first argument of qd.{name} must be an ndarray element such as a[i], "
                               "a local variable or a kernel-scope variable, not this expression")
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
        raise lo.error(node, f"qd.{name} on a vector or matrix element is not supported; compare-and-swap "
                             "one component")
    value = lo.expr(node.args[1])
    from .values import MatrixValue

    if isinstance(value, MatrixValue) and len(value.items) != len(places):
        raise lo.error(node.args[1], f"qd.{name}: the element has {len(places)} component(s), the value "
                                     f"{len(value.items)}")
    values = value.items if isinstance(value, MatrixValue) else \
        [lo.once(lo.to_expr(value, node.args[1]), node, "tmp")] * len(places)
    olds = [lo.make_atomic(op, array, idx, v, node, f"qd.{name}") for idx, v in zip(places, values)]
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


@handler("system.mem_fence")
def _system_fence(lo, name, node):
    _args(lo, node, name, 0)
    lo.emit(ir.Fence(lo.loc(node), "system"))
    return CT(None)


# ----------------------------------------------------------------------------- qd.shmem (NVSHMEM)

def _shmem_element(lo, node: ast.expr, name: str, what: str, remote: bool) -> ir.ShmemElement:
    """The address ``a[i]`` an NVSHMEM routine takes. ``remote``: the side that names another
    PE's memory (or that other PEs write), which must be on the symmetric heap."""
    if not isinstance(node, ast.Subscript):
        kind = "a local variable" if isinstance(node, ast.Name) else "this expression"
        raise lo.error(node, f"the {what} of qd.shmem.{name} must be an ndarray element such as a[i], not {kind}")
    array, indices = lo.lvalue(node)
    if isinstance(array, ir.SharedArray):
        raise lo.error(node, f"the {what} of qd.shmem.{name} is a shared array; NVSHMEM moves global memory",
                       hint="stage the data in an ndarray parameter")
    if remote and not array.symmetric:
        raise lo.error(node, f"the {what} of qd.shmem.{name}, `{array.name}`, must be a symmetric ndarray: "
                             "only those exist on every PE",
                       hint=f"annotate `{array.name}` as qd.shmem.symmetric(dtype=..., ndim=...) and allocate it "
                            "with nvshmem_malloc")
    return ir.ShmemElement(array.type.dtype, lo.loc(node), array, indices)


def _shmem_int(lo, node: ast.expr, what: str, dtype: T.DType | None = T.i32) -> ir.Expr:
    """An integer operand as ``dtype`` (None: as it is, widened to at least 32 bits)."""
    e = lo.rvalue(node)
    if not e.type.is_int:
        raise lo.error(node, f"{what} must be an integer, not {e.type.name}")
    if dtype is None:
        dtype = e.type if e.type.bits >= 32 else T.i32
    return lo.coerce(e, dtype, node, explicit=True) if e.type != dtype else e


def _shmem_args(lo, node: ast.Call, name: str, n: int) -> list[ast.expr]:
    if node.keywords or len(node.args) != n:
        raise lo.error(node, f"qd.shmem.{name}() takes {n} positional argument(s)")
    return list(node.args)


def _shmem_statement(lo, op: ir.ShmemOp):
    lo.emit(ir.ExprStmt(op.loc, op))
    return CT(None)


@handler("shmem.my_pe", "shmem.n_pes")
def _shmem_pe_info(lo, name, node):
    _args(lo, node, name, 0)
    cls = ir.ShmemMyPe if name == "shmem.my_pe" else ir.ShmemNPes
    return cls(T.i32, lo.loc(node))


@handler("shmem.put", "shmem.put_nbi", "shmem.get", "shmem.get_nbi")
def _shmem_put_get(lo, name, node):
    short = name.split(".")[1]
    dest, source, count, pe = _shmem_args(lo, node, short, 4)
    is_put = short.startswith("put")
    d = _shmem_element(lo, dest, short, "destination", remote=is_put)
    s = _shmem_element(lo, source, short, "source", remote=not is_put)
    if d.type != s.type:
        raise lo.error(node, f"qd.shmem.{short} copies between arrays of one dtype: `{d.array.name}` holds "
                             f"{d.type.name}, `{s.array.name}` holds {s.type.name}")
    args = [d, s, _shmem_int(lo, count, "the element count", None), _shmem_int(lo, pe, "a PE number")]
    cls = ir.ShmemPut if is_put else ir.ShmemGet
    return _shmem_statement(lo, cls(ir.VOID, lo.loc(node), args, short.endswith("_nbi")))


@handler("shmem.p")
def _shmem_p(lo, name, node):
    dest, value, pe = _shmem_args(lo, node, "p", 3)
    d = _shmem_element(lo, dest, "p", "destination", remote=True)
    v = lo.coerce(lo.rvalue(value), d.type, value)
    return _shmem_statement(lo, ir.ShmemP(ir.VOID, lo.loc(node), [d, v, _shmem_int(lo, pe, "a PE number")]))


@handler("shmem.g")
def _shmem_g(lo, name, node):
    source, pe = _shmem_args(lo, node, "g", 2)
    s = _shmem_element(lo, source, "g", "source", remote=True)
    return ir.ShmemG(s.type, lo.loc(node), [s, _shmem_int(lo, pe, "a PE number")])


@handler(*(f"shmem.atomic_{op}" for op in ir.SHMEM_ATOMICS))
def _shmem_atomic(lo, name, node):
    op = name[len("shmem.atomic_"):]
    n = {"fetch": 2, "compare_swap": 4}.get(op, 3)
    args = _shmem_args(lo, node, f"atomic_{op}", n)
    t = _shmem_element(lo, args[0], f"atomic_{op}", "target", remote=True)
    operands = [lo.coerce(lo.rvalue(a), t.type, a) for a in args[1:-1]]
    pe = _shmem_int(lo, args[-1], "a PE number")
    fetches = ir.SHMEM_ATOMICS[op]
    e = ir.ShmemAtomic(t.type if fetches else ir.VOID, lo.loc(node), [t, *operands, pe], op)
    return e if fetches else _shmem_statement(lo, e)


@handler("shmem.wait_until")
def _shmem_wait_until(lo, name, node):
    from ..lang.shmem import Cmp

    ivar, cmp, value = _shmem_args(lo, node, "wait_until", 3)
    v = _shmem_element(lo, ivar, "wait_until", "variable", remote=True)
    c = lo.static_value(cmp, what="the comparison of qd.shmem.wait_until")
    if not isinstance(c, Cmp):
        raise lo.error(cmp, f"`{ast.unparse(cmp)}` is not a comparison: use qd.shmem.CMP_EQ, CMP_NE, CMP_GT, "
                            "CMP_GE, CMP_LT or CMP_LE")
    target = lo.coerce(lo.rvalue(value), v.type, value)
    return _shmem_statement(lo, ir.ShmemWaitUntil(ir.VOID, lo.loc(node), [v, target], c.ir_name))


@handler("shmem.fence", "shmem.quiet", "shmem.barrier_all")
def _shmem_ordering(lo, name, node):
    _args(lo, node, name, 0)
    cls = {"shmem.fence": ir.ShmemFence, "shmem.quiet": ir.ShmemQuiet, "shmem.barrier_all": ir.ShmemBarrierAll}[name]
    lo.emit(cls(lo.loc(node)))
    return CT(None)

"""SIMT built-ins: thread indices, fences, volatile loads, the block scope (shared arrays,
barriers, votes), the subgroup scope and CUDA's warp API."""
from __future__ import annotations

import ast

from ...ir import nodes as ir
from ...ir import types as T
from ...lang.matrix import MatrixType
from ..values import CT, ArrayHandle, MatrixValue, MatrixVar
from .table import handler, call_args, current_name


@handler("block.thread_idx", "block.global_thread_idx")
def _thread_index(lo, name, node):
    call_args(lo, node, name, 0)
    return ir.ThreadIndex(T.i32, lo.loc(node), name.split(".")[1])


@handler("clock_counter")
def _clock_counter(lo, name, node):
    call_args(lo, node, name, 0)
    return ir.Clock(T.i64, lo.loc(node))


@handler("block.mem_fence", "grid.mem_fence", "block.mem_sync", "grid.memfence")
def _fence(lo, name, node):
    call_args(lo, node, name, 0)
    name = current_name(lo, name, node)
    scope = "block" if name.startswith("block.") else "device"
    lo.emit(ir.Fence(lo.loc(node), scope))
    return CT(None)


@handler("volatile_load")
def _volatile_load(lo, name, node):
    if node.keywords or len(node.args) != 1:
        raise lo.error(node, "qd.volatile_load() takes exactly one argument")
    target = node.args[0]
    if not isinstance(target, ast.Subscript):
        what, hint = _not_an_element(lo.expr(target) if isinstance(target, ast.Name) else None)
        raise lo.error(target, f"qd.volatile_load needs an lvalue, an ndarray or field element such as a[i], "
                               f"not {what}", hint=hint)
    array, indices = lo.lvalue(target)
    if isinstance(array, ir.SharedArray):
        raise lo.error(target, "qd.volatile_load reads global memory; this is a shared array",
                       hint="after block.sync() a plain read of shared memory sees the block's writes")
    return ir.VolatileLoad(array.type.dtype, lo.loc(node), array, indices)


def _not_an_element(value) -> tuple[str, str]:
    """What a volatile load was given instead of an element, and what to write instead."""
    local = "a local cannot be changed by another thread; read it directly"
    if isinstance(value, ArrayHandle) or (isinstance(value, CT) and hasattr(value.value, "storage")):
        ndarray = isinstance(value, ArrayHandle) and isinstance(value.array, ir.Param) and not value.array.hidden
        return f"{'an ndarray' if ndarray else 'a Field'} directly", "index it: qd.volatile_load(x[i])"
    if isinstance(value, (MatrixValue, MatrixVar)):
        return "a local array (a vector or matrix local)", local
    return ("a local variable" if value is not None else "this expression"), local


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
    element_shape = ()
    if isinstance(dtype, MatrixType):  # of vectors or matrices: their scalars last, as an ndarray of them
        element_shape, dtype = dtype.shape, T.python_type(dtype.dtype) or dtype.dtype or T.defaults().fp
    if not isinstance(dtype, T.DType):
        raise lo.error(args[1], f"`{ast.unparse(args[1])}` is not a numeric scalar, vector or matrix type")
    if not lo.body.in_parallel:
        raise lo.error(node, "a SharedArray belongs to a block: allocate it inside a parallel (top-level) loop")
    array = ir.SharedArray("", T.SharedArrayType(dtype, shape + element_shape, element_shape), lo.loc(node))
    lo.task_state.shared.append(array)
    lo.emit(ir.DeclareShared(lo.loc(node), array))
    return ArrayHandle(array)


def _vector_array(lo, node, name: str) -> ir.Param | None:
    """The 1-d ndarray of 4- or 8-byte scalars a vector load reads, or None (a field, a
    shared array, a narrow or vector dtype: those are read element by element)."""
    base = lo.expr(node.args[0])
    if not isinstance(base, ArrayHandle):
        raise lo.error(node.args[0], f"qd.simt.{name}() reads an ndarray: pass the array itself")
    array = base.array
    if isinstance(array, ir.Param) and not array.hidden and array.type.ndim == 1 and \
            not array.type.element_shape and not array.type.bool_elements and array.type.dtype.bits in (32, 64):
        return array
    return None


@handler("grid._aligned")
def _aligned(lo, name, node):
    if len(node.args) != 1 or node.keywords:
        raise lo.error(node, "qd.simt.grid._aligned(arr) takes one ndarray")
    array = _vector_array(lo, node, name)
    return CT(False) if array is None else ir.Aligned(T.bool_, lo.loc(node), array, 16)


@handler("grid._vector_lane")
def _vector_lane(lo, name, node):
    if len(node.args) != 3 or node.keywords:
        raise lo.error(node, "qd.simt.grid._vector_lane(arr, q, lane) takes an ndarray, a vector index and a lane")
    array = _vector_array(lo, node, name)
    q = lo.coerce(lo.to_expr(lo.expr(node.args[1]), node.args[1]), T.i32, node.args[1])
    lane = lo.static_value(node.args[2], what="the lane of qd.simt.grid._vector_lane")
    if array is None:
        raise lo.error(node.args[0], "qd.simt.grid._vector_lane() reads a 1-d ndarray of 4- or 8-byte scalars",
                       hint="check qd.simt.grid._aligned(arr) first: it is False for every other array")
    width = 128 // array.type.dtype.bits
    if not isinstance(lane, int) or not 0 <= lane < width:
        raise lo.error(node.args[2], f"the lane must be an int from 0 to {width - 1}, known at translation time")
    return ir.VectorLane(array.type.dtype, lo.loc(node), array, q, width, lane)


@handler("block.sync")
def _block_sync(lo, name, node):
    call_args(lo, node, name, 0)
    lo.require_parallel(node, "qd.simt.block.sync()")
    lo.emit(ir.Barrier(lo.loc(node), "block"))
    return CT(None)


@handler("block.sync_all_nonzero", "block.sync_any_nonzero", "block.sync_count_nonzero")
def _block_vote(lo, name, node):
    (p,) = call_args(lo, node, name, 1)
    lo.require_parallel(node, f"qd.simt.{name}()")
    pred = lo.truth(lo.to_expr(p, node.args[0]), node.args[0])
    op = name.split("_")[1]  # sync_all_nonzero -> all
    return ir.BlockVote(T.i32, lo.loc(node), op, pred)


@handler("block._dim")
def _block_dim(lo, name, node):
    call_args(lo, node, name, 0)
    lo.require_parallel(node, "qd.simt.block._dim()")
    return CT(lo.task_state.block_dim)


@handler("subgroup._note")
def _note(lo, name, node):
    (text,) = call_args(lo, node, name, 1)
    if not isinstance(text, CT) or not isinstance(text.value, str):
        raise lo.error(node, "qd.simt.subgroup._note(text) takes a string known at translation time")
    lo.emit(ir.Note(lo.loc(node), text.value))
    return CT(None)


@handler("subgroup.group_size")
def _group_size(lo, name, node):
    call_args(lo, node, name, 0)
    return CT(lo.require_subgroup_size(node))


@handler("subgroup.log2_group_size")
def _log2_group_size(lo, name, node):
    call_args(lo, node, name, 0)
    return CT(lo.require_subgroup_size(node).bit_length() - 1)


@handler("subgroup.invocation_id")
def _invocation_id(lo, name, node):
    call_args(lo, node, name, 0)
    lo.require_parallel(node, "qd.simt.subgroup.invocation_id()")
    return ir.SubgroupOp(T.i32, lo.loc(node), "invocation_id", [])


@handler("subgroup.sync", "subgroup.barrier")
def _subgroup_sync(lo, name, node):
    call_args(lo, node, name, 0)
    current_name(lo, name, node)
    lo.emit(ir.Barrier(lo.loc(node), "subgroup"))
    return CT(None)


@handler("subgroup.mem_fence", "subgroup.memory_barrier")
def _subgroup_fence(lo, name, node):
    call_args(lo, node, name, 0)
    current_name(lo, name, node)
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
    v, k = call_args(lo, node, name, 2)
    lo.require_parallel(node, f"qd.simt.{name}()")
    value = lo.to_expr(v, node.args[0])
    if value.type is T.bool_:
        value = lo.coerce(value, T.i32, node.args[0])
    return ir.SubgroupOp(value.type, lo.loc(node), name.split(".")[1], [value, _lane_arg(lo, k, node.args[1])])


@handler("subgroup.broadcast_first")
def _broadcast_first(lo, name, node):
    (v,) = call_args(lo, node, name, 1)
    value = lo.to_expr(v, node.args[0])
    return ir.SubgroupOp(value.type, lo.loc(node), "broadcast", [value, ir.Const(T.u32, lo.loc(node), 0)])


@handler("subgroup.ballot", "subgroup.ballot_full_subgroup")
def _ballot(lo, name, node):
    (p,) = call_args(lo, node, name, 1)
    current_name(lo, name, node)
    lo.require_parallel(node, "qd.simt.subgroup.ballot()")
    return ir.SubgroupOp(T.u64, lo.loc(node), "ballot", [lo.truth(lo.to_expr(p, node.args[0]), node.args[0])])


@handler("subgroup.all_true", "subgroup.any_true")
def _vote(lo, name, node):
    (p,) = call_args(lo, node, name, 1)
    lo.require_parallel(node, f"qd.simt.{name}()")
    op = "all" if name.endswith("all_true") else "any"
    vote = ir.SubgroupOp(T.bool_, lo.loc(node), op, [lo.truth(lo.to_expr(p, node.args[0]), node.args[0])])
    return lo.coerce(vote, T.i32, node)


@handler(*(f"subgroup.{kind}_{op}" for kind in ("reduce", "reduce_all", "inclusive", "exclusive")
           for op in ("add", "min", "max")))
def _subgroup_fold(lo, name, node):
    (v,) = call_args(lo, node, name, 1)
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
    kind, op, v = call_args(lo, node, name, 3)
    kind, op = lo.static_value(node.args[0], what="a scan kind"), lo.static_value(node.args[1], what="an operator")
    lo.require_parallel(node, f"qd.simt.subgroup.{kind}_{op}()")
    value = lo.to_expr(v, node.args[2])
    if value.type is T.bool_:
        value = lo.coerce(value, T.i32, node.args[2])
    return ir.SubgroupOp(value.type, lo.loc(node), f"{kind}_{op}", [value])


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
    loc = lo.loc(node)
    if short == "sync" and not lo.body.in_parallel and not lo.function_stack:
        # Between the kernel's loops one thread runs, and each loop ends before the next
        # begins: nothing to wait for (Quadrants takes it there too).
        (m,) = call_args(lo, node, name, 1)
        lo.coerce(lo.to_expr(m, node.args[0]), T.u32, node.args[0], explicit=True)
        return CT(None)
    lo.require_parallel(node, f"qd.simt.{name}()")
    if short == "ballot":
        (p,) = call_args(lo, node, name, 1)
        return ir.WarpOp(T.i32, loc, "ballot", short, [lo.coerce(lo.truth(lo.to_expr(p, node.args[0]), node.args[0]),
                                                                  T.i32, node.args[0])])
    if short == "active_mask":
        call_args(lo, node, name, 0)
        return ir.WarpOp(T.u32, loc, "active_mask", short, [])
    if short == "sync":
        (m,) = call_args(lo, node, name, 1)
        mask = lo.coerce(lo.to_expr(m, node.args[0]), T.u32, node.args[0], explicit=True)
        lo.emit(ir.ExprStmt(loc, ir.WarpOp(ir.VOID, loc, "sync", short, [mask])))
        return CT(None)
    op, result, value_type = _WARP[short]
    n = 3 if op.startswith("shfl") else 2
    values = call_args(lo, node, name, n)
    args = [lo.coerce(lo.to_expr(values[0], node.args[0]), T.u32, node.args[0], explicit=True),
            lo.coerce(lo.to_expr(values[1], node.args[1]), value_type, node.args[1], explicit=True)]
    if n == 3:
        args.append(lo.coerce(lo.to_expr(values[2], node.args[2]), T.i32, node.args[2], explicit=True))
    return ir.WarpOp(result, loc, op, short, args)


@handler("system.mem_fence")
def _system_fence(lo, name, node):
    call_args(lo, node, name, 0)
    lo.emit(ir.Fence(lo.loc(node), "system"))
    return CT(None)

"""``qd.shmem``: NVSHMEM's one-sided puts and gets, atomics, waits and ordering."""
from __future__ import annotations

import ast

from ...ir import nodes as ir
from ...ir import types as T
from ..values import CT
from .table import handler, call_args
from ...lang.shmem import Cmp


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
    call_args(lo, node, name, 0)
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
    call_args(lo, node, name, 0)
    cls = {"shmem.fence": ir.ShmemFence, "shmem.quiet": ir.ShmemQuiet, "shmem.barrier_all": ir.ShmemBarrierAll}[name]
    lo.emit(cls(lo.loc(node)))
    return CT(None)

"""A stable text dump of the IR: the ``inspect`` command's view and a golden-test target.

Every value shows its type (``add.f32(a, b)``); every statement ends with its Python line.
Locals are numbered per kernel in order of appearance so the dump never depends on
object identity."""
from __future__ import annotations

import os

from . import nodes as ir


class _Names:
    def __init__(self) -> None:
        self.ids: dict[int, str] = {}
        self.objs: list = []  # keep the objects alive so ids stay unique

    def __call__(self, var: ir.Local) -> str:
        key = id(var)
        if key not in self.ids:
            self.ids[key] = f"{var.name}.{len(self.ids)}"
            self.objs.append(var)
        return self.ids[key]


def _element(e: ir.Load | ir.VolatileLoad | ir.Atomic, names: _Names) -> str:
    return f"{e.array.name}[{', '.join(dump_expr(i, names) for i in e.indices)}]"


def dump_expr(e: ir.Expr, names: _Names) -> str:
    t = e.type.name
    if isinstance(e, ir.Const):
        return f"{e.value!r}:{t}"
    if isinstance(e, ir.LocalRef):
        return names(e.var)
    if isinstance(e, ir.ParamRef):
        return e.param.name
    if isinstance(e, ir.Shape):
        return f"{e.array.name}.shape[{e.dim}]"
    if isinstance(e, ir.Load):
        return _element(e, names)
    if isinstance(e, (ir.BinOp, ir.Compare, ir.Logical)):
        return f"{e.op}.{t}({dump_expr(e.a, names)}, {dump_expr(e.b, names)})"
    if isinstance(e, ir.Unary):
        return f"{e.op}.{t}({dump_expr(e.a, names)})"
    if isinstance(e, ir.Cast):
        return f"cast.{t}({dump_expr(e.a, names)})"
    if isinstance(e, ir.Select):
        return f"select.{t}({dump_expr(e.cond, names)}, {dump_expr(e.a, names)}, {dump_expr(e.b, names)})"
    if isinstance(e, ir.Math):
        return f"{e.fn}.{t}({', '.join(dump_expr(a, names) for a in e.args)})"
    if isinstance(e, ir.Clock):
        return "clock_counter()"
    if isinstance(e, ir.ThreadIndex):
        return f"{e.kind}()"
    if isinstance(e, ir.BitCast):
        return f"bitcast.{t}({dump_expr(e.a, names)})"
    if isinstance(e, ir.VolatileLoad):
        return f"volatile {_element(e, names)}"
    if isinstance(e, ir.VectorLane):
        return f"{e.array.name}.vec{e.width}[{dump_expr(e.index, names)}].{e.lane}"
    if isinstance(e, ir.Aligned):
        return f"aligned{e.bytes}({e.array.name})"
    if isinstance(e, ir.BlockVote):
        return f"block_sync_{e.op}.{t}({dump_expr(e.pred, names)})"
    if isinstance(e, ir.WarpOp):
        return f"warp_{e.op}.{t}({', '.join(dump_expr(a, names) for a in e.args)})"
    if isinstance(e, ir.SubgroupOp):
        return f"subgroup_{e.op}.{t}({', '.join(dump_expr(a, names) for a in e.args)})"
    if isinstance(e, ir.Atomic):
        where = _element(e, names)
        extra = f", expected={dump_expr(e.expected, names)}" if e.expected is not None else ""
        return f"atomic_{e.op}.{t}({where}, {dump_expr(e.value, names)}{extra})"
    if isinstance(e, ir.Call):
        args = ", ".join([dump_expr(a, names) for a in e.args] + [f"out {names(o)}" for o in e.outs])
        return f"call {e.function}({args})" + ("" if e.type is ir.VOID else f".{t}")
    if isinstance(e, (ir.ShmemMyPe, ir.ShmemNPes)):
        return f"shmem_{'my_pe' if isinstance(e, ir.ShmemMyPe) else 'n_pes'}.{t}()"
    if isinstance(e, ir.ShmemElement):
        return f"&{_element(e, names)}"
    if isinstance(e, ir.ShmemOp):
        args = [dump_expr(a, names) for a in e.args]
        if isinstance(e, ir.ShmemWaitUntil):
            args.insert(1, e.cmp)
        return f"{_shmem_name(e)}{'' if e.type is ir.VOID else '.' + t}({', '.join(args)})"
    raise TypeError(f"no dump for {type(e).__name__}")


def _shmem_name(e: ir.ShmemOp) -> str:
    if isinstance(e, (ir.ShmemPut, ir.ShmemGet)):
        return f"shmem_{'put' if isinstance(e, ir.ShmemPut) else 'get'}{'_nbi' if e.nbi else ''}"
    if isinstance(e, ir.ShmemAtomic):
        return f"shmem_atomic_{e.op}"
    return {ir.ShmemP: "shmem_p", ir.ShmemG: "shmem_g", ir.ShmemWaitUntil: "shmem_wait_until"}[type(e)]


_SHMEM_STMTS = {ir.ShmemFence: "shmem_fence", ir.ShmemQuiet: "shmem_quiet", ir.ShmemBarrierAll: "shmem_barrier_all"}


def dump_stmts(stmts: list[ir.Stmt], names: _Names, indent: int, out: list[str]) -> None:
    pad = "  " * indent

    def line(text: str, st: ir.Stmt) -> None:
        out.append(f"{pad}{text}  # {os.path.basename(st.loc.file)}:{st.loc.line}")

    for st in stmts:
        if isinstance(st, ir.Declare):
            init = "" if st.init is None else " = " + dump_expr(st.init, names)
            line(f"let {names(st.var)}: {st.var.type.name}{init}", st)
        elif isinstance(st, ir.Assign):
            line(f"{names(st.var)} = {dump_expr(st.value, names)}", st)
        elif isinstance(st, ir.Store):
            idx = ", ".join(dump_expr(i, names) for i in st.indices)
            line(f"{st.array.name}[{idx}] = {dump_expr(st.value, names)}", st)
        elif isinstance(st, ir.ExprStmt):
            line(dump_expr(st.expr, names), st)
        elif isinstance(st, ir.If):
            line(f"if {dump_expr(st.cond, names)}:", st)
            dump_stmts(st.then, names, indent + 1, out)
            if st.orelse:
                out.append(f"{pad}else:")
                dump_stmts(st.orelse, names, indent + 1, out)
        elif isinstance(st, ir.For):
            rng = ", ".join(dump_expr(x, names) for x in (st.start, st.stop, st.step))
            line(f"for {names(st.var)} in range({rng}):", st)
            dump_stmts(st.body, names, indent + 1, out)
        elif isinstance(st, ir.While):
            line(f"while {dump_expr(st.cond, names)}:", st)
            dump_stmts(st.body, names, indent + 1, out)
        elif isinstance(st, ir.Return):
            line("return" if st.value is None else f"return {dump_expr(st.value, names)}", st)
        elif isinstance(st, ir.Break):
            line("break", st)
        elif isinstance(st, ir.Continue):
            line("continue", st)
        elif isinstance(st, ir.Fence):
            line(f"fence {st.scope}", st)
        elif isinstance(st, ir.Print):
            parts = [repr(st.chunks[0])]
            for a, chunk in zip(st.args, st.chunks[1:]):
                parts += [dump_expr(a, names), repr(chunk)]
            line(f"print({', '.join(parts)})", st)
        elif isinstance(st, ir.Barrier):
            line(f"barrier {st.scope}", st)
        elif isinstance(st, ir.DeclareShared):
            line(f"shared {st.array.name}: {st.array.type!r}", st)
        elif type(st) in _SHMEM_STMTS:
            line(_SHMEM_STMTS[type(st)], st)
        elif isinstance(st, ir.Note):
            line(f"# {st.text}", st)
        else:
            raise TypeError(f"no dump for {type(st).__name__}")


def dump_kernel(k: ir.Kernel) -> str:
    names = _Names()
    params = ", ".join(f"{p.name}: {'symmetric ' if p.symmetric else ''}{p.role + ' ' if p.hidden else ''}{p.type!r}"
                       for p in k.params)
    out = [f"kernel {k.name}({params})  # {os.path.basename(k.file)}:{k.loc.line}"]
    for f in k.functions:
        args = ", ".join([f"{names(p)}: {p.type.name}" for p in f.params] +
                         [f"out {names(p)}: {p.type.name}" for p in f.outputs])
        flags = "".join(f" {flag}" for flag in ("recursive", "forward") if getattr(f, flag))
        out.append(f"function {f.name}({args}) -> {f.result.name if f.result else 'void'}{flags}:"
                   f"  # {os.path.basename(f.loc.file)}:{f.loc.line}")
        dump_stmts(f.body, names, 1, out)
    for t in k.tasks:
        head = f"task {t.name} {t.kind}"
        if t.kind == "parallel":
            dims = ", ".join(f"{names(v)} in [{dump_expr(b, names)}, {dump_expr(e, names)})"
                             for v, (b, e) in zip(t.loop_vars, t.ranges))
            head += f" block_dim={t.block_dim} for {dims}"
        out.append(f"{head}:  # {os.path.basename(t.loc.file)}:{t.loc.line}")
        if t.prelude:
            out.append("  prelude:")
            dump_stmts(t.prelude, names, 2, out)
        dump_stmts(t.body, names, 1, out)
        if t.epilogue:
            out.append("  epilogue:")
            dump_stmts(t.epilogue, names, 2, out)
    for n, loop in enumerate(k.loops):
        inside = "" if loop.parent is None else f" inside loop {loop.parent}"
        out.append(f"loop {n}: tasks {k.tasks[loop.first].name} .. {k.tasks[loop.stop - 1].name} again while "
                   f"{loop.flag.name}[()] != 0{inside}  # {os.path.basename(loop.loc.file)}:{loop.loc.line}")
    return "\n".join(out) + "\n"

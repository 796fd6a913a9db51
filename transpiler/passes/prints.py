"""``print()`` in a kernel, written to a print buffer the host reads after the launch, on
every target alike (Metal has no printf; CUDA's and Vulkan's printf print in no fixed order,
Vulkan's only through the validation layer, and neither prints what the other does for f64
or 64-bit integers). The host formats the text, so every executor prints the same.

The buffer (``Param.role == "print"``) holds ``WORDS`` u32 words, its first two zeroed per
launch: word 0 counts the words claimed, word 1 the records that did not fit. A print claims
its record's words with one atomic add on word 0 and writes, from word ``HEADER`` + the
offset it got: its site's number (1, 2, ...), the values of its task's loop variables (the
iteration that prints, as i32), then the values it formats (a 64-bit value in two words,
low first). A record that does not fit counts itself in word 1 instead.

The manifest's ``prints`` entry describes each site: where it is, its task, how many loop
variables its record holds, the text around its values and each value's type and printf
spec. The host orders the records of one launch by task, then by iteration (row-major over
the loop variables), then by the offset each got (one thread claims its offsets in the
order it prints): the order a serial run of each loop prints in, whatever the device.
"""
from __future__ import annotations

import os

from ..ir import nodes as ir
from ..ir import types as T
from ..ir import walk

WORDS = 1 << 16   # the buffer's size in u32 words (256 KiB): the header and about 16 000 one-value lines
HEADER = 2        # words before the first record: the words claimed, the records dropped
# dtype -> the printf conversion its value prints with, as Quadrants prints it (f64 with 12
# decimals; a narrow integer and a bool as an int).
SPECS = {"bool": "%d", "i8": "%d", "i16": "%d", "i32": "%d", "i64": "%lld", "u8": "%u", "u16": "%u", "u32": "%u",
         "u64": "%llu", "f16": "%f", "f32": "%f", "f64": "%.12f"}
PHASES = ("prelude", "body", "epilogue")


def buffer_prints(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with each ``ir.Print`` replaced by its record's writes into the print
    buffer (a hidden parameter added when one prints), its sites in ``kernel.prints``."""
    if not walk.contains(kernel, ir.Print):
        return kernel
    names = {p.name for p in kernel.params}
    name, k = "qd_print", 1
    while name in names:
        name, k = f"qd_print_{k}", k + 1
    buf = ir.Param(name, T.NdarrayType(T.u32, 0, (WORDS,)), len(kernel.params), kernel.loc, role="print")
    kernel.params.append(buf)
    for t, task in enumerate(kernel.tasks):
        for phase in PHASES:
            keys = task.loop_vars if phase == "body" else []
            setattr(task, phase, _rewrite(getattr(task, phase), _Sites(kernel, buf, t, phase, keys)))
    for fn in kernel.functions:  # (called from any task: no iteration to order by)
        fn.body = _rewrite(fn.body, _Sites(kernel, buf, None, None, []))
    return kernel


class _Sites:
    """Where the sites of one statement list go: the kernel, its buffer, the task and phase."""

    def __init__(self, kernel: ir.Kernel, buf: ir.Param, task: int | None, phase: str | None,
                 keys: list[ir.Local]):
        self.kernel, self.buf, self.task, self.phase, self.keys = kernel, buf, task, phase, keys


def _rewrite(stmts: list[ir.Stmt], sites: _Sites) -> list[ir.Stmt]:
    out = []
    for st in stmts:
        for f in walk.fields_of(type(st)).bodies:
            setattr(st, f, _rewrite(getattr(st, f), sites))
        out += _record(st, sites) if isinstance(st, ir.Print) else [st]
    return out


def _record(st: ir.Print, sites: _Sites) -> list[ir.Stmt]:
    """The statements that write ``st``'s record, and its site in ``kernel.prints``."""
    loc, buf = st.loc, sites.buf
    site = {"id": len(sites.kernel.prints) + 1, "file": os.path.basename(loc.file), "line": loc.line,
            "task": sites.task, "phase": sites.phase, "keys": len(sites.keys), "parts": [],
            "args": [e.type.name for e in st.args]}
    for k, chunk in enumerate(st.chunks):
        if chunk:
            site["parts"].append({"text": chunk})
        if k < len(st.args):
            asked = st.specs[k] if st.specs else ("", "")
            site["parts"].append({"arg": k, "spec": printf_spec(SPECS[st.args[k].type.name], asked)})
    sites.kernel.prints.append(site)
    # Each value in a local first: evaluated once (a 64-bit one fills two words), and even
    # when the record does not fit (`print(qd.atomic_add(n[0], 1))` still adds).
    values = [ir.Local(f"qd_print_{site['id']}_{k}", e.type, loc) for k, e in enumerate(st.args)]
    out: list[ir.Stmt] = [ir.Declare(loc, v, e) for v, e in zip(values, st.args, strict=True)]
    words = [ir.Const(T.u32, loc, site["id"])]
    words += [ir.Cast(T.u32, loc, ir.LocalRef(v.type, loc, v) if v.type.bits == 32 else
                      ir.Cast(T.i32, loc, ir.LocalRef(v.type, loc, v))) for v in sites.keys]
    for v in values:
        words += value_words(v, loc)
    at = ir.Local(f"qd_print_at_{site['id']}", T.u32, loc)

    def offset() -> ir.Expr:
        return ir.LocalRef(T.u32, loc, at)

    claim = ir.Atomic(T.u32, loc, "add", buf, [ir.Const(T.i32, loc, 0)], ir.Const(T.u32, loc, len(words)))
    stores = [ir.Store(loc, buf, [ir.BinOp(T.i32, loc, "add", ir.Cast(T.i32, loc, offset()),
                                           ir.Const(T.i32, loc, HEADER + k))], w) for k, w in enumerate(words)]
    fits = ir.Compare(T.bool_, loc, "le", offset(), ir.Const(T.u32, loc, WORDS - HEADER - len(words)))
    dropped = ir.ExprStmt(loc, ir.Atomic(T.u32, loc, "add", buf, [ir.Const(T.i32, loc, 1)], ir.Const(T.u32, loc, 1)))
    return out + [ir.Declare(loc, at, claim), ir.If(loc, fits, stores, [dropped])]


def printf_spec(default: str, asked: tuple[str, str]) -> str:
    """The printf conversion for a value whose type prints as ``default`` ("%lld"), with the
    flags, width, precision and conversion letter the kernel asked for (``{x:.3e}``)."""
    if asked == ("", ""):
        return default
    flags, letter = asked
    letter = letter or default[-1]
    length = "ll" if "ll" in default and letter in "diouxX" else ""  # the type decides it, not the kernel
    return f"%{flags}{length}{letter}"


def value_words(v: ir.Local, loc: ir.Loc) -> list[ir.Expr]:
    """A scalar local's bits as u32 words, low first (a narrow integer or a bool widened to
    32 bits, an f16 to f32)."""
    t = v.type

    def e() -> ir.Expr:
        return ir.LocalRef(t, loc, v)

    if t.bits == 64:
        def bits() -> ir.Expr:
            return e() if t is T.u64 else ir.BitCast(T.u64, loc, e()) if t.is_float else ir.Cast(T.u64, loc, e())
        high = ir.BinOp(T.u64, loc, "rshift", bits(), ir.Const(T.u64, loc, 32))
        return [ir.Cast(T.u32, loc, bits()), ir.Cast(T.u32, loc, high)]
    if t.is_float:
        return [ir.BitCast(T.u32, loc, e() if t is T.f32 else ir.Cast(T.f32, loc, e()))]
    if t is T.u32:
        return [e()]
    if t is T.bool_ or t.bits == 32:
        return [ir.Cast(T.u32, loc, e())]
    return [ir.Cast(T.u32, loc, ir.Cast(T.i32 if t.kind == "int" else T.u32, loc, e()))]  # (sign-extended)

"""The fuzzer's description of a kernel: expressions, statements, tasks and helpers as plain
data, rendered here to the Python source the frontend reads. The same description is what
``reference.py`` interprets and what ``minimize.py`` shrinks."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Iterator

import numpy as np

from .dtypes import DT, ST, VT

SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
          "lshift": "<<", "rshift": ">>", "bitand": "&", "bitor": "|", "bitxor": "^", "matmul": "@"}
CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
BLOCK = "qd.simt.block"
SUBGROUP = "qd.simt.subgroup"
SWIZZLE = "xyzw"


@dataclass
class Expr:
    """One expression. ``t`` is its type (a bare literal's own type, which a typed operand
    beside it overrides); for floats ``exact`` says the value is exactly representable and
    independent of evaluation order, and |value| < 2**mag, a multiple of 2**-frac."""
    op: str
    t: DT
    args: list[Expr] = field(default_factory=list)
    attr: Any = None
    exact: bool = True
    mag: int = 0
    frac: int = 0

    @property
    def literal(self) -> bool:
        return self.op in ("lit", "static")


@dataclass
class Stmt:
    kind: str
    attr: Any = None
    exprs: list[Expr | None] = field(default_factory=list)
    bodies: list[list[Stmt]] = field(default_factory=list)


@dataclass
class Array:
    name: str
    dt: DT
    size: int
    role: str  # "in", "out" (per-iteration results), "acc" (atomics), "serial" (serial code's results)
    tol_mag: int | None = None  # set when inexact floats are stored: compare within 2**tol_mag * TOL
    ulps: int | None = None     # libm results stored as computed: compare within this many ulps
    elem: VT | None = None      # an ndarray (or field) of vectors / matrices of dt
    field: bool = False         # a module-level qd.field, not a kernel parameter

    @property
    def et(self):
        """The type of one element: dt, or the vector / matrix type."""
        return self.elem or self.dt

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.size, *self.elem.shape) if self.elem else (self.size,)


@dataclass
class Scalar:
    name: str
    dt: DT
    value: int | float


@dataclass
class Helper:
    name: str
    params: list[tuple[str, DT]]
    ret: DT
    body: list[Stmt]
    # Its first parameter is a qd.template(): the caller's variable itself, which the body
    # assigns; called as a statement, it returns nothing.
    mutates: bool = False


@dataclass
class Task:
    parallel: bool
    body: list[Stmt]
    start: int = 0
    stop: int = 0
    block_dim: int | None = None


@dataclass
class Program:
    seed: int
    n: int
    arrays: list[Array]
    scalars: list[Scalar]
    helpers: list[Helper]
    tasks: list[Task]
    inputs: dict[str, np.ndarray]

    @property
    def name(self) -> str:
        return f"fuzz_{self.seed}"

    def clone(self) -> Program:
        return copy.deepcopy(self)


# ----------------------------------------------------------------------------- rendering

def render_expr(e: Expr) -> str:
    a = [render_expr(x) for x in e.args]
    op = e.op
    if op == "var" or op == "static":
        return e.attr
    if op == "lit":
        return repr(e.attr) if e.attr >= 0 else f"({e.attr!r})"
    if op == "load":
        return f"{e.attr}[{a[0]}]"
    if op == "shload":
        return f"{e.attr}[{a[0]}]"
    if op == "bin":
        return f"({a[0]} {SYMBOL[e.attr]} {a[1]})"
    if op == "neg":
        return f"(-{a[0]})"
    if op == "invert":
        return f"(~{a[0]})"
    if op == "not":
        return f"(not {a[0]})"
    if op == "cmp":
        parts = [a[0]]
        for o, x in zip(e.attr, a[1:]):
            parts += [CMP[o], x]
        return "(" + " ".join(parts) + ")"
    if op in ("and", "or"):
        return f"({a[0]} {op} {a[1]})"
    if op == "ifexp":
        return f"({a[1]} if {a[0]} else {a[2]})"
    if op == "select":
        return f"qd.select({a[0]}, {a[1]}, {a[2]})"
    if op in ("min", "max", "abs"):
        return f"{op}({', '.join(a)})"
    if op == "math":
        return f"qd.{e.attr}({', '.join(a)})"
    if op == "cast":
        return f"qd.{e.t.name}({a[0]})" if e.attr == "ctor" else f"qd.cast({a[0]}, qd.{e.t.name})"
    if op == "call":
        return f"{e.attr}({', '.join(a)})"
    if op == "tid":
        return f"{BLOCK}.thread_idx()"
    if op == "breduce":
        fn, bd, dt = e.attr
        return f"{BLOCK}.{fn}({a[0]}, {bd}, qd.{dt.name})"
    if op == "vec":  # a vector or matrix built from scalars
        if e.t.m:
            rows = [f"[{', '.join(a[r * e.t.m:(r + 1) * e.t.m])}]" for r in range(e.t.n)]
            return f"{e.t.name}([{', '.join(rows)}])"
        return f"{e.t.name}({', '.join(a)})"
    if op == "struct":
        return f"{e.t.name}({', '.join(f'{k}={x}' for (k, _), x in zip(e.t.members, a))})"
    if op == "comp":
        return a[0] + (f"[{a[1]}]" if e.attr[0] == "rt" else component(e.attr))
    if op == "vminmax":  # element-wise, a scalar broadcast
        return f"qd.{e.attr}({a[0]}, {a[1]})"
    if op == "method":
        return f"{a[0]}.{e.attr}({', '.join(a[1:])})"
    if op == "sgop":
        fn, extra = e.attr
        if fn.endswith("_tiled") or fn in ("shuffle_up", "shuffle_down"):
            return f"{SUBGROUP}.{fn}({a[0]}, {extra})"
        if fn in ("broadcast", "shuffle_xor"):
            return f"{SUBGROUP}.{fn}({a[0]}, qd.u32({extra}))"
        return f"{SUBGROUP}.{fn}({', '.join(a)})"
    raise ValueError(op)


def component(attr) -> str:
    """The suffix that selects a component: ``.y``, ``[1]``, ``[0, 1]`` or a member ``.a``."""
    how, key = attr
    if how == "swz":
        return "." + (key if isinstance(key, str) else SWIZZLE[key])
    if how == "idx":
        return f"[{key}]"
    if how == "mat":
        return f"[{key[0]}, {key[1]}]"
    return "." + key


def render_body(stmts: list[Stmt], ind: int, out: list[str]) -> None:
    if not stmts:
        out.append("    " * ind + "pass")
    for s in stmts:
        render_stmt(s, ind, out)


def render_stmt(s: Stmt, ind: int, out: list[str]) -> None:
    p = "    " * ind
    e = [render_expr(x) if x is not None else None for x in s.exprs]
    k = s.kind
    if k == "assign":
        out.append(f"{p}{s.attr} = {e[0]}")
    elif k == "aug":
        name, op = s.attr
        out.append(f"{p}{name} {SYMBOL[op]}= {e[0]}")
    elif k == "swap":  # a, b = b, a (+ b): both values read first
        out.append(f"{p}{s.attr[0]}, {s.attr[1]} = {e[0]}, {e[1]}")
    elif k == "reduce_minmax":  # m = max(m, v): a kernel-scope reduction
        name, op = s.attr
        out.append(f"{p}{name} = {op}({name}, {e[0]})")
    elif k in ("store", "shstore"):
        out.append(f"{p}{s.attr}[{e[0]}] = {e[1]}")
    elif k == "setcomp":  # v.x = e, m[0, 1] = e, s.a = e, s.c.x = e
        out.append(f"{p}{e[0]} = {e[1]}")
    elif k == "cstore":  # a[i].y = e: one component of an array's vector element
        name, comp = s.attr
        out.append(f"{p}{name}[{e[0]}]{component(comp)} = {e[1]}")
    elif k == "augstore":
        name, op = s.attr
        out.append(f"{p}{name}[{e[0]}] {SYMBOL[op]}= {e[1]}")
    elif k in ("atomic", "shatomic"):
        fn, name = s.attr
        out.append(f"{p}qd.{fn}({name}[{e[0]}], {e[1]})")
    elif k == "katomic":  # qd.atomic_max(m, v) on a kernel-scope variable
        fn, name = s.attr
        out.append(f"{p}qd.{fn}({name}, {e[0]})")
    elif k == "mutate":  # h(v, ...): a helper that assigns the variable it is given
        helper, name = s.attr
        out.append(f"{p}{helper}({', '.join([name, *e])})")
    elif k == "if":
        out.append(f"{p}if {e[0]}:")
        render_body(s.bodies[0], ind + 1, out)
        other = s.bodies[1]
        while len(other) == 1 and other[0].kind == "if" and other[0].attr == "elif":
            out.append(f"{p}elif {render_expr(other[0].exprs[0])}:")
            render_body(other[0].bodies[0], ind + 1, out)
            other = other[0].bodies[1]
        if other:
            out.append(f"{p}else:")
            render_body(other, ind + 1, out)
    elif k == "for":
        args = ", ".join(x for x in e if x is not None)
        out.append(f"{p}for {s.attr} in range({args}):")
        render_body(s.bodies[0], ind + 1, out)
    elif k == "while":
        counter, limit = s.attr
        out.append(f"{p}{counter} = 0")
        out.append(f"{p}while {counter} < {limit}:")
        out.append(f"{p}    {counter} += 1")
        render_body(s.bodies[0], ind + 1, out)
    elif k == "static":
        var, count = s.attr
        out.append(f"{p}for {var} in qd.static(range({count})):")
        render_body(s.bodies[0], ind + 1, out)
    elif k in ("break", "continue"):
        out.append(f"{p}{k}")
    elif k == "return":
        out.append(f"{p}return {e[0]}")
    elif k == "sync":
        out.append(f"{p}{BLOCK}.sync()")
    elif k == "shalloc":
        name, size, dt = s.attr
        out.append(f"{p}{name} = {BLOCK}.SharedArray(({size},), qd.{dt.name})")
    else:
        raise ValueError(k)


def render(prog: Program) -> str:
    """The kernel module's Python source."""
    out = [f'"""A random kernel from tests/fuzz, seed {prog.seed}. Run it again:',
           f"PYTHONPATH=tests:. python -m fuzz.drive --seed {prog.seed}", '"""',
           "import transpiler as qd", ""]
    vts, sts = composite_types(prog)
    out += [t.declaration() for t in vts] + [t.declaration() for t in sts]
    for a in prog.arrays:
        if a.field:
            if a.elem is None:
                out.append(f"{a.name} = qd.field(qd.{a.dt.name}, shape={a.size})")
            elif a.elem.m:
                out.append(f"{a.name} = qd.Matrix.field({a.elem.n}, {a.elem.m}, qd.{a.dt.name}, shape={a.size})")
            else:
                out.append(f"{a.name} = qd.Vector.field({a.elem.n}, qd.{a.dt.name}, shape={a.size})")
    for h in prog.helpers:
        params = ", ".join(f"{n}: qd.template()" if h.mutates and k == 0 else f"{n}: qd.{t.name}"
                           for k, (n, t) in enumerate(h.params))
        out += ["", "@qd.func", f"def {h.name}({params}) -> {'None' if h.mutates else 'qd.' + h.ret.name}:"]
        render_body(h.body, 1, out)
    params = [f"{a.name}: qd.types.ndarray(qd.{a.dt.name}, ndim=1)" if a.elem is None else
              f"{a.name}: qd.types.ndarray(dtype={a.elem.name}, ndim=1)" for a in prog.arrays if not a.field]
    params += [f"{s.name}: qd.{s.dt.name}" for s in prog.scalars]
    out += ["", "@qd.kernel", f"def {prog.name}(", *[f"    {x}," for x in params], ") -> None:"]
    first_in = next(a.name for a in prog.arrays if a.role == "in" and not a.field)
    if not prog.tasks:
        out.append("    pass")
    for t in prog.tasks:
        if not t.parallel:
            render_body(t.body, 1, out)
            continue
        if t.block_dim is not None:
            out.append(f"    qd.loop_config(block_dim={t.block_dim})")
        rng = f"{first_in}.shape[0]" if (t.start, t.stop) == (0, prog.n) else \
            (f"{t.stop}" if t.start == 0 else f"{t.start}, {t.stop}")
        out.append(f"    for i in range({rng}):")
        render_body(t.body, 2, out)
    return "\n".join(out) + "\n"


def walk_bodies(prog: Program) -> Iterator[list[Stmt]]:
    """Every statement list of the program (for the minimizer), outermost first."""
    def rec(body):
        yield body
        for s in body:
            for b in s.bodies:
                yield from rec(b)
    for h in prog.helpers:
        yield from rec(h.body)
    for t in prog.tasks:
        yield from rec(t.body)


def racy_reductions(body: list[Stmt], kernel_names) -> set[str]:
    """Kernel-scope variables a parallel task both reduces into and reads: what a read sees
    depends on the order the iterations run in."""
    reduced, read = set(), set()

    def rec_e(e: Expr):
        if e.op == "var":
            read.add(e.attr)
        for x in e.args:
            rec_e(x)

    def rec(stmts):
        for s in stmts:
            if s.kind in ("aug", "reduce_minmax") and s.attr[0] in kernel_names:
                reduced.add(s.attr[0])
            elif s.kind == "katomic" and s.attr[1] in kernel_names:
                reduced.add(s.attr[1])
            for e in s.exprs:
                if e is not None:
                    rec_e(e)
            for b in s.bodies:
                rec(b)
    rec(body)
    return reduced & read


def walk_exprs(prog: Program) -> Iterator[Expr]:
    """Every expression of the program, subexpressions included."""
    def rec(e: Expr):
        yield e
        for x in e.args:
            yield from rec(x)
    for body in walk_bodies(prog):
        for s in body:
            for e in s.exprs:
                if e is not None:
                    yield from rec(e)


def composite_types(prog: Program) -> tuple[list[VT], list[ST]]:
    """The vector, matrix and struct types the program names, each declared once at module level."""
    vts: set[VT] = set()
    sts: dict[str, ST] = {}

    def note(t):
        if isinstance(t, VT):
            vts.add(t)
        elif isinstance(t, ST) and t.name not in sts:
            sts[t.name] = t
            for _, mt in t.members:
                note(mt)
    for a in prog.arrays:
        note(a.elem)
    for e in walk_exprs(prog):
        note(e.t)
    return sorted(vts, key=lambda t: t.name), sorted(sts.values(), key=lambda t: int(t.name[1:]))


def uses_subgroups(prog: Program) -> bool:
    """Whether a result may depend on the subgroup width (the reference needs the executor's)."""
    return any(e.op == "sgop" for e in walk_exprs(prog))

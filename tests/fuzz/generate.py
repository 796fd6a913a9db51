"""Seeded random kernels across the language, as a ``Program`` description (program.py).

Every choice comes from ``random.Random(seed)``: the same seed gives the same kernel. The
generator keeps kernels free of undefined behaviour and of results that depend on the
order threads run in, so any difference from the reference is a bug:

- divisors are never 0 or -1 (``(e % 5) + 2``, a literal), shift amounts are masked to the
  operand's width, integer overflow is allowed (the transpiler's integers wrap);
- a float flows into a comparison, a condition, a cast to an integer or a floor only while
  it is exact (a small multiple of a power of two, see ``Expr.exact``); inexact floats
  (sin, sqrt, /) only reach the outputs, compared within a tolerance;
- an iteration of a parallel loop writes only its own element of its outputs; other
  threads' results reach it through order-independent integer atomics, kernel-scope
  reductions, and arrays written by earlier tasks;
- block code writes a shared array only at the thread's own slot, reads it only after a
  ``block.sync()``, and puts barriers and block collectives in uniform control flow;
- vectors, matrices and structs follow the scalar rules per component (a float vector carries
  one exactness bound for all its components); subgroup operations sit at the top level of a
  task with ``qd.loop_config(block_dim=64 or 128)`` over whole blocks (uniform control flow,
  whole subgroups on every executor), and the reference computes them for the executor's
  subgroup width.

Each group of constructs is a feature (``FEATURES``); a feature left out draws nothing from the
random stream, so ``generate(seed, BASE_FEATURES)`` is the kernel that seed meant before
vectors, structs, fields and subgroups were added (but for a racy reduction, now removed:
``drop_racy_reductions``).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from .dtypes import ALL, BOOL, F32, F64, FLOATS, I32, I64, INTS, U32, U64, DT, ST, VT, promote
from .program import Array, Expr, Helper, Program, Scalar, Stmt, Task, racy_reductions

BASE_FEATURES = frozenset({"helpers", "blocks", "atomics", "reductions", "serial", "floats"})
FEATURES = BASE_FEATURES | {"vectors", "structs", "fields", "subgroups", "math64"}

HELPER_MAG, HELPER_FRAC = 16, 4  # a helper's float parameters: exact, below 2**16, multiples of 1/16
MAXMAG = 48          # |float| stays below 2**48: no overflow to inf, in f32 either
ACC_TYPES = [I32, U32, I64, U64]
ATOMIC_OPS = ["atomic_add", "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor"]
BLOCK_FNS = ["reduce_add", "reduce_min", "reduce_max", "inclusive_add", "exclusive_add", "inclusive_min",
             "inclusive_max"]
MATH_INEXACT = ["sqrt", "sin", "cos", "exp", "log", "tanh", "atan2", "div", "pow"]
SG_FOLDS = [f"{k}_{op}" for k in ("reduce", "inclusive", "exclusive") for op in ("add", "min", "max")]
SG_MOVES = ["broadcast", "broadcast_first", "shuffle", "shuffle_xor", "shuffle_up", "shuffle_down"]
SG_TYPES = [I32, U32, I64, U64]
# The share of seeds whose kernels use 32-bit types only (narrow_seed), and the salt of the
# stream that picks them.
NARROW_SHARE = 0.7
NARROW_SALT = 0x3232_0000
# f64 libm functions a last task applies to exact arguments (the math64 feature), drawn from a
# stream of its own so that the rest of a kernel is what its seed made before; each result is
# stored as computed and compared within MATH64_ULPS ulps of glibc's (the reference's).
MATH64 = ["sin", "cos", "tan", "asin", "acos", "atan", "atan2", "exp", "log", "pow", "sqrt"]
MATH64_SALT = 0x6464_0000
MATH64_ULPS = 2
SG_LANES = 8   # the narrowest subgroup (lavapipe): lanes and masks below it exist on every executor


@dataclass
class Var:
    dt: DT
    mutable: bool = True
    kernel: bool = False   # kernel scope: read-only in parallel tasks, except as a reduction
    exact: bool = True
    mag: int = 0
    frac: int = 0


@dataclass
class TaskState:
    writes: set[str] = field(default_factory=set)      # arrays this task writes: unreadable in it
    reductions: dict[str, str] = field(default_factory=dict)  # kernel var -> its reduction op
    reads: set[str] = field(default_factory=set)  # kernel vars it reads: a reduction of one would race
    block_dim: int | None = None
    shared: dict[str, str] = field(default_factory=dict)  # shared array -> "write" | "read" | atomic op
    tid: str | None = None


@dataclass
class Ctx:
    where: str                       # "parallel", "serial", "helper"
    scopes: list[dict[str, Var]]
    task: TaskState | None = None
    loops: int = 0
    depth: int = 0
    helpers: int = 0                 # helpers h0..h{helpers-1} may be called
    top: bool = False                # the task body itself (block collectives go here only)
    statics: list[str] = field(default_factory=list)  # qd.static loop variables in scope

    def task_reductions(self) -> dict[str, str]:
        return self.task.reductions if self.task else {}

    def lookup(self) -> dict[str, Var]:
        out: dict[str, Var] = {}
        for s in self.scopes:
            out.update(s)
        return out

    def child(self, **kw) -> Ctx:
        c = Ctx(self.where, self.scopes + [{}], self.task, self.loops, self.depth + 1, self.helpers, False,
                list(self.statics))
        for k, v in kw.items():
            setattr(c, k, v)
        return c


def has_loops(body: list[Stmt]) -> bool:
    return any(s.kind in ("for", "while", "static") or any(has_loops(b) for b in s.bodies) for s in body)


def lit(v, t: DT | None = None) -> Expr:
    from .dtypes import literal_type

    t = t or literal_type(v)
    if isinstance(v, float):
        return Expr("lit", t, [], v, True, 4, 2)
    return Expr("lit", t, [], v)


def narrow_seed(seed: int) -> bool:
    """Whether the seed's kernel keeps to 32-bit types (i8..i32, u8..u32, f32): Metal has no
    64-bit floats nor 64-bit atomics, so only such kernels reach the MSL target. Decided from
    the seed by a stream of its own, so the other seeds' kernels are the ones they always were."""
    return random.Random(seed + NARROW_SALT).random() < NARROW_SHARE


class Generator:
    def __init__(self, seed: int, features: frozenset[str] | None = None, narrow: bool | None = None):
        self.seed = seed
        self.r = random.Random(seed)
        self.features = features or FEATURES
        self.narrow = narrow_seed(seed) if narrow is None else narrow
        self.count = 0
        self.arrays: list[Array] = []
        self.scalars: list[Scalar] = []
        self.helpers: list[Helper] = []
        self.written: set[str] = set()   # arrays some earlier task wrote
        self.acc_ops: dict[tuple[str, int], str] = {}
        self.n = 64
        self.ret_meta: dict[str, tuple[bool, int, int]] = {}
        self.structs: list[ST] = []

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def ts(self, types: list[DT]) -> list[DT]:
        """The types of ``types`` this kernel may use (in a wide kernel, all of them: the same
        list, so the same draws from the stream)."""
        return [t for t in types if t.bits <= 32] if self.narrow else types

    # ------------------------------------------------------------------ program

    def program(self) -> Program:
        r = self.r
        self.n = r.choice([128, 256])  # whole blocks of 64 and 128 threads
        types = [I32] + r.sample([t for t in self.ts(ALL) if t != I32], r.randint(2, 5))
        if "floats" not in self.features:
            types = [t for t in types if t.is_int]
        for t in types:
            self.arrays.append(Array(self.fresh("x"), t, self.n, "in"))
            if "fields" in self.features and len(self.arrays) > 1 and self.chance(0.25):
                self.arrays[-1].field = True
        if "vectors" in self.features:
            for _ in range(r.randint(0, 2)):
                a = Array(self.fresh("x"), r.choice(types), self.n, "in", elem=None)
                a.elem = self.pick_vt(a.dt, matrix=self.chance(0.2))
                a.field = "fields" in self.features and self.chance(0.25)
                self.arrays.append(a)
        for _ in range(r.randint(0, 2)):
            t = r.choice(types)
            self.scalars.append(Scalar(self.fresh("p"), t, self.value(t)))
        if "helpers" in self.features:
            for _ in range(r.randint(0, 2)):
                self.helper()
        tasks: list[Task] = []
        kscope: dict[str, Var] = {s.name: Var(s.dt, False, **self.float_meta(s.dt)) for s in self.scalars}
        for _ in range(r.randint(1, 3)):
            if "serial" in self.features and self.chance(0.4):
                tasks.append(self.serial_task(kscope))
            tasks.append(self.parallel_task(kscope))
        inputs = {a.name: self.input_values(a) for a in self.arrays}
        if "math64" in self.features and "floats" in self.features and not self.narrow:
            self.r = random.Random(self.seed + MATH64_SALT)
            tasks.append(self.math64_task(kscope))
            inputs.update({a.name: self.input_values(a) for a in self.arrays if a.name not in inputs})
        return Program(self.seed, self.n, self.arrays, self.scalars, self.helpers, tasks, inputs)

    def float_meta(self, t: DT) -> dict:
        return {"mag": 5, "frac": 2} if t.is_float else {}

    def value(self, t: DT):
        r = self.r
        if t.is_float:
            return r.randint(-64, 64) / 4
        if r.random() < 0.3:
            return r.choice([t.lo, t.hi, t.lo + 1, t.hi - 1, 0, 1])
        if r.random() < 0.5:
            return max(t.lo, min(t.hi, r.randint(-20, 20)))
        return r.randint(t.lo, t.hi)

    def input_values(self, a: Array) -> np.ndarray:
        count = a.size * (a.elem.size if a.elem else 1)
        if a.dt.is_float:
            vals = np.array([self.r.randint(-64, 64) / 4 for _ in range(count)], dtype=a.dt.np)
        else:
            vals = np.array([self.value(a.dt) for _ in range(count)], dtype=a.dt.np)
        return vals.reshape(a.shape)

    def out_array(self, t: DT, role: str = "out", size: int | None = None, elem: VT | None = None) -> Array:
        a = Array(self.fresh({"out": "y", "acc": "acc", "serial": "s"}[role]), t, size or self.n, role, elem=elem)
        if "fields" in self.features and self.chance(0.25):
            a.field = True
        self.arrays.append(a)
        return a

    # ------------------------------------------------------------------ tasks

    def serial_task(self, kscope: dict[str, Var]) -> Task:
        ctx = Ctx("serial", [kscope], TaskState(), helpers=len(self.helpers), top=True)
        body: list[Stmt] = []
        if "reductions" in self.features and self.chance(0.6):
            # a kernel-scope integer the next parallel task may reduce into
            name, dt = self.fresh("r"), self.r.choice(self.ts(ACC_TYPES))
            body.append(Stmt("assign", name, [self.int_expr(ctx, dt, 1)]))
            kscope[name] = Var(dt, True, True)
        body += self.body(ctx, self.r.randint(1, 4))
        self.written |= ctx.task.writes
        return Task(False, body)

    def parallel_task(self, kscope: dict[str, Var]) -> Task:
        r = self.r
        st = TaskState()
        block = "blocks" in self.features and self.chance(0.3)
        sg = "subgroups" in self.features and self.chance(0.3)
        if block or sg:
            # a block collective needs whole subgroups: HIP's are 64 lanes
            st.block_dim = r.choice([64, 128])
            start, stop = 0, self.n
        else:
            start, stop = (0, self.n) if self.chance(0.7) else (r.randint(0, 8), self.n - r.randint(0, 8))
        scope = {"i": Var(I32, False)}
        ctx = Ctx("parallel", [kscope, scope], st, helpers=len(self.helpers), top=True)
        body: list[Stmt] = []
        if block:
            body += self.block_prologue(ctx)
        for _ in range(r.randint(2, 6)):
            if block and self.chance(0.35):
                body += self.block_phase(ctx)
            if sg and self.chance(0.5):
                body += self.subgroup_op(ctx)
            body += self.body(ctx, 1)
        if not any(s.kind == "store" for s in body):
            body.append(self.store(ctx))
        self.drop_racy_reductions(body, st)
        self.written |= st.writes
        # kernel-scope variables this task reduced are readable from the next task on
        for name, op in st.reductions.items():
            kscope[name].mutable = True
        return Task(True, body, start, stop, st.block_dim)

    def math64_task(self, kscope: dict[str, Var]) -> Task:
        """``y[i] = qd.sin(a)`` and the like: f64 libm functions of exact arguments (the same
        bits on every executor), kept in the domain where each is finite, stored at once."""
        r = self.r
        ctx = Ctx("parallel", [kscope, {"i": Var(I32, False)}], TaskState(), helpers=len(self.helpers), top=True)
        body = []
        for _ in range(r.randint(1, 3)):
            fn = r.choice(MATH64)
            args = [self.math64_arg(ctx, fn)]
            if fn in ("atan2", "pow"):
                args.append(self.float_expr(ctx, F64, 2, True) if fn == "atan2" else
                            self.exact_bin(self.exact_bin(self.float_expr(ctx, F64, 2, True), 16.0, "mod"), 8.0, "sub"))
            y = self.out_array(F64)
            y.ulps = MATH64_ULPS
            ctx.task.writes.add(y.name)
            body.append(Stmt("store", y.name, [Expr("var", I32, [], "i"), Expr("math", F64, args, fn, False, 0, 0)]))
        self.written |= ctx.task.writes
        return Task(True, body, 0, self.n, None)

    def math64_arg(self, ctx: Ctx, fn: str) -> Expr:
        """An exact f64 argument in ``fn``'s domain: [-1, 1) for asin and acos, positive for
        log, sqrt and pow's base (at most 64.25, with exponents in [-8, 8)), at most 700 for exp."""
        a = self.float_expr(ctx, F64, 2, True)
        if fn in ("asin", "acos"):
            return self.exact_bin(self.exact_bin(a, 2.0, "mod"), 1.0, "sub")
        if fn in ("log", "sqrt", "pow"):
            a = Expr("abs", F64, [a], None, True, a.mag, a.frac)
            return self.exact_bin(self.exact_bin(a, 64.0, "mod") if fn == "pow" else a, 0.25, "add")
        if fn == "exp":
            return Expr("min", F64, [a, lit(700.0)], None, True, a.mag, a.frac)
        return a

    @staticmethod
    def exact_bin(a: Expr, k: float, op: str) -> Expr:
        """``a op k`` for a power-of-two-step literal k: exact when a is (the generator checked a)."""
        return Expr("bin", F64, [a, lit(k)], op, True, max(a.mag, 7) + 1, max(a.frac, 2))

    def drop_racy_reductions(self, body: list[Stmt], st: TaskState) -> None:
        """A reduction into a kernel-scope variable the task also reads (a read generated before
        the reduction was) becomes an assignment to a local: the read would race with it."""
        racy = racy_reductions(body, set(st.reductions))
        if not racy:
            return

        def rec(stmts):
            for k, s in enumerate(stmts):
                name = s.attr[1] if s.kind == "katomic" else s.attr[0] if s.kind in ("aug", "reduce_minmax") else None
                if name in racy:
                    stmts[k] = Stmt("assign", self.fresh("v"), [s.exprs[0]])
                for b in s.bodies:
                    rec(b)
        rec(body)
        for name in racy:
            del st.reductions[name]

    # ------------------------------------------------------------------ block code

    def block_prologue(self, ctx: Ctx) -> list[Stmt]:
        st = ctx.task
        st.tid = self.fresh("t")
        ctx.scopes[-1][st.tid] = Var(I32, False)
        out = [Stmt("assign", st.tid, [Expr("tid", I32)])]
        for _ in range(self.r.randint(1, 2)):
            name = self.fresh("sh")
            dt = self.r.choice(self.ts([I32, U32, I64]))
            out.append(Stmt("shalloc", (name, st.block_dim, dt)))
            ctx.scopes[-1][name] = Var(dt, False)
            st.shared[name] = "new"
            # every slot written before anything reads it
            out.append(Stmt("shstore", name, [Expr("var", I32, [], st.tid), self.int_expr(ctx, dt, 2)]))
            st.shared[name] = "write"
        return out

    def block_phase(self, ctx: Ctx) -> list[Stmt]:
        """A barrier, then each shared array changes role: written ones become readable,
        some readable ones are taken by atomics of one op or rewritten at the thread's slot."""
        st, r = ctx.task, self.r
        out = [Stmt("sync")]
        for name, mode in list(st.shared.items()):
            if mode != "read":
                st.shared[name] = "read"
            elif self.chance(0.3):
                st.shared[name] = "write"
            elif self.chance(0.3):
                st.shared[name] = r.choice(ATOMIC_OPS)
        if self.chance(0.6):
            fn = r.choice(BLOCK_FNS)
            dt = r.choice(self.ts([I32, I64, U32]))
            v = self.fresh("b")
            out.append(Stmt("assign", v, [Expr("breduce", dt, [self.int_expr(ctx, r.choice(self.ts(INTS)), 2)],
                                               (fn, st.block_dim, dt))]))
            ctx.scopes[-1][v] = Var(dt, False)
        for name, mode in st.shared.items():
            if mode == "write":
                dt = ctx.lookup()[name].dt
                out.append(Stmt("shstore", name, [Expr("var", I32, [], st.tid), self.int_expr(ctx, dt, 2)]))
        return out

    def subgroup_op(self, ctx: Ctx) -> list[Stmt]:
        """``v = qd.simt.subgroup.<fn>(e)`` at the task's top level (uniform control flow)."""
        r = self.r
        dt = r.choice(self.ts(SG_TYPES + ([F32, F64] if "floats" in self.features else [])))
        tiled = self.chance(0.3)
        fn = r.choice(SG_FOLDS if tiled else SG_FOLDS + SG_MOVES)
        if dt.is_float and fn in ("exclusive_min", "exclusive_max"):
            fn = "inclusive" + fn[9:]  # lane 0 would get an infinity
        extra = None
        if tiled:
            fn, extra = fn + "_tiled", r.randint(0, 3)   # tiles of 1..8 lanes: the same on every executor
        elif fn == "broadcast":
            extra = r.randrange(SG_LANES)
        elif fn in ("shuffle_xor", "shuffle_up", "shuffle_down"):
            extra = r.randint(1, SG_LANES - 1)
        if dt.is_float:
            a = self.float_expr(ctx, dt, 2, True)
            if self.chance(0.7):  # a value that differs per lane
                a = Expr("bin", dt, [a, self.lane_value(ctx, dt)], "add", a.exact, max(a.mag, 9) + 1, a.frac)
            if "add" in fn and a.mag + 7 + a.frac >= dt.mantissa:  # sums of up to 64 lanes stay exact
                a = self.lane_value(ctx, dt)
            grow = 7 if "add" in fn else 0
            meta = dict(exact=a.exact, mag=a.mag + grow, frac=a.frac)
        else:
            a = self.int_expr(ctx, dt, 2)
            if self.chance(0.7):
                a = Expr("bin", dt, [a, self.lane_value(ctx, dt)], r.choice(["add", "bitxor", "mul"]))
            meta = {}
        args = [a]
        if fn == "shuffle":
            lane = Expr("bin", I32, [self.int_expr(ctx, I32, 1), lit(SG_LANES)], "mod")
            args.append(Expr("cast", U32, [lane], "ctor"))
        name = self.fresh("g")
        ctx.scopes[-1][name] = Var(dt, False, **meta)
        out = [Stmt("assign", name, [Expr("sgop", dt, args, (fn, extra), **meta)])]
        if self.chance(0.7):  # most results reach an output directly
            cands = [a for a in self.arrays if a.role == "out" and a.elem is None and a.dt == dt and
                     (a.name in ctx.task.writes or a.name not in self.written)]
            y = r.choice(cands) if cands and self.chance(0.5) else self.out_array(dt)
            ctx.task.writes.add(y.name)
            out.append(Stmt("store", y.name, [Expr("var", I32, [], "i"), Expr("var", dt, [], name, **meta)]))
        return out

    def lane_value(self, ctx: Ctx, t: DT) -> Expr:
        """A value of type t that differs from lane to lane: ``i`` or an input read at ``i``."""
        arrs = [a for a in self.arrays if a.role == "in" and a.elem is None and a.dt == t and a.size == self.n]
        if arrs and self.chance(0.5):
            return Expr("load", t, [Expr("var", I32, [], "i")], self.r.choice(arrs).name, True, 5, 2)
        return Expr("cast", t, [Expr("var", I32, [], "i")], "cast", True, 9, 0)

    # ------------------------------------------------------------------ helpers

    def helper(self) -> None:
        r = self.r
        name = f"h{len(self.helpers)}"
        if self.chance(0.35):
            return self.mutator(name)
        params = [(self.fresh("a"), r.choice(self.types())) for _ in range(r.randint(1, 3))]
        ret = r.choice(self.types())
        scope = {p: Var(t, False, mag=HELPER_MAG, frac=HELPER_FRAC) for p, t in params}
        ctx = Ctx("helper", [scope], None, helpers=len(self.helpers))
        body = self.body(ctx, r.randint(0, 3))
        # the value is converted to the annotated return type, as a typed assignment would be
        e = self.expr_of(ctx, ret, 3, exact=False, convertible=True)
        body.append(Stmt("return", None, [e]))
        self.helpers.append(Helper(name, params, ret, body))
        self.ret_meta[name] = (e.exact, e.mag, e.frac) if e.t.is_float else (e.t.bits < ret.mantissa, e.t.bits, 0)

    def mutator(self, name: str) -> None:
        """A helper whose first parameter is a qd.template(): the caller's integer variable
        itself, which the body updates (so that what the caller knew of its value, such as its
        sign where it was assigned, no longer holds), called as a statement."""
        r = self.r
        t = I32 if self.chance(0.6) else r.choice(self.ts(INTS))  # the type most variables have
        x = self.fresh("a")
        params = [(x, t)] + [(self.fresh("a"), r.choice(self.ts(INTS))) for _ in range(r.randint(0, 2))]
        scope = {x: Var(t, True)}
        scope.update({p: Var(pt, False, mag=HELPER_MAG, frac=HELPER_FRAC) for p, pt in params[1:]})
        ctx = Ctx("helper", [scope], None, helpers=len(self.helpers))
        body = self.body(ctx, r.randint(0, 2))
        for _ in range(r.randint(1, 2)):  # the parameter is the only mutable integer here
            body += self.st_aug(ctx) if self.chance(0.6) else self.st_reassign(ctx)
        if self.chance(0.4):  # often below zero, where Python's // and % differ from C's
            body.append(Stmt("aug", (x, "sub"), [Expr("cast", t, [lit(r.randint(1, 200))], "ctor")]))
        self.helpers.append(Helper(name, params, t, body, mutates=True))

    def mutators(self, ctx: Ctx) -> list[Helper]:
        """The helpers that assign their first argument, which this code may call."""
        if ctx.where == "helper":
            return []
        # (called at a kernel's top level, a function's own loops would be parallel tasks)
        no_loops = ctx.loops or (ctx.where == "serial" and ctx.depth == 0)
        return [h for h in self.helpers[:ctx.helpers] if h.mutates and not (no_loops and has_loops(h.body))]

    def st_mutate(self, ctx: Ctx) -> list[Stmt]:
        """A call of such a helper on a variable of its type: one in scope, or one assigned
        just before (once, so the frontend may think it knows the value's sign and range)."""
        h = self.r.choice(self.mutators(ctx))
        t = h.params[0][1]
        vs = [n for n, v in self.mutable_ints(ctx) if v.dt == t]
        out = []
        if vs and self.chance(0.5):
            name = self.r.choice(vs)
        else:
            top = ctx.where == "serial" and ctx.depth == 0  # kernel scope, as st_assign's
            name = self.fresh("k" if top else "v")
            # (a literal, half the time: then the frontend knows it non-negative where assigned)
            first = lit(self.r.randint(0, 100)) if self.chance(0.5) else self.int_expr(ctx, t, 2)
            out.append(Stmt("assign", name, [Expr("cast", t, [first], "ctor")]))
            ctx.scopes[-1][name] = Var(t, True, top)
        args = [self.helper_arg(ctx, pt, 2) for _, pt in h.params[1:]]
        out.append(Stmt("mutate", (h.name, name), args))
        if self.chance(0.6):  # what the call left, floor-divided: Python's // and % of its sign
            op = self.r.choice(["mod", "floordiv"])
            out.append(self.store(ctx, Expr("bin", t, [Expr("var", t, [], name), lit(self.r.randint(2, 9))], op)))
        return out

    # ------------------------------------------------------------------ statements

    def body(self, ctx: Ctx, count: int) -> list[Stmt]:
        out: list[Stmt] = []
        for _ in range(count):
            out += self.statement(ctx)
        return out

    def statement(self, ctx: Ctx) -> list[Stmt]:
        r = self.r
        nested = ctx.depth < 3
        choices = [("assign", 5), ("reassign", 2), ("aug", 2), ("swap", 3)]
        if ctx.where != "helper":
            choices += [("store", 4)]
        if nested:
            choices += [("if", 2), ("while", 0.7)]
            if not (ctx.where == "serial" and ctx.depth == 0):  # a top-level for is a parallel task
                choices += [("for", 1.5), ("static", 0.8)]
        if ctx.loops and ctx.depth > 0:
            choices += [("jump", 1.2)]
        if ctx.where == "parallel" and "atomics" in self.features:
            choices += [("atomic", 1.2)]
        if ctx.where == "parallel" and ctx.task.shared and any(m not in ("read", "new")
                                                               for m in ctx.task.shared.values()):
            choices += [("shared", 1.5)]
        if ctx.where == "parallel" and "reductions" in self.features:
            choices += [("reduce", 1)]
        if self.mutators(ctx):
            choices += [("mutate", 3)]
        if "vectors" in self.features:
            choices += [("vassign", 1.5)]
            if ctx.where != "helper":
                choices += [("vstore", 1)]
        if "structs" in self.features:
            choices += [("sassign", 0.6)]
        if ("vectors" in self.features or "structs" in self.features) and self.composite_vars(ctx, True):
            choices += [("vset", 1), ("vreassign", 0.8)]
        kind = r.choices([c for c, _ in choices], [w for _, w in choices])[0]
        return getattr(self, "st_" + kind)(ctx)

    def st_assign(self, ctx: Ctx) -> list[Stmt]:
        t = self.r.choice(self.types())
        e = self.expr_of(ctx, t, 3)
        name = self.fresh("k" if ctx.where == "serial" and ctx.depth == 0 else "v")
        # floats are assigned once: their exactness bound holds for every later read
        ctx.scopes[-1][name] = Var(e.t, True, ctx.where == "serial" and ctx.depth == 0, e.exact, e.mag, e.frac)
        return [Stmt("assign", name, [e])]

    def mutable_ints(self, ctx: Ctx) -> list[tuple[str, Var]]:
        return [(n, v) for n, v in ctx.lookup().items() if v.mutable and v.dt.is_int
                and (not v.kernel or ctx.where == "serial") and n not in ctx.task_reductions()]

    def st_reassign(self, ctx: Ctx) -> list[Stmt]:
        cands = self.mutable_ints(ctx)
        if not cands:
            return self.st_assign(ctx)
        name, v = self.r.choice(cands)
        return [Stmt("assign", name, [self.int_expr(ctx, v.dt, 3)])]

    def st_swap(self, ctx: Ctx) -> list[Stmt]:
        """``a, b = b, a`` of two integers, vectors, matrices or structs of one type, or
        ``a, b = b, a + b`` of integers: every value is read before either name is assigned."""
        r = self.r
        pools: dict = {}
        for n, v in self.mutable_ints(ctx) + self.composite_vars(ctx, True):
            pools.setdefault(v.dt, []).append((n, v))
        pools = [p for p in pools.values() if len(p) >= 2]
        if not pools:
            return self.st_assign(ctx)
        (n1, v1), (n2, v2) = r.sample(r.choice(pools), 2)
        a, b = Expr("var", v1.dt, [], n1), Expr("var", v2.dt, [], n2)
        second = Expr("bin", v1.dt, [a, b], "add") if isinstance(v1.dt, DT) and self.chance(0.5) else a
        # what each name now holds: the other's value (a sum of integers stays exact)
        v1.exact, v1.mag, v1.frac, v2.exact, v2.mag, v2.frac = v2.exact, v2.mag, v2.frac, v1.exact, v1.mag, v1.frac
        return [Stmt("swap", (n1, n2), [b, second])]

    def st_aug(self, ctx: Ctx) -> list[Stmt]:
        cands = self.mutable_ints(ctx)
        if not cands:
            return self.st_assign(ctx)
        name, v = self.r.choice(cands)
        op = self.r.choice(["add", "sub", "mul", "bitand", "bitor", "bitxor", "floordiv", "mod", "lshift"])
        if op in ("floordiv", "mod"):
            rhs = self.divisor(ctx, self.r.choice(self.subtypes(v.dt)), v.dt)
        elif op == "lshift":
            rhs = self.shift_amount(ctx, v.dt)
        else:
            rhs = self.operand(ctx, v.dt, 2)
        return [Stmt("aug", (name, op), [rhs])]

    def st_store(self, ctx: Ctx) -> list[Stmt]:
        return [self.store(ctx)]

    def store(self, ctx: Ctx, value: Expr | None = None) -> Stmt:
        """A store of a new expression, or of ``value`` (into an array of its type)."""
        r = self.r
        fits = (lambda a: a.dt == value.t) if value is not None else (lambda a: True)
        new_type = value.t if value is not None else r.choice(self.types())
        if ctx.where == "serial":
            cands = [a for a in self.arrays if a.role == "serial" and a.elem is None and fits(a)]
            a = r.choice(cands) if cands and self.chance(0.7) else self.out_array(new_type, "serial", 8)
            idx = lit(r.randint(0, a.size - 1))
        else:
            cands = [a for a in self.arrays if a.role == "out" and a.name in ctx.task.writes and a.elem is None
                     and fits(a)]
            if not cands or self.chance(0.3):
                cands = [a for a in self.arrays if a.role == "out" and a.name not in self.written
                         and a.name not in ctx.task.writes and a.elem is None and fits(a)] or \
                        [self.out_array(new_type)]
            a = r.choice(cands)
            idx = Expr("var", I32, [], "i")
        ctx.task.writes.add(a.name)
        e = value if value is not None else self.expr_of(ctx, a.dt, 3, convertible=True)
        self.note_store(a, e)
        if ctx.where == "parallel" and self.chance(0.15) and a.dt.is_int and a.dt.bits >= 32:
            return Stmt("augstore", (a.name, "add"), [idx, e])  # an atomic add only this thread does
        return Stmt("store", a.name, [idx, e])

    def note_store(self, a: Array, e: Expr) -> None:
        if a.dt.is_float and not e.exact:
            a.tol_mag = max(a.tol_mag or 0, e.mag)

    def st_if(self, ctx: Ctx) -> list[Stmt]:
        cond = self.cond(ctx, 2)
        then = self.body(ctx.child(), self.r.randint(1, 3))
        other: list[Stmt] = []
        if self.chance(0.3):
            other = [Stmt("if", "elif", [self.cond(ctx, 2)], [self.body(ctx.child(), self.r.randint(1, 2)),
                                                              self.body(ctx.child(), self.r.randint(0, 2))])]
        elif self.chance(0.5):
            other = self.body(ctx.child(), self.r.randint(1, 2))
        return [Stmt("if", None, [cond], [then, other])]

    def st_for(self, ctx: Ctx) -> list[Stmt]:
        r = self.r
        var = self.fresh("j")
        t = r.choice(self.ts([I32, I32, U32, I64, r.choice(self.ts(INTS))]))
        step = r.choice([None, 1, 2, 3, -1, -2])
        if t.signed:
            lo, hi = self.bound(ctx, t, -4), self.bound(ctx, t, 2)
        else:
            lo, hi = self.bound(ctx, t, 0), self.bound(ctx, t, 3)
        if step is not None and step < 0:
            lo, hi = hi, lo
        if step is None:
            args = [hi] if lo.op == "lit" and lo.attr == 0 and self.chance(0.5) else [lo, hi]
        else:
            args = [lo, hi, lit(step)]
        # range(): the loop variable is i32, promoted with every typed bound
        lt = I32
        for e in args:
            if not e.literal:
                lt = promote(lt, e.t)
        child = ctx.child(loops=ctx.loops + 1)
        child.scopes[-1][var] = Var(lt, False)
        body = self.body(child, r.randint(1, 3))
        return [Stmt("for", var, args, [body])]

    def bound(self, ctx: Ctx, t: DT, base: int) -> Expr:
        """A small loop bound: a literal, or (e % k) + base of type t (the trip count stays small)."""
        if self.chance(0.4):
            return lit(self.r.randint(base, base + 5))
        k = self.r.randint(2, 6)
        m = Expr("bin", t, [self.int_expr(ctx, t, 1), lit(k)], "mod")
        return Expr("bin", t, [m, lit(base)], "add") if base else m

    def st_while(self, ctx: Ctx) -> list[Stmt]:
        counter = self.fresh("w")
        child = ctx.child(loops=ctx.loops + 1)
        ctx.scopes[-1][counter] = Var(I32, False)  # the counter is read after the loop too
        body = self.body(child, self.r.randint(1, 3))
        return [Stmt("while", (counter, self.r.randint(0, 5)), [], [body])]

    def st_static(self, ctx: Ctx) -> list[Stmt]:
        var = self.fresh("s")
        child = ctx.child()
        child.statics.append(var)
        body = self.body(child, self.r.randint(1, 3))
        return [Stmt("static", (var, self.r.randint(1, 4)), [], [body])]

    def st_jump(self, ctx: Ctx) -> list[Stmt]:
        kind = self.r.choice(["break", "continue"])
        if self.chance(0.85):
            return [Stmt("if", None, [self.cond(ctx, 1)], [[Stmt(kind)], []])]
        return [Stmt(kind)]

    def st_atomic(self, ctx: Ctx) -> list[Stmt]:
        r = self.r
        cands = [a for a in self.arrays if a.role == "acc" and (a.name in ctx.task.writes or a.name not in self.written)]
        if not cands or self.chance(0.2):
            cands = [self.out_array(r.choice(self.ts(ACC_TYPES)), "acc", 4)]
        a = r.choice(cands)
        ctx.task.writes.add(a.name)
        slot = r.randrange(a.size)
        op = self.acc_ops.setdefault((a.name, slot), r.choice(ATOMIC_OPS))
        e = self.int_expr(ctx, r.choice(self.subtypes(a.dt)), 2)
        if op == "atomic_add" and self.chance(0.4):
            return [Stmt("augstore", (a.name, "add"), [lit(slot), e])]
        return [Stmt("atomic", (op, a.name), [lit(slot), e])]

    def st_shared(self, ctx: Ctx) -> list[Stmt]:
        st = ctx.task
        name, mode = self.r.choice([(n, m) for n, m in st.shared.items() if m not in ("read", "new")])
        dt = ctx.lookup()[name].dt
        tid = Expr("var", I32, [], st.tid)
        if mode == "write":
            return [Stmt("shstore", name, [tid, self.int_expr(ctx, dt, 2)])]
        idx = Expr("bin", I32, [self.int_expr(ctx, I32, 1), lit(st.block_dim)], "mod")
        return [Stmt("shatomic", (mode, name), [idx, self.int_expr(ctx, self.r.choice(self.subtypes(dt)), 2)])]

    def st_reduce(self, ctx: Ctx) -> list[Stmt]:
        """``total += v`` (or max / min, or qd.atomic_*) on a kernel-scope integer: a reduction."""
        r = self.r
        red = ctx.task.reductions
        kscope = ctx.scopes[0]
        cands = [n for n, v in kscope.items() if v.dt.is_int and v.kernel and n not in red
                 and n not in ctx.task.reads and v.dt in ACC_TYPES] if self.chance(0.5) else []
        if cands:
            name = r.choice(cands)
        else:
            name = self.fresh("r")
            return self.st_reduce_new(ctx, name)
        op = r.choice(["add", "max", "min"])
        red[name] = op
        return [self.reduction(ctx, name, kscope[name].dt, op)]

    def st_reduce_new(self, ctx: Ctx, name: str) -> list[Stmt]:
        # a new kernel-scope variable, declared in the serial code before this task
        return self.st_assign(ctx)

    def reduction(self, ctx: Ctx, name: str, dt: DT, op: str) -> Stmt:
        e = self.int_expr(ctx, self.r.choice(self.subtypes(dt)), 2)
        if op == "add":
            return Stmt("aug", (name, "add"), [e])
        if self.chance(0.5):
            return Stmt("katomic", ("atomic_" + op, name), [e])
        return Stmt("reduce_minmax", (name, op), [e])

    # ------------------------------------------------------------------ expressions

    def types(self) -> list[DT]:
        return self.ts(ALL if "floats" in self.features else INTS)

    def subtypes(self, t: DT) -> list[DT]:
        """Types whose values combine with a ``t`` into a ``t``."""
        return [s for s in self.ts(ALL if t.is_float else INTS) if promote(t, s) == t]

    def expr_of(self, ctx: Ctx, t: DT, d: int, exact: bool = False, convertible: bool = False) -> Expr:
        """An expression of type t; with ``convertible``, one that assignment converts to t."""
        if convertible and self.chance(0.25):
            src = self.r.choice(self.ts(INTS) + ([t] if t.is_float else []))
            t = src
        return self.float_expr(ctx, t, d, exact) if t.is_float else self.int_expr(ctx, t, d)

    def int_literal(self, t: DT, positive: bool = False) -> Expr:
        r = self.r
        lo = 1 if positive else t.lo
        v = r.choice([r.randint(-9, 9), r.randint(-9, 9), r.randint(0, 300), t.hi, t.lo, t.hi - 1])
        v = max(lo, min(t.hi, v))
        return lit(v)

    def operand(self, ctx: Ctx, t: DT, d: int) -> Expr:
        """The other operand beside a ``t``: a literal that fits t, or a value of a subtype."""
        if self.chance(0.35):
            return self.int_literal(t) if t.is_int else lit(self.r.randint(-32, 32) / 4)
        s = self.r.choice(self.subtypes(t))
        return self.float_expr(ctx, s, d, False) if s.is_float else self.int_expr(ctx, s, d)

    def int_leaf(self, ctx: Ctx, t: DT) -> Expr:
        r = self.r
        vs = [n for n, v in ctx.lookup().items() if v.dt == t and self.readable(ctx, n, v)]
        arrs = [a for a in self.arrays if a.dt == t and a.elem is None and self.array_readable(ctx, a)]
        statics = ctx.statics
        roll = r.random()
        if vs and roll < 0.45:
            return self.var(ctx, t, r.choice(vs))
        if arrs and roll < 0.8:
            a = r.choice(arrs)
            return Expr("load", t, [self.index(ctx, a)], a.name)
        if statics and roll < 0.85:
            return Expr("cast", t, [Expr("static", I32, [], r.choice(statics))], "cast")
        if roll < 0.92:
            return Expr("cast", t, [lit(self.int_literal(t).attr)], r.choice(["cast", "ctor"]))
        others = [x for x in self.ts(INTS) if x != t]
        return Expr("cast", t, [self.int_leaf_shallow(ctx, r.choice(others))], r.choice(["cast", "ctor"]))

    def int_leaf_shallow(self, ctx: Ctx, t: DT) -> Expr:
        vs = [n for n, v in ctx.lookup().items() if v.dt == t and self.readable(ctx, n, v)]
        arrs = [a for a in self.arrays if a.dt == t and a.elem is None and self.array_readable(ctx, a)]
        if vs and self.chance(0.5):
            return self.var(ctx, t, self.r.choice(vs))
        if arrs:
            a = self.r.choice(arrs)
            return Expr("load", t, [self.index(ctx, a)], a.name)
        return Expr("cast", t, [lit(self.int_literal(t).attr)], "cast")

    def var(self, ctx: Ctx, t: DT, name: str, *meta) -> Expr:
        """A read of variable ``name``; a task that reads a kernel-scope variable never reduces
        into it (other threads' atomics would land before or after the read: a race)."""
        if ctx.task is not None and name in ctx.scopes[0]:
            ctx.task.reads.add(name)
        return Expr("var", t, [], name, *meta)

    def readable(self, ctx: Ctx, name: str, v: Var) -> bool:
        if ctx.where == "parallel" and v.kernel and name in ctx.task.reductions:
            return False
        if ctx.task is not None and name in ctx.task.shared:
            return False  # shared arrays are read through shload
        return True

    def array_readable(self, ctx: Ctx, a: Array) -> bool:
        if ctx.where == "helper":
            return False
        if a.role == "in":
            return True
        if ctx.where == "serial":
            return a.name in self.written or a.name in ctx.task.writes
        return a.name in self.written and a.name not in ctx.task.writes

    def index(self, ctx: Ctx, a: Array) -> Expr:
        r = self.r
        if ctx.where == "parallel" and a.size == self.n and self.chance(0.5):
            return Expr("var", I32, [], "i")
        if self.chance(0.3):
            return lit(r.randrange(a.size))
        t = r.choice(self.ts(INTS))
        e = self.int_leaf_shallow(ctx, t)
        return Expr("bin", promote(t, t), [e, lit(a.size)], "mod")

    def int_expr(self, ctx: Ctx, t: DT, d: int) -> Expr:
        r = self.r
        if d <= 0 or self.chance(0.25):
            return self.int_leaf(ctx, t)
        choices = ["arith"] * 6 + ["divmod"] * 2 + ["shift"] * 2 + ["bit"] * 2 + ["unary", "minmax", "pow",
                                                                               "ifexp", "select", "cast", "boolcast"]
        if ctx.helpers and ctx.where != "helper" or (ctx.where == "helper" and ctx.helpers):
            choices += ["call"] * 2
        if ctx.task and any(m == "read" for m in ctx.task.shared.values()):
            choices += ["shload"] * 2
        if "floats" in self.features:
            choices += ["fcast"]
        if "vectors" in self.features or "structs" in self.features:
            choices += ["vscalar"] * (3 if self.composite_vars(ctx) else 1)
        kind = r.choice(choices)
        sub = d - 1
        if kind in ("arith", "bit", "minmax"):
            op = r.choice({"arith": ["add", "sub", "mul"], "bit": ["bitand", "bitor", "bitxor"],
                           "minmax": ["min", "max"]}[kind])
            a, b = self.int_expr(ctx, t, sub), self.operand(ctx, t, sub)
            if self.chance(0.5):
                a, b = b, a
            return Expr("bin" if kind != "minmax" else op, t, [a, b], op if kind != "minmax" else None)
        if kind == "divmod":
            op = r.choice(["floordiv", "mod"])
            b = self.divisor(ctx, r.choice(self.subtypes(t)), t)
            return Expr("bin", t, [self.int_expr(ctx, t, sub), b], op)
        if kind == "shift":
            return Expr("bin", t, [self.int_expr(ctx, t, sub), self.shift_amount(ctx, t)],
                        r.choice(["lshift", "rshift"]))
        if kind == "unary":
            op = r.choice(["neg", "invert", "abs"])
            return Expr(op, t, [self.int_expr(ctx, t, sub)])
        if kind == "pow":
            return Expr("bin", t, [self.int_expr(ctx, t, sub), lit(r.randint(0, 3))], "pow")
        if kind in ("ifexp", "select"):
            a, b = self.int_expr(ctx, t, sub), self.operand(ctx, t, sub)
            if self.chance(0.5):
                a, b = b, a
            if a.literal and b.literal:
                b = self.int_expr(ctx, t, sub)
            return Expr(kind, t, [self.cond(ctx, sub), a, b])
        if kind == "cast":
            s = r.choice(self.ts(INTS))
            return Expr("cast", t, [self.int_expr(ctx, s, sub)], r.choice(["cast", "ctor"]))
        if kind == "boolcast":
            return Expr("cast", t, [self.cond(ctx, sub, False)], "cast")
        if kind == "fcast":
            return self.float_to_int(ctx, t, sub)
        if kind == "vscalar":
            return self.vec_scalar(ctx, t, sub, True) or self.int_leaf(ctx, t)
        if kind == "call":
            return self.call(ctx, t, sub) or self.int_leaf(ctx, t)
        if kind == "shload":
            name = r.choice([n for n, m in ctx.task.shared.items() if m == "read"])
            dt = ctx.lookup()[name].dt
            idx = Expr("bin", I32, [self.int_expr(ctx, I32, 1), lit(ctx.task.block_dim)], "mod")
            e = Expr("shload", dt, [idx], name)
            return e if dt == t else Expr("cast", t, [e], "cast")
        raise AssertionError(kind)

    def divisor(self, ctx: Ctx, s: DT, t: DT) -> Expr:
        """Never 0 nor -1: (e % k) + c, (e % k) - c, or such a literal."""
        r = self.r
        positive_only = not t.signed or not s.signed
        if self.chance(0.4):
            v = r.randint(2, 9) if positive_only or self.chance(0.6) else -r.randint(2, 9)
            return lit(v)
        k = r.randint(2, 7)
        m = Expr("bin", s, [self.int_expr(ctx, s, 1), lit(k)], "mod")
        if positive_only or self.chance(0.6):
            return Expr("bin", s, [m, lit(r.randint(1, 4))], "add")
        return Expr("bin", s, [m, lit(k + r.randint(1, 3))], "sub")

    def shift_amount(self, ctx: Ctx, t: DT) -> Expr:
        if self.chance(0.4):
            return lit(self.r.randint(0, t.bits - 1))
        s = self.r.choice(self.ts(INTS))
        return Expr("bin", s, [self.int_expr(ctx, s, 1), lit(t.bits - 1)], "bitand")

    def call(self, ctx: Ctx, t: DT, d: int) -> Expr | None:
        hs = [h for h in self.helpers[:ctx.helpers] if h.ret == t and not h.mutates]
        if ctx.loops and self.features - BASE_FEATURES:
            # the newer features make bigger kernels: a helper with loops is not called in a
            # loop, so that the reference's work (and the emulators') stays small
            hs = [h for h in hs if not has_loops(h.body)]
        if not hs:
            return None
        h = self.r.choice(hs)
        args = [self.helper_arg(ctx, pt, d) for _, pt in h.params]
        exact, mag, frac = self.ret_meta[h.name] if t.is_float else (True, 0, 0)
        return Expr("call", t, args, h.name, exact=exact, mag=mag, frac=frac)

    def helper_arg(self, ctx: Ctx, t: DT, d: int) -> Expr:
        """An argument within the bounds the helper's body was generated for."""
        if t.is_int:
            return self.int_expr(ctx, t, d)
        e = self.float_expr(ctx, t, d, True)
        if e.mag <= HELPER_MAG and e.frac <= HELPER_FRAC:
            return e
        return Expr("cast", t, [lit(self.r.randint(-32, 32) / 4)], "ctor", True, 4, 2)

    def float_to_int(self, ctx: Ctx, t: DT, d: int) -> Expr:
        f = self.float_expr(ctx, self.r.choice(self.ts(FLOATS)), d, exact=True)
        limit = t.bits - 2 if t.signed else t.bits - 1
        if not f.exact or f.mag > limit:
            return self.int_leaf(ctx, t)
        if not t.signed:
            f = Expr("abs", f.t, [f], None, True, f.mag, f.frac)
        return Expr("cast", t, [f], self.r.choice(["cast", "ctor"]))

    # floats -----------------------------------------------------------

    def float_leaf(self, ctx: Ctx, t: DT) -> Expr:
        r = self.r
        vs = [(n, v) for n, v in ctx.lookup().items() if v.dt == t and self.readable(ctx, n, v)]
        arrs = [a for a in self.arrays if a.dt == t and a.elem is None and self.array_readable(ctx, a)]
        roll = r.random()
        if vs and roll < 0.45:
            n, v = r.choice(vs)
            return self.var(ctx, t, n, v.exact, v.mag, v.frac)
        if arrs and roll < 0.8:
            a = r.choice(arrs)
            if a.role == "in":
                return Expr("load", t, [self.index(ctx, a)], a.name, True, 5, 2)
            # a result array: treated as inexact (a later store may have made it so)
            return Expr("load", t, [self.index(ctx, a)], a.name, False, 40, 0)
        if roll < 0.9:
            s = r.choice([x for x in INTS if x.bits <= 16])
            return Expr("cast", t, [self.int_leaf(ctx, s)], r.choice(["cast", "ctor"]), True, s.bits, 0)
        v = r.randint(-32, 32) / 4
        return Expr("cast", t, [lit(v)], "ctor", True, 4, 2)

    def float_expr(self, ctx: Ctx, t: DT, d: int, exact: bool) -> Expr:
        r = self.r
        if d <= 0 or self.chance(0.25):
            e = self.float_leaf(ctx, t)
            return e if e.exact or not exact else self.float_exact_leaf(ctx, t)
        kinds = ["arith"] * 5 + ["scale", "floor", "unary", "minmax", "ifexp", "select", "intmix", "fdivmod",
                                 "cast"]
        if not exact:
            kinds += ["inexact"] * 4
        if ctx.helpers:
            kinds += ["call"]
        if "vectors" in self.features or "structs" in self.features:
            kinds += ["vscalar"] * (3 if self.composite_vars(ctx) else 1)
        kind = r.choice(kinds)
        sub = d - 1
        e = self.float_kind(ctx, t, sub, exact, kind)
        if e is None or e.mag > MAXMAG or (exact and not (e.exact and e.mag + e.frac < t.mantissa)):
            return self.float_exact_leaf(ctx, t) if exact else self.float_leaf(ctx, t)
        if e.exact and e.mag + e.frac >= t.mantissa:
            e.exact = False
        return e

    def float_exact_leaf(self, ctx: Ctx, t: DT) -> Expr:
        for _ in range(4):
            e = self.float_leaf(ctx, t)
            if e.exact:
                return e
        return Expr("cast", t, [lit(self.r.randint(-32, 32) / 4)], "ctor", True, 4, 2)

    def float_operand(self, ctx: Ctx, t: DT, d: int, exact: bool) -> Expr:
        r = self.r
        roll = r.random()
        if roll < 0.3:
            return lit(r.randint(-32, 32) / 4)
        if roll < 0.4:
            e = lit(r.randint(-9, 9))  # an int literal beside a float becomes that float
            e.mag = 4
            return e
        if roll < 0.5:
            s = r.choice([x for x in INTS if x.bits <= (16 if t == F32 else 32)])
            e = self.int_expr(ctx, s, d)
            return Expr(e.op, e.t, e.args, e.attr, True, s.bits, 0)
        s = r.choice([x for x in FLOATS if promote(t, x) == t])
        return self.float_expr(ctx, s, d, exact)

    def float_kind(self, ctx: Ctx, t: DT, sub: int, exact: bool, kind: str) -> Expr | None:
        r = self.r
        if kind in ("arith", "minmax"):
            op = r.choice(["add", "sub", "mul"] if kind == "arith" else ["min", "max"])
            a, b = self.float_expr(ctx, t, sub, exact), self.float_operand(ctx, t, sub, exact)
            if self.chance(0.5):
                a, b = b, a
            ex = a.exact and b.exact
            if op == "mul":
                mag, frac = a.mag + b.mag, a.frac + b.frac
            elif op in ("add", "sub"):
                mag, frac = max(a.mag, b.mag) + 1, max(a.frac, b.frac)
            else:
                mag, frac = max(a.mag, b.mag), max(a.frac, b.frac)
            if kind == "minmax":
                return Expr(op, t, [a, b], None, ex, mag, frac)
            return Expr("bin", t, [a, b], op, ex, mag, frac)
        if kind == "scale":
            a = self.float_expr(ctx, t, sub, exact)
            p = r.randint(1, 3)
            if self.chance(0.5):
                return Expr("bin", t, [a, lit(float(1 << p))], "truediv", a.exact, max(a.mag - p, 0) + 1, a.frac + p)
            return Expr("bin", t, [a, lit(1 / (1 << p))], "mul", a.exact, max(a.mag - p, 0) + 1, a.frac + p)
        if kind == "floor":
            a = self.float_expr(ctx, t, sub, True)
            return Expr("math", t, [a], r.choice(["floor", "ceil"]), a.exact, a.mag + 1, 0)
        if kind == "fdivmod":
            a = self.float_expr(ctx, t, sub, True)
            p = r.randint(0, 3)
            # A negative divisor too: a zero remainder then is -0.0 (fuzz seed 81527 found +0.0
            # and -0.0 mixed up, which atan2 or a division shows).
            d = lit(float(1 << p) * r.choice([1, 1, -1]))
            if self.chance(0.5):
                return Expr("bin", t, [a, d], "floordiv", a.exact, a.mag + 1, 0)
            return Expr("bin", t, [a, d], "mod", a.exact, p + 1, a.frac)
        if kind == "unary":
            a = self.float_expr(ctx, t, sub, exact)
            return Expr(r.choice(["neg", "abs"]), t, [a], None, a.exact, a.mag, a.frac)
        if kind in ("ifexp", "select"):
            a, b = self.float_expr(ctx, t, sub, exact), self.float_operand(ctx, t, sub, exact)
            if a.literal and b.literal:
                return None
            return Expr(kind, t, [self.cond(ctx, sub), a, b], None, a.exact and b.exact, max(a.mag, b.mag),
                        max(a.frac, b.frac))
        if kind == "intmix":
            s = r.choice(self.ts(INTS))
            a = self.int_expr(ctx, s, sub)
            ok = (s.bits if not s.signed else s.bits) < t.mantissa
            c = Expr("cast", t, [a], r.choice(["cast", "ctor"]), ok, s.bits, 0)
            return c
        if kind == "cast":
            if self.narrow:  # an f64 to cast from: none in a 32-bit kernel
                return None
            s = F64 if t == F32 else F32
            a = self.float_expr(ctx, s, sub, exact)
            return Expr("cast", t, [a], r.choice(["cast", "ctor"]), a.exact and a.mag + a.frac < 24, a.mag, a.frac)
        if kind == "call":
            return self.call(ctx, t, sub)
        if kind == "vscalar":
            return self.vec_scalar(ctx, t, sub, exact)
        if kind == "inexact":
            fn = r.choice(MATH_INEXACT)
            a = self.float_expr(ctx, t, sub, False)
            absa = Expr("abs", t, [a], None, a.exact, a.mag, a.frac)
            if fn == "sqrt":
                return Expr("math", t, [absa], "sqrt", False, a.mag // 2 + 1, 0)
            if fn in ("sin", "cos"):
                return Expr("math", t, [a], fn, False, 1, 0) if a.mag <= 6 else None
            if fn == "tanh":
                return Expr("math", t, [a], fn, False, 1, 0)
            if fn == "exp":
                return Expr("math", t, [Expr("min", t, [a, lit(4.0)], None, False, a.mag, 0)], "exp", False, 6, 0)
            if fn == "log":
                arg = Expr("bin", t, [absa, lit(1.0)], "add", False, a.mag + 1, 0)
                return Expr("math", t, [arg], "log", False, max(a.mag.bit_length(), 1) + 1, 0)
            if fn == "atan2":
                b = self.float_operand(ctx, t, sub, False)
                if b.literal and a.literal:
                    return None
                return Expr("math", t, [a, b], "atan2", False, 2, 0)
            if fn == "div":
                b = self.float_expr(ctx, t, sub, False)
                den = Expr("bin", t, [Expr("abs", t, [b]), lit(1.0)], "add", False, b.mag + 1, 0)
                return Expr("bin", t, [a, den], "truediv", False, a.mag, 0)
            if fn == "pow":
                if self.chance(0.5):
                    k = r.randint(0, 3)
                    return Expr("bin", t, [a, lit(k)], "pow", False, a.mag * k + 1, 0)
                return Expr("bin", t, [absa, lit(0.5)], "pow", False, a.mag // 2 + 1, 0)
        raise AssertionError(kind)

    # vectors, matrices and structs ---------------------------------------

    def pick_vt(self, elem: DT | None = None, matrix: bool = False) -> VT:
        r = self.r
        elem = elem or r.choice(self.types())
        if matrix:
            return VT(elem, r.randint(2, 3), r.randint(2, 3))
        return VT(elem, r.randint(2, 4))

    def composite_vars(self, ctx: Ctx, assignable: bool = False) -> list[tuple[str, Var]]:
        """Vector, matrix and struct locals in scope (with ``assignable``: those this code may change)."""
        out = []
        for n, v in ctx.lookup().items():
            if not isinstance(v.dt, (VT, ST)) or not self.readable(ctx, n, v):
                continue
            if assignable and (not v.mutable or v.kernel and ctx.where != "serial"):
                continue
            out.append((n, v))
        return out

    @staticmethod
    def meta_of(e: Expr) -> dict:
        return dict(exact=e.exact, mag=e.mag, frac=e.frac)

    def scalar_part(self, ctx: Ctx, t: DT, d: int, exact: bool) -> Expr:
        """A component's value for a vector of ``t`` (floats: with the bounds it carries)."""
        if t.is_int:
            return self.int_expr(ctx, self.r.choice(self.subtypes(t)) if self.chance(0.3) else t, d)
        if self.chance(0.15):
            s = self.r.choice([x for x in INTS if x.bits <= 16])
            e = self.int_expr(ctx, s, d)
            return Expr(e.op, e.t, e.args, e.attr, True, s.bits, 0)
        return self.float_expr(ctx, F32 if t == F64 and self.chance(0.2) else t, d, exact)

    def vec_leaf(self, ctx: Ctx, vt: VT, exact: bool) -> Expr:
        r = self.r
        roll = r.random()
        vs = [(n, v) for n, v in self.composite_vars(ctx) if v.dt == vt and (v.exact or not exact)]
        if vs and roll < 0.45:
            n, v = r.choice(vs)
            return Expr("var", vt, [], n, v.exact, v.mag, v.frac)
        members = [(n, v, k) for n, v in self.composite_vars(ctx) if isinstance(v.dt, ST)
                   for k, mt in v.dt.members if mt == vt and (v.exact or not exact)]
        if members and roll < 0.6:
            n, v, k = r.choice(members)
            return Expr("comp", vt, [Expr("var", v.dt, [], n)], ("mem", k), v.exact, v.mag, v.frac)
        arrs = [a for a in self.arrays if a.elem == vt and self.array_readable(ctx, a)
                and (a.role == "in" or not exact or vt.elem.is_int)]
        if arrs and roll < 0.8:
            a = r.choice(arrs)
            if a.role == "in":
                return Expr("load", vt, [self.index(ctx, a)], a.name, True, 5, 2)
            return Expr("load", vt, [self.index(ctx, a)], a.name, False, 40, 0)
        return self.vec_ctor(ctx, vt, 0, exact)

    def vec_ctor(self, ctx: Ctx, vt: VT, d: int, exact: bool) -> Expr:
        parts = [self.scalar_part(ctx, vt.elem, d, exact) for _ in range(vt.size)]
        if vt.elem.is_float:
            return Expr("vec", vt, parts, None, all(p.exact for p in parts), max(p.mag for p in parts),
                        max(p.frac for p in parts))
        return Expr("vec", vt, parts)

    def vec_expr(self, ctx: Ctx, vt: VT, d: int, exact: bool = False) -> Expr:
        """An expression of the vector or matrix type ``vt``."""
        r = self.r
        if d <= 0 or self.chance(0.25):
            return self.vec_leaf(ctx, vt, exact)
        kinds = ["arith"] * 4 + ["ctor", "neg", "matmul", "minmax", "abs"] + \
            (["cross"] if vt.shape == (3,) else []) + (["divmod"] if vt.elem.is_int else []) + \
            (["swizzle"] if not vt.m else [])
        kind = r.choice(kinds)
        sub = d - 1
        t = vt.elem
        if kind == "ctor":
            e = self.vec_ctor(ctx, vt, sub, exact)
        elif kind in ("neg", "abs"):
            a = self.vec_expr(ctx, vt, sub, exact)
            e = Expr(kind, vt, [a], None, a.exact, a.mag, a.frac)
        elif kind == "swizzle":  # .zyx, .xxy, ... of a vector of 2 to 4
            src = VT(t, r.randint(2, 4))
            a = self.vec_expr(ctx, src, sub, exact)
            e = Expr("comp", vt, [a], ("swz", "".join(r.choice("xyzw"[:src.n]) for _ in range(vt.n))), a.exact,
                     a.mag, a.frac)
        elif kind == "minmax":  # qd.min / qd.max, element-wise, a scalar broadcast
            a = self.vec_expr(ctx, vt, sub, exact)
            if self.chance(0.6):
                b = self.vec_expr(ctx, vt, sub, exact)
            else:
                b = self.operand(ctx, t, sub) if t.is_int else self.float_operand(ctx, t, sub, exact)
            if self.chance(0.3):
                a, b = b, a
            e = Expr("vminmax", vt, [a, b], r.choice(["min", "max"]), a.exact and b.exact, max(a.mag, b.mag),
                     max(a.frac, b.frac))
        elif kind == "arith":
            op = r.choice(["add", "sub", "mul"])
            a = self.vec_expr(ctx, vt, sub, exact)
            if self.chance(0.5):
                s = r.choice([x for x in self.subtypes(t) if x.kind == t.kind]) if self.chance(0.3) else t
                b = self.vec_expr(ctx, VT(s, vt.n, vt.m), sub, exact)
            elif t.is_int:
                b = self.operand(ctx, t, sub)
            else:
                b = self.float_operand(ctx, t, sub, exact)
            if b.t.is_float and b.literal and t.is_int:
                b = self.int_literal(t)
            if self.chance(0.4):
                a, b = b, a
            if t.is_float:
                if op == "mul":
                    mag, frac = a.mag + b.mag, a.frac + b.frac
                else:
                    mag, frac = max(a.mag, b.mag) + 1, max(a.frac, b.frac)
                e = Expr("bin", vt, [a, b], op, a.exact and b.exact, mag, frac)
            else:
                e = Expr("bin", vt, [a, b], op)
        elif kind == "divmod":
            op = r.choice(["floordiv", "mod"])
            a = self.vec_expr(ctx, vt, sub)
            if self.chance(0.5):
                b = self.divisor(ctx, r.choice(self.subtypes(t)), t)
            else:
                s = r.choice(self.subtypes(t))
                b = Expr("vec", VT(s, vt.n, vt.m), [self.divisor(ctx, s, t) for _ in range(vt.size)])
            e = Expr("bin", vt, [a, b], op)
        elif kind == "cross":
            a, b = self.vec_expr(ctx, vt, sub, exact), self.vec_expr(ctx, vt, sub, exact)
            e = Expr("method", vt, [a, b], "cross", a.exact and b.exact, a.mag + b.mag + 1, a.frac + b.frac)
        else:  # matmul: (n x k) @ (k) or (n x k) @ (k x m)
            k = r.randint(2, 3)
            a = self.vec_expr(ctx, VT(t, vt.n, k), sub, exact)
            b = self.vec_expr(ctx, VT(t, k, vt.m), sub, exact)
            e = Expr("bin", vt, [a, b], "matmul", a.exact and b.exact, a.mag + b.mag + 2, a.frac + b.frac)
        if t.is_int:
            return e
        if e.mag > MAXMAG or (exact and not (e.exact and e.mag + e.frac < t.mantissa)):
            return self.vec_leaf(ctx, vt, exact)
        if e.exact and e.mag + e.frac >= t.mantissa:
            e.exact = False
        return e

    def vec_scalar(self, ctx: Ctx, t: DT, d: int, exact: bool) -> Expr | None:
        """A scalar of type ``t`` out of a vector, matrix or struct: a component, a member, a dot
        product, a sum, a norm (inexact)."""
        r = self.r
        members = [(n, v, k) for n, v in self.composite_vars(ctx) if isinstance(v.dt, ST)
                   for k, mt in v.dt.members if mt == t and (v.exact or not exact)]
        if members and self.chance(0.3):
            n, v, k = r.choice(members)
            return Expr("comp", t, [Expr("var", v.dt, [], n)], ("mem", k), v.exact, v.mag, v.frac)
        if "vectors" not in self.features:
            return None
        known = [v.dt for _, v in self.composite_vars(ctx) if isinstance(v.dt, VT) and v.dt.elem == t]
        vt = r.choice(known) if known and self.chance(0.7) else self.pick_vt(t, self.chance(0.2))
        kinds = ["comp"] * 3 + ([] if vt.m else ["dot", "sum", "norm_sqr", "rtcomp"] +
                                ([] if exact or t.is_int else ["norm"]))
        kind = r.choice(kinds)
        a = self.vec_expr(ctx, vt, d, exact)
        if kind == "rtcomp":  # v[k] with k known at run time
            k = Expr("bin", I32, [self.int_expr(ctx, I32, 1), lit(vt.n)], "mod")
            return Expr("comp", t, [a, k], ("rt", None), a.exact, a.mag, a.frac)
        if kind == "comp":
            if vt.m:
                attr = ("mat", (r.randrange(vt.n), r.randrange(vt.m)))
            else:
                attr = (r.choice(["swz", "idx"]), r.randrange(vt.n))
            return Expr("comp", t, [a], attr, a.exact, a.mag, a.frac)
        if kind == "sum":
            e = Expr("method", t, [a], "sum", a.exact, a.mag + 2, a.frac)
        elif kind == "norm":
            return Expr("method", t, [a], "norm", False, a.mag + 2, 0)
        else:
            b = a if kind == "norm_sqr" else self.vec_expr(ctx, vt, d, exact)
            e = Expr("method", t, [a] + ([b] if kind == "dot" else []), kind, a.exact and b.exact,
                     a.mag + b.mag + 2, a.frac + b.frac)
        if t.is_float and (e.mag > MAXMAG or exact and not (e.exact and e.mag + e.frac < t.mantissa)):
            return None
        if t.is_float and e.exact and e.mag + e.frac >= t.mantissa:
            e.exact = False
        return e

    def st_vassign(self, ctx: Ctx) -> list[Stmt]:
        vt = self.pick_vt(matrix=self.chance(0.25))
        e = self.vec_expr(ctx, vt, 3)
        name = self.fresh("k" if ctx.where == "serial" and ctx.depth == 0 else "v")
        ctx.scopes[-1][name] = Var(vt, True, ctx.where == "serial" and ctx.depth == 0, e.exact, e.mag, e.frac)
        return [Stmt("assign", name, [e])]

    def st_sassign(self, ctx: Ctx) -> list[Stmt]:
        r = self.r
        if self.structs and self.chance(0.6):
            st = r.choice(self.structs)
        else:
            members = []
            for k in range(r.randint(1, 3)):
                vec = "vectors" in self.features and self.chance(0.4)
                members.append(("abc"[k], self.pick_vt() if vec else r.choice(self.types())))
            st = ST(f"S{len(self.structs)}", tuple(members))
            self.structs.append(st)
        parts = [self.vec_expr(ctx, mt, 2) if isinstance(mt, VT) else self.expr_of(ctx, mt, 2)
                 for _, mt in st.members]
        floats = [p for p in parts if (p.t.elem if isinstance(p.t, VT) else p.t).is_float]
        meta = dict(exact=all(p.exact for p in floats), mag=max([p.mag for p in floats], default=0),
                    frac=max([p.frac for p in floats], default=0))
        name = self.fresh("k" if ctx.where == "serial" and ctx.depth == 0 else "v")
        ctx.scopes[-1][name] = Var(st, True, ctx.where == "serial" and ctx.depth == 0, **meta)
        return [Stmt("assign", name, [Expr("struct", st, parts)])]

    def fits_bounds(self, e: Expr, v: Var) -> bool:
        """Whether a float value may be stored into a local whose reads assumed ``v``'s bounds."""
        if v.exact:
            return e.exact and e.mag <= v.mag and e.frac <= v.frac
        return e.mag <= v.mag

    def st_vreassign(self, ctx: Ctx) -> list[Stmt]:
        """``v = vec3(v[2], v[0], v[1])``, ``v = v.yx``, ``s = S(a=s.b, b=s.a)``: a whole vector,
        matrix or struct given a value read from its own components, which are assigned one at a
        time in the generated code (each must read the old value)."""
        r = self.r
        name, v = r.choice(self.composite_vars(ctx, True))
        var = Expr("var", v.dt, [], name, v.exact, v.mag, v.frac)
        meta = self.meta_of(var)
        if isinstance(v.dt, ST):
            parts = []
            for k, mt in v.dt.members:
                same = [k2 for k2, mt2 in v.dt.members if mt2 == mt]
                if self.chance(0.7):  # another member of the same type (the old value)
                    parts.append(Expr("comp", mt, [var], ("mem", r.choice(same)), **meta))
                else:
                    parts.append(self.vec_expr(ctx, mt, 1, v.exact) if isinstance(mt, VT)
                                 else self.expr_of(ctx, mt, 1))
            e = Expr("struct", v.dt, parts, None, all(p.exact for p in parts), max(p.mag for p in parts),
                     max(p.frac for p in parts))
        elif not v.dt.m and self.chance(0.6):
            order = list(range(v.dt.n))
            r.shuffle(order)
            if self.chance(0.5):
                e = Expr("comp", v.dt, [var], ("swz", "".join("xyzw"[k] for k in order)), **meta)
            else:
                e = Expr("vec", v.dt, [Expr("comp", v.dt.elem, [var], ("idx", k), **meta) for k in order], None, **meta)
        else:
            e = self.vec_expr(ctx, v.dt, 2, v.exact)
        floats = [p for p in ([e] if not isinstance(v.dt, ST) else e.args)
                  if (p.t.elem if isinstance(p.t, VT) else p.t).is_float]
        if any(not self.fits_bounds(p, v) for p in floats):
            return self.st_assign(ctx)
        out = [Stmt("assign", name, [e])]
        if isinstance(v.dt, VT) and not v.dt.m and v.dt.elem.is_int and e.op in ("vec", "comp") and self.chance(0.4):
            out = [Stmt("aug", (name, r.choice(["add", "sub"])), [e])]  # v += v.yx (integers wrap: no bound to keep)
        if ctx.where != "helper" and isinstance(v.dt, VT):  # stored at once: what it now holds is seen
            if ctx.where == "serial":
                a, idx = self.out_array(v.dt.elem, "serial", 8, v.dt), lit(0)
            else:
                a, idx = self.out_array(v.dt.elem, elem=v.dt), Expr("var", I32, [], "i")
            ctx.task.writes.add(a.name)
            self.note_store(a, var)
            out.append(Stmt("store", a.name, [idx, var]))
        return out

    def st_vset(self, ctx: Ctx) -> list[Stmt]:
        """``v.x = e``, ``m[1, 0] = e``, ``s.a = e``, ``s.c.y = e``, ``s.c = vector``."""
        r = self.r
        cands = self.composite_vars(ctx, True)
        if not cands:
            return self.st_assign(ctx)
        name, v = r.choice(cands)
        lv, t = Expr("var", v.dt, [], name), v.dt
        if isinstance(t, ST):
            k, mt = r.choice(t.members)
            lv, t = Expr("comp", mt, [lv], ("mem", k)), mt
            if isinstance(t, VT) and self.chance(0.4):
                e = self.vec_expr(ctx, t, 2, v.exact)
                if t.elem.is_float and not self.fits_bounds(e, v):
                    return self.st_assign(ctx)
                return [Stmt("setcomp", None, [lv, e])]
        if isinstance(t, VT) and not t.m and self.chance(0.25):  # v[k] = e, k known at run time
            k = Expr("bin", I32, [self.int_expr(ctx, I32, 1), lit(t.n)], "mod")
            lv, t = Expr("comp", t.elem, [lv, k], ("rt", None)), t.elem
        elif isinstance(t, VT):
            attr = ("mat", (r.randrange(t.n), r.randrange(t.m))) if t.m else (r.choice(["swz", "idx"]),
                                                                                r.randrange(t.n))
            lv, t = Expr("comp", t.elem, [lv], attr), t.elem
        if t.is_int:
            e = self.expr_of(ctx, t, 2, convertible=True)
            if e.t.is_float:
                e = self.int_expr(ctx, t, 2)
        else:
            e = self.float_expr(ctx, t, 2, v.exact)
            if not self.fits_bounds(e, v):
                return self.st_assign(ctx)
        return [Stmt("setcomp", None, [lv, e])]

    def st_vstore(self, ctx: Ctx) -> list[Stmt]:
        """A vector or matrix stored into an ndarray (or field) of them, whole or one component."""
        r = self.r
        if ctx.where == "serial":
            cands = [a for a in self.arrays if a.role == "serial" and a.elem is not None]
            if not cands or not self.chance(0.7):
                vt = self.pick_vt(matrix=self.chance(0.2))
                cands = [self.out_array(vt.elem, "serial", 8, vt)]
            a = r.choice(cands)
            idx = lit(r.randint(0, a.size - 1))
        else:
            cands = [a for a in self.arrays if a.role == "out" and a.name in ctx.task.writes and a.elem is not None]
            if not cands or self.chance(0.3):
                cands = [a for a in self.arrays if a.role == "out" and a.name not in self.written
                         and a.name not in ctx.task.writes and a.elem is not None]
                if not cands:
                    vt = self.pick_vt(matrix=self.chance(0.2))
                    cands = [self.out_array(vt.elem, elem=vt)]
            a = r.choice(cands)
            idx = Expr("var", I32, [], "i")
        ctx.task.writes.add(a.name)
        vt = a.elem
        if self.chance(0.3):
            attr = ("mat", (r.randrange(vt.n), r.randrange(vt.m))) if vt.m else (r.choice(["swz", "idx"]),
                                                                                  r.randrange(vt.n))
            e = self.expr_of(ctx, a.dt, 3, convertible=True)
            self.note_store(a, e)
            return [Stmt("cstore", (a.name, attr), [idx, e])]
        src = vt if a.dt.is_int or self.chance(0.8) else VT(r.choice([x for x in INTS if x.bits <= 16]), vt.n, vt.m)
        e = self.vec_expr(ctx, src, 3)
        self.note_store(a, e)
        if ctx.where == "parallel" and a.dt.is_int and a.dt.bits >= 32 and self.chance(0.15):
            return [Stmt("augstore", (a.name, "add"), [idx, e])]  # per-component atomic adds, this thread's only
        return [Stmt("store", a.name, [idx, e])]

    # conditions -------------------------------------------------------

    def cond(self, ctx: Ctx, d: int, truth: bool = True) -> Expr:
        """A condition; with ``truth``, possibly an integer tested for non-zero."""
        r = self.r
        roll = r.random()
        if d > 0 and roll < 0.15:  # operands are comparisons: Python's `and` of ints returns an int
            return Expr(r.choice(["and", "or"]), BOOL, [self.cond(ctx, d - 1, False), self.cond(ctx, d - 1, False)])
        if d > 0 and roll < 0.22:
            return Expr("not", BOOL, [self.cond(ctx, d - 1, False)])
        if truth and roll < 0.3:
            return self.int_expr(ctx, r.choice(self.ts(INTS)), max(d, 1))  # an integer's truth
        t = r.choice(self.types())
        n = r.choice([2, 2, 2, 3])
        ops = [r.choice(["lt", "le", "gt", "ge", "eq", "ne"]) for _ in range(n - 1)]
        items: list[Expr] = []
        for k in range(n):
            if k > 0 and not items[-1].literal and self.chance(0.35):
                items.append(self.int_literal(t) if t.is_int else lit(r.randint(-32, 32) / 4))
            else:
                items.append(self.int_expr(ctx, t, max(d, 1)) if t.is_int else self.float_expr(ctx, t, max(d, 1), True))
        return Expr("cmp", BOOL, items, ops)


def generate(seed: int, features: frozenset[str] | None = None, narrow: bool | None = None) -> Program:
    """The kernel of ``seed`` (``narrow``: force 32-bit types only, or not; by default the seed decides)."""
    return Generator(seed, features, narrow).program()

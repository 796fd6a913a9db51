"""The reference: an interpreter of the fuzzer's ``Program`` description with the semantics the
transpiler promises, written independently of the transpiler: Quadrants' type promotion,
Python's ``//``, ``%``, ``/`` and ``**``, fixed-width integers that wrap, C's conversions.

Parallel loops run their iterations in order (the generator only builds kernels whose result
does not depend on the order); a loop with ``qd.loop_config(block_dim=B)`` runs each block's
threads statement by statement in lockstep, which is one legal schedule of race-free block
code, and evaluates block collectives over the block's threads, and subgroup operations over
each run of ``width`` consecutive threads of a block (the executor's subgroup width: the only
input of the reference that depends on the executor).

Vectors and matrices are lists of their components (row-major), structs dicts of their members;
each operation is written out per component with the scalar rules."""
from __future__ import annotations

import copy
import math

import numpy as np

from .dtypes import BOOL, F32, I32, DT, ST, VT, adapted, convert, literal_type, promote, wrap
from .program import Expr, Program, Stmt, racy_reductions


class Undefined(Exception):
    """The program does something with no defined result (a generator or minimizer slip)."""


class Invalid(Exception):
    """The program is not a valid kernel (an undefined name, a truncating implicit conversion)."""


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Return(Exception):
    def __init__(self, value):
        self.value = value


MAX_TRIPS = 10_000


# f64 functions come from glibc (Python's math), within an ulp of the true value; NumPy's SIMD
# loops (SVML on AVX-512) may be a few ulps off, too far for the fuzzer's ulp comparisons.
_LIBM = {"sqrt": math.sqrt, "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin,
         "acos": math.acos, "atan": math.atan, "atan2": math.atan2, "exp": math.exp, "log": math.log,
         "pow": math.pow, "tanh": math.tanh}


def _np_math(fn: str, t: DT, args: list):
    x = [t.np.type(a) for a in args]
    if t.bits == 64 and fn in _LIBM:
        try:
            return t.np.type(_LIBM[fn](*map(float, x)))
        except OverflowError:
            return t.np.type(math.inf)
        except ValueError:
            return t.np.type(math.nan)
    f = {"floor": np.floor, "ceil": np.ceil, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "exp": np.exp,
         "log": np.log, "tanh": np.tanh, "atan2": np.arctan2}[fn]
    return t.np.type(f(*x))


class Interpreter:
    def __init__(self, prog: Program, width: int = 32):
        self.prog = prog
        self.width = width
        self.helpers = {h.name: h for h in prog.helpers}
        self.arrays: dict[str, np.ndarray] = {}
        self.types = {a.name: a.dt for a in prog.arrays}
        for a in prog.arrays:
            self.arrays[a.name] = prog.inputs[a.name].copy() if a.name in prog.inputs else np.zeros(a.shape, a.dt.np)
        self.elems = {a.name: a.elem for a in prog.arrays}
        self.kernel: dict[str, tuple] = {s.name: (convert(s.value, literal_type(s.value), s.dt), s.dt)
                                         for s in prog.scalars}
        self.thread: dict | None = None   # block state of the running thread
        self.shared: dict[str, tuple[np.ndarray, DT]] = {}

    # ------------------------------------------------------------------ run

    def run(self) -> dict[str, np.ndarray]:
        with np.errstate(all="ignore"):
            for task in self.prog.tasks:
                if not task.parallel:
                    for s in task.body:  # serial code's variables are kernel-scope
                        self.stmt(s, [self.kernel])
                elif racy_reductions(task.body, self.kernel):
                    raise Undefined("a task reads a kernel-scope variable it reduces into")
                elif task.block_dim is None:
                    for i in range(task.start, task.stop):
                        self.block(task.body, [self.kernel, {"i": (i, I32)}])
                else:
                    self.run_blocks(task)
        return self.arrays

    def run_blocks(self, task) -> None:
        bd = task.block_dim
        if task.start != 0 or (task.stop - task.start) % bd:
            raise Undefined("a block task's range is not whole blocks")
        for b in range(task.stop // bd):
            self.shared = {}
            threads = [[self.kernel, {"i": (b * bd + t, I32)}, {}] for t in range(bd)]
            tids = list(range(bd))
            for s in task.body:
                if s.kind == "assign" and s.exprs[0].op in ("breduce", "sgop"):
                    self.collective(s, threads, tids)
                    continue
                for t, scopes in enumerate(threads):
                    self.thread = {"tid": t}
                    try:
                        self.stmt(s, scopes)
                    except (_Break, _Continue):
                        raise Undefined("break/continue out of a block task's loop") from None
            self.thread = None

    def collective(self, s: Stmt, threads, tids) -> None:
        e = s.exprs[0]
        if e.op == "sgop":
            return self.subgroup(s, threads)
        fn, bd, dt = e.attr
        vals = []
        for t, scopes in enumerate(threads):
            self.thread = {"tid": t}
            v, vt = self.ev(e.args[0], scopes)
            vals.append(convert(v, vt, dt))
        op = fn.split("_")[1]
        comb = {"add": lambda a, b: wrap(a + b, dt), "min": min, "max": max}[op]
        if fn.startswith("reduce"):
            total = vals[0]
            for v in vals[1:]:
                total = comb(total, v)
            out = [total] * len(vals)
        else:
            out, acc = [], None
            for v in vals:
                if fn.startswith("exclusive"):
                    out.append(acc if acc is not None else 0)
                acc = v if acc is None else comb(acc, v)
                if fn.startswith("inclusive"):
                    out.append(acc)
        for t, scopes in enumerate(threads):
            self.assign(s.attr, out[t], dt, scopes)

    def subgroup(self, s: Stmt, threads) -> None:
        """A subgroup operation at a block task's top level: every run of ``width`` threads
        (``2**log2`` for the tiled ones) is one group, lane = thread index modulo the width."""
        e = s.exprs[0]
        fn, extra = e.attr
        dt = e.t
        vals, idxs = [], []
        for t, scopes in enumerate(threads):
            self.thread = {"tid": t}
            v, vt = self.ev(e.args[0], scopes)
            if not isinstance(vt, DT) or vt != dt:
                raise Invalid("a subgroup operand of another type")
            vals.append(v)
            if fn == "shuffle":
                k, kt = self.ev(e.args[1], scopes)
                idxs.append(int(k))
        w = self.width
        if len(threads) % w:
            raise Undefined("a block that is not whole subgroups")
        size = (1 << extra) if fn.endswith("_tiled") else w
        if size > w:
            raise Undefined("a tile wider than the subgroup")
        out = []
        for t in range(len(threads)):
            lane, base = t % size, t - t % size
            group = vals[base:base + size]
            if fn == "broadcast_first":
                out.append(group[0])
            elif fn == "broadcast":
                if extra >= size:
                    raise Undefined("a broadcast from a lane past the subgroup")
                out.append(group[extra])
            elif fn == "shuffle":
                if not 0 <= idxs[t] < size:
                    raise Undefined("a shuffle from a lane past the subgroup")
                out.append(group[idxs[t]])
            elif fn == "shuffle_xor":
                if lane ^ extra >= size:
                    raise Undefined("a shuffle_xor past the subgroup")
                out.append(group[lane ^ extra])
            elif fn == "shuffle_up":
                out.append(group[lane - extra] if lane >= extra else group[lane])
            elif fn == "shuffle_down":
                out.append(group[lane + extra] if lane + extra < size else group[lane])
            else:
                kind, op = fn.split("_")[:2]
                comb = {"add": lambda a, b: dt.np.type(a + b) if dt.is_float else wrap(a + b, dt),
                        "min": min, "max": max}[op]
                upto = {"reduce": size, "inclusive": lane + 1, "exclusive": lane}[kind]
                if upto == 0:
                    if dt.is_float and op != "add":
                        raise Undefined("an exclusive float min/max is infinite in lane 0")
                    out.append(dt.np.type(0) if dt.is_float and op == "add" else
                               {"add": 0, "min": dt.hi, "max": dt.lo}[op])
                    continue
                acc = group[0]
                for v in group[1:upto]:
                    acc = comb(acc, v)
                out.append(acc)
        for t, scopes in enumerate(threads):
            self.assign(s.attr, out[t], dt, scopes)

    # ------------------------------------------------------------------ statements

    def block(self, body: list[Stmt], scopes: list[dict]) -> None:
        inner = scopes + [{}]
        for s in body:
            self.stmt(s, inner)

    def find(self, name: str, scopes: list[dict]) -> dict | None:
        for sc in reversed(scopes):
            if name in sc:
                return sc
        return None

    def lookup(self, name: str, scopes: list[dict]):
        sc = self.find(name, scopes)
        if sc is None:
            raise Invalid(f"undefined name {name}")
        return sc[name]

    def assign(self, name: str, v, t: DT, scopes: list[dict]) -> None:
        sc = self.find(name, scopes)
        if isinstance(t, (VT, ST)) or sc is not None and isinstance(sc[name][1], (VT, ST)):
            if sc is not None and sc[name][1] != t:
                raise Invalid(f"{name}: a {t} assigned to a {sc[name][1]} variable")
            (scopes[-1] if sc is None else sc)[name] = (copy.deepcopy(v), t)
            return
        if sc is None:
            scopes[-1][name] = (v, I32 if t == BOOL and False else t)
            return
        old_t = sc[name][1]
        if t.is_float and old_t.is_int:
            raise Invalid(f"{name}: a float assigned to an integer variable")
        sc[name] = (convert(v, t, old_t), old_t)

    def stmt(self, s: Stmt, scopes: list[dict]) -> None:
        k = s.kind
        if k == "assign":
            v, t = self.ev(s.exprs[0], scopes)
            if t == BOOL:
                raise Invalid("a boolean local")
            self.assign(s.attr, v, t, scopes)
        elif k == "swap":
            first, second = self.ev(s.exprs[0], scopes), self.ev(s.exprs[1], scopes)
            self.assign(s.attr[0], *first, scopes)
            self.assign(s.attr[1], *second, scopes)
        elif k == "aug":
            name, op = s.attr
            cur, ct = self.lookup(name, scopes)
            rhs = self.ev_lit(s.exprs[0], scopes)
            # (a vector: `v += v.yx`, every component of the right side read before any is updated)
            v, t = self.vbinop(op, (cur, ct, False), rhs) if isinstance(ct, VT) else self.binop(op, (cur, ct, False), rhs)
            if (t.elem if isinstance(t, VT) else t).is_float and (ct.elem if isinstance(ct, VT) else ct).is_int:
                raise Invalid("a float into an integer variable")
            self.assign(name, v, t, scopes)
        elif k == "mutate":
            hname, name = s.attr
            h = self.helpers.get(hname)
            if h is None or not h.mutates:
                raise Invalid(f"no helper {hname} that assigns its first argument")
            cur, ct = self.lookup(name, scopes)
            if ct != h.params[0][1]:
                raise Invalid(f"{name} is {ct}, {hname} takes {h.params[0][1]}")
            frame: dict = {h.params[0][0]: (cur, ct)}  # the caller's variable itself
            for (pname, pt), a in zip(h.params[1:], s.exprs):
                v, t = self.ev(a, scopes)
                if t.is_float and pt.is_int:
                    raise Invalid("a float argument for an integer parameter")
                frame[pname] = (convert(v, t, pt), pt)
            self.block(h.body, [frame])
            self.assign(name, *frame[h.params[0][0]], scopes)
        elif k == "reduce_minmax":
            name, op = s.attr
            cur, ct = self.lookup(name, scopes)
            v, t = self.minmax(op, (cur, ct, False), self.ev_lit(s.exprs[0], scopes))
            self.assign(name, v, t, scopes)
        elif k == "katomic":
            fn, name = s.attr
            cur, ct = self.lookup(name, scopes)
            v, t = self.ev(s.exprs[0], scopes)
            self.assign(name, self.rmw(fn[7:], cur, convert(v, t, ct), ct), ct, scopes)
        elif k == "store":
            arr, dt, idx = self.place(s.attr, s.exprs[0], scopes)
            v, t = self.ev(s.exprs[1], scopes)
            et = self.elems[s.attr]
            if et is not None:
                if t != VT(t.elem if isinstance(t, VT) else dt, et.n, et.m):
                    raise Invalid(f"a {t} stored into an array of {et}")
                if t.elem.is_float and dt.is_int:
                    raise Invalid("a float vector stored into an integer array")
                arr[idx] = np.array([convert(x, t.elem, dt) for x in v], dt.np).reshape(et.shape)
                return
            if not isinstance(t, DT):
                raise Invalid(f"a {t} stored into a scalar array")
            if t.is_float and dt.is_int:
                raise Invalid("a float stored into an integer array")
            arr[idx] = convert(v, t, dt)
        elif k == "cstore":
            name, comp = s.attr
            arr, dt, idx = self.place(name, s.exprs[0], scopes)
            et = self.elems[name]
            if et is None:
                raise Invalid("a component of a scalar array element")
            k = self.flat_index(et, comp)
            v, t = self.ev(s.exprs[1], scopes)
            if not isinstance(t, DT) or t.is_float and dt.is_int:
                raise Invalid("a component stored from a vector or a float into an integer")
            arr[idx].reshape(-1)[k] = convert(v, t, dt)
        elif k == "setcomp":
            self.set_component(s.exprs[0], self.ev(s.exprs[1], scopes), scopes)
        elif k in ("augstore", "atomic"):
            name, op = s.attr if k == "augstore" else (s.attr[1], s.attr[0][7:])
            arr, dt, idx = self.place(name, s.exprs[0], scopes)
            v, t = self.ev(s.exprs[1], scopes)
            et = self.elems[name]
            if et is not None:  # a[i] += v on a vector element: one atomic per component
                if k != "augstore" or not isinstance(t, VT) or t.shape != et.shape or t.elem.is_float and dt.is_int:
                    raise Invalid(f"a {t} added into an element of {et}")
                flat = arr[idx].reshape(-1)
                flat[:] = [self.rmw(op, self.scalar(o, dt), convert(x, t.elem, dt), dt) for o, x in zip(flat, v)]
                return
            if not isinstance(t, DT) or t.is_float and dt.is_int:
                raise Invalid("a float into an integer array")
            arr[idx] = self.rmw(op, self.scalar(arr[idx], dt), convert(v, t, dt), dt)
        elif k in ("shstore", "shatomic"):
            name = s.attr if k == "shstore" else s.attr[1]
            if name not in self.shared:
                raise Invalid(f"shared array {name} not allocated")
            arr, dt = self.shared[name]
            idx, _ = self.ev(s.exprs[0], scopes)
            if not 0 <= idx < arr.size:
                raise Undefined("shared index out of range")
            v, t = self.ev(s.exprs[1], scopes)
            if k == "shstore":
                arr[idx] = convert(v, t, dt)
            else:
                arr[idx] = self.rmw(s.attr[0][7:], int(arr[idx]), convert(v, t, dt), dt)
        elif k == "shalloc":
            name, size, dt = s.attr
            if name not in self.shared:
                self.shared[name] = (np.zeros(size, dt.np), dt)
        elif k == "sync":
            pass
        elif k == "if":
            if self.truth(s.exprs[0], scopes):
                self.block(s.bodies[0], scopes)
            else:
                self.block(s.bodies[1], scopes)
        elif k == "for":
            self.loop_for(s, scopes)
        elif k == "while":
            counter, limit = s.attr
            self.assign(counter, 0, I32, scopes)
            while self.lookup(counter, scopes)[0] < limit:
                self.assign(counter, self.lookup(counter, scopes)[0] + 1, I32, scopes)
                try:
                    self.block(s.bodies[0], scopes)
                except _Continue:
                    continue
                except _Break:
                    break
        elif k == "static":
            var, count = s.attr
            for c in range(count):
                try:
                    self.block(s.bodies[0], scopes + [{var: (c, "static")}])
                except _Continue:
                    continue
                except _Break:
                    break
        elif k == "break":
            raise _Break()
        elif k == "continue":
            raise _Continue()
        elif k == "return":
            raise _Return(self.ev(s.exprs[0], scopes))
        else:
            raise ValueError(k)

    def loop_for(self, s: Stmt, scopes: list[dict]) -> None:
        vals = [self.ev_lit(e, scopes) for e in s.exprs]
        lt = I32
        for v, t, literal in vals:
            if t.is_float:
                raise Invalid("a float range bound")
            if not literal:
                lt = promote(lt, t)
        b = [convert(v, t, lt) for v, t, _ in vals]
        if len(b) == 1:
            r = range(0, b[0])
        elif len(b) == 2:
            r = range(b[0], b[1])
        else:
            step_lit = vals[2][2]
            step = vals[2][0] if step_lit else b[2]
            if step == 0:
                raise Undefined("a zero step")
            r = range(b[0], b[1], step)
        if len(r) > MAX_TRIPS:
            raise Undefined("a loop with too many trips")
        for j in r:
            try:
                self.block(s.bodies[0], scopes + [{s.attr: (j, lt)}])
            except _Continue:
                continue
            except _Break:
                break

    def place(self, name: str, idx_e: Expr, scopes):
        arr = self.arrays.get(name)
        if arr is None:
            raise Invalid(f"no array {name}")
        idx, _ = self.ev(idx_e, scopes)
        if not 0 <= idx < len(arr):
            raise Undefined(f"index {idx} out of range for {name}")
        return arr, self.types[name], idx

    # ------------------------------------------------------------------ vectors and structs

    @staticmethod
    def flat_index(t: VT, comp) -> int:
        how, key = comp
        if how in ("swz", "idx"):
            if t.m or not 0 <= key < t.n:
                raise Invalid(f"component {key} of a {t}")
            return key
        if how == "mat":
            i, j = key
            if not t.m or not (0 <= i < t.n and 0 <= j < t.m):
                raise Invalid(f"element {key} of a {t}")
            return i * t.m + j
        raise Invalid(f"a member of a {t}")

    def component(self, v, t, comp):
        """Component ``comp`` of the value ``v`` of type ``t``: (value, type)."""
        if comp[0] == "swz" and isinstance(comp[1], str):  # a swizzle: a vector of its letters
            if not isinstance(t, VT) or t.m or any("xyzw".index(c) >= t.n for c in comp[1]):
                raise Invalid(f"swizzle {comp[1]} of a {t}")
            return [v["xyzw".index(c)] for c in comp[1]], VT(t.elem, len(comp[1]))
        if isinstance(t, ST):
            how, key = comp
            if how != "mem" or key not in v:
                raise Invalid(f"no member {key} in {t}")
            return v[key], t.member(key)
        if not isinstance(t, VT):
            raise Invalid(f"a component of a {t}")
        return v[self.flat_index(t, comp)], t.elem

    def comp_key(self, e: Expr, scopes, t=None):
        """The component a ``comp`` expression selects of its operand (of type ``t``, when known);
        a run-time index evaluated."""
        if e.attr[0] != "rt":
            return e.attr
        k, kt = self.ev(e.args[1], scopes)
        if not isinstance(kt, DT) or not kt.is_int:
            raise Invalid("a run-time index that is not an integer")
        if t is None:
            t = self.ev(e.args[0], scopes)[1]
        if not isinstance(t, VT) or t.m or not 0 <= k < t.n:
            raise Undefined(f"index {k} of a {t}")
        return ("idx", int(k))

    def set_component(self, lv: Expr, val, scopes) -> None:
        path = []
        while lv.op == "comp":
            path.append(self.comp_key(lv, scopes))
            lv = lv.args[0]
        if lv.op != "var" or not path:
            raise Invalid("an assignment to a component of something not a variable")
        sc = self.find(lv.attr, scopes)
        if sc is None:
            raise Invalid(f"undefined name {lv.attr}")
        cont, t = sc[lv.attr]
        path.reverse()
        for comp in path[:-1]:
            cont, t = self.component(cont, t, comp)
        comp = path[-1]
        v, vt = val
        if isinstance(t, ST):
            how, key = comp
            if how != "mem" or key not in cont:
                raise Invalid(f"no member {key} in {t}")
            mt = t.member(key)
            cont[key] = self.converted(v, vt, mt)
        elif isinstance(t, VT):
            cont[self.flat_index(t, comp)] = self.converted(v, vt, t.elem)
        else:
            raise Invalid(f"a component of a {t}")

    def converted(self, v, vt, dst):
        """A value assigned to a place of type ``dst`` (a scalar, or a vector of the same shape)."""
        if isinstance(dst, VT):
            if not isinstance(vt, VT) or vt.shape != dst.shape:
                raise Invalid(f"a {vt} assigned to a {dst}")
            if vt.elem.is_float and dst.elem.is_int:
                raise Invalid("a float vector into an integer vector")
            return [convert(x, vt.elem, dst.elem) for x in v]
        if not isinstance(vt, DT) or not isinstance(dst, DT):
            raise Invalid(f"a {vt} assigned to a {dst}")
        if vt.is_float and dst.is_int:
            raise Invalid("a float into an integer place")
        return convert(v, vt, dst)

    def elements(self, x):
        """An operand (value, type, literal) as a list of per-component operands, and its shape."""
        v, t, literal = x
        if isinstance(t, VT):
            return [(c, t.elem, False) for c in v], t
        if isinstance(t, ST):
            raise Invalid("arithmetic on a struct")
        return None, t

    def vbinop(self, op: str, a, b):
        """An element-wise operation with a vector operand (a scalar one is broadcast), or ``@``."""
        ea, ta = self.elements(a)
        eb, tb = self.elements(b)
        if op == "matmul":
            if ea is None or eb is None or not ta.m:
                raise Invalid("@ needs a matrix and a vector or matrix")
            rows, inner = ta.n, ta.m
            cols = tb.m or 1
            if tb.n != inner:
                raise Invalid("@ of mismatched shapes")
            out, et = [], None
            for i in range(rows):
                for j in range(cols):
                    acc = None
                    for k in range(inner):
                        p, pt = self.binop("mul", ea[i * inner + k], eb[k * cols + j])
                        acc = (p, pt) if acc is None else self.binop("add", (*acc, False), (p, pt, False))
                    out.append(acc[0])
                    et = acc[1]
            return out, VT(et, rows, tb.m)
        if ea is not None and eb is not None and ta.shape != tb.shape:
            raise Invalid("an element-wise operation on mismatched shapes")
        shape_t = ta if ea is not None else tb
        n = shape_t.size
        ea = ea or [a] * n
        eb = eb or [b] * n
        out, et = [], None
        for x, y in zip(ea, eb):
            v, et = self.binop(op, x, y)
            out.append(v)
        if et == BOOL:
            raise Invalid("a vector of booleans")
        return out, VT(et, shape_t.n, shape_t.m)

    def method(self, e: Expr, scopes):
        vals = [self.ev(x, scopes) for x in e.args]
        v, t = vals[0]
        if not isinstance(t, VT):
            raise Invalid(f".{e.attr}() of a {t}")
        name = e.attr
        if name in ("dot", "cross"):
            w, u = vals[1]
            if not isinstance(u, VT) or u.shape != t.shape or t.m:
                raise Invalid(f".{name}() of mismatched vectors")
            if name == "cross":
                if t.n != 3:
                    raise Invalid("cross of a vector that is not a 3-vector")
                out, et = [], None
                for i, j in ((1, 2), (2, 0), (0, 1)):
                    p, pt = self.binop("mul", (v[i], t.elem, False), (w[j], u.elem, False))
                    q, qt = self.binop("mul", (v[j], t.elem, False), (w[i], u.elem, False))
                    r, et = self.binop("sub", (p, pt, False), (q, qt, False))
                    out.append(r)
                return out, VT(et, 3)
            prods = [self.binop("mul", (x, t.elem, False), (y, u.elem, False)) for x, y in zip(v, w)]
        elif name in ("norm_sqr", "norm"):
            if t.m:
                raise Invalid(f".{name}() of a matrix")
            prods = [self.binop("mul", (x, t.elem, False), (x, t.elem, False)) for x in v]
        elif name == "sum":
            prods = [(x, t.elem) for x in v]
        else:
            raise Invalid(f"no method {name}")
        acc = prods[0]
        for p in prods[1:]:
            acc = self.binop("add", (*acc, False), (*p, False))
        if name == "norm":
            if not acc[1].is_float:
                raise Invalid("norm of an integer vector")
            return _np_math("sqrt", acc[1], [acc[0]]), acc[1]
        return acc

    @staticmethod
    def scalar(x, dt: DT):
        return dt.np.type(x) if dt.is_float else int(x)

    @staticmethod
    def rmw(op: str, old, v, dt: DT):
        if op == "add":
            return dt.np.type(old + v) if dt.is_float else wrap(old + v, dt)
        if op == "sub":
            return dt.np.type(old - v) if dt.is_float else wrap(old - v, dt)
        if op == "min":
            return min(old, v)
        if op == "max":
            return max(old, v)
        return wrap({"and": old & v, "or": old | v, "xor": old ^ v}[op], dt)

    # ------------------------------------------------------------------ expressions

    def truth(self, e: Expr, scopes) -> bool:
        v, t = self.ev(e, scopes)
        return bool(v)

    def ev_lit(self, e: Expr, scopes):
        """(value, type, is a translation-time literal)."""
        if e.op == "lit":
            return e.attr, literal_type(e.attr), True
        if e.op == "static":
            v, _ = self.lookup(e.attr, scopes)
            return v, I32, True
        v, t = self.ev(e, scopes)
        return v, t, False

    def operands(self, a, b) -> tuple[DT, DT]:
        (va, ta, la), (vb, tb, lb) = a, b
        if la and lb:
            raise Undefined("an operation on two literals (Python would evaluate it at translation time)")
        if la:
            ta = adapted(va, tb)
        elif lb:
            tb = adapted(vb, ta)
        return ta, tb

    def binop(self, op: str, a, b):
        ta, tb = self.operands(a, b)
        va, vb = a[0], b[0]
        if op in ("lshift", "rshift"):
            if ta.is_float or tb.is_float:
                raise Invalid("a shift of a float")
            t = I32 if ta == BOOL else ta
            x, n = convert(va, ta, t), convert(vb, tb, t)
            if not 0 <= n < t.bits:
                raise Undefined(f"shift by {n} on {t}")
            return (wrap(x << n, t) if op == "lshift" else x >> n), t
        if op in ("bitand", "bitor", "bitxor"):
            if ta == BOOL and tb == BOOL:
                return {"bitand": va and vb, "bitor": va or vb, "bitxor": va != vb}[op], BOOL
            t = promote(ta, tb)
            if t.is_float:
                raise Invalid("a bitwise operation on a float")
            x, y = convert(va, ta, t), convert(vb, tb, t)
            return wrap({"bitand": x & y, "bitor": x | y, "bitxor": x ^ y}[op], t), t
        t = promote(ta, tb)
        if op == "truediv" and t.is_int:
            t = F32
        x, y = convert(va, ta, t), convert(vb, tb, t)
        if op == "pow":
            if t.is_float:
                return t.np.type(np.power(x, y)), t
            if not b[2] or vb < 0:
                raise Invalid("an integer power needs a non-negative literal exponent")
            return wrap(x ** y, t), t
        if t.is_float:
            if op in ("truediv", "floordiv", "mod") and y == 0:
                raise Undefined("a float division by zero")
            f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
                 "floordiv": np.floor_divide, "mod": np.mod}[op]
            return t.np.type(f(x, y)), t
        if op in ("floordiv", "mod"):
            if y == 0:
                raise Undefined("an integer division by zero")
            if t.signed and y == -1 and x == t.lo:
                raise Undefined("MIN // -1")
            return wrap(x // y if op == "floordiv" else x % y, t), t
        return wrap({"add": x + y, "sub": x - y, "mul": x * y}[op], t), t

    def minmax(self, op: str, a, b):
        ta, tb = self.operands(a, b)
        t = promote(ta, tb)
        x, y = convert(a[0], ta, t), convert(b[0], tb, t)
        return (min(x, y) if op == "min" else max(x, y)), t

    def select(self, c: bool, a, b):
        ta, tb = self.operands(a, b)
        t = BOOL if ta == BOOL and tb == BOOL else promote(ta, tb)
        v, vt = (a[0], ta) if c else (b[0], tb)
        return convert(v, vt, t), t

    def ev(self, e: Expr, scopes) -> tuple:
        op = e.op
        if op in ("lit", "static"):
            v, t, _ = self.ev_lit(e, scopes)
            return v, t
        if op == "var":
            v, t = self.lookup(e.attr, scopes)
            if t == "static":
                raise Invalid("a static loop variable used as a typed value")
            return v, t
        if op == "load":
            arr = self.arrays.get(e.attr)
            if arr is None:
                raise Invalid(f"no array {e.attr}")
            idx, it = self.ev(e.args[0], scopes)
            if it.is_float or not isinstance(it, DT):
                raise Invalid("a float index")
            if not 0 <= idx < len(arr):
                raise Undefined(f"index {idx} out of range for {e.attr}")
            dt = self.types[e.attr]
            et = self.elems[e.attr]
            if et is not None:
                return [self.scalar(x, dt) for x in arr[idx].reshape(-1)], et
            return self.scalar(arr[idx], dt), dt
        if op == "shload":
            if e.attr not in self.shared:
                raise Invalid("shared array not allocated")
            arr, dt = self.shared[e.attr]
            idx, _ = self.ev(e.args[0], scopes)
            if not 0 <= idx < arr.size:
                raise Undefined("shared index out of range")
            return int(arr[idx]), dt
        if op == "tid":
            if self.thread is None:
                raise Invalid("thread_idx outside a block task")
            return self.thread["tid"], I32
        if op == "bin":
            a, b = self.ev_lit(e.args[0], scopes), self.ev_lit(e.args[1], scopes)
            if isinstance(a[1], (VT, ST)) or isinstance(b[1], (VT, ST)) or e.attr == "matmul":
                return self.vbinop(e.attr, a, b)
            return self.binop(e.attr, a, b)
        if op == "vec":
            if len(e.args) != e.t.size:
                raise Invalid(f"{e.t} built from {len(e.args)} values")
            return [self.converted(*self.ev(x, scopes), e.t.elem) for x in e.args], e.t
        if op == "struct":
            if len(e.args) != len(e.t.members):
                raise Invalid(f"{e.t} built from {len(e.args)} values")
            return {k: self.converted(*self.ev(x, scopes), mt) for (k, mt), x in zip(e.t.members, e.args)}, e.t
        if op == "comp":
            v, t = self.ev(e.args[0], scopes)
            return self.component(v, t, self.comp_key(e, scopes, t))
        if op == "vminmax":
            a, b = self.ev_lit(e.args[0], scopes), self.ev_lit(e.args[1], scopes)
            ea, ta = self.elements(a)
            eb, tb = self.elements(b)
            if ea is None and eb is None or ea is not None and eb is not None and ta.shape != tb.shape:
                raise Invalid("qd.min/qd.max of mismatched shapes")
            st = ta if ea is not None else tb
            ea, eb = ea or [a] * st.size, eb or [b] * st.size
            out = [self.minmax(e.attr, x, y) for x, y in zip(ea, eb)]
            return [v for v, _ in out], VT(out[0][1], st.n, st.m)
        if op == "method":
            return self.method(e, scopes)
        if op == "sgop":
            raise Invalid("a subgroup operation outside a block task's top level")
        if op in ("neg", "invert", "abs"):
            v, t = self.ev(e.args[0], scopes)
            if isinstance(t, VT) and op != "invert":
                f = (lambda x: -x) if op == "neg" else abs
                return [t.elem.np.type(f(x)) if t.elem.is_float else wrap(f(x), t.elem) for x in v], t
            if not isinstance(t, DT):
                raise Invalid(f"{op} of a {t}")
            if e.args[0].literal:
                raise Undefined("a unary operation on a literal")
            t = I32 if t == BOOL else t
            v = convert(v, t, t) if t.is_int else v
            if t.is_float:
                if op == "invert":
                    raise Invalid("~ on a float")
                return (t.np.type(-v) if op == "neg" else t.np.type(abs(v))), t
            return wrap({"neg": -v, "invert": ~v, "abs": abs(v)}[op], t), t
        if op == "not":
            return not self.truth(e.args[0], scopes), BOOL
        if op in ("and", "or"):
            a = self.truth(e.args[0], scopes)
            if op == "and":
                return (a and self.truth(e.args[1], scopes)), BOOL
            return (a or self.truth(e.args[1], scopes)), BOOL
        if op == "cmp":
            items = [self.ev_lit(x, scopes) for x in e.args]
            result = True
            for o, a, b in zip(e.attr, items, items[1:]):
                ta, tb = self.operands(a, b)
                t = BOOL if ta == BOOL and tb == BOOL else promote(ta, tb)
                x, y = convert(a[0], ta, t), convert(b[0], tb, t)
                result = result and {"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y, "eq": x == y,
                                     "ne": x != y}[o]
            return bool(result), BOOL
        if op in ("ifexp", "select"):
            c = self.truth(e.args[0], scopes)
            return self.select(c, self.ev_lit(e.args[1], scopes), self.ev_lit(e.args[2], scopes))
        if op in ("min", "max"):
            return self.minmax(op, self.ev_lit(e.args[0], scopes), self.ev_lit(e.args[1], scopes))
        if op == "math":
            vals = [self.ev_lit(x, scopes) for x in e.args]
            t = vals[0][1] if not vals[0][2] else (vals[1][1] if len(vals) > 1 else F32)
            if not t.is_float:
                raise Invalid("a math function of an integer")
            args = [convert(v, vt if not lit else literal_type(v), t) for v, vt, lit in vals]
            if (e.attr == "sqrt" and args[0] < 0 or e.attr == "log" and args[0] <= 0
                    or e.attr in ("asin", "acos") and not -1 <= args[0] <= 1 or e.attr == "pow" and args[0] <= 0):
                raise Undefined(f"{e.attr} outside its domain")
            return _np_math(e.attr, t, args), t
        if op == "cast":
            v, t = self.ev(e.args[0], scopes)
            if t.is_float and e.t.is_int:
                f = float(v)
                if not math.isfinite(f) or not e.t.lo <= math.trunc(f) <= e.t.hi:
                    raise Undefined(f"{f} does not fit {e.t}")
            return convert(v, t, e.t), e.t
        if op == "call":
            h = self.helpers.get(e.attr)
            if h is None:
                raise Invalid(f"no helper {e.attr}")
            frame: dict = {}
            for (pname, pt), a in zip(h.params, e.args):
                v, t = self.ev(a, scopes)
                if t.is_float and pt.is_int:
                    raise Invalid("a float argument for an integer parameter")
                frame[pname] = (convert(v, t, pt), pt)
            try:
                self.block(h.body, [frame])
            except _Return as r:
                v, t = r.value
                if t.is_float and h.ret.is_int:
                    raise Invalid("a float returned as an integer") from None
                return convert(v, t, h.ret), h.ret
            raise Invalid("a helper without a return")
        if op == "breduce":
            raise Invalid("a block collective outside a task's top level")
        raise ValueError(op)


def reference(prog: Program, width: int = 32) -> dict[str, np.ndarray]:
    """The arrays after the kernel runs, as the transpiler promises them, on an executor whose
    subgroups are ``width`` lanes wide."""
    return Interpreter(prog, width).run()

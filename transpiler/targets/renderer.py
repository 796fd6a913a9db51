"""The shared C-like renderer: walks the typed IR of one entry point and writes statements
and expressions with the spellings of the target's ``Dialect``.

Expressions are printed with the fewest parentheses C's precedence allows. Every
statement ends with a ``// file.py:LINE`` comment pointing at the Python it came from.
What rendering learns (helpers, dtypes, the target's typed needs) goes into ``usage``.
"""
from __future__ import annotations

import os
from functools import lru_cache
from collections.abc import Callable

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..passes.functions import function_inputs
from ..passes.ranges import additive, in_range, index_locals, index_roots, type_range, value_range
from .context import RenderedFunction, TranslationContext, Usage
from .dialect import (
    BINARY, BITWISE, COMPARE, COMPOUND, PREC_ADD, PREC_AND, PREC_COND, PREC_MUL, PREC_OR, PREC_PRIMARY, PREC_REL,
    PREC_UNARY, Dialect, Helper,
)

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import Needs


# Every output line's comment names its Python file: one basename per file, not per line.
file_name = lru_cache(maxsize=256)(os.path.basename)


def _same_op(e: ir.Expr, op: str) -> bool:
    return isinstance(e, ir.BinOp) and e.op == op


class Renderer:
    """Renders the statements of one entry point of one translation."""

    # IR class -> its method (expr_<name> or stmt_<name>), looked up once per renderer class
    _methods: dict[type, Callable] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._methods = {}

    def __init__(self, ctx: TranslationContext, usage: Usage, block_dim: int | None = None):
        self.ctx = ctx
        self.dialect: Dialect = ctx.target.dialect
        self.line_directives = ctx.options.line_directives
        self.usage = usage
        self.block_dim = block_dim  # the entry point's threads per block, where it is a parallel task
        self.lines: list[str] = []
        # Parameters and extents are named once per translation (ctx.names); locals per entry.
        self.names: dict[int, str] = dict(ctx.names.params)
        self.shape_names: dict[tuple[int, int], str] = dict(ctx.names.shapes)
        self.scopes: list[set[str]] = [set(ctx.names.taken)]
        self.keep: list = []
        self.last_line: tuple[str, int] | None = None
        self.referenced: set[tuple[int, int | None]] = set()  # (id(param), dim or None) read by the body
        # > 0 while an array index or a loop's bounds are written: index-space arithmetic, where
        # overflow is out of bounds (or a range i32 cannot count) whatever the spelling.
        self.in_index = 0
        self.index_vars: set[int] = set()  # locals read only in index space (passes.ranges.index_locals)

    # ------------------------------------------------------------------ names

    def taken(self, name: str) -> bool:
        for scope in self.scopes:  # (a loop: any() over a generator costs twice as much here)
            if name in scope:
                return True
        return False

    def declare_name(self, obj: object, base: str) -> str:
        base = self.dialect.identifier(base)
        name, k = base, 1
        while self.taken(name):
            name = f"{base}_{k}"
            k += 1
        self.scopes[-1].add(name)
        self.names[id(obj)] = name
        self.keep.append(obj)
        return name

    def local_name(self, var: ir.Local) -> str:
        try:
            return self.names[id(var)]
        except KeyError:
            raise TranspileError(f"internal error: `{var.name}` used before its declaration", var.loc) from None

    def array_name(self, array: ir.Array) -> str:
        return self.names[id(array)]

    def param_name(self, p: ir.Param) -> str:
        return self.names[id(p)]

    def helper_wraps(self, t: T.DType) -> bool:
        """Whether signed arithmetic on ``t`` is undefined on overflow in this dialect (C++
        computes narrower types in int, where they cannot overflow)."""
        return self.dialect.signed_overflow_undefined and t.is_int and t.is_signed and t.bits >= 32

    def promoted_product_overflows(self, t: T.DType) -> bool:
        """Whether the product of two ``t`` values can overflow the signed int C computes a
        narrow ``t`` in (u16: 65535 * 65535), which the dialect leaves undefined."""
        wide = self.dialect.compute_type(t)
        if not (self.dialect.signed_overflow_undefined and t.is_int and wide is not t and wide.is_signed):
            return False
        lo, hi = type_range(t)
        return max(lo * lo, hi * hi) > type_range(wide)[1]

    def helper(self, name: str, t: T.DType, **extra) -> str:
        """Request a helper function; returns the name to call. On a type whose arithmetic
        can overflow where the dialect leaves that undefined (a signed type, or u16 promoted
        to int), ``h.extra.wrap`` names the unsigned type its arithmetic wraps in."""
        if self.helper_wraps(t) or self.promoted_product_overflows(t):
            extra.setdefault("wrap", self.type(T.unsigned(self.dialect.compute_type(t))))
        h = Helper(name, t.name, self.dialect.type_name(t), extra)
        self.usage.helpers.setdefault(h.key, h)
        return "qd_" + name

    def type(self, t: T.DType, loc: ir.Loc | None = None) -> str:
        self.usage.types.add(t.name)
        return self.dialect.type_name(t, loc)

    def result_type(self, t: T.DType, loc: ir.Loc | None = None) -> str:
        """The result type a function definition declares."""
        return self.type(t, loc)

    @property
    def needs(self) -> Needs:
        """The target's typed requirements this entry point has found so far."""
        return self.usage.needs

    # ------------------------------------------------------------------ expressions

    def expr(self, e: ir.Expr) -> tuple[str, int]:
        try:
            method = self._methods[type(e)]
        except KeyError:
            method = self._methods[type(e)] = getattr(type(self), "expr_" + type(e).__name__)
        if self.in_index and not additive(e):
            # Only the sum of products an index is made of overflows out of bounds: below a
            # %, a shift or a call (a hash's `(h * 31 + k) % n`) the wrapped value is used.
            saved, self.in_index = self.in_index, 0
            try:
                return method(self, e)
            finally:
                self.in_index = saved
        return method(self, e)

    def text(self, e: ir.Expr, min_prec: int = 0) -> str:
        s, p = self.expr(e)
        return f"({s})" if p < min_prec else s

    def expr_Const(self, e: ir.Const) -> tuple[str, int]:
        self.usage.types.add(e.type.name)
        s = self.dialect.literal(e.value, e.type)
        return s, (PREC_UNARY if s.startswith("-") else PREC_PRIMARY)

    def expr_LocalRef(self, e: ir.LocalRef) -> tuple[str, int]:
        return self.local_name(e.var), PREC_PRIMARY

    def expr_ParamRef(self, e: ir.ParamRef) -> tuple[str, int]:
        self.referenced.add((id(e.param), None))
        return self.param_name(e.param), PREC_PRIMARY

    def expr_Shape(self, e: ir.Shape) -> tuple[str, int]:
        self.referenced.add((id(e.array), e.dim))
        return self.shape_names[(id(e.array), e.dim)], PREC_PRIMARY

    def linear_index(self, array: ir.Array, indices: list[ir.Expr]) -> str:
        if isinstance(array, ir.Param) and array.type.element_shape:
            nd = array.type.ndim
            inner = indices[nd:]
            if inner and all(isinstance(e, ir.Const) for e in inner):
                return self.element_index(array, indices[:nd], inner)
        if not indices:  # a 0-d array: its one element
            return "0"
        return self.index_text(indices[0]) if len(indices) == 1 else self.row_major(array, indices)

    def index_text(self, e: ir.Expr, min_prec: int = 0) -> str:
        """``e`` in index space: signed arithmetic there keeps its plain spelling."""
        self.in_index += 1
        try:
            return self.text(e, min_prec)
        finally:
            self.in_index -= 1

    def row_major(self, array: ir.Array, indices: list[ir.Expr]) -> str:
        """((i * n1 + j) * n2 + k); a vector or matrix element's extents are constants."""
        acc = self.index_text(indices[0], PREC_MUL)
        for dim, idx in enumerate(indices[1:], start=1):
            if isinstance(array, ir.SharedArray):
                extent = str(array.type.shape[dim])
            elif dim >= array.type.ndim:
                extent = str(array.type.element_shape[dim - array.type.ndim])
            elif array.type.static_shape is not None:
                extent = str(array.type.static_shape[dim])
            else:
                self.referenced.add((id(array), dim))
                extent = self.shape_names[(id(array), dim)]
            acc = f"{acc} * {extent} + {self.index_text(idx, PREC_ADD)}"
            if dim < len(indices) - 1:
                acc = f"({acc})"
        return acc

    def element_index(self, array: ir.Param, outer: list[ir.Expr], inner: list[ir.Const]) -> str:
        """A constant component of a vector or matrix element, as the frontend unrolls them:
        ``i * 9 + 5`` rather than ``(i * 3 + 1) * 3 + 2``."""
        offset = 0
        for k, e in zip(array.type.element_shape, inner):
            offset = offset * k + int(e.value)
        if not outer:
            return str(offset)
        if len(outer) == 1 and isinstance(outer[0], ir.Const):
            return str(int(outer[0].value) * array.type.element_size + offset)
        base = self.index_text(outer[0], PREC_MUL) if len(outer) == 1 else f"({self.row_major(array, outer)})"
        text = f"{base} * {array.type.element_size}"
        return text if offset == 0 else f"{text} + {offset}"

    def expr_Load(self, e: ir.Load) -> tuple[str, int]:
        return self.dialect.array_ref(self, e.array, self.linear_index(e.array, e.indices)), PREC_PRIMARY

    def narrow(self, text: str, prec: int, t: T.DType) -> tuple[str, int]:
        """C computes narrow ints as int: convert the result back to ``t``."""
        wide = self.dialect.compute_type(t)
        if wide is not t and wide != t:
            return self.dialect.cast(text, t), PREC_PRIMARY
        return text, prec

    # ------------------------------------------------ signed arithmetic that wraps

    def wraps(self, e: ir.Expr) -> bool:
        """Whether ``e`` is signed +, -, *, negation or << that the target must compute in
        unsigned arithmetic: the dialect leaves signed overflow (and, before C++20, shifting a
        negative value left) undefined, and ``e`` may overflow. Narrow types count by the int
        C computes them in (u16 * u16 overflows it, and so can any narrow <<: fuzz seed 103195),
        and signed ones by their own range too."""
        if not (self.dialect.signed_overflow_undefined and e.type.is_int and e.type is not T.bool_):
            return False
        wide = self.dialect.compute_type(e.type)
        if not wide.is_signed or self.in_index:
            return False
        if isinstance(e, ir.BinOp) and e.op == "lshift":
            a, b = value_range(e.a), value_range(e.b)
            return not (a and b and a[0] >= 0 and 0 <= b[0] and b[1] < wide.bits and
                        a[1] << b[1] <= type_range(wide)[1])
        if not ((isinstance(e, ir.BinOp) and e.op in ("add", "sub", "mul")) or
                (isinstance(e, ir.Unary) and e.op == "neg")):
            return False
        if wide is not e.type:  # promoted to int
            if e.op == "mul" and self.promoted_product_overflows(e.type):
                return True
            # A narrow signed result that may leave its type: int holds it, so C++ would allow
            # the plain spelling, but unsigned arithmetic converted back keeps one spelling for
            # every result that wraps (int8_t(uint32_t(a) * 3u + 1u)).
            return e.type.is_signed and not in_range(e)
        return not in_range(e)

    def unsigned_text(self, e: ir.Expr, min_prec: int) -> str:
        """``e`` (signed, or narrow) as a value of the unsigned type its arithmetic wraps in: a
        wrapping operation's own unsigned form, a literal in the unsigned type, or a conversion."""
        u = T.unsigned(self.dialect.compute_type(e.type))
        if self.wraps(e):
            s, p = self.unsigned_expr(e)
            return f"({s})" if p < min_prec else s
        if isinstance(e, ir.Const):
            return self.dialect.literal(int(e.value) % (1 << u.bits), u)
        return self.dialect.cast(self.text(e), u)

    def unsigned_expr(self, e: ir.BinOp | ir.Unary) -> tuple[str, int]:
        u = T.unsigned(self.dialect.compute_type(e.type))
        self.type(u)
        if isinstance(e, ir.Unary):
            zero = self.dialect.literal(0, u)
            return f"{zero} - {self.unsigned_text(e.a, PREC_ADD + 1)}", PREC_ADD
        op, prec = BINARY[e.op]
        right = self.text(e.b, prec + 1) if e.op == "lshift" else self.unsigned_text(e.b, prec + 1)
        return f"{self.unsigned_text(e.a, prec)} {op} {right}", prec

    def wrapped(self, e: ir.BinOp | ir.Unary) -> tuple[str, int]:
        self.type(e.type)
        return self.dialect.cast(self.unsigned_expr(e)[0], e.type), PREC_PRIMARY

    def expr_BinOp(self, e: ir.BinOp) -> tuple[str, int]:
        t = e.type
        special = self.dialect.binop_special(self, e)
        if special is not None:
            return special
        if self.wraps(e):
            return self.wrapped(e)
        op, prec = BINARY[e.op]
        if e.op in BITWISE:
            # Spell out the grouping of mixed bit operations; C's precedence there surprises.
            left = self.text(e.a, prec if _same_op(e.a, e.op) else PREC_UNARY)
            right = self.text(e.b, PREC_UNARY)
        else:
            left, right = self.text(e.a, prec), self.text(e.b, prec + 1)
        return self.narrow(f"{left} {op} {right}", prec, t)

    def expr_Compare(self, e: ir.Compare) -> tuple[str, int]:
        op, prec = COMPARE[e.op]
        # A comparison with an array extent is a bounds check: its other side is index space.
        render = self.index_text if any(root for _, root in index_roots(e)) else self.text
        return f"{render(e.a, prec + 1)} {op} {render(e.b, prec + 1)}", prec

    def expr_Logical(self, e: ir.Logical) -> tuple[str, int]:
        if e.op == "and":
            return f"{self.text(e.a, PREC_AND)} && {self.text(e.b, PREC_AND + 1)}", PREC_AND
        # Parenthesize && inside || even where C would not need it: it reads better.
        return f"{self.text(e.a, PREC_AND + 1)} || {self.text(e.b, PREC_AND + 1)}", PREC_OR

    def expr_Unary(self, e: ir.Unary) -> tuple[str, int]:
        if e.op == "neg" and e.type.name in self.dialect.negated_by_helper:
            return f"{self.helper('neg', e.type)}({self.text(e.a)})", PREC_PRIMARY
        if self.wraps(e):
            return self.wrapped(e)
        sym = {"neg": "-", "not": "!", "invert": "~"}[e.op]
        inner = self.text(e.a, PREC_UNARY)
        if sym == "-" and inner.startswith("-"):
            inner = f"({inner})"
        return self.narrow(f"{sym}{inner}", PREC_UNARY, e.type)

    def expr_Cast(self, e: ir.Cast) -> tuple[str, int]:
        self.usage.types.add(e.type.name)
        return self.dialect.cast(self.text(e.a), e.type), PREC_PRIMARY

    def expr_Select(self, e: ir.Select) -> tuple[str, int]:
        s = f"{self.text(e.cond, PREC_OR)} ? {self.text(e.a, PREC_COND)} : {self.text(e.b, PREC_COND)}"
        return s, PREC_COND

    def expr_Math(self, e: ir.Math) -> tuple[str, int]:
        args = [self.text(a) for a in e.args]
        return self.narrow(self.dialect.math(self, e, args), PREC_PRIMARY, e.type)

    def expr_ThreadIndex(self, e: ir.ThreadIndex) -> tuple[str, int]:
        fixed = self.dialect.thread_index_fixed_block
        if fixed and self.block_dim and e.kind in fixed:
            return fixed[e.kind].format(block_dim=self.block_dim), PREC_PRIMARY
        return self.dialect.thread_index[e.kind], PREC_PRIMARY

    def expr_Clock(self, e: ir.Clock) -> tuple[str, int]:
        return self.dialect.clock(self, e), PREC_PRIMARY

    def expr_BitCast(self, e: ir.BitCast) -> tuple[str, int]:
        self.usage.types.add(e.type.name)
        return self.dialect.bitcast(self.text(e.a), e.a.type, e.type), PREC_PRIMARY

    def expr_VolatileLoad(self, e: ir.VolatileLoad) -> tuple[str, int]:
        ref = self.dialect.array_ref(self, e.array, self.linear_index(e.array, e.indices))
        return self.dialect.volatile_load(self, e, ref), PREC_PRIMARY

    def expr_VectorLane(self, e: ir.VectorLane) -> tuple[str, int]:
        return self.dialect.vector_lane(self, e, self.text(e.index)), PREC_PRIMARY

    def expr_Aligned(self, e: ir.Aligned) -> tuple[str, int]:
        return self.dialect.aligned(self, e), PREC_PRIMARY

    def expr_BlockVote(self, e: ir.BlockVote) -> tuple[str, int]:
        return self.dialect.block_vote(self, e, self.text(e.pred)), PREC_PRIMARY

    def expr_SubgroupOp(self, e: ir.SubgroupOp) -> tuple[str, int]:
        self.usage.types.add(e.type.name)  # a ballot's u64 may appear in no declaration
        args = [self.text(a) for a in e.args]
        return self.narrow(self.dialect.subgroup(self, e, args), PREC_PRIMARY, e.type)

    def expr_WarpOp(self, e: ir.WarpOp) -> tuple[str, int]:
        return self.dialect.warp(self, e, [self.text(a) for a in e.args]), PREC_PRIMARY

    def expr_Call(self, e: ir.Call) -> tuple[str, int]:
        args = [self.text(a) for a in e.args] + [self.local_name(o) for o in e.outs] + \
            [name for name, _ in self.function_inputs(e.function)]
        return f"{self.ctx.names.functions[e.function]}({', '.join(args)})", PREC_PRIMARY

    def function_inputs(self, function: str) -> list[tuple[str, str]]:
        """The kernel's ndarrays, extents and scalars a function receives after the user's
        arguments, as (name, declaration): none where every function sees the kernel's
        parameters."""
        if self.dialect.buffer_param is None:
            return []
        out = []
        for p, dim in function_inputs(self.ctx.kernel)[function]:
            self.referenced.add((id(p), dim))
            if dim is not None:
                name = self.shape_names[(id(p), dim)]
                out.append((name, f"{self.type(T.i32)} {name}"))
            elif p.is_array:
                name = self.param_name(p)
                out.append((name, self.dialect.buffer_param.format(type=self.type(p.type.dtype, p.loc), name=name)))
            else:
                name = self.param_name(p)
                out.append((name, f"{self.type(p.type, p.loc)} {name}"))
        return out

    def expr_Atomic(self, e: ir.Atomic) -> tuple[str, int]:
        ref = self.dialect.array_ref(self, e.array, self.linear_index(e.array, e.indices))
        value = self.text(e.value)
        expected = self.text(e.expected) if e.expected is not None else None
        return self.dialect.atomic(self, e, ref, value, expected), PREC_PRIMARY

    # ------------------------------------------------------------------ statements

    def comment(self, loc: ir.Loc) -> str:
        return f"  // {file_name(loc.file)}:{loc.line}"

    def put(self, depth: int, text: str, loc: ir.Loc | None) -> None:
        if self.line_directives and loc is not None and self.last_line != (loc.file, loc.line):
            self.lines.append(f'#line {loc.line} "{file_name(loc.file)}"')
            self.usage.line_directives = True
            self.last_line = (loc.file, loc.line)
        self.lines.append("    " * depth + text + (self.comment(loc) if loc is not None else ""))

    def block(self, stmts: list[ir.Stmt], depth: int) -> None:
        if depth == 0 and self.dialect.signed_overflow_undefined:  # an entry point's or a function's body
            self.index_vars |= index_locals(stmts)  # they only keep signed arithmetic plain (wraps)
        self.scopes.append(set())
        try:
            methods = self._methods
            for st in stmts:
                method = methods.get(type(st))
                if method is None:
                    method = methods[type(st)] = getattr(type(self), "stmt_" + type(st).__name__)
                method(self, st, depth)
        finally:
            self.scopes.pop()

    def stmt_Declare(self, st: ir.Declare, depth: int) -> None:
        t = self.type(st.var.type, st.loc)
        # A loop variable's value (a task's, recovered from the linear index) is index space,
        # as is that of a local only subscripts and bounds checks read.
        render = self.index_text if st.var.loop_var or id(st.var) in self.index_vars else self.text
        init = None if st.init is None else render(st.init)
        name = self.declare_name(st.var, st.var.name)
        self.put(depth, f"{t} {name};" if init is None else f"{t} {name} = {init};", st.loc)

    def stmt_Assign(self, st: ir.Assign, depth: int) -> None:
        index = st.var.loop_var or id(st.var) in self.index_vars
        self.in_index += index
        try:
            self.assign(st, depth)
        finally:
            self.in_index -= index

    def assign(self, st: ir.Assign, depth: int) -> None:
        name = self.local_name(st.var)
        v = st.value
        if isinstance(v, ir.BinOp) and v.op in COMPOUND and isinstance(v.a, ir.LocalRef) and v.a.var is st.var \
                and self.dialect.compute_type(v.type) == v.type and self.dialect.binop_special(self, v) is None \
                and not self.wraps(v):
            op = BINARY[v.op][0]
            self.put(depth, f"{name} {op}= {self.text(v.b)};", st.loc)
            return
        self.put(depth, f"{name} = {self.text(v)};", st.loc)

    def stmt_Store(self, st: ir.Store, depth: int) -> None:
        ref = self.dialect.array_ref(self, st.array, self.linear_index(st.array, st.indices))
        self.put(depth, f"{ref} = {self.text(st.value)};", st.loc)

    def stmt_ExprStmt(self, st: ir.ExprStmt, depth: int) -> None:
        self.put(depth, f"{self.text(st.expr)};", st.loc)

    def stmt_If(self, st: ir.If, depth: int, prefix: str = "") -> None:
        self.put(depth, f"{prefix}if ({self.text(st.cond)}) {{", st.loc)
        self.block(st.then, depth + 1)
        if len(st.orelse) == 1 and isinstance(st.orelse[0], ir.If):
            self.stmt_If(st.orelse[0], depth, prefix="} else ")
            return
        if st.orelse:
            self.put(depth, "} else {", None)
            self.block(st.orelse, depth + 1)
        self.put(depth, "}", None)

    def stmt_For(self, st: ir.For, depth: int) -> None:
        self.scopes.append(set())
        try:
            t = self.type(st.var.type, st.loc)
            start = self.index_text(st.start)
            name = self.declare_name(st.var, st.var.name)
            stop = self.index_text(st.stop, PREC_REL + 1)
            if st.step_sign > 0:
                cond = f"{name} < {stop}"
            elif st.step_sign < 0:
                cond = f"{name} > {stop}"
            else:
                step = self.text(st.step, PREC_REL + 1)
                cond = f"{step} > 0 ? {name} < {stop} : {name} > {stop}"
            if isinstance(st.step, ir.Const) and st.step.value == 1:
                inc = f"++{name}"
            elif isinstance(st.step, ir.Const) and st.step.value == -1:
                inc = f"--{name}"
            elif isinstance(st.step, ir.Const) and st.step.value < 0:
                inc = f"{name} -= {self.dialect.literal(-st.step.value, st.step.type)}"
            else:
                inc = f"{name} += {self.text(st.step, PREC_COND)}"
            skip = unsigned_stride(st)
            if skip is not None:
                # An unsigned variable stepping by more than 1 could wrap around past the bound
                # (range(n_u32, 0, -2) from 1 to 0xFFFFFFFF): land on the bound instead.
                far, m = self.text(st.stop, PREC_MUL), self.dialect.literal(skip, st.var.type)
                inc = (f"{name} = {name} - {far} > {m} ? {name} - {m} : {stop}" if st.step_sign < 0 else
                       f"{name} = {far} - {name} > {m} ? {name} + {m} : {stop}")
            cond = self.loop_condition(cond)
            self.put(depth, f"for ({t} {name} = {start}; {cond}; {inc}) {{", st.loc)
            self.block(st.body, depth + 1)
        finally:
            self.scopes.pop()
        self.put(depth, "}", None)

    def loop_condition(self, cond: str) -> str:
        """A for loop's condition as written (a dialect may add to it)."""
        return cond

    def stmt_While(self, st: ir.While, depth: int) -> None:
        self.put(depth, f"while ({self.text(st.cond)}) {{", st.loc)
        self.block(st.body, depth + 1)
        self.put(depth, "}", None)

    def put_statements(self, depth: int, statements: tuple[str, ...], loc: ir.Loc) -> None:
        """A spelling made of several statements: one per line."""
        for text in statements:
            self.put(depth, text, loc)

    def stmt_Barrier(self, st: ir.Barrier, depth: int) -> None:
        self.put_statements(depth, self.dialect.barrier(st.scope, st.loc), st.loc)

    def stmt_DeclareShared(self, st: ir.DeclareShared, depth: int) -> None:
        pass  # shared arrays are declared once per entry point (see Target.declare_shared)

    def stmt_Note(self, st: ir.Note, depth: int) -> None:
        self.put(depth, f"// {st.text}", None)  # every dialect (C++, GLSL, MSL) has // comments

    def stmt_Fence(self, st: ir.Fence, depth: int) -> None:
        self.put_statements(depth, self.dialect.fence(st.scope, st.loc), st.loc)

    def stmt_Return(self, st: ir.Return, depth: int) -> None:
        self.put(depth, "return;" if st.value is None else f"return {self.text(st.value)};", st.loc)

    def function(self, fn: ir.Function) -> RenderedFunction:
        """``fn``'s definition. Rendered by each entry point that calls it, so its helpers,
        types and needs (and, on Metal, the parameters it reads) count as the entry's."""
        saved = self.lines, self.scopes, self.block_dim, self.last_line
        self.lines, self.scopes, self.block_dim, self.last_line = [], [set(self.ctx.names.taken)], None, None
        try:
            params = [f"{self.type(p.type, p.loc)} {self.declare_name(p, p.name)}" for p in fn.params]
            params += [self.dialect.out_param.format(type=self.type(p.type, p.loc), name=self.declare_name(p, p.name))
                       for p in fn.outputs]
            params += [self.dialect.inout_param.format(type=self.type(p.type, p.loc), name=self.declare_name(p, p.name))
                       for p in fn.inouts]
            params += [decl for _, decl in self.function_inputs(fn.name)]
            self.block(fn.body, 0)
            result = "void" if fn.result is None else self.result_type(fn.result, fn.loc)
            head = f"{self.dialect.function_qualifier}{result} {self.ctx.names.functions[fn.name]}"
            origin = f"{os.path.basename(fn.loc.file)}:{fn.loc.line}"
            return RenderedFunction(fn.name, head, params, self.lines, origin, fn.forward)
        finally:
            self.lines, self.scopes, self.block_dim, self.last_line = saved

    def stmt_Break(self, st: ir.Break, depth: int) -> None:
        self.put(depth, "break;", st.loc)

    def stmt_Continue(self, st: ir.Continue, depth: int) -> None:
        self.put(depth, "continue;", st.loc)


def unsigned_stride(st: ir.For) -> int | None:
    """The stride of a loop over an unsigned variable with a constant step other than 1
    (``range(n_u32, 0, -2)``), or None."""
    t = st.var.type
    if not isinstance(st.step, ir.Const) or st.step_sign == 0 or not t.is_int or t.is_signed:
        return None
    m = (-int(st.step.value)) % (1 << t.bits) if st.step_sign < 0 else int(st.step.value)
    return m if m > 1 else None

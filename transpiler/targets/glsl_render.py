"""The shared renderer as GLSL needs it: 8- and 16-bit integers computed in 32 bits,
``precise`` float arithmetic, buffers viewed through aliases (a volatile read, a float's bits),
float shared arrays some CAS loop updates held as bits, and lavapipe's workarounds (fences and
spin-wait pauses as atomics on a shared word, loops left only through their condition)."""
from __future__ import annotations

from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.walk import all_exprs, iter_expr
from ..passes.legalize import UINT_OF_WIDTH
from .context import TranslationContext, Usage
from .dialect import BINARY, COMPARE, PREC_PRIMARY, PREC_REL
from .renderer import Renderer

# lavapipe (the lavapipe option): the shared word fences are atomics on (see stmt_Fence);
# a spin-wait's pause is atomics on it too (templates/glsl/helpers.j2, pause).
FENCE_WORD = "qd_fence"


def _wide(t: T.DType) -> str | None:
    """The 32-bit GLSL type an 8- or 16-bit integer computes in (None for other types)."""
    if not t.is_int or t.bits >= 32 or t is T.bool_:
        return None
    return "int" if t.is_signed else "uint"


def _as_int32(e: ir.Expr) -> ir.Expr | int | None:
    """``e`` (an i64) as an i32 expression or int with the same value, when it is one widened
    (a cast of a signed 32-bit or narrower value, or a constant in the i32 range); else None."""
    if isinstance(e, ir.Const) and -2**31 <= int(e.value) < 2**31:
        return int(e.value)
    if isinstance(e, ir.Cast) and e.a.type is T.i32:
        return e.a
    return None


def _polls(e: ir.Expr) -> bool:
    """Whether ``e`` reads memory that other threads write, as a spin-wait does: a volatile
    load, or an atomic that only reads (or/add/sub/xor of 0; a compare-and-swap loop is no wait)."""
    if isinstance(e, ir.VolatileLoad):
        return True
    return isinstance(e, ir.Atomic) and e.op in ("or", "add", "sub", "xor") and \
        isinstance(e.value, ir.Const) and e.value.value == 0


def _breaks(stmts: list[ir.Stmt]) -> bool:
    """Whether a loop body breaks out of that loop (not of a loop inside it)."""
    for st in stmts:
        if isinstance(st, ir.Break):
            return True
        if isinstance(st, ir.If) and (_breaks(st.then) or _breaks(st.orelse)):
            return True
    return False


class GlslRenderer(Renderer):
    """The shared renderer, with what GLSL spells differently from C."""

    def __init__(self, ctx: TranslationContext, usage: Usage, block_dim: int | None = None):
        super().__init__(ctx, usage, block_dim)
        self.buffers: list[dict] = []        # the entry's buffer declarations, for the template
        self.push_constants: list[dict] = []  # and its push-constant block
        self.aliases: dict[tuple[int, str, str], dict] = {}
        self.shared_decls: list[str] = []    # file-scope `shared` declarations
        # Float locals and float buffer elements are `precise` unless fast_math is asked for:
        # without it Mesa (and other drivers) reassociate float arithmetic, which is not
        # Python's evaluation order and turns a Kahan summation's compensation into 0.
        # `precise` also forbids fusing a * b + c into an fma, which CUDA does by default.
        self.precise = not ctx.options.fast_math
        # Float shared arrays some atomic updates with a compare-and-swap loop: GLSL cannot view
        # shared memory as another type, so they hold the bits (uint) and every access converts.
        self.bits_shared: set[int] = set()
        self.fence_word = False  # lavapipe: fences (and spin-wait pauses) are atomics on FENCE_WORD
        self.break_flags: list[str | None] = []  # lavapipe: per enclosing loop, the flag its breaks set

    def expr_BinOp(self, e: ir.BinOp) -> tuple[str, int]:
        wide = _wide(e.type)
        if wide is None or self.dialect.binop_special(self, e) is not None:
            return super().expr_BinOp(e)
        # 8- and 16-bit integer arithmetic in 32 bits, narrowed after, as C's promotion does:
        # lavapipe computed some 16-bit operations wrongly (int16_t(32766) % int16_t(6)).
        op, prec = BINARY[e.op]
        a, b = (self.wide_text(x, wide) for x in (e.a, e.b))
        # self.type records the narrow type: with two literals nothing else would, and the
        # shader would lack the 8- or 16-bit extension its conversion needs (fuzz seed 1566).
        return f"{self.type(e.type)}({a} {op} {b})", PREC_PRIMARY

    def wide_text(self, e: ir.Expr, wide: str) -> str:
        if isinstance(e, ir.Const):  # a literal is written in the wide type directly
            return str(int(e.value)) + ("u" if wide == "uint" else "")
        return f"{wide}({self.text(e)})"

    def expr_Unary(self, e: ir.Unary) -> tuple[str, int]:
        wide = _wide(e.type)
        if wide is None or e.op == "not":
            return super().expr_Unary(e)
        sym = {"neg": "-", "invert": "~"}[e.op]
        inner = self.wide_text(e.a, wide)
        if inner.startswith("-"):  # a negative literal: `--128` would be a decrement (fuzz seed 1646)
            inner = f"({inner})"
        return f"{self.type(e.type)}({sym}{inner})", PREC_PRIMARY

    def expr_Load(self, e: ir.Load) -> tuple[str, int]:
        if id(e.array) not in self.bits_shared:
            return super().expr_Load(e)
        ref = self.dialect.array_ref(self, e.array, self.linear_index(e.array, e.indices))
        if e.type.bits == 16:  # its element is the low half of a uint of its own (declare_shared)
            ref = f"{self.type(T.u16)}({ref})"
        return self.dialect.bitcast(ref, UINT_OF_WIDTH[e.type.bits], e.type), PREC_PRIMARY

    def stmt_Store(self, st: ir.Store, depth: int) -> None:
        if id(st.array) not in self.bits_shared:
            return super().stmt_Store(st, depth)
        ref = self.dialect.array_ref(self, st.array, self.linear_index(st.array, st.indices))
        t = st.array.type.dtype
        bits = self.dialect.bitcast(self.text(st.value), t, UINT_OF_WIDTH[t.bits])
        if t.bits == 16:  # the low half of the element's own uint (declare_shared)
            bits = f"uint({bits})"
        self.put(depth, f"{ref} = {bits};", st.loc)

    def linear_index(self, array: ir.Array, indices: list[ir.Expr]) -> str:
        # glslang takes only 32-bit subscripts: a 64-bit index (an i64 loop variable, an
        # element of an i64 index array) is narrowed, as Quadrants' i32 indices are.
        indices = [ir.Cast(T.i32, e.loc, e) if e.type.is_int and e.type.bits == 64 else e for e in indices]
        return super().linear_index(array, indices)

    def alias_ref(self, array: ir.Array, t: T.DType, qualifier: str, index: str) -> str:
        """``array[index]`` through a second declaration of its buffer (same binding) with
        another element type or qualifier: GLSL cannot cast a buffer element in place."""
        if isinstance(array, ir.SharedArray):
            raise TranspileError(f"shared array `{array.name}` cannot be reinterpreted or read volatile "
                                 f"on the glsl target", array.loc)
        key = (id(array), t.name, qualifier)
        alias = self.aliases.get(key)
        if alias is None:
            base = self.array_name(array)
            name = f"qd_{base}_{qualifier or 'as_' + t.name}"  # qd_ names never collide with the user's
            alias = self.aliases[key] = {"array": base, "name": name, "block": f"qd_buffer_{name[3:]}",
                                         "ctype": self.type(t), "qualifier": qualifier, "param": array}
        return f"{alias['name']}[{index}]"

    def result_type(self, t: T.DType, loc: ir.Loc | None = None) -> str:
        # A precise result keeps the arithmetic that computes it in the function unfused.
        return f"precise {self.type(t, loc)}" if self.precise and t.is_float else self.type(t, loc)

    def expr_ParamRef(self, e: ir.ParamRef) -> tuple[str, int]:
        name, prec = super().expr_ParamRef(e)
        if id(e.param) in self.ctx.layout.widened:
            return f"{self.dialect.types[e.param.type.name]}({name})", PREC_PRIMARY
        return name, prec

    def expr_Cast(self, e: ir.Cast) -> tuple[str, int]:
        if not (e.type.is_int and e.type.bits == 64 and e.a.type.is_int and e.a.type.is_signed
                and e.a.type.bits <= 32 and e.a.type is not T.bool_):
            return super().expr_Cast(e)
        self.usage.types.add(e.type.name)
        if isinstance(e.a, ir.Cast) and e.a.a.type is T.bool_:  # 0 or 1: widened as unsigned
            return self.dialect.cast(f"uint({self.text(e.a.a)})", e.type), PREC_PRIMARY
        inner = self.text(e.a) if e.a.type is T.i32 else f"int({self.text(e.a)})"
        widened = f"{self.helper('widen', T.i64)}({inner})"
        return (widened if e.type is T.i64 else self.dialect.cast(widened, e.type)), PREC_PRIMARY

    def expr_Compare(self, e: ir.Compare) -> tuple[str, int]:
        if e.a.type is T.bool_ and e.op in ("lt", "le", "gt", "ge"):
            # GLSL orders numbers only; False < True as ints, as Python has it.
            op = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}[e.op]
            return f"int({self.text(e.a)}) {op} int({self.text(e.b)})", PREC_REL
        wide = _wide(e.a.type)
        if wide is not None:  # 8- and 16-bit integers compare in 32 bits (see expr_BinOp)
            op, prec = COMPARE[e.op]
            return f"{self.wide_text(e.a, wide)} {op} {self.wide_text(e.b, wide)}", prec
        narrow = [_as_int32(x) for x in (e.a, e.b)] if e.a.type is T.i64 else [None]
        if all(x is not None for x in narrow):
            # Both sides are i32 values widened to i64 (or small constants): compare the i32s,
            # cheaper than two qd_widen (expr_Cast), which covers the rest of lavapipe's bug.
            op, prec = COMPARE[e.op]
            a, b = (("(-2147483647 - 1)" if x == -2**31 else str(x)) if isinstance(x, int) else self.text(x, prec + 1)
                    for x in narrow)
            return f"{a} {op} {b}", prec
        return super().expr_Compare(e)

    def stmt_Declare(self, st: ir.Declare, depth: int) -> None:
        if not (self.precise and st.var.type.is_float):
            super().stmt_Declare(st, depth)
            return
        t = self.type(st.var.type, st.loc)
        init = None if st.init is None else self.text(st.init)
        name = self.declare_name(st.var, st.var.name)
        self.put(depth, f"precise {t} {name};" if init is None else f"precise {t} {name} = {init};", st.loc)

    def expr_Clock(self, e: ir.Clock) -> tuple[str, int]:
        # the device-scope clock: the subgroup one (clockARB) may differ between workgroups
        self.needs.features.add("shaderDeviceClock")
        self.usage.types.add("i64")
        return "int64_t(clockRealtimeEXT())", PREC_PRIMARY

    def expr_VolatileLoad(self, e: ir.VolatileLoad) -> tuple[str, int]:
        # A `volatile` view of the buffer: each read is an OpLoad with the Volatile memory
        # access (and the buffer Coherent), which no driver caches, hoists or merges.
        self.needs.coherent = True
        return self.alias_ref(e.array, e.type, "volatile", self.linear_index(e.array, e.indices)), PREC_PRIMARY

    def stmt_Barrier(self, st: ir.Barrier, depth: int) -> None:
        if st.scope == "subgroup":
            self.needs.subgroup_classes.add("basic")
        super().stmt_Barrier(st, depth)

    def stmt_Fence(self, st: ir.Fence, depth: int) -> None:
        if st.scope in ("device", "system"):
            # Other workgroups see a store only through coherent buffers (no stale L1 lines).
            self.needs.coherent = True
        if self.ctx.options.lavapipe:
            # lavapipe (Mesa 22) compiles every OpMemoryBarrier as a workgroup barrier: a
            # coroutine switch, which lanes masked off take too. A fence in a loop that one
            # thread runs longer than the rest (a spin-wait) then stands in for the others'
            # barriers, and llvmpipe ends the workgroup as soon as any group of 8 lanes has
            # finished: in the middle of that loop, silently (the look-back scan's tiles never
            # published their prefix). An atomic on a shared word is a full fence there (a
            # seq_cst LLVM atomic, a locked x86 instruction) and no switch. On other drivers a
            # relaxed atomic orders nothing, so only for lavapipe.
            self.fence_word = True
            self.put(depth, f"atomicExchange({FENCE_WORD}, 0u);", st.loc)
            return
        super().stmt_Fence(st, depth)

    # lavapipe (Mesa 22.3) computed wrong results after a loop that a lane leaves through a
    # break (or a while condition) tested on a value the same iteration loaded: in
    # `while (left[k] >= 0) { k = left[k]; }` every lane found the right k, yet a load of
    # `weight[k]` after the loop read 0 in each lane but the last to leave (Quadrants' SPIR-V
    # does not meet it; its loops test a flag). So for lavapipe a loop leaves only through its
    # own condition, tested on a flag set in the iteration before: a break sets the loop's
    # flag and continues, a while loop is `for (bool go = cond; go; go = !brk && cond)`.
    def loop_break_flag(self, st: ir.For | ir.While, depth: int) -> str | None:
        if not self.ctx.options.lavapipe or not _breaks(st.body):
            return None
        flag = self.flag_name("qd_break")
        self.put(depth, f"bool {flag} = false;", None)
        return flag

    def flag_name(self, base: str) -> str:
        """A name of the renderer's own (user names never start with qd_), unique in scope."""
        name, k = base, 1
        while self.taken(name):
            name, k = f"{base}{k}", k + 1
        self.scopes[-1].add(name)
        return name

    def loop_condition(self, cond: str) -> str:
        flag = self.break_flags[-1] if self.break_flags else None
        return cond if flag is None else f"!{flag} && ({cond})"

    def stmt_For(self, st: ir.For, depth: int) -> None:
        self.break_flags.append(self.loop_break_flag(st, depth))
        try:
            super().stmt_For(st, depth)
        finally:
            self.break_flags.pop()

    def stmt_Break(self, st: ir.Break, depth: int) -> None:
        flag = self.break_flags[-1] if self.break_flags else None
        if flag is None:
            super().stmt_Break(st, depth)
            return
        self.put(depth, f"{flag} = true;", st.loc)
        self.put(depth, "continue;", None)

    def stmt_While(self, st: ir.While, depth: int) -> None:
        if not self.ctx.options.lavapipe:
            super().stmt_While(st, depth)
            return
        flag = self.loop_break_flag(st, depth)
        self.break_flags.append(flag)
        try:
            go = self.flag_name("qd_go")
            cond = self.text(st.cond)
            again = cond if flag is None else f"!{flag} && ({cond})"
            self.put(depth, f"for (bool {go} = {cond}; {go}; {go} = {again}) {{", st.loc)
            if any(_polls(e) for e in (*iter_expr(st.cond), *all_exprs(st.body))):
                # A spin-wait: a loop that polls memory other threads write. llvmpipe ends a shader
                # invocation's loops after 65535 iterations in all (LP_MAX_TGSI_LOOP_ITERATIONS),
                # silently; at full speed that is a wait of about a millisecond, shorter than a time
                # slice of the thread that runs the awaited workgroup. And it ignores `volatile`: LLVM
                # hoists a volatile load out of a loop with no other memory access, which then never
                # sees the store it waits for. Each iteration first pauses (64 atomics, about half a
                # microsecond, after which no load can be hoisted), so a wait may last tens of
                # milliseconds before the driver cuts it short.
                self.fence_word = True
                self.put(depth + 1, f"{self.helper('pause', T.u32, word=FENCE_WORD)}();", None)
            self.block(st.body, depth + 1)
            self.put(depth, "}", None)
        finally:
            self.break_flags.pop()

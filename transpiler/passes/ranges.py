"""Integer value ranges of expressions, read off the expression alone (no data flow): enough
to see that ``t * 4 + 1`` of a thread index, or the sum of two widened i16 values, cannot
overflow its type. C-family targets spell signed arithmetic that might overflow through
unsigned arithmetic (C++ leaves signed overflow undefined, and NVVM and clang optimize on
that); what this proves in range keeps its plain, readable spelling."""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir import types as T
from ..ir import walk
from ..ir.memo import per_kernel

Range = tuple[int, int]

# Hardware indices: a block has at most 1024 threads; grid sizes and block numbers fit in i32.
_THREAD_KINDS = {"thread_idx": (0, 1023), "block_dim": (1, 1024)}
_I32 = (0, 2**31 - 1)


def type_range(t: T.DType) -> Range:
    if t.kind == "uint" or t is T.bool_:
        return (0, 1 if t is T.bool_ else 2**t.bits - 1)
    return (-(2 ** (t.bits - 1)), 2 ** (t.bits - 1) - 1)


def value_range(e: ir.Expr) -> Range | None:
    """Bounds every value of integer expression ``e`` lies within, or None when unknown."""
    t = e.type
    if not (t.is_int or t is T.bool_):
        return None
    cls = type(e)  # (none of these node classes has a subclass: one dispatch by class)
    if cls is ir.Const:
        v = int(e.value)
        return (v, v)
    if cls is ir.BinOp:
        return _within(_binop(e), t)
    if cls is ir.LocalRef:
        if e.var.bounds is not None:
            return e.var.bounds
        if e.var.nonneg:
            return (0, type_range(t)[1])
    elif cls is ir.ThreadIndex:
        return _THREAD_KINDS.get(e.kind, _I32)
    elif cls is ir.Shape:
        return _I32
    elif cls is ir.Compare or cls is ir.Logical:
        return (0, 1)
    elif cls is ir.Cast:
        if not (e.a.type.is_int or e.a.type is T.bool_):
            return None  # from a float: any value
        return _within(value_range(e.a) or type_range(e.a.type), t)
    elif cls is ir.Select:
        a, b = value_range(e.a), value_range(e.b)
        return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
    elif cls is ir.Unary and e.op == "neg":
        r = value_range(e.a) or type_range(e.a.type)
        return _within((-r[1], -r[0]), t)
    return _within(type_range(t), t) if t.bits < 32 else None


def loop_bounds(start: ir.Expr, stop: ir.Expr, sign: int, t: T.DType) -> Range | None:
    """The values a loop variable of type ``t`` takes over ``range(start, stop, step)`` with a
    step of ``sign`` (1, -1; 0: unknown), where the bounds' ranges say; None when a range is
    unknown, leaves ``t``, or is empty (the body sees no value then)."""
    a, b = value_range(start), value_range(stop)
    if a is None or b is None or sign == 0:
        return None
    r = (a[0], b[1] - 1) if sign > 0 else (b[0] + 1, a[1])
    return _within(r, t) if r[0] <= r[1] else None


def in_range(e: ir.Expr) -> bool:
    """Whether ``e`` (an integer expression) provably never leaves its type's range."""
    r = value_range(e)
    return r is not None


def _within(r: Range | None, t: T.DType) -> Range | None:
    lo, hi = type_range(t)
    return r if r is not None and lo <= r[0] and r[1] <= hi else None


def _binop(e: ir.BinOp) -> Range | None:
    a, b = value_range(e.a), value_range(e.b)
    if e.op == "truncmod" and b is not None and b[0] > 0:  # bounded by the divisor alone
        a = a or type_range(e.a.type)
    if e.op == "bitand":  # a non-negative mask bounds the result whatever the other side is
        masks = [r for r in (a, b) if r is not None and r[0] >= 0]
        return (0, min(r[1] for r in masks)) if masks else None
    if a is None or b is None:
        return None
    if e.op == "add":
        return (a[0] + b[0], a[1] + b[1])
    if e.op == "sub":
        return (a[0] - b[1], a[1] - b[0])
    if e.op == "mul":
        corners = [x * y for x in a for y in b]
        return (min(corners), max(corners))
    if e.op == "mod" and b[0] > 0:  # Python's %: the divisor's sign
        return (0, b[1] - 1)
    if e.op == "truncmod" and b[0] > 0:  # C's %: the dividend's sign
        return (-(b[1] - 1) if a[0] < 0 else 0, b[1] - 1 if a[1] > 0 else 0)
    if e.op == "truncdiv" and b[0] > 0:
        corners = [int(x / y) for x in a for y in b]
        return (min(corners), max(corners))
    if e.op == "floordiv" and b[0] > 0:
        corners = [x // y for x in a for y in b]
        return (min(corners), max(corners))
    if e.op == "rshift" and a[0] >= 0 and b[0] >= 0:
        return (a[0] >> b[1], a[1] >> b[0])
    return None


# ----------------------------------------------------------------------------- index space

_ADDITIVE = frozenset(("add", "sub", "mul"))


def additive(e: ir.Expr) -> bool:
    """+, - or * of two values, or a negation: what index arithmetic is made of."""
    cls = type(e)  # (BinOp and Unary have no subclasses)
    return (cls is ir.BinOp and e.op in _ADDITIVE) or (cls is ir.Unary and e.op == "neg")


# An expression class's sub-expression fields, and its lists of them with whether the list
# is an array's subscripts (index space), for _reads' visitor.
_CHILDREN: dict[type, tuple[tuple[str, ...], tuple[tuple[str, bool], ...]]] = {}


def _children(cls: type) -> tuple[tuple[str, ...], tuple[tuple[str, bool], ...]]:
    fs = walk.fields_of(cls)
    hit = _CHILDREN[cls] = (fs.exprs, tuple((f, f == "indices") for f in fs.expr_lists))
    return hit


def _extent(e: ir.Expr) -> bool:
    return isinstance(e, ir.Shape) or (isinstance(e, ir.Cast) and isinstance(e.a, ir.Shape))


def index_roots(node: ir.Expr | ir.Stmt) -> list[tuple[ir.Expr, bool]]:
    """(sub-expression, whether it is index space) for each direct sub-expression of a node:
    array subscripts, a loop's bounds, and the side of a comparison with an array extent (a
    bounds check) are; the sum of products above them stays so (see ``_reads``)."""
    fs = walk.fields_of(type(node))
    out = []
    for f in fs.exprs:
        e = getattr(node, f)
        if e is not None:
            out.append((e, isinstance(node, ir.For) and f in ("start", "stop")))
    for f in fs.expr_lists:
        out.extend((e, f == "indices") for e in getattr(node, f))
    if isinstance(node, ir.Compare) and (_extent(node.a) or _extent(node.b)):
        out = [(e, True) for e, _ in out]
    return out


@per_kernel  # an entry's or a function's body, the same list for every target (tasks.task_loop)
def index_locals(stmts: list[ir.Stmt]) -> frozenset[int]:
    """ids of the integer locals read only in index space (subscripts, loop bounds, bounds
    checks, or the values of other such locals) and whose values reach one of those: they
    are index arithmetic too, where overflow means out of bounds whatever the spelling. A
    local no subscript, bound or check ever uses (never read, or read only by others like it)
    is not one: its value must still be computed without overflow (fuzz seeds 102539, 8457)."""
    assigned: dict[int, ir.Local] = {}
    # What each statement's expressions say, once: (plain reads, reads by a root itself, reads
    # by the top sum of products of the value a statement gives its integer local). Counted as
    # index space, those last feed the local; counted as plain, they are plain reads.
    facts = []
    for st in walk.all_stmts(stmts):
        owner = None
        if isinstance(st, (ir.Declare, ir.Assign)) and st.var.type.is_int:
            owner = id(st.var)
            assigned[owner] = st.var
        plain, used, chain = _reads(index_roots(st), owner is not None)
        facts.append((owner, owner is not None and st.var.loop_var, plain, used, chain))
    index = set(assigned)
    while True:
        plain = set()
        used = set()                         # read in a subscript, bound or check itself
        feeds: dict[int, set[int]] = {}      # a local -> the locals its definitions read
        for owner, loop_var, p, u, chain in facts:
            plain |= p
            used |= u
            if chain:
                if loop_var or owner in index:
                    feeds.setdefault(owner, set()).update(chain)
                else:
                    plain |= chain
        reaching, todo = set(), list(used)
        while todo:
            v = todo.pop()
            if v not in reaching:
                reaching.add(v)
                todo.extend(feeds.get(v, ()))
        kept = (index & reaching) - plain
        if kept == index:
            return frozenset(index)
        index = kept


def _reads(roots: list[tuple[ir.Expr, bool]], defines: bool) -> tuple[set, set, set]:
    """The locals a statement's expressions read: outside index space, by an index root itself,
    and (when the statement defines an integer local) in the + - * chain at the top of a value
    that is not a root, which is index space exactly when that local is."""
    plain: set[int] = set()
    used: set[int] = set()
    chain: set[int] = set()

    for e, root in roots:
        _visit(e, root or defines, root, plain, used, chain)
    return plain, used, chain


def _visit(e: ir.Expr, in_index: bool, by_root: bool, plain: set, used: set, chain: set) -> None:
    """_reads' walk (a module function, not a closure over itself: a closure that calls itself
    is a reference cycle left for the collector, once per statement)."""
    cls = type(e)
    if cls is ir.LocalRef:
        if not in_index:
            plain.add(id(e.var))
        elif by_root:
            used.add(id(e.var))
        else:
            chain.add(id(e.var))
        return
    if cls is ir.Const:
        return
    # index_roots written out for an expression (this is the hot loop). Index space
    # reaches a child only through + - * and negation: a `%`, shift or call uses the
    # wrapped value (a hash).
    exprs, lists = _CHILDREN.get(cls) or _children(cls)
    check = cls is ir.Compare and (_extent(e.a) or _extent(e.b))
    if check:
        below = below_root = True
    elif (cls is ir.BinOp and e.op in _ADDITIVE) or (cls is ir.Unary and e.op == "neg"):
        below, below_root = in_index, by_root
    else:
        below = below_root = False
    for f in exprs:
        c = getattr(e, f)
        if c is not None:
            _visit(c, below, below_root, plain, used, chain)
    for f, indices in lists:
        root = check or indices
        for c in getattr(e, f):
            _visit(c, root or below, root or below_root, plain, used, chain)


"""IR nodes: typed expressions and statements in structured control flow.

Every node carries the source location it came from, so diagnostics, comments in the
output and toolchain messages all point back at the user's Python line. SIMT
primitives are their own nodes with explicit kinds, never strings of target code.
"""
from __future__ import annotations


from .records import record, field
from .types import DType, NdarrayType, SharedArrayType


@record(frozen=True, slots=True)
class Loc:
    file: str   # the path as the user gave it
    line: int
    col: int    # 0-based, as in Python's ast

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


# ----------------------------------------------------------------------------- values

@record(eq=False, slots=True)
class Local:
    """A kernel-local variable. ``name`` is the user's name; targets may rename it."""

    name: str
    type: DType
    loc: Loc
    loop_var: bool = False  # Python ignores assignments to it between iterations; C would not
    nonneg: bool = False    # known >= 0 (loop variables over non-negative ranges)
    # (lowest, highest) value it can hold, where its one definition says (a loop variable: its
    # range; a local assigned once: its value's range, passes/ranges.py), else None
    bounds: tuple[int, int] | None = None


@record(eq=False, slots=True)
class Param:
    """A kernel parameter: a scalar, or an ndarray with its shape."""

    name: str
    type: DType | NdarrayType
    index: int
    loc: Loc
    # An ndarray on NVSHMEM's symmetric heap (``qd.shmem.symmetric``): the same object on
    # every PE, so a PE can name another PE's copy. The host must allocate it with nvshmem_malloc.
    symmetric: bool = False
    # "arg": a parameter the user wrote. The kernel's own storage, bound like a 0-d ndarray
    # after them: "scratch" holds a kernel-scope variable that several tasks share (a
    # reduction's total, a value a serial part computes for later tasks), "result" the
    # value the kernel returns. "grad" / "dual": the .grad / .dual of the ndarray parameter
    # named by ``of`` (a qd.ndarray made with needs_grad=True / needs_dual=True).
    role: str = "arg"
    of: str = ""
    # An ndarray annotated needs_grad=False: no adjoint or tangent in the kernel's derivative.
    differentiable: bool = True

    @property
    def is_array(self) -> bool:
        return isinstance(self.type, NdarrayType)

    @property
    def hidden(self) -> bool:
        return self.role != "arg"


@record(eq=False, slots=True)
class SharedArray:
    """A block-shared array declared in a task (``qd.simt.block.SharedArray``)."""

    name: str
    type: SharedArrayType
    loc: Loc


Array = Param | SharedArray


def space_of(array: Array) -> str:
    """The memory an array lives in, as the atomics tables name it: "global" or "shared"."""
    return "shared" if isinstance(array, SharedArray) else "global"


# ----------------------------------------------------------------------------- expressions

@record(eq=False, slots=True)
class Expr:
    type: DType
    loc: Loc


@record(eq=False, slots=True)
class Const(Expr):
    value: int | float | bool


@record(eq=False, slots=True)
class LocalRef(Expr):
    var: Local


@record(eq=False, slots=True)
class ParamRef(Expr):
    param: Param


@record(eq=False, slots=True)
class Shape(Expr):
    """``a.shape[dim]`` of an ndarray parameter (always i32)."""

    array: Param
    dim: int


@record(eq=False, slots=True)
class Load(Expr):
    array: Array
    indices: list[Expr]


BINARY_OPS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
              "lshift", "rshift", "bitand", "bitor", "bitxor",
              "truncdiv", "truncmod")  # C's / and % on integers, for indices known non-negative
COMPARE_OPS = ("lt", "le", "gt", "ge", "eq", "ne")


@record(eq=False, slots=True)
class BinOp(Expr):
    """Arithmetic on two operands already converted to ``type`` (Python semantics)."""

    op: str
    a: Expr
    b: Expr


@record(eq=False, slots=True)
class Compare(Expr):
    """A comparison of two operands of one type; the result is ``bool``."""

    op: str
    a: Expr
    b: Expr


@record(eq=False, slots=True)
class Logical(Expr):
    """Short-circuit ``and`` / ``or`` on booleans."""

    op: str  # "and" | "or"
    a: Expr
    b: Expr


@record(eq=False, slots=True)
class Unary(Expr):
    op: str  # "neg" | "not" | "invert"
    a: Expr


@record(eq=False, slots=True)
class Cast(Expr):
    a: Expr


@record(eq=False, slots=True)
class Select(Expr):
    """``a if cond else b``: only the chosen side is evaluated."""

    cond: Expr
    a: Expr
    b: Expr


MATH_FUNCS = {
    # name: number of arguments; all of them float -> float unless noted in the frontend
    "sqrt": 1, "rsqrt": 1, "exp": 1, "log": 1, "sin": 1, "cos": 1, "tan": 1,
    "asin": 1, "acos": 1, "atan": 1, "sinh": 1, "cosh": 1, "tanh": 1,
    "floor": 1, "ceil": 1, "round": 1, "trunc": 1, "abs": 1, "atan2": 2, "pow": 2,
    "min": 2, "max": 2,
    # integer bit helpers, -> i32
    "popcnt": 1, "clz": 1, "ffs": 1,
    # float -> bool
    "isnan": 1,
}


@record(eq=False, slots=True)
class Math(Expr):
    fn: str
    args: list[Expr]


THREAD_INDICES = ("thread_idx", "block_idx", "block_dim", "grid_dim", "global_thread_idx", "grid_stride")


@record(eq=False, slots=True)
class ThreadIndex(Expr):
    """A hardware index along x: the thread in its block, the block, sizes; always i32."""

    kind: str


ATOMIC_OPS = ("add", "sub", "mul", "min", "max", "and", "or", "xor", "exchange", "cas")


@record(eq=False, slots=True)
class Atomic(Expr):
    """An atomic read-modify-write on a memory element; evaluates to the old value.

    ``type`` is the type the memory is accessed as: the element type, or (after CAS
    legalization) the unsigned integer of the same width when the element is a float."""

    op: str
    array: Array
    indices: list[Expr]
    value: Expr
    expected: Expr | None = None  # only for "cas": atomic_cas(x, expected, value)

    @property
    def reinterpreted(self) -> bool:
        return self.type != self.array.type.dtype


SUBGROUP_OPS = {
    # op: result type rule ("value" = the first argument's type)
    "invocation_id": "i32", "shuffle": "value", "shuffle_up": "value", "shuffle_down": "value",
    "shuffle_xor": "value", "broadcast": "value", "ballot": "u64", "all": "bool", "any": "bool",
    "reduce_add": "value", "reduce_min": "value", "reduce_max": "value",
    "inclusive_add": "value", "inclusive_min": "value", "inclusive_max": "value",
    "exclusive_add": "value", "exclusive_min": "value", "exclusive_max": "value",
    # Scans Quadrants has with these operators too: native on Vulkan (and Metal's product),
    # a shuffle ladder elsewhere.
    **{f"{kind}_{op}": "value" for kind in ("inclusive", "exclusive") for op in ("mul", "and", "or", "xor")},
}


@record(eq=False, slots=True)
class SubgroupOp(Expr):
    """A collective over the lanes of a subgroup (warp / wavefront / SIMD-group). Every lane
    of the subgroup must execute it (uniform control flow). Reductions broadcast to all
    lanes; scans give each lane the fold of the lanes up to (excluding) itself."""

    op: str
    args: list[Expr]


@record(eq=False, slots=True)
class WarpOp(Expr):
    """CUDA's legacy warp intrinsics (``qd.simt.warp``): a vote, shuffle or match over the
    lanes named by a mask (args[0]), a ballot of the whole warp, the active mask, or
    ``__syncwarp`` (type VOID, in an ExprStmt). ``name`` is the Quadrants function, for
    messages. Only the lanes of the mask need to take part."""

    op: str
    name: str
    args: list[Expr]


BLOCK_VOTES = ("all", "any", "count")


@record(eq=False, slots=True)
class BlockVote(Expr):
    """``block.sync_{all,any,count}_nonzero(p)``: a block barrier that also folds a
    predicate over the block (i32 result, the same in every thread)."""

    op: str
    pred: Expr


@record(eq=False, slots=True)
class BitCast(Expr):
    """The bits of ``a`` read as ``type`` (same width)."""

    a: Expr


@record(eq=False, slots=True)
class VolatileLoad(Expr):
    """``qd.volatile_load(a[i])``: a load the compiler may not cache, hoist or merge."""

    array: Array
    indices: list[Expr]




@record(eq=False, slots=True)
class VectorLane(Expr):
    """Element ``index * width + lane`` of the 1-d ndarray ``array``, read as lane ``lane`` of
    its ``width``-element vector ``index``. On a target with vector loads the lanes of one
    vector share one 16-byte load, so the code must first check ``Aligned(array, 16)``; on
    the others it is the plain element (passes/vector_loads.py)."""

    array: Param
    index: Expr
    width: int
    lane: int


@record(eq=False, slots=True)
class Aligned(Expr):
    """Whether the first element of the ndarray ``array`` sits at a multiple of ``bytes``: a
    bool on a target with vector loads, False on the others (they read scalars anyway)."""

    array: Param
    bytes: int


@record(eq=False, slots=True)
class Clock(Expr):
    """``qd.clock_counter()``: the device's cycle counter (i64) where the thread stands. It is
    read every time: never folded, merged or moved out of a loop."""


@record(eq=False, slots=True)
class Call(Expr):
    """A call of the kernel's function ``function`` (a ``@qd.real_func`` instantiation, by
    name, so a pass that rewrites the function leaves every call valid). Type VOID when
    it returns nothing (then it is an ExprStmt). A function returning a vector, matrix or
    struct writes its scalars into ``outs``, locals of the caller (by reference); the
    locals it reads and updates (its ``inouts``: the caller's random stream) follow them."""

    function: str
    args: list[Expr]
    outs: list[Local] = field(default_factory=list)


# ----------------------------------------------------------------------------- statements

@record(eq=False, slots=True)
class Stmt:
    loc: Loc


@record(eq=False, slots=True)
class Declare(Stmt):
    var: Local
    init: Expr | None


@record(eq=False, slots=True)
class Assign(Stmt):
    var: Local
    value: Expr


@record(eq=False, slots=True)
class Store(Stmt):
    array: Array
    indices: list[Expr]
    value: Expr


@record(eq=False, slots=True)
class ExprStmt(Stmt):
    expr: Expr


@record(eq=False, slots=True)
class If(Stmt):
    cond: Expr
    then: list[Stmt]
    orelse: list[Stmt] = field(default_factory=list)


@record(eq=False, slots=True)
class For(Stmt):
    """``for var in range(start, stop, step)``; ``step_sign`` is +1 / -1 when known, else 0."""

    var: Local
    start: Expr
    stop: Expr
    step: Expr
    step_sign: int
    body: list[Stmt]


@record(eq=False, slots=True)
class While(Stmt):
    cond: Expr
    body: list[Stmt]


FENCE_SCOPES = ("subgroup", "block", "device", "system")


@record(eq=False, slots=True)
class Fence(Stmt):
    """A memory fence ordering this thread's accesses as seen by threads in ``scope``."""

    scope: str


BARRIER_SCOPES = ("subgroup", "block")


@record(eq=False, slots=True)
class Barrier(Stmt):
    """``block.sync()`` / ``subgroup.sync()``: every thread of the scope waits for the others;
    memory written before it is visible to the scope after it."""

    scope: str


@record(eq=False, slots=True)
class Break(Stmt):
    pass


@record(eq=False, slots=True)
class Continue(Stmt):
    pass


@record(eq=False, slots=True)
class Print(Stmt):
    """``print(...)`` in a kernel: the text ``chunks[0] args[0] chunks[1] ... chunks[-1]``
    (Python's formatting of each argument's value: the device's printf)."""

    chunks: tuple[str, ...]  # len(args) + 1 literal pieces, the end (a newline) included
    args: list[Expr]
    # Per argument, a printf spec without its length and conversion letter ("-08.3", "#"),
    # and the letter ("e", "x"; "" for the type's own), from an f-string's or format()'s
    # `{x:.3e}`; empty: every argument printed its type's way.
    specs: tuple[tuple[str, str], ...] = ()


@record(eq=False, slots=True)
class Return(Stmt):
    """``return`` from a function (``value`` None in one that returns nothing)."""

    value: Expr | None


@record(eq=False, slots=True)
class DeclareShared(Stmt):
    array: SharedArray


@record(eq=False, slots=True)
class Note(Stmt):
    """A comment in the emitted code, no effect: which lowering a library routine chose at
    translation (a tile wider than the subgroup, carried out through shared memory)."""

    text: str


# ----------------------------------------------------------------------------- NVSHMEM (qd.shmem)
#
# One node per NVSHMEM device routine. Operations that move data or take part in ordering
# are expressions of type VOID in an ExprStmt when they return nothing, so every generic
# walker (locals read, uniformity, legalization) sees their operands through ``args`` /
# ``indices``; fence, quiet and barrier_all have no operands and are statements.

VOID = DType("void", "void", 0)  # the type of an NVSHMEM call that returns nothing

# NVSHMEM_CMP_* in the order of NVSHMEM's enum (nvshmemi_cmp_type).
SHMEM_CMPS = ("eq", "ne", "gt", "le", "lt", "ge")
# Atomic routine -> whether it returns the old value. The operands in ``args`` after the
# target: fetch none; compare_swap (cond, value); the others (value).
SHMEM_ATOMICS = {"fetch_add": True, "add": False, "compare_swap": True, "swap": True, "fetch": True,
                 "set": False}


@record(eq=False, slots=True)
class ShmemMyPe(Expr):
    """``qd.shmem.my_pe()``: the calling PE's index in the job (i32, uniform)."""


@record(eq=False, slots=True)
class ShmemNPes(Expr):
    """``qd.shmem.n_pes()``: how many PEs the job has (i32, uniform)."""


@record(eq=False, slots=True)
class ShmemElement(Expr):
    """The address of ``array[indices]`` as an NVSHMEM routine takes it (the first element of
    a range for put/get); ``type`` is the element dtype."""

    array: Array
    indices: list[Expr]


@record(eq=False, slots=True)
class ShmemOp(Expr):
    """An NVSHMEM routine that reads or writes memory, here or on another PE: never dropped,
    merged or hoisted. ``args`` holds every operand, ShmemElement addresses first."""

    args: list[Expr]


def _operand(index: int) -> property:
    """A ShmemOp's operand named by its place in ``args`` (negative: from the end)."""
    return property(lambda self: self.args[index])


@record(eq=False, slots=True)
class ShmemTransfer(ShmemOp):
    """A range copied between PEs: args = [dest, source, count, pe] (ShmemElement, ShmemElement,
    Expr, Expr); ``nbi``: non-blocking, complete only at quiet."""

    nbi: bool = False
    dest = _operand(0)
    source = _operand(1)
    pe = _operand(3)


@record(eq=False, slots=True)
class ShmemPut(ShmemTransfer):
    """``put`` / ``put_nbi``: dest remote (symmetric), source local."""


@record(eq=False, slots=True)
class ShmemGet(ShmemTransfer):
    """``get`` / ``get_nbi``: dest local, source remote (symmetric)."""


@record(eq=False, slots=True)
class ShmemP(ShmemOp):
    """``p``: one element stored on another PE; args = [dest (symmetric), value, pe]."""

    dest = _operand(0)
    pe = _operand(2)


@record(eq=False, slots=True)
class ShmemG(ShmemOp):
    """``g``: one element read from another PE; args = [source (symmetric), pe]."""

    source = _operand(0)
    pe = _operand(1)


@record(eq=False, slots=True)
class ShmemAtomic(ShmemOp):
    """An atomic on a symmetric element of another PE (``op`` in SHMEM_ATOMICS); args =
    [target, *operands, pe]. Fetching ones evaluate to the old value, the others are VOID."""

    op: str = ""
    target = _operand(0)
    pe = _operand(-1)

    @property
    def operands(self) -> list[Expr]:
        return self.args[1:-1]


@record(eq=False, slots=True)
class ShmemWaitUntil(ShmemOp):
    """``wait_until(ivar, cmp, value)``: this thread waits until its own PE's symmetric
    ``ivar`` compares true (``cmp`` in SHMEM_CMPS); args = [ivar, value]."""

    cmp: str = "eq"
    ivar = _operand(0)


@record(eq=False, slots=True)
class ShmemFence(Stmt):
    """``qd.shmem.fence()``: this thread's operations to each PE are delivered in order
    (ordering of delivery, not completion)."""


@record(eq=False, slots=True)
class ShmemQuiet(Stmt):
    """``qd.shmem.quiet()``: every operation this thread issued is complete (visible)."""


@record(eq=False, slots=True)
class ShmemBarrierAll(Stmt):
    """``qd.shmem.barrier_all()``: all PEs wait for each other, after completing their
    outstanding operations; one calling thread per PE, in a collectively launched kernel."""


# ----------------------------------------------------------------------------- kernel

@record(eq=False, slots=True)
class Task:
    """One GPU entry point. A parallel task runs ``body`` once per index of ``ranges``
    (row-major over the dimensions) through a grid-stride loop; a serial task runs it
    on a single thread."""

    name: str
    kind: str                       # "parallel" | "serial"
    loop_vars: list[Local]          # one per range dimension (parallel only)
    ranges: list[tuple[Expr, Expr]]  # (begin, end) per dimension (parallel only)
    block_dim: int
    body: list[Stmt]
    loc: Loc
    shared: list[SharedArray] = field(default_factory=list)
    # Top-level locals the task reads, recomputed before its loop (they are pure values
    # of parameters and shapes, so every task can recompute them instead of sharing them).
    prelude: list[Stmt] = field(default_factory=list)
    # What every thread runs after its last iteration (a reduction's block fold and atomic).
    epilogue: list[Stmt] = field(default_factory=list)
    # A range bound reads device memory (e.g. a count in an ndarray): the host cannot size
    # the grid, so it launches a fixed grid and the grid-stride loop reads the bound first.
    dynamic: bool = False

    def extent(self) -> list[Expr]:
        return [end for _, end in self.ranges]

    def code(self) -> list[Stmt]:
        """Every statement of the task, in the order its entry point runs them."""
        return self.prelude + self.body + self.epilogue


@record(eq=False, slots=True)
class Function:
    """A ``@qd.real_func`` instantiation: a function of the target source, with scalar
    parameters and, where it returns a value, a scalar result. The ndarrays it reads and
    writes are the kernel's own parameters (bound at the call, one instantiation per
    binding); a target passes them, and their extents, as extra parameters where kernel
    parameters are not visible to every function."""

    name: str
    params: list[Local]
    result: DType | None
    body: list[Stmt]
    loc: Loc
    calls: tuple[str, ...] = ()  # the functions its body calls (directly), by name
    recursive: bool = False      # it calls itself, directly or through others
    forward: bool = False        # called before its definition: the source declares it first
    # A vector, matrix or struct result: its scalars, parameters the body assigns and the
    # caller passes its locals for (C++ references, GLSL `out` parameters); result is None.
    outputs: list[Local] = field(default_factory=list)
    # Parameters it reads and updates, passed by reference after the outputs (C++ `&`, GLSL
    # `inout`): the caller's random stream, when its body (or a function it calls) draws.
    inouts: list[Local] = field(default_factory=list)


@record(eq=False, slots=True)
class TaskLoop:
    """``while qd.graph.do_while(flag):`` at a kernel's top level: tasks ``first`` to
    ``stop - 1`` run, then run again while the 0-d i32 ndarray ``flag`` holds a nonzero value
    (a do-while: at least once). ``parent`` is the index of the loop it is written in."""

    first: int
    stop: int
    flag: Param
    loc: Loc
    parent: int | None = None


@record(eq=False, slots=True)
class Kernel:
    name: str
    file: str
    loc: Loc
    params: list[Param]
    tasks: list[Task]
    # The subgroup width the code was specialized to when it asked for one
    # (subgroup.group_size() folded to a constant); None when it did not.
    subgroup_size: int | None = None
    # Whether lowering looked at the width at all, known or not (a reduction folds by block
    # only at a known width that divides the block): then it is lowered again per width.
    width_sensitive: bool = False
    # The @qd.real_func instantiations its tasks call, each after every function it calls
    # (a recursion cycle aside): the order a C-like source defines them in.
    functions: list[Function] = field(default_factory=list)
    # The module storage each `role == "field"` parameter is bound to (a qd.field), by
    # parameter name: what the runtime passes for it.
    bindings: dict = field(default_factory=dict)
    # qd.graph.do_while loops over its tasks, outer loops before the loops inside them.
    loops: list[TaskLoop] = field(default_factory=list)
    # The frontend's located warnings (errors.Diagnostic): conversions that lose precision.
    diagnostics: list = field(default_factory=list)
    # A struct or tuple result: each result buffer's place in it ("a", "b.a", "1"), by param name.
    result_paths: dict = field(default_factory=dict)
    # Debug mode's checks, by number (frontend/debug_checks.py): where each is and how its
    # message is formatted from the values the `role == "assert"` buffer holds.
    asserts: list = field(default_factory=list)
    # Its print() sites, by number (passes/prints.py): how the host formats the records the
    # `role == "print"` buffer holds.
    prints: list = field(default_factory=list)

    def function(self, name: str) -> Function:
        return next(f for f in self.functions if f.name == name)

"""Python AST -> typed IR.

One pass does name resolution, compile-time evaluation (``qd.static``, globals,
templates), ``@qd.func`` inlining and type inference, so every node is created with its
final type. Scoping is C-like, as in Quadrants: a name first assigned inside a block
lives in that block.
"""
from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from contextlib import contextmanager

from .. import lang
from ..errors import Diagnostic, TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.evaluate import host_computable
from ..ir.walk import iter_expr
from ..lang.matrix import MatrixType
from ..lang.ops import ndrange_axes_problem
from ..lang.snode import SNode
from ..passes.prints import buffer_prints
from ..passes.ranges import loop_bounds
from .common import (
    ast_nodes, is_library, locals_assigned, locals_read, locals_read_expr, nonneg, target_nodes, without_docstring,
)
from .source import parse_function
from .values import CT, PRIVATE, ArrayHandle, KernelVar, MatrixValue, component_locals
from .calls import CallLowering
from .debug_checks import DebugCheckLowering
from .expressions import ExpressionLowering
from .kernel_scope import KernelScopeLowering
from .fields import FieldLowering, StructArray, struct_leaves
from .graph import GraphLowering
from .matrices import MatrixLowering
from .structs import StructLowering
from .real_funcs import RealFuncLowering
from .scopes import Scope, _FuncFrame
from .state import FunctionBody, SerialPart, TaskState
from .sparse import SparseLowering
from .statements import StatementLowering, StaticJump
from .tiles import TileLowering
from .top_level_calls import TopLevelCallLowering
from .derivative import derive


# A non-integer argument of qd.ndrange in a loop, refused in Quadrants' words.
NDRANGE_BOUND = "Every argument of ndrange should be an integer scalar or a tuple/list of (int, int)"



class _Swap:
    """``obj.attr`` set to ``value`` inside a ``with`` (which yields the value), the old one
    back afterwards, also when lowering raised: a class, not a generator context manager,
    as the lowering enters tens of these per kernel and a generator costs several times more."""
    __slots__ = ("obj", "attr", "value", "saved")

    def __init__(self, obj, attr: str, value):
        self.obj, self.attr, self.value = obj, attr, value

    def __enter__(self):
        self.saved = getattr(self.obj, self.attr)
        setattr(self.obj, self.attr, self.value)
        return self.value

    def __exit__(self, *exc) -> None:
        setattr(self.obj, self.attr, self.saved)

class KernelLowering(StatementLowering, ExpressionLowering, CallLowering, KernelScopeLowering, RealFuncLowering,
                     MatrixLowering, StructLowering, FieldLowering, SparseLowering, GraphLowering, TileLowering,
                     TopLevelCallLowering, DebugCheckLowering):
    """Lowers one kernel instantiation (template values fixed) to ``ir.Kernel``."""

    def __init__(self, kernel: lang.Kernel, template_args: dict[str, object] | None = None,
                 arg_types: dict[str, object] | None = None, subgroup_size: int | None = None):
        # Every attribute is created here. What lives as long as a body, a task or the serial
        # part is in a record of state.py; the rest lives as long as this translation.
        self.body = FunctionBody(Scope(None))
        self.task_state: TaskState | None = None  # the task being lowered; None between tasks
        self.serial = SerialPart()
        # The instantiation: the kernel, its fixed arguments, its source.
        self.kernel = kernel
        self.template_args = dict(template_args or {})
        self.arg_types = dict(arg_types or {})
        self.parsed = parse_function(kernel.fn)
        self.kernel_arg_names = {a.arg for a in self.parsed.node.args.args}
        self.frames: list[_FuncFrame] = [_FuncFrame(kernel.fn, self.parsed, "")]
        self.subgroup_size = subgroup_size  # the target's, when it is known at translation time
        self.subgroup_size_used = False     # whether the code depends on it (see ir.Kernel)
        self.width_consulted = False        # whether a decision looked at it, known or not
        # What the translation makes: the kernel's parameters, tasks and functions, its warnings.
        self.params: list[ir.Param] = []
        self.hidden_params: list[ir.Param] = []  # buffers the kernel needs that its signature does not name
        self.tasks: list[ir.Task] = []
        self.diagnostics: list[Diagnostic] = []
        self.seed_param: ir.Param | None = None  # qd.random: the launch's seed, once a draw needs it
        self.assert_param: ir.Param | None = None  # debug mode's report buffer, once a check needs it
        self.asserts: list[dict] = []
        self.reports: set[int] = set()             # ids of the statements that report a failed check
        # The kernel's body (kernel_scope.py): its scope, return, top-level values.
        self.kernel_scope: Scope | None = None
        self.return_type = None  # a DType or a vector / matrix type
        self.ended = False       # a `return` of nothing has ended the kernel
        self.result_param: ir.Param | None = None
        self.result_paths: dict[str, str] = {}  # a struct / tuple result's buffers: param name -> "b.a", "1"
        self.static_top_loops = 0           # qd.static for loops in the kernel's body being unrolled
        self.static_nesting = 0             # qd.static ifs and loops around the kernel-body statement lowered
        self.returned_statically = False    # a `return` under one of them ended this instantiation
        self.uniform_defs: list[ir.Stmt] = []   # pure top-level assignments, copied into tasks
        self.top_level_locals: set[ir.Local] = set()
        self.serial_locals: dict[ir.Local, ir.Loc] = {}  # top-level locals serial tasks update, read by later ones
        self.promoted: dict[int, tuple[ir.Local, KernelVar]] = {}  # id(local) -> it, and the buffer it moved to
        # The next parallel loop: qd.loop_config's settings, a struct-for's guard.
        self.pending_block_dim: int | None = None
        self.pending_serialize = False
        self.pending_guard: SNode | None = None  # set by loop_ranges for a struct-for over sparse cells
        self.singleton_loop = False  # set by array_ranges for a loop over a 0-d array
        self.names_of_loop: tuple = (None, set(), {})  # only_updated's walk of the loop body it was for
        # Real functions (real_funcs.py).
        self.functions: list[ir.Function] = []                   # finished, callees first
        self.function_keys: dict[tuple, ir.Function] = {}        # signature -> instantiation
        self.function_stack: list[ir.Function] = []              # being lowered, outermost first
        self.function_results: dict[str, object] = {}            # name -> its vector / matrix / struct result type
        self.function_calls: dict[str, list[str]] = {}           # name -> names it calls
        self.function_rngs: dict[str, ir.Local] = {}             # name -> its caller's random stream (an inout)
        # Fields and sparse levels (fields.py, sparse.py).
        self.field_params: dict[int, tuple[object, ir.Param]] = {}  # id(field) -> (field, its parameter)
        self.bindings: dict[str, object] = {}                       # parameter name -> field
        self.sparse_fields: dict[str, SNode] = {}  # field parameter name -> the level it is placed in
        self.visited: dict[int, set] = {}           # id(level) -> the loop variables of struct-fors over its cells
        # Graph kernels (graph.py).
        self.task_loops: list[ir.TaskLoop] = []
        self.graph_parent: int | None = None  # the loop whose body is being lowered
        self.graph_region: str | None = None  # inside qd.graph.parallel_context(): "context", then "section"

    # ------------------------------------------------------------------ helpers

    @property
    def frame(self) -> _FuncFrame:
        return self.frames[-1]

    def loc(self, node: ast.AST | ir.Loc) -> ir.Loc:
        # Code inlined from the project's own library (block reductions, scans, ...) is
        # attributed to the user's call: comments, diagnostics and hazards point there.
        site = self.body.library_site
        if site is not None:
            return site
        site = getattr(node, "_qd_loc", None)
        if site is not None:
            return site
        if isinstance(node, ir.Loc):
            return node
        return self.frame.parsed.loc(node)

    def error(self, node: ast.AST | ir.Loc, message: str, hint: str | None = None) -> TranspileError:
        loc = node if isinstance(node, ir.Loc) else self.loc(node)
        return TranspileError(message, loc, hint)

    def warn(self, node: ast.AST | ir.Loc, kind: str, message: str, hint: str | None = None) -> None:
        loc = node if isinstance(node, ir.Loc) else self.loc(node)
        d = Diagnostic("warning", kind, message, loc, hint)
        if d not in self.diagnostics:  # a function inlined twice warns once
            self.diagnostics.append(d)

    def emit(self, stmt: ir.Stmt) -> None:
        if self.sparse_fields and type(stmt) is ir.Store and stmt.array.name in self.sparse_fields:
            stmt = ir.Store(stmt.loc, stmt.array, self.before_write(stmt.array, stmt.indices, stmt.loc), stmt.value)
        self.body.block.append(stmt)

    def collecting(self, into: list[ir.Stmt] | None = None) -> _Swap:
        """Statements emitted inside go to ``into`` (a fresh list by default), which it yields;
        the enclosing block is back afterwards, also when lowering raised."""
        return _Swap(self.body, "block", [] if into is None else into)

    def scoped(self, scope: Scope | None = None, task_root: bool = False) -> _Swap:
        """Names are looked up in ``scope`` (by default a new block scope inside the current
        one: names first assigned inside live inside); the current scope is back afterwards."""
        return _Swap(self.body, "scope", Scope(self.body.scope, task_root) if scope is None else scope)

    @contextmanager
    def loop_body(self) -> Iterator[None]:
        """The body of a serial loop: ``break`` and ``continue`` are allowed in it."""
        self.body.loop_depth += 1
        try:
            yield
        finally:
            self.body.loop_depth -= 1

    @contextmanager
    def static_jump_target(self, flag: ir.Local | None) -> Iterator[None]:
        """The one-iteration loop a qd.static loop's ``break``/``continue`` land in (``flag``:
        set by a break for the loop outside)."""
        self.body.static_jumps.append((self.body.loop_depth, flag))
        try:
            yield
        finally:
            self.body.static_jumps.pop()

    @contextmanager
    def task(self, state: TaskState | None = None) -> Iterator[list[ir.Stmt]]:
        """The body of a task being lowered, collected into ``state.stmts`` (by default a task
        of its own; the kernel's serial part goes on from one statement to the next and keeps
        its random stream); a ``state`` with ``parallel_ast``: a parallel loop, whose
        iterations are the task's threads. Yields the statements."""
        state = TaskState() if state is None else state
        outer, self.task_state = self.task_state, state
        parallel = self.body.in_parallel
        self.body.in_parallel = state.parallel_ast is not None
        try:
            with self.collecting(state.stmts) as body:
                yield body
        finally:
            self.task_state, self.body.in_parallel = outer, parallel

    @contextmanager
    def inlining(self, frame: _FuncFrame, scope: Scope, site: ir.Loc) -> Iterator[None]:
        """The body of ``frame``'s function, called at ``site``, inlined: its names are looked
        up in ``scope``. Library code is attributed to the user's call; an error in the user's
        own function gets a note for the call that led there."""
        saved_site = self.body.library_site
        library = is_library(frame.parsed.file)
        if library:
            self.body.library_site = site
        self.frames.append(frame)
        self.body.inline_stack.append(frame.fn)
        try:
            with self.scoped(scope):
                yield
        except TranspileError as exc:
            if not library and saved_site is None:
                exc.called_from(site, getattr(frame.fn, "__qualname__", frame.fn.__name__))
            raise
        finally:
            self.frames.pop()
            self.body.inline_stack.pop()
            self.body.library_site = saved_site

    def declaring(self) -> _Swap:
        """Collects the result variables the inlined function's returns declare (they go
        before the call, in the caller's block)."""
        return _Swap(self.body, "frame_declares", [])

    @contextmanager
    def function_body(self, frame: _FuncFrame, scope: Scope) -> Iterator[list[ir.Stmt]]:
        """A real function's body, lowered on its own: a fresh block, outside every loop, task
        and inlined call of the caller; yields the block."""
        outer, self.body = self.body, FunctionBody(scope)
        self.frames.append(frame)
        self.function_stack.append(frame.function)
        try:
            yield self.body.block
        finally:
            self.function_stack.pop()
            self.frames.pop()
            self.body = outer

    def lower_block(self, stmts: list[ast.stmt], new_scope: bool = True) -> list[ir.Stmt]:
        # collecting() and scoped() written out: this runs for every block of every kernel.
        state = self.body
        saved_block, saved_scope = state.block, state.scope
        state.block = body = []
        if new_scope:
            state.scope = Scope(saved_scope)
        try:
            for s in stmts:
                self.stmt(s)
        finally:
            state.block = saved_block
            if new_scope:
                state.scope = saved_scope
        return body

    # ------------------------------------------------------------------ kernel

    def run(self) -> ir.Kernel:
        fdef = self.parsed.node
        loc = self.loc(fdef)
        self.bind_params(fdef)
        body = without_docstring(fdef)
        with self.scoped() as self.kernel_scope:
            self.top_level(body)
            self.flush_serial()
        if self.return_type is not None and self.result_param is None:
            shown = self.return_type.name if isinstance(self.return_type, T.DType) else repr(self.return_type)
            raise self.error(fdef.returns, f"Kernel has a return type but does not have a return statement: it "
                                           f"is annotated to return {shown} but never returns a value",
                             hint="end it with `return VALUE`")
        if not self.tasks:
            # Nothing it does is visible (`if qd.static(False): ...`, only locals): one empty
            # serial task, so that it has an entry point to launch, as Quadrants runs it.
            self.tasks.append(ir.Task("", "serial", [], [], 1, [], loc))
        names = [f"{self.kernel.__name__}_{k}" for k in range(len(self.tasks))] \
            if len(self.tasks) > 1 else [self.kernel.__name__]
        for task, name in zip(self.tasks, names, strict=False):
            task.name = name
        if self.debug_checks():
            for task in self.tasks:
                self.add_task_bounds_checks(task)
        for k, p in enumerate(self.hidden_params, start=len(self.params)):
            p.index = k
        return ir.Kernel(self.kernel.__name__, self.parsed.file, loc, self.params + self.hidden_params, self.tasks,
                         self.subgroup_size if self.subgroup_size_used else None,
                         self.subgroup_size_used or self.width_consulted, self.functions, self.bindings,
                         self.task_loops, self.diagnostics, self.result_paths, self.asserts)

    def bind_params(self, fdef: ast.FunctionDef) -> None:
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error(fdef, "kernels take plain positional parameters only")
        try:
            annotations = inspect.get_annotations(self.kernel.fn, eval_str=True)
        except Exception as exc:  # noqa: BLE001 - any failure evaluating user annotations
            raise self.error(fdef, f"cannot evaluate the parameter annotations: {exc}") from None
        self.return_type = self.return_annotation(fdef, annotations)
        index = 0
        for a in args.args:
            loc = self.loc(a)
            given = self.arg_types.get(a.arg)
            ann = lang.self_annotation(self.kernel.fn, a.arg, annotations.get(a.arg, given))
            if ann is None:
                raise self.error(a, f"parameter `{a.arg}` has no type annotation",
                                 hint=f"annotate it, e.g. `{a.arg}: qd.f32` or "
                                      f"`{a.arg}: qd.types.ndarray(dtype=qd.f32, ndim=1)`")
            kind = lang.param_kind(ann)
            if kind == "ndarray" and a.arg in self.template_args and self.template_args[a.arg] is None:
                kind = "template"  # None for a qd.Tensor / ndarray parameter: a translation-time None
            if kind == "ndarray" and isinstance(self.template_args.get(a.arg), (lang.field.Field,
                                                                              lang.field.StructField)):
                kind = "template"  # a field passed for a qd.Tensor / ndarray parameter: bound as the field
            if kind == "template" and isinstance(given, lang.NdarrayAnnotation):
                kind, ann = "ndarray", given  # an ndarray passed to a qd.template() parameter
            elif kind == "template":
                if a.arg not in self.template_args and not any(
                        isinstance(n, ast.Name) and n.id == a.arg for st in fdef.body for n in ast.walk(st)):
                    continue  # never used: every value gives the same code
                if a.arg not in self.template_args:
                    raise self.error(a, f"template parameter `{a.arg}` needs a value",
                                     hint=f"pass template_args={{'{a.arg}': ...}} to qd.translate "
                                          f"(on the command line: --template {a.arg}=VALUE)")
                self.body.scope.names[a.arg] = self.module_object(CT(self.template_args[a.arg]), a.arg, a)
                continue
            if kind == "scalar":
                # Python's int and float are the default types; a bool flag travels as an i32.
                dtype = T.i32 if ann is bool else (T.python_type(ann) or ann)
                p = ir.Param(a.arg, dtype, index, loc)
                self.body.scope.names[a.arg] = p
            elif kind == "ndarray":
                p = ir.Param(a.arg, self.ndarray_type(a, lang.ndarray_annotation(ann), given), index, loc,
                             symmetric=getattr(ann, "symmetric", False),
                             differentiable=getattr(ann, "needs_grad", None) is not False)
                self.body.scope.names[a.arg] = ArrayHandle(p)
            elif kind in ("compound", "dataclass"):
                value, params = self.bind_compound(a, a.arg, ann, index)
                self.body.scope.names[a.arg] = value
                self.params.extend(params)
                index += len(params)
                continue
            else:
                raise self.error(a, f"parameter `{a.arg}` has an unsupported annotation {ann!r}",
                                 hint="use a scalar type (qd.i32, int, float), qd.types.ndarray(...) / "
                                      "qd.types.NDArray[dtype, ndim], a vector, matrix or struct type, or "
                                      "qd.template()")
            self.params.append(p)
            index += 1

    def ndarray_type(self, a: ast.arg, ann: lang.NdarrayAnnotation, given) -> T.NdarrayType:
        """The type of an ndarray parameter: its annotation, completed by the argument's dtype
        and ndim (``arg_types``: the call's, or --template NAME=DTYPE[:NDIM]) where it leaves
        them open."""
        dtype, ndim = ann.dtype, ann.ndim
        if isinstance(given, lang.NdarrayAnnotation):
            # (a vector / matrix element type takes its scalars' type from the argument's array)
            from_array = isinstance(given.dtype, MatrixType) and isinstance(dtype, MatrixType)
            dtype, ndim = given.dtype if from_array else dtype or given.dtype, ndim if ndim is not None else given.ndim
        dtype = T.python_type(dtype) or dtype
        element_shape = ann.element_shape or ()
        if isinstance(dtype, MatrixType):  # qd.types.ndarray(dtype=qd.math.vec3): vec3 elements
            element_shape = dtype.shape + tuple(element_shape)
            dtype = T.python_type(dtype.dtype) or dtype.dtype or T.defaults().fp
        if dtype is None or ndim is None:
            want = "a dtype" if ndim is not None else ("an ndim" if dtype is not None else "a dtype and ndim")
            spelled = f"qd.types.ndarray(dtype={dtype or 'qd.f32'}, ndim={1 if ndim is None else ndim})"
            raise self.error(a, f"ndarray parameter `{a.arg}` needs {want} to be translated: it comes from the "
                                "argument when the kernel is called",
                             hint=f"annotate it as {spelled}, or give it on the command line: "
                                  f"--template {a.arg}={getattr(dtype, 'name', 'f32')}:{1 if ndim is None else ndim}")
        if not isinstance(dtype, T.DType):
            raise self.error(a, f"ndarray parameter `{a.arg}` has an unsupported dtype {dtype!r}",
                             hint="use a numeric dtype such as qd.f32 or qd.i32")
        if dtype is T.bool_:  # NumPy's bool arrays: a byte per element
            if element_shape:
                raise self.error(a, f"ndarray parameter `{a.arg}`: vectors of qd.u1 are not supported yet",
                                 hint="use qd.u8 or qd.i32 components")
            return T.NdarrayType(T.u8, ndim, (), bool_elements=True)
        if not isinstance(ndim, int) or isinstance(ndim, bool) or ndim < 0:
            raise self.error(a, f"ndarray parameter `{a.arg}` has an invalid ndim {ndim!r}")
        if not all(isinstance(k, int) and k >= 1 for k in element_shape) or len(element_shape) > 2:
            raise self.error(a, f"ndarray parameter `{a.arg}` has an invalid element shape {element_shape!r}")
        return T.NdarrayType(dtype, ndim, tuple(element_shape))

    # ------------------------------------------------------------------ top level: tasks

    def top_level(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            if self.result_param is not None or self.ended:
                if self.static_nesting or self.returned_statically:
                    return  # `if qd.static(...): return x`: the rest is not this instantiation's code
                raise self.error(s, "code after the kernel's `return` never runs")
            if isinstance(s, (ast.Break, ast.Continue)) and self.static_top_loops:
                raise StaticJump("break" if isinstance(s, ast.Break) else "continue")
            if isinstance(s, ast.For):
                s = self.plain_loop(s)
            if isinstance(s, ast.Expr) and self.is_call_to(s.value, "loop_config"):
                self.loop_config(s.value)
            elif isinstance(s, ast.For) and not self.is_static_call(s.iter):
                self.flush_serial()
                self.parallel_for(s)
            elif isinstance(s, ast.For):  # static for at top level: its loops stay top-level
                self.static_for(s, top_level=True)
            elif isinstance(s, ast.If) and self.is_static_call(s.test):
                cond = self.static_value(s.test)
                self.static_nesting += 1
                try:
                    self.top_level(s.body if cond else s.orelse)
                finally:
                    self.static_nesting -= 1
                self.returned_statically = self.result_param is not None or self.ended
            elif isinstance(s, ast.If) and isinstance(s.test, (ast.Name, ast.Attribute)) and \
                    type(flag := self.named_value(s.test)) in (bool, int):
                # `if decompose:` on a template flag (Genesis): its loops stay top-level, parallel
                # tasks, as Quadrants folds the condition; lowered as a serial statement they would
                # run on one thread.
                self.top_level(s.body if flag else s.orelse)
            elif isinstance(s, ast.Pass):
                continue
            elif isinstance(s, ast.While) and self.is_call_to(s.test, "graph.do_while"):
                self.graph_loop(s)
            elif isinstance(s, ast.With) and len(s.items) == 1 and s.items[0].optional_vars is None and \
                    self.is_call_to(s.items[0].context_expr, "stream_parallel"):
                self.top_level(s.body)  # its loops in order: one of the schedules the streams allow
            elif isinstance(s, ast.With) and (kind := self.graph_section(s)) is not None:
                self.graph_fork(s, kind)
            elif (func := self.task_making_call(s)) is not None:
                self.top_level_call(func, s.value)
            elif self.is_uniform_assignment(s):
                before = len(self.body.block)
                self.stmt(s)
                new = self.body.block[before:]
                del self.body.block[before:]
                self.uniform_defs.extend(new)
                for st in new:
                    if isinstance(st, ir.Declare):
                        self.top_level_locals.add(st.var)
            else:
                self.serial_statement(s)

    def serial_statement(self, s: ast.stmt) -> None:
        if self.serial.loc is None:
            self.serial.loc = self.loc(s)
        with self.task(self.serial.task):
            self.stmt(s)
        for st in self.serial.stmts:
            if isinstance(st, ir.Declare):
                self.serial_locals.setdefault(st.var, st.loc)
                self.serial.declared.add(st.var)
        for var in locals_assigned(self.serial.stmts) & self.top_level_locals:
            self.serial_locals.setdefault(var, var.loc)

    def flush_serial(self) -> None:
        if not self.serial.stmts:
            return
        prelude = self.uniform_prelude(self.serial.stmts, [])
        self.tasks.append(ir.Task("", "serial", [], [], 1, self.serial.stmts, self.serial.loc, prelude=prelude))
        self.serial = SerialPart()

    def is_uniform_assignment(self, s: ast.stmt) -> bool:
        """A top-level assignment of a pure value to a plain name: recomputed in every task
        that reads it instead of becoming a serial task of its own."""
        if isinstance(s, ast.AnnAssign):
            target, value = s.target, s.value
        elif isinstance(s, ast.Assign) and len(s.targets) == 1:
            target, value = s.targets[0], s.value
        elif isinstance(s, ast.AugAssign):
            target, value = s.target, s.value
        else:
            return False
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        if value is None or not all(isinstance(t, ast.Name) for t in names):
            return False
        if isinstance(s, ast.AugAssign):
            bound, _ = self.body.scope.lookup(target.id)
            if not isinstance(bound, ir.Local) or bound not in self.top_level_locals:
                return False
        if any(isinstance(self.body.scope.lookup(t.id)[0], KernelVar) for t in names):
            return False  # it lives in the kernel's scratch buffer: a store, in order
        # A new value for a name code already read is no definition to hoist into the
        # tasks' preludes: that code must see the old value (r = 1; s[2] = r; r *= 0).
        # Nor for a name serial code declared or assigned: the tasks after it must see that value.
        # (A vector's, matrix's or struct's: each of its components' locals.)
        if any(var not in self.top_level_locals or var in self.serial_locals or self.read_so_far(var)
               for t in names for var in component_locals(self.body.scope.lookup(t.id)[0])):
            return False
        return self.is_pure(value)

    def read_so_far(self, var: ir.Local) -> bool:
        """Whether the serial code pending or any task lowered so far reads ``var``."""
        if var in locals_read(self.serial.stmts):
            return True
        for task in self.tasks:
            if var in locals_read(task.prelude + task.body) or any(
                    var in locals_read_expr(e) for bound in task.ranges for e in bound):
                return True
        return False

    def is_pure(self, node: ast.expr) -> bool:
        """No memory reads, atomics or calls other than known side-effect-free ones."""
        for sub in ast_nodes(node):
            if isinstance(sub, ast.Subscript):
                base = sub.value
                if isinstance(base, ast.Attribute) and base.attr == "shape":
                    continue
                return False
            if isinstance(sub, ast.Call):
                try:
                    f = self.expr(sub.func)
                except TranspileError:
                    return False
                fv = f.value if isinstance(f, CT) else None
                name = getattr(fv, "_qd_builtin", "")
                if name.startswith("atomic") or isinstance(fv, (lang.Func, lang.Kernel)):
                    return False
                if name.startswith("block.") or name in ("loop_config", "random", "randn"):
                    return False  # (a random draw advances the serial part's stream: it happens once, in order)
            if isinstance(sub, ast.Name):
                bound, _ = self.body.scope.lookup(sub.id)
                if isinstance(bound, KernelVar) or any(
                        v in self.serial_locals or id(v) in self.promoted for v in component_locals(bound)):
                    return False  # (a vector's or struct's too: fuzz seeds 6966, 7398)
        return True

    def uniform_prelude(self, body: list[ir.Stmt], extra_exprs: list[ir.Expr]) -> list[ir.Stmt]:
        """The top-level definitions ``body`` and ``extra_exprs`` (transitively) read."""
        if not self.uniform_defs:
            return []
        needed: set[ir.Local] = set()
        for e in extra_exprs:
            needed |= locals_read_expr(e)
        needed |= locals_read(body)
        needed |= locals_assigned(body)  # a serial task may only overwrite one: it must be declared
        picked: list[ir.Stmt] = []
        for st in reversed(self.uniform_defs):
            var = getattr(st, "var", None)  # Declare / Assign (a debug check beside them defines nothing)
            if var in needed:
                picked.append(st)
                value = st.init if isinstance(st, ir.Declare) else st.value
                if value is not None:
                    needed |= locals_read_expr(value)
        picked.reverse()
        return picked

    def loop_config(self, call: ast.Call, top_level: bool = True) -> None:
        """The next top-level loop's block size and whether it runs serially. Before an inner
        loop (Genesis writes one in functions it calls in a parallel loop) it changes nothing,
        as in Quadrants: inner loops run serially on their thread."""
        for kw in call.keywords:
            v = self.static_value(kw.value, what=f"qd.loop_config({kw.arg}=...)")
            if kw.arg == "block_dim":
                if not isinstance(v, int) or not 1 <= v <= 1024:
                    raise self.error(kw.value, f"block_dim must be an int in [1, 1024], got {v!r}")
                if top_level:
                    self.pending_block_dim = v
            elif kw.arg in ("serialize", "parallelize"):  # parallelize: CPU threads; 1 is serial
                if top_level and (bool(v) if kw.arg == "serialize" else v == 1):
                    self.pending_serialize = True
            elif kw.arg == "name":  # a label for Quadrants' profiler: the entry points keep their numbering
                if not isinstance(v, str):
                    raise self.error(kw.value, f"qd.loop_config(name=...) is a string, not {v!r}")
            elif kw.arg == "bit_vectorize":
                if v:
                    raise self.error(kw.value, "bit_vectorize applies to quantized arrays, which this transpiler does "
                                               "not support")
            else:
                raise self.error(kw.value, f"unknown qd.loop_config option `{kw.arg}`",
                                 hint="the options are block_dim, serialize, parallelize, name and bit_vectorize")
        if call.args:
            raise self.error(call, "qd.loop_config takes keyword arguments only")

    def parallel_for(self, s: ast.For) -> None:
        loc = self.loc(s)
        block_dim = self.pending_block_dim or 128
        # `for _ in range(1):` around code that updates the kernel's locals: Taichi's way to make
        # that code serial, which it is (one iteration, one thread)
        serialize = self.pending_serialize or self.serial_by_idiom(s)
        self.pending_block_dim, self.pending_serialize = None, False
        if s.orelse:
            raise self.error(s, "for/else is not supported in kernels")
        if serialize:
            with self.task() as body, self.scoped():
                self.stmt(s)
            prelude = self.uniform_prelude(body, [])
            self.tasks.append(ir.Task("", "serial", [], [], 1, body, loc, prelude=prelude))
            # A top-level local it updates is read by later tasks from a scratch buffer (see
            # serial_statement), not recomputed from its first, pure definition.
            for var in locals_assigned(body) & self.top_level_locals:
                self.serial_locals.setdefault(var, var.loc)
            return
        ranges, grouped = self.loop_ranges(s.iter, parallel=True)
        guard = self.take_guard()
        with self.scoped(task_root=True) as scope:
            bound = self.bind_loop_targets(s.target, ranges, grouped)
            for name in self.private_names(s):
                scope.names[name] = PRIVATE  # declared by its first assignment in the body
            loop_vars, ranges = self.loop_order(s.iter, bound, ranges)
            state = TaskState(loop_vars=loop_vars, parallel_ast=s.body, block_dim=block_dim)
            with self.task(state) as body:
                self.struct_for_guard(guard, bound, s)
                for st in s.body:
                    self.stmt(st)
                accumulators, epilogue = self.finish_reductions()
        bounds = [e for r in ranges for e in r]
        prelude = self.uniform_prelude(body + epilogue, bounds)
        ranges, dynamic = self.device_bounds(ranges, loop_vars, prelude)
        self.tasks.append(ir.Task("", "parallel", loop_vars, ranges, block_dim, body, loc,
                                  shared=state.shared, prelude=prelude + accumulators, epilogue=epilogue,
                                  dynamic=dynamic))

    def device_bounds(self, ranges: list, loop_vars: list[ir.Local], prelude: list[ir.Stmt]) -> tuple[list, bool]:
        """Bounds the host cannot compute (they read memory) are read once, first, by every
        thread (a local in ``prelude``); the task is then launched on a fixed grid."""
        env = {id(st.var): st.init for st in prelude if isinstance(st, ir.Declare) and st.init is not None}
        env.update({id(st.var): st.value for st in prelude if isinstance(st, ir.Assign)})
        out, dynamic = [], False
        for var, (begin, end) in zip(loop_vars, ranges, strict=False):
            pair = []
            for what, e in (("begin", begin), ("end", end)):
                if not host_computable(e, env):
                    dynamic = True
                    if isinstance(e, ir.LocalRef):  # already a top-level value the task computes first
                        pair.append(e)
                        continue
                    local = ir.Local(f"{var.name}_{what}", T.i32, e.loc)
                    prelude.append(ir.Declare(e.loc, local, e))
                    e = ir.LocalRef(T.i32, e.loc, local)
                pair.append(e)
            out.append(tuple(pair))
        return out, dynamic

    def bind_loop_targets(self, target: ast.expr, ranges: list, grouped: bool) -> list[ir.Local]:
        """The loop variables, one per dimension, bound in the current scope: each to its
        name, or (qd.grouped) together as one integer vector."""
        singleton, self.singleton_loop = self.singleton_loop, False
        if singleton and not grouped:
            raise self.error(target, "a 0-d field or ndarray has no index to loop over",
                             hint="`for I in qd.grouped(x)` visits its one element, or read it as x[None]")
        if grouped:
            if not isinstance(target, ast.Name):
                raise self.error(target, "a qd.grouped loop has one loop variable, e.g. `for I in qd.grouped(a)`")
            names = [f"{target.id}_{d}" for d in range(len(ranges))]
            tnodes = [target] * len(ranges)
        else:
            names = self.loop_targets(target, len(ranges))
            tnodes = target_nodes(target)
        loop_vars = []
        for name, tnode, (begin, end) in zip(names, tnodes, ranges, strict=False):
            var = ir.Local(name, T.i32, self.loc(tnode), loop_var=True, bounds=loop_bounds(begin, end, 1, T.i32))
            var.nonneg = nonneg(begin)
            self.body.scope.names[name] = var
            loop_vars.append(var)
        if grouped:
            # An integer vector, as in Quadrants: `a[I]`, `I[0]`, `I + offset`, `(I / n).norm()`.
            self.body.scope.names[target.id] = MatrixValue((0,), []) if singleton else \
                MatrixValue((len(loop_vars),), [ir.LocalRef(T.i32, v.loc, v) for v in loop_vars])
        return loop_vars

    def loop_ranges(self, it: ast.expr, parallel: bool = False) -> tuple[list[tuple[ir.Expr, ir.Expr]], bool]:
        """The (begin, end) of every dimension a for loop iterates over, and whether its
        indices come grouped (``qd.grouped(...)``): range(...), qd.ndrange(...), an ndarray
        (``for i, j in a``: its shape), or qd.grouped of an ndrange or an ndarray."""
        bound = self.parallel_bound if parallel else self.index_expr
        what = "a top-level for loop" if parallel else "a for loop in a kernel"
        must = (f"{what} must iterate over range(...), qd.ndrange(...), an ndarray, qd.grouped(...)"
                + ("" if parallel else " or qd.static(...)"))
        if not isinstance(it, ast.Call):
            v = self.expr(it)
            if isinstance(v, StructArray):  # a field of structs: its members share one shape
                v = next(struct_leaves(v))
            if isinstance(v, ArrayHandle) and isinstance(v.array, ir.Param):
                f = self.field_of(v.array)
                if f is not None and f._snode is not None and f._snode.sparse:  # a struct-for: active elements
                    self.pending_guard = f._snode
                return self.array_ranges(v.array, it), False
            if isinstance(v, CT) and isinstance(v.value, SNode) and v.value.shape:  # `for i, j in blk`: its cells
                return self.snode_ranges(v.value, it), False
            raise self.error(it, must)
        f = self.expr(it.func)
        fv = f.value if isinstance(f, CT) else None
        if getattr(fv, "_qd_comptime", False) and not getattr(fv, "_qd_builtin", None):
            v = self.expr(it)  # `for i, j in x.parent()`: a level, named by a call known now
            if isinstance(v, CT) and isinstance(v.value, SNode) and v.value.shape:
                return self.snode_ranges(v.value, it), False
            raise self.error(it, must)
        if getattr(fv, "_qd_builtin", None) == "grouped":
            return self.grouped_ranges(it, parallel), True
        if it.keywords and getattr(fv, "_qd_builtin", None) != "ndrange":
            raise self.error(it, "range() takes no keyword arguments")
        if fv is range:
            if not parallel:
                raise self.error(it, "internal error: a serial range goes through serial_range")
            if not 1 <= len(it.args) <= 2:
                raise self.error(it, "a parallel range takes 1 or 2 arguments (a step is not supported)",
                                 hint="use range(begin, end) and scale the index in the body")
            args = [bound(a) for a in it.args]
            return ([(ir.Const(T.i32, args[0].loc, 0), args[0])] if len(args) == 1 else [(args[0], args[1])]), False
        if getattr(fv, "_qd_builtin", None) == "ndrange":
            ranges = []
            for a in it.args:
                if isinstance(a, ast.Tuple):
                    if len(a.elts) != 2:
                        raise self.error(a, "Every argument of ndrange should be a scalar or a tuple/list like "
                                            "(begin, end): an extent or a (begin, end) pair")
                    ranges.append((bound(a.elts[0], NDRANGE_BOUND), bound(a.elts[1], NDRANGE_BOUND)))
                else:
                    e = bound(a, NDRANGE_BOUND)
                    ranges.append((ir.Const(T.i32, e.loc, 0), e))
            if not ranges:
                raise self.error(it, "qd.ndrange needs at least one dimension")
            self.ndrange_axes(it, len(ranges))  # checked here; applied by loop_order
            return ranges, False
        raise self.error(it, must)

    def grouped_ranges(self, it: ast.Call, parallel: bool) -> list[tuple[ir.Expr, ir.Expr]]:
        """The dimensions of ``qd.grouped(x)``: those of ``x``."""
        if len(it.args) != 1 or it.keywords:
            raise self.error(it, "qd.grouped() takes one argument: an ndarray or a qd.ndrange(...)")
        arg = it.args[0]
        if isinstance(arg, ast.Call) and not arg.args and not arg.keywords \
                and getattr(self.static_callee(arg), "_qd_builtin", None) == "ndrange":
            # no dimensions: one iteration, I the empty index, as over a 0-d field (array_ranges)
            self.singleton_loop = True
            loc = self.loc(arg)
            return [(ir.Const(T.i32, loc, 0), ir.Const(T.i32, loc, 1))]
        inner, grouped = self.loop_ranges(arg, parallel)
        if grouped:
            raise self.error(arg, "qd.grouped() of qd.grouped() is not supported")
        return inner

    def ndrange_axes(self, it: ast.Call, n: int) -> list[int] | None:
        """``qd.ndrange(..., axes=(1, 0))``: the dimensions from the outermost (slowest-varying)
        iteration level to the innermost; None: the written order."""
        axes = None
        for kw in it.keywords:
            if kw.arg != "axes":
                raise self.error(kw.value, f"qd.ndrange takes dimensions and axes=, not {kw.arg}=")
            axes = self.static_value(kw.value, what="qd.ndrange(axes=...)")
            if axes is None:  # Quadrants' default: the written order
                continue
            problem = ndrange_axes_problem(axes, n)
            if problem is not None:
                raise self.error(kw.value, problem)
            axes = [a.__index__() for a in axes]
        return axes

    def loop_order(self, it: ast.expr, loop_vars: list[ir.Local], ranges: list) -> tuple[list, list]:
        """The loop variables and ranges from the outermost iteration level in, as
        ``axes=`` orders them (a grouped loop's ndrange included)."""
        if isinstance(it, ast.Call) and it.args and getattr(self.static_callee(it), "_qd_builtin", None) == "grouped":
            it = it.args[0]
        if not isinstance(it, ast.Call) or getattr(self.static_callee(it), "_qd_builtin", None) != "ndrange":
            return loop_vars, ranges
        axes = self.ndrange_axes(it, len(ranges))
        if axes is None:
            return loop_vars, ranges
        return [loop_vars[a] for a in axes], [ranges[a] for a in axes]

    def static_callee(self, call: ast.Call):
        f = self.expr(call.func)
        return f.value if isinstance(f, CT) else None

    def snode_ranges(self, snode: SNode, node: ast.AST) -> list[tuple[ir.Expr, ir.Expr]]:
        """``for i, j in blk``: every cell of the level (its active ones, for a sparse one)."""
        self.pending_guard = snode if snode.sparse else None
        loc = self.loc(node)
        return [(ir.Const(T.i32, loc, 0), ir.Const(T.i32, loc, n)) for n in snode.shape]

    def array_ranges(self, array: ir.Param, node: ast.AST) -> list[tuple[ir.Expr, ir.Expr]]:
        """``for i, j in a``: every index of the ndarray ``a``, row-major."""
        loc = self.loc(node)
        if array.type.ndim == 0:
            # `for I in qd.grouped(x)` over a 0-d field or ndarray: one iteration, I empty (x[I]
            # is x[None]), as in Quadrants; one dimension of extent 1 carries it
            self.singleton_loop = True
            return [(ir.Const(T.i32, loc, 0), ir.Const(T.i32, loc, 1))]
        shape = self.field_shape(array)
        if shape is not None:  # a field: its shape (and the index of its first element) is known now
            offset = self.field_offset(array) or (0,) * len(shape)
            return [(ir.Const(T.i32, loc, o), ir.Const(T.i32, loc, o + n)) for n, o in zip(shape, offset, strict=False)]
        return [(ir.Const(T.i32, loc, 0), ir.Shape(T.i32, loc, array, d)) for d in range(array.type.ndim)]

    def loop_targets(self, target: ast.expr, n: int) -> list[str]:
        nodes = target_nodes(target)
        if not all(isinstance(t, ast.Name) for t in nodes):
            raise self.error(target, "a loop variable must be a plain name")
        if len(nodes) != n:
            raise self.error(target, "Ndrange for loop with number of the loop variables not equal to the dimension "
                                     f"of the ndrange is not supported: the loop has {n} dimension(s) but "
                                     f"{len(nodes)} loop variable(s)")
        return [t.id for t in nodes]

    def index_expr(self, node: ast.expr, refusal: str = "a range bound must be an integer") -> ir.Expr:
        v = self.rvalue(node)
        if not v.type.is_int:
            raise self.error(node, f"{refusal}, not {v.type.name}")
        return self.coerce(v, T.i32, node)

    def parallel_bound(self, node: ast.expr, refusal: str = "a range bound must be an integer") -> ir.Expr:
        """A bound of a top-level loop: the host sizes the grid from it before launching, so
        it may use parameters, shapes and constants but not memory."""
        e = self.index_expr(node, refusal)
        if any(not isinstance(n, (ir.Const, ir.ParamRef, ir.Shape, ir.LocalRef, ir.BinOp, ir.Unary, ir.Cast,
                                  ir.Compare, ir.Logical, ir.Select, ir.Load, ir.VolatileLoad))
               and not (isinstance(n, ir.Math) and n.fn in ("min", "max", "abs")) for n in iter_expr(e)):
            raise self.error(node, "the range of a top-level (parallel) loop must be computable from parameters, "
                                   "shapes, constants and memory reads: every thread computes it before the loop",
                             hint="compute the count in an earlier loop and store it in an ndarray, then loop "
                                  "over `range(count[0])`")
        return e


def lower_kernel(kernel: lang.Kernel, template_args: dict | None = None,
                 arg_types: dict | None = None, subgroup_size: int | None = None) -> ir.Kernel:
    ir_kernel = KernelLowering(kernel, template_args, arg_types, subgroup_size).run()
    for task in ir_kernel.tasks:
        for array in task.shared:
            array.name = array.name or "shared"
    if kernel.autodiff is not None:
        ir_kernel = derive(ir_kernel, kernel.autodiff)
    return buffer_prints(ir_kernel)  # (after deriving, which drops them)


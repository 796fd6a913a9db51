"""Python AST -> typed IR.

One pass does name resolution, compile-time evaluation (``qd.static``, globals,
templates), ``@qd.func`` inlining and type inference, so every node is created with its
final type. Scoping is C-like, as in Quadrants: a name first assigned inside a block
lives in that block.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import math as pymath
import operator
import os
from functools import lru_cache
from typing import Callable

from .. import lang
from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.walk import iter_expr, stmt_bodies, stmt_exprs
from ..passes import fold
from .source import ParsedFunction, parse_function
from .values import CT, ArrayHandle, ShapeHandle, TupleValue

_BINOPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
    ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift",
    ast.BitAnd: "bitand", ast.BitOr: "bitor", ast.BitXor: "bitxor",
}
_PY_BINOPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "lshift": operator.lshift, "rshift": operator.rshift, "bitand": operator.and_,
    "bitor": operator.or_, "bitxor": operator.xor,
}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_PY_CMPOPS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
              "eq": operator.eq, "ne": operator.ne}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
           "pow": "**", "lshift": "<<", "rshift": ">>", "bitand": "&", "bitor": "|", "bitxor": "^"}
# Memory augmented assignments that Quadrants makes atomic.
_ATOMIC_AUGASSIGN = {"add": "add", "sub": "sub", "bitand": "and", "bitor": "or", "bitxor": "xor"}

# Python built-ins a kernel may call on translation-time values.
_CT_PY_CALLABLES = {range, len, builtins.min, builtins.max, builtins.abs, int, float, bool, tuple,
                    list, enumerate, zip, reversed, isinstance, sum}
_UNSUPPORTED_STMT = {
    ast.Try: "try/except", ast.With: "with", ast.ClassDef: "class definitions",
    ast.FunctionDef: "nested function definitions", ast.AsyncFunctionDef: "async functions",
    ast.Raise: "raise", ast.Import: "import", ast.ImportFrom: "import", ast.Global: "global",
    ast.Nonlocal: "nonlocal", ast.Delete: "del", ast.AsyncFor: "async for",
    ast.AsyncWith: "async with",
}
_UNSUPPORTED_EXPR = {
    ast.ListComp: "list comprehensions", ast.SetComp: "set comprehensions",
    ast.DictComp: "dict comprehensions", ast.GeneratorExp: "generator expressions",
    ast.Lambda: "lambdas", ast.Dict: "dicts", ast.Set: "sets", ast.List: "lists",
    ast.JoinedStr: "f-strings", ast.Await: "await", ast.Yield: "yield",
    ast.YieldFrom: "yield", ast.Starred: "starred arguments", ast.NamedExpr: "the := operator",
    ast.Slice: "slices",
}


class Scope:
    def __init__(self, parent: Scope | None, task_root: bool = False, isolated: bool = False):
        self.parent = parent
        self.names: dict[str, object] = {}
        self.task_root = task_root  # the outermost scope of a parallel loop body
        self.isolated = isolated    # an inlined function's root: the caller's names are not visible

    def lookup(self, name: str):
        scope = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name], scope
            if scope.isolated:
                break
            scope = scope.parent
        return None, None


class _FuncFrame:
    """Per inlined-function state: where names resolve and where ``return`` goes."""

    def __init__(self, fn: Callable, parsed: ParsedFunction, result_name: str):
        self.fn = fn
        self.parsed = parsed
        self.globals = fn.__globals__
        self.closure = _closure_vars(fn)
        self.result: ir.Local | None = None
        self.result_name = result_name
        self.returns_tuple: list[ir.Local] | None = None
        # How often each name is assigned in the function: a name assigned once keeps
        # what is known about its first value (e.g. that it is non-negative).
        self.stores: dict[str, int] = _store_counts(parsed.node)  # shared: read only


def _closure_vars(fn: Callable) -> dict[str, object]:
    code = fn.__code__
    if not fn.__closure__:
        return {}
    out = {}
    for name, cell in zip(code.co_freevars, fn.__closure__):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # not yet bound
            pass
    return out


def _weak_type(value: object) -> T.DType:
    """The type of a translation-time scalar: numpy scalars keep theirs, Python literals
    get the default int / float."""
    np_dtype = getattr(value, "dtype", None)
    if np_dtype is not None and getattr(value, "shape", None) == ():
        return T.from_numpy(np_dtype)
    return T.literal_type(value)


def _is_py_scalar(value: object) -> bool:
    if isinstance(value, (bool, int, float)):
        return True
    return getattr(value, "shape", None) == () and hasattr(value, "dtype")


class KernelLowering:
    """Lowers one kernel instantiation (template values fixed) to ``ir.Kernel``."""

    def __init__(self, kernel: lang.Kernel, template_args: dict[str, object] | None = None,
                 arg_types: dict[str, object] | None = None, subgroup_size: int | None = None):
        self.kernel = kernel
        self.subgroup_size = subgroup_size  # the target's, when it is known at translation time
        self.subgroup_size_used = False     # whether the code depends on it (see ir.Kernel)
        self.task_shared: list[ir.SharedArray] = []
        self.template_args = dict(template_args or {})
        self.arg_types = dict(arg_types or {})
        self.parsed = parse_function(kernel.fn)
        self.frames: list[_FuncFrame] = [_FuncFrame(kernel.fn, self.parsed, "")]
        self.block: list[ir.Stmt] = []
        self.scope = Scope(None)
        self.in_parallel = False
        self.loop_depth = 0         # serial loops inside the current task
        self.inline_stack: list[Callable] = []
        self.uniform_defs: list[ir.Stmt] = []   # pure top-level assignments, copied into tasks
        self.top_level_locals: set[ir.Local] = set()
        self.serial_locals: dict[ir.Local, ir.Loc] = {}
        self.tasks: list[ir.Task] = []
        self.pending_block_dim: int | None = None
        self.pending_serialize = False
        self.params: list[ir.Param] = []
        self.frame_declares: list[ir.Stmt] = []  # result variables of the function being inlined
        self.library_site: ir.Loc | None = None  # the user's call into library code, while inlining it

    # ------------------------------------------------------------------ helpers

    @property
    def frame(self) -> _FuncFrame:
        return self.frames[-1]

    def loc(self, node: ast.AST) -> ir.Loc:
        # Code inlined from the project's own library (block reductions, scans, ...) is
        # attributed to the user's call: comments, diagnostics and hazards point there.
        if self.library_site is not None:
            return self.library_site
        return self.frame.parsed.loc(node)

    def error(self, node: ast.AST | ir.Loc, message: str, hint: str | None = None) -> TranspileError:
        loc = node if isinstance(node, ir.Loc) else self.loc(node)
        return TranspileError(message, loc, hint)

    def emit(self, stmt: ir.Stmt) -> None:
        self.block.append(stmt)

    def push_scope(self, task_root: bool = False) -> None:
        self.scope = Scope(self.scope, task_root)

    def pop_scope(self) -> None:
        self.scope = self.scope.parent

    def lower_block(self, stmts: list[ast.stmt], new_scope: bool = True) -> list[ir.Stmt]:
        saved = self.block
        self.block = []
        if new_scope:
            self.push_scope()
        try:
            for s in stmts:
                self.stmt(s)
        finally:
            if new_scope:
                self.pop_scope()
            body, self.block = self.block, saved
        return body

    # ------------------------------------------------------------------ kernel

    def run(self) -> ir.Kernel:
        fdef = self.parsed.node
        loc = self.loc(fdef)
        self.bind_params(fdef)
        body = fdef.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        self.push_scope()
        self.serial: list[ir.Stmt] = []
        self.serial_loc: ir.Loc | None = None
        self.top_level(body)
        self.flush_serial()
        self.pop_scope()
        if fdef.returns is not None:
            raise self.error(fdef.returns, "kernels cannot return values",
                             hint="write the result into an ndarray parameter")
        names = [f"{self.kernel.__name__}_{k}" for k in range(len(self.tasks))] \
            if len(self.tasks) > 1 else [self.kernel.__name__]
        for task, name in zip(self.tasks, names):
            task.name = name
        if not self.tasks:
            raise TranspileError(f"kernel {self.kernel.__name__} does nothing", loc)
        return ir.Kernel(self.kernel.__name__, self.parsed.file, loc, self.params, self.tasks,
                         self.subgroup_size if self.subgroup_size_used else None)

    def bind_params(self, fdef: ast.FunctionDef) -> None:
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error(fdef, "kernels take plain positional parameters only")
        try:
            annotations = inspect.get_annotations(self.kernel.fn, eval_str=True)
        except Exception as exc:  # noqa: BLE001 - any failure evaluating user annotations
            raise self.error(fdef, f"cannot evaluate the parameter annotations: {exc}") from None
        index = 0
        for a in args.args:
            loc = self.loc(a)
            ann = self.arg_types.get(a.arg, annotations.get(a.arg))
            if ann is None:
                raise self.error(a, f"parameter `{a.arg}` has no type annotation",
                                 hint=f"annotate it, e.g. `{a.arg}: qd.f32` or "
                                      f"`{a.arg}: qd.types.ndarray(dtype=qd.f32, ndim=1)`")
            if isinstance(ann, lang.Template) or ann is lang.template:
                if a.arg not in self.template_args:
                    raise self.error(a, f"template parameter `{a.arg}` needs a value",
                                     hint=f"pass template_args={{'{a.arg}': ...}} to qd.translate")
                self.scope.names[a.arg] = CT(self.template_args[a.arg])
                continue
            if isinstance(ann, T.DType):
                p = ir.Param(a.arg, ann, index, loc)
                self.scope.names[a.arg] = p
            elif isinstance(ann, lang.NdarrayAnnotation):
                if ann.dtype is None or ann.ndim is None:
                    raise self.error(a, f"ndarray parameter `{a.arg}` needs a dtype and ndim to be translated",
                                     hint="annotate it as qd.types.ndarray(dtype=qd.f32, ndim=1)")
                if not isinstance(ann.dtype, T.DType) or ann.dtype is T.bool_:
                    raise self.error(a, f"ndarray parameter `{a.arg}` has an unsupported dtype {ann.dtype!r}")
                p = ir.Param(a.arg, T.NdarrayType(ann.dtype, int(ann.ndim)), index, loc,
                             symmetric=getattr(ann, "symmetric", False))
                self.scope.names[a.arg] = ArrayHandle(p)
            else:
                raise self.error(a, f"parameter `{a.arg}` has an unsupported annotation {ann!r}",
                                 hint="use a scalar type such as qd.i32, qd.types.ndarray(...), or qd.template()")
            self.params.append(p)
            index += 1

    # ------------------------------------------------------------------ top level: tasks

    def top_level(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            if isinstance(s, ast.Expr) and self.is_call_to(s.value, "loop_config"):
                self.loop_config(s.value)
            elif isinstance(s, ast.For) and not self.is_static_call(s.iter):
                self.flush_serial()
                self.parallel_for(s)
            elif isinstance(s, ast.For):  # static for at top level: its loops stay top-level
                self.static_for(s, top_level=True)
            elif isinstance(s, ast.If) and self.is_static_call(s.test):
                cond = self.static_value(s.test)
                self.top_level(s.body if cond else s.orelse)
            elif isinstance(s, ast.Pass):
                continue
            elif self.is_uniform_assignment(s):
                before = len(self.block)
                self.stmt(s)
                new = self.block[before:]
                del self.block[before:]
                self.uniform_defs.extend(new)
                for st in new:
                    if isinstance(st, ir.Declare):
                        self.top_level_locals.add(st.var)
            else:
                self.serial_statement(s)

    def serial_statement(self, s: ast.stmt) -> None:
        if self.serial_loc is None:
            self.serial_loc = self.loc(s)
        saved = self.block
        self.block = self.serial
        try:
            self.stmt(s)
        finally:
            self.block = saved
        for st in self.serial:
            if isinstance(st, ir.Declare):
                self.serial_locals.setdefault(st.var, st.loc)
        for var in _locals_assigned(self.serial) & self.top_level_locals:
            self.serial_locals.setdefault(var, var.loc)

    def flush_serial(self) -> None:
        if not self.serial:
            return
        prelude = self.uniform_prelude(self.serial, [])
        self.tasks.append(ir.Task("", "serial", [], [], 1, self.serial, self.serial_loc, prelude=prelude))
        self.serial = []
        self.serial_loc = None

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
            bound, _ = self.scope.lookup(target.id)
            if not isinstance(bound, ir.Local) or bound not in self.top_level_locals:
                return False
        return self.is_pure(value)

    def is_pure(self, node: ast.expr) -> bool:
        """No memory reads, atomics or calls other than known side-effect-free ones."""
        for sub in _walk(node):
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
                if name.startswith("block.") or name in ("loop_config",):
                    return False
            if isinstance(sub, ast.Name):
                bound, _ = self.scope.lookup(sub.id)
                if isinstance(bound, ir.Local) and bound in self.serial_locals:
                    return False
        return True

    def uniform_prelude(self, body: list[ir.Stmt], extra_exprs: list[ir.Expr]) -> list[ir.Stmt]:
        """The top-level definitions ``body`` and ``extra_exprs`` (transitively) read."""
        self.check_no_serial_locals(body, extra_exprs)
        if not self.uniform_defs:
            return []
        needed: set[ir.Local] = set()
        for e in extra_exprs:
            needed |= _locals_read_expr(e)
        needed |= _locals_read(body)
        picked: list[ir.Stmt] = []
        for st in reversed(self.uniform_defs):
            var = st.var  # Declare / Assign
            if var in needed:
                picked.append(st)
                value = st.init if isinstance(st, ir.Declare) else st.value
                if value is not None:
                    needed |= _locals_read_expr(value)
        picked.reverse()
        return picked

    def check_no_serial_locals(self, body: list[ir.Stmt], extra_exprs: list[ir.Expr]) -> None:
        """A task cannot read a local another task computed: tasks are separate launches."""
        reads = _locals_read(body)
        for e in extra_exprs:
            reads |= _locals_read_expr(e)
        foreign = [v for v in reads - _locals_declared(body) if v in self.serial_locals]
        if foreign:
            var = min(foreign, key=lambda v: (v.loc.line, v.loc.col))
            where = self.serial_locals[var]
            raise TranspileError(
                f"`{var.name}` is computed in a serial part of the kernel (line {where.line}) and cannot be read "
                "by another task: each top-level loop is a separate launch", var.loc,
                hint="compute it only from parameters, shapes and constants, or pass it through an ndarray")

    def loop_config(self, call: ast.Call) -> None:
        for kw in call.keywords:
            v = self.static_value(kw.value, what=f"qd.loop_config({kw.arg}=...)")
            if kw.arg == "block_dim":
                if not isinstance(v, int) or not 1 <= v <= 1024:
                    raise self.error(kw.value, f"block_dim must be an int in [1, 1024], got {v!r}")
                self.pending_block_dim = v
            elif kw.arg == "serialize":
                self.pending_serialize = bool(v)
            else:
                raise self.error(kw.value, f"unknown qd.loop_config option `{kw.arg}`",
                                 hint="the options are block_dim and serialize")
        if call.args:
            raise self.error(call, "qd.loop_config takes keyword arguments only")

    def parallel_for(self, s: ast.For) -> None:
        loc = self.loc(s)
        block_dim = self.pending_block_dim or 128
        serialize = self.pending_serialize
        self.pending_block_dim, self.pending_serialize = None, False
        if s.orelse:
            raise self.error(s, "for/else is not supported in kernels")
        if serialize:
            body = self.lower_block([s])
            prelude = self.uniform_prelude(body, [])
            self.tasks.append(ir.Task("", "serial", [], [], 1, body, loc, prelude=prelude))
            return
        ranges = self.loop_ranges(s.iter, parallel=True)
        names = self.loop_targets(s.target, len(ranges))
        self.push_scope(task_root=True)
        loop_vars = []
        for name, tnode in zip(names, _target_nodes(s.target)):
            var = ir.Local(name, T.i32, self.loc(tnode), loop_var=True)
            self.scope.names[name] = var
            loop_vars.append(var)
        for var, (begin, _) in zip(loop_vars, ranges):
            var.nonneg = nonneg(begin)
        saved_block, self.block = self.block, []
        self.in_parallel = True
        self.task_shared = []
        try:
            for st in s.body:
                self.stmt(st)
        finally:
            self.in_parallel = False
            body, self.block = self.block, saved_block
            self.pop_scope()
        bounds = [e for r in ranges for e in r]
        prelude = self.uniform_prelude(body, bounds)
        self.tasks.append(ir.Task("", "parallel", loop_vars, ranges, block_dim, body, loc,
                                  shared=self.task_shared, prelude=prelude))

    def loop_ranges(self, it: ast.expr, parallel: bool = False) -> list[tuple[ir.Expr, ir.Expr]]:
        bound = self.parallel_bound if parallel else self.index_expr
        if not isinstance(it, ast.Call):
            raise self.error(it, "a top-level for loop must iterate over range(...) or qd.ndrange(...)")
        f = self.expr(it.func)
        fv = f.value if isinstance(f, CT) else None
        if it.keywords:
            raise self.error(it, "range() takes no keyword arguments")
        if fv is range:
            if not 1 <= len(it.args) <= 2:
                raise self.error(it, "a parallel range takes 1 or 2 arguments (a step is not supported)",
                                 hint="use range(begin, end) and scale the index in the body")
            args = [bound(a) for a in it.args]
            return [(ir.Const(T.i32, args[0].loc, 0), args[0])] if len(args) == 1 else [(args[0], args[1])]
        if getattr(fv, "_qd_builtin", None) == "ndrange":
            ranges = []
            for a in it.args:
                if isinstance(a, ast.Tuple):
                    if len(a.elts) != 2:
                        raise self.error(a, "a qd.ndrange dimension is an extent or a (begin, end) pair")
                    ranges.append((bound(a.elts[0]), bound(a.elts[1])))
                else:
                    e = bound(a)
                    ranges.append((ir.Const(T.i32, e.loc, 0), e))
            if not ranges:
                raise self.error(it, "qd.ndrange needs at least one dimension")
            return ranges
        raise self.error(it, "a top-level for loop must iterate over range(...) or qd.ndrange(...)")

    def loop_targets(self, target: ast.expr, n: int) -> list[str]:
        nodes = _target_nodes(target)
        if not all(isinstance(t, ast.Name) for t in nodes):
            raise self.error(target, "a loop variable must be a plain name")
        if len(nodes) != n:
            raise self.error(target, f"the loop has {n} dimension(s) but {len(nodes)} loop variable(s)")
        return [t.id for t in nodes]

    def index_expr(self, node: ast.expr) -> ir.Expr:
        v = self.rvalue(node)
        if not v.type.is_int:
            raise self.error(node, f"a range bound must be an integer, not {v.type.name}")
        return self.coerce(v, T.i32, node)

    def parallel_bound(self, node: ast.expr) -> ir.Expr:
        """A bound of a top-level loop: the host sizes the grid from it before launching, so
        it may use parameters, shapes and constants but not memory."""
        e = self.index_expr(node)
        if any(not isinstance(n, (ir.Const, ir.ParamRef, ir.Shape, ir.LocalRef, ir.BinOp, ir.Unary, ir.Cast))
               and not (isinstance(n, ir.Math) and n.fn in ("min", "max", "abs")) for n in iter_expr(e)):
            raise self.error(node, "the range of a top-level (parallel) loop must be computable from parameters, "
                                   "shapes and constants: the grid is sized before the kernel runs",
                             hint="pass the count as a scalar parameter, or loop over an upper bound and skip "
                                  "the extra indices with `if`")
        return e

    # ------------------------------------------------------------------ statements

    def stmt(self, s: ast.stmt) -> None:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            what = _UNSUPPORTED_STMT.get(type(s), type(s).__name__)
            raise self.error(s, f"{what} statements are not supported in kernels")
        method(s)

    def stmt_Pass(self, s: ast.Pass) -> None:
        pass

    def stmt_Expr(self, s: ast.Expr) -> None:
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return  # a docstring or a string used as a comment
        if isinstance(s.value, ast.Call) and self.is_call_to(s.value, "loop_config"):
            raise self.error(s, "qd.loop_config() must come right before a top-level for loop")
        v = self.expr(s.value)
        if isinstance(v, ir.Expr) and _has_side_effects(v):
            self.emit(ir.ExprStmt(self.loc(s), v))

    def stmt_Assign(self, s: ast.Assign) -> None:
        if self.is_static_call(s.value) and all(isinstance(t, ast.Name) for t in s.targets):
            value = CT(self.static_value(s.value))  # `n = qd.static(...)` names a translation-time value
            for t in s.targets:
                self.scope.names[t.id] = value
            return
        value = self.expr(s.value)
        if len(s.targets) > 1 and isinstance(value, ir.Expr) and _has_side_effects(value):
            tmp = self.new_temp("tmp", value, s)
            value = ir.LocalRef(tmp.type, tmp.loc, tmp)
        for target in s.targets:
            self.assign(target, value, s)

    def stmt_AnnAssign(self, s: ast.AnnAssign) -> None:
        if not isinstance(s.target, ast.Name):
            raise self.error(s.target, "only a plain name can carry a type annotation")
        dtype = self.static_value(s.annotation, what="a type annotation")
        if not isinstance(dtype, T.DType):
            raise self.error(s.annotation, f"`{ast.unparse(s.annotation)}` is not a scalar type",
                             hint="annotate a local with a scalar type such as qd.f32")
        name = s.target.id
        bound, _ = self.scope.lookup(name)
        if name in self.scope.names and isinstance(bound, ir.Local):
            raise self.error(s.target, f"`{name}` is already declared in this block")
        var = ir.Local(name, dtype, self.loc(s.target))
        init = None
        if s.value is not None:
            init = self.coerce(self.rvalue(s.value), dtype, s.value, explicit=True)
        self.scope.names[name] = var
        self.emit(ir.Declare(self.loc(s), var, init))

    def assign(self, target: ast.expr, value, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self.assign_name(target, value, stmt)
        elif isinstance(target, ast.Subscript):
            array, indices = self.lvalue(target)
            elem = array.type.dtype
            v = self.coerce(self.to_expr(value, target), elem, stmt.value if hasattr(stmt, "value") else stmt)
            self.emit(ir.Store(self.loc(stmt), array, indices, v))
        elif isinstance(target, ast.Tuple):
            items = self.unpack(value, len(target.elts), stmt)
            # Evaluate every right-hand side before assigning any target: `a, b = b, a`.
            temps = []
            for item in items:
                if isinstance(item, ir.Expr) and not isinstance(item, (ir.Const, ir.ParamRef, ir.Shape)):
                    tmp = self.new_temp("tmp", item, stmt)
                    item = ir.LocalRef(tmp.type, tmp.loc, tmp)
                temps.append(item)
            for t, item in zip(target.elts, temps):
                self.assign(t, item, stmt)
        elif isinstance(target, ast.Attribute):
            raise self.error(target, "assigning to an attribute is not supported in kernels")
        else:
            raise self.error(target, "cannot assign to this expression")

    def unpack(self, value, n: int, node: ast.AST) -> list:
        if isinstance(value, TupleValue):
            items = value.items
        elif isinstance(value, CT) and isinstance(value.value, (tuple, list)):
            items = [CT(v) for v in value.value]
        else:
            raise self.error(node, "cannot unpack a single value into several names")
        if len(items) != n:
            raise self.error(node, f"cannot unpack {len(items)} values into {n} names")
        return items

    def assign_name(self, target: ast.Name, value, stmt: ast.stmt) -> None:
        name = target.id
        bound, scope = self.scope.lookup(name)
        if isinstance(bound, ir.Local):
            self.check_writable(bound, scope, target)
            v = self.coerce(self.to_expr(value, target), bound.type, stmt, assigning=bound)
            self.emit(ir.Assign(self.loc(stmt), bound, v))
            return
        if isinstance(value, CT) and isinstance(value.value, str):
            raise self.error(stmt.value if hasattr(stmt, "value") else target, "strings are not supported in kernels")
        if isinstance(value, ArrayHandle) and isinstance(value.array, ir.SharedArray) and not value.array.name:
            value.array.name = name  # a SharedArray takes the name it is first bound to
        if isinstance(value, (ArrayHandle, ShapeHandle)) or (
                isinstance(value, CT) and not _is_py_scalar(value.value)):
            self.scope.names[name] = value  # an alias of an array or a translation-time object
            return
        if isinstance(bound, (ir.Param, ArrayHandle)) and scope is not None and scope.parent is None:
            raise self.error(target, f"cannot assign to parameter `{name}`",
                             hint=f"copy it into a local first: `{name}_local = {name}`")
        v = self.to_expr(value, target)
        var = ir.Local(name, v.type, self.loc(target))
        var.nonneg = v.type.is_int and self.frame.stores.get(name, 0) == 1 and nonneg(v)
        self.scope.names[name] = var
        self.emit(ir.Declare(self.loc(stmt), var, v))

    def require_parallel(self, node: ast.AST, what: str) -> None:
        if not self.in_parallel:
            raise self.error(node, f"{what} works on the threads of a block: call it inside a parallel "
                                   "(top-level) loop")

    def require_subgroup_size(self, node: ast.AST) -> int:
        if self.subgroup_size is None:
            raise self.error(node, "the subgroup size of this target is not known at translation time",
                             hint="pass subgroup_size=N to qd.translate (the device's size)")
        self.subgroup_size_used = True
        return self.subgroup_size

    def check_writable(self, var: ir.Local, scope: Scope, node: ast.AST) -> None:
        if var.loop_var:
            raise self.error(node, f"cannot assign to the loop variable `{var.name}`",
                             hint="assign to a new local instead")
        if self.in_parallel:
            s = self.scope
            while s is not None and s is not scope:
                if s.task_root:
                    raise self.error(node, f"cannot assign to `{var.name}` inside a parallel loop: it is "
                                           "defined outside the loop, so each thread would update its own copy",
                                     hint="accumulate into an ndarray element with `+=` (an atomic add)")
                s = s.parent

    def new_temp(self, base: str, value: ir.Expr, node: ast.AST) -> ir.Local:
        var = ir.Local(base, value.type, self.loc(node))
        self.emit(ir.Declare(self.loc(node), var, value))
        return var

    def stmt_AugAssign(self, s: ast.AugAssign) -> None:
        op = _BINOPS[type(s.op)]
        if isinstance(s.target, ast.Name):
            bound, scope = self.scope.lookup(s.target.id)
            if not isinstance(bound, ir.Local):
                if bound is None and self.global_lookup(s.target.id) is None:
                    raise self.error(s.target, f"undefined name `{s.target.id}`")
                raise self.error(s.target, f"cannot update `{s.target.id}`: it is not a local variable")
            self.check_writable(bound, scope, s.target)
            cur = ir.LocalRef(bound.type, self.loc(s.target), bound)
            result = self.binop(op, cur, self.expr(s.value), s)
            self.emit(ir.Assign(self.loc(s), bound, self.coerce(result, bound.type, s, assigning=bound)))
            return
        if isinstance(s.target, ast.Subscript):
            array, indices = self.lvalue(s.target)
            elem = array.type.dtype
            if op in _ATOMIC_AUGASSIGN:
                value = self.rvalue(s.value)
                self.emit(ir.ExprStmt(self.loc(s), self.make_atomic(_ATOMIC_AUGASSIGN[op], array, indices,
                                                                     value, s, f"`{_SYMBOL[op]}=`")))
                return
            cur = ir.Load(elem, self.loc(s.target), array, indices)
            result = self.binop(op, cur, self.expr(s.value), s)
            self.emit(ir.Store(self.loc(s), array, indices, self.coerce(result, elem, s)))
            return
        raise self.error(s.target, "cannot update this expression")

    def stmt_If(self, s: ast.If) -> None:
        if self.is_static_call(s.test):
            chosen = s.body if self.static_value(s.test) else s.orelse
            for st in self.lower_block(chosen):
                self.emit(st)
            return
        cond = self.condition(s.test)
        then = self.lower_block(s.body)
        orelse = self.lower_block(s.orelse)
        self.emit(ir.If(self.loc(s), cond, then, orelse))

    def stmt_While(self, s: ast.While) -> None:
        if s.orelse:
            raise self.error(s, "while/else is not supported in kernels")
        saved, self.block = self.block, []
        cond = self.condition(s.test)
        pre, self.block = self.block, saved
        self.loop_depth += 1
        try:
            body = self.lower_block(s.body)
        finally:
            self.loop_depth -= 1
        loc = self.loc(s)
        if pre:  # the condition needs statements: evaluate them on every iteration
            exit_ = ir.If(loc, ir.Unary(T.bool_, loc, "not", cond), [ir.Break(loc)], [])
            self.emit(ir.While(loc, ir.Const(T.bool_, loc, True), pre + [exit_] + body))
        else:
            self.emit(ir.While(loc, cond, body))

    def stmt_For(self, s: ast.For) -> None:
        if s.orelse:
            raise self.error(s, "for/else is not supported in kernels")
        if self.is_static_call(s.iter):
            self.static_for(s, top_level=False)
            return
        it = s.iter
        f = self.expr(it.func) if isinstance(it, ast.Call) else None
        fv = f.value if isinstance(f, CT) else None
        if fv is range:
            self.serial_range(s)
        elif getattr(fv, "_qd_builtin", None) == "ndrange":
            ranges = self.loop_ranges(it)
            names = self.loop_targets(s.target, len(ranges))
            # Nested serial loops, outermost first.
            self.nested_ranges(s, list(zip(names, _target_nodes(s.target), ranges)))
        else:
            raise self.error(it, "a for loop in a kernel must iterate over range(...), qd.ndrange(...) "
                                 "or qd.static(...)")

    def nested_ranges(self, s: ast.For, dims) -> None:
        (name, tnode, (begin, end)), rest = dims[0], dims[1:]
        loc = self.loc(s)
        self.push_scope()
        var = ir.Local(name, T.i32, self.loc(tnode), loop_var=True)
        var.nonneg = nonneg(begin)
        self.scope.names[name] = var
        saved, self.block = self.block, []
        self.loop_depth += 1
        try:
            if rest:
                self.nested_ranges(s, rest)
            else:
                for st in s.body:
                    self.stmt(st)
        finally:
            self.loop_depth -= 1
            body, self.block = self.block, saved
            self.pop_scope()
        self.emit(ir.For(loc, var, begin, end, ir.Const(T.i32, loc, 1), 1, body))

    def serial_range(self, s: ast.For) -> None:
        it = s.iter
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(it, "range() takes 1 to 3 positional arguments")
        vals = [self.expr(a) for a in it.args]
        typed = [self.to_expr(v, a) for v, a in zip(vals, it.args)]
        for e, a in zip(typed, it.args):
            if not e.type.is_int:
                raise self.error(a, f"range() needs integer arguments, not {e.type.name}")
        loc = self.loc(s)
        t = T.i32
        for e, v in zip(typed, vals):
            if not isinstance(v, CT):
                t = T.promote(t, e.type)
        typed = [self.coerce(e, t, a) for e, a in zip(typed, it.args)]
        zero, one = ir.Const(t, loc, 0), ir.Const(t, loc, 1)
        if len(typed) == 1:
            start, stop, step = zero, typed[0], one
        elif len(typed) == 2:
            start, stop, step = typed[0], typed[1], one
        else:
            start, stop, step = typed
        sign = 0
        if isinstance(step, ir.Const):
            if step.value == 0:
                raise self.error(it.args[2], "range() step must not be zero")
            sign = 1 if step.value > 0 else -1
        # Python evaluates the bounds once; a bound the body may change is copied first.
        changed = {n.id for st in s.body for n in _walk(st) if isinstance(n, ast.Name)
                   and isinstance(n.ctx, ast.Store)}
        if not _is_loop_invariant(stop, changed):
            stop = self.hoist(stop, "end", s)
        if not _is_loop_invariant(step, changed):
            step = self.hoist(step, "step", s)
        if not isinstance(s.target, ast.Name):
            raise self.error(s.target, "a loop variable must be a plain name")
        self.push_scope()
        var = ir.Local(s.target.id, t, self.loc(s.target), loop_var=True)
        var.nonneg = nonneg(start) and sign > 0
        self.scope.names[s.target.id] = var
        saved, self.block = self.block, []
        self.loop_depth += 1
        try:
            for st in s.body:
                self.stmt(st)
        finally:
            self.loop_depth -= 1
            body, self.block = self.block, saved
            self.pop_scope()
        self.emit(ir.For(loc, var, start, stop, step, sign, body))

    def hoist(self, e: ir.Expr, base: str, node: ast.AST) -> ir.Expr:
        var = self.new_temp(base, e, node)
        return ir.LocalRef(e.type, e.loc, var)

    def static_for(self, s: ast.For, top_level: bool) -> None:
        seq = self.static_value(s.iter)
        try:
            items = list(seq)
        except TypeError:
            raise self.error(s.iter, f"qd.static(...) in a for loop must be iterable, got {type(seq).__name__}") \
                from None
        for item in items:
            if top_level:
                self.bind_static_target(s.target, item)
                self.top_level(s.body)
            else:
                self.push_scope()
                try:
                    self.bind_static_target(s.target, item)
                    for st in s.body:
                        if isinstance(st, (ast.Break, ast.Continue)):
                            raise self.error(st, "break/continue are not supported in a qd.static for loop")
                        self.stmt(st)
                finally:
                    self.pop_scope()

    def bind_static_target(self, target: ast.expr, item) -> None:
        if isinstance(target, ast.Name):
            self.scope.names[target.id] = CT(item)
        elif isinstance(target, ast.Tuple):
            items = list(item)
            if len(items) != len(target.elts):
                raise self.error(target, f"cannot unpack {len(items)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, items):
                self.bind_static_target(t, v)
        else:
            raise self.error(target, "a loop variable must be a plain name")

    def stmt_Break(self, s: ast.Break) -> None:
        if self.loop_depth == 0:
            raise self.error(s, "break outside a serial loop" if not self.in_parallel else
                             "break is not allowed in a parallel loop: its iterations run on different threads",
                             hint=None if not self.in_parallel else "use `continue` to skip an iteration")
        self.emit(ir.Break(self.loc(s)))

    def stmt_Continue(self, s: ast.Continue) -> None:
        if self.loop_depth == 0 and not self.in_parallel:
            raise self.error(s, "continue outside a loop")
        self.emit(ir.Continue(self.loc(s)))

    def stmt_Return(self, s: ast.Return) -> None:
        if len(self.frames) == 1:
            raise self.error(s, "kernels cannot return values" if s.value is not None else
                             "return is not supported in kernels",
                             hint="write results into an ndarray parameter")
        frame = self.frame
        if s.value is None:
            return
        value = self.expr(s.value)
        if isinstance(value, TupleValue):
            if frame.returns_tuple is None:
                frame.returns_tuple = []
                for k, item in enumerate(value.items):
                    e = self.to_expr(item, s.value)
                    var = ir.Local(f"{frame.result_name}_{k}", e.type, self.loc(s))
                    frame.returns_tuple.append(var)
                    self.frame_declares.append(ir.Declare(self.loc(s), var, None))
            for var, item in zip(frame.returns_tuple, value.items):
                self.emit(ir.Assign(self.loc(s), var, self.coerce(self.to_expr(item, s.value), var.type, s.value)))
            return
        e = self.to_expr(value, s.value)
        if frame.result is None:
            frame.result = ir.Local(frame.result_name, e.type, self.loc(s))
            self.frame_declares.append(ir.Declare(self.loc(s), frame.result, None))
        self.emit(ir.Assign(self.loc(s), frame.result, self.coerce(e, frame.result.type, s.value)))

    def stmt_Assert(self, s: ast.Assert) -> None:
        raise self.error(s, "assert is not supported in kernels",
                         hint="use qd.static_assert(cond, msg) for a translation-time check")

    # ------------------------------------------------------------------ expressions

    def expr(self, node: ast.expr):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            what = _UNSUPPORTED_EXPR.get(type(node), type(node).__name__)
            raise self.error(node, f"{what} are not supported in kernels")
        return method(node)

    def rvalue(self, node: ast.expr) -> ir.Expr:
        return self.to_expr(self.expr(node), node)

    def to_expr(self, v, node: ast.AST | ir.Loc) -> ir.Expr:
        """A runtime expression for ``v``; translation-time scalars become constants."""
        if isinstance(v, ir.Expr):
            return v
        loc = node if isinstance(node, ir.Loc) else self.loc(node)
        if isinstance(v, CT):
            value = v.value
            if _is_py_scalar(value):
                t = _weak_type(value)
                py = bool(value) if t is T.bool_ else (float(value) if t.is_float else int(value))
                return ir.Const(t, loc, py)
            if isinstance(value, str):
                raise TranspileError("strings are not supported in kernels", loc)
            what = getattr(value, "__name__", type(value).__name__)
            raise TranspileError(f"`{what}` is not a value that can be used at run time in a kernel", loc)
        if isinstance(v, ArrayHandle):
            raise TranspileError(f"ndarray `{v.array.name}` used as a value; index it, e.g. "
                                 f"`{v.array.name}[i]`", loc)
        if isinstance(v, ShapeHandle):
            raise TranspileError(f"`{v.array.name}.shape` used as a value; index it, e.g. "
                                 f"`{v.array.name}.shape[0]`", loc)
        raise TranspileError("a tuple cannot be used as a single value here", loc)

    def expr_Constant(self, node: ast.Constant):
        # A string is a translation-time value (qd.static_assert messages); using one at
        # run time is the error, reported by to_expr / assign_name.
        if node.value is None or node.value is Ellipsis or isinstance(node.value, (bytes, complex)):
            raise self.error(node, f"`{node.value!r}` is not supported in kernels")
        return CT(node.value)

    def expr_Name(self, node: ast.Name):
        bound, _ = self.scope.lookup(node.id)
        if isinstance(bound, ir.Local):
            return ir.LocalRef(bound.type, self.loc(node), bound)
        if isinstance(bound, ir.Param):
            return ir.ParamRef(bound.type, self.loc(node), bound)
        if bound is not None:
            return bound
        found = self.global_lookup(node.id)
        if found is None:
            raise self.error(node, f"undefined name `{node.id}`")
        return found

    def global_lookup(self, name: str) -> CT | None:
        frame = self.frame
        if name in frame.closure:
            return CT(frame.closure[name])
        if name in frame.globals:
            return CT(frame.globals[name])
        if hasattr(builtins, name):
            return CT(getattr(builtins, name))
        return None

    def expr_Attribute(self, node: ast.Attribute):
        base = self.expr(node.value)
        if isinstance(base, ArrayHandle) and node.attr == "shape" and isinstance(base.array, ir.Param):
            return ShapeHandle(base.array)
        if isinstance(base, CT):
            try:
                return CT(getattr(base.value, node.attr))
            except AttributeError:
                what = getattr(base.value, "__name__", type(base.value).__name__)
                raise self.error(node, f"`{what}` has no attribute `{node.attr}`") from None
        if isinstance(base, ArrayHandle):
            raise self.error(node, f"ndarrays have no attribute `{node.attr}` in kernels",
                             hint="the only one is `.shape`")
        raise self.error(node, f"runtime values have no attribute `{node.attr}`")

    def expr_Subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
        if isinstance(base, ArrayHandle):
            array, indices = self.array_index(base.array, node)
            return ir.Load(array.type.dtype, self.loc(node), array, indices)
        if isinstance(base, ShapeHandle):
            k = self.static_value(node.slice, what="a shape index")
            nd = base.array.type.ndim
            if not isinstance(k, int) or not -nd <= k < nd:
                raise self.error(node.slice, f"`{base.array.name}` has {nd} dimension(s); "
                                             f"shape[{k!r}] is out of range")
            return ir.Shape(T.i32, self.loc(node), base.array, k % nd)
        if isinstance(base, CT):
            idx = self.expr(node.slice)
            if isinstance(idx, CT):
                try:
                    return CT(base.value[idx.value])
                except Exception as exc:  # noqa: BLE001 - report whatever Python said
                    raise self.error(node, f"cannot index a translation-time value: {exc}") from None
            raise self.error(node.slice, "a translation-time tuple or list can only be indexed by a "
                                         "translation-time index", hint="use qd.static(range(...)) for the loop")
        if isinstance(base, TupleValue):
            k = self.static_value(node.slice, what="a tuple index")
            return base.items[k]
        raise self.error(node, "only ndarrays, shapes and translation-time tuples can be indexed")

    def lvalue(self, node: ast.Subscript) -> tuple[ir.Array, list[ir.Expr]]:
        base = self.expr(node.value)
        if not isinstance(base, ArrayHandle):
            if isinstance(base, ShapeHandle):
                raise self.error(node, "the shape of an ndarray is read-only")
            raise self.error(node, "only ndarray elements can be assigned through an index")
        return self.array_index(base.array, node)

    def array_index(self, array: ir.Array, node: ast.Subscript) -> tuple[ir.Array, list[ir.Expr]]:
        idx_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if any(isinstance(i, ast.Slice) for i in idx_nodes):
            raise self.error(node.slice, "slices are not supported in kernels; index one element at a time")
        nd = array.type.ndim
        if len(idx_nodes) != nd:
            raise self.error(node, f"`{array.name}` has {nd} dimension(s) but is indexed with {len(idx_nodes)}")
        indices = []
        for i in idx_nodes:
            e = self.rvalue(i)
            if not e.type.is_int and e.type is not T.bool_:
                raise self.error(i, f"an index must be an integer, not {e.type.name}",
                                 hint="convert it with qd.cast(x, qd.i32) or int(x)")
            indices.append(self.coerce(e, T.i32, i) if e.type.bits < 32 or e.type is T.bool_ else e)
        return array, indices

    def expr_Tuple(self, node: ast.Tuple):
        items = [self.expr(e) for e in node.elts]
        if all(isinstance(i, CT) for i in items):
            return CT(tuple(i.value for i in items))
        return TupleValue(items)

    def expr_BinOp(self, node: ast.BinOp):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"the operator `{type(node.op).__name__}` is not supported in kernels")
        return self.binop(op, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op: str, a, b, node: ast.AST):
        if isinstance(a, CT) and isinstance(b, CT):
            try:
                return CT(_PY_BINOPS[op](a.value, b.value))
            except Exception as exc:  # noqa: BLE001
                raise self.error(node, f"cannot evaluate `{_SYMBOL[op]}` at translation time: {exc}") from None
        loc = self.loc(node)
        ea, eb = self.to_expr(a, node), self.to_expr(b, node)
        ta, tb = self.operand_types(a, ea, b, eb)
        if op in ("lshift", "rshift", "bitand", "bitor", "bitxor"):
            if ta.is_float or tb.is_float:
                raise self.error(node, f"`{_SYMBOL[op]}` needs integer operands, got {ea.type.name} and {eb.type.name}")
            if op in ("lshift", "rshift"):
                t = T.i32 if ta is T.bool_ else ta
                return ir.BinOp(t, loc, op, self.coerce(ea, t, node), self.coerce(eb, t, node))
            if ta is T.bool_ and tb is T.bool_:
                return ir.BinOp(T.bool_, loc, op, ea, eb)
        t = T.promote(ta, tb)
        if op == "truediv" and not t.is_float:
            t = T.DEFAULT_FLOAT
        if op == "pow":
            if t.is_float:
                return ir.Math(t, loc, "pow", [self.coerce(ea, t, node), self.coerce(eb, t, node)])
            if not (isinstance(b, CT) and isinstance(b.value, int) and b.value >= 0):
                raise self.error(node, "an integer power needs a non-negative exponent known at translation time",
                                 hint="convert the base to a float for a run-time exponent")
        if op in ("floordiv", "mod") and t.is_int and t.kind == "int" and nonneg(ea) and \
                isinstance(eb, ir.Const) and eb.value > 0:
            # Both sides non-negative: Python's floor division is C's truncating one.
            op = "truncdiv" if op == "floordiv" else "truncmod"
        if op == "floordiv" and t.is_float:
            q = ir.BinOp(t, loc, "truediv", self.coerce(ea, t, node), self.coerce(eb, t, node))
            return ir.Math(t, loc, "floor", [q])
        return fold.binop(t, loc, op, self.coerce(ea, t, node), self.coerce(eb, t, node))

    def operand_types(self, a, ea: ir.Expr, b, eb: ir.Expr) -> tuple[T.DType, T.DType]:
        """Types for promotion: a Python literal adapts to the other operand's type."""
        ta, tb = ea.type, eb.type
        if isinstance(a, CT) and not isinstance(b, CT):
            ta = _adapt_literal(a.value, ta, tb)
        elif isinstance(b, CT) and not isinstance(a, CT):
            tb = _adapt_literal(b.value, tb, ta)
        return ta, tb

    def expr_UnaryOp(self, node: ast.UnaryOp):
        v = self.expr(node.operand)
        if isinstance(v, CT):
            ops = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                   ast.Invert: operator.invert}
            return CT(ops[type(node.op)](v.value))
        e = self.to_expr(v, node.operand)
        loc = self.loc(node)
        if isinstance(node.op, ast.UAdd):
            return e
        if isinstance(node.op, ast.Not):
            return ir.Unary(T.bool_, loc, "not", self.truth(e, node.operand))
        if isinstance(node.op, ast.Invert):
            if e.type.is_float:
                raise self.error(node, f"`~` needs an integer operand, got {e.type.name}")
            if e.type is T.bool_:
                return ir.Unary(T.bool_, loc, "not", e)
            return ir.Unary(e.type, loc, "invert", e)
        t = T.i32 if e.type is T.bool_ else e.type
        return ir.Unary(t, loc, "neg", self.coerce(e, t, node))

    def expr_Compare(self, node: ast.Compare):
        left = self.expr(node.left)
        result = None
        for op_node, right_node in zip(node.ops, node.comparators):
            op = _CMPOPS.get(type(op_node))
            if op is None:
                raise self.error(node, f"the comparison `{type(op_node).__name__}` is not supported in kernels")
            right = self.expr(right_node)
            if isinstance(left, CT) and isinstance(right, CT):
                part = CT(_PY_CMPOPS[op](left.value, right.value))
            else:
                ea, eb = self.to_expr(left, node), self.to_expr(right, right_node)
                ta, tb = self.operand_types(left, ea, right, eb)
                t = T.bool_ if ta is T.bool_ and tb is T.bool_ else T.promote(ta, tb)
                part = ir.Compare(T.bool_, self.loc(node), op, self.coerce(ea, t, node), self.coerce(eb, t, node))
            result = part if result is None else self.logical("and", result, part, node)
            left = right
        return result

    def expr_BoolOp(self, node: ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) else "or"
        result = self.expr(node.values[0])
        for v in node.values[1:]:
            if isinstance(result, CT):
                if bool(result.value) == (op == "or"):
                    return result  # short-circuit at translation time
                result = self.expr(v)
                continue
            saved, self.block = self.block, []
            rhs = self.expr(v)
            pre, self.block = self.block, saved
            if pre:  # the right side needs statements: run them only when Python would
                loc = self.loc(v)
                tmp = self.new_temp("cond", self.truth(self.to_expr(result, node), node), v)
                test = ir.LocalRef(T.bool_, loc, tmp)
                if op == "or":
                    test = ir.Unary(T.bool_, loc, "not", test)
                pre.append(ir.Assign(loc, tmp, self.truth(self.to_expr(rhs, v), v)))
                self.emit(ir.If(loc, test, pre, []))
                result = ir.LocalRef(T.bool_, loc, tmp)
            else:
                result = self.logical(op, result, rhs, node)
        return result

    def logical(self, op: str, a, b, node: ast.AST):
        if isinstance(a, CT) and isinstance(b, CT):
            return CT(bool(a.value and b.value) if op == "and" else bool(a.value or b.value))
        ea, eb = self.truth(self.to_expr(a, node), node), self.truth(self.to_expr(b, node), node)
        return ir.Logical(T.bool_, self.loc(node), op, ea, eb)

    def truth(self, e: ir.Expr, node: ast.AST) -> ir.Expr:
        """``e`` as a boolean, as Python's truthiness would test it."""
        if e.type is T.bool_:
            return e
        return ir.Compare(T.bool_, e.loc, "ne", e, ir.Const(e.type, e.loc, 0.0 if e.type.is_float else 0))

    def condition(self, node: ast.expr) -> ir.Expr:
        v = self.expr(node)
        if isinstance(v, ArrayHandle):
            raise self.error(node, "an ndarray is not a condition")
        return self.truth(self.to_expr(v, node), node)

    def expr_IfExp(self, node: ast.IfExp):
        cond = self.expr(node.test)
        if isinstance(cond, CT):
            return self.expr(node.body if cond.value else node.orelse)
        c = self.truth(self.to_expr(cond, node.test), node.test)
        saved, self.block = self.block, []
        a = self.expr(node.body)
        pre_a, self.block = self.block, []
        b = self.expr(node.orelse)
        pre_b, self.block = self.block, saved
        ea, eb = self.to_expr(a, node.body), self.to_expr(b, node.orelse)
        ta, tb = self.operand_types(a, ea, b, eb)
        t = T.bool_ if ta is T.bool_ and tb is T.bool_ else T.promote(ta, tb)
        ea, eb = self.coerce(ea, t, node.body), self.coerce(eb, t, node.orelse)
        loc = self.loc(node)
        if pre_a or pre_b:
            var = ir.Local("sel", t, loc)
            self.emit(ir.Declare(loc, var, None))
            self.emit(ir.If(loc, c, pre_a + [ir.Assign(loc, var, ea)], pre_b + [ir.Assign(loc, var, eb)]))
            return ir.LocalRef(t, loc, var)
        return ir.Select(t, loc, c, ea, eb)

    # ------------------------------------------------------------------ calls

    def expr_Call(self, node: ast.Call):
        f = self.expr(node.func)
        if not isinstance(f, CT):
            raise self.error(node.func, "only functions known at translation time can be called in kernels")
        fn = f.value
        name = getattr(fn, "_qd_builtin", None)
        if name is not None:
            from .builtins import call_builtin

            return call_builtin(self, name, node)
        if isinstance(fn, lang.Func):
            return self.inline(fn, node)
        if isinstance(fn, lang.Kernel):
            raise self.error(node, f"kernel `{fn.__name__}` cannot be called from a kernel",
                             hint="make the callee a @qd.func")
        if isinstance(fn, T.DType):
            from .builtins import cast_call

            return cast_call(self, fn, node)
        if fn in (int, float, bool):
            args = [self.expr(a) for a in node.args]
            if len(args) == 1 and not isinstance(args[0], CT):
                from .builtins import cast_call

                return cast_call(self, {int: T.i32, float: T.f32, bool: T.bool_}[fn], node)
        if fn is len and len(node.args) == 1:
            arg = self.expr(node.args[0])
            if isinstance(arg, ArrayHandle) and isinstance(arg.array, ir.Param):
                return ir.Shape(T.i32, self.loc(node), arg.array, 0)
        if fn in (builtins.min, builtins.max, builtins.abs):
            from .builtins import call_builtin

            return call_builtin(self, fn.__name__, node)
        if fn in _CT_PY_CALLABLES or getattr(fn, "__module__", None) == "math" or \
                getattr(fn, "__self__", None) is pymath or getattr(fn, "_qd_comptime", False):
            args = [self.expr(a) for a in node.args]
            kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
            if all(isinstance(a, CT) for a in args) and all(isinstance(v, CT) for v in kwargs.values()):
                try:
                    return CT(fn(*[a.value for a in args], **{k: v.value for k, v in kwargs.items()}))
                except Exception as exc:  # noqa: BLE001
                    raise self.error(node, f"cannot evaluate `{ast.unparse(node)}` at translation time: {exc}") \
                        from None
            if fn is range:
                raise self.error(node, "range() can only drive a for loop in a kernel")
            raise self.error(node, f"`{getattr(fn, '__name__', fn)}` needs arguments known at translation time",
                             hint="use the qd.* function (e.g. qd.sqrt) for run-time values")
        what = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
        raise self.error(node, f"call to unknown Python function `{what}`",
                         hint="decorate it with @qd.func to call it from a kernel")

    def inline(self, func: lang.Func, node: ast.Call):
        if func.fn in self.inline_stack:
            raise self.error(node, f"recursion is not supported: `{func.__name__}` calls itself",
                             hint="rewrite it as a loop")
        parsed = parse_function(func.fn)
        fdef = parsed.node
        sig = _signature(func.fn)
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(node, f"bad arguments to `{func.__name__}`: {exc}") from None
        bound.apply_defaults()
        assigned = _store_counts(fdef)
        body = fdef.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]

        frame = _FuncFrame(func.fn, parsed, f"{func.__name__.lstrip('_')}_result")
        saved_scope = self.scope
        saved_declares = getattr(self, "frame_declares", None)
        self.frame_declares = []
        outer_block = self.block
        start = len(outer_block)
        # The callee sees its parameters and its own globals, never the caller's locals;
        # its new names still nest inside the caller's block for C scoping.
        self.scope = Scope(saved_scope, isolated=True)
        callee_root = self.scope
        annotations = inspect.get_annotations(func.fn, eval_str=True) if fdef.args.args else {}
        call_site = self.loc(node)
        saved_site = self.library_site
        if _is_library(parsed.file):
            self.library_site = call_site
        self.frames.append(frame)
        self.inline_stack.append(func.fn)
        try:
            runtime_params = []
            for pname, value in bound.arguments.items():
                if isinstance(value, (CT, ArrayHandle, ShapeHandle)) and (
                        not isinstance(value, CT) or not _is_py_scalar(value.value) or pname not in assigned):
                    callee_root.names[pname] = value
                else:
                    runtime_params.append((pname, value))
            # `if qd.static(...)` chains that make up the whole body pick their branch first,
            # so a function like `if static(op == "add"): return a + b ...` inlines as an expression.
            body = self.static_select(body)
            self.check_returns(body, parsed, func)
            single = len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None
            uses = _name_loads(body)
            for pname, value in runtime_params:
                ann = annotations.get(pname)
                e = self.to_expr(value, node)
                if isinstance(ann, T.DType):
                    e = self.coerce(e, ann, node, explicit=True)
                inline_once = single and uses.get(pname, 0) <= 1 and not _has_side_effects(e)
                if pname in assigned or not (_is_simple(e) or inline_once):
                    var = ir.Local(pname, e.type, self.loc(fdef))
                    self.emit(ir.Declare(self.loc(node), var, e))
                    callee_root.names[pname] = var
                else:
                    callee_root.names[pname] = e
            returns = sum(isinstance(n, ast.Return) for st in body for n in _walk(st))
            if body and isinstance(body[-1], ast.Return) and body[-1].value is not None and returns == 1:
                # One return, at the very end: its value is the call's value, no result variable.
                for st in body[:-1]:
                    self.stmt(st)
                result = self.expr(body[-1].value)
            else:
                for st in body:
                    self.stmt(st)
                if frame.returns_tuple is not None:
                    result = TupleValue([ir.LocalRef(v.type, v.loc, v) for v in frame.returns_tuple])
                elif frame.result is not None:
                    result = ir.LocalRef(frame.result.type, self.loc(node), frame.result)
                else:
                    result = CT(None)
        finally:
            self.frames.pop()
            self.inline_stack.pop()
            self.scope = saved_scope
            self.library_site = saved_site
            declares, self.frame_declares = self.frame_declares, saved_declares
        outer_block[start:start] = declares
        return result

    def static_select(self, body: list[ast.stmt]) -> list[ast.stmt]:
        while len(body) == 1 and isinstance(body[0], ast.If) and self.is_static_call(body[0].test):
            body = body[0].body if self.static_value(body[0].test) else body[0].orelse
        return body

    def check_returns(self, body: list[ast.stmt], parsed: ParsedFunction, func: lang.Func) -> None:
        """``return`` may only end the function (possibly in both arms of a final if)."""

        def ok(stmts: list[ast.stmt], tail: bool) -> None:
            for k, st in enumerate(stmts):
                last = tail and k == len(stmts) - 1
                if isinstance(st, ast.Return) and not last:
                    raise TranspileError(f"`return` in @qd.func `{func.__name__}` must be its last statement",
                                         parsed.loc(st), hint="assign to a result variable and return it at the end")
                if isinstance(st, ast.If):
                    ok(st.body, last)
                    ok(st.orelse, last)
                elif isinstance(st, (ast.For, ast.While)):
                    ok(st.body, False)

        ok(body, True)

    # ------------------------------------------------------------------ types

    def coerce(self, e: ir.Expr, t: T.DType, node, *, explicit: bool = False,
               assigning: ir.Local | None = None) -> ir.Expr:
        """Convert ``e`` to ``t``. Implicit float -> int conversions are errors: they would
        silently truncate."""
        if e.type == t:
            return e
        loc = node if isinstance(node, ir.Loc) else self.loc(node)
        if not explicit and e.type.is_float and (t.is_int or t is T.bool_):
            if isinstance(e, ir.Const) and float(e.value).is_integer():
                return ir.Const(t, e.loc, int(e.value))
            if assigning is not None:
                raise TranspileError(
                    f"`{assigning.name}` is {t.name} (from its first assignment at line {assigning.loc.line}) "
                    f"and cannot hold a {e.type.name} value without truncating it", loc,
                    hint=f"initialize it as a float (e.g. `{assigning.name} = 0.0`), or convert with qd.cast")
            raise TranspileError(f"implicit conversion from {e.type.name} to {t.name} would truncate", loc,
                                 hint=f"convert explicitly with qd.cast(x, qd.{t.name})")
        if isinstance(e, ir.Const):
            return _retype_const(e, t)
        return ir.Cast(t, e.loc, e)

    def static_value(self, node: ast.expr, what: str = "qd.static()"):
        if self.is_static_call(node):
            args = node.args
            if len(args) != 1 or node.keywords:
                vals = [self.static_value(a, what) for a in args]
                return tuple(vals)
            node = args[0]
        v = self.expr(node)
        if not isinstance(v, CT):
            raise self.error(node, f"{what} needs a value known at translation time",
                             hint="use constants, template parameters or module-level globals")
        return v.value

    def is_static_call(self, node: ast.expr) -> bool:
        return self.is_call_to(node, "static")

    def is_call_to(self, node: ast.expr, builtin_name: str) -> bool:
        if not isinstance(node, ast.Call):
            return False
        try:
            f = self.expr(node.func)
        except TranspileError:
            return False
        return isinstance(f, CT) and getattr(f.value, "_qd_builtin", None) == builtin_name

    def make_atomic(self, op: str, array: ir.Array, indices: list[ir.Expr], value: ir.Expr, node: ast.AST,
                    spelled: str, expected: ir.Expr | None = None) -> ir.Atomic:
        elem = array.type.dtype
        loc = self.loc(node)
        if op in ("and", "or", "xor") and elem.is_float:
            raise TranspileError(f"{spelled} on {elem.name}: bitwise atomics need an integer element", loc)
        v = self.coerce(value, elem, node)
        if op == "sub":
            op, v = "add", (ir.Unary(elem, loc, "neg", v) if not isinstance(v, ir.Const) else
                            ir.Const(elem, loc, -v.value))
        return ir.Atomic(elem, loc, op, array, indices, v, expected)


def _target_nodes(target: ast.expr) -> list[ast.expr]:
    return list(target.elts) if isinstance(target, ast.Tuple) else [target]


def _adapt_literal(value, own: T.DType, other: T.DType) -> T.DType:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return own
    if isinstance(value, int):
        if other.is_int and T.fits(value, other):
            return other
        if other.is_float:
            return other
        return own
    return other if other.is_float else own


def _retype_const(c: ir.Const, t: T.DType) -> ir.Const:
    v = c.value
    if t is T.bool_:
        return ir.Const(t, c.loc, bool(v))
    if t.is_float:
        return ir.Const(t, c.loc, float(v))
    v = int(v)
    mask = (1 << t.bits) - 1
    v &= mask
    if t.kind == "int" and v >= 1 << (t.bits - 1):
        v -= 1 << t.bits
    return ir.Const(t, c.loc, v)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _is_library(file: str) -> bool:
    return os.path.abspath(file).startswith(_PACKAGE_DIR + os.sep)


# The parsed trees are cached for the life of the process and never changed, and the same
# function is walked again for every call site, target and translation: walk each node once.
# (Profiled on bench/corpus.py: ast.walk was a quarter of the frontend's time.) Keyed by
# identity; the bound keeps nodes built on the fly (e.g. qd.cast's) from piling up.
@lru_cache(maxsize=8192)
def _walk(node: ast.AST) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(node))


@lru_cache(maxsize=1024)
def _store_counts(fdef: ast.AST) -> dict[str, int]:
    """How often each name is assigned in ``fdef``; shared between callers, read only."""
    counts: dict[str, int] = {}
    for n in _walk(fdef):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts


@lru_cache(maxsize=1024)
def _signature(fn: Callable) -> inspect.Signature:
    return inspect.signature(fn)


def _name_loads(body: list[ast.stmt]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for st in body:
        for n in _walk(st):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def nonneg(e: ir.Expr) -> bool:
    """Whether an integer expression is known to be >= 0 (lets // and % be C's / and %)."""
    if isinstance(e, ir.Const):
        return not isinstance(e.value, float) and e.value >= 0
    if isinstance(e, (ir.Shape, ir.ThreadIndex)):
        return True
    if isinstance(e, ir.LocalRef):
        return e.var.nonneg
    if isinstance(e, ir.BinOp):
        if e.op in ("add", "mul", "truncdiv", "truncmod", "floordiv", "mod", "rshift"):
            return nonneg(e.a) and nonneg(e.b)
        if e.op == "bitand":
            return nonneg(e.a) or nonneg(e.b)
    if isinstance(e, ir.Cast):
        return e.a.type.kind == "uint" and e.type.bits > e.a.type.bits or (e.a.type.is_int and nonneg(e.a))
    if isinstance(e, ir.SubgroupOp) and e.op == "invocation_id":
        return True
    return False


def _is_simple(e: ir.Expr) -> bool:
    return isinstance(e, (ir.Const, ir.LocalRef, ir.ParamRef, ir.Shape))


def _is_loop_invariant(e: ir.Expr, assigned_in_body: set[str]) -> bool:
    """No memory reads and no locals the loop body assigns (by their Python names)."""
    for n in iter_expr(e):
        if isinstance(n, (ir.Load, ir.Atomic, ir.ShmemOp)):
            return False
        if isinstance(n, ir.LocalRef) and n.var.name in assigned_in_body:
            return False
    return True


def _has_side_effects(e: ir.Expr) -> bool:
    return any(isinstance(n, (ir.Atomic, ir.ShmemOp)) for n in iter_expr(e))


def _locals_read_expr(e: ir.Expr) -> set[ir.Local]:
    return {n.var for n in iter_expr(e) if isinstance(n, ir.LocalRef)}


def _locals_read(stmts: list[ir.Stmt]) -> set[ir.Local]:
    out: set[ir.Local] = set()
    for st in stmts:
        for e in stmt_exprs(st):
            out |= _locals_read_expr(e)
        for body in stmt_bodies(st):
            out |= _locals_read(body)
    return out


def _locals_assigned(stmts: list[ir.Stmt]) -> set[ir.Local]:
    out: set[ir.Local] = set()
    for st in stmts:
        if isinstance(st, ir.Assign):
            out.add(st.var)
        for body in stmt_bodies(st):
            out |= _locals_assigned(body)
    return out


def _locals_declared(stmts: list[ir.Stmt]) -> set[ir.Local]:
    out: set[ir.Local] = set()
    for st in stmts:
        if isinstance(st, ir.Declare):
            out.add(st.var)
        elif isinstance(st, ir.For):
            out.add(st.var)
        for body in stmt_bodies(st):
            out |= _locals_declared(body)
    return out


def lower_kernel(kernel: lang.Kernel, template_args: dict | None = None,
                 arg_types: dict | None = None, subgroup_size: int | None = None) -> ir.Kernel:
    ir_kernel = KernelLowering(kernel, template_args, arg_types, subgroup_size).run()
    for task in ir_kernel.tasks:
        for array in task.shared:
            array.name = array.name or "shared"
    return ir_kernel


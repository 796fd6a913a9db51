"""A @qd.func called as a statement at the top level of a kernel, whose body has top-level
loops of its own: inlined *at the top level*, so each of its loops becomes a task of the
kernel (a GPU entry point, launched in order), as in Quadrants, where this is how a
function composes several phases separated by launch boundaries (``qd.algorithms``).

Inside such a call the callee's statements are top-level statements: loops are tasks,
pure assignments are recomputed by the tasks that read them, anything else runs in a
serial task. A run-time argument becomes a top-level variable of the callee, read at the
start of each task that uses it (an argument that reads memory, such as a device-resident
count ``n[0]``, is re-read by every such task: the callee must not write what it reads).
These are methods of KernelLowering (see lower.py for the state they use).
"""
from __future__ import annotations

import ast
import builtins
import inspect

from .. import lang
from ..errors import TranspileError, call_mismatch
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.walk import iter_expr
from .common import bind_arguments, closure_vars, store_counts, without_docstring
from .scopes import Scope, _FuncFrame
from .source import parse_function
from .values import CT, ArrayHandle, BoundMethod, MatrixValue, ShapeHandle, StructValue, StructVar, bound_method
from .common import has_side_effects, is_simple

_expanding: dict[object, bool] = {}  # Func.fn -> whether a top-level call of it makes tasks


def _is_static_iter(it: ast.expr) -> bool:
    f = it.func if isinstance(it, ast.Call) else None
    return (isinstance(f, ast.Name) and f.id == "static") or (isinstance(f, ast.Attribute) and f.attr == "static")


def _resolve(node: ast.expr, fn) -> object:
    """What a callee spelled as a name or an attribute chain is, seen from ``fn``'s module
    (None when that cannot be told without lowering)."""
    if isinstance(node, ast.Name):
        closure = closure_vars(fn)
        if node.id in closure:
            return closure[node.id]
        return fn.__globals__.get(node.id, getattr(builtins, node.id, None))
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, fn)
        return getattr(base, node.attr, None) if base is not None else None
    return None


def expands_to_tasks(func: lang.Func) -> bool:
    """Whether ``func``'s body has a loop at its top level (through static loops and ifs
    and the functions it calls as statements there)."""
    if isinstance(func, lang.RealFunc):
        return False
    key = func.fn
    if key in _expanding:
        return _expanding[key]
    _expanding[key] = False  # a function that calls itself: decided by its other statements

    def walk(stmts: list[ast.stmt]) -> bool:
        for st in stmts:
            if isinstance(st, ast.For):
                if not _is_static_iter(st.iter) or walk(st.body):
                    return True
            elif isinstance(st, ast.If):
                if walk(st.body) or walk(st.orelse):
                    return True
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                callee = _resolve(st.value.func, func.fn)
                if isinstance(callee, lang.Func) and expands_to_tasks(callee):
                    return True
        return False

    _expanding[key] = result = walk(parse_function(func.fn).node.body)
    return result


class TopLevelCallLowering:
    """Methods of KernelLowering for top-level calls that expand into tasks."""

    def task_making_call(self, s: ast.stmt) -> lang.Func | None:
        """The @qd.func the top-level statement ``s`` calls, when that call expands into tasks."""
        if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)):
            return None
        callee = s.value.func
        if not isinstance(callee, (ast.Name, ast.Attribute)):
            return None
        try:
            f = self.expr(callee)
        except TranspileError:
            return None
        called = bound_method(f.value) if isinstance(f, CT) else None
        fn = called.func if isinstance(called, BoundMethod) else called
        if isinstance(fn, lang.Func) and not isinstance(fn, lang.RealFunc) and (
                fn.requires_top_level or expands_to_tasks(fn)):
            return called
        return None

    def top_level_call(self, func: lang.Func | BoundMethod, node: ast.Call) -> None:
        """Inline ``func`` at the top level: its loops become tasks (see the module doc)."""
        leading = []  # a method's self
        if isinstance(func, BoundMethod):
            func, leading = func.func, [func.value]
        if func.fn in self.body.inline_stack:
            raise self.error(node, f"recursion is not supported: `{func.__name__}` calls itself",
                             hint="unroll it with `for k in qd.static(range(...))`")
        # The arguments are the caller's expressions; statements they need run serially.
        if self.serial.loc is None:
            self.serial.loc = self.loc(node)
        with self.task(self.serial.task):
            args = leading + [self.expr(a) for a in node.args]
            kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        if not self.serial.stmts:
            self.serial.loc = None
        parsed = parse_function(func.fn)
        fdef = parsed.node
        try:
            arguments = bind_arguments(func.fn, args, kwargs)
        except TypeError as exc:
            raise self.error(node, f"bad arguments to `{func.__name__}`: {call_mismatch(exc)}") from None
        body = without_docstring(fdef)
        for st in body:
            for sub in ast.walk(st):
                if isinstance(sub, ast.Return):
                    raise TranspileError(f"`{func.__name__}` launches tasks (it has top-level loops), so it cannot "
                                         "return a value", parsed.loc(sub),
                                         hint="write results to an ndarray or field argument")
        call_site = self.loc(node)
        annotations = inspect.get_annotations(func.fn, eval_str=True) if fdef.args.args else {}
        # The callee sees its parameters and its globals; its top-level names are kernel-scope
        # names (a serial result another task reads moves to a scratch buffer, as in a kernel).
        root = Scope(self.body.scope, isolated=True)
        self.kernel_scope, outer_kernel_scope = root, self.kernel_scope
        frame = _FuncFrame(func.fn, parsed, f"{func.__name__.lstrip('_')}_result")
        try:
            with self.inlining(frame, root, call_site):
                self.bind_top_level_arguments(root, arguments, fdef, annotations, node, call_site)
                self.top_level(body)
        finally:
            self.kernel_scope = outer_kernel_scope

    def bind_top_level_arguments(self, root: Scope, arguments: dict, fdef: ast.FunctionDef, annotations: dict,
                                 node: ast.Call, call_site: ir.Loc) -> None:
        for pname, value in arguments.items():
            if isinstance(value, (CT, ArrayHandle, ShapeHandle, StructVar, StructValue, MatrixValue)) \
                    or value is None:
                if isinstance(value, CT) and pname in store_counts(fdef) and not callable(value.value):
                    self.bind_top_level_value(root, pname, self.to_expr(value, node), annotations, node,
                                              call_site, True)
                    continue
                root.names[pname] = value
                continue
            self.bind_top_level_value(root, pname, self.to_expr(value, node), annotations, node, call_site,
                                      pname in store_counts(fdef))

    def bind_top_level_value(self, root: Scope, pname: str, e: ir.Expr, annotations: dict, node: ast.Call,
                             site: ir.Loc, assigned: bool = True) -> None:
        """A run-time argument: a top-level variable of the callee, recomputed (re-read) by
        every task that uses it; one with a side effect is evaluated once, serially."""
        ann = T.python_type(annotations.get(pname)) or annotations.get(pname)
        if isinstance(ann, T.DType):
            e = self.coerce(e, ann, node, explicit=True)
        reads_serial = any(isinstance(n, ir.LocalRef) and n.var in self.serial_locals for n in iter_expr(e))
        if not assigned and is_simple(e) and not reads_serial:  # a value every task can name as it is
            root.names[pname] = e
            return
        var = ir.Local(pname, e.type, site)
        decl = ir.Declare(site, var, e)
        # A serial local is declared only in its serial task: a copy made there moves to a
        # scratch buffer when the callee's tasks read it, as a kernel's own serial result does.
        if has_side_effects(e) or reads_serial:
            if self.serial.loc is None:
                self.serial.loc = site
            self.serial.stmts.append(decl)
            self.serial_locals.setdefault(var, site)
            self.serial.declared.add(var)
        else:
            self.uniform_defs.append(decl)
            self.top_level_locals.add(var)
        root.names[pname] = var

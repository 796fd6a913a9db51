"""Lowering of calls: built-ins, dtype constructors, translation-time Python functions, and
the inlining of @qd.func bodies."""
from __future__ import annotations

import ast
import builtins
import copy
import inspect
import math as pymath
import operator
import re
import types
import struct
import weakref
from functools import lru_cache

from .. import lang
from ..errors import StaticValueError, TranspileError, call_mismatch
from ..ir import nodes as ir
from ..ir import types as T
from .common import (
    CT_PY_CALLABLES, annotations as func_annotations, bind_arguments, component_stores, has_side_effects, is_library,
    is_py_scalar, is_simple, name_loads, return_count, signature, store_counts, without_docstring, ast_nodes,
)
from .source import ParsedFunction, parse_function
from ..lang.matrix import MatrixType
from .tiles import is_tile
from .fields import StructArray
from .handlers import HandlerTable
from .intrinsics import call_builtin, cast_call, dtype_call
from .library_calls import equivalent, is_library_callable, is_user_function, library_call_error
from .values import (
    CT, ArrayHandle, BoundMethod, KernelVar, MatrixValue, MatrixVar, MethodValue, ShapeHandle, StructValue, StructVar,
    TupleValue, bound_method, sequence_items,
)
from .scopes import NameAlias, Scope, _FuncFrame
import string
from .matrices import describe

# Plain Python functions a kernel calls, each as the @qd.func it is translated as.
_IMPLICIT_FUNCS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# operator.* functions as the expressions they stand for: (arity, node maker).
_OPERATOR_SPELLINGS = {
    **{getattr(operator, name): (2, lambda a, b, op=op: ast.BinOp(a, op(), b)) for name, op in (
        ("add", ast.Add), ("sub", ast.Sub), ("mul", ast.Mult), ("truediv", ast.Div), ("floordiv", ast.FloorDiv),
        ("mod", ast.Mod), ("pow", ast.Pow), ("matmul", ast.MatMult), ("and_", ast.BitAnd), ("or_", ast.BitOr),
        ("xor", ast.BitXor), ("lshift", ast.LShift), ("rshift", ast.RShift))},
    **{getattr(operator, name): (1, lambda a, op=op: ast.UnaryOp(op(), a)) for name, op in (
        ("neg", ast.USub), ("pos", ast.UAdd), ("invert", ast.Invert), ("not_", ast.Not))},
    **{getattr(operator, name): (2, lambda a, b, op=op: ast.Compare(a, [op()], [b])) for name, op in (
        ("eq", ast.Eq), ("ne", ast.NotEq), ("lt", ast.Lt), ("le", ast.LtE), ("gt", ast.Gt), ("ge", ast.GtE))},
}

class CallLowering:
    """Call methods of KernelLowering."""


    def fill_vector(self, node: ast.Call) -> bool:
        """``v.fill(x)`` on a vector or matrix (a variable, an element of a field of them):
        every component set to ``x``, as Quadrants does; False when ``v`` is no vector."""
        target = node.func.value
        base = self.expr(target)
        if not isinstance(base, MatrixValue):
            return False
        x = self.once(self.to_expr(self.expr(node.args[0]), node.args[0]), node, "fill")
        self.assign(target, MatrixValue(base.shape, [x] * len(base.items)), node)
        return True

    def unstarred(self, node: ast.Call) -> ast.Call:
        """``f(*shape)`` with ``shape`` a tuple of numbers known at translation time: the call
        with them written out (a copy; the parsed tree is shared)."""
        if not any(isinstance(a, ast.Starred) for a in node.args):
            return node
        args = []
        for a in node.args:
            if not isinstance(a, ast.Starred):
                args.append(a)
                continue
            seq = self.expr(a.value)
            count = seq.array.type.ndim if isinstance(seq, ShapeHandle) else \
                seq.shape[0] if isinstance(seq, MatrixValue) and seq.is_vector and \
                isinstance(a.value, (ast.Name, ast.Attribute)) else None
            if count is not None:  # qd.ndrange(*x.shape), qd.min(*v, *w): one argument per dimension or component
                args += [ast.copy_location(ast.Subscript(a.value, ast.copy_location(ast.Constant(d), a), ast.Load()), a)
                         for d in range(count)]
                continue
            items = seq.value if isinstance(seq, CT) else None
            if hasattr(items, "tolist"):  # a NumPy array of extents (Genesis' grid_res)
                items = items.tolist()
            items = [tuple(x) if isinstance(x, (tuple, list)) else x for x in items] \
                if isinstance(items, (tuple, list)) else None
            if items is None or not all(is_py_scalar(x) or (isinstance(x, tuple) and all(map(is_py_scalar, x)))
                                        for x in items):
                raise StaticValueError("a starred argument must be a tuple of numbers (or of (begin, end) pairs) "
                                       "known at translation time", self.loc(a), hint="write the arguments out")
            for x in items:
                args.append(ast.copy_location(ast.Constant(x), a) if not isinstance(x, tuple) else ast.copy_location(
                    ast.Tuple([ast.copy_location(ast.Constant(y), a) for y in x], ast.Load()), a))
        return ast.copy_location(ast.Call(func=node.func, args=args, keywords=node.keywords), node)

    def plain_loop(self, s: ast.For) -> ast.For:
        """The loop with its iterator as the loop lowering reads it: one picked by a condition
        known at translation time (``for i in (qd.ndrange(a) if qd.static(c) else
        qd.ndrange(b))``), starred arguments written out (``qd.grouped(qd.ndrange(*shape))``)."""
        it = s.iter
        while isinstance(it, ast.IfExp):
            test = self.expr(it.test)
            known = test.value if isinstance(test, (CT, ir.Const)) else None
            if known is None or not is_py_scalar(known):
                raise self.error(it.test, "a conditional loop iterator needs a condition known at translation time",
                                 hint="use qd.static(...) for the condition, or write two loops")
            it = it.body if known else it.orelse
        if it is not s.iter:
            s = copy.copy(s)
            s.iter = it
        if not isinstance(it, ast.Call):
            return s
        new = self.unstarred(it)
        if len(new.args) == 1 and isinstance(new.args[0], ast.Call):
            inner = self.unstarred(new.args[0])
            if inner is not new.args[0]:
                new = ast.copy_location(ast.Call(func=new.func, args=[inner], keywords=new.keywords), new)
        if new is it:
            return s
        loop = copy.copy(s)
        loop.iter = new
        return loop

    def expr_Call(self, node: ast.Call):
        node = self.unstarred(node)
        on_container = self.container_method_call(node)
        if on_container is not None:
            return on_container
        f = self.expr(node.func)
        if isinstance(f, CT) and isinstance(f.value, lang.BoundFunc):
            f = CT(bound_method(f.value))
        if isinstance(f, CT) and not isinstance(f.value, BoundMethod):
            return self.call_known(f.value, node)
        return self.call_value(f, node)

    def container_method_call(self, node: ast.Call):
        """``v.fill(x)`` on a vector variable, ``x.append(v)`` on a dynamic SNode's cell, a
        method of a struct; None for any other call."""
        if isinstance(node.func, ast.Attribute) and node.func.attr == "fill" and len(node.args) == 1 \
                and not node.keywords and self.fill_vector(node):
            return CT(None)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("append", "length", "deactivate"):
            listed = self.dynamic_list_method(node)
            if listed is not None:
                return listed
        return self.call_struct_method(node)

    def call_value(self, f, node: ast.Call):
        """A call of a value not known at translation time as a function: a method of a
        vector, a bound @qd.func method, ``v(0)``."""
        if isinstance(f, MethodValue):
            return self.call_method(f, node)
        if isinstance(f, CT):  # a BoundMethod
            args = [self.expr(a) for a in node.args]
            kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
            return self.inline_values(f.value.func, node, [f.value.value, *args], kwargs)
        if isinstance(f, MatrixValue) and node.args and not node.keywords:
            # `v(0)`, `m(i, j)`: Taichi's old spelling of v[0], m[i, j], which Quadrants keeps
            index = node.args[0] if len(node.args) == 1 else ast.Tuple(list(node.args), ast.Load())
            return self.expr(ast.copy_location(ast.Subscript(node.func, ast.copy_location(index, node.args[0]),
                                                             ast.Load()), node))
        raise self.error(node.func, "only functions known at translation time can be called in kernels")

    def call_known(self, fn, node: ast.Call):
        """A call of ``fn``, known at translation time: a qd.* built-in, a @qd.func or
        @qd.real_func, a dtype, a Python built-in (``PY_CALLS``) or another Python function."""
        name = getattr(fn, "_qd_builtin", None)
        if name is not None:
            return call_builtin(self, name, node)
        if isinstance(fn, lang.RealFunc):
            instance = None
            if isinstance(node.func, ast.Attribute) and next(iter(inspect.signature(fn.fn).parameters), None) == "self":
                base = self.expr(node.func.value)  # `self.inc(i, j)`: a method of a data-oriented instance
                instance = base if isinstance(base, CT) and not isinstance(base.value, type) else None
            return self.real_call(fn, node, instance)
        if isinstance(fn, lang.Func):
            return self.inline(fn, node)
        if isinstance(fn, lang.Kernel):
            raise self.error(node, f"kernel `{fn.__name__}` cannot be called from a kernel",
                             hint="make the callee a @qd.func")
        if isinstance(fn, T.DType):
            return dtype_call(self, fn, node)
        python_builtin = PY_CALLS.find(fn)
        if python_builtin is not None:
            lowered = python_builtin(self, fn, node)
            if lowered is not None:
                return lowered
        return self.call_python(fn, node)

    def call_python(self, fn, node: ast.Call):
        """A Python function: run at translation time (math, Python's built-ins,
        @qd.comptime), the expression an ``operator.*`` function spells, or a plain function
        of the user's, inlined as a @qd.func."""
        if fn in CT_PY_CALLABLES or getattr(fn, "__module__", None) == "math" or \
                getattr(fn, "__self__", None) is pymath or getattr(fn, "_qd_comptime", False):
            return self.evaluate_call(fn, node)
        spelled = _OPERATOR_SPELLINGS.get(fn) if isinstance(fn, types.BuiltinFunctionType) else None
        if spelled is not None and len(node.args) == spelled[0] and not node.keywords:
            # operator.add(a, b) (a test's parametrized `ops`): the expression it spells
            return self.expr(ast.copy_location(spelled[1](*node.args), node))
        if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType) and \
                is_user_function(fn.__func__):  # `self.helper(x)`, a plain method
            args = [self.expr(a) for a in node.args]
            kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
            return self.inline_values(self.implicit_func(fn.__func__, node), node, [CT(fn.__self__), *args], kwargs)
        if isinstance(fn, types.FunctionType) and is_user_function(fn):
            return self.inline(self.implicit_func(fn, node), node)
        call = inspect.getattr_static(type(fn), "__call__", None)
        if isinstance(call, lang.Func):  # an object whose __call__ is a @qd.func: that method
            return self.call_value(CT(bound_method(lang.BoundFunc(call, fn))), node)
        if is_library_callable(fn):
            raise library_call_error(fn, node, self.loc(node))
        what = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
        hint = "decorate it with @qd.func to call it from a kernel" if isinstance(fn, types.FunctionType) else \
            f"decorate `{type(fn).__qualname__}.__call__` with @qd.func to call it from a kernel" \
            if isinstance(call, types.FunctionType) else None
        raise self.error(node, f"call to unknown Python function `{what}`", hint=hint)

    def evaluate_call(self, fn, node: ast.Call):
        """A function Python runs at translation time, on arguments known then."""
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
        spelling = equivalent(fn)
        raise self.error(node, f"`{ast.unparse(node.func)}` needs arguments known at translation time",
                         hint=f"use {spelling} for run-time values" if spelling else None)

    def implicit_func(self, fn: types.FunctionType, node: ast.Call) -> lang.Func:
        """A plain Python function a kernel calls: Quadrants calls it with its expressions, the
        same as inlining it as a @qd.func, with Python's own semantics (warned of, as Quadrants
        warns, for a `def`)."""
        if fn.__name__ != "<lambda>":
            self.warn(node, "plain-function", f"`{fn.__qualname__}` is a plain Python function: it is translated as "
                                              "a @qd.func", hint="decorate it with @qd.func")
        implicit = _IMPLICIT_FUNCS.get(fn)
        if implicit is None:
            implicit = _IMPLICIT_FUNCS[fn] = lang.Func(fn)
        return implicit

    def print_call(self, node: ast.Call):
        """``print(a, "text", b, sep=..., end=...)``, f-strings and ``"...".format(...)``
        among the arguments: values known at translation time become text, the others the
        device's printf arguments (with the ``{x:.3f}`` spec given, as printf spells it)."""
        opts = {}
        for kw in node.keywords:
            if kw.arg not in ("sep", "end"):
                raise self.error(kw.value, f"print() in a kernel takes sep= and end=, not {kw.arg}=")
            opts[kw.arg] = self.static_value(kw.value, what=f"print({kw.arg}=...)")
            if not isinstance(opts[kw.arg], str):
                raise self.error(kw.value, f"print({kw.arg}=...) must be a string")
        sep, end = opts.get("sep", " "), opts.get("end", "\n")
        chunks, args, specs, text = [], [], [], ""
        for k, a in enumerate(node.args):
            if k:
                text += sep
            for piece, spec, at in self.print_parts(a):
                if isinstance(piece, str):
                    text += piece
                    continue
                e = self.to_expr(piece, at)
                chunks.append(text)
                args.append(e)
                specs.append(_printf_spec(self, spec, e.type, at))
                text = ""
        chunks.append(text + end)
        self.emit(ir.Print(self.loc(node), tuple(chunks), args, tuple(specs) if any(s != ("", "") for s in specs)
                           else ()))
        return CT(None)

    def print_parts(self, a: ast.expr) -> list[tuple]:
        """One print() argument as (text or run-time scalar, format spec, node) pieces: an
        f-string and ``"...".format(...)`` by their fields."""
        if isinstance(a, ast.JoinedStr):
            out = []
            for v in a.values:
                if isinstance(v, ast.Constant):
                    out.append((v.value, "", v))
                    continue
                spec = "" if v.format_spec is None else "".join(  # `{x:.3f}`, `{x:{w}.3f}` with w known now
                    str(p.value) if isinstance(p, ast.Constant) else
                    format(self.static_value(p.value, what="a nested field of a format spec"))
                    for p in v.format_spec.values)
                out += self.value_parts(self.expr(v.value), spec, v.value)
            return out
        if isinstance(a, ast.Call) and isinstance(a.func, ast.Attribute) and a.func.attr == "format" and \
                isinstance(a.func.value, ast.Constant) and isinstance(a.func.value.value, str):
            return self.format_parts(a)
        v = self.expr(a)
        if isinstance(v, CT) and isinstance(v.value, (bool, int, float)):  # (an f-string field: Python's text)
            return [(_known_scalar_text(v.value), "", a)]
        return self.value_parts(v, "", a)

    def format_parts(self, call: ast.Call) -> list[tuple]:
        """``"x = {} ({:.2f})".format(a, b)``, positional, numbered or named fields."""
        if any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
            raise self.error(call, "format() in a kernel takes its values one by one, not *args or **kwargs")
        named = {k.arg: k.value for k in call.keywords}
        out, auto = [], 0
        try:
            fields = list(string.Formatter().parse(call.func.value.value))
        except ValueError as exc:
            raise self.error(call.func.value, f"bad format string: {exc}") from None
        for literal, name, spec, _conversion in fields:
            if literal:
                out.append((literal, "", call))
            if name is None:
                continue
            if name == "":
                name, auto = str(auto), auto + 1
            if name.isdigit():
                if int(name) >= len(call.args):
                    raise self.error(call, f"format() has no argument {name}")
                node = call.args[int(name)]
            elif name in named:
                node = named[name]
            else:
                raise self.error(call, f"format() has no argument `{name}` (only plain names and indices)")
            out += self.value_parts(self.expr(node), spec or "", node)
        return out

    def value_parts(self, v, spec: str, node) -> list[tuple]:
        """What print() shows for a value: text known now, and run-time scalars between
        (a vector as [x, y, z], a matrix as rows of those, a struct as {a: ..., b: ...})."""
        if isinstance(v, CT) and isinstance(v.value, (str, bool, int, float)):
            m = _SPEC.fullmatch(spec) if spec and type(v.value) in (int, float) else None
            try:
                if m is None or m.group(5) and m.group(5) not in "iu":
                    return [(format(v.value, spec) if spec else str(v.value), "", node)]
            except ValueError as exc:
                if m is None:
                    raise self.error(node, f"'{spec}' cannot format {v.value!r}: {exc}") from None
            # As printf prints a run-time value with this spec, which Quadrants gives known values
            # too: no letter is f for a float, d for an integer (`{x:.5}` of 3.0: 3.00000, of 3:
            # 00003), where Python's format would print 3.0 and refuse the integer.
            letter = m.group(5) or ("f" if isinstance(v.value, float) else "d")
            try:
                return [(("%" + m.group(1) + m.group(2) + (m.group(3) or "") + letter.replace("u", "d"))
                         % v.value, "", node)]
            except (TypeError, ValueError) as exc:
                raise self.error(node, f"'{spec}' cannot format {v.value!r}: {exc}") from None
        if isinstance(v, MatrixValue):
            if v.is_vector:
                rows = [v.items]
            else:
                rows = [v.items[r * v.shape[1]:(r + 1) * v.shape[1]] for r in range(v.shape[0])]
            out: list = [("[" if v.is_vector else "[[", "", node)]
            for r, row in enumerate(rows):
                if r:
                    out.append(("], [", "", node))
                for k, e in enumerate(row):
                    out += ([(", ", "", node)] if k else []) + self.value_parts(e, spec, node)
            return out + [("]" if v.is_vector else "]]", "", node)]
        if isinstance(v, StructValue):
            out = [("{", "", node)]
            for k, (name, m) in enumerate(v.members.items()):
                out += [(", " if k else "", "", node), (f"{name}: ", "", node)] + self.value_parts(m, spec, node)
            return out + [("}", "", node)]
        items = [ir.Shape(T.i32, self.loc(node), v.array, d) for d in range(v.array.type.ndim)] \
            if isinstance(v, ShapeHandle) else sequence_items(v)
        if items is not None:  # a list or tuple (`print([k, x.shape])`): as Quadrants shows it, [a, [b, c]]
            out = [("[", "", node)]
            for k, item in enumerate(items):
                out += ([(", ", "", node)] if k else []) + self.value_parts(item, spec, node)
            return out + [("]", "", node)]
        return [(v, spec, node)]

    def inline(self, func: lang.Func, node: ast.Call):
        params = list(signature(func.fn).parameters)
        by_ref = template_params(func.fn)
        args = [self.argument(k < len(params) and params[k] in by_ref, a) for k, a in enumerate(node.args)]
        kwargs = {k.arg: self.argument(k.arg in by_ref, k.value) for k in node.keywords}
        return self.inline_values(func, node, args, kwargs)

    def argument(self, by_reference: bool, node: ast.expr):
        """An argument's value; a variable given to a qd.template() parameter (a scalar, a
        vector or a struct, such as a tile) is the variable itself, as in Quadrants: the
        callee's assignments to it are the caller's."""
        if by_reference and isinstance(node, ast.Name):
            bound, scope = self.body.scope.lookup(node.id)
            if isinstance(bound, (ir.Local, MatrixVar, KernelVar)) and not getattr(bound, "loop_var", False):
                return NameAlias(node.id, self.body.scope)
        if by_reference and isinstance(node, (ast.Name, ast.Attribute)):
            found = self.resolve_var(node)
            if found is not None and isinstance(found[0], StructVar):
                return found[0]
        return self.expr(node)

    def inline_values(self, func: lang.Func, node: ast.Call | ir.Loc, args: list, kwargs: dict | None = None):
        """Inline ``func`` called at ``node`` (or a location) with argument values already lowered."""
        if func.fn in self.body.inline_stack:
            raise self.error(node, f"recursion is not supported: `{func.__name__}` calls itself",
                             hint="rewrite it as a loop")
        if func.requires_top_level:
            raise self.error(node, f"`{func.__name__}` must be called as a statement at the top level of a kernel: "
                                   "it runs as several GPU tasks, in order",
                             hint="move the call out of loops, `if`s and expressions (a `qd.static` loop or "
                                  "`if qd.static(...)` is fine)")
        parsed = parse_function(func.fn)
        fdef = parsed.node
        try:
            arguments = bind_arguments(func.fn, args, kwargs or {})
        except TypeError as exc:
            raise self.error(node, f"bad arguments to `{func.__name__}`: {call_mismatch(exc)}") from None
        body = without_docstring(fdef)
        frame = _FuncFrame(func.fn, parsed, f"{func.__name__.lstrip('_')}_result")
        outer_block = self.body.block
        start = len(outer_block)
        # The callee sees its parameters and its own globals, never the caller's locals;
        # its new names still nest inside the caller's block for C scoping.
        callee_root = Scope(self.body.scope, isolated=True)
        annotations = func_annotations(func.fn) if fdef.args.args or fdef.returns else {}
        if isinstance(annotations.get("return"), T.DType):
            frame.return_type = annotations["return"]
        call_site = node if isinstance(node, ir.Loc) else self.loc(node)
        with self.declaring() as declares, \
                self.inlining(frame, callee_root, call_site):
            runtime_params = self.bind_inline_arguments(func, parsed, arguments, annotations, body, callee_root,
                                                        call_site)
            body = self.static_select(body)
            self.check_returns(body, parsed, func)
            if annotations.get("return") is not None and not return_count(tuple(without_docstring(fdef))):
                raise TranspileError(f"Function has a return type but does not have a return statement: "
                                     f"@qd.func `{func.__name__}` is annotated to return a value but never "
                                     f"returns one", parsed.loc(fdef.returns), hint="end it with `return VALUE`")
            self.bind_runtime_arguments(runtime_params, body, fdef, annotations, callee_root, node, call_site)
            result = self.inlined_body(body, frame, call_site)
        outer_block[start:start] = declares
        return result

    def bind_inline_arguments(self, func: lang.Func, parsed: ParsedFunction, arguments: dict, annotations: dict,
                              body: list[ast.stmt], callee_root: Scope, call_site: ir.Loc) -> list[tuple[str, object]]:
        """Binds in ``callee_root`` the parameters that take their argument as it is (or a
        copy of a vector, struct or index list); returns the others, the run-time scalars."""
        fdef = parsed.node
        assigned, written = store_counts(fdef), component_stores(fdef)
        uses = name_loads(body)
        runtime_params = []
        for pname, value in arguments.items():
            if isinstance(value, MatrixValue):
                callee_root.names[pname] = self.matrix_argument(
                    func, pname, value, annotations.get(pname),
                    pname in assigned or pname in written or uses.get(pname, 0) > 1, call_site)
                continue
            if isinstance(value, (StructVar, NameAlias)):  # a template's or a method's self:
                callee_root.names[pname] = value          # the caller's variable itself
                continue
            if isinstance(value, StructValue):
                # A tile's methods update it in place: the user's function gets its own copy
                # (arguments are passed by value); the library's read theirs.
                own = pname in assigned or (pname in written and not is_tile(value) and _plain_data(value)) or \
                    (is_tile(value) and not is_library(parsed.file))
                callee_root.names[pname] = self.declare_struct(pname, value, call_site) if own else value
                continue
            if isinstance(value, TupleValue):  # `f(a, [i, j])`: an index list, each item computed once
                callee_root.names[pname] = self.freeze_sequence(pname, value, call_site)
                continue
            if isinstance(value, StructArray):  # a field of structs, as a template argument: by reference
                callee_root.names[pname] = value
                continue
            if isinstance(value, (CT, ArrayHandle, ShapeHandle)) and (
                    not isinstance(value, CT) or not is_py_scalar(value.value) or pname not in assigned):
                callee_root.names[pname] = value
            else:
                runtime_params.append((pname, value))
        return runtime_params

    def bind_runtime_arguments(self, runtime_params: list[tuple[str, object]], body: list[ast.stmt],
                               fdef: ast.FunctionDef, annotations: dict, callee_root: Scope, node: ast.Call | ir.Loc,
                               call_site: ir.Loc) -> None:
        """A run-time scalar argument: substituted where the body reads it once (or it is
        simple), else computed once into a local of the callee."""
        assigned = store_counts(fdef)
        single = len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None
        uses = name_loads(body)
        for pname, value in runtime_params:
            ann = annotations.get(pname)
            e = self.to_expr(value, node)
            if isinstance(ann, T.DType):
                e = self.coerce(e, ann, node, explicit=True)
            inline_once = single and uses.get(pname, 0) <= 1 and not has_side_effects(e)
            if pname in assigned or not (is_simple(e) or inline_once):
                var = ir.Local(pname, e.type, self.loc(fdef))
                self.emit(ir.Declare(call_site, var, e))
                callee_root.names[pname] = var
            else:
                callee_root.names[pname] = e

    def inlined_body(self, body: list[ast.stmt], frame: _FuncFrame, call_site: ir.Loc):
        """The inlined function's statements, lowered; returns the call's value."""
        returns = return_count(tuple(body))
        if body and isinstance(body[-1], ast.Return) and body[-1].value is not None and returns == 1:
            # One return, at the very end: its value is the call's value, no result variable.
            for st in body[:-1]:
                self.stmt(st)
            result = self.expr(body[-1].value)
            if frame.return_type is not None and not isinstance(result, (TupleValue, MatrixValue, StructValue)):
                result = self.coerce(self.to_expr(result, body[-1].value), frame.return_type, body[-1].value,
                                     explicit=True)
            return result
        for st in body:
            self.stmt(st)
        if frame.returns_tuple is not None:
            return TupleValue([ir.LocalRef(v.type, v.loc, v) for v in frame.returns_tuple])
        if isinstance(frame.result, MatrixVar):
            return self.read_matrix(frame.result, None, call_site)
        if isinstance(frame.result, StructVar):
            return self.read_struct(frame.result, None, call_site)
        if frame.result is not None:
            return ir.LocalRef(frame.result.type, call_site, frame.result)
        return CT(None)

    def matrix_argument(self, func: lang.Func, pname: str, value: MatrixValue, ann, copy: bool, site: ir.Loc):
        """A vector or matrix passed to a @qd.func parameter: converted to its annotation's
        dtype, and copied into the callee's own variable when it assigns the parameter or
        reads it more than once."""
        if isinstance(ann, MatrixType):
            if ann.shape != value.shape:
                n, want = value.shape[0], ann.shape[0]  # (Quadrants' words first, where they apply)
                rows = f"`{pname}` is expected to be a Matrix with n {want}, but got {n}: " if n != want else ""
                raise self.error(site, f"{rows}parameter `{pname}` of `{func.__name__}` is {ann!r}, given "
                                       f"{describe(value.shape)}")
            value = self.make_matrix(value.shape, value.items, site, self.as_dtype(ann.dtype, site))
        if copy and not all(isinstance(e, (ir.Const, ir.LocalRef, ir.ParamRef)) for e in value.items):
            return self.declare_matrix(pname, value, site)
        if copy:
            fdef = parse_function(func.fn).node
            return self.declare_matrix(pname, value, site) \
                if pname in store_counts(fdef) or pname in component_stores(fdef) else value
        return value

    def static_select(self, body: list[ast.stmt]) -> list[ast.stmt]:
        """A function body with each `if qd.static(...)` that holds a `return` replaced by its
        chosen branch, and what follows a chosen branch that returns dropped: Quadrants stops
        building a function at a return it reaches at translation time, so
        `if qd.static(c): return a` before more code is an early return, not a misplaced one.
        A condition that reads a name the body assigns before it is left to be decided in
        order. `if qd.static(...)` chains that make up the whole body pick their branch too, so
        a function like `if static(op == "add"): return a + b ...` inlines as an expression."""
        out: list[ast.stmt] = []
        for st in body:
            if isinstance(st, ast.If) and self.is_static_call(st.test) and return_count((st,)) and \
                    not _names(st.test, ast.Load) & {n for s in out for n in _names(s, ast.Store)}:
                chosen = self.static_select(st.body if self.static_value(st.test) else st.orelse)
                out += chosen
                if chosen and _returns_always(chosen[-1]):
                    break  # the rest of the body is never reached
            else:
                out.append(st)
        while len(out) == 1 and isinstance(out[0], ast.If) and self.is_static_call(out[0].test):
            out = out[0].body if self.static_value(out[0].test) else out[0].orelse
        return out

    def check_returns(self, body: list[ast.stmt], parsed: ParsedFunction, func: lang.Func) -> None:
        """``return`` may only end the function (possibly in both arms of a final if)."""
        bad = misplaced_return(tuple(body))
        if bad is not None:
            raise TranspileError(f"`return` in @qd.func `{func.__name__}` must be its last statement",
                                 parsed.loc(bad), hint="assign to a result variable and return it at the end")


def _plain_data(value: StructValue) -> bool:
    """A struct of values (scalars, vectors, structs of them), which a function's writes to
    its members must not reach the caller through; a dataclass of ndarrays holds references,
    and writing through them is the point (``s.x[i] += 1``)."""
    return all(isinstance(m, (ir.Expr, MatrixValue)) or (isinstance(m, StructValue) and _plain_data(m))
               for m in value.members.values())


@lru_cache(maxsize=8192)  # (parsed trees live as long as the process: once per statement)
def _names(node: ast.AST, ctx: type) -> frozenset[str]:
    return frozenset(n.id for n in ast_nodes(node) if type(n) is ast.Name and isinstance(n.ctx, ctx))


def _returns_always(st: ast.stmt) -> bool:
    """A `return`, or an `if` each of whose arms ends in one."""
    if isinstance(st, ast.Return):
        return True
    return isinstance(st, ast.If) and bool(st.body) and bool(st.orelse) and \
        _returns_always(st.body[-1]) and _returns_always(st.orelse[-1])


@lru_cache(maxsize=1024)
def template_params(fn) -> frozenset[str]:
    """The qd.template() parameters of a @qd.func, read once per function (as its annotations are)."""
    if not parse_function(fn).node.args.args:
        return frozenset()
    return frozenset(name for name, ann in func_annotations(fn).items() if lang.param_kind(ann) == "template")


@lru_cache(maxsize=4096)
def misplaced_return(body: tuple[ast.stmt, ...]) -> ast.Return | None:
    """The first ``return`` in a function body that does not end it, if any (read once per
    body, as the parsed trees are never changed)."""

    def first(stmts: list[ast.stmt] | tuple[ast.stmt, ...], tail: bool) -> ast.Return | None:
        for k, st in enumerate(stmts):
            last = tail and k == len(stmts) - 1
            if isinstance(st, ast.Return) and not last:
                return st
            found = None
            if isinstance(st, ast.If):
                found = first(st.body, last) or first(st.orelse, last)
            elif isinstance(st, (ast.For, ast.While)):
                found = first(st.body, False)
            if found is not None:
                return found
        return None

    return first(body, True)


_SPEC = re.compile(r"([-+ #0]*)(\d*)(\.\d+)?(hh|h|ll|l|z|j|t)?([a-zA-Z]?)")


def _known_scalar_text(value: bool | int | float) -> str:
    """A value known at translation time, a print() argument of its own, as Quadrants prints
    it: a run-time value of the default type (True as 1, 2.0 as 2.000000 in f32)."""
    if isinstance(value, float):
        fp = T.defaults().fp
        if fp is T.f64:
            return format(value, ".12f")
        try:  # rounded to the default float (an f32, or an f16)
            value = struct.unpack("<e" if fp is T.f16 else "<f", struct.pack("<e" if fp is T.f16 else "<f", value))[0]
        except OverflowError:
            value = pymath.copysign(pymath.inf, value)
        return format(value, "f")
    return str(int(value))


def _printf_spec(lo, spec: str, dtype: T.DType, node) -> tuple[str, str]:
    """A format spec of a run-time value (``.3f``, ``08d``, ``x``) as printf's flags, width
    and precision, and its conversion letter. As in Quadrants, the letter must fit the type:
    a float takes f F e E g G a A, a signed integer d i, an unsigned one u o x X; one that
    does not is an error ("'.2d' doesn't match 'f32'")."""
    if not spec:
        return ("", "")
    m = _SPEC.fullmatch(spec)
    letters = "fFeEgGaA" if dtype.is_float else "di" if dtype.is_signed else "uoxX"
    if m is None or (m.group(5) and m.group(5) not in letters):
        example = "{x:8.3f}" if dtype.is_float else "{n:08d}" if dtype.is_signed else "{n:x}"
        raise lo.error(node, f"'{spec}' doesn't match '{dtype.name}'",
                       hint=f"a {dtype.name} takes flags, a width, a precision and one of {', '.join(letters)} "
                            f"(e.g. {example})")
    flags, width, precision, _length, letter = m.groups()
    return (f"{flags}{width}{precision or ''}", letter)


# ----------------------------------------------------------------------------- Python's built-ins

# Python's built-in functions a kernel calls with run-time values, by the function. A handler
# returns None where the call is not its case (then the call runs at translation time).
PY_CALLS = HandlerTable()


@PY_CALLS.handler(int, float, bool)
def _conversion(lo: CallLowering, fn, node: ast.Call):
    if len(node.args) != 1 or node.keywords:
        return None

    def convert(call: ast.Call):  # its argument, lowered once, under a bound name
        v = lo.expr(call.args[0])
        if isinstance(v, CT):
            try:
                return CT(fn(v.value))
            except Exception as exc:  # noqa: BLE001
                raise lo.error(node, f"cannot evaluate `{ast.unparse(node)}` at translation time: "
                                     f"{exc}") from None
        return cast_call(lo, T.python_type(fn), call)

    return lo.builtin_elementwise(convert, node)


@PY_CALLS.handler(print)
def _print(lo: CallLowering, fn, node: ast.Call):
    return lo.print_call(node)


@PY_CALLS.handler(len)
def _len(lo: CallLowering, fn, node: ast.Call):
    if len(node.args) != 1:
        return None
    arg = lo.expr(node.args[0])
    if isinstance(arg, ArrayHandle) and isinstance(arg.array, ir.Param):
        shape = lo.field_shape(arg.array)
        return CT(shape[0]) if shape else ir.Shape(T.i32, lo.loc(node), arg.array, 0)
    if isinstance(arg, MatrixValue):  # a vector's size, a matrix's rows
        return CT(arg.shape[0])
    if isinstance(arg, TupleValue):
        return CT(len(arg.items))
    return None


@PY_CALLS.handler(builtins.pow)
def _pow(lo: CallLowering, fn, node: ast.Call):
    if len(node.args) != 2 or node.keywords:
        return None
    return lo.binop("pow", lo.expr(node.args[0]), lo.expr(node.args[1]), node)  # pow(x, 2): x ** 2


@PY_CALLS.handler(builtins.all, builtins.any)
def _all_any(lo: CallLowering, fn, node: ast.Call):
    if len(node.args) != 1 or node.keywords:
        return None
    v = lo.as_matrix(lo.expr(node.args[0]), node.args[0])
    if isinstance(v, MatrixValue):  # all(-0.1 <= x[i] <= 1.1): every component, as .all() does
        return lo.call_method(MethodValue(v, fn.__name__), ast.copy_location(ast.Call(node.func, [], []), node))
    if isinstance(v, CT) and not isinstance(v.value, (list, tuple)):
        raise lo.error(node.args[0], f"{fn.__name__}() takes a vector or a list of values")
    return None


@PY_CALLS.handler(builtins.min, builtins.max, builtins.abs)
def _min_max_abs(lo: CallLowering, fn, node: ast.Call):
    return call_builtin(lo, fn.__name__, node)

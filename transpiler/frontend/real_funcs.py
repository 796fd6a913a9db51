"""Lowering of ``@qd.real_func`` calls: each distinct signature (scalar parameter types,
the arrays and translation-time values bound to its other parameters) becomes one
``ir.Function`` of the kernel, lowered once, and every call an ``ir.Call``.

Unlike an inlined ``@qd.func``, a real function may ``return`` anywhere and may call
itself (where the target allows recursion: see ``Capabilities.recursion``). It runs on
the calling thread alone, outside the block's collective context: barriers, subgroup and
block operations, thread indices, shared arrays and qd.random belong to the kernel (or
to an inlined @qd.func) instead.
"""
from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field

from .. import lang
from ..errors import call_mismatch
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.memo import Identity
from ..ir.walk import all_exprs, all_stmts
from ..lang.kernel import RefAnnotation
from ..lang.matrix import MatrixType
from .calls import template_params
from .common import calls_with_names, is_py_scalar, signature, without_docstring
from .kernel_scope import result_type
from .scopes import Scope, _FuncFrame
from .source import parse_function
from .structs import leaves, member_type
from .values import CT, ArrayHandle, MatrixValue, MatrixVar, ShapeHandle, StructValue, StructVar, TupleValue
from ..errors import TranspileError

# IR a real function cannot contain, and the user-facing name of what made it.
_COLLECTIVE = {
    ir.ThreadIndex: "thread and block indices", ir.SubgroupOp: "subgroup operations",
    ir.BlockVote: "block votes", ir.Barrier: "barriers",
}
_EFFECTS = (ir.Store, ir.Print, ir.Fence, ir.ShmemFence, ir.ShmemQuiet, ir.ShmemBarrierAll)


@dataclass
class _RealCallArguments:
    """A real function call's arguments, sorted by how they are passed."""

    key: list                                                  # the signature: the function, then per parameter
    fixed: dict[str, object] = field(default_factory=dict)     # name -> array handle or translation-time value
    compound: dict[str, object] = field(default_factory=dict)  # name -> vector / matrix / struct type
    scalars: list[tuple[str, T.DType, ir.Expr]] = field(default_factory=list)  # (flat name, dtype, value)
    refs: list[tuple[str, ir.Local]] = field(default_factory=list)  # qd.ref parameters: the caller's variables
    writebacks: list = field(default_factory=list)             # (kernel-scope variable, the local passed for it)


class RealFuncLowering:
    """Real-function methods of KernelLowering."""

    @property
    def real_function(self) -> ir.Function | None:
        """The real function whose body is being lowered (None: a kernel's)."""
        return self.frame.function

    def real_call(self, func: lang.RealFunc, node: ast.Call, instance: CT | None = None):
        """A call of a @qd.real_func (``instance``: the ``self`` of a method, a translation-time
        value): the function instantiated for the arguments' signature, and the call."""
        parsed = parse_function(func.fn)
        try:
            annotations = inspect.get_annotations(func.fn, eval_str=True)
        except Exception as exc:  # noqa: BLE001 - any failure evaluating user annotations
            raise self.error(node, f"cannot evaluate the annotations of @qd.real_func `{func.__name__}`: {exc}") \
                from None
        args = self.real_call_arguments(func, node, instance, annotations)
        result = self.function_result(func, parsed.node, annotations)
        fn = self.function_keys.get(tuple(args.key))
        if fn is None:
            try:
                fn = self.lower_function(func, parsed, tuple(args.key), args.fixed,
                                         [(n, t) for n, t, _ in args.scalars], result, args.compound,
                                         [(n, v.type) for n, v in args.refs])
            except TranspileError as exc:  # located in the function: say which call led there
                exc.called_from(self.loc(node), func.__name__)
                raise
        elif fn in self.function_stack:
            # A call back into a function still being lowered: recursion. Every function on
            # the cycle is recursive; the callee is defined after the caller, so it is
            # declared ahead of its definition unless it calls itself.
            cycle = self.function_stack[self.function_stack.index(fn):]
            for f in cycle:
                f.recursive = True
            if fn is not self.function_stack[-1]:
                fn.forward = True
        caller = self.function_stack[-1].name if self.function_stack else None
        if caller is not None and fn.name not in self.function_calls[caller]:
            self.function_calls[caller].append(fn.name)
        return self.emit_real_call(fn, result, args, node)

    def real_call_arguments(self, func: lang.RealFunc, node: ast.Call, instance: CT | None,
                            annotations: dict) -> _RealCallArguments:
        """The call's arguments, each as its parameter's annotation passes it, and the
        signature they make (the key of the function's instantiation)."""
        head = [instance] if instance is not None else []
        values = head + [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        try:
            bound = signature(func.fn).bind(*values, **kwargs)
        except TypeError as exc:
            raise self.error(node, f"bad arguments to `{func.__name__}`: {call_mismatch(exc)}") from None
        bound.apply_defaults()
        arg_nodes = dict(zip(bound.arguments, [node.func] * len(head) + list(node.args), strict=False))
        args = _RealCallArguments([func.fn])
        for pname, value in bound.arguments.items():
            at = arg_nodes.get(pname, node)
            ann = lang.self_annotation(func.fn, pname, annotations.get(pname))
            kind = lang.param_kind(ann) if ann is not None else None
            if kind == "scalar":
                dtype = T.python_type(ann) or ann
                e = self.coerce(self.to_expr(value, at), dtype, at, explicit=True)
                args.scalars.append((pname, dtype, e))
                args.key.append((pname, dtype.name))
            elif kind == "compound":  # a vector, matrix or struct: its scalars, each a parameter
                for flat, dtype, path in leaves(ann, pname):
                    e = self.to_expr(_component(self, value, path, at, pname), at)
                    e = self.coerce(e, dtype, at, explicit=True)
                    args.scalars.append((flat, dtype, e))
                args.key.append((pname, repr(ann), id(ann)))
                args.compound[pname] = ann
            elif kind == "ref":
                args.refs.append((pname, self.ref_argument(func, pname, T.python_type(ann.dtype) or ann.dtype, at,
                                                           args.writebacks)))
                args.key.append((pname, "ref", args.refs[-1][1].type.name))
            elif kind in ("template", "ndarray") or isinstance(value, (ArrayHandle, ShapeHandle)):
                args.key.append((pname, self.fixed_argument(func, pname, ann, kind, value, at)))
                args.fixed[pname] = value
            elif ann is None:
                raise self.error(at, f"parameter `{pname}` of @qd.real_func `{func.__name__}` has no type annotation",
                                 hint=f"a real function is compiled once per signature: annotate it, e.g. "
                                      f"`{pname}: qd.i32`, `{pname}: qd.types.ndarray()` or `{pname}: qd.template()`")
            else:
                raise self.error(at, f"parameter `{pname}` of @qd.real_func `{func.__name__}` has an unsupported "
                                     f"annotation {ann!r}", hint="use a scalar type (qd.i32, qd.f32, int, float, "
                                                                 "bool), an ndarray annotation or qd.template()")
        return args

    def emit_real_call(self, fn: ir.Function, result, args: _RealCallArguments, node: ast.Call):
        """The call of ``fn``: a statement, or an expression where Python's order of effects
        allows it; a compound result comes back in locals of ours."""
        loc = self.loc(node)
        scalars, writebacks = [e for _, _, e in args.scalars], args.writebacks
        # our variables it takes by reference, then our random stream where it draws
        inouts = [v for _, v in args.refs] + ([self.random_state(loc)] if fn.name in self.function_rngs else [])
        if result is not None and not isinstance(result, T.DType):  # its scalars come back in locals of ours
            outs = [self.new_temp(f"{fn.name}_{flat}", ir.Const(dtype, loc, 0), node)
                    for flat, dtype, _ in _result_leaves(result, "r")]
            self.emit(ir.ExprStmt(loc, ir.Call(ir.VOID, loc, fn.name, scalars, outs + inouts)))
            self.store_back(writebacks, loc)
            return _value_of(result, [ir.LocalRef(v.type, loc, v) for v in outs])
        call = ir.Call(result or ir.VOID, loc, fn.name, scalars, inouts)
        if result is None:
            self.emit(ir.ExprStmt(loc, call))
            self.store_back(writebacks, loc)
            return CT(None)
        if writebacks:
            tmp = self.new_temp(f"{fn.name}_result", call, node)
            self.store_back(writebacks, loc)
            return ir.LocalRef(tmp.type, loc, tmp)
        if fn in self.function_stack or fn.inouts or not _pure(fn, self.functions):
            # Its effects happen where Python has them: before the rest of the expression.
            tmp = self.new_temp(f"{fn.name}_result", call, node)
            return ir.LocalRef(tmp.type, loc, tmp)
        return call

    def store_back(self, writebacks: list, loc: ir.Loc) -> None:
        """What a call wrote into the locals passed for kernel-scope variables, stored into them."""
        for kv, local in writebacks:
            self.emit(ir.Store(loc, kv.param, [], ir.LocalRef(local.type, loc, local)))

    def fixed_argument(self, func: lang.RealFunc, pname: str, ann, kind: str | None, value, at: ast.AST):
        """What an array or qd.template() argument contributes to the instantiation's key."""
        what = f"argument `{pname}` of @qd.real_func `{func.__name__}`"
        if isinstance(value, ShapeHandle):
            return ("shape", id(value.array))
        if isinstance(value, ArrayHandle):
            array = value.array
            if isinstance(array, ir.SharedArray):
                raise self.error(at, f"{what} is a block's SharedArray, which a real function cannot see",
                                 hint="make the callee a @qd.func (inlined), or pass the elements it needs")
            if kind == "ndarray":
                want = lang.ndarray_annotation(ann)
                dtype = T.python_type(want.dtype) or want.dtype
                shape = ()
                if isinstance(dtype, MatrixType):  # vec3 elements: a shape, and a scalar type if it names one
                    shape, dtype = dtype.shape, T.python_type(dtype.dtype) or dtype.dtype
                got = getattr(array.type, "element_shape", ())
                if (dtype is not None and dtype != array.type.dtype) or (shape and shape != got):
                    raise self.error(at, f"{what} is an ndarray of {_elements(array.type.dtype, got)}, but the "
                                         f"parameter is annotated {_elements(dtype, shape)}")
                if want.ndim is not None and want.ndim != array.type.ndim:
                    raise self.error(at, f"{what} is a {array.type.ndim}-d ndarray, but the parameter is "
                                         f"annotated ndim={want.ndim}")
            return ("array", id(array))
        if kind == "ndarray":
            raise self.error(at, f"{what} must be an ndarray")
        if isinstance(value, CT):
            try:
                hash(value.value)
                return ("value", type(value.value).__name__, value.value)
            except TypeError:
                return ("object", Identity(value.value))
        raise self.error(at, f"{what} is a qd.template() parameter: its value must be known at translation time",
                         hint="annotate the parameter with a scalar type (e.g. qd.i32) to pass a run-time value")

    def function_result(self, func: lang.RealFunc, fdef: ast.FunctionDef, annotations: dict):
        """The declared return type: a scalar dtype, a vector / matrix / struct type, or None
        (returns nothing)."""
        ann = annotations.get("return")
        returns_value = any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(fdef))
        if fdef.returns is None or ann is None:
            if returns_value:
                raise self.error(fdef, f"@qd.real_func `{func.__name__}`: its return value must be annotated",
                                 hint=f"declare its type, e.g. `def {func.__name__}(...) -> qd.i32:`")
            return None
        # a dtype; a vector, matrix or struct (written into out parameters); or a tuple of them
        # (`-> (Ray, vec3, bool)`, `-> tuple[qd.f32, qd.i32]`), read as a kernel's result is
        found = result_type(ann)
        if found is not None:
            return found
        raise self.error(fdef.returns, f"a @qd.real_func returns a scalar, a vector, a matrix or a struct, not {ann!r}",
                         hint="annotate it with qd.f32, qd.math.vec3, a qd.types.struct(...) and the like")

    def function_name(self, func: lang.RealFunc) -> str:
        base = func.__name__.lstrip("_") or "func"
        taken = {f.name for f in self.function_keys.values()}
        name, k = base, 1
        while name in taken:
            name = f"{base}_{k}"
            k += 1
        return name

    def ref_names(self) -> frozenset[str]:
        """The names the function being lowered hands to a callee that may assign them: to a
        @qd.real_func's qd.ref parameters, to a @qd.func's qd.template() ones (the callee's
        variable is the caller's), and to any call whose function is not known here.
        Assignments are then not all their stores (read once per function)."""
        frame = self.frame
        found = getattr(frame, "ref_names", None)
        if found is None:
            found = set()
            refs = getattr(RefAnnotation, "used", False)
            for call, names in calls_with_names(frame.parsed.node):
                callee = self.named_value(call.func)
                if isinstance(callee, lang.RealFunc):
                    if not refs:
                        continue
                    hints = inspect.get_annotations(callee.fn, eval_str=True)
                    params = list(signature(callee.fn).parameters)
                    by_ref = {p for p in params if isinstance(hints.get(p), RefAnnotation)}
                elif isinstance(callee, (lang.Func, lang.BoundFunc)):
                    fn = callee.fn if isinstance(callee, lang.Func) else callee.func.fn
                    by_ref = template_params(fn)
                    params = list(signature(fn).parameters)[0 if isinstance(callee, lang.Func) else 1:]
                elif callee is None:  # (a method of a run-time value; a name bound later)
                    found.update(names)
                    continue
                else:
                    continue
                passed = list(zip(params, call.args, strict=False)) + [(k.arg, k.value) for k in call.keywords]
                found |= {a.id for p, a in passed if isinstance(a, ast.Name) and p in by_ref}
            found = frame.ref_names = frozenset(found)
        return found

    def ref_argument(self, func: lang.RealFunc, pname: str, dtype: T.DType, at: ast.AST,
                     writebacks: list) -> ir.Local:
        """The caller's variable a ``qd.ref`` parameter takes: a scalar local of that dtype,
        which the call may write. A kernel-scope variable that lives in a scratch buffer here
        (a top-level local that serial code shares between tasks, or a parallel loop updates)
        goes through a local of its value, stored back after the call (into ``writebacks``)."""
        what = f"argument `{pname}` of @qd.real_func `{func.__name__}`"
        bound, scope = self.body.scope.lookup(at.id) if isinstance(at, ast.Name) else (None, None)
        shared = self.shared_for_update(bound, scope) if self.body.in_parallel and scope is self.kernel_scope else \
            self.shared_for_read(bound, scope)
        if shared is not None:
            if shared.type != dtype:
                raise self.error(at, f"{what} is a qd.ref({dtype.name}) parameter; `{at.id}` is {shared.type.name}",
                                 hint=f"declare it as {dtype.name}, e.g. `{at.id} = qd.{dtype.name}(0)`")
            if self.body.in_parallel:
                self.warn(at, "shared-store", f"every thread of this parallel loop passes `{at.id}`, a variable "
                                              f"defined outside it, to a qd.ref parameter of `{func.__name__}`: "
                                              "after the loop it holds one thread's value (a race, as in Quadrants)",
                          hint=f"update it with `{at.id} += v` (a reduction) instead")
            local = self.new_temp(at.id, self.load_var(shared, self.loc(at)), at)
            writebacks.append((shared, local))
            return local
        if not isinstance(bound, ir.Local):
            raise self.error(at, f"{what} is a qd.ref parameter: pass a scalar local variable, which the call may "
                                 "change", hint=f"assign the value to a local first: `v = ...`, then "
                                                f"`{func.__name__}(v)`")
        if bound.type != dtype:
            raise self.error(at, f"{what} is a qd.ref({dtype.name}) parameter; `{at.id}` is {bound.type.name}",
                             hint=f"declare it as {dtype.name}, e.g. `{at.id} = qd.{dtype.name}(0)`")
        self.check_writable(bound, scope, at)
        return bound

    def lower_function(self, func: lang.RealFunc, parsed, key: tuple, fixed: dict,
                       params: list[tuple[str, T.DType]], result: T.DType | None,
                       compound: dict | None = None, refs: list | None = None) -> ir.Function:
        fdef = parsed.node
        arg_nodes = {a.arg: a for a in fdef.args.args + fdef.args.kwonlyargs}
        locals_ = [ir.Local(n, t, parsed.loc(arg_nodes[n]) if n in arg_nodes else parsed.loc(fdef)) for n, t in params]
        compound_result = result if result is not None and not isinstance(result, T.DType) else None
        fn = ir.Function(self.function_name(func), locals_, None if compound_result else result, [], parsed.loc(fdef))
        fn.inouts = [ir.Local(n, t, parsed.loc(arg_nodes[n])) for n, t in refs or []]  # passed by reference
        if compound_result is not None:
            fn.outputs = [ir.Local(flat, dtype, parsed.loc(fdef.returns))
                          for flat, dtype, _ in _result_leaves(result, "result")]
            self.function_results[fn.name] = compound_result
        self.function_keys[key] = fn
        self.function_calls[fn.name] = []
        frame = _FuncFrame(func.fn, parsed, f"{fn.name}_result")
        frame.function = fn
        scope = Scope(None, isolated=True)
        scope.names.update(fixed)
        scope.names.update({v.name: v for v in locals_ + fn.inouts})
        by_name = {v.name: v for v in locals_}
        for pname, t in (compound or {}).items():  # the callee's own variable of that type
            scope.names[pname] = _var_of(t, [by_name[flat] for flat, _, _ in leaves(t, pname)])
        with self.function_body(frame, scope) as stmts:
            body = without_docstring(fdef)
            for st in self.static_select(body):
                self.stmt(st)
        if result is not None and not (stmts and isinstance(stmts[-1], ir.Return)):
            # Falling off the end returns zero, as Quadrants' real functions do.
            end = parsed.loc(fdef.body[-1]) if fdef.body else fn.loc
            stmts += [ir.Assign(end, out, ir.Const(out.type, end, 0)) for out in fn.outputs]
            stmts.append(ir.Return(end, None if fn.outputs else ir.Const(result, end, 0)))
        if fn.name in self.function_rngs and fn.recursive:  # its calls made while it was lowered pass no stream
            raise self.error(fn.loc, f"qd.random() in recursive @qd.real_func `{fn.name}` is not supported",
                             hint="draw the numbers in the kernel and pass them in as arguments")
        _check_body(fn.name, stmts)
        fn.body = stmts
        fn.calls = tuple(self.function_calls[fn.name])
        self.functions.append(fn)
        return fn

    def compound_return(self, fn: ir.Function, s: ast.Return) -> None:
        """``return v`` of a vector, matrix or struct: its scalars into the out parameters."""
        ann = self.function_results[fn.name]
        if s.value is None:
            raise self.error(s, f"@qd.real_func `{fn.name}` is annotated to return {ann!r}: return a value")
        loc = self.loc(s)
        items, values = (ann, self.expr(s.value)) if isinstance(ann, tuple) else ((ann,), None)
        if values is not None:  # a tuple result: `return ray, color, hit`
            values = list(values.items) if isinstance(values, TupleValue) else \
                [CT(v) for v in values.value] if isinstance(values, CT) and isinstance(values.value, tuple) else None
            if values is None or len(values) != len(items):
                raise self.error(s.value, f"@qd.real_func `{fn.name}` is annotated to return {len(items)} values")
        else:
            values = [self.expr(s.value)]
        scalars = []
        for t, value, k in zip(items, values, range(len(items)), strict=False):
            value = self.as_matrix(value, s.value)  # `return (x, y)` for a vector
            want = member_type(t)
            if isinstance(want, T.DType):
                fits = not isinstance(value, (MatrixValue, StructValue, TupleValue))
            elif isinstance(want, MatrixType):
                fits = isinstance(value, MatrixValue) and value.shape == want.shape
            else:
                fits = isinstance(value, StructValue) and value.type is want
            if not fits:
                what = f"item {k} of the result" if isinstance(ann, tuple) else "the result"
                raise self.error(s.value, f"@qd.real_func `{fn.name}` is annotated to return {t!r} as {what}; this "
                                          "value is not one")
            scalars += [self.coerce(self.to_expr(_component(self, value, path, s.value, "result"), s.value), dtype,
                                    s.value) for _, dtype, path in leaves(t, "r")]
        for out, e in zip(fn.outputs, scalars, strict=False):
            self.emit(ir.Assign(loc, out, e))
        self.emit(ir.Return(loc, None))

    def function_return(self, s: ast.Return) -> None:
        fn = self.real_function
        if fn.outputs:
            self.compound_return(fn, s)
            return
        if s.value is None:
            if fn.result is not None:
                raise self.error(s, f"@qd.real_func `{fn.name}` is annotated to return {fn.result.name}: "
                                    "return a value")
            self.emit(ir.Return(self.loc(s), None))
            return
        if fn.result is None:
            raise self.error(s.value, f"@qd.real_func `{fn.name}`: its return value must be annotated")
        value = self.expr(s.value)
        if not isinstance(value, (ir.Expr, CT)) or isinstance(value, CT) and not is_py_scalar(value.value):
            raise self.error(s.value, f"@qd.real_func `{fn.name}` returns one scalar",
                             hint="use a @qd.func (inlined) to return several values")
        self.emit(ir.Return(self.loc(s), self.coerce(self.to_expr(value, s.value), fn.result, s.value)))


def _result_leaves(result, prefix: str) -> list[tuple[str, T.DType, tuple]]:
    """The scalars of a real function's vector / matrix / struct result, or of each item of
    a tuple result in turn."""
    if isinstance(result, tuple):
        return [leaf for k, t in enumerate(result) for leaf in leaves(t, f"{prefix}{k}")]
    return leaves(result, prefix)


def _value_of(t, refs: list):
    """A vector / matrix / struct value (a tuple of them, for a tuple type) made of ``refs``
    (in ``leaves`` order)."""
    return _assemble(t, refs, MatrixValue, StructValue)


def _var_of(t, locals_: list):
    """A vector / matrix / struct variable made of ``locals_`` (in ``leaves`` order)."""
    return _assemble(t, locals_, MatrixVar, StructVar)


def _assemble(t, parts: list, matrix, struct):
    """``t`` made of ``parts``, its scalars in ``leaves`` order, as ``matrix`` and ``struct``
    (values or variables) nest them."""
    if isinstance(t, tuple):
        items, at = [], 0
        for item in t:
            n = len(leaves(item, "x"))
            items.append(_assemble(item, parts[at:at + n], matrix, struct))
            at += n
        return TupleValue(items)
    t = member_type(t)
    if isinstance(t, MatrixType):
        return matrix(t.shape, list(parts))
    if isinstance(t, T.DType):
        return parts[0]
    members, at = {}, 0
    for name, mt in t.members.items():
        n = len(leaves(mt, "x"))
        members[name] = _assemble(mt, parts[at:at + n], matrix, struct)
        at += n
    return struct(t, members)


def _component(lo, value, path: tuple, node, pname: str):
    """The scalar at ``path`` (member names, component indices) of a vector / struct value."""
    for step in path:
        if isinstance(step, str) and isinstance(value, StructValue) and step in value.members:
            value = value.members[step]
        elif isinstance(value, MatrixValue) and not isinstance(step, str):
            value = value.at(*path[path.index(step):])
            break
        else:
            raise lo.error(node, f"argument `{pname}` does not have the parameter's type")
    if isinstance(value, (MatrixValue, StructValue)):
        raise lo.error(node, f"argument `{pname}` does not have the parameter's type")
    return value


def _check_body(name: str, stmts: list[ir.Stmt]) -> None:
    for node in list(all_stmts(stmts)) + list(all_exprs(stmts)):
        what = _COLLECTIVE.get(type(node))
        if what is not None:
            raise TranspileError(f"{what} cannot be used in @qd.real_func `{name}`: a real function runs on "
                                 "its calling thread alone, outside the block's collective context", node.loc,
                                 hint="make it a @qd.func (inlined into the kernel), or pass the value in as "
                                      "an argument")


def _pure(fn: ir.Function, done: list[ir.Function]) -> bool:
    """Whether calling ``fn`` has no effect but its value (no store, atomic, print or fence,
    and calls only to such functions, recursion aside): then the call can stay inside an
    expression."""
    if fn.recursive:
        return False
    code = fn.body
    if any(isinstance(st, _EFFECTS) for st in all_stmts(code)):
        return False
    by_name = {f.name: f for f in done}
    for e in all_exprs(code):
        if isinstance(e, (ir.Atomic, ir.ShmemOp)):
            return False
        if isinstance(e, ir.Call) and (e.function not in by_name or not _pure(by_name[e.function], done)):
            return False
    return True


def _elements(dtype: T.DType | None, shape: tuple[int, ...]) -> str:
    """An ndarray's elements in words: ``f32``, ``f32 elements of shape (3,)``."""
    return getattr(dtype, "name", "any type") + (f" elements of shape {shape}" if shape else "")

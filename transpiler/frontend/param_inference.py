"""How ``transpiler emit FILE`` (no program run, so no call) types a kernel's parameters that
the annotation leaves open: an untyped ``qd.types.ndarray()`` (or a ``qd.template()`` the
kernel indexes) gets its ndim from how it is indexed and its element type from how the
elements are used (an index: i32; assigned a list of 2: a 2-vector of f32; ...), with the use
that decided it; conflicting or insufficient uses are an error naming the ``--template`` flag
that settles them. A kernel launched from Python never comes here: its call types it.

The rules (docs/cli.md, "How untyped parameters are typed"), each a use of an element ``a[i]``
or of a local bound to one (``i_b = envs_idx[i]``), followed into the @qd.func functions the
array or an element is passed to:
- needs an integer: an index (``x[a[i]]``), a loop bound (``range(a[i])``), a bitwise operand;
- hints an integer: compared for equality with an int (``a[i] == 1``: a flag or a code);
- hints a float: combined with, compared with or assigned a float (``0.5``, ``qd.sqrt(..)``,
  a module-level float, a true division);
- a vector of n: assigned a list, a tuple or a vector of n (``qd.Vector([..])``, ``vec2(..)``,
  an expression of such);
- the field's element type: copied from or into a module-level field (``arr[i] = pos[i]``);
- a vector of unknown length: a vector method or component (``.norm()``, ``.x``, ``e[1]``),
  which a length from another use must complete.
An integer need beside a float hint, or hints of both, or vectors of two lengths, is ambiguous.
Nothing at all: f32, the default, said as such."""
from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass, field
from types import FunctionType

from ..errors import Diagnostic, TranspileError, format_diagnostic
from ..ir import types as T
from ..ir.nodes import Loc
from ..lang.field import Field
from ..lang.kernel import Func, NdarrayAnnotation, ndarray_annotation, param_kind
from ..lang.matrix import MatrixType
from .source import parse_function

_SPEC = re.compile(r"^(?:qd\.)?(?:(i8|i16|i32|i64|u8|u16|u32|u64|f16|f32|f64|int|float)|([iu]?vec|mat)([234]))"
                   r"(?::(\d+))?$")
_VECTOR_METHODS = {"norm", "normalized", "norm_sqr", "norm_inv", "dot", "cross", "outer_product", "transpose",
                   "sum", "max", "min", "any", "all", "cast", "n", "m", "to_list"}
_VECTOR_FUNCS = {"length", "normalize", "dot", "cross", "distance", "reflect"}
_FLOAT_FUNCS = {"sqrt", "rsqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan2", "tanh", "random",
                "floor", "ceil", "round"}
_COMPONENTS = "xyzw"
GIVEN = "the dtype --template gives"


def parse_array_spec(text: str) -> NdarrayAnnotation | None:
    """``DTYPE[:NDIM]`` of ``--template NAME=...``: f32, i32:1, or a qd.math vector / matrix
    element (vec2:2, ivec3:1, mat3:1); None when ``text`` is not one."""
    m = _SPEC.match(text.strip())
    if not m:
        return None
    ndim = int(m.group(4)) if m.group(4) else None
    if m.group(1):
        return NdarrayAnnotation(T.python_type({"int": int, "float": float}.get(m.group(1))) or T.SCALARS[m.group(1)],
                                 ndim)
    return NdarrayAnnotation(_element(m.group(2), int(m.group(3))), ndim)


def _element(kind: str, n: int) -> MatrixType:
    scalar = {"vec": T.f32, "ivec": T.i32, "uvec": T.u32, "mat": T.f32}[kind]
    return MatrixType((n, n) if kind == "mat" else (n,), scalar, f"{kind}{n}")


def array_spec(ann: NdarrayAnnotation) -> str:
    """The ``--template`` spelling of a completed annotation: f32:1, vec2:2."""
    d = ann.dtype
    return f"{d.name if isinstance(d, (T.DType, MatrixType)) else d}:{ann.ndim}"


@dataclass
class Use:
    what: str          # "int!" (needs), "int", "float" (hints), "vec" (a vector of `size`, or at least `least`)
    why: str           # "used as an index"
    loc: Loc
    size: int | None = None
    least: int = 0

    def where(self) -> str:
        return f"{self.why} at {_short(self.loc)}"


@dataclass
class Inferred:
    """A parameter's completed annotation, the line of the parameter, and why."""

    ann: NdarrayAnnotation
    line: int
    reason: str
    file: str = ""
    aliases: set = field(default_factory=set)


def _short(loc: Loc) -> str:
    return f"{loc.file.rsplit('/', 1)[-1]}:{loc.line}"


def untyped_params(kernel, given: dict, values: dict | None = None) -> dict[str, Inferred]:
    """The ndarray parameters whose type the annotation and the command line leave open,
    completed from the kernel's uses (module docstring); raises a located TranspileError
    where the uses are ambiguous or a qd.template() parameter needs a value."""
    try:
        annotations = inspect.get_annotations(kernel.fn, eval_str=True)
    except Exception:  # noqa: BLE001 - translating reports it at the def
        return {}
    parsed = parse_function(kernel.fn)
    fdef = parsed.node
    out, missing = {}, []
    for a in fdef.args.args:
        ann = annotations.get(a.arg)
        kind = param_kind(ann)
        if a.arg == "self" and hasattr(kernel, "instance"):
            continue  # a data-oriented instance's kernel: `self` is the instance
        if kind == "template" and values and a.arg in values:
            continue  # given a value (a literal, or a field the file defines)
        if kind == "template" and a.arg not in given:
            # A qd.template() parameter the kernel (or a function it passes it to) indexes
            # receives an array: typed like an untyped ndarray. Any other needs a value.
            if _array_ndim(kernel.fn, fdef, a.arg) is None:
                if _used(fdef, a.arg):
                    missing.append(template_value_error(kernel.fn, parsed, a))
                continue
        elif kind != "ndarray" and not (kind == "template" and a.arg in given):
            continue
        ann = ndarray_annotation(ann) if kind == "ndarray" else NdarrayAnnotation()
        chosen = given.get(a.arg, NdarrayAnnotation())
        dtype = T.python_type(ann.dtype) or ann.dtype or chosen.dtype
        ndim = ann.ndim if ann.ndim is not None else chosen.ndim
        if dtype is not None and ndim is not None:
            continue
        if ndim is None:
            ndim = _array_ndim(kernel.fn, fdef, a.arg)
        ndim = 1 if ndim is None else ndim
        if dtype is not None:
            out[a.arg] = Inferred(NdarrayAnnotation(dtype, ndim), a.lineno, GIVEN, parsed.file)
            continue
        uses, aliases = [], set()
        _collect(kernel.fn, parsed, {a.arg}, set(), uses, aliases, 0)
        element, reason = _decide(a.arg, ndim, uses, parsed.loc(a))
        out[a.arg] = Inferred(NdarrayAnnotation(element, ndim), a.lineno, reason, parsed.file, aliases)
    if missing:  # the first, with every flag the kernel needs
        first = missing[0]
        more = "; ".join(e.hint.removeprefix("pass it: ") for e in missing[1:])
        raise TranspileError(first.message, first.loc, first.hint + (f"; and for the kernel's other template "
                                                                     f"parameters: {more}" if more else ""))
    return out


def _used(fdef: ast.FunctionDef, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for st in fdef.body for n in ast.walk(st))


# ----------------------------------------------------------------------------- the decision

def _decide(name: str, ndim: int, uses: list[Use], loc: Loc) -> tuple[object, str]:
    """The element type the uses call for, and the use that decided it."""
    uses = sorted(uses, key=lambda u: (u.loc.file, u.loc.line, u.loc.col))
    first = {w: next((u for u in uses if u.what == w), None) for w in ("int!", "int", "float")}
    if first["int!"] and first["float"]:
        raise _ambiguous(name, loc, f"it is {first['int!'].where()} but {first['float'].where()}",
                         f"i32:{ndim}", f"f32:{ndim}")
    if first["int"] and first["float"] and not first["int!"]:
        raise _ambiguous(name, loc, f"it is {first['int'].where()} but {first['float'].where()}",
                         f"i32:{ndim}", f"f32:{ndim}")
    decider = first["int!"] or first["int"] or first["float"]
    scalar = T.i32 if decider and decider.what != "float" else T.f32
    vecs = [u for u in uses if u.what == "vec"]
    if not vecs:
        return scalar, (decider.where() if decider else "nothing in the kernel says which, and f32 is the default")
    kind = "ivec" if scalar is T.i32 else "vec"
    sized = [u for u in vecs if u.size is not None]
    sizes = sorted({u.size for u in sized})
    least = max(u.least for u in vecs)
    if len(sizes) > 1:
        other = next(u for u in sized if u.size != sized[0].size)
        raise _ambiguous(name, loc, f"its elements are vectors of {sized[0].size} ({sized[0].where()}) and of "
                                    f"{other.size} ({other.where()})", *(f"{kind}{n}:{ndim}" for n in sizes))
    if not sizes or sizes[0] < least:
        n = max(least, 2)
        raise _ambiguous(name, loc, f"its elements are vectors ({vecs[0].where()}) of a length "
                                    + ("nothing in the kernel gives" if not sizes else
                                       f"at least {least}, but {sized[0].where()}"),
                         *(f"{kind}{k}:{ndim}" for k in range(min(n, 4), 5)))
    if not 2 <= sizes[0] <= 4:
        raise TranspileError(f"the untyped ndarray `{name}` holds vectors of {sizes[0]} ({sized[0].where()})", loc,
                             hint=f"annotate it: {name}: qd.types.ndarray(dtype=qd.types.vector({sizes[0]}, "
                                  f"qd.{scalar.name}), ndim={ndim})")
    reason = sized[0].where() + (f"; {decider.where()}" if decider and decider.why != sized[0].why else "")
    return _element(kind, sizes[0]), reason


def _ambiguous(name: str, loc: Loc, why: str, *specs: str) -> TranspileError:
    flags = " or ".join(f"--template {name}={s}" for s in specs)
    return TranspileError(f"the element type of the untyped ndarray `{name}` is ambiguous: {why}", loc,
                          hint=f"say which on the command line: {flags} (or annotate it, "
                               "qd.types.ndarray(dtype=..., ndim=...))")


# ----------------------------------------------------------------------------- the uses

_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_BITS = {ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}


def _name(call: ast.Call) -> str:
    return getattr(call.func, "attr", getattr(call.func, "id", ""))


def _int_const(e: ast.expr) -> int | None:
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        v = _int_const(e.operand)
        return None if v is None else -v
    return e.value if isinstance(e, ast.Constant) and type(e.value) is int else None


def _is_float(e: ast.expr, fn: FunctionType) -> bool:
    """Plainly a float: a float literal, a float function's result, a true division, a
    module-level float, or arithmetic on one."""
    if isinstance(e, ast.Constant):
        return type(e.value) is float
    if isinstance(e, ast.Call):
        return _name(e) in _FLOAT_FUNCS
    if isinstance(e, ast.BinOp):
        return isinstance(e.op, ast.Div) or _is_float(e.left, fn) or _is_float(e.right, fn)
    if isinstance(e, ast.UnaryOp):
        return _is_float(e.operand, fn)
    return isinstance(e, ast.Name) and type(fn.__globals__.get(e.id)) is float


def _vector_size(e: ast.expr, env: dict) -> int | None:
    """The length of a vector built in the kernel (qd.Vector([..]), vec3(..), arithmetic on
    one, a local bound to one); None when not plainly one."""
    if isinstance(e, ast.Call):
        name = _name(e)
        if name == "Vector" and e.args and isinstance(e.args[0], (ast.List, ast.Tuple)):
            return len(e.args[0].elts)
        m = re.fullmatch(r"[iu]?vec([234])", name)
        if m:
            return int(m.group(1))
        if name in ("normalized", "cross") and isinstance(e.func, ast.Attribute):
            return _vector_size(e.func.value, env)
        if name in ("min", "max", "abs", "clamp"):  # elementwise: the vector argument's length
            sizes = {s for s in (_vector_size(x, env) for x in e.args) if s is not None}
            return sizes.pop() if len(sizes) == 1 else None
        return None
    if isinstance(e, ast.BinOp) and isinstance(e.op, _ARITH):
        sizes = {s for s in (_vector_size(e.left, env), _vector_size(e.right, env)) if s is not None}
        return sizes.pop() if len(sizes) == 1 else None
    if isinstance(e, ast.UnaryOp):
        return _vector_size(e.operand, env)
    return env.get(e.id) if isinstance(e, ast.Name) else None


def _locals(fn: FunctionType, fdef: ast.FunctionDef, arrays: set, depth: int = 0) -> tuple[set, dict]:
    """The locals that are elements of ``arrays`` (every assignment of them is one: ``i_b =
    envs_idx[i]``, ``vc = sample(vf, i, j)`` of a @qd.func returning ``vf[..]``), and the
    locals bound to vectors of a known length."""
    bound: dict[str, list] = {}
    for n in ast.walk(fdef):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                pairs = zip(t.elts, n.value.elts, strict=False) if isinstance(t, ast.Tuple) and \
                    isinstance(n.value, ast.Tuple) else [(t, n.value)]
                for name, value in pairs:
                    if isinstance(name, ast.Name):
                        bound.setdefault(name.id, []).append(value)
        elif isinstance(n, (ast.For, ast.comprehension)):
            for t in ast.walk(n.target):
                if isinstance(t, ast.Name):
                    bound.setdefault(t.id, []).append(None)
    elements = {name for name, values in bound.items()
                if all(isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and v.value.id in arrays
                       or depth < 2 and _returns_element(fn, v, arrays, depth) for v in values)}
    env: dict[str, int] = {}
    for _ in range(2):  # a vector built from another local's
        for name, values in bound.items():
            sizes = {None if v is None else _vector_size(v, env) for v in values}
            if len(sizes) == 1 and None not in sizes:
                env[name] = sizes.pop()
    return elements, env


def _returns_element(fn: FunctionType, call: ast.expr | None, arrays: set, depth: int) -> bool:
    """``call`` is of a @qd.func that returns an element of the array passed to it."""
    callee = _callee(fn, call) if isinstance(call, ast.Call) else None
    if callee is None:
        return False
    cdef = parse_function(callee.fn).node
    params = [a.arg for a in cdef.args.args]
    got = {p for p, arg in [*zip(params, call.args, strict=False), *((kw.arg, kw.value) for kw in call.keywords)]
           if isinstance(arg, ast.Name) and arg.id in arrays}
    if not got:
        return False
    own, _ = _locals(callee.fn, cdef, got, depth + 1)
    returns = [n.value for n in ast.walk(cdef) if isinstance(n, ast.Return)]
    return bool(returns) and all(isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and v.value.id in got
                                 or isinstance(v, ast.Name) and v.id in own for v in returns)


def _callee(fn: FunctionType, call: ast.Call) -> Func | None:
    f, path = call.func, []
    while isinstance(f, ast.Attribute):
        path.append(f.attr)
        f = f.value
    found = fn.__globals__.get(f.id) if isinstance(f, ast.Name) else None
    for part in reversed(path):
        found = getattr(found, part, None)
    return found if isinstance(found, Func) else None


def _collect(fn: FunctionType, parsed, arrays: set, elements: set, uses: list, aliases: set, depth: int) -> None:
    """Append to ``uses`` what ``fn`` does with the elements of ``arrays`` (its parameters
    holding the array) and ``elements`` (its parameters holding an element), following them
    into the @qd.func functions it passes them to."""
    fdef = parsed.node
    own, env = _locals(fn, fdef, arrays)
    elements = elements | own
    aliases |= own

    def is_elem(e: ast.expr) -> bool:
        return (isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) and e.value.id in arrays) or \
            (isinstance(e, ast.Name) and e.id in elements)

    def flows(e: ast.expr) -> ast.expr | None:  # the element, or arithmetic on it
        if is_elem(e):
            return e
        if isinstance(e, ast.BinOp) and isinstance(e.op, _ARITH):
            return flows(e.left) or flows(e.right)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return flows(e.operand)
        return flows(e.body) or flows(e.orelse) if isinstance(e, ast.IfExp) else None

    def add(what: str, why: str, node: ast.AST, **kw) -> None:
        uses.append(Use(what, why, parsed.loc(node), **kw))

    for n in ast.walk(fdef):
        if isinstance(n, ast.Subscript):
            _subscript_uses(n, is_elem, flows, add)
        elif isinstance(n, ast.Call):
            _call_uses(fn, n, is_elem, flows, add, arrays, uses, aliases, depth)
        elif isinstance(n, ast.BinOp):
            for side, other in ((n.left, n.right), (n.right, n.left)):
                e = flows(side)
                if e is not None and type(n.op) in _BITS:
                    add("int!", f"an operand of `{_BITS[type(n.op)]}`", e)
                elif e is not None and isinstance(n.op, _ARITH) and _is_float(other, fn):
                    add("float", "combined with a float", e)
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Invert) and flows(n.operand) is not None:
            add("int!", "an operand of `~`", flows(n.operand))
        elif isinstance(n, ast.Compare):
            _compare_uses(fn, n, flows, add)
        elif isinstance(n, (ast.Assign, ast.AugAssign)):
            _store_uses(fn, n, is_elem, env, add, {a.arg for a in fdef.args.args})
        elif isinstance(n, ast.Attribute) and is_elem(n.value):
            if n.attr in _VECTOR_METHODS:
                add("vec", f"`.{n.attr}` of an element", n)
            elif n.attr and len(n.attr) <= 4 and set(n.attr) <= set(_COMPONENTS):
                add("vec", f"its component `.{n.attr}` taken", n, least=max(_COMPONENTS.index(c) for c in n.attr) + 1)


def _subscript_uses(n: ast.Subscript, is_elem, flows, add) -> None:
    for index in n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]:
        e = flows(index)
        if e is not None:
            add("int!", "used as an index", e)
    k = _int_const(n.slice)
    if is_elem(n.value) and k is not None and k >= 0:
        add("vec", f"its component [{k}] taken", n, least=k + 1)


def _call_uses(fn, n: ast.Call, is_elem, flows, add, arrays, uses, aliases, depth) -> None:
    name = _name(n)
    if name in ("range", "ndrange"):
        for arg in n.args:
            e = flows(arg)
            if e is not None:
                add("int!", "a loop bound", e)
    elif name in ("atomic_and", "atomic_or", "atomic_xor") and n.args and flows(n.args[0]) is not None:
        add("int!", f"updated with qd.{name}", n.args[0])
    elif name in _VECTOR_FUNCS and any(is_elem(arg) for arg in n.args):
        add("vec", f"passed to `{name}`", n)
    callee = _callee(fn, n) if depth < 8 else None
    if callee is None:
        return
    cparsed = parse_function(callee.fn)
    params = [a.arg for a in cparsed.node.args.args]
    passed = list(zip(params, n.args, strict=False)) + [(kw.arg, kw.value) for kw in n.keywords]
    c_arrays = {p for p, arg in passed if isinstance(arg, ast.Name) and arg.id in arrays}
    c_elements = {p for p, arg in passed if is_elem(arg)}
    if c_arrays or c_elements:
        _collect(callee.fn, cparsed, c_arrays, c_elements, uses, aliases, depth + 1)


def _compare_uses(fn, n: ast.Compare, flows, add) -> None:
    sides = [n.left, *n.comparators]
    for op, left, right in zip(n.ops, sides[:-1], sides[1:], strict=True):
        for side, other in ((left, right), (right, left)):
            e = flows(side)
            if e is None:
                continue
            k = _int_const(other)
            if k is not None and isinstance(op, (ast.Eq, ast.NotEq)):
                add("int", f"compared for equality with the int {k}", e)
            elif _is_float(other, fn):
                add("float", "compared with a float", e)


def _field_of(fn: FunctionType, e: ast.expr, params: set) -> Field | None:
    """The module-level field ``e`` is an element of (``x[i]``, ``sim.x[i]``), if it is one
    (a parameter of the same name hides it)."""
    if not isinstance(e, ast.Subscript):
        return None
    f, path = e.value, []
    while isinstance(f, ast.Attribute):
        path.append(f.attr)
        f = f.value
    found = fn.__globals__.get(f.id) if isinstance(f, ast.Name) and f.id not in params else None
    for part in reversed(path):
        found = getattr(found, part, None)
    return found if isinstance(found, Field) else None


def _copy_uses(fn, t: ast.expr, value: ast.expr, is_elem, add, params: set) -> bool:
    """An element copied from or into a module-level field: its element type (a vector of
    the field's, an integer or a float as its dtype)."""
    field_ = _field_of(fn, value, params) if is_elem(t) else _field_of(fn, t, params) if is_elem(value) else None
    if field_ is None:
        return False
    elem = t if is_elem(t) else value
    shape = "x".join(map(str, field_.element_shape))
    spelled = f"{shape} {field_.dtype.name}" if shape else field_.dtype.name
    why = f"copied {'from' if elem is t else 'into'} a {'vector ' * bool(shape)}field of {spelled}"
    if len(field_.element_shape) == 1:
        add("vec", why, elem, size=field_.element_shape[0])
    if not len(field_.element_shape) > 1:
        add("float" if field_.dtype.is_float else "int", why, elem)
    return True


def _store_uses(fn, n: ast.Assign | ast.AugAssign, is_elem, env: dict, add, params: set) -> None:
    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
    for t in targets:
        if _copy_uses(fn, t, n.value, is_elem, add, params):
            continue
        if not is_elem(t) or (isinstance(n, ast.Assign) and not isinstance(t, ast.Subscript)):
            continue  # (a local bound anew is no store into the array)
        if isinstance(n, ast.AugAssign) and type(n.op) in _BITS:
            add("int!", f"updated with `{_BITS[type(n.op)]}=`", t)
        elif isinstance(n.value, (ast.List, ast.Tuple)):
            add("vec", f"assigned a list of {len(n.value.elts)}", t, size=len(n.value.elts))
        elif (size := _vector_size(n.value, env)) is not None:
            add("vec", f"assigned a vector of {size}", t, size=size)
            if isinstance(n.value, ast.Call) and re.fullmatch(r"[iu]vec[234]", _name(n.value)):
                add("int", f"assigned an {_name(n.value)}", t)
        elif _is_float(n.value, fn):
            add("float", "assigned a float", t)


# ----------------------------------------------------------------------------- the ndim

def _array_ndim(fn: FunctionType, fdef: ast.FunctionDef, name: str, depth: int = 0) -> int | None:
    """How many indices ``fn`` uses on its parameter ``name`` (a[i, j]: 2; a[None]: 0; a[I] in a
    loop over qd.grouped(qd.ndrange(4, 8)): 2; for i, j in a: 2; a.shape[2]: 3), following it
    into the @qd.func / @qd.real_func functions it is passed to; None: not used as an array."""
    grouped = {}  # for I in qd.grouped(...): I -> its dimensions
    for n in ast.walk(fdef):
        if isinstance(n, ast.For) and isinstance(n.target, ast.Name) and isinstance(n.iter, ast.Call) \
                and getattr(n.iter.func, "attr", getattr(n.iter.func, "id", None)) == "grouped" and n.iter.args:
            inner = n.iter.args[0]
            if isinstance(inner, ast.Call):
                grouped[n.target.id] = len(inner.args)
            elif isinstance(inner, ast.Name):  # over an array: its ndim, or the components of I used
                found = _array_ndim(fn, fdef, inner.id, depth) if inner.id != name else None
                grouped[n.target.id] = found or _components_used(fdef, n.target.id) or 1
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            size = _index_vector_size(n.value)  # I = qd.Vector([i, j]): a[I] takes 2 indices
            if size is not None:
                grouped.setdefault(n.targets[0].id, size)
    ndim = None

    def use(k: int | None) -> None:
        nonlocal ndim
        if k is not None:
            ndim = k if ndim is None else max(ndim, k)

    for n in ast.walk(fdef):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == name:
            sl = n.slice
            use(len(sl.elts) if isinstance(sl, ast.Tuple) else
                0 if isinstance(sl, ast.Constant) and sl.value is None else
                grouped.get(sl.id, 1) if isinstance(sl, ast.Name) else 1)
        elif isinstance(n, ast.For) and isinstance(n.iter, ast.Name) and n.iter.id == name:
            use(len(n.target.elts) if isinstance(n.target, ast.Tuple) else 1)
        elif isinstance(n, ast.Subscript) and isinstance(n.value, ast.Attribute) and n.value.attr == "shape" \
                and isinstance(n.value.value, ast.Name) and n.value.value.id == name \
                and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, int):
            use(n.slice.value + 1)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and depth < 8:
            callee = fn.__globals__.get(n.func.id)
            if not isinstance(callee, Func):
                continue
            cdef = parse_function(callee.fn).node
            params = [a.arg for a in cdef.args.args]
            passed = [params[k] for k, arg in enumerate(n.args[:len(params)])
                      if isinstance(arg, ast.Name) and arg.id == name]
            passed += [kw.arg for kw in n.keywords if isinstance(kw.value, ast.Name) and kw.value.id == name]
            for p in passed:
                use(_array_ndim(callee.fn, cdef, p, depth + 1))
    return ndim


def _components_used(fdef: ast.FunctionDef, var: str) -> int | None:
    """1 + the highest constant component of ``var`` the function reads (``I[1]``: 2)."""
    ks = [n.slice.value for n in ast.walk(fdef) if isinstance(n, ast.Subscript) and _is_name(n.value, var)
          and isinstance(n.slice, ast.Constant) and type(n.slice.value) is int]
    return max(ks) + 1 if ks else None


def _index_vector_size(value: ast.expr) -> int | None:
    """The length of an index vector built in place: ``[i, j]``, ``(i, j)``,
    ``qd.Vector([i, j])``, ``qd.math.ivec2(i, j)``; None for anything else."""
    if isinstance(value, (ast.List, ast.Tuple)):
        return len(value.elts)
    if isinstance(value, ast.Call):
        name = getattr(value.func, "attr", getattr(value.func, "id", ""))
        if name == "Vector" and value.args and isinstance(value.args[0], (ast.List, ast.Tuple)):
            return len(value.args[0].elts)
        m = re.fullmatch(r"[iu]?vec([234])", name)
        if m:
            return int(m.group(1))
    return None



# ----------------------------------------------------------------------------- template values

def template_value_error(fn: FunctionType, parsed, a: ast.arg) -> TranspileError:
    """A qd.template() parameter the kernel uses that no --template gives: what its uses say
    it is, and the flag that gives it (Quadrants compiles one kernel per value, at the call)."""
    kind, node, attrs = _template_kind(fn, parsed, a.arg, 0)
    where = f" at {_short(parsed.loc(node))}" if node is not None else ""
    name = a.arg
    if kind == "attributes":
        found = sorted(k for k, v in fn.__globals__.items() if not k.startswith("_") and not callable(v)
                       and not isinstance(v, type(ast)) and all(hasattr(v, x) for x in attrs))
        what = f"an object with the attribute{'s' * (len(attrs) > 1)} {', '.join(sorted(attrs))}{where}"
        flag = " or ".join(f"--template {name}={k}" for k in found) if found else \
            f"--template {name}=NAME, NAME an object the file defines at module level with those attributes"
    elif kind == "flag":
        what, flag = f"a flag{where}", f"--template {name}=True or --template {name}=False"
    elif kind == "function":
        found = sorted(k for k, v in fn.__globals__.items() if isinstance(v, Func))
        what = f"a function{where}"
        flag = " or ".join(f"--template {name}={k}" for k in found) or f"--template {name}=NAME"
    elif kind == "number":
        what, flag = f"a number{where}", f"--template {name}=N, N the number the program passes (e.g. {name}=4)"
    else:
        what, flag = f"used{where}", f"--template {name}=VALUE (a Python literal, or a name the file defines)"
    return TranspileError(f"template parameter `{name}` needs a value: it is {what}, fixed when the kernel is "
                          "compiled, and no call gives it without running the program", parsed.loc(a),
                          hint=f"pass it: {flag}")


def _template_kind(fn: FunctionType, parsed, name: str, depth: int) -> tuple[str, ast.AST | None, set]:
    """flag / attributes / function / number / value: how ``name`` is used (the first use
    that says, following it into the @qd.func functions it is passed to)."""
    attrs, first = set(), {}
    for n in ast.walk(parsed.node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name:
            attrs.add(n.attr)
            first.setdefault("attributes", n)
        elif isinstance(n, (ast.If, ast.IfExp, ast.While)) and isinstance(n.test, ast.Name) and n.test.id == name \
                or isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not) and _is_name(n.operand, name) \
                or isinstance(n, ast.BoolOp) and any(_is_name(v, name) for v in n.values) \
                or isinstance(n, ast.Call) and _name(n) == "static" and n.args and _is_name(n.args[0], name):
            first.setdefault("flag", n)
        elif isinstance(n, ast.Call) and _is_name(n.func, name):
            first.setdefault("function", n)
        elif isinstance(n, ast.Call) and _name(n) in ("range", "ndrange") and any(_is_name(x, name) for x in n.args) \
                or isinstance(n, ast.BinOp) and (_is_name(n.left, name) or _is_name(n.right, name)) \
                or isinstance(n, ast.Compare) and any(_is_name(x, name) for x in [n.left, *n.comparators]) \
                or isinstance(n, ast.Subscript) and _is_name(n.slice, name):
            first.setdefault("number", n)
        elif isinstance(n, ast.Call) and depth < 8 and (callee := _callee(fn, n)) is not None:
            cparsed = parse_function(callee.fn)
            params = [x.arg for x in cparsed.node.args.args]
            for p, arg in [*zip(params, n.args, strict=False), *((kw.arg, kw.value) for kw in n.keywords)]:
                if _is_name(arg, name):
                    kind, node, more = _template_kind(callee.fn, cparsed, p, depth + 1)
                    if kind != "value":
                        attrs |= more
                        first.setdefault(kind, node)
    for kind in ("attributes", "flag", "function", "number"):
        if kind in first:
            return kind, first[kind], attrs
    return "value", None, attrs


def _is_name(e: ast.AST, name: str) -> bool:
    return isinstance(e, ast.Name) and e.id == name


# ----------------------------------------------------------------------------- where a type came from

def explain(exc: TranspileError, inferred: dict[str, Inferred]) -> TranspileError:
    """``exc`` with where a type it names came from when this module chose it (an error never
    names a type the user did not write without saying so); ``exc`` itself otherwise."""
    said = provenance(exc.message, exc.loc, inferred)
    return TranspileError(exc.message + said, exc.loc, exc.hint, tuple(exc.notes)) if said else exc


def explain_warning(d: Diagnostic, inferred: dict[str, Inferred]) -> str:
    """A warning's text, with where a type it names came from (as ``explain``)."""
    said = provenance(d.message, d.loc, inferred)
    return format_diagnostic(d.severity, d.message + said, d.loc, d.hint) if said else str(d)


def provenance(message: str, loc: Loc | None, inferred: dict[str, Inferred]) -> str:
    """`` (f32 is the element type chosen for ...)`` for the chosen types ``message`` names:
    those of the parameters named on the line at ``loc`` (or bound to their elements there)
    when there are, else all of them; "" when it names none."""
    found = []
    for name, inf in inferred.items():
        if inf.reason == GIVEN:
            continue  # the user wrote it
        spelled = array_spec(inf.ann).split(":")[0]
        element = getattr(inf.ann.dtype, "dtype", None)
        if re.search(rf"\b({spelled}|{getattr(element, 'name', spelled)})\b", message):
            found.append((name, inf))
    if not found:
        return ""
    line = _source_line(loc)
    near = [(n, i) for n, i in found if any(re.search(rf"\b{x}\b", line) for x in {n, *i.aliases})]
    said = []
    for n, i in near or found:
        spelled = array_spec(i.ann).split(":")[0]
        at = _short(Loc(i.file, i.line, 0))
        said.append(f"{spelled} is the element type chosen for the untyped ndarray `{n}` at {at}: {i.reason}; "
                    f"give it with --template {n}=DTYPE:{i.ann.ndim}, DTYPE f32, i32, vec2, ivec3, ...")
    return " (" + "; ".join(said) + ")"


def _source_line(loc: Loc | None) -> str:
    import linecache  # noqa: PLC0415 - only to explain an error

    return linecache.getline(loc.file, loc.line) if loc is not None else ""

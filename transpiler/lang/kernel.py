"""Kernels, functions and parameter annotations as users spell them: ``@qd.kernel``,
``@qd.func``, ``qd.template()``, ``qd.types.ndarray(...)``, and the markers the built-in
operations are made with (``builtin``, ``comptime``, ``static``)."""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import inspect
import os
import textwrap
from collections.abc import Callable
from typing import Any

from ..errors import TranspileError
from ..ir.nodes import Loc
from ..ir.records import record
from ..ir.types import DType
from .stream import take_stream

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator


# How a kernel call runs: installed by the package (``transpiler/__init__.py``), so the language
# surface does not import the runtime.
_launcher: Callable | None = None


def debug_traceback() -> bool:
    """QD_DEBUG_TRACEBACK=1: a kernel call's translation error keeps the translator's frames.
    Otherwise it is raised from the kernel call, as a compiler's error: the located
    diagnostic says where the kernel is wrong, and the frames below the call are noise."""
    return os.environ.get("QD_DEBUG_TRACEBACK", "") not in ("", "0")


def set_launcher(fn: Callable) -> None:
    global _launcher
    _launcher = fn


# What a call of a kernel (not of a derivative) launches, and where it is recorded: installed by
# qd.ad (lang/ad.py: a Tape records the call, a FwdMode runs it with its tangents), which
# builds on kernels and fields; before it is imported no Tape can be open.
_autodiff: Callable[[Kernel, tuple], Kernel] = lambda kernel, args: kernel  # noqa: E731


def set_autodiff(fn: Callable[[Kernel, tuple], Kernel]) -> None:
    global _autodiff
    _autodiff = fn


# While the command line imports a user's file to translate it, the program itself must not
# run: kernel calls (and qd.init) do nothing, and the first call is reported through this.
_not_running: Callable[[str], None] | None = None


@contextlib.contextmanager
def translating_only(note: Callable[[str], None]) -> Iterator[None]:
    """Import a module without running its kernels (``note`` hears of the first call)."""
    global _not_running
    told = []

    def once(message: str) -> None:
        if not told:
            told.append(message)
            note(message)

    saved, _not_running = _not_running, once
    try:
        yield
    finally:
        _not_running = saved


def running_disabled() -> bool:
    return _not_running is not None


class _Decorated:
    """A function the language decorated: it keeps the Python function and its names."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn


class Kernel(_Decorated):
    """A ``@qd.kernel`` function. Calling it runs it on the arch chosen by ``qd.init``."""

    graph = False  # made with @qd.kernel(graph=True)

    autodiff: str | None = None  # "reverse" / "forward" for a kernel's derivative (DerivativeKernel)

    @property
    def grad(self) -> DerivativeKernel:
        """The kernel's reverse-mode derivative: ``kernel.grad(*args)`` adds the derivative of
        what it writes into the ``.grad`` of what it reads (Quadrants' ``kernel.grad()``)."""
        return self._derivative("reverse")

    def _derivative(self, mode: str) -> DerivativeKernel:
        found = self.__dict__.get("_" + mode)
        if found is None:
            found = self.__dict__["_" + mode] = DerivativeKernel(self, mode)
        return found

    def __call__(self, *args, **kwargs):
        if _not_running is not None:
            _not_running(f"kernel calls made while the file is imported do not run (first: {self.__name__})")
            return None
        if _launcher is None:
            raise RuntimeError(f"{self.__name__}: no runtime is installed to run kernels")
        if kwargs:
            kwargs = take_stream(kwargs)
        try:
            return _launcher(_autodiff(self, args) if self.autodiff is None else self, args, kwargs)
        except TranspileError as exc:
            if debug_traceback():
                raise
            raise exc.with_traceback(None) from None  # QD_DEBUG_TRACEBACK=1 shows the translator's frames

    def __get__(self, instance: object, owner: type | None = None):
        # A kernel method of a @qd.data_oriented class: `self` is the instance (a
        # translation-time value: one instantiation per instance).
        return self if instance is None else BoundKernel(self, instance)

    def __repr__(self) -> str:
        return f"<qd.kernel {self.__name__}>"


class DerivativeKernel(Kernel):
    """A kernel's derivative (``kernel.grad``, and what a FwdMode block runs): the primal's
    function, lowered then differentiated (transpiler/passes/autodiff.py)."""

    def __init__(self, primal: Kernel, mode: str):
        super().__init__(primal.fn)
        self.primal = primal
        self.autodiff = mode
        self.graph = primal.graph
        self.__name__ = f"{primal.__name__}_{'grad' if mode == 'reverse' else 'fwd'}"

    def __repr__(self) -> str:
        return f"<qd.kernel {self.__name__}>"


class BoundKernel:
    """``instance.kernel_method``: calling it runs the kernel with ``self`` bound."""

    def __init__(self, kernel: Kernel, instance: object, name: str | None = None):
        self.kernel = kernel
        self.instance = instance
        self.fn = kernel.fn
        self.__name__ = name or kernel.__name__

    def __call__(self, *args, **kwargs):
        try:
            return self.kernel(self.instance, *args, **kwargs)
        except TranspileError as exc:
            if debug_traceback():
                raise
            raise exc.with_traceback(None) from None  # QD_DEBUG_TRACEBACK=1 shows the translator's frames

    @property
    def grad(self) -> BoundKernel:
        return BoundKernel(self.kernel.grad, self.instance, self.kernel.grad.__name__)

    def __repr__(self) -> str:
        return f"<qd.kernel {self.__name__} of {type(self.instance).__name__}>"


def self_annotation(fn: Callable, name: str, ann: object) -> object:
    """A kernel's or function's unannotated first parameter named ``self`` (a method of a
    data-oriented class or a struct) is a translation-time value."""
    if ann is None and name == "self" and next(iter(inspect.signature(fn).parameters), None) == "self":
        return Template()
    return ann


class Func(_Decorated):
    """A ``@qd.func`` function: inlined into the kernels that call it. Called as a statement
    at the top level of a kernel, its own top-level loops become tasks of the kernel;
    ``requires_top_level=True`` makes any other call site an error (Quadrants' device-wide
    algorithms: their phases need the launch boundaries between tasks)."""

    requires_top_level = False

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"@qd.func {self.__name__} can only be called from inside a @qd.kernel")

    def __get__(self, instance: object, owner: type | None = None):
        # A method read through an instance is bound to it, as Python binds methods: in a
        # kernel (`self.val(i)`) and in Python scope (`self.update = self._update_linear`,
        # called later from a kernel). A @staticmethod's never reaches here.
        return self if instance is None else BoundFunc(self, instance)


class BoundFunc:
    """``instance.func_method``: a ``@qd.func`` method with its ``self`` (a translation-time
    value in the kernels that call it)."""

    def __init__(self, func: Func, instance: object):
        self.func = func
        self.instance = instance
        self.__name__ = func.__name__

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"@qd.func {self.__name__} can only be called from inside a @qd.kernel")

    def __repr__(self) -> str:
        return f"<bound qd.func {self.__name__} of {self.instance!r}>"


class HostFunc(Func):
    """A ``@qd.func`` that may also be called from Python, where ``host`` runs instead (e.g.
    the ``qd.algorithms.*_scratch_slots`` sizing helpers: integer arithmetic that sizes an
    allocation on the host and checks one on the device)."""

    def __init__(self, fn: Callable, host: Callable):
        super().__init__(fn)
        self.host = host
        self.__name__ = host.__name__
        self.__qualname__ = host.__qualname__
        self.__doc__ = host.__doc__

    def __call__(self, *args, **kwargs):
        return self.host(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<qd.func {self.__name__}>"


class RealFunc(Func):
    """A ``@qd.real_func`` function: emitted once per distinct signature as a function of its
    own in the target source, and called (recursion where the target allows it)."""

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"@qd.real_func {self.__name__} can only be called from inside a @qd.kernel")

    def __get__(self, instance: object, owner: type | None = None):
        return self  # a real function takes its arguments as values: no translation-time self

    def __repr__(self) -> str:
        return f"<qd.real_func {self.__name__}>"


def kernel(fn: Callable | None = None, *, graph: bool = False, gpu_graph: bool = False, **_options) -> Kernel:
    """``@qd.kernel``; ``@qd.kernel(graph=True)`` (Genesis: ``gpu_graph=True``) allows
    ``qd.graph.do_while`` and ``qd.graph.parallel_context`` in it."""
    def make(f: Callable) -> Kernel:
        k = Kernel(f)
        k.graph = bool(graph or gpu_graph)
        return k

    return make if fn is None else make(fn)


def func(fn: Callable | None = None, *, requires_top_level: bool = False, **_options) -> Func:
    def make(f: Callable) -> Func:
        made = Func(f)
        made.requires_top_level = bool(requires_top_level)
        return made

    return make if fn is None else make(fn)


# `qd.func(f)(x)` inside a kernel: f made a function there, at translation time (Quadrants' tests do).
func._qd_comptime = True


def real_func(fn: Callable | None = None, **_options) -> RealFunc:
    if fn is None:
        return lambda f: real_func(f)
    _require_annotations(fn)
    return RealFunc(fn)


def _require_annotations(fn: Callable) -> None:
    """A real function is compiled once per signature, so each parameter needs its type when
    it is defined (Quadrants refuses it there too, not at the first call)."""
    params = list(inspect.signature(fn).parameters)
    missing = [p for p in params if fn.__annotations__.get(p) is None and self_annotation(fn, p, None) is None]
    if not missing:
        return
    loc = None
    try:  # the parameter's place in the file, for the located error
        lines, start = inspect.getsourcelines(fn)
        text = "".join(lines)
        indent = len(text) - len(text.lstrip(" "))
        node = next(n for n in ast.walk(ast.parse(textwrap.dedent(text))) if isinstance(n, ast.FunctionDef))
        arg = next(a for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs if a.arg == missing[0])
        loc = Loc(inspect.getsourcefile(fn) or "<unknown>", start + arg.lineno - 1, arg.col_offset + indent)
    except (OSError, TypeError, SyntaxError, StopIteration):
        pass
    name = missing[0]
    raise TranspileError(f"parameter `{name}` of @qd.real_func `{fn.__name__}` must be type annotated", loc,
                         hint=f"a real function is compiled once per signature: annotate it, e.g. "
                              f"`{name}: qd.i32`, `{name}: qd.types.ndarray()` or `{name}: qd.template()`")


@record(frozen=True)
class Template:
    """``qd.template()``: a compile-time parameter, one instantiation per value."""

    element_type: Any = object
    ndim: int | None = None


def template(element_type: object = object, ndim: int | None = None) -> Template:
    return Template(element_type, ndim)


@record(frozen=True)
class NdarrayAnnotation:
    dtype: Any = None        # a scalar dtype, a vector/matrix type (qd.math.vec3), or None: from the call
    ndim: int | None = None
    symmetric: bool = False  # on NVSHMEM's symmetric heap: see qd.shmem.symmetric
    element_shape: tuple[int, ...] | None = None  # with a scalar dtype: the vector/matrix element's shape
    needs_grad: bool | None = None  # False: a constant of the kernel's derivative, whatever is passed


class _NdarrayFactory:
    """``qd.types.ndarray(dtype=..., ndim=...)`` and ``qd.types.NDArray[dtype, ndim]``; used bare
    as an annotation, an ndarray whose dtype and ndim come from the argument."""

    def __call__(self, dtype: Any = None, ndim: int | None = None, symmetric: bool = False,
                 element_shape: tuple[int, ...] | None = None, needs_grad: bool | None = None,
                 boundary: str = "unsafe", **_ignored) -> NdarrayAnnotation:
        if boundary != "unsafe":  # (said, not ignored: an index past the end would read silently)
            raise NotImplementedError(f"qd.types.ndarray(boundary={boundary!r}) is not supported: indices are not "
                                      "clamped here; clamp them in the kernel, e.g. x[qd.min(qd.max(i, 0), "
                                      "x.shape[0] - 1)]")
        return NdarrayAnnotation(dtype, ndim, bool(symmetric), tuple(element_shape) if element_shape else None,
                                 needs_grad)

    def __getitem__(self, item: Any) -> NdarrayAnnotation:
        if isinstance(item, tuple):
            return NdarrayAnnotation(*item)
        return NdarrayAnnotation(item)

    def __repr__(self) -> str:
        return "qd.types.ndarray"


@record(frozen=True)
class RefAnnotation:
    """``qd.ref(qd.f32)``: a @qd.real_func parameter the caller passes a local variable to,
    by reference: what the function assigns to it, the caller's variable holds after."""

    dtype: Any


def ref(dtype: Any) -> RefAnnotation:
    RefAnnotation.used = True  # (the frontend looks for reference arguments only once one exists)
    return RefAnnotation(dtype)


def param_kind(ann: object) -> str | None:
    """What a kernel parameter's annotation asks for: "template", "scalar" (a DType, or
    Python's int / float / bool), "ndarray" (possibly untyped), "compound" (a vector, matrix
    or struct type, by value), "dataclass" (a Python dataclass), or None (not supported)."""
    if ann is Template or ann is template or isinstance(ann, Template):
        return "template"
    if isinstance(ann, RefAnnotation):
        return "ref"
    if isinstance(ann, DType) or ann in (int, float, bool):
        return "scalar"
    if isinstance(ann, (NdarrayAnnotation, _NdarrayFactory)) or getattr(ann, "_qd_view_annotation", False) or \
            getattr(ann, "_qd_tensor_annotation", False):
        return "ndarray"
    if getattr(type(ann), "_qd_builtin", None) in ("matrix_type", "struct_type"):  # lang.matrix's, which imports this
        return "compound"  # passed by value, as its scalars
    if isinstance(ann, type) and dataclasses.is_dataclass(ann):
        return "dataclass"  # a Python dataclass of ndarrays and scalars: its members
    return None


def ndarray_annotation(ann: object) -> NdarrayAnnotation:
    """An ndarray parameter's annotation, the bare factory read as the untyped one."""
    if getattr(ann, "_qd_view_annotation", False):  # qd.BufferView, bare: 1-d, the element type the call's
        return NdarrayAnnotation(None, 1)
    return NdarrayAnnotation() if isinstance(ann, _NdarrayFactory) or getattr(ann, "_qd_tensor_annotation", False) \
        else ann


# ----------------------------------------------------------------------------- built-in markers

# Built-ins that also mean something in Python scope (qd.simt.subgroup.group_size(): the
# current executor's width), installed by the package with the runtime behind them.
python_scope: dict[str, Callable] = {}


class Arch(str):
    """``qd.cuda``, ``qd.vulkan``, ``qd.cpu``, ...: the arch's name, which ``.name`` also gives
    (as Quadrants' Arch enum has it: ``qd.cfg.arch.name``)."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return str(self)


def builtin(name: str) -> Callable[[Callable], Callable]:
    """Mark a stub as the built-in ``name``; the frontend lowers calls to it."""

    def wrap(stub: Callable) -> Callable:
        @functools.wraps(stub)
        def outside_kernel(*args, **kwargs):
            if name in python_scope:
                return python_scope[name](*args, **kwargs)
            raise RuntimeError(f"qd.{name}() can only be used inside a @qd.kernel or @qd.func")

        outside_kernel._qd_builtin = name
        return outside_kernel

    return wrap


def comptime(fn: Callable) -> Callable:
    """Mark a plain Python function as callable from kernels when every argument is known at
    translation time; the call is evaluated then and its result becomes a constant."""
    fn._qd_comptime = True
    return fn


def static(x: object, *xs: object) -> object:
    """Evaluate at translation time: ``if qd.static(c):`` and ``for i in qd.static(range(n)):``."""
    return (x, *xs) if xs else x


static._qd_builtin = "static"

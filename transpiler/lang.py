"""The kernel language as users spell it: ``@qd.kernel``, ``@qd.func``, annotations and
the built-in functions. The built-ins are markers: the frontend recognises them by
identity and lowers each to an IR node; calling one outside a kernel is an error."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

from .ir.types import DType


class Kernel:
    """A ``@qd.kernel`` function. Calling it runs it on the arch chosen by ``qd.init``."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs):
        from .runtime import launch  # the runtime (and numpy) only when a kernel runs

        return launch(self, args, kwargs)

    def __repr__(self) -> str:
        return f"<qd.kernel {self.__name__}>"


class Func:
    """A ``@qd.func`` function: inlined into the kernels that call it."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"@qd.func {self.__name__} can only be called from inside a @qd.kernel")

    def __repr__(self) -> str:
        return f"<qd.func {self.__name__}>"


def kernel(fn: Callable | None = None, **_options) -> Kernel:
    if fn is None:
        return lambda f: Kernel(f)  # @qd.kernel(...) with options
    return Kernel(fn)


def func(fn: Callable | None = None, **_options) -> Func:
    if fn is None:
        return lambda f: Func(f)
    return Func(fn)


@dataclass(frozen=True)
class Template:
    """``qd.template()``: a compile-time parameter, one instantiation per value."""

    element_type: Any = object
    ndim: int | None = None


def template(element_type=object, ndim=None) -> Template:
    return Template(element_type, ndim)


@dataclass(frozen=True)
class NdarrayAnnotation:
    dtype: DType | None = None
    ndim: int | None = None
    symmetric: bool = False  # on NVSHMEM's symmetric heap: see qd.shmem.symmetric


class _NdarrayFactory:
    """``qd.types.ndarray(dtype=..., ndim=...)`` and ``qd.types.NDArray[dtype, ndim]``."""

    def __call__(self, dtype: DType | None = None, ndim: int | None = None, symmetric: bool = False,
                 **_ignored) -> NdarrayAnnotation:
        return NdarrayAnnotation(dtype, ndim, bool(symmetric))

    def __getitem__(self, item) -> NdarrayAnnotation:
        if isinstance(item, tuple):
            return NdarrayAnnotation(*item)
        return NdarrayAnnotation(item)


# ----------------------------------------------------------------------------- built-in markers

def builtin(name: str):
    """Mark a stub as the built-in ``name``; the frontend lowers calls to it."""

    def wrap(stub: Callable) -> Callable:
        @functools.wraps(stub)
        def outside_kernel(*args, **kwargs):
            raise RuntimeError(f"qd.{name}() can only be used inside a @qd.kernel or @qd.func")

        outside_kernel._qd_builtin = name
        return outside_kernel

    return wrap


def comptime(fn: Callable) -> Callable:
    """Mark a plain Python function as callable from kernels when every argument is known at
    translation time; the call is evaluated then and its result becomes a constant."""
    fn._qd_comptime = True
    return fn


def static(x, *xs):
    """Evaluate at translation time: ``if qd.static(c):`` and ``for i in qd.static(range(n)):``."""
    return (x, *xs) if xs else x


static._qd_builtin = "static"


@builtin("ndrange")
def ndrange(*extents): ...


@builtin("loop_config")
def loop_config(*, block_dim: int | None = None, serialize: bool = False): ...


@builtin("cast")
def cast(x, dtype): ...


@builtin("select")
def select(cond, a, b): ...


@builtin("min")
def min(*args): ...  # noqa: A001 - the Quadrants spelling


@builtin("max")
def max(*args): ...  # noqa: A001


@builtin("typeof")
def typeof(x):
    """The dtype of a run-time value, as a translation-time value (for typed constants)."""


@builtin("static_assert")
def static_assert(cond, msg=None): ...


def _math(name: str):
    stub = builtin(name)(lambda *args: None)
    stub.__name__ = name
    stub.__doc__ = f"qd.{name}: lowered to the target's {name}."
    return stub


sqrt, rsqrt, exp, log = _math("sqrt"), _math("rsqrt"), _math("exp"), _math("log")
sin, cos, tan = _math("sin"), _math("cos"), _math("tan")
asin, acos, atan, atan2 = _math("asin"), _math("acos"), _math("atan"), _math("atan2")
sinh, cosh, tanh = _math("sinh"), _math("cosh"), _math("tanh")
floor, ceil, round, trunc = _math("floor"), _math("ceil"), _math("round"), _math("trunc")  # noqa: A001
pow, abs = _math("pow"), _math("abs")  # noqa: A001
popcnt, clz, ffs = _math("popcnt"), _math("clz"), _math("ffs")


@builtin("volatile_load")
def volatile_load(x):
    """Read the ndarray element ``x`` from memory every time: never cached, hoisted or merged."""


def _atomic(op: str):
    stub = builtin(f"atomic_{op}")(lambda *args: None)
    stub.__name__ = f"atomic_{op}"
    stub.__doc__ = f"qd.atomic_{op}(x, ...): atomically update the memory element x; returns its old value."
    return stub


atomic_add, atomic_sub, atomic_mul = _atomic("add"), _atomic("sub"), _atomic("mul")
atomic_min, atomic_max = _atomic("min"), _atomic("max")
atomic_and, atomic_or, atomic_xor = _atomic("and"), _atomic("or"), _atomic("xor")
atomic_exchange, atomic_cas = _atomic("exchange"), _atomic("cas")

"""The built-in operations of the kernel language (``qd.cast``, ``qd.select``, math
functions, atomics, ...). Each is a marker: the frontend recognises it by identity and
lowers the call to an IR node (``frontend/intrinsics/``); calling one outside a kernel is
an error."""
from __future__ import annotations

import itertools
# ``qd.lang.ops.add(a, b)`` and its siblings, as Quadrants' ops module spells the operators: the
# operator module's own functions, which a kernel lowers as the operator (frontend/calls.py).
from operator import add, floordiv, mod, mul, neg, sub, truediv  # noqa: F401

from ..errors import TranspileError
from . import host
from .kernel import builtin, python_scope
from .matrix import Matrix, Vector

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from contextlib import AbstractContextManager

    from ..ir.types import DType
    from .snode import SNode


@builtin("ndrange")
def ndrange(*extents: int | tuple[int, int]) -> Iterable[tuple[int, ...]]: ...


@builtin("grouped")
def grouped(x: object) -> Iterable[Matrix]:
    """``for I in qd.grouped(a)`` / ``qd.grouped(qd.ndrange(...))``: one loop variable holding
    every index (``I[0]``, ``a[I]``)."""


@builtin("random")
def random(dtype: DType | type = float) -> float | int:
    """A random number of ``dtype`` (f32 in [0, 1) by default; integers over their whole
    range): the same on every target and executor (see transpiler/lang/random.py)."""


@builtin("randn")
def randn(dt: DType | None = None) -> float:
    """A random float from the standard normal distribution (mean 0, variance 1); ``dt``:
    f32 (the default float) or f64."""


@builtin("svd")
def svd(A: Matrix, dt: DType | None = None) -> tuple[Matrix, Matrix, Matrix]:
    """``U, sigma, V = qd.svd(A)`` of a 2x2 or 3x3 matrix: A = U @ sigma @ V.transpose(), the
    singular values on sigma's diagonal, largest first (see transpiler/lang/linalg.py)."""


@builtin("polar_decompose")
def polar_decompose(A: Matrix, dt: DType | None = None) -> tuple[Matrix, Matrix]:
    """``U, P = qd.polar_decompose(A)`` of a 2x2 or 3x3 matrix: A = U @ P, U orthogonal, P symmetric."""


@builtin("eig")
def eig(A: Matrix, dt: DType | None = None) -> tuple[Matrix, Matrix]:
    """(eigenvalues as rows (re, im), eigenvectors as columns (re0, im0, re1, im1)) of a real 2x2 matrix."""


@builtin("sym_eig")
def sym_eig(A: Matrix, dt: DType | None = None) -> tuple[Matrix, Matrix]:
    """(eigenvalues ascending, eigenvectors as columns) of a symmetric 2x2 to 6x6 matrix."""


@builtin("make_spd")
def make_spd(A: Matrix, dt: DType | None = None) -> Matrix:
    """The nearest positive semi-definite matrix to a symmetric 2x2 to 6x6 matrix."""


@builtin("solve")
def solve(A: Matrix, b: Matrix, dt: DType | None = None) -> Matrix:
    """``x = qd.solve(A, b)``: the solution of A @ x = b for a 2x2 or 3x3 matrix A (Gaussian
    elimination with partial pivoting; see transpiler/lang/linalg.py)."""


@builtin("raw_div")
def raw_div(a: int, b: int) -> int:
    """C's integer division (truncated toward zero), where ``//`` is Python's (floored)."""


@builtin("raw_mod")
def raw_mod(a: int, b: int) -> int:
    """C's integer remainder (the dividend's sign), where ``%`` is Python's (the divisor's)."""


@builtin("logical_not")
def logical_not(x: object) -> object:
    """``qd.lang.ops.logical_not(x)``: ``not x``, component by component of a vector or matrix
    (1 where a component is 0, else 0)."""


def _logical_not_host(x: object) -> object:
    if hasattr(x, "to_numpy"):
        import numpy as np  # noqa: PLC0415 - only when a Python-scope vector is negated

        arr = np.logical_not(x.to_numpy()).astype(np.int32)
        return Vector(arr.tolist()) if arr.ndim == 1 else Matrix(arr.tolist())
    return int(not x)


python_scope["logical_not"] = _logical_not_host


@builtin("bit_shr")
def bit_shr(x: int, n: int) -> int:
    """Logical shift right: ``x >> n`` with zeros shifted in, whatever ``x``'s sign (``>>`` on a
    signed integer copies the sign bit in); the result has ``x``'s type."""


@builtin("stream_parallel")
def stream_parallel() -> AbstractContextManager[None]:
    """``with qd.stream_parallel():`` at the top level of a kernel: the loops inside may run
    concurrently (Quadrants puts them on separate streams). Here they run one after another,
    which is one of the orders that allows: the same results for any program that does not
    race between them."""


@builtin("block_local")
def block_local(*fields: object) -> None:
    """A hint (cache these fields in shared memory) that changes no result: the targets' own
    caches serve, and the call emits nothing."""


@builtin("cache_read_only")
def cache_read_only(*fields: object) -> None:
    """A hint (these fields are read only in the loop) that changes no result: emits nothing."""


@builtin("loop_config")
def loop_config(*, block_dim: int | None = None, serialize: bool = False) -> None: ...


@builtin("cast")
def cast(x: object, dtype: DType | type) -> object: ...


@builtin("bit_cast")
def bit_cast(x: object, dtype: DType) -> object:
    """The bits of ``x`` read as ``dtype`` (a scalar type of the same width)."""


@builtin("select")
def select(cond: object, a: object, b: object) -> object: ...


@builtin("min")
def min(*args: object) -> object: ...  # noqa: A001 - the Quadrants spelling


@builtin("max")
def max(*args: object) -> object: ...  # noqa: A001


@builtin("typeof")
def typeof(x: object) -> DType:
    """The dtype of a run-time value, as a translation-time value (for typed constants)."""


@builtin("static_assert")
def static_assert(cond: object, msg: str | None = None) -> None: ...


@builtin("static_print")
def static_print(*args: object, sep: str = " ", end: str = "\n") -> None:
    """Prints its arguments when the kernel is translated (values known then as they are, run-time
    ones as their type), as Quadrants prints them when it compiles; nothing runs on the device."""


@builtin("assume_in_range")
def assume_in_range(val: int, base: int, low: int, high: int) -> int:
    """``val``, untouched: Quadrants' hint that it lies in ``[base + low, base + high)``."""


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
isnan, isinf = _math("isnan"), _math("isinf")
zero, one = _math("zero"), _math("one")  # of the argument's type and shape: qd.zero(v[i])


@builtin("clock_counter")
def clock_counter() -> int:
    """The device's cycle counter (i64) where the calling thread stands: differences of two
    reads in one thread measure the work between them (``qd.clock_freq_hz()`` gives the rate
    on CUDA)."""


def clock_freq_hz() -> float:
    """The rate ``qd.clock_counter()`` counts at, in Hz: of CUDA's executors only, as in
    Quadrants (the CPU executor of the CUDA text counts nanoseconds: 1 GHz)."""
    freq = getattr(host.executor(), "clock_freq_hz", None)
    if freq is None:
        raise NotImplementedError("qd.clock_freq_hz() is only available on CUDA (arch=qd.cuda, or the CPU executor "
                                  "of the CUDA text): elsewhere compare qd.clock_counter() readings with each other")
    return freq


@builtin("volatile_load")
def volatile_load(x: object) -> object:
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


# In Python scope the math functions compute with NumPy (imported on the first such call, so the
# emit path never loads it), as Quadrants' do: `dx = qd.math.sqrt(2) / n` at module level.
_NUMPY_NAMES = {"sqrt": "sqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos", "tan": "tan",
                "asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2", "sinh": "sinh",
                "cosh": "cosh", "tanh": "tanh", "floor": "floor", "ceil": "ceil", "round": "round",
                "trunc": "trunc", "pow": "power", "abs": "abs", "isnan": "isnan", "isinf": "isinf",
                "min": "minimum", "max": "maximum", "select": "where"}


def _host(np_name: str):
    def run(*args):
        import numpy as np  # noqa: PLC0415 - the emit path must not import NumPy

        out = getattr(np, np_name)(*args)
        return out.item() if isinstance(out, np.ndarray) and out.ndim == 0 or isinstance(out, np.generic) else out

    return run


def _host_rsqrt(x: float):
    import numpy as np  # noqa: PLC0415 - the emit path must not import NumPy

    return 1.0 / np.sqrt(x)


def ndrange_axes_problem(axes: object, n: int) -> str | None:
    """What is wrong with ``qd.ndrange(..., axes=axes)`` over ``n`` dimensions (None: nothing;
    ``axes=None`` is the written order), in Quadrants' terms."""
    if axes is None:
        return None
    if not isinstance(axes, (tuple, list)):
        return f"qd.ndrange(axes={axes!r}) is a tuple of dimensions, outermost first"
    axes = tuple(axes)
    if len(axes) != n:
        return f"qd.ndrange(axes={axes!r}) has {len(axes)} entries but ndrange was called with {n} dimension(s)"
    bad = next((a for a in axes if isinstance(a, bool) or not hasattr(a, "__index__")), None)
    if bad is not None:
        return f"qd.ndrange(axes={axes!r}) entries must be Python ints; got {type(bad).__name__} ({bad!r})"
    if sorted(a.__index__() for a in axes) != list(range(n)):
        return f"qd.ndrange(axes={axes!r}) is not a permutation of range({n}) (outermost dimension first)"
    return None


class HostNdrange:
    """``qd.ndrange(...)`` in Python scope: every index tuple, the last dimension fastest
    (``axes=``: the given order, outermost first), as Quadrants iterates it."""

    def __init__(self, *extents: int | tuple[int, int], axes: Sequence[int] | None = None):
        self.bounds = []
        for e in extents:
            begin, end = (e if isinstance(e, (tuple, list)) else (0, e))
            if not all(isinstance(b, int) or hasattr(b, "__index__") for b in (begin, end)):
                raise TypeError("Every argument of ndrange should be an integer scalar or a tuple/list of (int, int): "
                                f"every argument of qd.ndrange is an int or a (begin, end) pair of ints, not {e!r}")
            self.bounds.append((int(begin), max(int(begin), int(end))))
        problem = ndrange_axes_problem(axes, len(self.bounds))
        if problem is not None:
            raise TranspileError(problem)
        self.axes = list(axes) if axes is not None else list(range(len(self.bounds)))

    def __iter__(self):
        for outer_first in itertools.product(*(range(*self.bounds[a]) for a in self.axes)):
            index = [0] * len(self.bounds)
            for a, v in zip(self.axes, outer_first):
                index[a] = v
            yield tuple(index)

    def grouped(self) -> Iterator[Matrix]:
        """Each index as an integer vector (Quadrants' ``qd.ndrange(...).grouped()``)."""
        return (Vector(list(i)) for i in self)


def _host_grouped(x: Any):
    """``qd.grouped(...)`` in Python scope: each index of an ndrange, a field or an ndarray
    as an integer vector."""
    return (x if isinstance(x, HostNdrange) else HostNdrange(*x.shape)).grouped()


python_scope.update({name: _host(np_name) for name, np_name in _NUMPY_NAMES.items()}, rsqrt=_host_rsqrt,
                    ndrange=HostNdrange, grouped=_host_grouped)


# ----------------------------------------------------------------------------- sparse SNodes (lang/snode.py)

@builtin("is_active")
def is_active(node: SNode, indices: object) -> int:
    """1 when cell ``indices`` of a pointer or bitmasked SNode is active, else 0."""


@builtin("activate")
def activate(node: SNode, indices: object) -> None:
    """Activate cell ``indices`` of a pointer or bitmasked SNode (and the cells above it)."""


@builtin("deactivate")
def deactivate(node: SNode, indices: object) -> None:
    """Deactivate a cell of a pointer, bitmasked or dynamic SNode; a pointer's or a dynamic
    list's contents are zero-filled, as Quadrants recycles them."""


@builtin("append")
def append(node: SNode, indices: object, val: object) -> int:
    """Append ``val`` to the dynamic SNode's list at ``indices``; the index it went to."""


@builtin("length")
def length(node: SNode, indices: object) -> int:
    """The length of the dynamic SNode's list at ``indices``."""


@builtin("rescale_index")
def rescale_index(a: object, b: SNode, I: object) -> Matrix:  # noqa: E741 - Quadrants' name
    """Index ``I`` of field or SNode ``a`` as an index of SNode ``b``."""


@builtin("no_activate")
def no_activate(*fields: object) -> None:
    """A promise that this kernel writes only active cells of ``fields`` (accepted: writes
    here activate all the same)."""


# ----------------------------------------------------------------------------- qd.graph

@builtin("graph.do_while")
def do_while(condition: object) -> bool:
    """``while qd.graph.do_while(flag):`` at a kernel's top level: its body (loops and
    statements) runs, then runs again while ``flag``, a 0-d qd.i32 ndarray, is nonzero."""


@builtin("graph.parallel_context")
def parallel_context() -> AbstractContextManager[None]:
    """``with qd.graph.parallel_context():``: a fork / join of independent ``qd.graph.parallel``
    sections. Run here in order, one of the schedules the sections' independence allows."""


@builtin("graph.parallel")
def parallel() -> AbstractContextManager[None]:
    """``with qd.graph.parallel():``: one section of a ``qd.graph.parallel_context``."""

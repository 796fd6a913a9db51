"""Calls a kernel makes into Python's libraries (the standard library, NumPy, installed
packages): which functions are the user's own, to be inlined, and the located error for the
others, at the user's call, naming the kernel language's spelling where it has one."""
from __future__ import annotations

import ast
import builtins
import os
import sys
import sysconfig
import types
from functools import lru_cache

from ..errors import TranspileError
from ..ir.nodes import Loc

# Modules whose functions are never inlined, wherever they are installed: they run in Python
# at translation time (math, operator, functools), are the language's own (transpiler), or
# cannot run in a kernel (NumPy, SciPy, PyTorch, random).
LIBRARY_MODULES = frozenset({"numpy", "math", "builtins", "operator", "functools", "random", "transpiler", "torch",
                             "scipy"})

# The kernel language's spelling of a NumPy, math or random function (tests/test_diagnostics.py
# translates each, so that no hint names something that does not work).
_SAME = ("sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "log", "sqrt", "floor", "ceil", "trunc", "round",
         "atan2")
EQUIVALENTS = {
    **{name: f"qd.{name}" for name in _SAME},
    "asin": "qd.asin", "arcsin": "qd.asin", "acos": "qd.acos", "arccos": "qd.acos", "atan": "qd.atan",
    "arctan": "qd.atan", "arctan2": "qd.atan2", "rint": "qd.round",
    "abs": "qd.abs", "fabs": "qd.abs", "absolute": "qd.abs",
    "pow": "qd.pow", "power": "qd.pow", "minimum": "qd.min", "fmin": "qd.min", "maximum": "qd.max", "fmax": "qd.max",
    "where": "qd.select", "clip": "qd.math.clamp", "log2": "qd.math.log2", "isnan": "qd.math.isnan",
    "isinf": "qd.math.isinf", "sign": "qd.math.sign", "degrees": "qd.math.degrees", "radians": "qd.math.radians",
    "dot": "qd.math.dot", "cross": "qd.math.cross", "random": "qd.random",
}
# Python's built-ins a kernel cannot call with run-time values, and what it writes instead
# (abs, min, max, pow, int, float, bool, len, all, any and print it calls as they are).
BUILTIN_EQUIVALENTS = {"round": "qd.round", "divmod": "`//` and `%`"}


def _library_dirs() -> tuple[str, ...]:
    """Where the standard library and installed packages live."""
    paths = sysconfig.get_paths()
    return tuple(os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")
                 if paths.get(k))


_LIBRARY_DIRS = _library_dirs()


@lru_cache(maxsize=1024)
def _library_file(file: str) -> bool:
    """A file of the standard library or of an installed package (any environment's)."""
    real = os.path.realpath(file)
    parts = real.split(os.sep)
    return real.startswith(_LIBRARY_DIRS) or "site-packages" in parts or "dist-packages" in parts


def is_user_function(fn: types.FunctionType) -> bool:
    """A plain function of the user's own files, which a kernel inlines (as Quadrants does):
    not one of a library module, nor one of the standard library or an installed package."""
    if (fn.__module__ or "").split(".")[0] in LIBRARY_MODULES:
        return False
    file = fn.__code__.co_filename
    return file.startswith("<") or not _library_file(file)


def _top_module(fn: object) -> str:
    return (getattr(fn, "__module__", None) or type(fn).__module__ or "").split(".")[0]


def _spelled(fn: object, node: ast.Call) -> str:
    """The function as the user wrote it (`np.sin`), with its full name where the spelling
    hides it (`dumps` (`json.dumps`))."""
    written = ast.unparse(node.func)
    module = getattr(fn, "__module__", None) or type(fn).__module__
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    full = name if module in (None, "builtins") else f"{module}.{name}"
    return f"`{written}`" if "." in written or full == written else f"`{written}` (`{full}`)"


def equivalent(fn: object) -> str | None:
    """The kernel language's spelling of a Python function, if it has one."""
    name = getattr(fn, "__name__", None) or ""
    if getattr(builtins, name, None) is fn:
        return BUILTIN_EQUIVALENTS.get(name)
    return EQUIVALENTS.get(name) if _top_module(fn) in LIBRARY_MODULES else None


def library_call_error(fn: object, node: ast.Call, loc: Loc) -> TranspileError:
    """The error for a call of a Python function a kernel cannot run, at the user's call."""
    name = getattr(fn, "__name__", None) or ""
    what = "a Python built-in" if getattr(builtins, name, None) is fn else "a Python library function"
    spelling = equivalent(fn)
    return TranspileError(f"{_spelled(fn, node)} is {what}; it cannot run in a kernel", loc,
                          hint=f"use {spelling} in a kernel" if spelling else None)


def is_library_callable(fn: object) -> bool:
    """A callable of Python's built-ins, the standard library or an installed package."""
    module = getattr(fn, "__module__", None) or type(fn).__module__ or ""
    top = module.split(".")[0]
    if top in LIBRARY_MODULES or top in sys.stdlib_module_names:
        return True
    file = getattr(sys.modules.get(module), "__file__", None)
    return file is not None and _library_file(file)

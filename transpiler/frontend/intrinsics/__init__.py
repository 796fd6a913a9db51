"""Calls to ``qd.*`` built-ins: each handler checks its arguments and builds IR nodes.

One module per domain; each registers its handlers in ``HANDLERS`` (table.py) when imported,
which this package does for all of them."""
from . import atomics, language, linalg, math, random, shmem, simt  # noqa: F401 - they register their handlers
from .casts import cast_call, dtype_call
from .table import ELEMENTWISE, HANDLERS, call_builtin, handler

__all__ = ["ELEMENTWISE", "HANDLERS", "call_builtin", "cast_call", "dtype_call", "handler"]

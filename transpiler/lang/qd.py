"""The language's own namespace, for the modules written in the kernel language inside the
package (the block and subgroup libraries, the tiles, ``qd.random``, ``qd.algorithms``,
the sparse builder): they write ``qd.func``, ``qd.u32``, ``qd.simt.block`` as a user's
kernel does, but import this (``from . import qd``) instead of the package, which would tie
them to the pipeline and the runtime above them.

The frontend reads ``qd.<name>`` from a function's globals by attribute, whatever object
``qd`` is, and these are the package's own objects, so a library function translates as it
did when it named the package. It holds what they use, no more: a name a library module
needs is added here, and the package's namespace stays the one users see."""
from ..ir.types import f16, f32, f64, i32, i64, u32, u64
from . import math, simt, types
from .kernel import func, kernel, static, template
from .matrix import Vector
from .ops import (
    atomic_add, atomic_exchange, bit_cast, cast, cos, log, loop_config, max, random, select, sqrt, static_assert,
    typeof, volatile_load,
)

__all__ = [
    "i32", "i64", "u32", "u64", "f16", "f32", "f64",
    "math", "simt", "types",
    "func", "kernel", "static", "template",
    "Vector",
    "atomic_add", "atomic_exchange", "bit_cast", "cast", "cos", "log", "loop_config", "max", "random", "select",
    "sqrt", "static_assert", "typeof", "volatile_load",
]

"""The language's own namespace, for the modules written in the kernel language inside the
package (the block and subgroup libraries, the tiles, ``qd.random``, ``qd.algorithms``,
the sparse builder): they write ``qd.func``, ``qd.u32``, ``qd.simt.block`` as a user's
kernel does, but import this (``from . import qd``) instead of the package, which would tie
them to the pipeline and the runtime above them.

The frontend reads ``qd.<name>`` from a function's globals by attribute, whatever object
``qd`` is, and these are the package's own objects, so a library function translates as it
did when it named the package."""
from ..ir.types import bool_ as u1
from ..ir.types import f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
from . import math, simt, types
from .kernel import func, kernel, static, template
from .matrix import Matrix, Vector
from .ops import (
    atomic_add, atomic_exchange, bit_cast, cast, cos, log, loop_config, max, random, select, sqrt, static_assert,
    typeof, volatile_load,
)

__all__ = [
    "u1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64",
    "math", "simt", "types",
    "func", "kernel", "static", "template",
    "Matrix", "Vector",
    "atomic_add", "atomic_exchange", "bit_cast", "cast", "cos", "log", "loop_config", "max", "random", "select",
    "sqrt", "static_assert", "typeof", "volatile_load",
]

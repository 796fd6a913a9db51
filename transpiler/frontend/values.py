"""What a Python expression in a kernel can stand for while it is being lowered.

Runtime values are IR expressions. Everything known at translation time (literals,
globals, template arguments, ``qd.static`` results, modules, functions) is a
``CT`` wrapper around the Python object. Arrays and their ``.shape`` are handles that
only become IR when subscripted."""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import nodes as ir


@dataclass(slots=True)
class CT:
    """A value known at translation time."""

    value: object


@dataclass(slots=True)
class ArrayHandle:
    array: ir.Array


@dataclass(slots=True)
class ShapeHandle:
    array: ir.Param


@dataclass(slots=True)
class KernelVar:
    """A kernel-scope variable that several tasks share (a reduction's total, a value a
    serial part computes for later tasks): it lives in the scratch buffer ``param``."""

    param: ir.Param
    name: str

    @property
    def type(self):
        return self.param.type.dtype


@dataclass(slots=True)
class TupleValue:
    """A tuple of runtime values (``a, b = b, a``; several return values)."""

    items: list


Value = ir.Expr | CT | ArrayHandle | ShapeHandle | KernelVar | TupleValue

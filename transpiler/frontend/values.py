"""What a Python expression in a kernel can stand for while it is being lowered.

Runtime values are IR expressions. Everything known at translation time (literals,
globals, template arguments, ``qd.static`` results, modules, functions) is a
``CT`` wrapper around the Python object. Arrays and their ``.shape`` are handles that
only become IR when subscripted."""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.records import record
from ..lang.kernel import BoundFunc


@record(slots=True)
class CT:
    """A value known at translation time."""

    value: object


@record(slots=True)
class ArrayHandle:
    array: ir.Array


@record(slots=True)
class ShapeHandle:
    array: ir.Param


@record(slots=True)
class KernelVar:
    """A kernel-scope variable that several tasks share (a reduction's total, a value a
    serial part computes for later tasks): it lives in the scratch buffer ``param``."""

    param: ir.Param
    name: str

    @property
    def type(self):
        return self.param.type.dtype


class Private:
    """A kernel-scope name a parallel loop makes its thread's own (kernel_scope.private_names):
    the body's first statement that mentions it assigns it, and declares it there."""


PRIVATE = Private()


@record(slots=True)
class MatrixValue:
    """A vector (``shape == (n,)``) or matrix (``(n, m)``) value: its scalars, row-major,
    all of one dtype. Every operation on it is lowered component by component."""

    shape: tuple[int, ...]
    items: list  # of ir.Expr

    @property
    def dtype(self):
        return self.items[0].type

    @property
    def is_vector(self) -> bool:
        return len(self.shape) == 1

    def at(self, *index: int):
        """The scalar at ``[i]`` or ``[i, j]``."""
        return self.items[index[0] if len(index) == 1 else index[0] * self.shape[1] + index[1]]


@record(slots=True)
class MatrixVar:
    """A vector or matrix variable: one local per component (``v_x``, ``m_0_1``)."""

    shape: tuple[int, ...]
    locals: list  # of ir.Local, row-major


@record(slots=True)
class StructValue:
    """A struct value: its members by name, each a scalar expression, a MatrixValue or a
    StructValue."""

    type: object  # lang.matrix.StructType
    members: dict


@record(slots=True)
class StructVar:
    """A struct variable: its members by name, each an ir.Local, a MatrixVar or a StructVar."""

    type: object
    members: dict


def map_scalars(value, fn):
    """``value`` (a struct, vector or scalar value) with ``fn`` applied to each scalar expression."""
    if isinstance(value, StructValue):
        return StructValue(value.type, {k: map_scalars(m, fn) for k, m in value.members.items()})
    if isinstance(value, MatrixValue):
        return MatrixValue(value.shape, [fn(e) if isinstance(e, ir.Expr) else e for e in value.items])
    return fn(value) if isinstance(value, ir.Expr) else value


def component_locals(bound) -> list:
    """The ir.Locals a name's binding holds: itself for a scalar local, every component of a
    vector, matrix or struct variable, none for anything else."""
    if isinstance(bound, ir.Local):
        return [bound]
    if isinstance(bound, MatrixVar):
        return list(bound.locals)
    if isinstance(bound, StructVar):
        return [v for m in bound.members.values() for v in component_locals(m)]
    return []


@record(slots=True)
class MethodValue:
    """``v.norm`` before the call: the value and the method's name."""

    value: object
    name: str


@record(slots=True)
class BoundMethod:
    """A @qd.func method ready to be called with its ``self``: a struct value's, or a
    @qd.data_oriented instance's (``self.val(i)`` in a kernel method)."""

    func: object   # the lang.Func
    value: object  # its self: a StructValue, or CT(instance)


def bound_method(value):
    """``value`` as a BoundMethod when it is a @qd.func bound in Python (lang.BoundFunc: read
    through an instance, perhaps stored away as `self.update = self._update_linear`)."""
    return BoundMethod(value.func, CT(value.instance)) if isinstance(value, BoundFunc) else value


@record(slots=True)
class TupleValue:
    """A tuple of runtime values (``a, b = b, a``; several return values)."""

    items: list


def sequence_items(v) -> list | None:
    """The items of a tuple value or of a list / tuple known now (each a value), else None."""
    if isinstance(v, TupleValue):
        return v.items
    if isinstance(v, CT) and isinstance(v.value, (tuple, list)):
        return [CT(x) for x in v.value]
    return None


@record(slots=True)
class ArraySlice:
    """``arr[r0:r1, c0:c1]`` or ``arr[b, r0:r1, c0:c1]`` (a block: a tile's source or
    destination) and ``arr[r0:r1, col]`` / ``arr[b, r0:r1, col]`` (a column: one element per
    lane, for qd.outer). Not a value: the frontend reads or writes it only where a tile
    operation names it (``frontend/tiles.py``)."""

    array: ir.Array
    batch: object | None    # the leading index of a 3-D array, or None
    rows: tuple             # (start, stop): translation-time (CT) or run-time values
    cols: tuple | None      # (start, stop) of a block; None for a column
    col: object | None      # the column of a column slice
    text: str               # as written, for messages


@record(slots=True)
class OuterProduct:
    """``qd.outer(a, b)``: only the right-hand side of ``tile -= ...``."""

    a: object
    b: object
    text: str


Value = (ir.Expr | CT | ArrayHandle | ShapeHandle | KernelVar | TupleValue | MatrixValue | MatrixVar | StructValue
         | StructVar | ArraySlice | OuterProduct)


class StaticNdrange(tuple):
    """``qd.ndrange(...)`` with extents known at translation time, met outside a for loop's
    own iterator (``qd.static(qd.ndrange(3, 3))``): its index tuples, in row-major order."""


class StaticIndex(tuple):
    """One index of ``qd.static(qd.grouped(qd.ndrange(...)))``: bound as an integer vector."""

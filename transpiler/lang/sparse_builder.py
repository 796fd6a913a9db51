"""What a kernel sees of a sparse matrix builder (``qd.types.sparse_matrix_builder()``): its
arrays, and the @qd.func that ``A[i, j] += v`` inlines. Written with the language's own
modules below ``qd.types``, which names it (lang/sparse.py, the host side, is above)."""
import dataclasses

from ..ir.types import i32
from .kernel import _NdarrayFactory, func, static, template
from .ops import atomic_add

ndarray = _NdarrayFactory()  # qd.types.ndarray


@func
def _add_entry(b: template(), i, j, value, sign: template()):  # noqa: ANN001 - kernel parameters
    """One triplet into the builder ``b``: the slot an atomic add hands out, if there is one
    (the host counts every claim, so an overflow is an error at build(), never a lost entry)."""
    k = atomic_add(b.count[0], 1)
    if k < b.rows.shape[0]:
        b.rows[k] = i
        b.cols[k] = j
        if static(sign < 0):
            b.values[k] = -value
        else:
            b.values[k] = value


@dataclasses.dataclass
class BuilderArrays:
    """What a kernel sees of a ``SparseMatrixBuilder``: ``qd.types.sparse_matrix_builder()``."""

    rows: ndarray(dtype=i32, ndim=1)
    cols: ndarray(dtype=i32, ndim=1)
    values: ndarray(ndim=1)  # the builder's dtype
    count: ndarray(dtype=i32, ndim=1)

    _qd_add_entry = _add_entry  # what `b[i, j] += v` and `b[i, j] -= v` inline (frontend/structs.py)


def builder_annotation(*_args, **_kwargs) -> type:
    """``qd.types.sparse_matrix_builder()`` (and ``qd.linalg.sparse_matrix_builder()``)."""
    return BuilderArrays

"""Quadrants' deprecated host-side algorithms, kept so code that calls them still runs:
``parallel_sort`` (an in-place key or key-value sort) and ``PrefixSumExecutor`` (an in-place
inclusive i32 prefix sum). Each warns as Quadrants does and runs the device-wide algorithm
that replaces it (``sort``, ``exclusive_scan_add``) in a kernel of its own."""
from __future__ import annotations

import warnings

from ...ir.types import from_numpy
from .. import qd

from .common import natural_depth
from .radix_sort import sort, sort_scratch_slots
from .reduce_scan import exclusive_scan_add, exclusive_scan_scratch_slots

ND1 = qd.types.ndarray(ndim=1)
ND0 = qd.types.ndarray(ndim=0)


@qd.kernel
def _sort_in_place(keys: ND1, tmp_keys: ND1, values: ND1, tmp_values: ND1, scratch: ND1, n: ND0,
                   key_dtype: qd.template(), has_values: qd.template(), depth: qd.template()):
    sort(keys, tmp_keys, values, tmp_values, scratch, n, key_dtype, has_values, key_dtype.bits, depth)


@qd.kernel
def _inclusive_add_in_place(arr: ND1, before: ND1, scratch: ND1, n: ND1, depth: qd.template()):
    exclusive_scan_add(arr, before, scratch, n[0], qd.i32, depth)
    for i in range(n[0]):
        arr[i] += before[i]


def _host_array(a):
    """``a`` as a NumPy array the kernels update, and how to hand the result back to it.
    (NumPy is imported here, not with the module: the command line never needs it.)"""
    import numpy as np  # noqa: PLC0415 - NumPy off the package's import path

    if isinstance(a, np.ndarray):
        return a, None
    if hasattr(a, "to_numpy") and hasattr(a, "from_numpy"):  # a field or a qd.ndarray
        return a.to_numpy(), a
    raise TypeError(f"expected a NumPy array, a qd.ndarray or a field, got {type(a).__name__}")


def parallel_sort(keys, values=None) -> None:
    """Sort ``keys`` (and ``values`` with them) ascending, in place. Deprecated, as in
    Quadrants: call ``qd.algorithms.sort`` from your kernel instead."""
    import numpy as np  # noqa: PLC0415 - NumPy off the package's import path

    warnings.warn("qd.algorithms.parallel_sort is deprecated. Use qd.algorithms.sort (the @qd.func) instead.",
                  DeprecationWarning, stacklevel=2)
    k, k_owner = _host_array(keys)
    v, v_owner = _host_array(values) if values is not None else (k, None)
    n = k.shape[0]
    if values is not None and v.shape[0] != n:
        raise ValueError(f"parallel_sort: {n} keys but {v.shape[0]} values")
    scratch = np.zeros(sort_scratch_slots(n), np.uint32)
    _sort_in_place(k, np.empty_like(k), v, np.empty_like(v), scratch, np.array(n, np.int32),
                   from_numpy(k.dtype), values is not None, natural_depth(n))
    for owner, arr in ((k_owner, k), (v_owner, v if values is not None else None)):
        if owner is not None and arr is not None:
            owner.from_numpy(arr)


class PrefixSumExecutor:
    """An in-place inclusive prefix sum of an i32 array of ``length`` elements. Deprecated, as
    in Quadrants: call ``qd.algorithms.exclusive_scan_add`` from your kernel instead."""

    def __init__(self, length: int):
        import numpy as np  # noqa: PLC0415 - NumPy off the package's import path

        warnings.warn("qd.algorithms.PrefixSumExecutor is deprecated. Use qd.algorithms.exclusive_scan_add "
                      "(the @qd.func) instead.", DeprecationWarning, stacklevel=2)
        self.sorting_length = int(length)
        self._depth = natural_depth(self.sorting_length)
        self._scratch = np.zeros(exclusive_scan_scratch_slots(self.sorting_length, self._depth), np.uint32)

    def run(self, input_arr) -> None:
        import numpy as np  # noqa: PLC0415 - NumPy off the package's import path

        arr, owner = _host_array(input_arr)
        if arr.dtype != np.int32:
            raise RuntimeError("Only qd.i32 type is supported for prefix sum.")
        n = min(self.sorting_length, arr.shape[0])
        _inclusive_add_in_place(arr, np.zeros_like(arr), self._scratch, np.array([n], np.int32), self._depth)
        if owner is not None:
            owner.from_numpy(arr)

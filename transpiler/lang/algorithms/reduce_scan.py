"""``qd.algorithms.reduce_{add,min,max}`` and ``exclusive_scan_{add,min,max}``, with their
scratch sizing helpers: Quadrants 1.3.3's signatures, each op a @qd.func called at the top
level of the user's kernel, where it expands into its tasks: the device reduce's two, the
single-pass scan's two (4-byte dtypes) or the staircase's (8-byte dtypes)."""
from __future__ import annotations

from .. import qd
from ..kernel import HostFunc

from .common import (
    check_depth_host, depth_problem, dtype_problem, natural_depth, partial_slots_host, scratch_problem, wide_for,
)
from .device_reduce import device_reduce
from .device_scan import device_scan
from .staircase import exclusive_scan_levels


@qd.func
def _checked(arr: qd.template(), out: qd.template(), scratch: qd.template(), dtype: qd.template(),
             log256_max_n: qd.template()):
    """Translation-time checks of an op's arguments, reported at the user's call."""
    qd.static_assert(not depth_problem(log256_max_n), depth_problem(log256_max_n))
    qd.static_assert(not dtype_problem(dtype, "dtype"), dtype_problem(dtype, "dtype"))
    qd.static_assert(qd.typeof(arr[0]) == dtype and qd.typeof(out[0]) == dtype,
                     "arr and out must hold the dtype passed as `dtype`")
    qd.static_assert(not scratch_problem(qd.typeof(scratch[0]), wide_for(dtype)),
                     scratch_problem(qd.typeof(scratch[0]), wide_for(dtype)))


@qd.func
def _reduce(arr: qd.template(), out: qd.template(), scratch: qd.template(), n, dtype: qd.template(),
            log256_max_n: qd.template(), op: qd.template()):
    _checked(arr, out, scratch, dtype, log256_max_n)
    device_reduce(arr, out, scratch, n, dtype, wide_for(dtype), op, log256_max_n)


@qd.func
def _scan(arr: qd.template(), out: qd.template(), scratch: qd.template(), n, dtype: qd.template(),
          log256_max_n: qd.template(), op: qd.template()):
    _checked(arr, out, scratch, dtype, log256_max_n)
    if qd.static(dtype.bits == 32):
        device_scan(arr, out, scratch, n, dtype, op)
    else:
        exclusive_scan_levels(arr, None, out, None, scratch, 0, n, dtype, wide_for(dtype), op, log256_max_n)


@qd.func(requires_top_level=True)
def reduce_add(arr: qd.template(), out: qd.template(), scratch: qd.template(), n: qd.i32, dtype: qd.template(),
               log256_max_n: qd.template()):
    """out[0] = sum(arr[0:n]); ``n`` is read on the device, ``log256_max_n`` fixes the phases."""
    _reduce(arr, out, scratch, n, dtype, log256_max_n, "add")


@qd.func(requires_top_level=True)
def reduce_min(arr: qd.template(), out: qd.template(), scratch: qd.template(), n: qd.i32, dtype: qd.template(),
               log256_max_n: qd.template()):
    """out[0] = min(arr[0:n]) (the dtype's largest value, +inf for floats, when n == 0)."""
    _reduce(arr, out, scratch, n, dtype, log256_max_n, "min")


@qd.func(requires_top_level=True)
def reduce_max(arr: qd.template(), out: qd.template(), scratch: qd.template(), n: qd.i32, dtype: qd.template(),
               log256_max_n: qd.template()):
    """out[0] = max(arr[0:n]) (the dtype's smallest value, -inf for floats, when n == 0)."""
    _reduce(arr, out, scratch, n, dtype, log256_max_n, "max")


@qd.func(requires_top_level=True)
def exclusive_scan_add(arr: qd.template(), out: qd.template(), scratch: qd.template(), n: qd.i32,
                       dtype: qd.template(), log256_max_n: qd.template()):
    """out[i] = sum(arr[0:i]) for i < n; ``out`` must not be ``arr``."""
    _scan(arr, out, scratch, n, dtype, log256_max_n, "add")


@qd.func(requires_top_level=True)
def exclusive_scan_min(arr: qd.template(), out: qd.template(), scratch: qd.template(), n: qd.i32,
                       dtype: qd.template(), log256_max_n: qd.template()):
    """out[i] = min(arr[0:i]) for i < n (out[0] is the identity)."""
    _scan(arr, out, scratch, n, dtype, log256_max_n, "min")


@qd.func(requires_top_level=True)
def exclusive_scan_max(arr: qd.template(), out: qd.template(), scratch: qd.template(), n: qd.i32,
                       dtype: qd.template(), log256_max_n: qd.template()):
    """out[i] = max(arr[0:i]) for i < n (out[0] is the identity)."""
    _scan(arr, out, scratch, n, dtype, log256_max_n, "max")


@qd.func
def _partial_slots(n, levels: qd.template()):
    """Kernel side of the sizing helpers: slots of ``levels`` stacked partial levels, >= 1."""
    total = 0
    c = n
    for _ in qd.static(range(levels)):
        c = (c + 255) >> 8
        total += c
    return max(total, 1)


def _reduce_slots_host(n: int, log256_max_n: int | None = None) -> int:
    """Scratch slots reduce_{add,min,max} need for up to ``n`` elements at depth
    ``log256_max_n`` (the smallest that covers ``n`` when omitted; host only)."""
    depth = natural_depth(n) if log256_max_n is None else log256_max_n
    check_depth_host(depth)
    return max(partial_slots_host(n, depth - 1), 1)


@qd.func
def _reduce_slots_kernel(n, log256_max_n: qd.template()):
    qd.static_assert(not depth_problem(log256_max_n), depth_problem(log256_max_n))
    return _partial_slots(n, log256_max_n - 1)


reduce_scratch_slots = HostFunc(_reduce_slots_kernel.fn, _reduce_slots_host)
reduce_scratch_slots.__name__ = "reduce_scratch_slots"
# A scan stacks the same levels as a reduce of the same depth (its last level is scanned in place).
exclusive_scan_scratch_slots = HostFunc(_reduce_slots_kernel.fn, _reduce_slots_host)
exclusive_scan_scratch_slots.__name__ = "exclusive_scan_scratch_slots"

"""``qd.algorithms``: Quadrants 1.3.3's device-wide algorithms, written in the kernel
language (like the block collectives in blocklib), so every target gets them.

Each op is a @qd.func called as a statement at the top level of the user's @qd.kernel; it
expands into several tasks (GPU entry points launched in order, listed in the manifest and
the C++ header), sized at translation time by ``log256_max_n`` and at run time by the live
count ``n``, which stays on the device. Scratch is the caller's, sized with the matching
``*_scratch_slots`` helper (callable on the host and in kernels).
"""
from .reduce_scan import (  # noqa: F401
    exclusive_scan_add, exclusive_scan_max, exclusive_scan_min, exclusive_scan_scratch_slots, reduce_add,
    reduce_max, reduce_min, reduce_scratch_slots,
)
from .deprecated import PrefixSumExecutor, parallel_sort  # noqa: F401
from .radix_sort import sort, sort_scratch_slots  # noqa: F401
from .select_rbk import (  # noqa: F401
    reduce_by_key_add, reduce_by_key_scratch_slots, select, select_scratch_slots,
)

__all__ = [
    "PrefixSumExecutor", "parallel_sort", "exclusive_scan_add", "exclusive_scan_max", "exclusive_scan_min",
    "exclusive_scan_scratch_slots",
    "reduce_add", "reduce_max", "reduce_min", "reduce_scratch_slots", "reduce_by_key_add",
    "reduce_by_key_scratch_slots", "select", "select_scratch_slots", "sort", "sort_scratch_slots",
]

"""A recursive @qd.real_func (and two that call each other, declared ahead of their
definitions): CUDA and HIP compile it; GLSL, Metal and OpenCL C forbid recursion, a
located error."""
import transpiler as qd


@qd.real_func
def tree_sum(values: qd.types.ndarray(dtype=qd.i32, ndim=1), lo: qd.i32, hi: qd.i32) -> qd.i32:
    if lo == hi:
        return values[lo]
    mid = (lo + hi) // 2
    return tree_sum(values, lo, mid) + tree_sum(values, mid + 1, hi)


@qd.real_func
def is_even(n: qd.i32) -> qd.i32:
    if n == 0:
        return 1
    return is_odd(n - 1)


@qd.real_func
def is_odd(n: qd.i32) -> qd.i32:
    if n == 0:
        return 0
    return is_even(n - 1)


@qd.kernel
def real_recursion(values: qd.types.ndarray(dtype=qd.i32, ndim=1), parity: qd.types.ndarray(dtype=qd.i32, ndim=1)) \
        -> qd.i32:
    for i in range(parity.shape[0]):
        parity[i] = is_odd(values[i])
    return tree_sum(values, 0, values.shape[0] - 1)

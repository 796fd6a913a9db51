"""What running Quadrants' own test files on Vulkan (scripts/quadrants_tests.py -e vulkan) found
different there, checked with kernels of our own against NumPy on random data on every executor:

- ``copy.deepcopy`` of a ``qd.ndarray``: on Vulkan its storage is the executor's mapped device
  memory, owned by the executor (which holds modules and cannot be pickled); the copy is a new
  ndarray the executor allocates, with the same elements, and independent of the original.
"""
import copy

import numpy as np

import transpiler as qd


@qd.kernel
def scale_rows(a: qd.types.ndarray(), k: qd.f32):
    for i in range(a.shape[0]):
        a[i] = a[i] * k


def test_deepcopy_of_an_ndarray_is_independent(executor, rng):
    n = 37
    values = rng.standard_normal((n, 3)).astype(np.float32)
    x = qd.Vector.ndarray(3, qd.f32, n, needs_grad=True)
    x.from_numpy(values)
    grads = rng.standard_normal((n, 3)).astype(np.float32)
    x.grad.from_numpy(grads)
    y = copy.deepcopy(x)
    assert (y.shape, y.element_type, y.n) == (x.shape, x.element_type, x.n)
    scale_rows(y, 3.0)  # a kernel writes the copy: the original keeps its values
    np.testing.assert_array_equal(x.to_numpy(), values)
    np.testing.assert_allclose(y.to_numpy(), values * np.float32(3.0), rtol=1e-6)
    x.from_numpy(-values)  # and writing the original leaves the copy alone
    np.testing.assert_allclose(y.to_numpy(), values * np.float32(3.0), rtol=1e-6)
    np.testing.assert_array_equal(y.grad.to_numpy(), grads)
    assert y.grad is not x.grad


def test_deepcopy_of_a_scalar_ndarray_keeps_its_dtype(executor, rng):
    values = rng.integers(-2**31, 2**31, (5, 7), dtype=np.int32)
    x = qd.ndarray(qd.i32, (5, 7))
    x.from_numpy(values)
    y = copy.deepcopy(x)
    x[2, 3] = 0
    assert y.dtype == qd.i32 and y[2, 3] == values[2, 3]
    np.testing.assert_array_equal(y.to_numpy(), values)

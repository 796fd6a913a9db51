"""A histogram of values in [lo, hi): every thread bins one value with an atomic add."""
import transpiler as qd


@qd.kernel
def histogram(values: qd.types.ndarray(dtype=qd.f32, ndim=1), bins: qd.types.ndarray(dtype=qd.i32, ndim=1),
              lo: qd.f32, hi: qd.f32):
    n_bins = bins.shape[0]
    for i in range(values.shape[0]):
        v = values[i]
        if lo <= v < hi:
            b = qd.i32((v - lo) / (hi - lo) * n_bins)
            bins[min(b, n_bins - 1)] += 1

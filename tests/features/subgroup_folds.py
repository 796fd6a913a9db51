"""Subgroup reductions and scans: native where the language has them, helpers elsewhere."""
import transpiler as qd


@qd.kernel
def subgroup_folds(x: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.i32, ndim=2)):
    for i in range(x.shape[0]):
        v = x[i]
        out[i, 0] = qd.simt.subgroup.reduce_add(v)
        out[i, 1] = qd.simt.subgroup.inclusive_min(v)
        out[i, 2] = qd.simt.subgroup.exclusive_max(v)

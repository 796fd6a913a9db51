"""Subgroup ballot, all and any."""
import transpiler as qd


@qd.kernel
def subgroup_votes(x: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.u64, ndim=2)):
    for i in range(x.shape[0]):
        p = x[i] > 0
        out[i, 0] = qd.simt.subgroup.ballot(p)
        out[i, 1] = qd.cast(qd.simt.subgroup.all_true(p), qd.u64)
        out[i, 2] = qd.cast(qd.simt.subgroup.any_true(p), qd.u64)

"""Subgroup shuffles, a broadcast and the lane index; GLSL builds shuffle_up/down with the
CUDA semantics for lanes past the edge."""
import transpiler as qd


@qd.kernel
def subgroup_shuffles(x: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    for i in range(x.shape[0]):
        v = x[i]
        out[i, 0] = qd.simt.subgroup.shuffle_xor(v, 1)
        out[i, 1] = qd.simt.subgroup.shuffle_up(v, 2)
        out[i, 2] = qd.simt.subgroup.shuffle_down(v, 2)
        out[i, 3] = qd.simt.subgroup.broadcast(v, 0)
        out[i, 4] = qd.cast(qd.simt.subgroup.invocation_id(), qd.f32)

"""A block reduction from the block library (written in the kernel language), one atomic per
block; specialized to the target's subgroup width (GLSL: 8 here, lavapipe's)."""
# options: {"glsl": {"subgroup_size": 8}}
import transpiler as qd


@qd.kernel
def block_sum(x: qd.types.ndarray(dtype=qd.f32, ndim=1), total: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    qd.loop_config(block_dim=128)
    for i in range(x.shape[0]):
        s = qd.simt.block.reduce_add(x[i], 128, qd.f32)
        if qd.simt.block.thread_idx() == 0:
            total[0] += s

"""HIP's wavefront width is a translation option (wave32 for RDNA); code that asks for the
subgroup size is specialized to it."""
# options: {"hip": {"wave32": True}, "glsl": {"subgroup_size": 16}}
import transpiler as qd


@qd.kernel
def lane_groups(out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(out.shape[0]):
        out[i] = i // qd.simt.subgroup.group_size() + qd.simt.subgroup.log2_group_size()

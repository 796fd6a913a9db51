"""qd.simt.system.mem_fence(): __threadfence_system() on CUDA and HIP; GLSL and Metal have no
system scope, so it is a located error there."""
import transpiler as qd


@qd.kernel
def system_fence(data: qd.types.ndarray(dtype=qd.i32, ndim=1), flag: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(data.shape[0]):
        data[i] = i
        qd.simt.system.mem_fence()
        qd.atomic_exchange(flag[i], 1)

"""Publication across blocks: data, grid.mem_fence(), an atomic flag; the reader spins with
qd.volatile_load (coherent buffers on GLSL, an atomic load on Metal)."""
import transpiler as qd


@qd.kernel
def volatile_handoff(data: qd.types.ndarray(dtype=qd.i32, ndim=1), flag: qd.types.ndarray(dtype=qd.i32, ndim=1),
                     out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(data.shape[0]):
        qd.atomic_exchange(data[i], i * 3)
        qd.simt.grid.mem_fence()
        qd.atomic_exchange(flag[i], 1)
    for i in range(out.shape[0]):
        while qd.volatile_load(flag[i]) == 0:
            pass
        qd.simt.grid.mem_fence()
        out[i] = qd.volatile_load(data[i])

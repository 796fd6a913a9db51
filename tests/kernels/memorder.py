"""Producer / consumer ordering: fences and volatile loads (as Quadrants' atomics guide pairs them)."""
import transpiler as qd


@qd.kernel
def handoff(data: qd.types.ndarray(dtype=qd.f32, ndim=1), flag: qd.types.ndarray(dtype=qd.i32, ndim=1),
            out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(data.shape[0]):
        data[i] = i * 2.0
        qd.simt.grid.mem_fence()          # the data before the flag
        qd.atomic_exchange(flag[i], 1)
    for i in range(out.shape[0]):
        while qd.volatile_load(flag[i]) == 0:
            pass
        qd.simt.grid.mem_fence()          # the flag before the data
        out[i] = data[i]
        qd.simt.block.mem_fence()

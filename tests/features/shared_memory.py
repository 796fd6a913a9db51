"""A block-shared array and block.sync(): reverse each block's slice in shared memory."""
import transpiler as qd


@qd.kernel
def shared_memory(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(x.shape[0]):
        tile = qd.simt.block.SharedArray((64,), qd.f32)
        t = qd.simt.block.thread_idx()
        tile[t] = x[i]
        qd.simt.block.sync()
        x[i] = tile[63 - t]

"""A block-wide inclusive scan from the block library."""
import transpiler as qd


@qd.kernel
def block_scan(x: qd.types.ndarray(dtype=qd.i32, ndim=1), y: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    qd.loop_config(block_dim=64)
    for i in range(x.shape[0]):
        y[i] = qd.simt.block.inclusive_add(x[i], 64, qd.i32)

"""block.sync_{all,any,count}_nonzero: one fused barrier on CUDA/HIP, a shared counter and one
barrier on GLSL and Metal."""
import transpiler as qd


@qd.kernel
def block_votes(p: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.i32, ndim=2)):
    qd.loop_config(block_dim=128)
    for i in range(p.shape[0]):
        out[i, 0] = qd.simt.block.sync_all_nonzero(p[i])
        out[i, 1] = qd.simt.block.sync_any_nonzero(p[i])
        out[i, 2] = qd.simt.block.sync_count_nonzero(p[i])

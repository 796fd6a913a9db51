"""A global work queue (the CUDA inter-block idiom): thread 0 of each block takes the next chunk with an
atomic add and shares its start with the block through a SharedArray slot between two
barriers; blocks keep taking chunks until the queue is empty."""
import transpiler as qd

BLOCK = 64
CHUNK = 256


@qd.kernel
def square_all(items: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=1),
               head: qd.types.ndarray(dtype=qd.i32, ndim=1), n_blocks: qd.i32):
    head[0] = 0
    qd.loop_config(block_dim=BLOCK)
    for i in range(n_blocks * BLOCK):
        tid = qd.simt.block.thread_idx()
        slot = qd.simt.block.SharedArray((1,), qd.i32)
        while True:
            if tid == 0:
                slot[0] = qd.atomic_add(head[0], CHUNK)
            qd.simt.block.sync()
            start = slot[0]                # the same in every thread: read after the barrier
            qd.simt.block.sync()           # before thread 0 overwrites the slot
            if start >= items.shape[0]:
                break
            for k in range(start + tid, min(start + CHUNK, items.shape[0]), BLOCK):
                out[k] = items[k] * items[k]

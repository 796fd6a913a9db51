"""One-launch sum with the last-block guard (the CUDA inter-block idiom): every block reduces its tile and
publishes a partial sum; the block that finishes last (an atomic ticket, voted block-wide
with sync_any_nonzero) adds the partials up. Portable to Metal: partials are published
and read through atomics, the only accesses Metal's device fence orders."""
import transpiler as qd

BLOCK = 128
vec = qd.types.ndarray(dtype=qd.f32, ndim=1)


@qd.kernel
def sum_last_block(x: vec, partials: vec, counter: qd.types.ndarray(dtype=qd.i32, ndim=1), out: vec):
    n_tiles = partials.shape[0]
    qd.loop_config(block_dim=BLOCK)
    for i in range(n_tiles * BLOCK):
        tid = qd.simt.block.thread_idx()
        tile = i // BLOCK
        # Each thread adds a strided slice of its tile's share of x.
        v = 0.0
        for k in range(tile * BLOCK + tid, x.shape[0], n_tiles * BLOCK):
            v += x[k]
        s = qd.simt.block.reduce_add(v, BLOCK, qd.f32)
        ticket = 0
        if tid == 0:
            qd.atomic_exchange(partials[tile], s)
            qd.simt.grid.mem_fence()       # the partial before the ticket
            ticket = qd.atomic_add(counter[0], 1)
        last = qd.simt.block.sync_any_nonzero(ticket == n_tiles - 1)
        if last:
            qd.simt.grid.mem_fence()       # the tickets before the partials
            t = 0.0
            for k in range(tid, n_tiles, BLOCK):
                t += qd.volatile_load(partials[k])
            total = qd.simt.block.reduce_add(t, BLOCK, qd.f32)
            if tid == 0:
                out[0] = total
                counter[0] = 0             # ready for the next launch

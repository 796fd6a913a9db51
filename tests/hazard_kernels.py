"""Kernels with SIMT hazards (and correct ones). A hazard's line carries a comment naming
its kind ("hazard: KIND"); test_hazards.py checks the kind and the line."""
import transpiler as qd

vec = qd.types.ndarray(dtype=qd.f32, ndim=1)
ivec = qd.types.ndarray(dtype=qd.i32, ndim=1)
block = qd.simt.block
subgroup = qd.simt.subgroup


@qd.kernel
def sync_in_thread_branch(a: vec):
    qd.loop_config(block_dim=64)
    for i in range(a.shape[0]):
        if block.thread_idx() < 16:
            block.sync()  # hazard: divergent-block
        a[i] = 0.0


@qd.kernel
def reduce_in_odd_threads(a: vec, out: vec):
    qd.loop_config(block_dim=64)
    for i in range(a.shape[0]):
        if i % 2 == 1:
            out[0] = block.reduce_add(a[i], 64, qd.f32)  # hazard: divergent-block


@qd.kernel
def vote_after_thread_loop(a: ivec):
    qd.loop_config(block_dim=64)
    for i in range(a.shape[0]):
        k = 0
        while k < a[i]:
            c = block.sync_count_nonzero(a[i] > 0)  # hazard: divergent-block
            k += 1 + c


@qd.kernel
def shuffle_in_lane_branch(a: vec):
    qd.loop_config(block_dim=64)
    for i in range(a.shape[0]):
        v = a[i]
        if subgroup.invocation_id() % 2 == 0:
            v = subgroup.shuffle_xor(v, 1)  # hazard: divergent-subgroup
        a[i] = v


@qd.kernel
def spin_on_plain_load(flag: ivec, out: ivec):
    for i in range(out.shape[0]):
        while flag[0] == 0:  # hazard: spin-wait
            pass
        out[i] = 1


@qd.kernel
def metal_plain_publication(data: vec, flag: ivec):
    for i in range(data.shape[0]):
        data[i] = 1.0  # hazard@msl: metal-publication
        qd.simt.grid.mem_fence()
        qd.atomic_exchange(flag[i], 1)


@qd.kernel
def metal_plain_flag(data: vec, flag: ivec, out: vec):
    """The look-back idiom of Quadrants' grid.mem_fence guide: plain data, a grid fence, a plain flag, and a reader that
    spins on the flag. Fine on CUDA, HIP and Vulkan; not on Metal, whose fences order atomic
    accesses only."""
    for i in range(data.shape[0]):
        data[i] = 1.0  # hazard@msl: metal-publication
        qd.simt.grid.mem_fence()
        flag[i] = 1
        if i > 0:
            while qd.volatile_load(flag[i - 1]) == 0:
                pass
            out[i] = data[i - 1]


@qd.kernel
def metal_fenced_spin(data: vec, flag: ivec, out: vec):
    """The reader of that idiom: a plain load of the flag, a fence in the loop."""
    for i in range(out.shape[0]):
        while flag[0] == 0:  # hazard@msl: metal-spin-wait
            qd.simt.grid.mem_fence()
        out[i] = data[0]


@qd.kernel
def block_fence_publication(data: vec, flag: ivec):
    for i in range(data.shape[0]):
        data[i] = 1.0
        qd.simt.block.mem_fence()  # hazard: block-fence
        qd.atomic_exchange(flag[i], 1)


@qd.kernel
def sync_under_unaligned_tiles(a: vec, n: ivec, tiles: qd.i32):
    qd.loop_config(block_dim=32)
    for i in range(tiles * 32 + 1):                 # not a multiple of the block: a block straddles two tiles
        if n[i // 32] > 0:
            block.sync()  # hazard: divergent-block
        a[i] = 0.0


@qd.kernel
def sync_under_half_tiles(a: vec, n: ivec, tiles: qd.i32):
    qd.loop_config(block_dim=32)
    for i in range(tiles * 32):
        if n[i // 16] > 0:                          # 16 does not cover a block
            block.sync()  # hazard: divergent-block
        a[i] = 0.0


# ----------------------------------------------------------------------------- clean

@qd.kernel
def clean_block_tiles(a: vec, n: ivec, tiles: qd.i32, rows: qd.i32):
    qd.loop_config(block_dim=32)
    for i in range(rows * tiles * 32):              # one block per tile, as Genesis' tiled kernels
        tid = i % 32
        t = (i // 32) % tiles
        r = i // (32 * tiles)
        sh = block.SharedArray((32,), qd.f32)
        k = 0
        while k < n[t] + r:                         # the same trip count in the whole block
            sh[tid] = a[i] + k
            block.sync()
            a[i] = sh[31 - tid]
            block.sync()
            k += 1


@qd.kernel
def clean_uniform_branches(a: vec, n: qd.i32):
    qd.loop_config(block_dim=64)
    for i in range(a.shape[0]):
        tid = block.thread_idx()
        if n > 3:                                   # a parameter: uniform
            block.sync()
        any_big = block.sync_any_nonzero(a[i] > 10.0)
        if any_big:                                 # a block-wide vote: uniform
            a[i] = block.reduce_add(a[i], 64, qd.f32)
        if tid // subgroup.group_size() == 0:       # the same in every lane of a subgroup
            a[i] = subgroup.reduce_add(a[i])


@qd.kernel
def clean_volatile_spin(flag: ivec, out: ivec):
    for i in range(out.shape[0]):
        while qd.volatile_load(flag[0]) == 0:
            pass
        out[i] = 1


@qd.kernel
def silenced_spin(flag: ivec, out: ivec):
    for i in range(out.shape[0]):
        while flag[0] == 0:  # qd: ignore-hazard (the flag is written by the host between launches)
            pass
        out[i] = 1

"""A ring exchange between the PEs (GPUs) of an NVSHMEM job, NVSHMEM's memory-ordering rules
(nvshmem_fence vs nvshmem_quiet) in their correct form.

Every PE fills a block with values that name it, puts the block into the next PE's
`recv` with one contiguous put, `fence()`s, and puts a flag there: the fence makes the
data arrive before the flag. Each PE then waits until its own flag is set, so its left
neighbour's block is in `recv`, and checks it. `quiet()` completes the PE's own puts
before the kernel ends.

The host (host.cpp beside this file) allocates `send`, `recv` and `flag` on the symmetric
heap and launches the kernel on every PE; CUDA only (NVSHMEM). Not in examples/*.py,
so `make emit` (every example to all four targets) does not pick it up.
"""
import transpiler as qd

Sym = qd.shmem.symmetric


@qd.func
def value_of(pe, i):
    return qd.f32(pe * 1000 + i) + 0.5


@qd.kernel
def ring(send: Sym(dtype=qd.f32, ndim=1), recv: Sym(dtype=qd.f32, ndim=1), flag: Sym(dtype=qd.i32, ndim=1),
         errors: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    me = qd.shmem.my_pe()
    npes = qd.shmem.n_pes()
    n = send.shape[0]
    # 1. Every thread writes part of this PE's block (a launch of its own).
    for i in range(n):
        send[i] = value_of(me, i)
    # 2. One thread per PE: the block, then the flag, to the right neighbour.
    right = (me + 1) % npes
    qd.shmem.put(recv[0], send[0], n, right)
    qd.shmem.fence()  # the block is delivered to `right` before the flag
    qd.shmem.p(flag[0], 1, right)
    qd.shmem.quiet()  # both are complete: `send` may change, the host sees them done
    qd.shmem.wait_until(flag[0], qd.shmem.CMP_EQ, 1)  # the left neighbour's block has arrived
    # 3. Every thread checks part of what arrived from the left neighbour.
    for i in range(n):
        left = (me + npes - 1) % npes
        if recv[i] != value_of(left, i):
            errors[0] += 1

"""qd.shmem: a put to the next PE, a fence, then the signal; NVSHMEM's typed calls on CUDA
(with -rdc and the manifest's host notes), a located error on every other target."""
import transpiler as qd


@qd.kernel
def nvshmem_put(send: qd.shmem.symmetric(dtype=qd.f32, ndim=1), recv: qd.shmem.symmetric(dtype=qd.f32, ndim=1),
                flag: qd.shmem.symmetric(dtype=qd.i32, ndim=1)):
    peer = (qd.shmem.my_pe() + 1) % qd.shmem.n_pes()
    qd.shmem.put(recv[0], send[0], send.shape[0], peer)
    qd.shmem.fence()
    qd.shmem.p(flag[0], 1, peer)
    qd.shmem.wait_until(flag[0], qd.shmem.CMP_EQ, 1)
    qd.shmem.quiet()

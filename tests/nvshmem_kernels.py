"""qd.shmem kernels for tests/test_nvshmem.py: the seed's ordering mistakes (a line that
should warn carries "hazard: KIND"), their correct forms, and wrong uses the frontend or
a target rejects (a line that should fail carries "error: TEXT")."""
import transpiler as qd

Sym = qd.shmem.symmetric
fvec = qd.types.ndarray(dtype=qd.f32, ndim=1)


# ----------------------------------------------------------------------------- hazards

@qd.kernel
def unfenced_signal(data: Sym(dtype=qd.f32, ndim=1), src: fvec, flag: Sym(dtype=qd.i32, ndim=1)):
    peer = (qd.shmem.my_pe() + 1) % qd.shmem.n_pes()
    qd.shmem.put(data[0], src[0], src.shape[0], peer)
    qd.shmem.p(flag[0], 1, peer)  # hazard: shmem-unordered-signal
    qd.shmem.quiet()
    qd.shmem.wait_until(flag[0], qd.shmem.CMP_EQ, 1)


@qd.kernel
def unfenced_atomic_signal(data: Sym(dtype=qd.f32, ndim=1), src: fvec, count: Sym(dtype=qd.i32, ndim=1)):
    peer = (qd.shmem.my_pe() + 1) % qd.shmem.n_pes()
    qd.shmem.put_nbi(data[0], src[0], src.shape[0], peer)
    qd.shmem.atomic_add(count[0], 1, peer)  # hazard: shmem-unordered-signal
    qd.shmem.quiet()
    qd.shmem.wait_until(count[0], qd.shmem.CMP_GE, 1)


@qd.kernel
def signal_to_another_pe(data: Sym(dtype=qd.f32, ndim=1), src: fvec, flag: Sym(dtype=qd.i32, ndim=1)):
    me = qd.shmem.my_pe()
    right = (me + 1) % qd.shmem.n_pes()
    left = (me + qd.shmem.n_pes() - 1) % qd.shmem.n_pes()
    qd.shmem.put(data[0], src[0], src.shape[0], right)
    qd.shmem.fence()  # orders delivery to `right` only
    qd.shmem.p(flag[0], 1, left)  # hazard: shmem-signal-other-pe
    qd.shmem.quiet()
    qd.shmem.wait_until(flag[0], qd.shmem.CMP_EQ, 1)


@qd.kernel
def no_quiet_at_end(data: Sym(dtype=qd.f32, ndim=1), src: fvec, flag: Sym(dtype=qd.i32, ndim=1)):
    peer = (qd.shmem.my_pe() + 1) % qd.shmem.n_pes()
    qd.shmem.put(data[0], src[0], src.shape[0], peer)  # hazard: shmem-no-quiet
    qd.shmem.fence()
    qd.shmem.p(flag[0], 1, peer)
    qd.shmem.wait_until(flag[0], qd.shmem.CMP_EQ, 1)


@qd.kernel
def nbi_get_read_early(remote: Sym(dtype=qd.f32, ndim=1), buf: fvec, out: fvec):
    peer = (qd.shmem.my_pe() + 1) % qd.shmem.n_pes()
    qd.shmem.get_nbi(buf[0], remote[0], buf.shape[0], peer)
    out[0] = buf[0] * 2.0  # hazard: shmem-nbi-get
    qd.shmem.quiet()


@qd.kernel
def nbi_put_source_reused(remote: Sym(dtype=qd.f32, ndim=1), src: fvec):
    peer = (qd.shmem.my_pe() + 1) % qd.shmem.n_pes()
    qd.shmem.put_nbi(remote[0], src[0], src.shape[0], peer)
    src[0] = 0.0  # hazard: shmem-nbi-put
    qd.shmem.quiet()


@qd.kernel
def barrier_in_every_thread(a: Sym(dtype=qd.f32, ndim=1)):
    for i in range(a.shape[0]):
        a[i] = 1.0
        qd.shmem.barrier_all()  # hazard: shmem-barrier-threads


# ----------------------------------------------------------------------------- clean

@qd.kernel
def clean_signal_with_quiet(data: Sym(dtype=qd.f32, ndim=1), src: fvec, flag: Sym(dtype=qd.i32, ndim=1)):
    me = qd.shmem.my_pe()
    right = (me + 1) % qd.shmem.n_pes()
    left = (me + qd.shmem.n_pes() - 1) % qd.shmem.n_pes()
    qd.shmem.put(data[0], src[0], src.shape[0], right)
    qd.shmem.quiet()  # complete everywhere: any PE may be signalled now
    qd.shmem.p(flag[0], 1, left)
    qd.shmem.quiet()
    qd.shmem.wait_until(flag[0], qd.shmem.CMP_EQ, 1)


@qd.kernel
def clean_per_element_signals(data: Sym(dtype=qd.f32, ndim=1), flag: Sym(dtype=qd.i32, ndim=1)):
    for i in range(data.shape[0]):
        peer = (qd.shmem.my_pe() + 1) % qd.shmem.n_pes()
        qd.shmem.p(data[i], qd.f32(i), peer)
        qd.shmem.fence()
        qd.shmem.atomic_set(flag[i], 1, peer)
        qd.shmem.quiet()
        qd.shmem.wait_until(flag[i], qd.shmem.CMP_EQ, 1)


@qd.kernel
def clean_barriers(a: Sym(dtype=qd.f32, ndim=1), b: fvec):
    for i in range(a.shape[0]):
        qd.shmem.p(a[i], b[i], (qd.shmem.my_pe() + 1) % qd.shmem.n_pes())
        qd.shmem.quiet()
        if i == 0:
            qd.shmem.barrier_all()  # one thread per PE
    qd.shmem.barrier_all()  # a serial task: one thread
    for i in range(a.shape[0]):
        b[i] = a[i]


@qd.kernel
def clean_nbi(remote: Sym(dtype=qd.f32, ndim=1), buf: fvec, src: fvec, out: fvec):
    peer = (qd.shmem.my_pe() + 1) % qd.shmem.n_pes()
    qd.shmem.get_nbi(buf[0], remote[0], buf.shape[0], peer)
    qd.shmem.put_nbi(remote[0], src[0], src.shape[0], peer)
    qd.shmem.quiet()
    out[0] = buf[0] * 2.0
    src[0] = 0.0


@qd.kernel
def silenced_signal(data: Sym(dtype=qd.f32, ndim=1), src: fvec, flag: Sym(dtype=qd.i32, ndim=1)):
    peer = (qd.shmem.my_pe() + 1) % qd.shmem.n_pes()
    qd.shmem.put(data[0], src[0], src.shape[0], peer)
    qd.shmem.p(flag[0], 1, peer)  # qd: ignore-hazard (the consumer reads data only after a later barrier)
    qd.shmem.quiet()
    qd.shmem.wait_until(flag[0], qd.shmem.CMP_EQ, 1)


# ----------------------------------------------------------------------------- errors

@qd.kernel
def remote_not_symmetric(a: fvec, b: fvec):
    qd.shmem.put(a[0], b[0], b.shape[0], 1)  # error: the destination of qd.shmem.put, `a`, must be a symmetric ndarray


@qd.kernel
def float_fetch_add(a: Sym(dtype=qd.f32, ndim=1), out: fvec):
    out[0] = qd.shmem.atomic_fetch_add(a[0], 1.0, 0)  # error: qd.shmem.atomic_fetch_add on f32 is not supported on the cuda target


@qd.kernel
def float_wait(a: Sym(dtype=qd.f32, ndim=1)):
    qd.shmem.wait_until(a[0], qd.shmem.CMP_GT, 0.5)  # error: qd.shmem.wait_until on f32 is not supported on the cuda target


@qd.kernel
def bad_comparison(a: Sym(dtype=qd.i32, ndim=1)):
    qd.shmem.wait_until(a[0], 0, 1)  # error: `0` is not a comparison


@qd.kernel
def mixed_dtypes(a: Sym(dtype=qd.f32, ndim=1), b: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    qd.shmem.put(a[0], b[0], 4, 1)  # error: qd.shmem.put copies between arrays of one dtype


@qd.kernel
def shared_source(a: Sym(dtype=qd.f32, ndim=1)):
    for i in range(a.shape[0]):
        s = qd.simt.block.SharedArray((32,), qd.f32)
        qd.shmem.put(a[0], s[0], 32, 1)  # error: the source of qd.shmem.put is a shared array


# ----------------------------------------------------------------------------- lowering details

@qd.kernel
def fetches_as_statements(c: qd.types.ndarray(dtype=qd.i32, ndim=1, symmetric=True), out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for t in range(out.shape[0]):
        peer = (qd.shmem.my_pe() + t) % qd.shmem.n_pes()
        qd.shmem.atomic_fetch_add(c[0], 1, peer)  # the old value is unused: the call stays
        for j in range(qd.shmem.g(c[1], peer)):  # a remote bound is read once, before the loop
            out[j] = qd.shmem.atomic_fetch(c[2], peer)
        while qd.shmem.atomic_fetch(c[3], peer) == 0:  # re-read every iteration
            pass

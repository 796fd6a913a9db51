"""``qd.shmem``: multi-GPU communication through NVSHMEM, on the CUDA target.

A kernel runs on every PE (processing element: one process, one GPU) of an NVSHMEM job.
Symmetric ndarrays live on NVSHMEM's symmetric heap, so the same parameter names an object
on every PE and a thread can read or write another PE's copy:

    Sym = qd.shmem.symmetric(dtype=qd.f32, ndim=1)   # = qd.types.ndarray(..., symmetric=True)

    @qd.kernel
    def ring(send: Sym, recv: Sym, flag: qd.shmem.symmetric(dtype=qd.i32, ndim=1)):
        peer = (qd.shmem.my_pe() + 1) % qd.shmem.n_pes()
        qd.shmem.put(recv[0], send[0], send.shape[0], peer)  # n elements from send[0..] to recv[0..] on peer
        qd.shmem.fence()                                     # ... delivered before what follows to peer
        qd.shmem.p(flag[0], 1, peer)                         # the signal
        qd.shmem.wait_until(flag[0], qd.shmem.CMP_EQ, 1)     # our left neighbour's data has arrived
        qd.shmem.quiet()                                     # our own puts are complete

An element reference such as ``recv[0]`` is the address the routine starts at (as in
``qd.atomic_add(a[i], v)``). The remote side of every routine (put/p destination, get/g
source, atomic target, wait_until variable) must be a symmetric ndarray; the local side
of put/get may be any ndarray. Each routine becomes the NVSHMEM device call typed for the
element (``nvshmem_float_put``, ``nvshmem_int_atomic_fetch_add``, ...); the memory-ordering
rules are NVSHMEM's (its memory-ordering section: fence orders delivery to one PE, quiet completes),
and the hazard checker warns where a signal can overtake its data.

HIP, GLSL and Metal have no NVSHMEM: a kernel using ``qd.shmem`` is a located error there.
"""
from __future__ import annotations

from enum import IntEnum

from ..ir import nodes as ir
from .kernel import NdarrayAnnotation, builtin

from typing import Any


class Cmp(IntEnum):
    """The comparison of ``wait_until``; the values are NVSHMEM's NVSHMEM_CMP_*."""

    EQ = 0
    NE = 1
    GT = 2
    LE = 3
    LT = 4
    GE = 5

    @property
    def ir_name(self) -> str:
        return ir.SHMEM_CMPS[self.value]


CMP_EQ, CMP_NE, CMP_GT, CMP_LE, CMP_LT, CMP_GE = Cmp.EQ, Cmp.NE, Cmp.GT, Cmp.LE, Cmp.LT, Cmp.GE


def symmetric(dtype: Any = None, ndim: int | None = None) -> NdarrayAnnotation:
    """The annotation of a symmetric ndarray parameter: allocated by the host with
    ``nvshmem_malloc`` (the same size on every PE), addressable from every PE."""
    return NdarrayAnnotation(dtype, ndim, True)


def _marker(name: str, doc: str):
    stub = builtin(f"shmem.{name}")(lambda *args, **kwargs: None)
    stub.__name__ = name
    stub.__doc__ = doc
    return stub


my_pe = _marker("my_pe", "my_pe(): this PE's index, 0 .. n_pes() - 1 (i32).")
n_pes = _marker("n_pes", "n_pes(): how many PEs the job has (i32).")
put = _marker("put", "put(dest[i], source[j], n, pe): copy n elements to PE `pe`; returns when `source` "
                     "may be reused (not when they have arrived).")
put_nbi = _marker("put_nbi", "put_nbi(dest[i], source[j], n, pe): start the copy; `source` may be reused "
                             "only after quiet().")
get = _marker("get", "get(dest[i], source[j], n, pe): copy n elements from PE `pe`; returns with them here.")
get_nbi = _marker("get_nbi", "get_nbi(dest[i], source[j], n, pe): start the copy; `dest` holds them only "
                             "after quiet().")
p = _marker("p", "p(dest[i], value, pe): store one element on PE `pe`.")
g = _marker("g", "g(source[i], pe): one element of PE `pe` (returns it).")
atomic_fetch_add = _marker("atomic_fetch_add", "atomic_fetch_add(x[i], v, pe): add v on PE `pe`; the old value.")
atomic_add = _marker("atomic_add", "atomic_add(x[i], v, pe): add v on PE `pe`.")
atomic_compare_swap = _marker("atomic_compare_swap", "atomic_compare_swap(x[i], cond, v, pe): store v on PE `pe` "
                                                     "if the element equals cond; the old value.")
atomic_swap = _marker("atomic_swap", "atomic_swap(x[i], v, pe): store v on PE `pe`; the old value.")
atomic_fetch = _marker("atomic_fetch", "atomic_fetch(x[i], pe): atomically read the element of PE `pe`.")
atomic_set = _marker("atomic_set", "atomic_set(x[i], v, pe): atomically store v on PE `pe`.")
fence = _marker("fence", "fence(): this thread's operations to each PE are delivered in the order issued "
                         "(ordering, not completion).")
quiet = _marker("quiet", "quiet(): every operation this thread issued is complete and visible.")
barrier_all = _marker("barrier_all", "barrier_all(): complete outstanding operations and wait for every PE "
                                     "(one thread per PE; the kernel must be launched collectively).")
wait_until = _marker("wait_until", "wait_until(ivar[i], cmp, value): wait until this PE's ivar[i] `cmp` value "
                                   "(cmp: qd.shmem.CMP_EQ, CMP_NE, CMP_GT, CMP_GE, CMP_LT, CMP_LE).")

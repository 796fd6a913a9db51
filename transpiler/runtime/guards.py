"""Red zones around the buffers the executors allocate, so that a kernel writing past the end
of a field, an ndarray or its own scratch never corrupts memory it does not own.

A guarded buffer is one host allocation: ``FRONT`` bytes of pattern, the array, then a back
zone of pattern (``back_bytes``: one row of the leading dimension, 64 B to 4 KiB, so
``x[n, j]`` of an ``(n, m)`` array lands in it). A one-past-the-end read reads the pattern,
owned memory; a write changes it. After each launch the zones of every guarded buffer the
kernel was given are compared with the pattern (a ``memcmp`` each: about 0.3 us a buffer);
a changed zone is restored and reported as ``OverrunError`` naming the kernel and the buffer.
The buffer's own elements are never touched by the check.

What this covers and what it cannot: see docs/runtime.md ("Writes past the end").
"""
from __future__ import annotations

import ctypes
import weakref

import numpy as np

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from numpy.typing import DTypeLike

PATTERN = 0xA5  # as f32 -2.9e-16, as i32 -1515870811: a value a reader notices, never 0 or NaN
FRONT = 64      # keeps the array 16-byte aligned, as malloc's own memory is
MAX_BACK = 4096
# A NumPy array the CPU executor would pass in place is copied into a guarded buffer (and
# back) when it is at most this big: 64 KiB copies in ~3 us each way here, less than the
# launch; a bigger one is passed in place, unguarded (docs/runtime.md).
COPY_LIMIT = 64 * 1024


class KernelError(RuntimeError):
    """A kernel failed on an executor: a trap, a crash, a bad launch, a write past the end of
    a buffer (the CPU emulator's faults are its subclasses)."""


class OverrunError(KernelError):
    """A kernel wrote past the end (or before the start) of a buffer it was given: caught in
    the buffer's red zone, which is restored; the buffer's elements are as the kernel left them."""


def back_bytes(shape: tuple[int, ...], itemsize: int) -> int:
    """The back zone: one row of the leading dimension (a whole index past the end), at least
    64 bytes, at most MAX_BACK, a multiple of 64."""
    row = int(np.prod(shape[1:], dtype=np.int64)) * itemsize if len(shape) > 1 else itemsize
    return min(MAX_BACK, max(64, -(-row // 64) * 64))


_PATTERN_BYTES = np.full(MAX_BACK, PATTERN, np.uint8)  # what each zone is compared with
_PATTERN_ADDRESS = _PATTERN_BYTES.ctypes.data


def _find_memcmp():
    try:
        fn = ctypes.CDLL(None).memcmp
    except (OSError, AttributeError):  # (no C library by that name: NumPy compares instead)
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


_memcmp = _find_memcmp()


class Guard:
    """The zones of one guarded buffer: ``zones`` are (byte view, address) pairs, the front
    zone first where there is one."""

    __slots__ = ("zones", "front", "nbytes", "__weakref__")

    def __init__(self, front: np.ndarray | None, back: np.ndarray, nbytes: int):
        self.front = front is not None
        self.nbytes = nbytes
        self.zones = tuple((z, z.ctypes.data) for z in ((front, back) if front is not None else (back,)) if z.size)
        for z, _ in self.zones:
            z[...] = PATTERN

    def intact(self) -> bool:
        if _memcmp is not None:
            return all(_memcmp(address, _PATTERN_ADDRESS, z.size) == 0 for z, address in self.zones)
        return all(np.array_equal(z, _PATTERN_BYTES[:z.size]) for z, _ in self.zones)

    def damage(self) -> str:
        """Which bytes outside the buffer changed, in words, and the zones restored."""
        parts = []
        for k, (z, _) in enumerate(self.zones):
            changed = np.flatnonzero(z != PATTERN)
            if not changed.size:
                continue
            if k == 0 and self.front:
                parts.append(f"bytes {z.size - changed[0]} to {z.size - changed[-1]} before its first element")
            else:
                parts.append(f"bytes {changed[0]} to {changed[-1]} after its last element")
            z[...] = PATTERN
        return " and ".join(parts)


# The guard of each guarded array, by the array's id (the runtime passes the very array
# objects it allocated: a qd.ndarray's .data, a field's storage, a scratch buffer), removed
# when the array goes.
_guards: dict[int, Guard] = {}


def guard_of(arr: object) -> Guard | None:
    return _guards.get(id(arr))


def register(arr: np.ndarray, front: np.ndarray | None, back: np.ndarray) -> np.ndarray:
    """Guard ``arr`` with the zones ``front`` (or none) and ``back``: byte views of memory
    around it that the same allocation owns. Returns ``arr``."""
    key = id(arr)
    _guards[key] = Guard(front, back, arr.nbytes)
    weakref.finalize(arr, _guards.pop, key, None)
    return arr


def allocate(shape: tuple[int, ...], dtype: DTypeLike, zeroed: bool = True) -> np.ndarray:
    """A guarded host array of ``shape`` and ``dtype`` (zeros unless ``zeroed`` is False)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    back = back_bytes(shape, dtype.itemsize)
    whole = np.empty(FRONT + nbytes + back, np.uint8)
    body = whole[FRONT:FRONT + nbytes]
    if zeroed:
        body[...] = 0
    return register(body.view(dtype).reshape(shape), whole[:FRONT], whole[FRONT + nbytes:])


def shield(values: dict, write_backs: list, names: Iterable[str]) -> None:
    """For an executor whose kernels use host memory in place (the CPU's): each NumPy array
    in ``values`` under ``names`` that is not guarded and at most COPY_LIMIT bytes is replaced
    by a guarded copy, copied back after the launch (one copy for an array passed twice)."""
    copies: dict[tuple, np.ndarray] = {}
    for name in names:
        arr = values.get(name)
        if type(arr) is not np.ndarray or arr.nbytes > COPY_LIMIT or id(arr) in _guards or not arr.nbytes:
            continue
        key = (arr.__array_interface__["data"][0], arr.nbytes, arr.dtype.str, arr.shape)
        copy = copies.get(key)
        if copy is None:
            copy = copies[key] = allocate(arr.shape, arr.dtype, zeroed=False)
            copy[...] = arr
            if arr.flags.writeable:
                write_backs.append(lambda out=arr, src=copy: np.copyto(out, src))
        values[name] = copy


def guarded(values: dict) -> list[tuple[str, Guard]]:
    """(name, guard) of each guarded array among the launch's values."""
    out = []
    for name, v in values.items():
        g = _guards.get(id(v))
        if g is not None and isinstance(name, str):
            out.append((name, g))
    return out


def check(kernel: str, guards: list[tuple[str, Guard]], describe: Callable[[], dict[str, str]] | None = None) -> None:
    """After a launch: raise OverrunError if a kernel wrote into a zone (restored first);
    ``describe()`` names the buffers, by parameter name, for the message."""
    bad = [(name, g) for name, g in guards if not g.intact()]
    if not bad:
        return
    names = describe() if describe is not None else {}
    raise OverrunError(overrun_message(kernel, [(names.get(n, f"`{n}`"), g.damage()) for n, g in bad]))


def overrun_message(kernel: str, hits: list[tuple[str, str]]) -> str:
    what = " and of ".join(f"{buffer} ({where})" for buffer, where in hits)
    return (f"{kernel}: wrote past the end of {what}: an index out of range (qd.init(debug=True) names its "
            "Python line). Nothing outside the buffer was harmed: its red zone caught the write and is restored, "
            "and its elements are as the kernel left them")

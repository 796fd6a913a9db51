"""Red zones around the buffers the executors allocate, so that a kernel writing past the end
of a field, an ndarray or its own scratch never corrupts memory it does not own.

A guarded buffer is one host allocation: ``FRONT`` bytes of pattern, the array, then a back
zone of pattern (``back_bytes``: one row of the leading dimension, 64 B to 4 KiB, so
``x[n, j]`` of an ``(n, m)`` array lands in it). A one-past-the-end read reads the pattern,
owned memory; a write changes it. After each launch the zones of every guarded buffer the
kernel was given are compared with the pattern (joined, in one pass);
a changed zone is restored and reported as ``OverrunError`` naming the kernel and the buffer.
The buffer's own elements are never touched by the check.

What this covers and what it cannot: see docs/runtime.md ("Writes past the end").
"""
from __future__ import annotations

import math
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
    row = math.prod(shape[1:]) * itemsize
    return min(MAX_BACK, max(64, -(-row // 64) * 64))


class Guard:
    """The zones of one guarded buffer, as byte views (``zones``, the front zone first where
    there is one) and as memoryviews (``views``: what ``check`` joins)."""

    __slots__ = ("zones", "views", "front", "nbytes", "zone_bytes")

    def __init__(self, front: np.ndarray | None, back: np.ndarray, nbytes: int):
        self.front = front is not None
        self.nbytes = nbytes
        self.zones = (front, back) if front is not None else (back,)
        for z in self.zones:
            z.fill(PATTERN)
        self.views = tuple(map(memoryview, self.zones))
        self.zone_bytes = sum(z.size for z in self.zones)

    def intact(self) -> bool:
        data = b"".join(self.views)
        return data == _pattern(len(data))

    def damage(self) -> str:
        """Which bytes outside the buffer changed, in words, and the zones restored."""
        parts = []
        for k, z in enumerate(self.zones):
            changed = np.flatnonzero(z != PATTERN)
            if not changed.size:
                continue
            if k == 0 and self.front:
                parts.append(f"bytes {z.size - changed[0]} to {z.size - changed[-1]} before its first element")
            else:
                parts.append(f"bytes {changed[0]} to {changed[-1]} after its last element")
            z[...] = PATTERN
        return " and ".join(parts)


_patterns: dict[int, bytes] = {}


def _pattern(n: int) -> bytes:
    hit = _patterns.get(n)
    if hit is None:
        hit = _patterns[n] = bytes([PATTERN]) * n
    return hit


# The guard of each guarded array, by the array's id (the runtime passes the very array
# objects it allocated: a qd.ndarray's .data, a field's storage, a scratch buffer), removed
# when the array goes.
_guards: dict[int, Guard] = {}


def guard_of(arr: object) -> Guard | None:
    return _guards.get(id(arr))


_refs: dict[int, weakref.ref] = {}  # (a weak reference whose callback removes the entry)


def register(arr: np.ndarray, front: np.ndarray | None, back: np.ndarray) -> np.ndarray:
    """Guard ``arr`` with the zones ``front`` (or none) and ``back``: byte views of memory
    around it that the same allocation owns. Returns ``arr``."""
    key = id(arr)
    _guards[key] = Guard(front, back, arr.nbytes)
    _refs[key] = weakref.ref(arr, lambda _, key=key: (_guards.pop(key, None), _refs.pop(key, None)))
    return arr


def allocate(shape: tuple[int, ...], dtype: DTypeLike, zeroed: bool = True) -> np.ndarray:
    """A guarded host array of ``shape`` and ``dtype`` (zeros unless ``zeroed`` is False)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    back = back_bytes(shape, dtype.itemsize)
    # np.zeros, not np.empty and a fill: a big one is calloc's fresh pages, which take no
    # memory until written (a sparse field's capacity here), and only the zones' are touched.
    whole = (np.zeros if zeroed else np.empty)(FRONT + nbytes + back, np.uint8)
    body = whole[FRONT:FRONT + nbytes]
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
            if arr.flags.writeable:  # first: the binding's own write backs copy on from `arr`
                write_backs.insert(0, lambda out=arr, src=copy: np.copyto(out, src))
        values[name] = copy


class Checklist:
    """The zones of a launch's guarded buffers, checked in one comparison: every zone joined
    against as many pattern bytes (a ctypes memcmp per zone cost 0.4-1.4 us each here, more
    than a small launch's whole check). Kept for a replayed launch, which uses the same."""

    __slots__ = ("guards", "views", "expected")

    def __init__(self, guards: list[tuple[str, Guard]]):
        self.guards = guards
        self.views = []
        total = 0
        for _, g in guards:
            self.views += g.views
            total += g.zone_bytes
        self.expected = _pattern(total)

    def verify(self, kernel: str, describe: Callable[[], dict[str, str]] | None = None) -> None:
        """After a launch: raise OverrunError if the kernel wrote into a zone (restored
        first); ``describe()`` names the buffers, by parameter name, for the message."""
        if b"".join(self.views) == self.expected:
            return
        names = describe() if describe is not None else {}
        bad = [(names.get(n, f"`{n}`"), g.damage()) for n, g in self.guards if not g.intact()]
        raise OverrunError(overrun_message(kernel, bad))


def checklist(values: dict) -> Checklist | None:
    """The checklist of the guarded arrays among a launch's values (by parameter name),
    None when there are none."""
    found = []
    for name, v in values.items():
        g = _guards.get(id(v))
        if g is None and getattr(v, "base", None) is not None:  # a range of one (a qd.BufferView's)
            g = _guards.get(id(v.base))
        if g is not None and type(name) is str:
            found.append((name, g))
    return Checklist(found) if found else None


def overrun_message(kernel: str, hits: list[tuple[str, str]]) -> str:
    what = " and of ".join(f"{buffer} ({where})" for buffer, where in hits)
    return (f"{kernel}: wrote past the end of {what}: an index out of range (qd.init(debug=True) names its "
            "Python line). Nothing outside the buffer was harmed: its red zone caught the write and is restored, "
            "and its elements are as the kernel left them")

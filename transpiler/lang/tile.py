"""Register tiles, as Quadrants 1.3.3 spells them: ``qd.simt.Tile16x16`` and ``qd.simt.Tile32x32``.

A tile is an NxN matrix spread over the first N lanes of a subgroup: lane ``i`` holds row
``i`` in N scalar registers (the struct member ``r``, a vector of N). Cross-lane work is done
with subgroup shuffles where the subgroup holds the tile. Lanes past N, where the subgroup is
wider (wave64), take part as rows past the tile: a load or store covers them only when its
row range reaches them, exactly as in Quadrants.

On a subgroup narrower than the tile (lavapipe's 8 lanes, Intel's 8 or 16), chosen at
translation: a tile is N consecutive threads of the block (thread t holds row t mod N), and
what a shuffle did goes through shared memory between block barriers: Cholesky and the
solve publish one row per step into two alternating slots (one barrier per step), a rank-1
update publishes b once. The block must be a whole number of tiles and the methods must be
reached by every thread of the block (the frontend and the hazard analysis check both).

The algorithms are written once, here, in the kernel language; the frontend inlines them
like any ``@qd.func`` (code from this package is attributed to the user's line). The syntax
around them (``t[:] = arr[r0:r1, c0:c1]``, ``arr[...] = t``, ``t -= qd.outer(a, b)``,
``L.solve_triangular_(B)``) is the frontend's.
"""
from __future__ import annotations

import sys
from typing import Any

from . import qd
from .kernel import builtin, comptime
from .matrix import MatrixType, StructType

subgroup = qd.simt.subgroup
block = qd.simt.block
SIZES = (16, 32)


@comptime
def wide(n, size):
    """A tile of ``n`` rows on subgroups of ``size`` lanes is carried out through shared memory."""
    return n > size


@comptime
def _note(n, size, how):
    return f"Tile{n}x{n} on {size}-lane subgroups: {how}"


@qd.func
def _row(n: qd.template()):
    """This thread's row of the tile: its lane, or its place among the block's n threads of the tile."""
    if qd.static(wide(n, subgroup.group_size())):
        return block.thread_idx() & (n - 1)
    else:
        return subgroup.invocation_id()


# ----------------------------------------------------------------------------- methods

@qd.func
def eye_(self):
    """Make the tile the identity: lane i's register i is 1, the others 0."""
    lane = _row(self.r.n)
    for j in qd.static(range(self.r.n)):
        self.r[j] = 1.0 if lane == j else 0.0


@qd.func
def cholesky_(self, eps):
    """In place: the lower triangle becomes L with L @ L.T = the tile (the strict upper
    triangle is left as it was). Each pivot is sqrt(max(d, eps)); ``eps`` is read only by
    the lane that owns the pivot, so a per-lane value floors pivot k with lane k's own.

    Left-looking, column by column: lane k finishes its diagonal entry, every lane receives
    it, and each lane below k finishes its entry of column k from row k's finished entries
    (one shuffle each). The k loop and the inner loop are unrolled at translation time so
    every register index is a constant (a run-time index into the row would select among
    all N registers)."""
    if qd.static(wide(self.r.n, subgroup.group_size())):
        _cholesky_wide(self, eps)
    else:
        _cholesky_lanes(self, eps)


@qd.func
def _cholesky_lanes(self: qd.template(), eps):
    n = qd.static(self.r.n)
    dtype = qd.static(qd.typeof(self.r[0]))
    lane = subgroup.invocation_id()
    done = qd.cast(0.0, dtype)  # the sum of squares of this lane's finished entries
    for k in qd.static(range(n)):
        if lane == k:
            self.r[k] = qd.sqrt(qd.max(self.r[k] - done, eps))
        pivot = subgroup.shuffle(self.r[k], k)
        # Two partial sums: half as long a chain of dependent FMAs.
        even = qd.cast(0.0, dtype)
        odd = qd.cast(0.0, dtype)
        for j in qd.static(range(k)):
            if qd.static(j % 2 == 0):
                even += self.r[j] * subgroup.shuffle(self.r[j], k)
            else:
                odd += self.r[j] * subgroup.shuffle(self.r[j], k)
        if lane > k:
            self.r[k] = (self.r[k] - (even + odd)) / pivot
            done += self.r[k] * self.r[k]


@qd.func
def _cholesky_wide(self: qd.template(), eps):
    """``cholesky_`` with row k published through shared memory instead of shuffled: at step
    k its owner finishes the pivot and writes entries 0..k (the earlier ones final since
    their steps) into slot k % 2; one barrier; every row reads them. Two slots alternate, so
    a slot is rewritten only after a barrier that every reader of it has passed."""
    n = qd.static(self.r.n)
    dtype = qd.static(qd.typeof(self.r[0]))
    subgroup._note(_note(n, subgroup.group_size(), "Cholesky through shared memory, one block barrier per column"))
    slots = block.SharedArray((2 * block._dim(),), dtype)
    tid = block.thread_idx()
    row = tid & (n - 1)
    base = tid - row
    done = qd.cast(0.0, dtype)
    for k in qd.static(range(n)):
        at = base + (k % 2) * block._dim()
        if row == k:
            self.r[k] = qd.sqrt(qd.max(self.r[k] - done, eps))
            for j in qd.static(range(k + 1)):
                slots[at + j] = self.r[j]
        block.sync()
        pivot = slots[at + k]
        even = qd.cast(0.0, dtype)
        odd = qd.cast(0.0, dtype)
        for j in qd.static(range(k)):
            if qd.static(j % 2 == 0):
                even += self.r[j] * slots[at + j]
            else:
                odd += self.r[j] * slots[at + j]
        if row > k:
            self.r[k] = (self.r[k] - (even + odd)) / pivot
            done += self.r[k] * self.r[k]


@qd.func
def _trsm(self, L):
    """``self`` becomes X with X @ L.T = self, L lower triangular (the solve of
    ``L.solve_triangular_(self)``). Lane i solves its own row by forward substitution:
    x[c] = (b[c] - sum_{j<c} x[j] L[c, j]) / L[c, c], receiving row c of L from lane c."""
    if qd.static(wide(self.r.n, subgroup.group_size())):
        _trsm_wide(self, L)
    else:
        _trsm_lanes(self, L)


@qd.func
def _trsm_lanes(self: qd.template(), L):
    n = qd.static(self.r.n)
    dtype = qd.static(qd.typeof(self.r[0]))
    for c in qd.static(range(n)):
        dot = qd.cast(0.0, dtype)
        for j in qd.static(range(c)):
            dot += self.r[j] * subgroup.shuffle(L.r[j], c)
        self.r[c] = (self.r[c] - dot) / subgroup.shuffle(L.r[c], c)


@qd.func
def _trsm_wide(self: qd.template(), L):
    """``_trsm`` with row c of L published through shared memory, in alternating slots as in
    ``_cholesky_wide``."""
    n = qd.static(self.r.n)
    dtype = qd.static(qd.typeof(self.r[0]))
    subgroup._note(_note(n, subgroup.group_size(), "triangular solve through shared memory, one block barrier per "
                                                   "column"))
    slots = block.SharedArray((2 * block._dim(),), dtype)
    tid = block.thread_idx()
    row = tid & (n - 1)
    base = tid - row
    for c in qd.static(range(n)):
        at = base + (c % 2) * block._dim()
        if row == c:
            for j in qd.static(range(c + 1)):
                slots[at + j] = L.r[j]
        block.sync()
        dot = qd.cast(0.0, dtype)
        for j in qd.static(range(c)):
            dot += self.r[j] * slots[at + j]
        self.r[c] = (self.r[c] - dot) / slots[at + c]


@qd.func
def _ger_sub(self, a, b):
    """``self -= outer(a, b)``, each lane holding its element of a and of b: lane i's
    register j loses a_i * b_j, b_j received from lane j."""
    if qd.static(wide(self.r.n, subgroup.group_size())):
        _ger_sub_wide(self, a, b)
    else:
        for j in qd.static(range(self.r.n)):
            self.r[j] -= a * subgroup.shuffle(b, j)


@qd.func
def _ger_sub_wide(self: qd.template(), a, b):
    """``_ger_sub`` with b published through shared memory: every row reads the tile's n
    elements after a barrier (and one before, for a call in a loop)."""
    n = qd.static(self.r.n)
    subgroup._note(_note(n, subgroup.group_size(), "rank-1 update through shared memory, two block barriers"))
    bs = block.SharedArray((block._dim(),), qd.typeof(self.r[0]))
    tid = block.thread_idx()
    base = tid - (tid & (n - 1))
    block.sync()
    bs[tid] = b
    block.sync()
    for j in qd.static(range(n)):
        self.r[j] -= a * bs[base + j]


# ----------------------------------------------------------------------------- memory
# ``batched``: the array has a leading batch dimension indexed by ``batch``. The stops come
# clamped to the array's extent already (the frontend knows where the extents live).

@qd.func
def _load(self, arr: qd.template(), batched: qd.template(), batch, r0, r1, c0, c1, room: qd.template()):
    """Lane i reads row r0 + i, columns c0 .. c1 - 1 into registers 0 .. c1 - c0 - 1; rows
    and columns outside the ranges leave their registers as they were. ``room``: how many
    columns from c0 the array is known to have (registers past it are never reached, and a
    constant index past the array's end would be refused at translation)."""
    row = r0 + _row(self.r.n)
    if row < r1:
        for j in qd.static(range(min(self.r.n, room))):
            if c0 + j < c1:
                if qd.static(batched):
                    self.r[j] = arr[batch, row, c0 + j]
                else:
                    self.r[j] = arr[row, c0 + j]


@qd.func
def _store(self, arr: qd.template(), batched: qd.template(), batch, r0, r1, c0, c1, room: qd.template()):
    """The inverse of ``_load``: elements outside the ranges are not written."""
    row = r0 + _row(self.r.n)
    if row < r1:
        for j in qd.static(range(min(self.r.n, room))):
            if c0 + j < c1:
                if qd.static(batched):
                    arr[batch, row, c0 + j] = self.r[j]
                else:
                    arr[row, c0 + j] = self.r[j]


@qd.func
def _column(arr: qd.template(), batched: qd.template(), batch, r0, r1, col, dtype: qd.template(), n: qd.template()):
    """This lane's element of the column slice ``arr[r0:r1, col]`` for a tile of ``n`` rows:
    row r0 + lane, 0 past r1."""
    v = qd.cast(0.0, dtype)
    row = r0 + _row(n)
    if row < r1:
        if qd.static(batched):
            v = arr[batch, row, col]
        else:
            v = arr[row, col]
    return v


# ----------------------------------------------------------------------------- types

METHODS = {"eye_": eye_, "cholesky_": cholesky_}
# Spelled by the frontend: it needs B as the caller's variable, which it updates.
FRONTEND_METHODS = ("solve_triangular_",)
# Quadrants' internal methods (its tests call them): t._load(arr, r0, r1, c0, c1) is
# t[:] = arr[r0:r1, c0:c1], _load3d(arr, b, ...) the batched form, _store* the inverse,
# _ger_sub(a, b) is t -= qd.outer(a, b), B._trsm(L) is L.solve_triangular_(B).
BLOCK_METHODS = {"_load": (_load, False), "_load3d": (_load, True), "_store": (_store, False),
                 "_store3d": (_store, True)}


class TileType(StructType):
    """The struct a tile is: ``r``, the lane's row, N registers of ``dtype``. One type per
    (size, dtype); the frontend tells tiles from other structs by this class."""

    def __init__(self, size: int, dtype: Any):
        super().__init__({"r": MatrixType((size,), dtype)}, f"Tile{size}x{size}", METHODS)
        self.size = size
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"qd.simt.Tile{self.size}x{self.size}({self.dtype.name})"


_TYPES: dict[tuple, TileType] = {}


def tile_type(size: int, dtype: Any) -> TileType:
    """The one TileType of ``size`` and ``dtype`` (a tile variable's type is compared by identity)."""
    key = (size, dtype)
    if key not in _TYPES:
        _TYPES[key] = TileType(size, dtype)
    return _TYPES[key]


class TileClass:
    """``qd.simt.Tile16x16`` / ``qd.simt.Tile32x32``: ``SIZE``, and in kernels
    ``zeros(dtype=None)`` and ``eye(dtype=None)`` (dtype: qd.f32 or qd.f64; None is
    qd.init's default_fp)."""

    def __init__(self, size: int):
        self.SIZE = size
        self.zeros = _factory("zeros", size, "A zero tile.")
        self.eye = _factory("eye", size, "An identity tile.")

    def __repr__(self) -> str:
        return f"<qd.simt.Tile{self.SIZE}x{self.SIZE}>"


def _factory(kind: str, size: int, doc: str, dtype: Any = None):
    stub = builtin(f"tile.{kind}")(lambda dtype=None: None)
    stub.tile_size = size
    stub.tile_dtype = dtype  # the dtype when the call names none (None: qd.init's default_fp)
    stub.__name__ = kind
    stub.__doc__ = doc
    return stub


# Quadrants' internal factory and proxies (``quadrants.lang.simt._tile``), which its own tests
# import: ``_make_tile(N, dtype)`` is the tile class of one dtype, called in a kernel for a zero
# tile (``Tile()``, ``Tile.zeros()``, ``Tile.eye()``), its methods ``_load`` / ``_store`` /
# ``_load3d`` / ``_store3d`` / ``_ger_sub`` / ``_trsm`` spelled by the frontend.
_tile_cache: dict = {}


def _make_tile(n: int, dtype: Any = None):
    key = (n, dtype)
    if key not in _tile_cache:
        make = _factory("zeros", n, f"A zero Tile{n}x{n}.", dtype)
        make.SIZE = n
        make.zeros = make
        make.eye = _factory("eye", n, f"An identity Tile{n}x{n}.", dtype)
        _tile_cache[key] = make
    return _tile_cache[key]


class _NotAValue:
    """A slice proxy of Quadrants' Python API: only an operand of tile operations."""

    def __init__(self, *parts: Any):
        self.parts = parts

    def _misuse(self, *_: Any) -> Any:
        raise TypeError(f"{type(self).__name__[1:]} is only valid in tile operations (t[:] = arr[...], arr[...] = t, "
                        "t -= qd.outer(a, b)), not as a value")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __getitem__ = _misuse

    def __repr__(self) -> str:
        return f"<{type(self).__name__[1:]}{self.parts}: not a value>"


class _TileSliceProxy(_NotAValue):
    pass


class _VecSliceProxy(_NotAValue):
    pass


sys.modules[f"{__package__}.simt._tile"] = sys.modules[__name__]


Tile16x16 = TileClass(16)
Tile32x32 = TileClass(32)


@builtin("outer")
def outer(a: Any, b: Any) -> None:
    """``t -= qd.outer(a, b)``: a rank-1 update of a tile, each lane giving its element of
    ``a`` and of ``b`` (a scalar, or a column slice ``arr[r0:r1, col]``). Only that."""

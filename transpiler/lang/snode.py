"""The SNode tree: ``qd.root`` and its ``dense`` / ``pointer`` / ``bitmasked`` / ``dynamic``
levels, with fields placed under the last one.

Sparse levels are emulated on dense storage, on every target: each field keeps a value per
element, as a dense field does, and each pointer or bitmasked level has an activity mask (an
``i32`` per cell, itself a field the kernels that use it are passed); a dynamic level has a
length per cell of its parent. Writes activate the cells above them, a struct-for
(``for i, j in x``) visits only active elements, deactivating a pointer or dynamic cell
zero-fills what it holds (Quadrants recycles that memory and hands it back zeroed), and
``to_numpy()`` reads inactive elements as 0. Results are Quadrants' (and Taichi's); memory is
the dense field's, so a sparse layout saves none.
"""
from __future__ import annotations

import itertools

from ..ir import types as T
from .kernel import comptime

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import numpy as np

    from .field import Field, StructField

SPARSE = ("pointer", "bitmasked", "dynamic")
_serials = itertools.count()


class Axes:
    """``qd.i``, ``qd.ij``, ...: which dimensions a level spans."""

    def __init__(self, letters: str):
        self.letters = letters

    def __repr__(self) -> str:
        return f"qd.{self.letters}"


class SNode:
    """One level of the tree. ``extents`` is the extent of each axis so far: the product of
    its levels' (``dense(qd.ij, 4).dense(qd.ij, 8)`` is 32 x 32, ``dense(qd.ij, (g, g)).
    dense(qd.k, n)`` g x g x n); a level's cells are indexed in that space (``qd.is_active(
    blk, [i, j])``, ``for i, j in blk``), a field's elements in its leaf level's."""

    def __init__(self, kind: str, parent: SNode | None, extents: dict[str, int], own: dict[str, int] | None = None):
        self.kind = kind
        self.serial = next(_serials)  # names a level's mask when no field names it
        self._parent = parent
        self.extents = extents
        self.own = own or {}          # this level's own extent per axis it spans
        self.children: list[SNode] = []
        self.fields: list = []        # the fields placed here (StructField members flattened)
        self.mask = None              # pointer / bitmasked: activity per cell; dynamic: length per parent cell
        if kind in ("pointer", "bitmasked"):
            self.mask = _mask_field(self.shape)
        elif kind == "dynamic":
            self.mask = _mask_field(parent.shape)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.extents[a] for a in "ijkl" if a in self.extents)

    @property
    def axes(self) -> str:
        return "".join(a for a in "ijkl" if a in self.extents)

    @property
    def capacity(self) -> int:
        """A dynamic level's extent along its own axis."""
        return next(iter(self.own.values()))

    @property
    def dynamic_axis(self) -> int:
        """Where a dynamic level's axis sits among its indices."""
        return self.axes.index(next(iter(self.own)))

    def _child(self, kind: str, axes: Axes, shape: int | Sequence[int]) -> SNode:
        if self.kind == "dynamic":
            raise ValueError("a dynamic SNode holds fields only: place them with .place(...)")
        own = _axis_extents(axes, shape, kind)
        extents = dict(self.extents)
        for axis, n in own.items():
            extents[axis] = extents.get(axis, 1) * n
        child = SNode(kind, self, extents, own)
        self.children.append(child)
        return child

    def dense(self, axes: Axes, shape: int | Sequence[int]) -> SNode:
        return self._child("dense", axes, shape)

    def pointer(self, axes: Axes, shape: int | Sequence[int]) -> SNode:
        return self._child("pointer", axes, shape)

    def bitmasked(self, axes: Axes, shape: int | Sequence[int]) -> SNode:
        return self._child("bitmasked", axes, shape)

    def dynamic(self, axis: Axes, shape: int, chunk_size: int | None = None) -> SNode:
        """``dynamic(qd.j, n, chunk_size=...)``: a list of up to ``n`` elements per parent cell
        (``qd.append`` / ``qd.length``); the chunk size only shapes Quadrants' allocation."""
        if not isinstance(axis, Axes) or len(axis.letters) != 1:
            raise ValueError(f"dynamic({axis!r}, ...): a dynamic SNode spans one axis")
        if axis.letters in self.extents:
            raise ValueError(f"dynamic({axis!r}, ...): axis {axis.letters} is already used above it")
        return self._child("dynamic", axis, shape)

    def place(self, *fields: Field | StructField, offset: int | Sequence[int] | None = None,
              **_options: object) -> SNode:
        if offset is not None and self.sparse and any(offset if isinstance(offset, (tuple, list)) else (offset,)):
            raise ValueError("place(offset=...) under a pointer, bitmasked or dynamic level is not supported yet; "
                             "index it from 0 (a dense level takes an offset)")
        for f in fields:
            if f.placed and f.shape == tuple(self.shape) and any(f is c for c in _companions_of(fields)):
                continue  # `place(x, x.grad)`: x placed its .grad with it
            f._place(self.shape, offset)
            for g in _leaves(f):
                g._snode = self
                self.fields.append(g)
        return self

    @comptime
    def parent(self, n: int = 1) -> SNode | None:
        p = self
        for _ in range(n):
            p = p._parent if p is not None else None
        return p

    def deactivate_all(self) -> None:
        """Every cell of every sparse level in this subtree inactive, and what pointer and
        dynamic levels hold zeroed (bitmasked levels keep their data, as in Quadrants)."""
        for c in self.children:
            c.deactivate_all()
        if self.kind in ("pointer", "dynamic"):
            for f in self.subtree_fields():
                f.storage()[...] = 0
        if self.mask is not None:
            self.mask.storage()[...] = 0

    def lazy_grad(self) -> None:
        """``qd.root.lazy_grad()``: every float field placed under this node gets its ``.grad``
        (a field of its shape, as ``needs_grad=True`` would have made it), where it has none."""
        self._lazy("grad")

    def lazy_dual(self) -> None:
        """``qd.root.lazy_dual()``: as lazy_grad, for ``.dual`` (forward-mode tangents)."""
        self._lazy("dual")

    def _lazy(self, kind: str) -> None:
        from .field import Field, current_program_fields  # noqa: PLC0415 - lang.field imports this module

        # qd.root's: every field of the program, those made with shape=... too (as in Quadrants)
        fields = current_program_fields() if self.kind == "root" else self.subtree_fields()
        companions = {id(c) for c in _companions_of(fields)}
        for f in fields:
            if id(f) in companions:
                continue
            if f.dtype.is_float and f.__dict__.get("_" + kind) is None:
                f.__dict__["_" + kind] = Field(f.dtype, f.shape, f.element_shape,
                                               f"{f.name}_{kind}" if f.name else None)

    def subtree_fields(self) -> list:
        out = list(self.fields)
        for c in self.children:
            out += c.subtree_fields()
        return out

    def subtree_levels(self) -> list[SNode]:
        out = []
        for c in self.children:
            out += [c, *c.subtree_levels()]
        return out

    def path(self) -> list[SNode]:
        """The levels from the root's first child down to this one."""
        out, p = [], self
        while p is not None and p.kind != "root":
            out.append(p)
            p = p._parent
        return out[::-1]

    @property
    def sparse(self) -> bool:
        return any(level.kind in SPARSE for level in self.path())

    def __getattr__(self, name: str):
        if name in ("bit_struct", "quant_array", "hash"):
            raise AttributeError(f"qd.root.{name}: quantized and hashed SNodes are not supported by this "
                                 "transpiler; use a dense, pointer or bitmasked level")
        raise AttributeError(f"an SNode has no `{name}`")

    def __repr__(self) -> str:
        if self.kind == "root":
            return "qd.root"
        return f"{self._parent!r} => {self.kind} {list(self.shape)}"


class _Root(SNode):
    """``qd.root``; ``qd.root.place(x)`` places 0-d fields (``x[None]``)."""

    def __init__(self):
        super().__init__("root", None, {})

    def deactivate_all(self) -> None:
        deactivate_all_snodes()


def _companions_of(fields: Iterable[Field | StructField]) -> list:
    """The .grad / .dual fields of ``fields`` (of their members, for fields of structs)."""
    return [c for f in fields for g in _leaves(f) for c in g._companions()]


def _leaves(f: Field | StructField):
    from .field import StructField  # noqa: PLC0415 - lang.field imports this module

    if isinstance(f, StructField):
        for m in f.members.values():
            yield from _leaves(m)
    else:
        yield f


def _mask_field(shape: tuple[int, ...]):
    from .field import Field  # noqa: PLC0415 - lang.field imports this module

    f = Field(T.i32, None, (), None)
    f._place(shape)
    return f


def _axis_extents(axes: Axes, shape: int | Sequence[int], kind: str = "dense") -> dict[str, int]:
    shape = tuple(n.__index__() if hasattr(n, "__index__") and not isinstance(n, bool) else n
                  for n in ((shape,) if isinstance(shape, int) or hasattr(shape, "__index__") else tuple(shape)))
    if len(shape) == 1 and isinstance(axes, Axes):  # one extent for every axis: pointer(qd.ijk, [n])
        shape = shape * len(axes.letters)
    if not isinstance(axes, Axes) or len(axes.letters) != len(shape):
        raise ValueError(f"qd.root.{kind}({axes!r}, {shape!r}): one extent per axis")
    if not all(isinstance(n, int) and n >= 1 for n in shape):
        raise ValueError(f"qd.root.{kind}({axes!r}, {shape!r}): extents are positive ints")
    return dict(zip(axes.letters, shape))


root = _Root()
def axes(*dims: int) -> Axes:
    """``qd.axes(0, 1)``: the axes by number, as ``qd.ij`` names them."""
    if not dims or any(not isinstance(d, int) or not 0 <= d < 4 for d in dims) or len(set(dims)) != len(dims):
        raise ValueError(f"qd.axes{dims}: give distinct axis numbers from 0 to 3 (qd.i to qd.l)")
    return Axes("".join("ijkl"[d] for d in sorted(dims)))


i, j, k, l = Axes("i"), Axes("j"), Axes("k"), Axes("l")  # noqa: E741 - Quadrants' names
ij, ik, il, jk, jl, kl = Axes("ij"), Axes("ik"), Axes("il"), Axes("jk"), Axes("jl"), Axes("kl")
ijk, ijl, ikl, jkl, ijkl = Axes("ijk"), Axes("ijl"), Axes("ikl"), Axes("jkl"), Axes("ijkl")


def deactivate_all_snodes() -> None:
    """``qd.deactivate_all_snodes()``: ``deactivate_all()`` on every level under ``qd.root``."""
    for c in root.children:
        c.deactivate_all()


# ----------------------------------------------------------------------------- activity on the host

def activate_host(field: Field, index: object) -> None:
    """A host write ``x[I] = v``: activate the cells above element ``I``."""
    snode = getattr(field, "_snode", None)
    if snode is None or not snode.sparse:
        return
    index = () if index is None else (index if isinstance(index, tuple) else (index,))
    if len(index) != len(field.shape) or not all(hasattr(k, "__index__") for k in index):
        import numpy as np  # noqa: PLC0415 - NumPy only for a slice or a partial index

        chosen = np.zeros(field.shape, bool)
        chosen[index] = True
        for element in zip(*np.nonzero(chosen)):
            activate_host(field, tuple(int(k) for k in element))
        return
    leaf = dict(zip(snode.axes, index))
    for level in snode.path():
        if level.kind == "dynamic":
            a = next(iter(level.own))
            cell = tuple(leaf[b] for b in level._parent.axes)
            lengths = level.mask.storage()
            lengths[cell] = max(int(lengths[cell]), int(leaf[a]) + 1)
        elif level.kind in ("pointer", "bitmasked"):
            level.mask.storage()[tuple(leaf[b] // (snode.extents[b] // level.extents[b]) for b in level.axes)] = 1


def activate_all_host(field: Field) -> None:
    """``from_numpy``: every element written, every cell above them active."""
    snode = getattr(field, "_snode", None)
    if snode is None:
        return
    for level in snode.path():
        if level.kind == "dynamic":
            level.mask.storage()[...] = level.capacity
        elif level.mask is not None:
            level.mask.storage()[...] = 1


def active_elements(snode: SNode) -> np.ndarray | None:
    """A bool array of ``snode``'s shape: which of its cells are active (None: all)."""
    import numpy as np  # noqa: PLC0415 - the emit path must not import NumPy

    out = None
    for level in snode.path():
        if level.kind not in SPARSE:
            continue
        if level.kind == "dynamic":
            lengths = level.mask.storage()
            a = level.dynamic_axis
            j = np.arange(level.capacity).reshape([-1 if d == a else 1 for d in range(len(level.shape))])
            act = j < np.expand_dims(lengths, a)
        else:
            act = level.mask.storage() != 0
        for d, b in enumerate(level.axes):  # each cell covers a block of the snode's elements
            act = np.repeat(act, snode.extents[b] // level.extents[b], axis=d)
        # axes the level does not span yet: every index of them
        shape = [snode.extents[b] if b in level.axes else 1 for b in snode.axes]
        act = act.reshape(shape)
        out = act if out is None else (out & act)
    return None if out is None else np.broadcast_to(out, snode.shape)

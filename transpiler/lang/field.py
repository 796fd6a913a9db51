"""Fields as Quadrants spells them: ``qd.field(dtype, shape)``, ``qd.Vector.field``,
``qd.Matrix.field``, ``vec3.field``, struct fields, ``qd.root.dense(qd.ij, (n, m)).place(x)``,
and ``@qd.data_oriented`` classes whose kernels use ``self.x``.

A field is module state: a kernel that uses one gets it as a parameter of its own kind
(``role: "field"`` in the manifest, shared by every kernel of the module that uses it),
bound by the runtime to the field's storage. The storage is host memory (NumPy, allocated
on first use) that every runtime copies to and from its device around a launch, as it does
for ndarrays, so a field keeps its values across kernel calls and the host reads and writes
it between them. Nothing here imports NumPy until a field is touched.
"""
from __future__ import annotations

import dataclasses
import enum
import weakref
from typing import Any

from ..errors import TranspileError
from ..ir.memo import Identity
from ..ir.types import DType, python_type
from . import host
from .external import from_torch, to_dlpack, to_torch
from .kernel import comptime
from .matrix import HostStruct, MatrixType, StructType, dataclass_members, host_matrix_class
from .snode import SPARSE, Axes, SNode, activate_all_host, activate_host, active_elements, root

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import numpy as np
    import torch
    from numpy.typing import ArrayLike

    from .matrix import MatrixType, StructType
    from .tensor_type import Tensor


_all_fields = weakref.WeakSet()  # every field made, for qd.reset()
# The program fields belong to: each qd.init after the first starts a new one (the fields a
# script makes before its first qd.init are that program's); qd.root.lazy_grad() and
# qd.ad.clear_all_gradients() cover the current program's, as Quadrants' do.
_program = [0]
_inits = [0]


def new_program() -> None:
    if _inits[0]:
        _program[0] += 1
    _inits[0] += 1


class FieldShapeError(ValueError, RuntimeError):
    """A field's shape with an extent under 1: a ValueError, and Quadrants' QuadrantsRuntimeError."""


def current_program() -> int:
    """Which qd.init's program is current: what made since then is that program's."""
    return _program[0]


def current_program_fields() -> list:
    """The placed fields made since the last qd.init: Quadrants' program's fields."""
    return [f for f in list(_all_fields) if f.placed and f.__dict__.get("_program") == _program[0]]


def reset_fields() -> None:
    """qd.reset(): every field's contents are gone (zeros again on next use)."""
    for f in list(_all_fields):
        f._data = None


def companion(kind: str, owner: str = "qd.field") -> property:
    """A field's ``.grad`` / ``.dual``: a field of the same shape and type, made by
    ``needs_grad=True`` / ``needs_dual=True``. It is storage that kernels read and write as
    they do the field (Genesis' hand-written backward passes write ``x.grad``), and where a
    kernel's derivative (``kernel.grad()``, ``qd.ad``) adds its gradients."""
    flag = "needs_grad" if kind == "grad" else "needs_dual"

    def get(self: Field | StructField) -> Field | StructField:
        found = self.__dict__.get("_" + kind)
        if found is None and isinstance(self, Field) and not self.placed and self.dtype.is_float:
            # `qd.root.dense(qd.i, n).place(x, x.grad)`: made here, placed with x
            found = self.__dict__["_" + kind] = Field(self.dtype, None, self.element_shape,
                                                      f"{self.name}_{kind}" if self.name else None)
        if found is None:
            what = owner.split(".")[1]
            raise AttributeError(f"{owner}.{kind}: this {what} has no {kind}: create it with {flag}=True (a {what} of "
                                 f"the same shape, which kernel.grad(), qd.ad.Tape and kernels themselves read and "
                                 "write)")
        return found

    return property(get)


class ElementDims:
    """``.n`` / ``.m`` of a field or ndarray of vectors or matrices (rows, and columns: 1 for a
    vector), as Quadrants' MatrixField and MatrixNdarray have them."""

    def _unwrap(self):
        """Quadrants' ``qd.Tensor`` wrapper's escape hatch: here the field or ndarray is its own."""
        return self

    @property
    def layout(self) -> tuple[int, ...] | None:
        """The ``layout=`` permutation ``qd.tensor`` was given (None: row-major, the identity)."""
        return self.__dict__.get("_layout")

    element_shape: tuple[int, ...] = ()

    @property
    def n(self) -> int:
        return self._element_dim(0)

    @property
    def m(self) -> int:
        self._element_dim(0)  # (a scalar one has neither)
        return self.element_shape[1] if len(self.element_shape) == 2 else 1

    def _element_dim(self, k: int) -> int:
        if not self.element_shape:
            raise AttributeError("a scalar field or ndarray has no .n / .m: those are a vector or matrix one's")
        return self.element_shape[k]


class Field(ElementDims):
    """A dense field of scalars, or of vectors / matrices (``element_shape``)."""

    grad, dual = companion("grad"), companion("dual")

    def __init__(self, dtype: Any, shape: int | tuple[int, ...] | None = None, element_shape: tuple[int, ...] = (),
                 name: str | None = None, needs_grad: bool = False, needs_dual: bool = False,
                 offset: int | Sequence[int] | None = None):
        _all_fields.add(self)
        self._program = _program[0]
        scalar = python_type(dtype) or dtype
        if not isinstance(scalar, DType):
            raise TypeError(f"qd.field needs a dtype such as qd.f32, got {dtype!r}")
        self.dtype = scalar
        self.element_shape = tuple(element_shape)
        self.name = name
        self._shape: tuple[int, ...] | None = None
        self._offset: tuple[int, ...] | None = None  # the index of its first element (None: all 0)
        self._data = None
        self._snode: SNode | None = None  # where qd.root...place(x) put it; None: given a shape
        for kind, wanted in (("grad", needs_grad), ("dual", needs_dual)):
            if wanted and scalar.is_float:  # (an integer member of a struct field has none, as in Quadrants)
                self.__dict__["_" + kind] = Field(scalar, None, self.element_shape, f"{name}_{kind}" if name else None)
        if shape is not None:
            self._place(shape, offset)
        elif offset is not None:
            raise TranspileError("shape cannot be None when offset is set",
                                 hint="give the shape too, or place the field with qd.root.dense(...).place(x, "
                                      "offset=...)")

    def _companions(self) -> list:
        return [f for f in (self.__dict__.get("_grad"), self.__dict__.get("_dual")) if f is not None]

    def _place(self, shape: int | tuple[int, ...] | None, offset: int | Sequence[int] | None = None) -> None:
        scalar = isinstance(shape, int) or (hasattr(shape, "__index__") and not hasattr(shape, "__len__"))
        shape = (shape,) if scalar else tuple(shape)
        # NumPy integers are extents too (Genesis sizes its grids with them).
        shape = tuple(n.__index__() if hasattr(n, "__index__") and not isinstance(n, bool) else n for n in shape)
        if not all(isinstance(n, int) and n >= 1 for n in shape):
            raise FieldShapeError(f"Every dimension of a Quadrants field should be positive: a field's shape is "
                                  f"positive ints, not {shape!r}")
        if self._shape is not None:
            raise ValueError(f"field {self.name or ''} is already placed with shape {self._shape}")
        self._offset = index_offset(offset, len(shape))
        self._shape = shape
        for c in self._companions():  # its .grad / .dual have its shape and offset
            c._place(shape, offset)

    @property
    def placed(self) -> bool:
        return self._shape is not None

    @property
    def shape(self) -> tuple[int, ...]:
        if self._shape is None:
            raise RuntimeError("this field has no shape yet: give qd.field(..., shape=...) or place it with "
                               "qd.root.dense(...).place(x)")
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def offset(self) -> tuple[int, ...]:
        """The index of its first element per dimension (``offset=`` of qd.field or place):
        index d runs from offset[d] to offset[d] + shape[d] - 1, in kernels and in Python."""
        return self._offset or (0,) * len(self.shape)

    def _storage_index(self, index: object):
        """A Python-scope index as the storage's (NumPy's) index: checked against the shape
        (a negative index is out of range, not NumPy's count from the end), the offset
        taken off."""
        index = _index(index)
        items = index if isinstance(index, tuple) else (index,)
        for i in items:  # (a slice or a mask reached NumPy once: Quadrants refuses both, so here too)
            if not hasattr(i, "__index__") or isinstance(i, bool):
                raise TypeError(f"Detected illegal element of type: {type(i)}. Please be aware that slicing a "
                                f"qd.field is not supported so far: index it with one integer per dimension, or "
                                f"slice x.to_numpy()")
        shape = self.shape
        if len(items) != len(shape):  # (x[0] of a 2-d field: not a row, as in Quadrants)
            raise FieldIndexError(f"Slicing is not supported on qd.field: it takes one integer index per dimension "
                                  f"({len(shape)}), not {index!r}")
        out = []
        for d, (i, o, n) in enumerate(zip(items, self.offset, shape, strict=True)):
            if not o <= i.__index__() < o + n:
                where = f"shape {shape}" if self._offset is None else f"from {o} to {o + n - 1}"
                raise FieldIndexError(f"index {i} is out of range for dimension {d} of the field ({where})")
            out.append(i.__index__() - o)
        return tuple(out)


    def storage(self) -> np.ndarray:
        """The NumPy array holding the field (zeros on first use, in the executor's memory
        where the host sees it: see runtime.field_storage), shape + element shape."""
        if self._data is None:
            try:
                self._data = host.field_storage(self.shape + self.element_shape, self.dtype.np_dtype)
            except MemoryError as exc:
                kinds, node = set(), self.snode
                while node is not None:
                    kinds.add(node.kind)
                    node = node.parent()
                sparse = [k for k in SPARSE if k in kinds]
                raise MemoryError(f"{exc}: the field of shape {self.shape}" + (
                    f" under qd.root.{'/'.join(sparse)} reserves its whole capacity here (Quadrants allocates "
                    f"such levels as they fill); give the level a capacity the data needs" if sparse else "")) from None
        return self._data

    @property
    def snode(self) -> SNode:
        """The field's own node, under the level it is placed in (``x.snode.parent()``)."""
        node = self.__dict__.get("_place_node")
        if node is None:
            node = self.__dict__["_place_node"] = SNode("place", self.parent(), self.parent().extents)
            node._name = self.name  # (Quadrants' snode._name: the name of the field placed there)
        return node

    @property
    def _name(self) -> str | None:
        """``qd.field(..., name="x")``'s name, as Quadrants spells it (``x._name``)."""
        return self.name

    @comptime
    def parent(self, n: int = 1) -> SNode | None:
        """The level holding the field (``qd.append(x.parent(), i, v)``), or the n-th above."""
        if self._snode is None:  # qd.field(dtype, shape=...): a dense level of its own under qd.root
            self._snode = root.dense(Axes("ijkl"[:len(self.shape)]), self.shape) if self.shape else root
        return self._snode.parent(n - 1) if n > 1 else self._snode

    def _active(self):
        """Which elements a sparse field holds (None: a dense field, all of them)."""
        snode = self._snode
        return active_elements(snode) if snode is not None and snode.sparse else None

    # Python scope, as Quadrants has it.
    def __getitem__(self, index: object):
        """A scalar element's value; a vector or matrix element's components as a view
        that writes through (``x[i][0] = 5``, ``x[i].x``, ``x[i].to_numpy()``)."""
        return host_value(self.storage()[self._storage_index(index)], self.element_shape)

    def __setitem__(self, index: object, value: object) -> None:
        index = self._storage_index(index)
        storage = self.storage()
        storage[index] = wrapped(value, storage.dtype)
        activate_host(self, index)

    def to_numpy(self, keep_dims: bool = False, dtype: DType | type | None = None, *,
                 copy: bool | None = True) -> np.ndarray:
        """The elements; an inactive one of a sparse field reads 0, as in Quadrants. As
        Quadrants shapes them: an n x 1 matrix element as n values, unless ``keep_dims``,
        which gives a vector element as n x 1 too; ``dtype`` converts. ``copy=False``: the
        field's own memory (refused for a sparse field or a ``dtype``), ``None``: that memory
        where it can be, else a copy."""
        active = self._active()
        if copy is not True and active is None and dtype is None:
            return self._host_shaped(self.storage(), keep_dims)
        if copy is False:
            raise ValueError("qd.field.to_numpy(copy=False): a sparse field or a dtype conversion needs a copy; "
                             "use copy=True (the default) or copy=None")
        out = self.storage().copy()
        if active is not None:
            out[~active] = 0
        out = self._host_shaped(out, keep_dims)
        if dtype is not None:
            t = python_type(dtype) or dtype
            out = out.astype(t.np_dtype if isinstance(t, DType) else t)
        return out

    def _host_shaped(self, array: np.ndarray, keep_dims: bool):
        """``array`` (the storage's shape) shaped as Python scope sees the field."""
        if not self.element_shape:
            return array
        rows = self.element_shape[0]
        cols = self.element_shape[1] if len(self.element_shape) == 2 else 1
        return array.reshape(self.shape + ((rows, cols) if keep_dims or cols != 1 else (rows,)))

    def to_torch(self, device: str | None = None, keep_dims: bool = False, *, copy: bool | None = True) -> torch.Tensor:
        """The elements as a torch tensor, shaped as ``to_numpy``: ``copy=True`` an independent
        copy, ``False`` the field's own memory (a CPU tensor), ``None`` that where it can be."""
        shared = self._active() is None
        array = self._host_shaped(self.storage(), keep_dims) if shared else self.to_numpy(keep_dims)
        return to_torch(array, device, copy, shared, "qd.field")

    def from_torch(self, tensor: torch.Tensor) -> None:
        """Every element from a torch tensor of the field's shape (as ``from_numpy``)."""
        self.from_numpy(from_torch(tensor))

    def to_dlpack(self, versioned: bool = False) -> object:
        """A DLPack capsule of the field's memory (``torch.utils.dlpack.from_dlpack`` takes the
        default v0 one), shaped as ``to_numpy``."""
        if self._active() is not None:
            raise ValueError("qd.field.to_dlpack(): a sparse field's inactive elements have no memory to share; "
                             "use to_numpy() or to_torch()")
        return to_dlpack(self._host_shaped(self.storage(), False), versioned)

    def from_numpy(self, array: ArrayLike) -> None:
        import numpy as np  # noqa: PLC0415 - NumPy only when a field is touched (above)

        array = np.asarray(array)
        want = self.storage().shape
        if array.shape != want and self.element_shape and array.shape[:len(self.shape)] == self.shape and \
                array.size == self.storage().size:  # n x 1 for a vector element, n for an n x 1 one
            array = array.reshape(want)
        if array.shape != want:
            raise ValueError(f"shape {array.shape} does not match the field's {self.storage().shape}")
        self.storage()[...] = array
        activate_all_host(self)

    def fill(self, value: object) -> None:
        """Every element; of a sparse field, every active one (Quadrants fills with a struct-for)."""
        active = self._active()
        if active is None:
            self.storage()[...] = value
        else:
            self.storage()[active] = value

    def copy_from(self, other: Field) -> None:
        if not isinstance(other, Field):
            raise TypeError(f"copy_from() takes a qd.field, got {type(other).__name__}: use from_numpy() for an array")
        self.from_numpy(other.storage())

    def __iter__(self):
        raise NotImplementedError("Struct for is only available in Quadrants scope: iterate over a field in a kernel "
                                  "(for i in x), or over x.to_numpy() here")

    def __repr__(self) -> str:
        shape = self._shape if self._shape is not None else "unplaced"
        es = f", element {self.element_shape}" if self.element_shape else ""
        return f"<qd.field {self.name or ''} {self.dtype.name} {shape}{es}>"


class StructField:
    """A field of structs: one field per member (``x.pos`` is the member's field), read in a
    kernel as ``x[i].pos`` or ``x.pos[i]``."""

    _unwrap = ElementDims._unwrap

    grad, dual = companion("grad"), companion("dual")

    def __init__(self, struct_type: StructType, shape: int | tuple[int, ...] | None = None, name: str | None = None,
                 needs_grad: bool = False, needs_dual: bool = False, _members: dict | None = None,
                 offset: int | Sequence[int] | None = None):
        self.type = struct_type
        self.name = name
        self.members: dict[str, Field | StructField] = {}
        for member, t in struct_type.members.items():
            t = python_type(t) or t
            sub = f"{name}_{member}" if name else None
            flags = dict(needs_grad=needs_grad, needs_dual=needs_dual, offset=offset)
            if _members is not None:  # a .grad / .dual view: the members' own companions
                self.members[member] = _members[member]
            elif isinstance(t, StructType):
                self.members[member] = StructField(t, shape, sub, **flags)
            elif isinstance(t, MatrixType):
                self.members[member] = Field(t.dtype or float, shape, t.shape, sub, **flags)
            else:
                self.members[member] = Field(t, shape, (), sub, **flags)
        for kind, wanted in (("grad", needs_grad), ("dual", needs_dual)):
            if wanted and _members is None:  # the struct of its members' companions (float members have them)
                parts = {k: m.__dict__.get("_" + kind) for k, m in self.members.items()}
                if any(p is not None for p in parts.values()):
                    self.__dict__["_" + kind] = StructField(struct_type, None, f"{name}_{kind}" if name else None,
                                                            _members={k: p if p is not None else _NoCompanion(
                                                                k, kind) for k, p in parts.items()})

    def copy_from(self, other: StructField) -> None:
        """Every member's elements from ``other``, a field of the same struct type."""
        if not isinstance(other, StructField) or other.members.keys() != self.members.keys():
            raise TypeError(f"copy_from() takes a field of the same struct, got {type(other).__name__}")
        for name, member in self.members.items():
            member.copy_from(other.members[name])

    def _place(self, shape: int | tuple[int, ...] | None, offset: int | Sequence[int] | None = None) -> None:
        for m in self.members.values():
            m._place(shape, offset)

    @property
    def placed(self) -> bool:
        return all(m.placed for m in self.members.values())

    @property
    def shape(self) -> tuple[int, ...]:
        return next(iter(self.members.values())).shape

    @comptime
    def parent(self, n: int = 1) -> SNode | None:
        return next(iter(self.members.values())).parent(n)

    @property
    def snode(self) -> SNode:
        return next(iter(self.members.values())).snode

    def __getattr__(self, name: str):
        members = self.__dict__.get("members", {})
        if name in members:
            if isinstance(members[name], _NoCompanion):
                members[name].field  # noqa: B018 - raises, saying why
            return members[name]
        raise AttributeError(f"struct field has no member `{name}`")

    def _held(self) -> dict:
        """The members that hold data (a .grad view has none for integer members)."""
        return {k: m for k, m in self.members.items() if not isinstance(m, _NoCompanion)}

    def __getitem__(self, index: object):
        """The element as a struct that writes through: its members as attributes
        (``x[i].pos``) or keys."""
        return HostStruct({k: m[index] for k, m in self._held().items()}, self.type, (self, index))

    def __setitem__(self, index: object, value: dict) -> None:
        for k, v in value.items():
            self.members[k][index] = v

    def to_numpy(self) -> dict:
        return {k: m.to_numpy() for k, m in self._held().items()}

    def from_numpy(self, arrays: dict) -> None:
        for k, a in arrays.items():
            self.members[k].from_numpy(a)

    def to_torch(self, device: str | None = None) -> dict:
        return {k: m.to_torch(device) for k, m in self._held().items()}

    def from_torch(self, tensors: dict) -> None:
        for k, t in tensors.items():
            self.members[k].from_torch(t)

    def fill(self, value: object) -> None:
        for m in self._held().values():
            m.fill(value)


class _NoCompanion:
    """The .grad / .dual member of a struct field whose member is an integer: none."""

    _qd_no_companion = True

    def __init__(self, member: str, kind: str):
        self.member, self.kind = member, kind

    def __getattr__(self, name: str):
        raise AttributeError(f"member `{self.member}` is an integer: it has no {self.kind}")


def host_value(value: np.ndarray, element_shape: tuple[int, ...]) -> object:
    """What indexing a field or ndarray gives in Python scope, as in Quadrants: an element's
    value as a Python scalar, a vector or matrix element as a view that writes through
    (``x[i][0] = 5``, ``x[i].x``), anything else (a slice) as NumPy has it."""
    if getattr(value, "ndim", 1) == 0:
        return value.item()
    if value.shape == element_shape:
        return value.view(host_matrix_class())
    return value


def wrapped(value: object, np_dtype: np.dtype) -> object:
    """``value`` as an integer element stores it: wrapped to the dtype's width, as C and
    Quadrants store it (-128 in a u8 is 128), where NumPy 2 refuses a Python int out of range."""
    if np_dtype.kind not in "iu" or hasattr(value, "dtype"):
        return value
    import numpy as np  # noqa: PLC0415 - NumPy only when a field is touched (above)

    return np.asarray(value).astype(np_dtype)


class FieldIndexError(IndexError, AssertionError):
    """A Python-scope index out of a field's range: an IndexError, and the AssertionError
    Quadrants' debug mode raises for it."""


def index_offset(offset: int | Sequence[int] | None, ndim: int) -> tuple[int, ...] | None:
    """``offset=`` as a tuple of one int per dimension (None when every one is 0), checked
    as Quadrants checks it."""
    if offset is None:
        return None
    items = tuple(offset) if isinstance(offset, (tuple, list)) else (offset,)
    if not all(hasattr(o, "__index__") and not isinstance(o, bool) for o in items):
        raise TranspileError(f"a field's offset is one int per dimension, not {offset!r}")
    if len(items) != ndim:
        raise TranspileError(f"The dimensionality of shape and offset must be the same ({ndim} != {len(items)})")
    items = tuple(o.__index__() for o in items)
    return items if any(items) else None


def _index(index: object):
    if index is None:
        return ()
    if getattr(index, "_qd_host_matrix", False) or isinstance(index, list):  # x[I], I a grouped index vector
        return tuple(int(i) for i in index)
    return index


class Backend(enum.IntEnum):
    """``qd.Backend``: what ``qd.tensor`` allocates."""

    FIELD = 0
    NDARRAY = 1


def tensor(dtype: DType | MatrixType | type, shape: int | tuple[int, ...], *, backend: Backend = Backend.NDARRAY,
           layout: Sequence[int] | None = None, needs_grad: bool = False,
           needs_dual: bool = False, **options: object) -> Tensor:
    """``qd.tensor(dtype, shape, backend=qd.Backend.NDARRAY)``: a qd.ndarray, or a qd.field with
    ``backend=qd.Backend.FIELD``; ``dtype`` a vector or matrix type too. ``layout=`` (a
    permutation of the axes) is, as Quadrants documents it, a hint for the physical order
    that no kernel or host access can observe: it is checked, and the storage stays row-major."""
    if "order" in options:
        raise TypeError("qd.tensor(order=...) is not an option: the physical order is layout=(...), a permutation "
                        "of the axes")
    dims = len(shape) if isinstance(shape, (tuple, list)) else 1
    if layout is not None and sorted(layout) != list(range(dims)):
        raise ValueError(f"qd.tensor(layout={tuple(layout)!r}) must be a permutation of range({dims}), one entry per "
                         "dimension of the shape")
    if backend == Backend.FIELD:
        made = field(dtype, shape, needs_grad=needs_grad, needs_dual=needs_dual)
    else:
        made = host.ndarray_class()(python_type(dtype) or dtype, shape, needs_grad=needs_grad, needs_dual=needs_dual)
    if layout is not None and tuple(layout) != tuple(range(dims)):
        made.__dict__["_layout"] = tuple(layout)
    return made


def ndarray(dtype: DType | MatrixType | type, shape: int | Sequence[int], needs_grad: bool = False,
            needs_dual: bool = False) -> Tensor:
    """A device-agnostic array for kernel arguments: ``from_numpy``, ``to_numpy``, ``fill``.
    ``dtype`` may be Python's int or float: qd.init's default_ip / default_fp (i32 / f32).
    ``needs_grad=True`` gives it a ``.grad`` ndarray of its shape, which kernels read and write
    as ``x.grad[i]``."""
    return host.ndarray_class()(host.python_dtype(dtype), shape, needs_grad=needs_grad, needs_dual=needs_dual)


def field(dtype: DType | MatrixType | StructType | type, shape: int | tuple[int, ...] | None = None,
          name: str | None = None, needs_grad: bool = False, needs_dual: bool = False,
          offset: int | Sequence[int] | None = None, **_options: object) -> Field:
    """``qd.field(dtype, shape=(n, m))``: without a shape, place it with ``qd.root``;
    ``offset=(a, b)``: indices run from a and b (``x[a, b]`` is the first element)."""
    flags = dict(needs_grad=needs_grad, needs_dual=needs_dual, offset=offset)
    if isinstance(dtype, StructType):
        return StructField(dtype, shape, name, **flags)
    scalar = host.python_dtype(dtype.dtype if isinstance(dtype, MatrixType) else dtype)
    if (needs_grad or needs_dual) and isinstance(scalar, DType) and not scalar.is_float:
        raise RuntimeError(f"{scalar.name} is not supported for field with `needs_grad=True` or `needs_dual=True`: "
                           "only float fields have derivatives")
    if isinstance(dtype, MatrixType):
        return Field(dtype.dtype or float, shape, dtype.shape, name, **flags)
    return Field(dtype, shape, (), name, **flags)


class Layout:
    """``qd.Layout.AOS`` / ``qd.Layout.SOA``, the ``layout=`` of a vector, matrix or struct
    field: the memory order of its components. Kernels compute the same either way, so it is
    accepted and the layout stays this package's (each component of a field of structs in a
    buffer of its own; a vector field's components packed per element, as NumPy stores it)."""

    AOS = "aos"
    SOA = "soa"


# ----------------------------------------------------------------------------- data-oriented classes

def data_oriented(cls: type | None = None, **_options: object) -> type | Callable[[type], type]:
    """``@qd.data_oriented``: its ``@qd.kernel`` methods take the instance as ``self`` (a
    translation-time value: each instance its own instantiation), whose fields, ndarrays and
    Python constants the kernel uses."""
    if cls is None:
        return lambda c: data_oriented(c)
    cls._qd_data_oriented = True
    cls._qd_cache_key = instance_key
    return cls


def _plain(v: object) -> bool:
    return type(v) in (int, float, bool, str, type(None)) or (type(v) is tuple and all(map(_plain, v)))


def instance_key(obj: object, seen: frozenset = frozenset()) -> tuple:
    """What of a data-oriented instance (or a Python dataclass) its kernels' translations
    depend on. A data-oriented instance: itself, the Python scalars it holds (``self.n``),
    which a kernel reads as constants, which ndarray or field each member is, as a kernel
    binds it, and the same of the instances and dataclasses it holds. A dataclass: its type
    and every member's value (an array's identity), so equal ones share a translation.
    Setting ``sim.n = 4`` or ``sim.inner.x = other_ndarray`` after a call makes the next call
    translate again with them, as Quadrants' docs describe (Quadrants 1.3.3 itself keeps
    running what it compiled for that instance with an old primitive value; with
    ``template_primitives=False`` it passes the new one)."""
    oriented = getattr(obj, "_qd_data_oriented", False)
    state = getattr(obj, "__dict__", None)
    if state is None or not oriented:  # a dataclass: its fields (with slots, no __dict__)
        state = {name: getattr(obj, name) for name, _ in dataclass_members(type(obj))}
    seen = seen | {id(obj)}
    members = []
    for k, v in sorted(state.items()):
        if _plain(v):
            members.append((k, v))
        elif isinstance(v, (Field, StructField)) or getattr(v, "_qd_bound_like_field", False):
            members.append((k, Identity(v)))
        elif id(v) not in seen and (getattr(v, "_qd_data_oriented", False) or
                                    dataclasses.is_dataclass(v) and not isinstance(v, type)):
            members.append((k, instance_key(v, seen)))
        elif not oriented:  # (an instance's other members do not change what its kernels compile to)
            try:
                hash(v)
            except TypeError:
                v = Identity(v)
            members.append((k, v))
    return (Identity(obj) if oriented else type(obj), tuple(members))


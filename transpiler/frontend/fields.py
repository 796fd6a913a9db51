"""Fields in kernels: a ``qd.field`` met as a Python value (a global, a closure variable, a
``qd.template()`` argument, an attribute of a ``@qd.data_oriented`` instance) becomes a
kernel parameter of role ``field``, one per field, named after it, that the runtime binds to
the field's storage. Its shape is known here, so ``x.shape`` and a loop over ``x`` have
constant bounds and a constant index out of range is an error at its line. A field of
structs is one field per member."""
from __future__ import annotations

import ast
import re

from ..ir import nodes as ir
from ..ir import types as T
from ..ir.walk import iter_expr
from ..lang.field import Field, StructField
from .values import CT, ArrayHandle, MatrixValue, StructValue, map_scalars


class StructArray:
    """A field of structs in a kernel: each member's array (``x.pos``), indexed together
    (``x[i]`` is a struct of the members' elements)."""

    def __init__(self, type_, members: dict, source=None):
        self.type = type_
        self.members = members
        self.source = source  # the qd.StructField it is


# The classes whose objects module_object gives back unchanged: what it tests is the class's.
_AS_THEY_ARE: set[type] = set()


class FieldLowering:
    """Field methods of KernelLowering."""

    def module_object(self, value, name: str, node):
        """``value`` as the kernel sees it: a field becomes its parameter; anything else is
        unchanged."""
        if not isinstance(value, CT):
            return value
        obj = value.value
        if type(obj) in _AS_THEY_ARE:  # (`qd`, a @qd.func, a number: every global name a kernel reads)
            return value
        if getattr(type(obj), "_qd_host_matrix", False):  # (the class: an object's own __getattr__ may be costly)
            return self.host_matrix(obj, node)
        if isinstance(obj, Field) or _is_ndarray_object(obj):
            return ArrayHandle(self.field_param(obj, name, node))
        if isinstance(obj, StructField):
            return self.struct_array(obj, name, node)
        _AS_THEY_ARE.add(type(obj))
        return value

    def host_matrix(self, obj, node) -> MatrixValue:
        """A vector or matrix built in Python scope (a global, a closure value, a member of a
        data-oriented instance): a constant of its declared dtype, else of its values' types."""
        if obj.ndim not in (1, 2) or max(obj.shape) > 32:  # (a reshaped one: kernels have 1- and 2-d, up to 32)
            raise self.error(node, f"a Python-scope vector or matrix of shape {obj.shape} cannot be a kernel constant",
                             hint="pass it as an ndarray or field argument instead")
        items = [CT(x) for x in obj.reshape(-1).tolist()]
        return self.make_matrix(tuple(obj.shape), items, node, obj.qd_dtype)

    def field_param(self, field: Field, name: str, node) -> ir.Param:
        hit = self.field_params.get(id(field))
        if hit is not None:
            return hit[1]
        if not field.placed:
            raise self.error(node, f"field `{name}` has no shape yet",
                             hint="give it one: qd.field(dtype, shape=...), or qd.root.dense(qd.i, n).place(x) "
                                  "before the kernel is translated")
        # Every kernel of the module names a field the same way: its own name, else the
        # first name it was used under.
        base = field.name or getattr(field, "_qd_name", None) or re.sub(r"\W", "_", name)
        field._qd_name = base
        # (the kernel's own parameter names too: one bound later must not meet a field of its name)
        taken = {p.name for p in self.params + self.hidden_params} | self.kernel_arg_names
        pname, k = base, 1
        while pname in taken:
            pname, k = f"{base}_{k}", k + 1
        dtype = field.dtype  # a field's or a qd.ndarray's scalar type
        flags = T.python_type(dtype) or dtype
        storage = T.u8 if flags is T.bool_ else flags  # a qd.u1 field: a byte per element, as NumPy's bool
        p = ir.Param(pname, T.NdarrayType(storage, len(field.shape), field.element_shape, field.shape,
                                          bool_elements=flags is T.bool_), -1, self.loc(node), role="field")
        self.hidden_params.append(p)
        self.field_params[id(field)] = (field, p)
        snode = getattr(field, "_snode", None)
        if snode is not None and snode.sparse:
            self.sparse_fields[pname] = snode
        self.bindings[pname] = field
        return p

    def companion_param(self, array: ir.Param, kind: str, node) -> ir.Param:
        """``x.grad`` / ``x.dual`` of an ndarray parameter: a parameter of the kernel's own
        (role ``grad`` / ``dual``), bound to the argument's ``.grad`` at each call."""
        for p in self.hidden_params:
            if p.role == kind and p.of == array.name:
                return p
        taken = {p.name for p in self.params + self.hidden_params}
        pname, k = f"{array.name}_{kind}", 1
        while pname in taken:
            pname, k = f"{array.name}_{kind}_{k}", k + 1
        p = ir.Param(pname, array.type, -1, self.loc(node), role=kind, of=array.name)
        self.hidden_params.append(p)
        return p

    def struct_array(self, sf: StructField, name: str, node) -> StructArray:
        members = {}
        for k, m in sf.members.items():
            if getattr(type(m), "_qd_no_companion", False):
                continue  # an integer member of a .grad / .dual view: it has none
            sub = f"{name}_{k}"
            members[k] = self.struct_array(m, sub, node) if isinstance(m, StructField) else \
                ArrayHandle(self.field_param(m, sub, node))
        return StructArray(sf.type, members, sf)

    def field_of(self, p: ir.Param) -> Field | None:
        if p.role != "field":
            return None
        return self.bindings.get(p.name)

    def field_shape(self, p: ir.Param) -> tuple[int, ...] | None:
        f = self.field_of(p)
        return f.shape if f is not None else None

    def field_offset(self, p: ir.Param) -> tuple[int, ...] | None:
        """The index of a field's first element per dimension (None: every one 0)."""
        return getattr(self.field_of(p), "_offset", None)  # (a qd.ndarray bound like a field has none)

    def field_indices(self, array, indices: list[ir.Expr], node) -> list[ir.Expr]:
        """The storage indices of a field element: a constant index is checked against the
        field's shape here, and a field with an offset has it taken off."""
        field = self.field_of(array) if isinstance(array, ir.Param) else None
        if field is None:
            return indices
        offset = self.field_offset(array)
        for d, (e, n, o) in enumerate(zip(indices, field.shape, offset or (0,) * len(indices), strict=False)):
            if isinstance(e, ir.Const) and not o <= int(e.value) < o + n:
                where = f"shape {field.shape}" if offset is None else f"from {o} to {o + n - 1}"
                raise self.error(node, f"index {e.value} is out of range for dimension {d} of `{array.name}` "
                                       f"({where})")
        if offset is None:
            return indices
        return [e if not o else self.binop("sub", e, CT(o), node) if o > 0 else self.binop("add", e, CT(-o), node)
                for e, o in zip(indices, offset, strict=False)]

    # ------------------------------------------------------------------ fields of structs

    def struct_element(self, sa: StructArray, node: ast.Subscript) -> StructValue:
        """``x[i]`` of a field of structs: each member's element, the index lowered once."""
        indices = None
        members = {}
        for k, m in sa.members.items():
            if isinstance(m, StructArray):
                members[k] = self.struct_element(m, node)
                continue
            if indices is None:
                array, indices = self.array_index(m.array, node)
                indices = [self.once(i, node, "idx") for i in indices]
            members[k] = self.load_element(m.array, indices, node)
        return StructValue(sa.type, members)

    def load_element(self, array: ir.Param, indices: list[ir.Expr], node):
        """``array[indices]``: a scalar, or a vector / matrix of its element's components."""
        if getattr(array.type, "element_shape", ()):
            return self.array_element(array, indices, node)
        loc = self.loc(node)
        load = ir.Load(array.type.dtype, loc, array, indices)
        if getattr(array.type, "bool_elements", False):  # a qd.u1 array's byte
            return ir.Compare(T.bool_, loc, "ne", load, ir.Const(array.type.dtype, loc, 0))
        return load

    def struct_places(self, target: ast.expr):
        """The member arrays and indices a target names in a field of structs: ``x[i]``
        (every member) or ``x[i].m`` (one): [(array, indices)] with the element's shape per
        entry, or None when the target is not in one."""
        if isinstance(target, ast.Attribute):
            inner = self.struct_places(target.value)
            if inner is None:
                return None
            sa, indices = inner
            if not isinstance(sa, StructArray) or target.attr not in sa.members:
                raise self.error(target, f"the struct has no member `{target.attr}`")
            return sa.members[target.attr], indices
        if isinstance(target, ast.Subscript) and isinstance(target.value, (ast.Name, ast.Attribute)):
            base = self.expr(target.value)
            if isinstance(base, StructArray):
                first = next(struct_leaves(base))
                _, indices = self.array_index(first.array, target)
                return base, [self.once(i, target, "idx") for i in indices]
        return None

    def store_struct_place(self, place, indices: list[ir.Expr], value, target, stmt, op: str | None = None) -> None:
        """Write ``value`` into a member (or every member) of a struct-field element; with
        ``op``, update it as ``+=`` does (atomics per scalar)."""
        if isinstance(place, StructArray):
            if not isinstance(value, StructValue):
                raise self.error(target, "a struct element takes a struct value")
            if set(value.members) != set(place.members):  # (an anonymous qd.Struct names its own)
                raise self.error(target, f"the struct value's members ({', '.join(value.members)}) are not the "
                                         f"element's ({', '.join(place.members)})")
            if op is None:  # `p[i] = S(a=p[i].b, b=p[i].a)`: what reads the element is read before any store
                arrays = {id(leaf.array) for leaf in struct_leaves(place)}
                value = map_scalars(value, lambda e: self.once(e, target, "tmp") if any(
                    isinstance(n, ir.Load) and id(n.array) in arrays for n in iter_expr(e)) else e)
            for k, m in place.members.items():
                self.store_struct_place(m, indices, value.members[k], target, stmt, op)
            return
        array = place.array
        if array.type.element_shape:
            _, places, shape = self.whole_element(array, indices, target)
            if op is None:
                self.store_places(array, places, shape, value, target, stmt)
            else:
                self.update_places(array, places, shape, op, value, target, stmt)
            return
        if op is None:
            e = self.coerce(self.to_expr(value, target), array.type.dtype, target)
            self.emit(ir.Store(self.loc(stmt), array, indices, e))
        else:
            self.update_places(array, [indices], (), op, value, target, stmt)


def _is_ndarray_object(obj) -> bool:
    """A qd.ndarray met as a Python value (not passed as an argument): bound like a field."""
    return getattr(type(obj), "_qd_bound_like_field", False)


def struct_leaves(sa: StructArray):
    for m in sa.members.values():
        if isinstance(m, StructArray):
            yield from struct_leaves(m)
        else:
            yield m

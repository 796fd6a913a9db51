"""The resources every GLSL task file declares alike, and the push-constant block's layout
(std430 offsets in parameter order) that the manifest and the C++ header give the host."""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir import types as T
from ..ir.records import record
from .target import shape_arg_names

# Scalars narrower than 32 bits travel widened in the push constants: 8/16-bit push-constant
# members would need storagePushConstant8/16, which many devices lack.
PUSH_WIDENED = {"i8": "i32", "i16": "i32", "u8": "u32", "u16": "u32", "f16": "f32"}


@record
class PushMember:
    name: str      # the parameter's (or shape's) name
    dtype: str     # as the host writes it
    offset: int


@record
class Layout:
    """The resources every task file declares alike: ndarray k at binding k of set 0, every
    scalar and extent in one push-constant block (std430 offsets, parameter order)."""

    push: list[tuple[ir.Param, int | None, PushMember]]  # (param, dim or None, member)
    push_bytes: int
    bindings: dict[int, int]   # id(param) -> binding
    widened: dict[int, str]    # id(param) -> the dtype a narrow scalar travels as

    @classmethod
    def of(cls, kernel: ir.Kernel) -> Layout:
        push, offset = [], 0
        for p in kernel.params:
            if p.is_array:
                items = [(d, name, "i32") for d, name in enumerate(shape_arg_names(p))]
            else:
                items = [(None, p.name, PUSH_WIDENED.get(p.type.name, p.type.name))]
            for dim, name, dtype in items:
                size = 4 if dtype == "bool" else T.SCALARS[dtype].nbytes
                offset = -(-offset // size) * size
                push.append((p, dim, PushMember(name, dtype, offset)))
                offset += size
        bindings = {id(p): k for k, p in enumerate(q for q in kernel.params if q.is_array)}
        widened = {id(p): m.dtype for p, dim, m in push if dim is None and m.dtype != p.type.name}
        return cls(push, offset, bindings, widened)

    def members_of(self, p: ir.Param) -> list[tuple[int | None, PushMember]]:
        return [(dim, m) for q, dim, m in self.push if q is p]

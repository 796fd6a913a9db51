"""The host ABI tables the C++ embedding header (header.py) and each target's
``header_context`` share: the host C++ type and size of every manifest dtype, a parameter
struct laid out as the target binds it, and the table of buffers. Here, below both, so that
the targets need nothing from the header module that renders them."""
from __future__ import annotations

# Host C++ types for manifest dtypes. C++17 has no half type, so an f16 travels as its
# IEEE binary16 bits; a GLSL bool in a push-constant block is a 32-bit word.
HOST_TYPES = {"bool": "bool", "i8": "std::int8_t", "i16": "std::int16_t", "i32": "std::int32_t",
              "i64": "std::int64_t", "u8": "std::uint8_t", "u16": "std::uint16_t", "u32": "std::uint32_t",
              "u64": "std::uint64_t", "f16": "std::uint16_t", "f32": "float", "f64": "double"}
HOST_SIZES = {"bool": 1, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "f16": 2, "i32": 4, "u32": 4, "f32": 4,
              "i64": 8, "u64": 8, "f64": 8}
GLSL_PUSH_TYPES = dict(HOST_TYPES, bool="std::uint32_t")
GLSL_PUSH_SIZES = dict(HOST_SIZES, bool=4)


def struct_layout(fields: list[tuple[str, str, int, int]]) -> list[dict]:
    """Struct members (name, C++ type, size, offset) in offset order, with explicit padding
    wherever the target's offset is beyond where C++ would put the member; 8-byte members
    get alignas(8) so the layout also holds where int64/double align to 4 (i386)."""
    out, at, pad = [], 0, 0
    for name, ctype, nbytes, offset in sorted(fields, key=lambda f: f[3]):
        natural = -(-at // nbytes) * nbytes
        if offset < natural:
            raise ValueError(f"member {name} at offset {offset} overlaps the previous one (ends at {at})")
        if offset > natural:
            out.append({"name": f"qd_pad{pad}", "ctype": "std::uint8_t", "array": offset - at, "offset": at,
                        "align": 0, "padding": True})
            pad += 1
        out.append({"name": name, "ctype": ctype, "array": 0, "offset": offset,
                    "align": 8 if nbytes == 8 else 0, "padding": False})
        at = offset + nbytes
    return out


def buffer_table(ctx: dict, index_key: str) -> list[dict]:
    """The header's buffers: each ndarray parameter of the header's context ``ctx``, at the
    place the target binds it (``index_key``: its binding, buffer index or argument index)."""
    return [{"name": p["cxx"], "index": p[index_key], "dtype": p["dtype"], "ndim": p["ndim"],
             "element_bytes": p.get("element_stride", HOST_SIZES[p["dtype"]]), "role": p.get("role", "")}
            for p in ctx["params"] if p["kind"] == "ndarray"]

"""The lowering tables (`cli.py targets`, `docs/lowering.md`): for every atomic op, dtype and
memory space, and for fences and volatile loads, what each target emits. Every cell is
produced by translating a one-statement kernel through the real code path, so the table
cannot drift from the code."""
from __future__ import annotations

import inspect
import os

from .errors import TranspileError
from .ir import nodes as ir
from .ir import types as T
from .lang import qd
from .passes.legalize import UINT_OF_WIDTH
from .pipeline import translate, translate_ir
from .targets import TARGETS, get_target

OPS = ("add", "sub", "mul", "min", "max", "and", "or", "xor", "exchange", "cas")
DTYPES = (T.i32, T.u32, T.i64, T.u64, T.f16, T.f32, T.f64)
SPACES = ("global", "shared")
LOC = ir.Loc("lowering.py", 1, 0)

def _atomic_kernel(op: str, t: T.DType, space: str) -> ir.Kernel:
    arr = ir.Param("a", T.NdarrayType(t, 1), 0, LOC)
    i = ir.Local("i", T.i32, LOC, loop_var=True)
    idx = [ir.LocalRef(T.i32, LOC, i)]
    value = ir.Const(t, LOC, 1.0 if t.is_float else 1)
    shared: list[ir.SharedArray] = []
    target: ir.Array = arr
    if space == "shared":
        target = ir.SharedArray("s", T.SharedArrayType(t, (128,)), LOC)
        shared.append(target)
    expected = ir.Const(t, LOC, 0) if op == "cas" else None
    real_op = "add" if op == "sub" else op
    atomic = ir.Atomic(t, LOC, real_op, target, idx, value if op != "sub" else ir.Const(t, LOC, -1), expected)
    body = [ir.Store(LOC, arr, idx, atomic)] if space == "global" else \
        [ir.DeclareShared(LOC, target), ir.Store(LOC, arr, idx, atomic)]
    task = ir.Task("k", "parallel", [i], [(ir.Const(T.i32, LOC, 0), ir.Const(T.i32, LOC, 128))], 128, body, LOC,
                   shared=shared)
    return ir.Kernel("k", "lowering.py", LOC, [arr], [task])


def all_atomics_kernel(target_name: str, space: str) -> ir.Kernel:
    """One kernel holding every (op, dtype) atomic the target accepts in ``space``: what the
    test suite compiles with each real toolchain (one compile per target and space)."""
    params, body, shared = [], [], []
    i = ir.Local("i", T.i32, LOC, loop_var=True)
    idx = [ir.LocalRef(T.i32, LOC, i)]
    for t in DTYPES:
        ops = [op for op in OPS if not atomic_cell(target_name, op, t, space).startswith("error")]
        if not ops:
            continue
        arr = ir.Param(f"a_{t.name}", T.NdarrayType(t, 1), len(params), LOC)
        params.append(arr)
        target: ir.Array = arr
        if space == "shared":
            target = ir.SharedArray(f"s_{t.name}", T.SharedArrayType(t, (128,)), LOC)
            shared.append(target)
            body.append(ir.DeclareShared(LOC, target))
        for op in ops:
            one = ir.Const(t, LOC, 1.0 if t.is_float else 1)
            expected = ir.Const(t, LOC, 0) if op == "cas" else None
            atomic = ir.Atomic(t, LOC, "add" if op == "sub" else op, target, idx, one, expected)
            body.append(ir.Store(LOC, arr, idx, atomic))
    task = ir.Task("atomics", "parallel", [i], [(ir.Const(T.i32, LOC, 0), ir.Const(T.i32, LOC, 128))], 128, body,
                   LOC, shared=shared)
    return ir.Kernel("atomics", "lowering.py", LOC, params, [task])


def _frontend_rejects(op: str, t: T.DType) -> str | None:
    """What the frontend refuses for every target (the seed's rules)."""
    if op in ("and", "or", "xor") and t.is_float:
        return "error: bitwise atomics need an integer element"
    if op == "cas" and t.is_float:
        return "error: compare-and-swap needs an integer element"
    return None


def atomic_cell(target_name: str, op: str, t: T.DType, space: str, options: dict | None = None) -> str:
    """How one atomic lowers: the one-statement kernel goes through the real pipeline (so a
    rejection anywhere shows), then the dialect's own tables name the form and function."""
    rejected = _frontend_rejects(op, t)
    if rejected:
        return rejected
    target = get_target(target_name)
    try:
        translate_ir(_atomic_kernel(op, t, space), target, options)
    except TranspileError as exc:
        return "error: " + exc.message.split(": ", 1)[-1] if ": " in exc.message else "error: " + exc.message
    dialect, real_op = target.dialect, "add" if op == "sub" else op
    form = dialect.atomic_support(real_op, t, space, LOC)
    if form == "native":
        return f"native (`{dialect.atomic_name(real_op, t, space)}`)"
    uint = UINT_OF_WIDTH[t.bits] if t.is_float else t
    if form == "bits":
        return f"native on the bits (`{dialect.atomic_name(real_op, uint, space)}`)"
    if form == "word":
        return f"CAS loop on its 32-bit word (`{dialect.atomic_name('cas', T.u32, space)}`)"
    if form == "wide":
        return f"CAS loop on a 32-bit word per element (`{dialect.atomic_name('cas', T.u32, space)}`)"
    return f"CAS loop (`{dialect.atomic_name('cas', uint, space)}`)"


def atomic_table(target_name: str) -> list[list[str]]:
    rows = []
    for space in SPACES:
        for op in OPS:
            rows.append([f"{op} ({space})"] + [atomic_cell(target_name, op, t, space) for t in DTYPES])
    return rows


def markdown() -> str:
    out = ["# Lowering tables", "",
           "Generated by `python cli.py targets --markdown` from the code's own tables (each cell is the",
           "translation of a one-statement kernel); `tests/test_atomics.py` checks this file is current.",
           "Atomics are device scope everywhere and return the old value; `atomic_sub(x, y)` is",
           "`atomic_add(x, -y)`.", ""]
    for target in TARGETS:
        out += [f"## {target}", "", "| op (memory) | " + " | ".join(t.name for t in DTYPES) + " |",
                "|---|" + "---|" * len(DTYPES)]
        for row in atomic_table(target):
            out.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        out += ["", "Memory order, and why:", ""]
        out += [f"- {note}" for note in get_target(target).evidence]
        out.append("")
    shown = ("cuda", "glsl", "msl")
    out += ["## Vectors, matrices and structs", ""]
    out += [f"- {note}" for note in VECTOR_NOTES]
    out += ["", "What each line of an example kernel (`vectors` in `transpiler/lowering_tables.py`) becomes:", "",
            "| Python | " + " | ".join(shown) + " |", "|---|" + "---|" * len(shown)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in vector_rows(shown)]
    out += ["", "## Fields", ""]
    out += [f"- {note}" for note in FIELD_NOTES]
    out += ["", "## Integer and float arithmetic", ""]
    out += [f"- {note}" for note in ARITHMETIC_NOTES]
    out.append("")
    return "\n".join(out)


# ----------------------------------------------------------------------------- vectors

VECTOR_NOTES = (
    "A vector, matrix or struct is lowered to its scalars in the frontend: a local is one variable per "
    "component (`v_x`, `m_0_1`, `p_pos_x`), every operation is written out per component, and the "
    "target compiler sees plain scalar code. NVIDIA and AMD GPUs have no f32 vector ALU (a lane "
    "computes one scalar; CUDA's `float3` is a struct with no arithmetic of its own), so vector types "
    "would be scalarized by the compiler anyway; written out, the code reads the same on every target, "
    "keeps `precise` per value on GLSL and needs no per-language vector spelling.",
    "An ndarray of vectors or matrices is laid out as NumPy lays out its `(*shape, *element_shape)` "
    "array: the element's scalars last, packed, so one host buffer binds on every target. The "
    "language's own vector types are not used for memory: GLSL std430 aligns `vec3` arrays to 16 bytes "
    "and Metal's `float3` is 16 bytes. The manifest gives each such parameter `element_shape` and "
    "`element_stride` (bytes).",
    "`a[i] += v` and `qd.atomic_*(a[i], v)` on a vector element are one atomic per component (each "
    "component is atomic, the element as a whole is not, as in Quadrants). A kernel parameter of a "
    "vector, matrix or struct type is passed by value as its scalars, each a parameter "
    "(`gravity_x`, `gravity_y`, ...); a Python dataclass parameter as its members (`state_pos`, ...).",
    "Operands read more than once (the rows of `@`, a norm divided into every component, a scalar "
    "broadcast that is more than a name) are computed once into a temporary first.",
)


FIELD_NOTES = (
    "A field (`qd.field`) is a buffer the kernel takes as a parameter of role `field` on every target "
    "(a pointer on CUDA/HIP, a storage buffer binding on Vulkan, a `device` buffer on Metal), named "
    "after the field, with its shape written into the code as constants (`x[i * 64 + j]`, loops to "
    "`< 4096`): nothing about its extents is passed. Why not a `__device__` global array on CUDA/HIP: "
    "each kernel is its own module (its own NVRTC/hipRTC compile, its own file for GLSL), so a global "
    "would be one copy per module, not one per field; as a parameter, every kernel of a Python module "
    "binds the same buffer by name (the manifest's `fields`, the header's `fields` table), the Python "
    "runtimes keep it across calls, and the four targets bind it the same way.",
    "Sparse levels (`qd.root.pointer`, `.bitmasked`, `.dynamic`) are emulated on dense storage, the "
    "same way on every target, so nothing in the text depends on a runtime allocator: a field under "
    "them holds a value per element, as a dense one does; each pointer or bitmasked level adds a "
    "field of its own, an `i32` per cell (`x_active`, shaped as the level), and each dynamic level an "
    "`i32` length per list (`x_length`, shaped as its parent). A write `x[i, j] = v` (or an atomic on "
    "it) is preceded by `x_active[(i >> 3) * 8 + (j >> 3)] = 1;`, a plain store: threads that race "
    "store the same value (a dynamic list's length is raised with an atomic max). A struct-for over "
    "the field starts with `if (!(x_active[...] != 0)) continue;`, and writes to `x[i, j]` inside it "
    "skip the store, since the cell is active already. `qd.deactivate` clears the mask and, for a "
    "pointer cell or a dynamic list, zero-fills what it holds with a loop over the cell's elements "
    "(Quadrants hands recycled memory back zeroed; a bitmasked cell keeps its data, as there). "
    "`qd.append` is an `atomicAdd` on the length, and a store when the slot is below the capacity. "
    "The cost is the dense field's memory plus a mask per cell, and one extra store per write outside "
    "a struct-for.",
)


ARITHMETIC_NOTES = (
    "Fixed-width integers wrap, as in Quadrants. C++ (CUDA, HIP, MSL) leaves signed overflow "
    "undefined and NVRTC, hipcc and Metal optimize on that (a fuzz run on an H200 found 24 wrong "
    "results from it), so signed `+`, `-`, `*`, negation, `abs`, `**` and subgroup sums that may "
    "overflow are written in the unsigned type: `int32_t(uint32_t(a) * 3u + 7u)`. Where the operands' "
    "ranges prove the result fits (thread indices, small constants, widened 8/16-bit values, loop "
    "variables, whose range is their loop's: `i + 1` below an extent, `i * 100` over a field's 16 "
    "rows) and in index arithmetic (array subscripts and loop bounds, where "
    "overflow is out of bounds whatever the spelling) the plain spelling stays. GLSL needs neither: "
    "SPIR-V's integer arithmetic wraps. The CPU executors compile with signed-overflow traps, so an "
    "overflow the emitted text failed to avoid stops with its Python line instead of wrapping quietly. "
    "C++ computes 8- and 16-bit integers in `int`, and before C++20 shifting a negative value left is "
    "undefined too: a `u16 * u16` product (which can leave `int`), a narrow signed result that can leave "
    "its own type, and a signed or narrow `<<` are also written in unsigned arithmetic "
    "(`uint16_t(uint32_t(a) * uint32_t(b))`, `int32_t(uint32_t(x) << 5)`; a fuzz run on an H100 found "
    "these). The CPU emulator compiles with clang++-19 where it exists: its UBSan sees the `int` overflow "
    "of `u16 * u16`, which g++ hides by narrowing the product first.",
    "Three vendor-compiler bugs are worked around in the text. lavapipe (Mesa 22.3) compared `int64_t(x)` "
    "of an `int` with a constant as if `x` were huge, so GLSL widens a signed 32-bit value to 64 bits as "
    "its two words (`qd_widen`: `packInt2x32(ivec2(x, x >> 31))`). ptxas 12.9 takes the result of "
    "`neg.s16` as still sign-extended, so `-(-32768)` read back as `+32768` in a later shift, compare or "
    "widening; CUDA negates `i16` in 32 bits through `qd_neg` (one `neg.s32` in inline PTX). And the "
    "GLSL that the Python runtime compiles for lavapipe (the `lavapipe` option; what `emit` writes is "
    "unchanged) leaves loops only through their condition, on a flag: Mesa 22.3 read 0 from "
    "`weight[k]` after `while (parent[k] >= 0) k = parent[k];` in every lane but the last to leave, "
    "so a `break` sets the loop's flag and continues, and a `while` is "
    "`for (bool qd_go = cond; qd_go; qd_go = !qd_break && (cond))`.",
    "Floats: `a * b + c` is not fused into an fma unless `fast_math` is asked for: GLSL marks values "
    "`precise`, CUDA's manifest lists `--fmad=false` among its NVRTC options and HIP's "
    "`-ffp-contract=off`, Metal's says `fast_math: false`; so every target rounds as NumPy does.",
    "Python's `//` and `%` floor, C's `/` and `%` truncate: integer `//` and `%` are helpers "
    "(`qd_floordiv`, `qd_mod`) unless both sides are known non-negative, when C's operators compute the "
    "same (by a power of two: a shift and a mask). Known non-negative: constants, extents, thread "
    "indices, loop variables over non-negative ranges, sums and products whose range stays non-negative "
    "(`(i + 1) % 16` of a field's index is `(i + 1) & 15`), and a local assigned once from such a value, "
    "unless the function passes it to a `@qd.func`'s `qd.template()` parameter, a `@qd.real_func`'s "
    "`qd.ref` one, or a call the frontend cannot see into: those may assign it.",
)


vec3, mat3 = qd.math.vec3, qd.math.mat3


# The kernel the table shows line by line (vector_rows reads its body from the third line on).
@qd.kernel
def vectors(p: qd.types.ndarray(dtype=vec3, ndim=1), m: qd.types.ndarray(dtype=mat3, ndim=1)):  # noqa: ANN201 - a kernel's return annotation is its kernel return type
    for i in range(p.shape[0]):
        a = p[i]
        b = a * 2.0 + 1.0
        c = a.cross(b)
        r = m[i] @ c
        p[i] = r.normalized() * a.dot(b)
        p[0] += r


def vector_rows(targets: tuple[str, ...]) -> list[list[str]]:
    """Each line of the example kernel body and what every target writes for it, taken from
    the translation by the `// file:LINE` comments."""
    lines, first = inspect.getsourcelines(vectors.fn)
    body = [(first + k, text.strip()) for k, text in enumerate(lines) if k >= 3 and text.strip()]
    file = os.path.basename(inspect.getsourcefile(vectors.fn))
    emitted = {}
    for name in targets:
        source = "\n".join(translate(vectors, name, warn=False).sources.values())
        emitted[name] = source.splitlines()
    rows = []
    for line, python in body:
        mark = f"  // {file}:{line}"
        cells = []
        for name in targets:
            found = [t.strip()[:-len(mark)].strip() for t in emitted[name] if t.endswith(mark)]
            cells.append("<br>".join(f"`{t}`" for t in found) or "(none)")
        rows.append([f"`{python}`"] + cells)
    return rows

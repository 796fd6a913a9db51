"""What every device-wide algorithm shares: the tile size, the capacity check, typed loads
and stores through the caller's ``u32`` / ``u64`` scratch, and the per-level counts and
offsets of the fixed-depth staircase (written in the kernel language, like blocklib)."""
from __future__ import annotations

from .. import qd
from ..kernel import comptime

BLOCK_DIM = 256          # threads per block and elements per tile in every phase
ITEMS = 16               # elements per thread in the tiles of the device reduce and scan
TILE_SHIFT = 12          # log2(TILE)
TILE = BLOCK_DIM * ITEMS
MAX_LOG256_MAX_N = 4     # 256 ** 4 == 2 ** 32 already exceeds an i32 index
SCALAR_DTYPES = ("i32", "u32", "f32", "i64", "u64", "f64")

block = qd.simt.block


@comptime
def depth_problem(log256_max_n) -> str:
    """Why ``log256_max_n`` is not a usable capacity ('' when it is)."""
    if isinstance(log256_max_n, bool) or not isinstance(log256_max_n, int):
        return (f"log256_max_n must be an int known at translation time (1 to {MAX_LOG256_MAX_N}), got "
                f"{log256_max_n!r}: the number of phases is fixed when the kernel is translated")
    if not 1 <= log256_max_n <= MAX_LOG256_MAX_N:
        return (f"log256_max_n={log256_max_n} is out of range: it must be 1 to {MAX_LOG256_MAX_N} (capacity "
                f"256 ** log256_max_n; 256 ** 4 == 2 ** 32 already covers every i32-indexed array)")
    return ""


@comptime
def dtype_problem(dtype, what: str, allowed: tuple = SCALAR_DTYPES) -> str:
    """Why ``dtype`` is not one the algorithm handles ('' when it is)."""
    name = getattr(dtype, "name", None)
    if name not in allowed:
        return (f"{what} must be one of {', '.join('qd.' + a for a in allowed)}, got {name or dtype!r} "
                f"(narrower types and structs are not supported)")
    return ""


@comptime
def wide_for(dtype):
    """The scratch dtype a value of ``dtype`` travels through: u32 for 4 bytes, u64 for 8."""
    return qd.u32 if dtype.bits == 32 else qd.u64


@comptime
def scratch_problem(scratch_dtype, want) -> str:
    if scratch_dtype != want:
        return (f"scratch must hold {want.name} here (4-byte elements stage through u32 scratch, 8-byte ones "
                f"through u64), got {scratch_dtype.name}")
    return ""


@qd.func
def tiles(count):
    """Tiles of BLOCK_DIM covering ``count`` (>= 0) elements."""
    return (count + (BLOCK_DIM - 1)) >> 8


@qd.func
def fold(a, b, op: qd.template()):
    """``op`` ("add", "min" or "max") of two values, chosen when the kernel is translated."""
    if qd.static(op == "add"):
        return a + b
    elif qd.static(op == "min"):
        return min(a, b)
    else:
        return max(a, b)


@qd.func
def block_exclusive(v, op: qd.template(), dtype: qd.template()):
    """The block's exclusive ``op`` scan of ``v`` (BLOCK_DIM threads), from the identity."""
    if qd.static(op == "add"):
        return block.exclusive_add(v, BLOCK_DIM, dtype)
    elif qd.static(op == "min"):
        return block.exclusive_min(v, BLOCK_DIM, dtype)
    else:
        return block.exclusive_max(v, BLOCK_DIM, dtype)


@qd.func
def load(src: qd.template(), index, wide: qd.template(), dtype: qd.template()):
    """``src[index]`` as ``dtype``: the bits of a scratch slot, or the caller's value."""
    if qd.static(wide is not None):
        return qd.bit_cast(src[index], dtype)
    else:
        return qd.cast(src[index], dtype)


@qd.func
def store(dst: qd.template(), index, value, wide: qd.template()):
    """``dst[index] = value``: as bits into a scratch slot, or as the caller's value."""
    if qd.static(wide is not None):
        dst[index] = qd.bit_cast(value, wide)
    else:
        dst[index] = value


def ceil_tiles_host(n: int) -> int:
    return (n + BLOCK_DIM - 1) // BLOCK_DIM


def check_depth_host(log256_max_n: int) -> None:
    problem = depth_problem(log256_max_n)
    if problem:
        raise ValueError(problem)


def natural_depth(n: int) -> int:
    """The smallest log256_max_n whose capacity covers ``n`` (host only)."""
    depth, cap = 1, BLOCK_DIM
    while cap < n:
        cap *= BLOCK_DIM
        depth += 1
    return depth


def partial_slots_host(count: int, levels: int) -> int:
    """Slots of ``levels`` stacked tile-partial levels above ``count`` elements."""
    total, c = 0, count
    for _ in range(levels):
        c = ceil_tiles_host(c)
        total += c
    return total

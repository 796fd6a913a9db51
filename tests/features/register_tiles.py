"""A register tile (qd.simt.Tile16x16): each of 16 lanes holds one row in 16 registers; a
block is loaded from an array slice, lowered by a rank-1 update whose vectors are column
slices (one subgroup shuffle per column), and stored back. The GLSL is specialized to (and
its manifest requires) subgroups of 32 lanes."""
import transpiler as qd


@qd.kernel
def register_tiles(a: qd.types.ndarray(dtype=qd.f32, ndim=2), v: qd.types.ndarray(dtype=qd.f32, ndim=2)):
    qd.loop_config(block_dim=16)
    for _ in range(16):
        t = qd.simt.Tile16x16.zeros(dtype=qd.f32)
        t[:] = a[0:16, 0:16]
        col = v[0:16, 0]
        t -= qd.outer(col, col)
        a[0:16, 0:16] = t

"""An MPM grid on untyped ndarrays, as Taichi's ndarray examples write it (``mpm88`` on
``ti.types.ndarray()``): the grid of velocities is reset with ``grid_v[i, j] = [0, 0]`` and
normalized by the grid of masses (modelled on Taichi's examples; our own code)."""
import transpiler as qd


@qd.kernel
def reset_grid(grid_v: qd.types.ndarray(), grid_m: qd.types.ndarray()):
    for i, j in grid_m:
        grid_v[i, j] = [0, 0]
        grid_m[i, j] = 0


@qd.kernel
def normalize_grid(grid_v: qd.types.ndarray(), grid_m: qd.types.ndarray(), gravity: qd.f32):
    for i, j in grid_m:
        if grid_m[i, j] > 0:
            grid_v[i, j] = grid_v[i, j] / grid_m[i, j]
            grid_v[i, j].y -= gravity * 1e-4
        if i < 3 or i > grid_m.shape[0] - 3:
            grid_v[i, j].x = 0.0


@qd.kernel
def reset_grid_typed(grid_v: qd.types.ndarray(qd.math.vec2, 2), grid_m: qd.types.ndarray(qd.f32, 2)):
    for i, j in grid_m:
        grid_v[i, j] = [0, 0]
        grid_m[i, j] = 0


@qd.kernel
def normalize_grid_typed(grid_v: qd.types.ndarray(qd.math.vec2, 2), grid_m: qd.types.ndarray(qd.f32, 2),
                         gravity: qd.f32):
    for i, j in grid_m:
        if grid_m[i, j] > 0:
            grid_v[i, j] = grid_v[i, j] / grid_m[i, j]
            grid_v[i, j].y -= gravity * 1e-4
        if i < 3 or i > grid_m.shape[0] - 3:
            grid_v[i, j].x = 0.0


@qd.kernel
def seed_grid(grid_v: qd.types.ndarray(), grid_m: qd.types.ndarray()):
    for i, j in grid_m:
        grid_v[i, j] = [grid_m[i, j] * 0.5, grid_m[i, j] - 1.0]


@qd.kernel
def seed_grid_typed(grid_v: qd.types.ndarray(qd.math.vec2, 2), grid_m: qd.types.ndarray(qd.f32, 2)):
    for i, j in grid_m:
        grid_v[i, j] = [grid_m[i, j] * 0.5, grid_m[i, j] - 1.0]

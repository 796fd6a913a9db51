"""Taichi's mpm88 as its graph/ndarray example writes it (examples/simulation/mpm88_graph.py):
every kernel takes untyped ``qd.types.ndarray()`` parameters, and the call's qd.ndarray of
``qd.math.vec2`` / ``qd.math.mat2`` / f32 types them (``grid_v[i, j] = [0, 0]`` on a 2-D ndarray
of 2-vectors). The kernels follow Taichi's (Apache-2.0, the Taichi authors), with ``qd`` for
``ti``; the driver is ours: a few substeps from random particles, checked for conservation of
mass and finite state."""
import sys

import numpy as np

import transpiler as qd

n_grid = 32
dx = 1 / n_grid
dt = 2e-4
p_rho = 1
p_vol = (dx * 0.5) ** 2
p_mass = p_vol * p_rho
gravity = 9.8
bound = 3
E = 400


@qd.kernel
def substep_reset_grid(grid_v: qd.types.ndarray(), grid_m: qd.types.ndarray()):
    for i, j in grid_m:
        grid_v[i, j] = [0, 0]
        grid_m[i, j] = 0


@qd.kernel
def substep_p2g(x: qd.types.ndarray(), v: qd.types.ndarray(), C: qd.types.ndarray(), J: qd.types.ndarray(),
                grid_v: qd.types.ndarray(), grid_m: qd.types.ndarray()):
    for p in x:
        Xp = x[p] / dx
        base = int(Xp - 0.5)
        fx = Xp - base
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        stress = -dt * 4 * E * p_vol * (J[p] - 1) / dx**2
        affine = qd.Matrix([[stress, 0], [0, stress]]) + p_mass * C[p]
        for i, j in qd.static(qd.ndrange(3, 3)):
            offset = qd.Vector([i, j])
            dpos = (offset - fx) * dx
            weight = w[i].x * w[j].y
            grid_v[base + offset] += weight * (p_mass * v[p] + affine @ dpos)
            grid_m[base + offset] += weight * p_mass


@qd.kernel
def substep_update_grid_v(grid_v: qd.types.ndarray(), grid_m: qd.types.ndarray()):
    for i, j in grid_m:
        if grid_m[i, j] > 0:
            grid_v[i, j] /= grid_m[i, j]
        grid_v[i, j].y -= dt * gravity
        if i < bound and grid_v[i, j].x < 0:
            grid_v[i, j].x = 0
        if i > n_grid - bound and grid_v[i, j].x > 0:
            grid_v[i, j].x = 0
        if j < bound and grid_v[i, j].y < 0:
            grid_v[i, j].y = 0
        if j > n_grid - bound and grid_v[i, j].y > 0:
            grid_v[i, j].y = 0


@qd.kernel
def substep_g2p(x: qd.types.ndarray(), v: qd.types.ndarray(), C: qd.types.ndarray(), J: qd.types.ndarray(),
                grid_v: qd.types.ndarray()):
    for p in x:
        Xp = x[p] / dx
        base = int(Xp - 0.5)
        fx = Xp - base
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        new_v = qd.Vector.zero(qd.f32, 2)
        new_C = qd.Matrix.zero(qd.f32, 2, 2)
        for i, j in qd.static(qd.ndrange(3, 3)):
            offset = qd.Vector([i, j])
            dpos = (offset - fx) * dx
            weight = w[i].x * w[j].y
            g_v = grid_v[base + offset]
            new_v += weight * g_v
            new_C += 4 * weight * g_v.outer_product(dpos) / dx**2
        v[p] = new_v
        x[p] += dt * v[p]
        J[p] *= 1 + dt * new_C.trace()
        C[p] = new_C


def main(argv: list[str]) -> int:
    qd.init(arch=qd.gpu)
    n_particles = int(argv[0]) if argv else 512
    rng = np.random.default_rng(5)
    x = qd.ndarray(qd.math.vec2, shape=n_particles)
    v = qd.ndarray(qd.math.vec2, shape=n_particles)
    C = qd.ndarray(qd.math.mat2, shape=n_particles)
    J = qd.ndarray(qd.f32, shape=n_particles)
    grid_v = qd.ndarray(qd.math.vec2, shape=(n_grid, n_grid))
    grid_m = qd.ndarray(qd.f32, shape=(n_grid, n_grid))
    x.from_numpy((rng.random((n_particles, 2)) * 0.4 + 0.2).astype(np.float32))
    v.from_numpy(np.tile(np.array([0, -1], np.float32), (n_particles, 1)))
    J.fill(1)
    for _ in range(20):
        substep_reset_grid(grid_v, grid_m)
        substep_p2g(x, v, C, J, grid_v, grid_m)
        substep_update_grid_v(grid_v, grid_m)
        substep_g2p(x, v, C, J, grid_v)
    substep_reset_grid(grid_v, grid_m)
    substep_p2g(x, v, C, J, grid_v, grid_m)
    mass = grid_m.to_numpy().sum()
    assert abs(mass - n_particles * p_mass) < 1e-3 * n_particles * p_mass, mass
    xs = x.to_numpy()
    assert np.isfinite(xs).all() and (xs > 0).all() and (xs < 1).all()
    print(f"mass {mass:.6f}, mean y {xs[:, 1].mean():.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Taichi's MPM-MLS in 88 lines (an APIC transfer, float atomics onto a grid).

Source: taichi-dev/taichi, python/taichi/examples/simulation/mpm88.py, commit ba0e81dce559fb63a5958bf82feb1d00c55c02fe,
Apache-2.0 (Copyright The Taichi Authors). Changed: the import (``qd`` from the corpus runner, named
``ti`` as the kernels spell it), ``ti.init`` (the runner's executor), the particles' start
(``init()`` still runs; then positions from seeded NumPy, as ``ti.random`` differs between
runtimes), and the GUI loop: 1000 substeps (20 frames of the original), then the fields are dumped.
"""
# ruff: noqa
# Tolerance: float atomics add into the grid in a different order on each executor (f32 sums
# differ in the last bits) and the block's landing grows them: 4.3e-4 of each field's largest
# value after 1000 substeps (measured against Quadrants; C the largest); 2e-3. (Before it lands,
# C, the affine velocity of a block falling at one speed, is all rounding noise.)
CORPUS_RTOL = 2e-3
STEPS = 1000  # twenty frames of the original: the block lands and bounces
# MPM-MLS in 88 lines of Taichi code, originally created by @yuanming-hu
import numpy as np

import _corpus
from _corpus import qd as ti

_corpus.init()

n_particles = 8192
n_grid = 128
dx = 1 / n_grid
dt = 2e-4

p_rho = 1
p_vol = (dx * 0.5) ** 2
p_mass = p_vol * p_rho
gravity = 9.8
bound = 3
E = 400

x = ti.Vector.field(2, float, n_particles)
v = ti.Vector.field(2, float, n_particles)
C = ti.Matrix.field(2, 2, float, n_particles)
J = ti.field(float, n_particles)

grid_v = ti.Vector.field(2, float, (n_grid, n_grid))
grid_m = ti.field(float, (n_grid, n_grid))


@ti.kernel
def substep():
    for i, j in grid_m:
        grid_v[i, j] = [0, 0]
        grid_m[i, j] = 0
    for p in x:
        Xp = x[p] / dx
        base = int(Xp - 0.5)
        fx = Xp - base
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        stress = -dt * 4 * E * p_vol * (J[p] - 1) / dx**2
        affine = ti.Matrix([[stress, 0], [0, stress]]) + p_mass * C[p]
        for i, j in ti.static(ti.ndrange(3, 3)):
            offset = ti.Vector([i, j])
            dpos = (offset - fx) * dx
            weight = w[i].x * w[j].y
            grid_v[base + offset] += weight * (p_mass * v[p] + affine @ dpos)
            grid_m[base + offset] += weight * p_mass
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
    for p in x:
        Xp = x[p] / dx
        base = int(Xp - 0.5)
        fx = Xp - base
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        new_v = ti.Vector.zero(float, 2)
        new_C = ti.Matrix.zero(float, 2, 2)
        for i, j in ti.static(ti.ndrange(3, 3)):
            offset = ti.Vector([i, j])
            dpos = (offset - fx) * dx
            weight = w[i].x * w[j].y
            g_v = grid_v[base + offset]
            new_v += weight * g_v
            new_C += 4 * weight * g_v.outer_product(dpos) / dx**2
        v[p] = new_v
        x[p] += dt * v[p]
        J[p] *= 1 + dt * new_C.trace()
        C[p] = new_C


@ti.kernel
def init():
    for i in range(n_particles):
        x[i] = [ti.random() * 0.4 + 0.2, ti.random() * 0.4 + 0.2]
        v[i] = [0, -1]
        J[i] = 1


init()
x.from_numpy((_corpus.rng().random((n_particles, 2)) * 0.4 + 0.2).astype(np.float32))
for s in range(STEPS):
    substep()
_corpus.dump(x=x, v=v, C=C, J=J)

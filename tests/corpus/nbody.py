"""Taichi's N-body gravity (3000 bodies, every pair each substep).

Source: taichi-dev/taichi, python/taichi/examples/simulation/nbody.py, commit ba0e81dce559fb63a5958bf82feb1d00c55c02fe,
Apache-2.0 (Copyright The Taichi Authors). Changed: the import (``qd`` from the corpus runner,
named ``ti`` as the kernels spell it), ``ti.init`` (the runner's executor), the bodies' start (``initialize()`` still runs; then positions and velocities from seeded NumPy, by
the same formula, as ``ti.random`` differs between runtimes) and the GUI loop: two frames of 10
substeps, then the fields are dumped.
"""
# ruff: noqa
# Tolerance: each body sums 3000 forces in f32 in the same order everywhere, but r**-3 and
# sqrt round differently (fast paths, FMA contraction): 1e-4 of each field's largest value over
# two frames (close encounters grow differences: few steps).
CORPUS_RTOL = 1e-4
FRAMES = 2
# Authored by Tiantian Liu, Taichi Graphics.
import math

import numpy as np

import _corpus
from _corpus import qd as ti

_corpus.init()

# global control
paused = ti.field(ti.i32, ())

# gravitational constant 6.67408e-11, using 1 for simplicity
G = 1

# number of planets
N = 3000
# unit mass
m = 1
# galaxy size
galaxy_size = 0.4
# planet radius (for rendering)
planet_radius = 2
# init vel
init_vel = 120

# time-step size
h = 1e-4
# substepping
substepping = 10

# center of the screen
center = ti.Vector.field(2, ti.f32, ())

# pos, vel and force of the planets
# Nx2 vectors
pos = ti.Vector.field(2, ti.f32, N)
vel = ti.Vector.field(2, ti.f32, N)
force = ti.Vector.field(2, ti.f32, N)


@ti.kernel
def initialize():
    center[None] = [0.5, 0.5]
    for i in range(N):
        theta = ti.random() * 2 * math.pi
        r = (ti.sqrt(ti.random()) * 0.6 + 0.4) * galaxy_size
        offset = r * ti.Vector([ti.cos(theta), ti.sin(theta)])
        pos[i] = center[None] + offset
        vel[i] = [-offset.y, offset.x]
        vel[i] *= init_vel


@ti.kernel
def compute_force():
    # clear force
    for i in range(N):
        force[i] = [0.0, 0.0]

    # compute gravitational force
    for i in range(N):
        p = pos[i]
        for j in range(N):
            if i != j:  # double the computation for a better memory footprint and load balance
                diff = p - pos[j]
                r = diff.norm(1e-5)

                # gravitational force -(GMm / r^2) * (diff/r) for i
                f = -G * m * m * (1.0 / r) ** 3 * diff

                # assign to each particle
                force[i] += f


@ti.kernel
def update():
    dt = h / substepping
    for i in range(N):
        # symplectic euler
        vel[i] += dt * force[i] / m
        pos[i] += dt * vel[i]


def main():
    initialize()
    # the start from seeded NumPy in place of ti.random() (as initialize() computes it)
    g = _corpus.rng()
    theta = g.random(N) * 2 * math.pi
    r = (np.sqrt(g.random(N)) * 0.6 + 0.4) * galaxy_size
    offset = r[:, None] * np.stack([np.cos(theta), np.sin(theta)], 1)
    pos.from_numpy((0.5 + offset).astype(np.float32))
    vel.from_numpy((np.stack([-offset[:, 1], offset[:, 0]], 1) * init_vel).astype(np.float32))
    for frame in range(FRAMES):
        for i in range(substepping):
            compute_force()
            update()
    _corpus.dump(pos=pos, vel=vel, force=force)


if __name__ == "__main__":
    main()

"""Taichi's FEM128: a Neo-Hookean mesh, forces from the energy's gradient (``ti.ad.Tape``).

Source: taichi-dev/taichi, python/taichi/examples/simulation/fem128.py, commit ba0e81dce559fb63a5958bf82feb1d00c55c02fe,
Apache-2.0 (Copyright The Taichi Authors). Changed: the import (``qd`` from the corpus runner,
named ``ti`` as the kernels spell it), ``ti.init`` (the runner's executor), and the GUI loop: the mouse replayed as held at a fixed point (the attractor,
which calls ``normalized(1e-5)``), two frames of 50 steps, then positions and velocities are
dumped (not phi and U: near rest each face's energy is a difference of terms near mu = 1.7e4, all
rounding noise; Quadrants' own CPU and Vulkan backends disagree on them by 100%).
"""
# ruff: noqa
# Tolerance: the forces are the gradient of that noisy energy (a stiff f32 solve near rest):
# after two frames Quadrants' own CPU and Vulkan backends differ by 2.9e-4 of the largest
# velocity, this project's executors from Quadrants' CPU by 5.2e-4 and from each other by 1e-6
# or less (measured); 2e-3 of each field's largest value.
CORPUS_RTOL = 2e-3
FRAMES = 2
import numpy as np

import _corpus
from _corpus import qd as ti

_corpus.init()

N = 12
dt = 5e-5
dx = 1 / N
rho = 4e1
NF = 2 * N**2  # number of faces
NV = (N + 1) ** 2  # number of vertices
E, nu = 4e4, 0.2  # Young's modulus and Poisson's ratio
mu, lam = E / 2 / (1 + nu), E * nu / (1 + nu) / (1 - 2 * nu)  # Lame parameters
ball_pos, ball_radius = ti.Vector([0.5, 0.0]), 0.31
damping = 14.5

pos = ti.Vector.field(2, float, NV, needs_grad=True)
vel = ti.Vector.field(2, float, NV)
f2v = ti.Vector.field(3, int, NF)  # ids of three vertices of each face
B = ti.Matrix.field(2, 2, float, NF)
F = ti.Matrix.field(2, 2, float, NF, needs_grad=True)
V = ti.field(float, NF)
phi = ti.field(float, NF)  # potential energy of each face (Neo-Hookean)
U = ti.field(float, (), needs_grad=True)  # total potential energy

gravity = ti.Vector.field(2, float, ())
attractor_pos = ti.Vector.field(2, float, ())
attractor_strength = ti.field(float, ())


@ti.kernel
def update_U():
    for i in range(NF):
        ia, ib, ic = f2v[i]
        a, b, c = pos[ia], pos[ib], pos[ic]
        V[i] = abs((a - c).cross(b - c))
        D_i = ti.Matrix.cols([a - c, b - c])
        F[i] = D_i @ B[i]
    for i in range(NF):
        F_i = F[i]
        log_J_i = ti.log(F_i.determinant())
        phi_i = mu / 2 * ((F_i.transpose() @ F_i).trace() - 2)
        phi_i -= mu * log_J_i
        phi_i += lam / 2 * log_J_i**2
        phi[i] = phi_i
        U[None] += V[i] * phi_i


@ti.kernel
def advance():
    for i in range(NV):
        acc = -pos.grad[i] / (rho * dx**2)
        g = gravity[None] * 0.8 + attractor_strength[None] * (attractor_pos[None] - pos[i]).normalized(1e-5)
        vel[i] += dt * (acc + g * 40)
        vel[i] *= ti.exp(-dt * damping)
    for i in range(NV):
        # ball boundary condition:
        disp = pos[i] - ball_pos
        disp2 = disp.norm_sqr()
        if disp2 <= ball_radius**2:
            NoV = vel[i].dot(disp)
            if NoV < 0:
                vel[i] -= NoV * disp / disp2
        cond = (pos[i] < 0) & (vel[i] < 0) | (pos[i] > 1) & (vel[i] > 0)
        # rect boundary condition:
        for j in ti.static(range(pos.n)):
            if cond[j]:
                vel[i][j] = 0
        pos[i] += dt * vel[i]


@ti.kernel
def init_pos():
    for i, j in ti.ndrange(N + 1, N + 1):
        k = i * (N + 1) + j
        pos[k] = ti.Vector([i, j]) / N * 0.25 + ti.Vector([0.45, 0.45])
        vel[k] = ti.Vector([0, 0])
    for i in range(NF):
        ia, ib, ic = f2v[i]
        a, b, c = pos[ia], pos[ib], pos[ic]
        B_i_inv = ti.Matrix.cols([a - c, b - c])
        B[i] = B_i_inv.inverse()


@ti.kernel
def init_mesh():
    for i, j in ti.ndrange(N, N):
        k = (i * N + j) * 2
        a = i * (N + 1) + j
        b = a + 1
        c = a + N + 2
        d = a + N + 1
        f2v[k + 0] = [a, b, c]
        f2v[k + 1] = [c, d, a]


def paint_phi(gui):
    pos_ = pos.to_numpy()
    phi_ = phi.to_numpy()
    f2v_ = f2v.to_numpy()
    a, b, c = pos_[f2v_[:, 0]], pos_[f2v_[:, 1]], pos_[f2v_[:, 2]]
    k = phi_ * (10 / E)
    gb = (1 - k) * 0.5
    gui.triangles(a, b, c, color=ti.rgb_to_hex([k + gb, gb, gb]))


def main():
    init_mesh()
    init_pos()
    gravity[None] = [0, -1]
    # the mouse, replayed: the left button held at a fixed point (attractor_strength 1)
    attractor_pos[None] = [0.3, 0.7]
    attractor_strength[None] = 1
    for frame in range(FRAMES):
        for i in range(50):
            with ti.ad.Tape(loss=U):
                update_U()
            advance()
    _corpus.dump(pos=pos, vel=vel)


if __name__ == "__main__":
    main()

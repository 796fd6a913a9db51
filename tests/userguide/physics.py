"""Vectors, matrices and structs as physics code writes them: a Taichi-style particle step
(advection, a mat3 stress term, collision with the floor and a sphere) and a Genesis-style
kernel taking its state as a dataclass of ndarrays and its options as a struct."""
import dataclasses

import numpy as np

import transpiler as qd
from userguide.cases import case

vec3 = qd.math.vec3
mat3 = qd.math.mat3


@qd.func
def collide(p, v, center, radius):
    d = p - center
    dist = d.norm()
    n = d / dist
    vn = v.dot(n)
    if dist < radius and vn < 0.0:
        v -= vn * n
    return v


@qd.kernel
def particle_step(x: qd.types.ndarray(dtype=vec3, ndim=1), v: qd.types.ndarray(dtype=vec3, ndim=1),
                  F: qd.types.ndarray(dtype=mat3, ndim=1), dt: qd.f32) -> None:
    for p in range(x.shape[0]):
        stress = F[p] @ F[p].transpose() - qd.Matrix.identity(qd.f32, 3)
        vel = v[p] + dt * (vec3(0.0, -9.8, 0.0) - stress @ v[p])
        vel = collide(x[p], vel, vec3(0.5, 0.5, 0.5), 0.2)
        pos = x[p] + dt * vel
        if pos.y < 0.0:
            pos.y = 0.0
            vel.y = -0.5 * vel.y
        x[p] = pos
        v[p] = vel
        F[p] = (qd.Matrix.identity(qd.f32, 3) + dt * vel.outer_product(vec3(1.0))) @ F[p]


def _collide(p, v, c, r):
    d = p - c
    dist = np.linalg.norm(d, axis=1, keepdims=True)
    n = d / dist
    vn = (v * n).sum(1, keepdims=True)
    hit = (dist < r) & (vn < 0)
    return np.where(hit, v - vn * n, v)


@case(particle_step)
def _(rng):
    n = 512
    x = rng.random((n, 3)).astype(np.float32)
    v = rng.standard_normal((n, 3)).astype(np.float32)
    F = (np.eye(3) + 0.05 * rng.standard_normal((n, 3, 3))).astype(np.float32)
    X, V, FF = x.astype(np.float64), v.astype(np.float64), F.astype(np.float64)
    dt = 0.01
    stress = FF @ FF.transpose(0, 2, 1) - np.eye(3)
    vel = V + dt * (np.array([0, -9.8, 0]) - np.einsum("nij,nj->ni", stress, V))
    vel = _collide(X, vel, np.array([0.5, 0.5, 0.5]), 0.2)
    pos = X + dt * vel
    low = pos[:, 1] < 0
    pos[low, 1] = 0.0
    vel[low, 1] *= -0.5
    F_new = (np.eye(3) + dt * vel[:, :, None] * np.ones(3)[None, None, :]) @ FF

    def check(_):
        np.testing.assert_allclose(x, pos, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(v, vel, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(F, F_new, rtol=1e-4, atol=1e-5)
    return (x, v, F, dt), check


@dataclasses.dataclass(frozen=True)
class RigidState:
    pos: qd.types.NDArray[vec3, 1]
    vel: qd.types.NDArray[vec3, 1]
    inv_mass: qd.types.NDArray[qd.f32, 1]
    contacts: qd.types.NDArray[qd.i32, 1]


SolverOptions = qd.types.struct(gravity=vec3, dt=qd.f32, floor=qd.f32, restitution=qd.f32)


@qd.kernel
def rigid_step(state: RigidState, opts: SolverOptions) -> None:
    for i in range(state.pos.shape[0]):
        if state.inv_mass[i] > 0.0:
            vel = state.vel[i] + opts.gravity * opts.dt
            pos = state.pos[i] + vel * opts.dt
            if pos.z < opts.floor:
                pos.z = opts.floor
                vel.z = -opts.restitution * vel.z
                state.contacts[0] += 1
            state.pos[i] = pos
            state.vel[i] = vel


@case(rigid_step)
def _(rng):
    n = 700
    pos = rng.random((n, 3)).astype(np.float32) * 0.2
    vel = rng.standard_normal((n, 3)).astype(np.float32)
    inv_mass = np.where(rng.random(n) < 0.2, 0.0, rng.random(n) + 0.5).astype(np.float32)
    contacts = np.zeros(1, np.int32)
    opts = SolverOptions(gravity=np.array([0, 0, -9.81], np.float32), dt=0.02, floor=0.05, restitution=0.5)
    movable = inv_mass > 0
    v2 = vel + np.array([0, 0, -9.81], np.float32) * np.float32(0.02)
    p2 = pos + v2 * np.float32(0.02)
    low = p2[:, 2] < 0.05
    p2[low, 2] = 0.05
    v2[low, 2] *= -0.5
    want_pos = np.where(movable[:, None], p2, pos)
    want_vel = np.where(movable[:, None], v2, vel)
    hits = int((low & movable).sum())

    def check(_):
        np.testing.assert_allclose(pos, want_pos, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(vel, want_vel, rtol=1e-5, atol=1e-6)
        assert contacts[0] == hits
    return (RigidState(pos, vel, inv_mass, contacts), opts), check

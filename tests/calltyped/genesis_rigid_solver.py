"""Genesis-style rigid-solver kernels, typed by their calls: a ``@qd.data_oriented`` solver built
inside ``main()`` (as Genesis's ``RigidSolver`` is, by the scene), whose kernels take the batched
state as untyped ndarrays, ``envs_idx: qd.types.ndarray()`` used as an index, a static config as
``qd.template()`` (read through ``qd.static``) and ``use_fast_path: qd.template()``. Modelled on
genesis/engine/solvers/rigid/rigid_solver.py (kernel_set_dofs_position, kernel_get_dofs_position,
the integrator's velocity update); the solver, data and driver are ours. Checked against NumPy."""
import sys

import numpy as np

import transpiler as qd


class StaticRigidSimConfig:
    """What Genesis passes as ``static_rigid_sim_config``: Python values its kernels read with
    qd.static (one translation per config)."""

    def __init__(self, n_dofs: int, use_gravity: bool, substeps: int):
        self.n_dofs = n_dofs
        self.use_gravity = use_gravity
        self.substeps = substeps


@qd.kernel
def kernel_set_dofs_position(position: qd.types.ndarray(), dofs_idx: qd.types.ndarray(),
                             envs_idx: qd.types.ndarray(), dofs_pos: qd.types.ndarray()):
    for i_d_, i_b_ in qd.ndrange(dofs_idx.shape[0], envs_idx.shape[0]):
        dofs_pos[envs_idx[i_b_], dofs_idx[i_d_]] = position[i_b_, i_d_]


@qd.kernel
def kernel_get_dofs_position(tensor: qd.types.ndarray(), dofs_idx: qd.types.ndarray(),
                             envs_idx: qd.types.ndarray(), dofs_pos: qd.types.ndarray()):
    for i_d_, i_b_ in qd.ndrange(dofs_idx.shape[0], envs_idx.shape[0]):
        tensor[i_b_, i_d_] = dofs_pos[envs_idx[i_b_], dofs_idx[i_d_]]


@qd.data_oriented
class RigidSolver:
    def __init__(self, n_envs: int, config: StaticRigidSimConfig):
        self.n_envs = n_envs
        self.config = config
        self.dofs_vel = qd.field(qd.f32, shape=(n_envs, config.n_dofs))
        self.dofs_acc = qd.field(qd.f32, shape=(n_envs, config.n_dofs))

    @qd.kernel
    def kernel_update_vel(self, dofs_pos: qd.types.ndarray(), force: qd.types.ndarray(), dt: qd.f32,
                          static_rigid_sim_config: qd.template(), use_fast_path: qd.template()):
        for i_b, i_d in qd.ndrange(self.n_envs, static_rigid_sim_config.n_dofs):
            acc = force[i_b, i_d]
            if qd.static(static_rigid_sim_config.use_gravity):
                acc -= 9.81
            self.dofs_acc[i_b, i_d] = acc
            for _ in qd.static(range(static_rigid_sim_config.substeps)):
                if qd.static(use_fast_path):
                    self.dofs_vel[i_b, i_d] += acc * dt
                else:
                    self.dofs_vel[i_b, i_d] = self.dofs_vel[i_b, i_d] + acc * dt
                dofs_pos[i_b, i_d] += self.dofs_vel[i_b, i_d] * dt


def main(argv: list[str]) -> int:
    qd.init(arch=qd.gpu)
    rng = np.random.default_rng(int(argv[0]) if argv else 3)
    for n_envs, config, fast in ((4, StaticRigidSimConfig(6, True, 2), True),
                                 (3, StaticRigidSimConfig(5, False, 1), False)):
        solver = RigidSolver(n_envs, config)
        dofs_pos = np.zeros((n_envs, config.n_dofs), np.float32)
        dofs_idx = np.array(rng.permutation(config.n_dofs)[:3], np.int32)
        envs_idx = np.array(rng.permutation(n_envs)[:2], np.int32)
        position = rng.standard_normal((2, 3)).astype(np.float32)
        kernel_set_dofs_position(position, dofs_idx, envs_idx, dofs_pos)
        want = np.zeros_like(dofs_pos)
        want[np.ix_(envs_idx, dofs_idx)] = position
        assert np.array_equal(dofs_pos, want)
        force = rng.standard_normal(dofs_pos.shape).astype(np.float32)
        solver.kernel_update_vel(dofs_pos, force, 0.01, config, fast)
        acc = force - (9.81 if config.use_gravity else 0.0)
        vel = np.zeros_like(force)
        for _ in range(config.substeps):
            vel += acc * np.float32(0.01)
            want += vel * np.float32(0.01)
        assert np.allclose(dofs_pos, want, atol=1e-5), np.abs(dofs_pos - want).max()
        got = np.zeros((2, 3), np.float32)
        kernel_get_dofs_position(got, dofs_idx, envs_idx, dofs_pos)
        assert np.array_equal(got, dofs_pos[np.ix_(envs_idx, dofs_idx)])
        print(f"{n_envs} envs x {config.n_dofs} dofs: {dofs_pos.sum():.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

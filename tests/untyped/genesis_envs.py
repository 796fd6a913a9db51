"""Untyped index arrays as Genesis passes them to its setters and resets: ``envs_idx:
qd.types.ndarray()`` names the environments a kernel writes (modelled on Genesis's
``kernel_set_dofs_velocity`` and the couplers' ``_kernel_reset_*``; our own code)."""
import transpiler as qd

N_DOFS, N_ENVS = 6, 16
dofs_vel = qd.field(qd.f32, shape=(N_DOFS, N_ENVS))


@qd.kernel
def set_dofs_velocity(velocity: qd.types.ndarray(), dofs_idx: qd.types.ndarray(), envs_idx: qd.types.ndarray()):
    for i_d_, i_b_ in qd.ndrange(dofs_idx.shape[0], envs_idx.shape[0]):
        dofs_vel[dofs_idx[i_d_], envs_idx[i_b_]] = velocity[i_b_, i_d_]


@qd.kernel
def reset_normals(normals: qd.types.ndarray(), envs_idx: qd.types.ndarray()):
    for i_p, i_b_ in qd.ndrange(normals.shape[0], envs_idx.shape[0]):
        i_b = envs_idx[i_b_]
        normals[i_p, i_b] = 0.0


@qd.kernel
def set_dofs_velocity_typed(velocity: qd.types.ndarray(qd.f32, 2), dofs_idx: qd.types.ndarray(qd.i32, 1),
                            envs_idx: qd.types.ndarray(qd.i32, 1)):
    for i_d_, i_b_ in qd.ndrange(dofs_idx.shape[0], envs_idx.shape[0]):
        dofs_vel[dofs_idx[i_d_], envs_idx[i_b_]] = velocity[i_b_, i_d_]


@qd.kernel
def reset_normals_typed(normals: qd.types.ndarray(qd.f32, 2), envs_idx: qd.types.ndarray(qd.i32, 1)):
    for i_p, i_b_ in qd.ndrange(normals.shape[0], envs_idx.shape[0]):
        i_b = envs_idx[i_b_]
        normals[i_p, i_b] = 0.0

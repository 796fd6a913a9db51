"""Template parameters that need a value, as Genesis's solvers take them: a static config
object whose attributes choose code (``static_rigid_sim_config.use_hibernation``), and a flag
(``use_fast_path``) (modelled on Genesis's rigid solver kernels; our own code)."""
import types

import transpiler as qd

rigid_config = types.SimpleNamespace(use_hibernation=False, n_substeps=2)


@qd.func
def func_damp(vel: qd.template(), i_d, i_b, static_rigid_sim_config: qd.template()):
    if qd.static(static_rigid_sim_config.use_hibernation):
        vel[i_d, i_b] *= 0.0
    else:
        vel[i_d, i_b] *= 0.99


@qd.kernel
def damp_dofs(vel: qd.types.ndarray(qd.f32, 2), static_rigid_sim_config: qd.template()):
    for i_d, i_b in qd.ndrange(vel.shape[0], vel.shape[1]):
        func_damp(vel, i_d, i_b, static_rigid_sim_config)


@qd.kernel
def integrate(pos: qd.types.ndarray(qd.f32, 1), vel: qd.types.ndarray(qd.f32, 1), use_fast_path: qd.template()):
    for i in range(pos.shape[0]):
        if qd.static(use_fast_path):
            pos[i] += vel[i] * 0.01
        else:
            pos[i] = pos[i] + 0.5 * (vel[i] + vel[i]) * 0.01

"""A position-based-dynamics chain in the shape of Genesis's PBD solver
(genesis/engine/solvers/pbd_solver.py): a ``@qd.data_oriented`` solver built inside ``main()``
with batched struct fields (``particles[i_p, i_b].pos``), kernel methods taking ``f: qd.i32``,
a stretch constraint solved ``qd.static(range(iterations))`` times with atomic position deltas,
and the setters / getters Genesis exposes, which take ``particles_idx``, ``envs_idx`` and the
values as untyped ndarrays (``envs_idx`` used as an index). Written for this corpus after
Genesis's kernels (not copied); two solvers of different sizes and iteration counts give two
specializations of each method. Checked against a NumPy model of the same steps."""
import sys

import numpy as np

import transpiler as qd

vec3 = qd.types.vector(3, qd.f32)
Particle = qd.types.struct(pos=vec3, ipos=vec3, vel=vec3, dpos=vec3, free=qd.i32)
ParticleInfo = qd.types.struct(mass=qd.f32)
Edge = qd.types.struct(v1=qd.i32, v2=qd.i32, len_rest=qd.f32, compliance=qd.f32, relaxation=qd.f32)


@qd.data_oriented
class ChainSolver:
    def __init__(self, n_particles: int, n_envs: int, iterations: int, substep_dt: float):
        self._n_particles = n_particles
        self._n_edges = n_particles - 1
        self._B = n_envs
        self._iterations = iterations
        self._substep_dt = substep_dt
        self.particles = Particle.field(shape=(n_particles, n_envs))
        self.particles_info = ParticleInfo.field(shape=n_particles)
        self.edges_info = Edge.field(shape=n_particles - 1)
        self._gravity = qd.field(vec3, shape=n_envs)

    @qd.kernel
    def _kernel_setup(self, masses: qd.types.ndarray(), rest: qd.types.ndarray(), gravity: qd.types.ndarray()):
        for i_p in range(self._n_particles):
            self.particles_info[i_p].mass = masses[i_p]
        for i_e in range(self._n_edges):
            self.edges_info[i_e].v1 = i_e
            self.edges_info[i_e].v2 = i_e + 1
            self.edges_info[i_e].len_rest = rest[i_e]
            self.edges_info[i_e].compliance = 1e-6
            self.edges_info[i_e].relaxation = 0.8
        for i_b in range(self._B):
            self._gravity[i_b] = qd.Vector([gravity[i_b, 0], gravity[i_b, 1], gravity[i_b, 2]])

    @qd.kernel
    def _kernel_set_particles_pos(self, particles_idx: qd.types.ndarray(), envs_idx: qd.types.ndarray(),
                                  poss: qd.types.ndarray()):
        for i_p_, i_b_ in qd.ndrange(particles_idx.shape[1], envs_idx.shape[0]):
            i_p = particles_idx[i_b_, i_p_]
            i_b = envs_idx[i_b_]
            for i in qd.static(range(3)):
                self.particles[i_p, i_b].pos[i] = poss[i_b_, i_p_, i]
            self.particles[i_p, i_b].vel.fill(0.0)
            self.particles[i_p, i_b].free = 1 if i_p > 0 else 0

    @qd.kernel
    def _kernel_store_initial_pos(self, f: qd.i32):
        for i_p, i_b in qd.ndrange(self._n_particles, self._B):
            self.particles[i_p, i_b].ipos = self.particles[i_p, i_b].pos

    @qd.kernel
    def _kernel_apply_external_force(self, f: qd.i32):
        for i_p, i_b in qd.ndrange(self._n_particles, self._B):
            if self.particles[i_p, i_b].free:
                self.particles[i_p, i_b].vel += self._gravity[i_b] * self._substep_dt
            self.particles[i_p, i_b].pos += self.particles[i_p, i_b].vel * self._substep_dt

    @qd.kernel
    def _kernel_solve_stretch(self, f: qd.i32):
        for _ in qd.static(range(self._iterations)):
            for i_e, i_b in qd.ndrange(self._n_edges, self._B):
                v1 = self.edges_info[i_e].v1
                v2 = self.edges_info[i_e].v2
                w1 = self.particles[v1, i_b].free / self.particles_info[v1].mass
                w2 = self.particles[v2, i_b].free / self.particles_info[v2].mass
                n = self.particles[v1, i_b].pos - self.particles[v2, i_b].pos
                C = n.norm() - self.edges_info[i_e].len_rest
                alpha = self.edges_info[i_e].compliance / (self._substep_dt**2)
                dp = -C / (w1 + w2 + alpha) * n / n.norm(1e-9) * self.edges_info[i_e].relaxation
                self.particles[v1, i_b].dpos += dp * w1
                self.particles[v2, i_b].dpos -= dp * w2
            for i_p, i_b in qd.ndrange(self._n_particles, self._B):
                self.particles[i_p, i_b].pos += self.particles[i_p, i_b].dpos
                self.particles[i_p, i_b].dpos.fill(0)

    @qd.kernel
    def _kernel_compute_velocity(self, f: qd.i32):
        for i_p, i_b in qd.ndrange(self._n_particles, self._B):
            self.particles[i_p, i_b].vel = (self.particles[i_p, i_b].pos - self.particles[i_p, i_b].ipos) / \
                self._substep_dt

    @qd.kernel
    def _kernel_get_particles_pos(self, particle_start: qd.i32, n_particles: qd.i32, envs_idx: qd.types.ndarray(),
                                  poss: qd.types.ndarray()):
        for i_p_, i_b_ in qd.ndrange(n_particles, envs_idx.shape[0]):
            i_p = i_p_ + particle_start
            i_b = envs_idx[i_b_]
            for i in qd.static(range(3)):
                poss[i_b_, i_p_, i] = self.particles[i_p, i_b].pos[i]

    def substep(self, f: int) -> None:
        self._kernel_store_initial_pos(f)
        self._kernel_apply_external_force(f)
        self._kernel_solve_stretch(f)
        self._kernel_compute_velocity(f)


def numpy_substeps(pos, masses, rest, gravity, iterations, dt, steps):
    """The same steps in float64: pos [B, n, 3]; particle 0 of each chain is pinned."""
    vel = np.zeros_like(pos)
    free = np.ones(pos.shape[1])
    free[0] = 0
    w = free / masses
    alpha = 1e-6 / dt**2
    for _ in range(steps):
        ipos = pos.copy()
        vel += free[None, :, None] * gravity[:, None, :] * dt
        pos = pos + vel * dt
        for _ in range(iterations):
            n = pos[:, :-1] - pos[:, 1:]
            norm = np.linalg.norm(n, axis=-1, keepdims=True)
            C = norm - rest[None, :, None]
            dp = -C / (w[:-1, None] + w[1:, None] + alpha) * n / np.maximum(norm, 1e-9) * 0.8
            dpos = np.zeros_like(pos)
            dpos[:, :-1] += dp * w[:-1, None]
            dpos[:, 1:] -= dp * w[1:, None]
            pos = pos + dpos
        vel = (pos - ipos) / dt
    return pos


def main(argv: list[str]) -> int:
    qd.init(arch=qd.gpu)
    rng = np.random.default_rng(int(argv[0]) if argv else 13)
    steps = 5
    for n_particles, n_envs, iterations in ((6, 2, 2), (9, 3, 4)):
        dt = 1e-2
        solver = ChainSolver(n_particles, n_envs, iterations, dt)
        masses = rng.uniform(0.5, 2.0, n_particles).astype(np.float32)
        rest = rng.uniform(0.08, 0.12, n_particles - 1).astype(np.float32)
        gravity = np.tile(np.array([0, 0, -9.8], np.float32), (n_envs, 1))
        gravity[:, 0] = rng.uniform(-1, 1, n_envs)
        solver._kernel_setup(masses, rest, gravity)
        start = np.zeros((n_envs, n_particles, 3), np.float32)
        start[..., 0] = np.cumsum(np.r_[0, rest])[None, :] + rng.normal(0, 0.01, (n_envs, n_particles))
        envs_idx = np.arange(n_envs, dtype=np.int32)[::-1].copy()
        particles_idx = np.tile(np.arange(n_particles, dtype=np.int32), (n_envs, 1))
        solver._kernel_set_particles_pos(particles_idx, envs_idx, start[::-1].copy())
        for f in range(steps):
            solver.substep(f)
        got = np.zeros((n_envs, n_particles, 3), np.float32)
        solver._kernel_get_particles_pos(0, n_particles, np.arange(n_envs, dtype=np.int32), got)
        want = numpy_substeps(start.astype(np.float64), masses, rest, gravity.astype(np.float64), iterations, dt,
                              steps)
        assert np.allclose(got, want, atol=2e-4), np.abs(got - want).max()
        print(f"{n_particles} particles x {n_envs} envs, {iterations} iterations: z {got[..., 2].sum():.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A particle update with vector and matrix ndarrays, a struct parameter (its scalars) and a
dataclass parameter (its members): the embedding header describes their layout."""
import dataclasses

import transpiler as qd

vec3 = qd.math.vec3
Options = qd.types.struct(gravity=vec3, dt=qd.f32)


@dataclasses.dataclass(frozen=True)
class Particles:
    x: qd.types.NDArray[vec3, 1]
    v: qd.types.NDArray[vec3, 1]


@qd.kernel
def particles(p: Particles, F: qd.types.ndarray(dtype=qd.math.mat3, ndim=1), opts: Options):
    for i in range(p.x.shape[0]):
        v = p.v[i] + opts.dt * (opts.gravity + F[i] @ p.v[i])
        p.x[i] += opts.dt * v
        p.v[i] = v

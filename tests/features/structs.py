"""Structs: a @qd.dataclass with a @qd.func method that updates self, a qd.types.struct
kernel parameter passed by value (its scalars), and a Python dataclass of ndarrays as a
parameter (its members), as Genesis passes its state."""
import dataclasses

import transpiler as qd

vec3 = qd.math.vec3


@qd.dataclass
class Body:
    pos: vec3
    vel: vec3
    mass: qd.f32

    @qd.func
    def push(self, force, dt):
        self.vel += force / self.mass * dt


Params = qd.types.struct(gravity=vec3, dt=qd.f32)


@dataclasses.dataclass(frozen=True)
class State:
    pos: qd.types.NDArray[vec3, 1]
    vel: qd.types.NDArray[vec3, 1]
    mass: qd.types.NDArray[qd.f32, 1]


@qd.kernel
def structs(state: State, params: Params):
    for i in range(state.pos.shape[0]):
        b = Body(pos=state.pos[i], vel=state.vel[i], mass=state.mass[i])
        b.push(params.gravity * b.mass, params.dt)
        state.pos[i] = b.pos + b.vel * params.dt
        state.vel[i] = b.vel

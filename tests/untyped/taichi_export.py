"""Fields copied to and from untyped ndarrays, as Taichi's examples hand particles to a GUI or
load them back (``for i in pos: arr[i] = pos[i]``): the ndarray takes the field's element
type (modelled on Taichi's examples; our own code)."""
import transpiler as qd

N = 64
pos = qd.Vector.field(2, qd.f32, shape=N)
cell = qd.field(qd.i32, shape=N)


@qd.kernel
def export_particles(out_pos: qd.types.ndarray(), out_cell: qd.types.ndarray()):
    for i in pos:
        out_pos[i] = pos[i]
        out_cell[i] = cell[i]


@qd.kernel
def load_particles(src: qd.types.ndarray()):
    for i in pos:
        pos[i] = src[i]


@qd.kernel
def export_particles_typed(out_pos: qd.types.ndarray(qd.math.vec2, 1), out_cell: qd.types.ndarray(qd.i32, 1)):
    for i in pos:
        out_pos[i] = pos[i]
        out_cell[i] = cell[i]


@qd.kernel
def load_particles_typed(src: qd.types.ndarray(qd.math.vec2, 1)):
    for i in pos:
        pos[i] = src[i]

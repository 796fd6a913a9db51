"""Dye pushed by an impulse on untyped ndarrays, as Taichi's stable-fluid example writes it
(``dc = dyef[i, j]; a = dc.norm()``, then ``dc += ... * ti.Vector([r, g, b])``; modelled on
Taichi's examples; our own code)."""
import transpiler as qd


@qd.kernel
def apply_dye(dyef: qd.types.ndarray(), imp: qd.types.ndarray(), strength: qd.f32):
    for i, j in qd.ndrange(dyef.shape[0], dyef.shape[1]):
        dx, dy = i + 0.5 - imp[0], j + 0.5 - imp[1]
        factor = qd.exp(-(dx * dx + dy * dy) / 16.0)
        dc = dyef[i, j]
        a = dc.norm()
        dc += factor * strength / (1 + a) * qd.Vector([imp[2], imp[3], imp[4]])
        dyef[i, j] = dc


@qd.kernel
def dye_brightness(dyef: qd.types.ndarray(), out: qd.types.ndarray()):
    for i, j in qd.ndrange(dyef.shape[0], dyef.shape[1]):
        out[i, j] = dyef[i, j].norm()


@qd.kernel
def apply_dye_typed(dyef: qd.types.ndarray(qd.math.vec3, 2), imp: qd.types.ndarray(qd.f32, 1), strength: qd.f32):
    for i, j in qd.ndrange(dyef.shape[0], dyef.shape[1]):
        dx, dy = i + 0.5 - imp[0], j + 0.5 - imp[1]
        factor = qd.exp(-(dx * dx + dy * dy) / 16.0)
        dc = dyef[i, j]
        a = dc.norm()
        dc += factor * strength / (1 + a) * qd.Vector([imp[2], imp[3], imp[4]])
        dyef[i, j] = dc

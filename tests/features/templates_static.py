"""qd.template() parameters and qd.static: an unrolled loop and a branch chosen at translation time."""
# options: {"template_args": {"radius": 2, "clamp": True}}
import transpiler as qd


@qd.kernel
def box_blur(x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1),
             radius: qd.template(), clamp: qd.template()):
    for i in range(radius, x.shape[0] - radius):
        acc = 0.0
        for k in qd.static(range(-radius, radius + 1)):
            acc += x[i + k]
        if qd.static(clamp):
            acc = qd.min(acc, 1.0)
        y[i] = acc

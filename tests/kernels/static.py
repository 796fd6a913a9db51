"""Translation-time evaluation: templates, qd.static if/for, module constants."""
import math

import transpiler as qd

TAPS = (0.25, 0.5, 0.25)
SCALE = 2.0
USE_BIAS = True


@qd.kernel
def blur(x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1),
         radius: qd.template()):
    for i in range(radius, x.shape[0] - radius):
        s = 0.0
        for k in qd.static(range(len(TAPS))):
            s += TAPS[k] * x[i + k - 1]
        if qd.static(USE_BIAS):
            s += 0.125
        if qd.static(radius > 1):
            s += x[i - radius] + x[i + radius]
        y[i] = s * SCALE + math.pi
TEMPLATE_ARGS = {"blur": {"radius": 2}}

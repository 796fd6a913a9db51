"""qd.random: each iteration's stream starts from the launch's seed parameter and its loop
index, so every target and executor draws the same numbers."""
import transpiler as qd


@qd.kernel
def noise(out: qd.types.ndarray(dtype=qd.f32, ndim=1), dice: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(out.shape[0]):
        out[i] = qd.random()
        dice[i] = qd.cast(qd.random(qd.f32) * 6.0, qd.i32) + 1

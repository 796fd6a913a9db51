"""Two kernels sharing module fields: a 2-D field, a 0-d accumulator and a vector field; the
manifest lists them, the header tells the host what to allocate and bind."""
import transpiler as qd

N = 32
temperature = qd.field(qd.f32, shape=(N, N))
heat = qd.field(qd.f32, shape=())
flux = qd.Vector.field(2, qd.f32, shape=(N, N))


@qd.kernel
def diffuse(alpha: qd.f32):
    for i, j in temperature:
        if 0 < i < N - 1 and 0 < j < N - 1:
            gx = temperature[i + 1, j] - temperature[i - 1, j]
            gy = temperature[i, j + 1] - temperature[i, j - 1]
            flux[i, j] = -alpha * qd.math.vec2(gx, gy)


@qd.kernel
def total_heat():
    for i, j in temperature:
        heat[None] += temperature[i, j] + flux[i, j].sum()

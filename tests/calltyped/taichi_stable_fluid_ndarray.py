"""Taichi's stable fluid on ndarrays (examples/simulation/stable_fluid.py, its ndarray mode):
untyped ``qd.types.ndarray()`` parameters typed by the call, one ``advect`` kernel called on the
2-vector velocities and on the 3-vector dye (two specializations), ``dc = dyef[i, j]; dc.norm()``
on an element, and a Jacobi pressure solve on scalar ndarrays. The kernels follow Taichi's
(Apache-2.0, the Taichi authors), shortened, with ``qd`` for ``ti``; the driver is ours: a few
steps from a random dye, checked against NumPy for the divergence and the pressure update."""
import sys

import numpy as np

import transpiler as qd

res = 48
dt = 0.03
force_radius = res / 2.0
f_strength = 10000.0


@qd.func
def sample(qf: qd.template(), u, v):
    i = qd.max(0, qd.min(res - 1, int(u)))
    j = qd.max(0, qd.min(res - 1, int(v)))
    return qf[i, j]


@qd.func
def lerp(vl, vr, frac):
    return vl + frac * (vr - vl)


@qd.func
def bilerp(vf: qd.template(), p):
    u, v = p
    s, t = u - 0.5, v - 0.5
    iu, iv = qd.floor(s), qd.floor(t)
    fu, fv = s - iu, t - iv
    a = sample(vf, iu, iv)
    b = sample(vf, iu + 1, iv)
    c = sample(vf, iu, iv + 1)
    d = sample(vf, iu + 1, iv + 1)
    return lerp(lerp(a, b, fu), lerp(c, d, fu), fv)


@qd.kernel
def advect(vf: qd.types.ndarray(), qf: qd.types.ndarray(), new_qf: qd.types.ndarray()):
    for i, j in vf:
        p = qd.Vector([i, j]) + 0.5
        p = p - dt * bilerp(vf, p)
        new_qf[i, j] = bilerp(qf, p)


@qd.kernel
def apply_impulse(vf: qd.types.ndarray(), dyef: qd.types.ndarray(), imp_data: qd.types.ndarray()):
    g_dir = -qd.Vector([0, 9.8]) * 300
    for i, j in vf:
        omx, omy = imp_data[2], imp_data[3]
        mdir = qd.Vector([imp_data[0], imp_data[1]])
        dx, dy = (i + 0.5 - omx), (j + 0.5 - omy)
        d2 = dx * dx + dy * dy
        factor = qd.exp(-d2 / force_radius)
        dc = dyef[i, j]
        a = dc.norm()
        momentum = (mdir * f_strength * factor + g_dir * a / (1 + a)) * dt
        vf[i, j] = vf[i, j] + momentum
        if mdir.norm() > 0.5:
            dc += qd.exp(-d2 * (4 / (res / 15) ** 2)) * qd.Vector([imp_data[4], imp_data[5], imp_data[6]])
        dyef[i, j] = dc


@qd.kernel
def divergence(vf: qd.types.ndarray(), velocity_divs: qd.types.ndarray()):
    for i, j in vf:
        vl = vf[qd.max(i - 1, 0), j]
        vr = vf[qd.min(i + 1, res - 1), j]
        vb = vf[i, qd.max(j - 1, 0)]
        vt = vf[i, qd.min(j + 1, res - 1)]
        velocity_divs[i, j] = (vr.x - vl.x + vt.y - vb.y) * 0.5


@qd.kernel
def pressure_jacobi(pf: qd.types.ndarray(), new_pf: qd.types.ndarray(), velocity_divs: qd.types.ndarray()):
    for i, j in pf:
        pl = pf[qd.max(i - 1, 0), j]
        pr = pf[qd.min(i + 1, res - 1), j]
        pb = pf[i, qd.max(j - 1, 0)]
        pt = pf[i, qd.min(j + 1, res - 1)]
        new_pf[i, j] = (pl + pr + pb + pt - velocity_divs[i, j]) * 0.25


def numpy_divergence(v: np.ndarray) -> np.ndarray:
    idx = np.arange(res)
    lo, hi = np.maximum(idx - 1, 0), np.minimum(idx + 1, res - 1)
    return (v[hi, :, 0] - v[lo, :, 0] + v[:, hi, 1] - v[:, lo, 1]) * 0.5


def numpy_jacobi(p: np.ndarray, div: np.ndarray) -> np.ndarray:
    idx = np.arange(res)
    lo, hi = np.maximum(idx - 1, 0), np.minimum(idx + 1, res - 1)
    return (p[lo, :] + p[hi, :] + p[:, lo] + p[:, hi] - div) * 0.25


def main(argv: list[str]) -> int:
    qd.init(arch=qd.gpu)
    rng = np.random.default_rng(int(argv[0]) if argv else 9)
    velocities = [qd.ndarray(qd.math.vec2, (res, res)) for _ in range(2)]
    dyes = [qd.ndarray(qd.math.vec3, (res, res)) for _ in range(2)]
    pressures = [qd.ndarray(qd.f32, (res, res)) for _ in range(2)]
    divs = qd.ndarray(qd.f32, (res, res))
    dyes[0].from_numpy(rng.random((res, res, 3)).astype(np.float32))
    imp = np.array([1.0, 0.5, res / 2, res / 3, 0.2, 0.4, 0.9], np.float32)
    for _ in range(3):
        advect(velocities[0], velocities[0], velocities[1])
        advect(velocities[0], dyes[0], dyes[1])
        velocities.reverse()
        dyes.reverse()
        apply_impulse(velocities[0], dyes[0], imp)
        divergence(velocities[0], divs)
        assert np.allclose(divs.to_numpy(), numpy_divergence(velocities[0].to_numpy()), rtol=1e-4, atol=1e-2)
        for _ in range(10):
            before = pressures[0].to_numpy()
            pressure_jacobi(pressures[0], pressures[1], divs)
            assert np.allclose(pressures[1].to_numpy(), numpy_jacobi(before, divs.to_numpy()), rtol=1e-4, atol=1e-3)
            pressures.reverse()
    dye = dyes[0].to_numpy()
    assert np.isfinite(dye).all() and np.isfinite(velocities[0].to_numpy()).all()
    print(f"dye {dye.sum():.3f}, pressure {pressures[0].to_numpy().sum():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Automatic differentiation as Quadrants spells it: `kernel.grad()`, `qd.ad.Tape`,
`qd.ad.FwdMode`, `grad_replaced` / `grad_for` / `no_grad`, checked against NumPy's own
derivatives on random data, on Vulkan and both CPU executors (CUDA and HIP text)."""
from __future__ import annotations

import numpy as np
import pytest

import transpiler as qd

N = 37


def test_reverse_mode_through_math_branches_and_inner_loops(executor, rng):
    x = qd.field(qd.f32)
    w = qd.field(qd.f32)
    y = qd.field(qd.f32)
    qd.root.dense(qd.i, N).place(x, x.grad, w, w.grad, y, y.grad)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            t = qd.sin(x[i]) * w[i]
            if t > 0.0:
                t = qd.sqrt(t + 1.0)
            else:
                t = qd.exp(t) - 1.0
            p = 1.0
            for j in range(n):  # a carried product: each backward step needs the earlier iterations' p
                p = p * (t + j)
            s = 0.0
            for j in range(3):  # a carried sum: linear, nothing to replay
                s += qd.tanh(x[i] * j)
            y[i] = p / (1.0 + x[i] ** 2) + s * w[i]

    xs = rng.uniform(-2, 2, N).astype(np.float32)
    ws = rng.uniform(-1.5, 1.5, N).astype(np.float32)
    gy = rng.standard_normal(N).astype(np.float32)
    x.from_numpy(xs)
    w.from_numpy(ws)
    forward(4)
    y.grad.from_numpy(gy)
    forward.grad(4)

    xd, wd = xs.astype(np.float64), ws.astype(np.float64)
    t0 = np.sin(xd) * wd
    pos = t0 > 0
    t = np.where(pos, np.sqrt(np.abs(t0) + 1), np.exp(t0) - 1)
    dt_dt0 = np.where(pos, 0.5 / np.sqrt(np.abs(t0) + 1), np.exp(t0))
    p = np.prod([t + j for j in range(4)], axis=0)
    dp_dt = sum(np.prod([t + k for k in range(4) if k != j], axis=0) for j in range(4))
    s = sum(np.tanh(xd * j) for j in range(3))
    ds_dx = sum(j * (1 - np.tanh(xd * j) ** 2) for j in range(3))
    q = 1 + xd ** 2
    np.testing.assert_allclose(y.to_numpy(), p / q + s * wd, rtol=1e-4, atol=1e-5)
    dy_dx = dp_dt * dt_dt0 * np.cos(xd) * wd / q - p * 2 * xd / q ** 2 + ds_dx * wd
    dy_dw = dp_dt * dt_dt0 * np.sin(xd) / q + s
    np.testing.assert_allclose(x.grad.to_numpy(), gy * dy_dx, rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(w.grad.to_numpy(), gy * dy_dw, rtol=2e-3, atol=1e-4)
    np.testing.assert_array_equal(y.grad.to_numpy(), 0)  # a store moves its adjoint out, as in Quadrants


def test_tape_over_kernels_with_a_kernel_scope_sum_and_vectors(executor, rng):
    pos = qd.Vector.field(3, qd.f32, shape=N, needs_grad=True)
    scale = qd.field(qd.f32, shape=(), needs_grad=True)
    energy = qd.field(qd.f32, shape=N, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def potential():
        for i in pos:
            r = pos[i].norm()
            energy[i] = scale[None] * r * r + qd.cos(pos[i].x)

    @qd.kernel
    def total():
        acc = 0.0
        for i in energy:
            acc += energy[i] ** 2
        loss[None] = acc / N

    ps = rng.standard_normal((N, 3)).astype(np.float32)
    pos.from_numpy(ps)
    scale[None] = 0.75
    pos.grad.fill(5.0)  # the Tape clears gradients on entry
    with qd.ad.Tape(loss=loss):
        potential()
        total()
    pd = ps.astype(np.float64)
    r2 = (pd ** 2).sum(axis=1)
    e = 0.75 * r2 + np.cos(pd[:, 0])
    np.testing.assert_allclose(loss[None], (e ** 2).mean(), rtol=1e-4)
    de = 2 * e / N
    want = de[:, None] * (2 * 0.75 * pd)
    want[:, 0] -= de * np.sin(pd[:, 0])
    np.testing.assert_allclose(pos.grad.to_numpy(), want, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(scale.grad[None], (de * r2).sum(), rtol=1e-3)


def test_grad_of_ndarray_arguments_atomics_and_selects(executor, rng):
    a = qd.ndarray(qd.f32, shape=(N,), needs_grad=True)
    b = qd.ndarray(qd.f32, shape=(N,))  # no grad: a constant of the derivative
    out = qd.ndarray(qd.f32, shape=(4,), needs_grad=True)

    @qd.kernel
    def scatter(a: qd.types.ndarray(dtype=qd.f32, ndim=1), b: qd.types.ndarray(dtype=qd.f32, ndim=1),
                out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in range(a.shape[0]):
            v = a[i] if b[i] > 0.0 else -2.0 * a[i]
            out[i % 4] += qd.max(v, 0.25) * b[i] + qd.atan2(a[i], 1.5)

    av = rng.standard_normal(N).astype(np.float32)
    bv = rng.standard_normal(N).astype(np.float32)
    go = rng.standard_normal(4).astype(np.float32)
    a.from_numpy(av)
    b.from_numpy(bv)
    out.grad.from_numpy(go)
    scatter.grad(a, b, out)
    ad, bd = av.astype(np.float64), bv.astype(np.float64)
    dv = np.where(bd > 0, 1.0, -2.0)
    v = dv * ad
    want = go[np.arange(N) % 4] * (np.where(v > 0.25, dv, 0) * bd + 1.5 / (ad ** 2 + 2.25))
    np.testing.assert_allclose(a.grad.to_numpy(), want, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(out.grad.to_numpy(), go)  # an atomic add leaves its adjoint


def test_abs_at_zero_and_arrays_annotated_without_grad(executor, rng):
    """d|x|/dx is sign(x), 0 at 0 (as Quadrants has it); an ndarray annotated needs_grad=False
    is a constant of the derivative even when the argument has a .grad."""
    x = qd.ndarray(qd.f32, shape=(N,), needs_grad=True)
    w = qd.ndarray(qd.f32, shape=(N,), needs_grad=True)
    y = qd.ndarray(qd.f32, shape=(N,), needs_grad=True)

    @qd.kernel
    def weighted_abs(x: qd.types.ndarray(dtype=qd.f32, ndim=1),
                     w: qd.types.ndarray(dtype=qd.f32, ndim=1, needs_grad=False),
                     y: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in range(x.shape[0]):
            y[i] = abs(x[i]) * w[i]

    xv = rng.integers(-3, 4, N).astype(np.float32)  # zeros among them
    wv = rng.uniform(0.5, 2.0, N).astype(np.float32)
    x.from_numpy(xv)
    w.from_numpy(wv)
    w.grad.fill(7.0)
    weighted_abs(x, w, y)
    y.grad.fill(1.0)
    weighted_abs.grad(x, w, y)
    assert (xv == 0).any()
    np.testing.assert_allclose(x.grad.to_numpy(), np.sign(xv) * wv, rtol=1e-6)
    assert (w.grad.to_numpy() == 7.0).all()  # untouched


def test_forward_mode_gives_the_directional_derivative(executor, rng):
    x = qd.field(qd.f32, shape=N, needs_dual=True)
    y = qd.field(qd.f32, shape=N, needs_dual=True)
    total = qd.field(qd.f32, shape=(), needs_dual=True)

    @qd.kernel
    def f():
        for i in x:
            r = x[i]
            k = 0
            while k < 3:  # forward mode needs no replay: any loop
                r = r * 0.5 + qd.log(1.0 + r * r)
                k += 1
            y[i] = r
            total[None] += r * x[i]

    xs = rng.uniform(-1, 1, N).astype(np.float32)
    seed = rng.standard_normal(N).astype(np.float32)
    x.from_numpy(xs)
    with qd.ad.FwdMode(loss=[y, total], param=x, seed=seed.tolist()):
        f()
    r, dr = xs.astype(np.float64), np.ones(N)
    for _ in range(3):
        r, dr = r * 0.5 + np.log1p(r * r), dr * (0.5 + 2 * r / (1 + r * r))
    np.testing.assert_allclose(y.to_numpy(), r, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(y.dual.to_numpy(), seed * dr, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(total.dual[None], (seed * (dr * xs + r)).sum(), rtol=1e-3, atol=1e-4)
    np.testing.assert_array_equal(x.dual.to_numpy(), 0)  # the seed is cleared on exit


def test_custom_gradients_and_no_grad_in_a_tape(executor):
    x = qd.field(qd.f32, shape=8, needs_grad=True)
    total = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def accumulate(mul: qd.f32):
        for i in range(8):
            total[None] += x[i] * mul

    @qd.ad.grad_replaced
    def twice(mul):
        accumulate(mul)
        accumulate(mul)

    @qd.ad.grad_for(twice)
    def twice_grad(mul):
        accumulate.grad(mul)  # only once: the user's gradient, not the derived one

    @qd.ad.no_grad
    def untracked(mul):
        accumulate(mul)

    x.fill(1.0)
    with qd.ad.Tape(loss=total):
        twice(4.0)
        untracked(3.0)
    assert total[None] == pytest.approx(8 * 4 * 2 + 8 * 3)
    np.testing.assert_allclose(x.grad.to_numpy(), 4.0)
    with pytest.raises(RuntimeError, match="must be decorated by qd.ad.grad_replaced"):
        qd.ad.grad_for(accumulate.fn)(lambda: None)


def test_placing_grads_and_lazy_grad(executor):
    x = qd.field(qd.f32)
    n = qd.field(qd.i32)
    qd.root.dense(qd.i, 4).place(x, x.grad, n)
    y = qd.field(qd.f32, shape=4)
    qd.root.lazy_grad()
    assert x.grad.shape == (4,) and y.grad.shape == (4,)
    with pytest.raises(AttributeError, match="has no grad"):
        n.grad  # noqa: B018  (an integer field has none)


def test_a_plain_python_function_is_inlined_with_a_warning(executor):
    square = lambda v: v * v  # noqa: E731
    x = qd.field(qd.f32, shape=4)

    def shifted(v, k=2.0):
        return square(v) + k

    @qd.kernel
    def k():
        for i in x:
            x[i] = shifted(qd.cast(i, qd.f32))

    with pytest.warns(qd.TranslationWarning, match=r"`.*shifted` is a plain Python function: it is translated as a "
                                                   r"@qd.func"):
        k()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(4) ** 2 + 2)


def test_reassigning_a_loop_variable_starts_a_new_local(executor):
    x = qd.field(qd.i32, shape=4)

    @qd.kernel
    def k():
        for i in range(4):
            i = i * 3  # Python: the rest of this iteration sees the new value
            x[i // 3] = i

    k()
    np.testing.assert_array_equal(x.to_numpy(), [0, 3, 6, 9])


def _kernel_line(kernel, offset: int) -> int:
    return kernel.fn.__code__.co_firstlineno + offset


def test_what_reverse_mode_cannot_differentiate_is_located():
    x = qd.field(qd.f32, shape=4, needs_grad=True)
    y = qd.field(qd.f32, shape=4, needs_grad=True)

    @qd.kernel
    def with_while():
        for i in x:
            r = x[i]
            while r > 1.0:
                r = r * 0.5
            y[i] = r

    @qd.kernel
    def with_old_value():
        for i in x:
            old = qd.atomic_add(y[i], x[i])
            y[i] = old * 2.0

    with pytest.raises(qd.TranspileError, match=r"a `while` loop cannot be differentiated in reverse mode") as info:
        qd.translate(with_while.grad, "cuda")
    assert info.value.loc.line == _kernel_line(with_while, 4)
    assert "qd.ad.FwdMode" in str(info.value)
    with pytest.raises(qd.TranspileError, match=r"the value of an atomic .* cannot be differentiated") as info:
        qd.translate(with_old_value.grad, "cuda")
    assert info.value.loc.line == _kernel_line(with_old_value, 3)
    with pytest.raises(RuntimeError, match="must be a 0-D field"):
        with qd.ad.Tape(loss=y):
            pass


def test_a_kernel_scope_value_later_tasks_read_is_recomputed(executor, rng):
    x = qd.field(qd.f32, shape=N, needs_grad=True)
    y = qd.field(qd.f32, shape=N, needs_grad=True)

    @qd.kernel
    def normalize():
        total = 0.0
        for i in x:
            total += x[i] * x[i]
        for i in x:  # another task: reads the total the first one summed
            y[i] = x[i] / qd.sqrt(total)

    xs = rng.standard_normal(N).astype(np.float32)
    gy = rng.standard_normal(N).astype(np.float32)
    x.from_numpy(xs)
    normalize()
    y.grad.from_numpy(gy)
    normalize.grad()
    xd = xs.astype(np.float64)
    norm = np.sqrt((xd ** 2).sum())
    np.testing.assert_allclose(y.to_numpy(), xd / norm, rtol=1e-5)
    want = gy / norm - xd * (gy * xd).sum() / norm ** 3
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-3, atol=1e-6)


def _mpm_reference(x, v, C, grid: int, dx: float, dt: float) -> float:
    """The particle-to-grid-to-particle step below, in NumPy (float64): the oracle the
    derivative is checked against by central differences."""
    gv, gm = np.zeros((grid, grid, 2)), np.zeros((grid, grid))
    bases, weights = [], []
    for p in range(len(x)):
        base = (x[p] / dx - 0.5).astype(int)
        fx = x[p] / dx - base
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        bases.append(base)
        weights.append(w)
        for i in range(3):
            for j in range(3):
                off = np.array([i, j])
                weight = w[i][0] * w[j][1]
                gv[tuple(base + off)] += weight * (v[p] + C[p] @ ((off - fx) * dx))
                gm[tuple(base + off)] += weight
    loss = 0.0
    for p in range(len(x)):
        new_v = np.zeros(2)
        for i in range(3):
            for j in range(3):
                cell = tuple(bases[p] + np.array([i, j]))
                new_v += weights[p][i][0] * weights[p][j][1] * gv[cell] / (gm[cell] + 1e-3)
        x2 = x[p] + dt * new_v
        loss += (x2 ** 2).sum() * np.sin(x2[0])
    return loss


def test_a_particle_to_grid_step_differentiates_as_its_central_differences(executor, rng):
    # Taichi's diffmpm in small: matrices, qd.static stencils, scattering atomics, floor-cast indices
    n, grid, dx, dt = 12, 8, 1.0 / 8, 1e-3
    x = qd.Vector.field(2, qd.f32, shape=n, needs_grad=True)
    v = qd.Vector.field(2, qd.f32, shape=n, needs_grad=True)
    C = qd.Matrix.field(2, 2, qd.f32, shape=n, needs_grad=True)
    gv = qd.Vector.field(2, qd.f32, shape=(grid, grid), needs_grad=True)
    gm = qd.field(qd.f32, shape=(grid, grid), needs_grad=True)
    x2 = qd.Vector.field(2, qd.f32, shape=n, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.func
    def stencil(xp):
        base = qd.cast(xp / dx - 0.5, qd.i32)
        fx = xp / dx - qd.cast(base, qd.f32)
        return base, fx, [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]

    @qd.kernel
    def p2g():
        for p in range(n):
            base, fx, w = stencil(x[p])
            for i, j in qd.static(qd.ndrange(3, 3)):
                offset = qd.Vector([i, j])
                weight = w[i][0] * w[j][1]
                gv[base + offset] += weight * (v[p] + C[p] @ ((qd.cast(offset, qd.f32) - fx) * dx))
                gm[base + offset] += weight

    @qd.kernel
    def g2p():
        for p in range(n):
            base, fx, w = stencil(x[p])
            new_v = qd.Vector([0.0, 0.0])
            for i, j in qd.static(qd.ndrange(3, 3)):
                cell = base + qd.Vector([i, j])
                new_v += w[i][0] * w[j][1] * gv[cell] / (gm[cell] + 1e-3)
            x2[p] = x[p] + dt * new_v

    @qd.kernel
    def compute_loss():
        for p in range(n):
            loss[None] += (x2[p] ** 2).sum() * qd.sin(x2[p][0])

    x0 = rng.uniform(0.3, 0.7, (n, 2)).astype(np.float32)
    v0 = rng.standard_normal((n, 2)).astype(np.float32)
    C0 = rng.standard_normal((n, 2, 2)).astype(np.float32)
    x.from_numpy(x0)
    v.from_numpy(v0)
    C.from_numpy(C0)
    with qd.ad.Tape(loss=loss):
        p2g()
        g2p()
        compute_loss()
    x64, v64, C64 = (a.astype(np.float64) for a in (x0, v0, C0))
    assert loss[None] == pytest.approx(_mpm_reference(x64, v64, C64, grid, dx, dt), rel=1e-4)
    h = 1e-6
    for name, value, grad in (("x", x64, x.grad), ("v", v64, v.grad), ("C", C64, C.grad)):
        want = np.zeros_like(value)
        for k in np.ndindex(value.shape):
            up, down = value.copy(), value.copy()
            up[k] += h
            down[k] -= h
            args = {"x": x64, "v": v64, "C": C64}
            want[k] = (_mpm_reference(**{**args, name: up}, grid=grid, dx=dx, dt=dt) -
                       _mpm_reference(**{**args, name: down}, grid=grid, dx=dx, dt=dt)) / (2 * h)
        np.testing.assert_allclose(grad.to_numpy(), want, rtol=2e-3, atol=2e-3 * np.abs(want).max(), err_msg=name)


def test_tape_options_this_transpiler_does_not_check_are_said():
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    with pytest.warns(UserWarning, match="does not check the global data access rule"):
        qd.ad.Tape(loss=loss, validation=True)


def test_more_of_what_reverse_mode_refuses_is_located():
    x = qd.field(qd.f32, shape=4, needs_grad=True)
    y = qd.field(qd.f32, shape=4, needs_grad=True)

    @qd.real_func
    def twice(v: qd.f32) -> qd.f32:
        return 2.0 * v

    @qd.kernel
    def with_real_func():
        for i in x:
            y[i] = twice(x[i])

    @qd.kernel
    def with_atomic_max():
        for i in x:
            qd.atomic_max(y[0], x[i])

    @qd.kernel
    def with_break():
        for i in x:
            for j in range(3):
                if x[i] > j:
                    break
                y[i] += x[i]

    for kernel, message, line in ((with_real_func, "a call of a @qd.real_func cannot be differentiated", None),
                                  (with_atomic_max, "an atomic max cannot be differentiated", 3),
                                  (with_break, "`break` and `continue` cannot be differentiated", 5)):
        with pytest.raises(qd.TranspileError, match=message) as info:
            qd.translate(kernel.grad, "cuda")
        if line is not None:
            assert info.value.loc.line == _kernel_line(kernel, line)

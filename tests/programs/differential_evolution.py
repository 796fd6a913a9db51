"""A differential evolution over the sphere function, shaped like Taichi's example
(python/taichi/examples/machine_learning/differential_evolution.py; this is our own code): a
serial kernel whose loop runs `for it in range(1, iters + 1)` and records each iteration in
fields that have `iters` rows, so the last iteration writes one past the end of `best_fit`
and a whole row past the end of `history`. Without guard zones that corrupted the host heap
on the CPU executor ("corrupted double-linked list", SIGSEGV) some time later.

    python differential_evolution.py vulkan|cpu-cuda|cpu-hip

prints the error the overrun raised, then runs on: more kernels, checked against NumPy."""
import sys

import numpy as np

import transpiler as qd

arch = sys.argv[1] if len(sys.argv) > 1 else "cpu-cuda"
qd.init(arch="vulkan" if arch == "vulkan" else "cpu", **({"dialect": "hip"} if arch == "cpu-hip" else {}))

search_num, dim, max_iter = 20, 2, 50
lb = qd.field(qd.f32, shape=dim)
ub = qd.field(qd.f32, shape=dim)
pop = qd.field(qd.f32, shape=(search_num, dim))
fit = qd.field(qd.f32, shape=search_num)
trial = qd.field(qd.f32, shape=dim)
best_fit = qd.field(qd.f32, shape=max_iter)
history = qd.field(qd.f32, shape=(max_iter, search_num, dim))


@qd.func
def sphere_row(i: qd.i32) -> qd.f32:
    s = 0.0
    for j in range(dim):
        s += pop[i, j] * pop[i, j]
    return s


@qd.func
def pick(avoid: qd.i32) -> qd.i32:
    k = qd.cast(qd.random(qd.f32) * (search_num - 1), qd.i32)
    if k >= avoid:
        k += 1
    return k


@qd.kernel
def evolve(iters: qd.i32):
    for _ in range(1):
        for i in range(search_num):
            fit[i] = sphere_row(i)
        for it in range(1, iters + 1):
            best = fit[0]
            for i in range(search_num):
                a, b, c = pick(i), pick(i), pick(i)
                for j in range(dim):
                    v = pop[c, j] + 0.7 * (pop[a, j] - pop[b, j])
                    trial[j] = qd.min(qd.max(v, lb[j]), ub[j])
                s = 0.0
                for j in range(dim):
                    s += trial[j] * trial[j]
                if s < fit[i]:
                    fit[i] = s
                    for j in range(dim):
                        pop[i, j] = trial[j]
                best = qd.min(best, fit[i])
            best_fit[it] = best  # it == iters on the last iteration: one past the end
            for i, j in qd.ndrange(search_num, dim):
                history[it, i, j] = pop[i, j]  # a whole row past the end


@qd.kernel
def scale(x: qd.types.ndarray(qd.f32, ndim=1), k: qd.f32):
    for i in x:
        x[i] = x[i] * k + fit[i % search_num]


def main() -> None:
    lb.from_numpy(np.full(dim, -100, np.float32))
    ub.from_numpy(np.full(dim, 100, np.float32))
    rng = np.random.default_rng(1)
    pop.from_numpy(rng.uniform(-100, 100, (search_num, dim)).astype(np.float32))
    churn = [np.ones(k, np.float32) for k in range(1, 400)]  # heap neighbours a stray write would hit
    try:
        evolve(max_iter)
    except RuntimeError as exc:  # (the runtime's KernelError)
        print(f"{type(exc).__name__}: {exc}")
    del churn
    fits = fit.to_numpy()
    assert np.allclose(fits, (pop.to_numpy() ** 2).sum(axis=1), rtol=1e-5), "fit lost its values"
    assert np.all(np.diff(best_fit.to_numpy()[1:]) <= 0), "the best fitness must never grow"
    for n in (5, 1000, 100_000):  # small (guarded copies) and large (in place) NumPy arrays
        x = rng.standard_normal(n).astype(np.float32)
        want = x * 3 + fits[np.arange(n) % search_num]
        scale(x, 3.0)
        assert np.allclose(x, want, rtol=1e-5), n
        churn = [np.ones(k, np.float32) * k for k in range(1, 400)]
        del churn
    print("ok")


main()

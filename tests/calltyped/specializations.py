"""One kernel launched with several specializations (dtypes, ndarray ranks, a qd.template()
int), a data-oriented solver built inside main() whose kernel methods read its state, and
a repeated launch of each (which must not add a specialization): tests/test_emit_run.py
emits it with --run. Prints a checksum per result, computed on random data."""
import sys

import numpy as np

import transpiler as qd


@qd.kernel
def scale(x: qd.types.ndarray(), out: qd.types.ndarray(), factor: qd.template()):
    for I in qd.grouped(x):
        out[I] = x[I] * factor


@qd.data_oriented
class Solver:
    def __init__(self, n: int, substeps: int):
        self.n = n
        self.substeps = substeps
        self.pos = qd.field(qd.f32, shape=n)
        self.vel = qd.field(qd.f32, shape=n)

    @qd.kernel
    def init(self, seed: qd.types.ndarray()):
        for i in range(self.n):
            self.pos[i] = seed[i]
            self.vel[i] = 0.5 * seed[i]

    @qd.kernel
    def step(self, dt: qd.f32):
        for i in range(self.n):
            for _ in qd.static(range(self.substeps)):
                self.pos[i] += self.vel[i] * dt


def main(argv: list[str]) -> int:
    qd.init(arch=qd.gpu)
    rng = np.random.default_rng(int(argv[0]) if argv else 7)
    a32 = rng.random(16, dtype=np.float32)
    au = rng.integers(0, 100, 16).astype(np.uint32)
    a2d = rng.random((4, 5), dtype=np.float32)
    ai = rng.integers(-50, 50, 16, dtype=np.int32)
    for x, factor in ((a32, 2), (au, 2), (a2d, 2), (ai, 3), (a32, 3), (a32, 2)):
        out = np.zeros_like(x)
        scale(x, out, factor)
        assert np.allclose(out, x * factor), (x.dtype, x.ndim, factor)
        print(f"scale {x.dtype} {x.ndim}-d x{factor}: {out.sum():.4f}")
    for n, substeps in ((16, 2), (8, 3)):
        solver = Solver(n, substeps)
        solver.init(a32[:n].copy())
        for _ in range(3):
            solver.step(0.1)
        want = a32[:n] + 3 * substeps * 0.1 * 0.5 * a32[:n]
        assert np.allclose(solver.pos.to_numpy(), want, rtol=1e-5)
        print(f"solver {n} x{substeps}: {solver.pos.to_numpy().sum():.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

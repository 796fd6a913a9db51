"""qd.random in kernels: a Monte Carlo estimate, as Taichi's examples do it."""
import numpy as np

import transpiler as qd
from userguide.cases import case


@qd.kernel
def monte_carlo_pi(samples: int) -> float:
    inside = 0
    for i in range(samples):
        x = qd.random()
        y = qd.random()
        if x * x + y * y < 1.0:
            inside += 1
    return 4.0 * inside / samples


@case(monte_carlo_pi)
def _(rng):
    def check(result):
        assert abs(result - np.pi) < 0.02  # 200k samples: 4 standard deviations
    return (200000,), check


@qd.kernel
def dice(rolls: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> None:
    for i in range(rolls.shape[0]):
        rolls[i] = qd.cast(qd.random() * 6.0, qd.i32) + 1


@case(dice)
def _(rng):
    rolls = np.zeros(60000, np.int32)

    def check(_):
        counts = np.bincount(rolls, minlength=7)[1:]
        assert rolls.min() == 1 and rolls.max() == 6
        chi2 = ((counts - 10000) ** 2 / 10000).sum()
        assert chi2 < 20.5  # chi-square, 5 degrees of freedom, p = 0.001
    return (rolls,), check

"""``qd.random(dtype)``: counter-based random numbers, written once in the kernel language so
every target and executor computes the same ones.

Each iteration of a task has its own stream: a 32-bit state derived from the launch's seed
(``Param.role == "random_seed"``, a new one per launch), the task and the iteration's loop
indices; each call advances it by the golden-ratio increment (a Weyl sequence) and returns
the PCG output hash of it (O'Neill's RXS-M-XS 32-bit permutation). The numbers depend on the
iteration, never on which thread or block ran it, so the CPU emulator, Vulkan and a GPU
agree however they split the grid.

Floats come from the top bits: f32 in [0, 1) from 24 bits, f64 from two draws (53 bits).
``qd.randn`` makes a standard normal value of two uniform ones (Box-Muller).
Statistical quality is checked by tests/test_random.py (moments and a chi-square per dtype).
"""
from __future__ import annotations

from . import qd

GOLDEN = 0x9E3779B9  # 2**32 / phi: consecutive states stay far apart


@qd.func
def pcg(v):
    state = v * qd.u32(747796405) + qd.u32(2891336453)
    word = ((state >> ((state >> qd.u32(28)) + qd.u32(4))) ^ state) * qd.u32(277803737)
    return (word >> qd.u32(22)) ^ word


@qd.func
def draw(state, dtype: qd.template()):
    """A value of ``dtype`` from the state after an advance (f64, i64 and u64 use the
    state's hash and the hash of that: two draws' worth of bits)."""
    r = pcg(state)
    if qd.static(dtype == qd.f32 or dtype == qd.f16):
        return qd.cast(qd.cast(r >> qd.u32(8), qd.f32) * (1.0 / 16777216.0), dtype)
    elif qd.static(dtype == qd.f64):
        r2 = pcg(r)
        hi = qd.cast(r >> qd.u32(5), qd.f64)
        lo = qd.cast(r2 >> qd.u32(6), qd.f64)
        return (hi * 67108864.0 + lo) * (1.0 / 9007199254740992.0)
    elif qd.static(dtype == qd.i64 or dtype == qd.u64):
        r2 = pcg(r)
        return qd.cast((qd.cast(r, qd.u64) << qd.u64(32)) | qd.cast(r2, qd.u64), dtype)
    else:
        return qd.cast(r, dtype)


@qd.func
def normal(dtype: qd.template()):
    """``qd.randn(dt)``: a standard normal value (mean 0, variance 1) from two uniform draws
    (the Box-Muller transform); ``1 - u`` keeps the logarithm's argument in (0, 1]."""
    u = 1.0 - qd.random(dtype)
    turn = qd.random(dtype)
    return qd.sqrt(-2.0 * qd.log(u)) * qd.cos(6.283185307179586 * turn)

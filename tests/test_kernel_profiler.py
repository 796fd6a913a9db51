"""``qd.profiler``: with ``qd.init(kernel_profiler=True)`` every kernel call's run time is recorded
(replayed calls too), printed per kernel in Quadrants' table and queried by name; without it
the profiler says how to turn it on."""
from __future__ import annotations

import re

import numpy as np
import pytest

import transpiler as qd
from conftest import init_executor

values = qd.field(qd.f32, shape=4096)


@qd.kernel
def fill(scale: qd.f32):
    for i in values:
        values[i] = i * scale


@qd.kernel
def norm2() -> qd.f32:
    s = 0.0
    for i in values:
        s += values[i] * values[i]
    return s


def test_calls_are_counted_and_timed(executor, capsys):
    init_executor(executor, kernel_profiler=True)
    for k in range(5):
        fill(0.5 + k)
    fill(4.5)  # the same arguments as the last call: replayed, and counted
    for _ in range(3):
        total = norm2()
    scaled = np.arange(4096, dtype=np.float64) * 4.5
    assert total == pytest.approx(float(scaled @ scaled), rel=1e-5)
    r = qd.profiler.query_kernel_profiler_info("fill")
    assert r.counter == 6 and 0 < r.min <= r.avg <= r.max
    assert qd.profiler.query_kernel_profiler_info("norm2").counter == 3
    assert qd.profiler.query_kernel_profiler_info("never_called").counter == 0
    total_s = qd.profiler.get_kernel_profiler_total_time()
    assert total_s == pytest.approx((r.avg * 6 + qd.profiler.query_kernel_profiler_info("norm2").avg * 3) / 1000)

    capsys.readouterr()
    qd.profiler.print_kernel_profiler_info()
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("Kernel Profiler(count, default) @ ")
    assert lines[3] == "[      %     total   count |      min       avg       max   ] Kernel name"
    rows = {line.rsplit("] ", 1)[1]: line for line in lines if re.match(r"\[ *\d+\.\d\d% ", line)}
    assert set(rows) == {"fill", "norm2"}
    assert re.match(r"\[ *\d+\.\d\d% +\d+\.\d{3} s +6x \|", rows["fill"])
    assert lines[-2].startswith("[100.00%] Total execution time:") and lines[-2].endswith("number of results: 2")

    qd.profiler.print_kernel_profiler_info("trace")
    trace = [line for line in capsys.readouterr().out.splitlines() if line.endswith(("] fill", "] norm2"))]
    assert [line.rsplit(" ", 1)[1] for line in trace] == ["fill"] * 6 + ["norm2"] * 3
    qd.profiler.clear_kernel_profiler_info()
    assert qd.profiler.query_kernel_profiler_info("fill").counter == 0
    with pytest.raises(ValueError, match="'count' or 'trace'"):
        qd.profiler.print_kernel_profiler_info("sideways")


def test_without_kernel_profiler_it_says_how_to_turn_it_on():
    qd.init(arch="cpu")
    fill(1.0)
    with pytest.warns(UserWarning, match=r"use 'qd.init\(kernel_profiler = True\)' to turn on KernelProfiler"):
        assert qd.profiler.query_kernel_profiler_info("fill") is None
    with pytest.warns(UserWarning):
        qd.profiler.print_kernel_profiler_info()

"""The SIMT hazard checker: each hazard class at its exact line, no false alarms on the
correct patterns of Quadrants' guides and the CUDA inter-block idioms (the examples),
warnings that print and go on, and the ways to silence them."""
from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import transpiler as qd

from conftest import ROOT, load_module, target_names

FILE = Path(__file__).resolve().parent / "hazard_kernels.py"
MODULE = load_module(FILE)
LINES = FILE.read_text().splitlines()
MARK = re.compile(r"#\s*hazard(?:@(\w+))?:\s*([\w-]+)")
MARKS = {n + 1: MARK.search(line) for n, line in enumerate(LINES) if MARK.search(line)}


def marked(kernel):
    first = kernel.fn.__code__.co_firstlineno
    starts = sorted(k.fn.__code__.co_firstlineno for k in vars(MODULE).values() if isinstance(k, qd.Kernel))
    end = next((s for s in starts if s > first), len(LINES) + 1)
    return [(line, m) for line, m in MARKS.items() if first <= line < end]


ERRORS = [k for k in vars(MODULE).values() if isinstance(k, qd.Kernel)
          and any(m.group(2).startswith("divergent") for _, m in marked(k))]
WARNINGS = [k for k in vars(MODULE).values() if isinstance(k, qd.Kernel)
            and any(not m.group(2).startswith("divergent") for _, m in marked(k))]
CLEAN = [MODULE.clean_uniform_branches, MODULE.clean_volatile_spin, MODULE.silenced_spin, MODULE.clean_block_tiles]


@pytest.mark.parametrize("kernel", ERRORS, ids=[k.__name__ for k in ERRORS])
def test_divergent_collectives_are_errors(kernel):
    ((line, m),) = marked(kernel)
    with pytest.raises(qd.TranspileError) as info:
        qd.translate(kernel, "cuda")
    err = info.value
    assert err.loc.line == line, str(err)
    scope = "block" if m.group(2) == "divergent-block" else "subgroup"
    assert f"reached only by some {'threads of the block' if scope == 'block' else 'lanes of the subgroup'}" \
        in err.message
    assert err.hint and "hint:" in str(err)


@pytest.mark.parametrize("kernel", WARNINGS, ids=[k.__name__ for k in WARNINGS])
def test_warnings_are_located_and_translation_goes_on(kernel):
    ((line, m),) = marked(kernel)
    target = m.group(1) or "cuda"
    tr = qd.translate(kernel, target, warn=False)
    assert [(h.kind, h.loc.line) for h in tr.warnings] == [(m.group(2), line)]
    assert tr.sources  # the source is still produced
    if m.group(1):  # target-specific: the other targets stay quiet
        assert qd.translate(kernel, "cuda", warn=False).warnings == []


def test_python_api_issues_hazard_warnings():
    with pytest.warns(qd.HazardWarning, match="spin forever"):
        qd.translate(MODULE.spin_on_plain_load, "glsl")


@pytest.mark.parametrize("kernel", CLEAN, ids=[k.__name__ for k in CLEAN])
@pytest.mark.parametrize("target", target_names())
def test_no_false_alarms(kernel, target):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            tr = qd.translate(kernel, target)
        except qd.TranspileError as exc:  # a target may lack a feature; that is not a hazard
            assert "reached only by some" not in exc.message, str(exc)
            return
    assert tr.warnings == []


# Each seed pattern, with what it needs of a target (the block library is built on subgroups).
SEEDS = {"last_block_reduce": ("subgroups",), "work_queue": (), "lookback_scan": ("subgroups",)}


@pytest.mark.parametrize("target,example", [pytest.param(t, ex, id=f"{t}-{ex}") for ex, needs in SEEDS.items()
                                            for t in target_names(*needs)])
def test_seed_patterns_pass_clean(example, target):
    module = load_module(ROOT / "examples" / f"{example}.py")
    for kernel in [v for v in vars(module).values() if isinstance(v, qd.Kernel)]:
        tr = qd.translate(kernel, target, warn=False)
        assert tr.warnings == [], [str(w) for w in tr.warnings]


def cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_prints_warnings_and_exits_0():
    r = cli("emit", "tests/hazard_kernels.py", "--kernel", "spin_on_plain_load")
    assert r.returncode == 0
    assert re.search(r"tests/hazard_kernels.py:\d+:9: warning: this loop waits on `flag\[...\]`", r.stderr)
    assert "hint: read it with qd.volatile_load(flag[...])" in r.stderr


def test_cli_errors_exit_1_and_no_hazards_skips_the_checker():
    r = cli("emit", "tests/hazard_kernels.py", "--kernel", "sync_in_thread_branch")
    assert r.returncode == 1 and "block.sync() is reached only by some threads" in r.stderr
    r = cli("emit", "tests/hazard_kernels.py", "--kernel", "sync_in_thread_branch", "--no-hazards")
    assert r.returncode == 0, r.stderr


def test_calling_a_kernel_checks_hazards_before_running(executor):
    with pytest.raises(qd.TranspileError, match="reached only by some threads of the block"):
        MODULE.sync_in_thread_branch(np.zeros(64, np.float32))


def test_block_aligned_tiles_sync_under_their_own_condition(executor, rng):
    """`i // 32` with block_dim=32 over a multiple of 32 is one value per block: the barriers
    under a loop whose trip count depends on it are reached by every thread of the block."""
    tiles, rows = 3, 2
    a = rng.standard_normal(rows * tiles * 32).astype(np.float32)
    n = rng.integers(0, 4, tiles).astype(np.int32)
    want = a.reshape(rows * tiles, 32).copy()
    for b in range(rows * tiles):
        for k in range(int(n[b % tiles]) + b // tiles):
            want[b] = want[b][::-1] + np.float32(k)
    MODULE.clean_block_tiles(a, n, tiles, rows)
    np.testing.assert_array_equal(a, want.reshape(-1))

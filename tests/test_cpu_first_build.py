"""A new plain kernel's first build on the CPU executor (cpu_emulator/first_build.py): a light
build (-O0, in a compiler started ahead) runs the first calls while the optimised one is built
on a thread; both compute the same bits, a later call swaps the optimised module in, the cache
keeps it for the next process, and an exit in the middle of it leaves neither a process nor a
broken cache entry behind."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import transpiler as qd
from transpiler.runtime import cpu_emulator as C, current
from transpiler.runtime.cpu_emulator import first_build



def _light_builds() -> bool:
    try:
        return C._lld(C.find_compiler()) is not None
    except Exception:  # noqa: BLE001 - no C++ compiler at all
        return False


pytestmark = [pytest.mark.toolchain, pytest.mark.skipif(not _light_builds(), reason="needs clang and its ld.lld")]

f32v = qd.types.ndarray(dtype=qd.f32, ndim=1)
f64v = qd.types.ndarray(dtype=qd.f64, ndim=1)
i32v = qd.types.ndarray(dtype=qd.i32, ndim=1)
u32v = qd.types.ndarray(dtype=qd.u32, ndim=1)
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache of its own: no optimised build of these kernels is there yet."""
    monkeypatch.setenv("QD_CPU_CACHE", str(tmp_path / "cpu"))
    yield tmp_path / "cpu"
    qd.init(arch="cpu")


@qd.kernel
def mix(x: f32v, y: f32v, d: f64v, k: i32v, u: u32v, out: f32v, dout: f64v, iout: i32v, uout: u32v):
    for i in range(x.shape[0]):
        a, b = x[i], y[i]
        out[i] = qd.sin(a) * qd.exp(b) + qd.pow(qd.abs(a), b) / (b + 0.25) - qd.sqrt(qd.abs(a)) * qd.log(b + 2.0)
        dout[i] = qd.sin(d[i]) / (d[i] + 3.0) + qd.exp(d[i] * 0.5) * qd.pow(qd.abs(d[i]), 1.5)
        iout[i] = k[i] * 1103515245 + 12345  # wraps, as in Quadrants
        uout[i] = u[i] * qd.u32(2654435761) + (u[i] >> 7)


def inputs(n: int = 4099) -> tuple:
    rng = np.random.default_rng(46)
    return (rng.uniform(-4, 4, n).astype(np.float32), rng.uniform(-1, 3, n).astype(np.float32),
            rng.uniform(-5, 5, n), rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32),
            rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32))


def program_of(kernel) -> C.CpuProgram:
    (_, program), = [v for k, v in kernel._program_cache.items() if k[0] == current().serial]
    return program


def run_mix() -> list[np.ndarray]:
    x, y, d, k, u = inputs()
    outs = [np.zeros_like(x), np.zeros_like(d), np.zeros_like(k), np.zeros_like(u)]
    mix(x, y, d, k, u, *outs)
    return outs


class Never:
    """A background build that never finishes: every call runs the light module."""

    done = False
    module = None

    def __init__(self, build, then=None):
        pass


@pytest.mark.parametrize("dialect", ["cuda", "hip"])
def test_the_light_and_the_optimised_build_compute_the_same_bits(dialect, cache, monkeypatch):
    monkeypatch.setattr(first_build, "Rebuild", Never)
    qd.init(arch="cpu", dialect=dialect)
    light = run_mix()
    program = program_of(mix)
    assert program.module.build_dir.name.startswith("kl-") and program.rebuild is None  # called once: no build
    assert all((a == b).all() for a, b in zip(light, run_mix()))
    assert program.module.build_dir.name.startswith("kl-") and isinstance(program.rebuild, Never)
    qd.init(arch="cpu", dialect=dialect, light_first=False)
    optimised = run_mix()
    assert program_of(mix).module.build_dir.name.startswith("k-")
    for a, b in zip(light, optimised):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    x, y, d, k, u = inputs()
    want = (k.astype(np.int64) * 1103515245 + 12345).astype(np.int32)  # the wrapped product
    np.testing.assert_array_equal(light[2], want)
    np.testing.assert_array_equal(light[3], u * np.uint32(2654435761) + (u >> np.uint32(7)))
    np.testing.assert_allclose(light[1], np.sin(d) / (d + 3) + np.exp(d * 0.5) * np.abs(d) ** 1.5, rtol=1e-12)
    got = light[0].astype(np.float64)
    a, b = x.astype(np.float64), y.astype(np.float64)
    np.testing.assert_allclose(got, np.sin(a) * np.exp(b) + np.abs(a) ** b / (b + 0.25) -
                               np.sqrt(np.abs(a)) * np.log(b + 2), rtol=2e-5, atol=2e-5)


def test_a_later_call_runs_the_optimised_module_and_the_next_process_finds_it(cache):
    qd.init(arch="cpu")
    first = run_mix()
    program = program_of(mix)
    light = program.module
    assert light.build_dir.name.startswith("kl-") and program.rebuild is None  # (not for one call)
    run_mix()  # the second call starts the optimised build
    assert program.rebuild is not None
    assert program.rebuild.wait(120) and program.rebuild.error is None, program.rebuild.error
    again = run_mix()  # swaps the optimised module in first
    assert program.module is not light and program.module.build_dir.name.startswith("k-")
    assert program.rebuild is None
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    qd.init(arch="cpu")  # as a new process would: the optimised build is found, no light one
    run_mix()
    found = program_of(mix)
    assert found.rebuild is None and found.module.build_dir == program.module.build_dir and found.module.was_cached


def _short_program(tmp_path: Path, exit_wait_s: float, constant: float = 1.0) -> tuple[Path, list[str]]:
    """Run a program that calls a new kernel once and exits at once, its exit waiting at most
    ``exit_wait_s`` for the optimised build; the CPU cache folder and what the program printed."""
    kernel = tmp_path / "kern.py"
    kernel.write_text(textwrap.dedent(f"""\
        import numpy as np
        import transpiler as qd
        from transpiler.runtime.cpu_emulator import first_build

        first_build.EXIT_WAIT_S = {exit_wait_s}

        @qd.kernel
        def scale(x: qd.types.ndarray(dtype=qd.f32, ndim=1), a: qd.f32):
            for i in range(x.shape[0]):
                x[i] = x[i] * a + {constant}

        qd.init(arch="cpu")
        x = np.arange(1000, dtype=np.float32)
        scale(x, np.float32(2.0))
        scale(x, np.float32(1.0))  # a second call starts the optimised build
        (_, program), = scale._program_cache.values()
        print("light", program.module.build_dir.name.startswith("kl-"), "running", not program.rebuild.done,
              "ok", bool((x == np.arange(1000) * 2 + 2 * {constant}).all()))
        """))
    cache = tmp_path / "cpu"
    env = dict(os.environ, QD_CPU_CACHE=str(cache), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(kernel)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    left = [p for p in _processes() if str(cache) in p]
    assert not left, left  # no compiler or linker outlived the program
    entries = sorted(os.listdir(cache))
    assert not [e for e in entries if e.endswith(".tmp")], entries
    for e in entries:
        if e.startswith(("k-", "kl-")):
            assert (cache / e / "kernel.so").is_file(), e
        if e.startswith("pch-"):
            assert (cache / e / "qd_simt.h.pch").is_file(), e
    assert [e for e in entries if e.startswith("kl-")]
    return cache, proc.stdout.split()


def test_an_exit_during_the_background_build_kills_it_and_keeps_the_cache_whole(tmp_path):
    # (a fresh cache: the optimised build first builds its precompiled header, for seconds)
    cache, printed = _short_program(tmp_path, exit_wait_s=0.0)
    assert printed == ["light", "True", "running", "True", "ok", "True"], printed
    assert not [e for e in os.listdir(cache) if e.startswith("k-")]  # killed, not half-installed


def test_an_exit_lets_the_optimised_build_finish_into_the_cache(tmp_path):
    _short_program(tmp_path, exit_wait_s=0.0)  # the precompiled headers, whatever the build
    cache, printed = _short_program(tmp_path, exit_wait_s=120.0, constant=3.0)
    assert printed == ["light", "True", "running", "True", "ok", "True"], printed
    # the light builds of both kernels, and the second kernel's optimised build, which the
    # exit waited for (the next process loads it: no light build, no -O0 code)
    assert len([e for e in os.listdir(cache) if e.startswith("kl-")]) == 2
    assert len([e for e in os.listdir(cache) if e.startswith("k-")]) == 1


def _processes() -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                pass
    return found

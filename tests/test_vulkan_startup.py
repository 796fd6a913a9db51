"""qd.init(arch=qd.vulkan) makes the device in a thread of its own where this configuration
made one before (a record in the cache folder), and in qd.init itself otherwise, so that a
machine without a working device still falls back at qd.init. Either way kernels compute the
same; a device that fails in the thread fails its first use and drops the record."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    import transpiler as qd
    from transpiler.runtime import current
    from transpiler.runtime.vulkan import _Beside

    @qd.kernel
    def axpy(a: qd.f32, x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]

    qd.init(arch=qd.vulkan, enable_fallback=False)
    beside = isinstance(getattr(current()._device, "__self__", None), _Beside)
    rng = np.random.default_rng(int(sys.argv[1]))
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    dx, dy = qd.ndarray(qd.f32, 1000), qd.ndarray(qd.f32, 1000)
    dx.from_numpy(x)
    dy.from_numpy(y)
    axpy(np.float32(1.5), dx, dy)
    np.testing.assert_allclose(dy.to_numpy(), np.float32(1.5) * x + y, rtol=1e-6)
    print("beside" if beside else "in place", current().device.name, sep="|")
""")


@pytest.mark.toolchain
def test_the_device_is_made_in_place_first_and_beside_qd_init_after(tmp_path):
    pytest.importorskip("vulkan")
    script = tmp_path / "axpy.py"  # a kernel's source is read from its file
    script.write_text(PROGRAM)
    env = dict(os.environ, QD_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    runs = [subprocess.run([sys.executable, str(script), str(seed)], capture_output=True, text=True, env=env,
                           cwd=ROOT) for seed in (1, 2)]
    for run in runs:
        if "ToolchainMissing" in run.stderr:
            pytest.skip(run.stderr.strip().splitlines()[-1])
        assert run.returncode == 0, run.stderr
    (first, name), (second, again) = (r.stdout.strip().split("|") for r in runs)
    assert (first, second) == ("in place", "beside") and name == again
    assert len(list((tmp_path / "cache" / "vulkan").iterdir())) == 1


@pytest.mark.toolchain
def test_a_device_that_fails_beside_fails_its_first_use_and_drops_the_record(tmp_path, monkeypatch):
    pytest.importorskip("vulkan")
    from transpiler.errors import ToolchainMissing
    from transpiler.runtime import vulkan

    monkeypatch.setenv("QD_CACHE_DIR", str(tmp_path))
    choice = "no device is called this"
    record = Path(vulkan._record_path(choice, False))
    record.parent.mkdir(parents=True)
    record.touch()  # as if it had worked before
    backend = vulkan.VulkanBackend(device=choice)  # returns: the device is being made
    with pytest.raises(ToolchainMissing, match="no device is called this"):
        backend.device
    assert not record.exists()
    with pytest.raises(ToolchainMissing, match="no device is called this"):  # in qd.init again, so it may fall back
        vulkan.VulkanBackend(device=choice)


@pytest.mark.toolchain
def test_the_start_up_bench_runs_two_new_kernels_and_checks_them(tmp_path):
    """bench/vs_startup.py, the start-up table's runner: two kernels no cache has, both
    results checked against NumPy, every stage timed."""
    pytest.importorskip("vulkan")
    import json

    env = dict(os.environ, QD_MODULE="transpiler", QD_CACHE_DIR=str(tmp_path))
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "vs_startup.py")], capture_output=True, text=True,
                         env=env, cwd=tmp_path)
    if "ToolchainMissing" in run.stderr:
        pytest.skip(run.stderr.strip().splitlines()[-1])
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["ok"] is True
    assert all(out[k] > 0 for k in ("import_ms", "init_ms", "first_ms", "next_ms", "total_ms"))


def test_an_early_rendering_warm_up_loads_the_emitter_without_waiting_for_what_runs_beside(tmp_path, monkeypatch):
    """With render_early (the Vulkan device made beside qd.init), the emitter comes right after
    the elementwise kernel and before ``then``, not after ``beside`` (glslang's tables, the
    longest part), and the block-level kernel not at all (it would run beside the first call)."""
    import threading

    from transpiler import runtime
    from transpiler.runtime import warm_up

    monkeypatch.setattr(warm_up, "_started", set())
    monkeypatch.setattr(runtime, "_offline_cache", str(tmp_path))
    for kernel in (warm_up.warm_up, warm_up.warm_up_block):  # as a new process has them
        for memo in ("_ir_cache", "_program_cache", "_last_call"):
            kernel.__dict__.pop(memo, None)
    steps, rendered = [], threading.Event()

    def logged(name, fn):
        def step(*args):
            fn(*args)
            steps.append(name)
            if name == "emitter":
                rendered.set()
        return step

    monkeypatch.setattr(warm_up, "translate_plain", logged("plain", warm_up.translate_plain))
    monkeypatch.setattr(warm_up, "emitter_once", logged("emitter", warm_up.emitter_once))
    monkeypatch.setattr(warm_up, "translate_block", logged("block", warm_up.translate_block))
    warm_up.start("glsl", then=lambda: steps.append("then"),
                  beside=lambda: steps.append("beside " + ("after" if rendered.wait(30) else "before") + " emitter"),
                  render_early=True)
    for t in threading.enumerate():
        if t.name == "qd-warm-up-glsl":
            t.join(120)
    assert [s for s in steps if s != "beside after emitter"] == ["plain", "emitter", "then"]
    assert "beside after emitter" in steps
    cached = [f for _, _, files in os.walk(tmp_path) for f in files if not f.startswith(".")]
    assert len(cached) == 1  # the elementwise kernel, in the folder of the qd.init that started it

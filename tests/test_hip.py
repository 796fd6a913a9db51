"""The HIP target: one source that both hipcc and hipRTC compile, for gfx90a (wave64) and
gfx1030 (wave32); float atomicAdd reaching the hardware instruction; compiler messages
mapped back to Python lines. Every check runs the real compilers."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import transpiler as qd
from transpiler.errors import ToolchainMissing
from transpiler.toolchains import check_sources
from transpiler.toolchains.hip_check import compile_both

from conftest import KERNELS, load_module, toolchain_test

needs_hipcc = toolchain_test("needs hipcc (apt-get install hipcc)", shutil.which("hipcc") is None)

atomics = load_module(KERNELS / "atomics.py")
dtypes = load_module(KERNELS / "dtypes.py")
THIS = Path(__file__).name


@qd.kernel
def wide_atomics(c: qd.types.ndarray(dtype=qd.i64, ndim=1), f: qd.types.ndarray(dtype=qd.f32, ndim=1),
                 g: qd.types.ndarray(dtype=qd.f64, ndim=1), bits: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(c.shape[0]):
        qd.atomic_min(c[0], qd.i64(i))
        qd.atomic_max(c[1], qd.i64(i))
        f[1] = qd.atomic_add(f[0], 1.5)
        g[0] += qd.f64(0.25)
        bits[i] = qd.math.ffs(c[i]) + qd.math.popcnt(c[i])


def assert_ok(verdicts, archs):
    assert verdicts
    for v in verdicts:
        assert v.ok, f"{v.tool} rejected {v.file}:\n{v.message}"
        for arch in archs:
            assert "hipcc 5" in v.tool and "hipRTC 5" in v.tool and arch in v.tool, v.tool


@pytest.mark.parametrize("kernel", [atomics.histogram, dtypes.widen, dtypes.narrow, wide_atomics],
                         ids=lambda k: k.__name__)
@needs_hipcc
def test_wave64_compiles_with_hipcc_and_hiprtc_for_gfx90a(kernel):
    tr = qd.translate(kernel, "hip")
    assert tr.manifest["subgroup_size"] == 64
    assert tr.manifest["requirements"]["offload_arch"] == ["gfx90a"]
    assert_ok(check_sources("hip", tr.sources, tr.manifest), ["gfx90a"])


@needs_hipcc
def test_wave32_compiles_for_gfx1030():
    tr = qd.translate(wide_atomics, "hip", wave32=True)
    assert tr.manifest["subgroup_size"] == 32
    assert tr.manifest["requirements"]["wavefront_size"] == 32
    assert "wave32" in next(iter(tr.sources.values())).splitlines()[0]
    assert_ok(check_sources("hip", tr.sources, tr.manifest), ["gfx1030"])


@needs_hipcc
def test_wave_size_must_match_the_architecture():
    tr = qd.translate(atomics.histogram, "hip")
    assert tr.manifest["requirements"]["arch_family"].startswith("gfx9")
    (v,) = check_sources("hip", tr.sources, tr.manifest, {"arch": "gfx1030"})
    assert not v.ok and "runs wave32 only" in v.message


def test_entry_point_signature():
    text = next(iter(qd.translate(atomics.histogram, "hip").sources.values()))
    assert 'extern "C" __global__ void __launch_bounds__(128) histogram(' in text


@needs_hipcc
@pytest.mark.skipif(shutil.which("llvm-objdump-19") is None, reason="needs llvm-objdump-19 (apt-get install llvm-19)")
def test_float_atomic_add_is_one_instruction_on_gfx90a(tmp_path):
    """ROCm 5.2's atomicAdd(float*) is a CAS loop; the helper reaches global_atomic_add_f32/f64
    on gfx90a through both compilers, and falls back to the CAS loop on gfx1030, which has
    no float atomic add in hardware."""
    name, text = next(iter(qd.translate(wide_atomics, "hip").sources.items()))
    for arch, native in (("gfx90a", True), ("gfx1030", False)):
        results = compile_both(name, text, [arch], str(tmp_path))
        assert all(r.ok for r in results), [r.log for r in results]
        for tool in ("hipcc", "hiprtc"):
            code = tmp_path / f"{name}.{tool}.{arch}.co"
            dis = subprocess.run(["llvm-objdump-19", "-d", f"--mcpu={arch}", str(code)],
                                 capture_output=True, text=True, check=True).stdout
            ops = re.findall(r"^\s+(global_atomic_\w+)", dis, re.M)
            assert ("global_atomic_add_f32" in ops) == native, (tool, arch, ops)
            assert ("global_atomic_add_f64" in ops) == native, (tool, arch, ops)
            assert "global_atomic_smin_x2" in ops and "global_atomic_smax_x2" in ops, (tool, arch, ops)
            if native:
                assert "global_atomic_cmpswap" not in ops, (tool, arch, ops)


@needs_hipcc
def test_broken_source_is_rejected_by_both_with_python_lines():
    tr = qd.translate(atomics.histogram, "hip")
    name, text = next(iter(tr.sources.items()))
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "atomics.py:14" in s)
    broken = text.replace("atomicMax(&counter[1], data[i])", "atomicMax(&counter[1], data[i], data)")
    assert broken != text
    (v,) = check_sources("hip", {name: broken}, tr.manifest)
    assert not v.ok
    assert "hipcc 5.2 (gfx90a): rejected" in v.message
    assert "hipRTC 5.2 (gfx90a): rejected" in v.message
    mapped = [m for m in v.message.splitlines() if m.startswith(f"atomics.py:14: {name}:{line}:")]
    assert len(mapped) == 2, v.message  # one error from each compiler
    assert all("no matching function for call to 'atomicMax'" in m for m in mapped)


def test_missing_hipcc_says_how_to_install(monkeypatch, tmp_path):
    tr = qd.translate(atomics.histogram, "hip")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolchainMissing) as exc:
        check_sources("hip", tr.sources, tr.manifest)
    assert "apt-get install" in str(exc.value) and "hipcc" in str(exc.value)

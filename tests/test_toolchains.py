"""Every golden source is compiled by its real toolchain: NVRTC, hipcc + hipRTC, glslang +
spirv-val, and Metal (xcrun on macOS, the clang shim check elsewhere)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from transpiler.toolchains import check_sources

from conftest import target_names

pytestmark = [pytest.mark.toolchain, pytest.mark.slow]

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"


def golden_translations():
    out = []
    for manifest_path in sorted(SNAPSHOTS.glob("*/*.json")):
        target = manifest_path.parent.name
        manifest = json.loads(manifest_path.read_text())
        out.append(pytest.param(target, manifest_path, manifest, id=f"{target}-{manifest['kernel']}"))
    return out


@pytest.mark.parametrize("target,manifest_path,manifest", golden_translations())
def test_golden_compiles(target, manifest_path, manifest):
    sources = {name: (manifest_path.parent / name).read_text() for name in manifest["files"]}
    verdicts = check_sources(target, sources, manifest)
    assert verdicts, "nothing was compiled"
    for v in verdicts:
        assert v.ok, f"{v.tool} rejected {v.file}:\n{v.message}"


def test_checks_and_the_emulator_leave_nothing_in_the_temp_folder(tmp_path, monkeypatch):
    """hipcc and hipRTC used to leave a `NAME-XXXXXX` folder in the temp directory per file."""
    import tempfile

    import transpiler as qd
    from conftest import ROOT, load_module
    from transpiler.runtime.cpu_emulator import build_module

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setenv("QD_CPU_CACHE", str(tmp_path / "cache"))
    saxpy = load_module(ROOT / "examples" / "saxpy.py").saxpy
    for target in target_names():
        tr = qd.translate(saxpy, target)
        assert all(v.ok for v in check_sources(target, tr.sources, tr.manifest))
    (name, text), = qd.translate(saxpy, "hip").sources.items()
    build_module(text, name, dialect="hip")
    left = sorted(p.name for p in temp.iterdir() if not p.name.startswith("_jinja2-cache"))
    assert left == []

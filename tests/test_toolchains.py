"""Every golden source is compiled by its real toolchain: NVRTC, hipcc + hipRTC, glslang +
spirv-val, and Metal (xcrun on macOS, the clang shim check elsewhere)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from transpiler.toolchains import check_sources

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

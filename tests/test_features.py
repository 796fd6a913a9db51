"""The feature corpus (tests/features/): every feature's output on every target is a
snapshot, and every snapshot compiles with the target's real toolchain.

`pytest tests/test_features.py --update-snapshots` rewrites the snapshots after an intended
change (and removes those of deleted features); review the diff before committing."""
from __future__ import annotations

import json
import shutil

import pytest

import transpiler as qd
from features.corpus import SNAPSHOTS, features, ir_file, snapshot_files
from transpiler.errors import ToolchainMissing
from transpiler.toolchains import check_sources

FEATURES = features()
IDS = [f.name for f in FEATURES]


def check_or_update(files: dict[str, str], update: bool) -> None:
    for rel, text in files.items():
        path = SNAPSHOTS / rel
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            continue
        assert path.exists(), f"missing snapshot {rel}; run pytest tests/test_features.py --update-snapshots"
        assert path.read_text() == text, f"{rel} differs from its snapshot (--update-snapshots to accept)"


@pytest.mark.parametrize("feature", FEATURES, ids=IDS)
def test_ir(feature, request):
    check_or_update(ir_file(feature), request.config.getoption("--update-snapshots"))


@pytest.mark.parametrize("target", qd.TARGETS)
@pytest.mark.parametrize("feature", FEATURES, ids=IDS)
def test_snapshot(feature, target, request):
    check_or_update(snapshot_files(feature, target), request.config.getoption("--update-snapshots"))


def test_no_stale_snapshots(request):
    expected = set()
    for feature in FEATURES:
        expected |= set(ir_file(feature))
        for target in qd.TARGETS:
            expected |= set(snapshot_files(feature, target))
    present = {str(p.relative_to(SNAPSHOTS)) for p in SNAPSHOTS.rglob("*") if p.is_file()}
    if request.config.getoption("--update-snapshots"):
        for rel in present - expected:
            (SNAPSHOTS / rel).unlink()
        for folder in sorted((p for p in SNAPSHOTS.rglob("*") if p.is_dir()), reverse=True):
            if not any(folder.iterdir()):
                folder.rmdir()
        return
    assert present <= expected, f"stale snapshots: {sorted(present - expected)}"


def snapshot_translations():
    """(target, folder, manifest) for every snapshot that is a translation, not an error."""
    out = []
    for manifest_path in sorted(SNAPSHOTS.glob("*/*/*.json")):
        folder = manifest_path.parent
        manifest = json.loads(manifest_path.read_text())
        out.append(pytest.param(folder.name, folder, manifest, id=f"{folder.parent.name}-{folder.name}"))
    return out


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("target,folder,manifest", snapshot_translations())
def test_snapshot_compiles(target, folder, manifest):
    sources = {name: (folder / name).read_text() for name in manifest["files"]}
    try:
        verdicts = check_sources(target, sources, manifest)
    except ToolchainMissing as exc:
        if target == "cuda" and manifest["requirements"].get("nvshmem") and shutil.which("nvcc") is None:
            pytest.skip(str(exc))
        raise
    assert verdicts
    for v in verdicts:
        assert v.ok, f"{v.tool} rejected {v.file}:\n{v.message}"

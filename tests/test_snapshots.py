"""Golden snapshots of the IR dump and every target's output for the kernel corpus.

Run `pytest tests/test_snapshots.py --update-snapshots` to rewrite them after an
intended change, then review the diff. A target that rejects a kernel has its located
diagnostic as the snapshot (`<kernel>.error`)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import transpiler as qd
from transpiler.ir.printer import dump_kernel

from conftest import corpus

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
CASES = corpus()


def snapshot_files(kernel, target: str, template_args: dict) -> dict[str, str]:
    """The files one (kernel, target) pair snapshots to, by relative path."""
    stem = kernel.__name__
    try:
        tr = qd.translate(kernel, target, template_args=template_args, warn=False)
    except qd.TranspileError as exc:
        return {f"{target}/{stem}.error": exc.message + "\n"}
    files = {f"{target}/{name}": text for name, text in tr.sources.items()}
    files[f"{target}/{stem}.json"] = json.dumps(tr.manifest, indent=2) + "\n"
    return files


def check_or_update(files: dict[str, str], update: bool) -> None:
    for rel, text in files.items():
        path = SNAPSHOTS / rel
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            continue
        assert path.exists(), f"missing snapshot {rel}; run pytest --update-snapshots and review it"
        assert path.read_text() == text, f"{rel} differs from its snapshot (pytest --update-snapshots to accept)"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_ir_snapshot(case, request):
    _, kernel, template_args = case
    from transpiler.pipeline import lower

    text = dump_kernel(lower(kernel, template_args))
    check_or_update({f"ir/{kernel.__name__}.txt": text}, request.config.getoption("--update-snapshots"))


@pytest.mark.parametrize("target", qd.TARGETS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_target_snapshot(case, target, request):
    _, kernel, template_args = case
    check_or_update(snapshot_files(kernel, target, template_args), request.config.getoption("--update-snapshots"))


def test_no_stale_snapshots(request):
    """Every snapshot file belongs to a current (kernel, target) pair (updating removes the rest)."""
    expected = set()
    for _, kernel, template_args in CASES:
        expected.add(f"ir/{kernel.__name__}.txt")
        for target in qd.TARGETS:
            expected |= set(snapshot_files(kernel, target, template_args))
    present = {str(p.relative_to(SNAPSHOTS)) for p in SNAPSHOTS.rglob("*") if p.is_file()}
    if request.config.getoption("--update-snapshots"):
        for rel in present - expected:
            (SNAPSHOTS / rel).unlink()
        return
    assert present <= expected, f"stale snapshots: {sorted(present - expected)}"

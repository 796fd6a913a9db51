"""Ruff over the whole repository with the configuration in pyproject.toml: anything it reports
fails the suite with ruff's own report. Ruff runs from this interpreter's environment
(``python -m ruff``; ``scripts/setup.sh toolchains`` installs the pinned version) and takes
well under a second, so it is in the fast loop."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "pyproject.toml"

# TEMPORARY, issue 43 only: the files other branches are making clean at the same time, left out
# of the check until those branches merge. Emptied at the merge; nothing is ever added to it.
PENDING: list[str] = []

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ruff") is None,
                                reason="ruff is not installed here (pip install ruff; scripts/setup.sh toolchains)")


def ruff(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    # --config: every file is checked with the repository's one configuration, wherever it lies
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--config", str(CONFIG), "--no-cache", *args],
                          cwd=ROOT, input=stdin, capture_output=True, text=True)


def test_the_repository_is_ruff_clean():
    r = ruff("--output-format", "concise", *(f"--extend-exclude={p}" for p in PENDING), ".")
    assert r.returncode == 0, f"ruff check (config: pyproject.toml) reports:\n{r.stdout}{r.stderr}"


UNTYPED_LOCAL_IMPORT = "def f(x):\n    import os\n    return os.sep + x\n"
REASONED_LOCAL_IMPORT = "def f(x: str) -> str:\n    import os  # noqa: PLC0415 - a reason\n    return os.sep + x\n"


@pytest.mark.parametrize("path, source, expected", [
    ("transpiler/passes/probe.py", UNTYPED_LOCAL_IMPORT, {"ANN001", "ANN201", "PLC0415"}),
    ("transpiler/passes/probe.py", REASONED_LOCAL_IMPORT, set()),
    ("transpiler/frontend/probe.py", UNTYPED_LOCAL_IMPORT, {"PLC0415"}),  # lowering methods: internal
    ("transpiler/lang/tile.py", UNTYPED_LOCAL_IMPORT, {"PLC0415"}),       # kernel language: annotations are semantics
    ("examples/probe.py", UNTYPED_LOCAL_IMPORT, {"PLC0415"}),
    ("tests/test_probe.py", UNTYPED_LOCAL_IMPORT, set()),
    ("bench/probe.py", UNTYPED_LOCAL_IMPORT, set()),
])
def test_the_configuration_holds_the_rules(path, source, expected):
    """What the configuration promises: a function-local import needs a reason, and a function
    its types, except where the per-file table says why not."""
    r = ruff("--output-format", "json", "--stdin-filename", path, "-", stdin=source)
    assert r.returncode in (0, 1), r.stderr
    assert {d["code"] for d in json.loads(r.stdout)} == expected

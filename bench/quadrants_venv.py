"""The Quadrants 1.3.3 the comparisons run against (bench/vs_quadrants.py, bench/algorithms.py),
in a virtual environment of the bench's own, bench/.venv-quadrants, as cupyx.jit and Warp have
bench/.venv-competitors.

    python bench/quadrants_venv.py     # create and fill it (what `make bench` does); idempotent

Which interpreter runs Quadrants: $QD_QUADRANTS_PYTHON, else bench/.venv-quadrants, else
/tmp/qvenv (a machine set up before this venv existed, or offline: make one there by hand with
`python3 -m venv /tmp/qvenv && /tmp/qvenv/bin/pip install quadrants==1.3.3 numpy`)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

VERSION = "1.3.3"
VENV = Path(__file__).resolve().parent / ".venv-quadrants"
PACKAGES = [f"quadrants=={VERSION}", "numpy"]
OFFLINE_FALLBACK = "/tmp/qvenv/bin/python"


def _has_quadrants(python: str) -> bool:
    """Whether ``python`` has Quadrants VERSION (its metadata: importing it takes 0.3 s)."""
    probe = f"import importlib.metadata as m, sys; sys.exit(m.version('quadrants') != '{VERSION}')"
    try:
        return subprocess.run([python, "-c", probe], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def quadrants_python() -> str:
    """The interpreter to run Quadrants with (it may not exist: callers say so)."""
    chosen = os.environ.get("QD_QUADRANTS_PYTHON")
    if chosen:
        return chosen
    own = VENV / "bin" / "python"
    return str(own) if own.exists() else OFFLINE_FALLBACK


def install() -> str:
    """Create bench/.venv-quadrants with Quadrants VERSION unless it has it; what happened."""
    python = str(VENV / "bin" / "python")
    if os.path.exists(python) and _has_quadrants(python):
        return f"Quadrants {VERSION} already in {VENV}"
    try:
        if not os.path.exists(python):
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *PACKAGES], check=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        return (f"installing {', '.join(PACKAGES)} into {VENV} failed ({exc}); the comparisons use "
                f"$QD_QUADRANTS_PYTHON or {OFFLINE_FALLBACK}")
    return f"installed Quadrants {VERSION} into {VENV}"


if __name__ == "__main__":
    print(install())

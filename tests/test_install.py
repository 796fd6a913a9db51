"""`pip install .` (not editable) gives a package that finds its templates, its Metal shim and
the CPU emulator's sources from anywhere, and installs the `transpiler` command."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import json, transpiler as qd
from transpiler.toolchains.msl_check import SHIM_DIR
from pathlib import Path
import saxpy
tr = qd.translate(saxpy.saxpy, "glsl")
print(json.dumps({"files": sorted(tr.sources), "shim": (SHIM_DIR / "metal_stdlib").is_file(),
                  "package": qd.__file__}))
"""


def clean_copy(dest: Path) -> Path:
    """The checkout's tracked and new files only, as a fresh clone has them: a setuptools
    build folder left in the checkout would otherwise feed stale modules to the install."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\n")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def test_installed_package_finds_its_data(tmp_path):
    target = tmp_path / "site"
    source = clean_copy(tmp_path / "checkout")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--target", str(target), str(source)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    pkg = target / "transpiler"
    assert (pkg / "templates" / "cuda" / "module.cu.j2").is_file()
    assert (pkg / "templates" / "cxx" / "helpers.j2").is_file()
    assert (pkg / "templates" / "html" / "inspect.html.j2").is_file()
    assert list((pkg / "runtime" / "cpu_emulator").glob("*.h"))
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "saxpy.py").write_text((ROOT / "examples" / "saxpy.py").read_text())
    env = dict(os.environ, PYTHONPATH=f"{target}{os.pathsep}{work}")
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    assert '"files": ["saxpy.comp"]' in r.stdout and '"shim": true' in r.stdout
    assert str(target) in r.stdout  # the installed copy, not the checkout
    assert (target / "bin" / "transpiler").is_file()
    r = subprocess.run([sys.executable, "-m", "transpiler.cli", "inspect", "saxpy.py", "--html", "saxpy.html"],
                       capture_output=True, text=True, cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    assert 'data-py="8"' in (work / "saxpy.html").read_text()

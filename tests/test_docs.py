"""The documentation site builds strictly (`make docs`): a broken link, a page missing from the
nav, a snippet file that is gone or a docstring reference that does not resolve fails the build,
and a warning of any kind fails this test."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.toolchain, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent

if importlib.util.find_spec("mkdocs") is None:
    pytest.skip("mkdocs is not installed (scripts/setup.sh toolchains installs mkdocs-material and "
                "mkdocstrings[python])", allow_module_level=True)


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")  # Material's banner about its successor
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=ROOT, capture_output=True, text=True, env=env)


def warnings(r: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (r.stdout + r.stderr).splitlines() if re.match(r"\s*(WARNING|ERROR)\b", line)]


def test_the_site_builds_strictly_without_warnings(tmp_path):
    r = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert r.returncode == 0 and not warnings(r), r.stdout + r.stderr
    api = (tmp_path / "site" / "api.html").read_text()
    for name in ("transpiler.translate", "transpiler.pipeline.Translation", "transpiler.init", "transpiler.kernel"):
        assert f'id="{name}"' in api, f"the API page lost {name}"
    # The README's example and targets table reach the home page through snippet sections.
    home = (tmp_path / "site" / "index.html").read_text()
    assert "__launch_bounds__" in home and ".metal" in home


def test_a_broken_link_fails_the_build(tmp_path):
    """The same site with one page linking to a page that does not exist: strict mode refuses it."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for f in (ROOT / "docs").iterdir():
        if f.is_file():
            (docs / f.name).write_bytes(f.read_bytes())
    (docs / "index.md").write_text((docs / "index.md").read_text() + "\nSee [nothing](no-such-page.md).\n")
    config = (ROOT / "mkdocs.yml").read_text()
    assert "docs_dir: docs\n" in config
    config = config.replace("docs_dir: docs\n", f"docs_dir: {docs}\n")
    config = config.replace('paths: ["."]', f'paths: ["{ROOT}"]').replace('base_path: ["."]', f'base_path: ["{ROOT}"]')
    (tmp_path / "mkdocs.yml").write_text(config)
    r = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert r.returncode != 0
    assert any("no-such-page.md" in w for w in warnings(r)), r.stdout + r.stderr

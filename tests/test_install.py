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
    assert (pkg / "runtime" / "spirv_compiler.cpp").is_file()  # the Vulkan runtime's in-process glslang
    assert (pkg / "cmake" / "TranspilerConfig.cmake").is_file()
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
    # the metadata `pip show` reads: the license, the project URLs, a LICENSE file in the wheel
    meta = next(target.glob("qd_transpiler-*.dist-info"))  # (the distribution qd-transpiler)
    fields = (meta / "METADATA").read_text()
    assert "License-Expression: Apache-2.0" in fields and "Project-URL: Documentation, " in fields
    assert "Classifier: Topic :: Software Development :: Compilers" in fields
    assert "Apache License" in next(meta.rglob("LICENSE")).read_text()


@pytest.mark.toolchain
def test_cmake_project_builds_against_the_installed_package_only(tmp_path):
    """examples/cpp_vulkan copied away from the checkout, configured with find_package(Transpiler)
    through `transpiler cmake-dir` of a `pip install --target` copy: it builds and prints OK."""
    if shutil.which("cmake") is None or shutil.which("glslangValidator") is None \
            or not Path("/usr/include/vulkan/vulkan.h").exists():
        pytest.skip("needs cmake, glslang-tools and libvulkan-dev (scripts/setup.sh toolchains installs them)")
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                        str(clean_copy(tmp_path / "checkout"))], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    shutil.rmtree(tmp_path / "checkout")  # nothing of the source tree is left to find
    app = tmp_path / "app"
    shutil.copytree(ROOT / "examples" / "cpp_vulkan", app)
    env = dict(os.environ, PYTHONPATH=str(site))
    r = subprocess.run([sys.executable, "-m", "transpiler", "cmake-dir"], capture_output=True, text=True,
                       cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    cmake_dir = Path(r.stdout.strip())
    assert cmake_dir == site / "transpiler" / "cmake" and (cmake_dir / "TranspilerConfig.cmake").is_file()
    build = tmp_path / "build"
    r = subprocess.run(["cmake", "-S", str(app), "-B", str(build), f"-DTranspiler_DIR={cmake_dir}",
                        f"-DTRANSPILER_PYTHON={sys.executable}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cache = (build / "CMakeCache.txt").read_text()
    assert f"TRANSPILER_CLI:FILEPATH={cmake_dir}/run_transpiler.py" in cache
    for part in ("cli.py", "cmake", "transpiler", "templates"):  # (the Python may live in the checkout's .venv)
        assert str(ROOT / part) not in cache
    r = subprocess.run(["cmake", "--build", str(build), "-j", "2"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    r = subprocess.run([str(build / "vulkan_host")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "OK", r.stdout + r.stderr


def test_cmake_version_file_matches_the_package():
    import transpiler as qd

    text = (ROOT / "cmake" / "TranspilerConfigVersion.cmake").read_text()
    assert f'set(PACKAGE_VERSION "{qd.__version__}")' in text

"""The distribution (qd-transpiler, an [all] extra), find_package(Transpiler) through
CMAKE_PREFIX_PATH as well as Transpiler_DIR, and the CUDA/HIP headers in an nvcc/hipcc build:
a host program that includes them links against the generated source and launches its entry points."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from test_install import clean_copy

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_distribution_name_is_ours_and_the_command_is_transpiler():
    # `transpiler` on the package index is an unrelated "Multi-Language Transpiler Framework"
    assert PROJECT["name"] == "qd-transpiler"
    assert PROJECT["scripts"] == {"transpiler": "transpiler.cli:main"}
    assert "pip install qd-transpiler" in (ROOT / "README.md").read_text()


def test_all_extra_holds_every_runtime_extra():
    extras = PROJECT["optional-dependencies"]
    assert extras["all"] == ["qd-transpiler[toolchains,cuda,sparse]"]
    assert {"toolchains", "cuda", "sparse"} <= set(extras)


APP = """
cmake_minimum_required(VERSION 3.20)
project(app LANGUAGES NONE)
find_package(Transpiler 0.1 REQUIRED)
message(STATUS "found: ${Transpiler_DIR}")
transpiler_add_kernels(kernels SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/saxpy.py TARGETS cuda)
add_custom_target(everything ALL DEPENDS kernels)
"""


@pytest.mark.slow
@pytest.mark.toolchain
def test_find_package_through_the_prefix_path_and_transpiler_dir(tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("needs cmake (scripts/setup.sh toolchains installs it)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--prefix", str(venv),
                        str(clean_copy(tmp_path / "checkout"))], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    shutil.rmtree(tmp_path / "checkout")
    site = next(venv.glob("lib/python3*/site-packages"))
    assert (venv / "share" / "cmake" / "Transpiler" / "TranspilerConfig.cmake").is_file()
    # the venv's Python finds this interpreter's packages (jinja2) as a venv with them installed would
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    app = tmp_path / "app"
    app.mkdir()
    (app / "CMakeLists.txt").write_text(APP)
    shutil.copy(ROOT / "examples" / "saxpy.py", app)
    python = venv / "bin" / "python3"
    cmake_dir = subprocess.run([str(python), "-m", "transpiler", "cmake-dir"], capture_output=True, text=True,
                               check=True, cwd=tmp_path).stdout.strip()
    assert cmake_dir == str(site / "transpiler" / "cmake")
    for way, define in (("prefix", f"-DCMAKE_PREFIX_PATH={venv}"), ("dir", f"-DTranspiler_DIR={cmake_dir}")):
        build = tmp_path / f"build_{way}"
        r = subprocess.run(["cmake", "-S", str(app), "-B", str(build), define], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        found = venv / "share" / "cmake" / "Transpiler" if way == "prefix" else Path(cmake_dir)
        assert f"-- found: {found}" in r.stdout
        cache = (build / "CMakeCache.txt").read_text()
        assert f"TRANSPILER_PYTHON:FILEPATH={python}" in cache  # the venv's own interpreter
        assert f"TRANSPILER_CLI:FILEPATH={cmake_dir}/run_transpiler.py" in cache
        r = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert "__global__" in (build / "kernels" / "cuda" / "saxpy.cu").read_text()
    r = subprocess.run(["cmake", "-S", str(app), "-B", str(tmp_path / "build_none")], capture_output=True, text=True)
    assert r.returncode != 0 and "Transpiler" in r.stderr  # neither given: not found


KERNELS = '''\
import transpiler as qd


@qd.kernel
def wide(x: qd.types.ndarray(qd.i64, ndim=1), h: qd.types.ndarray(qd.f16, ndim=1), s: qd.f16):
    for i in x:
        x[i] = x[i] * 3 + 1
        h[i] = h[i] * s


@qd.kernel
def tasks(x: qd.types.ndarray(qd.f32, ndim=1)) -> qd.f32:
    t = 0.0
    for i in x:
        x[i] += 1.0
    for i in x:
        t += x[i]
    return t
'''
HOST = '''\
#include "wide.{t}.h"
#include "tasks.{t}.h"
#include <cstdio>
int main() {{
    qd::wide::{t}::Args a{{}};
    qd::tasks::{t}::Args b{{}};
    auto rc = qd::wide::{t}::launch(qd::wide::{t}::linked_functions(), a);
    rc = qd::tasks::{t}::launch(qd::tasks::{t}::linked_functions(), b);
    qd::wide::{t}::wide<<<1, 128>>>(nullptr, 0, nullptr, 0, 0);
    std::printf("%d\\n", int(rc));  // (no GPU here: the runtime's error code)
    return 0;
}}
'''


def nvcc() -> str | None:
    for base in sys.path:
        for found in sorted(glob.glob(os.path.join(base, "nvidia", "*", "bin", "nvcc"))):
            return found
    return shutil.which("nvcc")


def emit(tmp_path: Path, target: str) -> Path:
    (tmp_path / "kernels.py").write_text(KERNELS)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, str(ROOT / "cli.py"), "emit", str(tmp_path / "kernels.py"), "--target",
                        target, "--header", "-o", str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.slow
@pytest.mark.toolchain
def test_cuda_header_serves_an_nvcc_build(tmp_path):
    compiler = nvcc()
    if compiler is None:
        pytest.skip("needs nvcc (pip install nvidia-cuda-nvcc nvidia-cuda-runtime, scripts/setup.sh toolchains)")
    out = emit(tmp_path, "cuda")
    (out / "host.cu").write_text(HOST.format(t="cuda"))
    # the generated sources are translation units of their own (an i64 and an f16 kernel, one of 4 tasks)
    r = subprocess.run([compiler, "-std=c++17", "-arch=sm_80", "host.cu", "wide.cu", "tasks.cu", "-o", "host"],
                       capture_output=True, text=True, cwd=out)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (out / "host").is_file()


@pytest.mark.slow
@pytest.mark.toolchain
def test_hip_header_serves_a_hipcc_build(tmp_path):
    if shutil.which("hipcc") is None:
        pytest.skip("needs hipcc (apt-get install hipcc libamdhip64-dev rocm-device-libs)")
    out = emit(tmp_path, "hip")
    (out / "host.hip").write_text(HOST.format(t="hip"))
    r = subprocess.run(["hipcc", "-std=c++17", "--offload-arch=gfx90a", "host.hip", "wide.hip", "tasks.hip",
                        "-o", "host"], capture_output=True, text=True, cwd=out, env=dict(os.environ, HIP_PLATFORM="amd"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (out / "host").is_file()

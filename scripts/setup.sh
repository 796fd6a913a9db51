#!/usr/bin/env bash
# Set up a Debian 12 machine for the transpiler.
#   scripts/setup.sh base        the Python environment the main job needs (.venv)
#   scripts/setup.sh toolchains  that, plus every vendor toolchain the tests drive
#   scripts/setup.sh docs        that of base, plus what `make docs` needs
# Idempotent: packages already present are not installed again.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
what="${1:-base}"

APT_PACKAGES=(
  glslang-tools spirv-tools spirv-cross            # GLSL -> SPIR-V, validation, MSL reference spellings
  glslang-dev                                      # glslang in process: the Vulkan runtime's shader compiles
  mesa-vulkan-drivers libvulkan1 libvulkan-dev vulkan-tools   # Vulkan on lavapipe (CPU) + loader headers
  vulkan-validationlayers                          # print() in kernels on Vulkan (debugPrintfEXT)
  hipcc libamdhip64-dev rocm-device-libs           # HIP: hipcc and hipRTC (ROCm 5.2)
  clang-19 lld-19 llvm-19                          # the Metal shim check, AMDGPU disassembly
  g++ cmake                                        # the CPU SIMT emulator and the C++ hosts
  chromium chromium-driver                         # the browser test of `inspect --html` (headless, Selenium)
)
PIP_BASE=(jinja2 numpy)
PIP_TOOLCHAINS=(
  pytest jsonschema
  ruff==0.17.6                                     # tests/test_lint.py; pinned: a new release may flag new things
  pytest-xdist                                     # make test runs the suite on every core (pytest -n auto)
  selenium                                         # drives headless Chromium in the `inspect --html` test
  nvidia-cuda-nvrtc nvidia-cuda-nvcc nvidia-cuda-nvdisasm nvidia-cuda-cuobjdump   # NVRTC, ptxas, nvdisasm, cuobjdump
  nvidia-cuda-runtime                              # cuda.h, cuda_runtime_api.h: the C++ headers' launch helpers
  nvidia-nvshmem-cu13                              # qd.shmem: NVSHMEM headers + libraries (brings nvidia-cuda-cccl)
  vulkan                                           # Vulkan from Python (cffi)
  torch==2.13.0                                    # tensors as kernel arguments (the CPU wheel on this machine's disk)
  scipy                                            # qd.linalg.SparseSolver's sparse LU
)
# The documentation site (make docs); with the toolchains, since tests/test_docs.py builds it strictly.
PIP_DOCS=(
  mkdocs-material                                  # the site's generator and theme
  "mkdocstrings[python]"                           # the API pages, from the package's docstrings
)

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  # a current pip: Python 3.11's bundled pip 23 does not read an SPDX license expression
  # (`pip show transpiler` printed an empty License line)
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
fi
# --no-compile: bytecode is written on first import instead (or, where the environment forbids it, in the
# tests' own folder: tests/conftest.py), for the modules used, not for every file of every wheel (torch
# alone has thousands): 15 s of a fresh set-up
pip_install() { "$VENV/bin/python" -m pip install --quiet --no-compile --disable-pip-version-check "$@"; }
pip_install "${PIP_BASE[@]}"

if [ "$what" = "toolchains" ]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
  pip_install "${PIP_TOOLCHAINS[@]}" "${PIP_DOCS[@]}"
elif [ "$what" = "docs" ]; then
  pip_install "${PIP_DOCS[@]}"
fi

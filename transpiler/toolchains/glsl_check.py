"""The GLSL compile check: glslangValidator to SPIR-V for Vulkan 1.2, then spirv-val.

glslang alone accepts some modules Vulkan forbids (64-bit OpBitCount, for one), so
spirv-val runs on its output with the same target environment. The runtime shares
``compile_glsl`` (without the validation pass) to build its pipelines.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time

from ..errors import ToolchainRejected
from ..targets.glsl import TARGET_ENV
from . import Checker, Verdict, locate, map_log

INSTALL_HINT = "apt-get install glslang-tools spirv-tools (Debian/Ubuntu), or the Vulkan SDK"
# glslang: "ERROR: saxpy.comp:9: 'x' : undeclared identifier"
GLSLANG_LOCATION = r"(ERROR|WARNING): (?P<file>[^:\s]+):(?P<line>\d+):"


def _glslang_version(path: str) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    for line in out.splitlines():  # "Glslang Version: 11:12.0.0"
        if line.startswith("Glslang Version:"):
            return line.split(":")[-1].strip()
    return "unknown"


def _spirv_val_version(path: str) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"SPIRV-Tools v?([\w.]+)", out)  # "SPIRV-Tools v2023.1 unknown hash, ..."
    return m.group(1) if m else "?"


TOOLS = {"glslangValidator": locate.register(locate.Tool(
             "glslang", "glslangValidator", "GLSL to SPIR-V (check --target glsl, the Vulkan executor)", INSTALL_HINT,
             lambda: locate.on_path("glslangValidator"), _glslang_version)),
         "spirv-val": locate.register(locate.Tool(
             "spirv-val", "spirv-val", "validates the SPIR-V for Vulkan (check --target glsl)", INSTALL_HINT,
             lambda: locate.on_path("spirv-val"), _spirv_val_version))}


def tool(name: str) -> str:
    """The path of ``glslangValidator`` or ``spirv-val`` (raises ToolchainMissing)."""
    return locate.path_of(TOOLS[name].name)


def glslang_version() -> str:
    return locate.version("glslang", tool("glslangValidator"))


def _clean(log: str, name: str) -> str:
    """glslang's log without the echoed file name and the blank lines around messages."""
    return "\n".join(ln for ln in log.splitlines() if ln.strip() and ln.strip() != name)


def compile_glsl(text: str, name: str, validate: bool = False) -> bytes:
    """SPIR-V for one ``.comp`` file; raises ToolchainRejected with messages mapped to
    Python lines. ``name`` must end in ``.comp``: glslang picks the stage from it."""
    glslang = tool("glslangValidator")
    with tempfile.TemporaryDirectory(prefix="qd-glsl-") as tmp:
        src, spv = os.path.join(tmp, name), os.path.join(tmp, name + ".spv")
        with open(src, "w") as f:
            f.write(text)
        # Run inside the directory so messages name the file, not the temporary path.
        proc = subprocess.run([glslang, "-V", "--target-env", TARGET_ENV, "-o", spv, name],
                              cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            log = _clean(proc.stdout + proc.stderr, name)
            raise ToolchainRejected(f"glslangValidator {glslang_version()}",
                                    map_log(log, name, text, GLSLANG_LOCATION))
        if validate:
            val = subprocess.run([tool("spirv-val"), "--target-env", TARGET_ENV, spv], capture_output=True, text=True)
            if val.returncode != 0:
                # spirv-val names SPIR-V instructions, not source lines: say which file it was.
                raise ToolchainRejected("spirv-val", f"{name}: " + _clean(val.stdout + val.stderr, name))
        with open(spv, "rb") as f:
            return f.read()


def make_checker() -> Checker:
    """The compile check for this target's files (raises ToolchainMissing)."""
    tool("glslangValidator")  # raise ToolchainMissing before any file is tried
    tool("spirv-val")
    name = f"glslang {glslang_version()} + spirv-val ({TARGET_ENV})"

    def check(file: str, text: str, manifest: dict, options: dict) -> Verdict:
        t0 = time.perf_counter()
        try:
            spirv = compile_glsl(text, file, validate=True)
        except ToolchainRejected as exc:
            return Verdict("glsl", name, file, False, time.perf_counter() - t0, exc.message)
        seconds = time.perf_counter() - t0
        return Verdict("glsl", name, file, True, seconds, "", {"main": {"spirv_bytes": len(spirv)}}
                       if options.get("resources") else {})

    return check

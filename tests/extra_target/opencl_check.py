"""The OpenCL target's compile check: clang's OpenCL C front end, as a driver would parse it."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from transpiler.errors import ToolchainMissing
from transpiler.toolchains import Checker, Verdict, map_log

CLANG_LOCATION = r"(?P<file>[^\s:]+):(?P<line>\d+):\d+: (?:fatal )?(?:error|warning)"


def make_checker() -> Checker:
    clang = shutil.which("clang-19") or shutil.which("clang")
    if clang is None:
        raise ToolchainMissing("clang (OpenCL C)", "apt-get install clang-19")

    def check(name: str, text: str, manifest: dict, options: dict) -> Verdict:
        with tempfile.TemporaryDirectory(prefix="qd-opencl-") as work:
            path = Path(work) / name
            path.write_text(text)
            t0 = time.perf_counter()
            r = subprocess.run([clang, "-x", "cl", "-cl-std=CL2.0", "-Xclang", "-finclude-default-header",
                                "-fsyntax-only", "-Werror", name], cwd=work, capture_output=True, text=True)
            seconds = time.perf_counter() - t0
        message = map_log(r.stderr.rstrip(), name, text, CLANG_LOCATION) if r.returncode else ""
        return Verdict("opencl", "clang OpenCL C 2.0", name, r.returncode == 0, seconds, message)

    return check

"""The Metal compile check. On macOS: Apple's compiler, ``xcrun -sdk macosx metal -c``.
Elsewhere there is no Metal compiler, so the source is type-checked by
``clang++ -x c++ -std=c++14 -fsyntax-only`` against the project's own ``metal_stdlib``
shim (``metal_shim/``), and the verdict says so: a clang shim check catches misspelled
functions, wrong argument types and address-space mix-ups, not everything Apple's
compiler would. MSL 2.x/3.x is C++14-based, hence -std=c++14.

Clang does not know Metal's attributes and warns about each; the check turns a warning
about an attribute Metal does not have either into an error, so misspelled attributes
are caught too."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from functools import cache
from pathlib import Path

from . import Checker, Verdict, locate, map_log

SHIM_DIR = Path(__file__).resolve().parent / "metal_shim"
CLANG_NAMES = ("clang++-19", "clang++-20", "clang++-18", "clang++-17", "clang++-16", "clang++")
INSTALL_HINT = "apt-get install -y --no-install-recommends clang-19 (or run on macOS with Xcode for Apple's compiler)"
CLANG_LOCATION = r"(?P<file>[^\s:]+):(?P<line>\d+):\d+: (?:fatal )?(?:error|warning|note)"
# The Metal attributes (MSL specification, function and argument attributes) generated code may use.
METAL_ATTRIBUTES = frozenset("""
    buffer threadgroup texture sampler max_total_threads_per_threadgroup
    thread_position_in_grid thread_position_in_threadgroup thread_index_in_threadgroup
    threadgroup_position_in_grid threads_per_grid threads_per_threadgroup threadgroups_per_grid
    thread_index_in_simdgroup simdgroup_index_in_threadgroup threads_per_simdgroup
    simdgroups_per_threadgroup thread_execution_width dispatch_threads_per_threadgroup
    grid_origin grid_size quadgroup_index_in_threadgroup thread_index_in_quadgroup
""".split())
THREADGROUP_LOCAL = re.compile(r"^(?P<indent>[ \t]+)(?P<decl>threadgroup\s+\w+\s+\w+\s*(\[[^\]]*\]\s*)*;)", re.M)
DIAGNOSTIC = re.compile(r"^\S+:\d+:\d+: (?:fatal )?(?:error|warning|note):")
UNKNOWN_ATTRIBUTE = re.compile(r"^(?P<where>\S+): warning: unknown attribute '(?P<name>\w+)' ignored")


@cache
def clang_version(clang: str) -> str:
    out = subprocess.run([clang, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"clang version (\d+\.\d+)", out)
    return m.group(1) if m else "?"


CLANG = locate.register(locate.Tool("clang", "clang++ (for the Metal shim check)",
                                    "type-checks MSL against the metal_stdlib shim (check --target msl)",
                                    INSTALL_HINT, lambda: locate.on_path(*CLANG_NAMES), clang_version))


def find_clang() -> str:
    return locate.path_of("clang")


def for_clang(text: str) -> str:
    """Metal declares threadgroup variables inside kernels; clang allows an address space only
    on variables with static storage, which is what threadgroup memory is. Lines keep their
    numbers."""
    return THREADGROUP_LOCAL.sub(r"\g<indent>static \g<decl>", text)


def shim_check(clang: str, name: str, text: str) -> tuple[bool, str]:
    """Type-check one source against the shim; returns (ok, log)."""
    with tempfile.TemporaryDirectory(prefix="qd-msl-") as work:
        Path(work, name).write_text(for_clang(text))
        cmd = [clang, "-x", "c++", "-std=c++14", "-fsyntax-only", "-nostdinc", "-nostdinc++",
               "-isystem", str(SHIM_DIR), "-fno-color-diagnostics", "-ferror-limit=20", name]
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    ok = proc.returncode == 0
    lines, skipping = [], False
    for line in proc.stderr.splitlines():
        if DIAGNOSTIC.match(line) or line.endswith(" generated."):
            skipping = False
            m = UNKNOWN_ATTRIBUTE.match(line)
            if m and m.group("name") in METAL_ATTRIBUTES:
                skipping = True  # a real Metal attribute clang cannot know about
            elif m:
                ok = False
                line = f"{m.group('where')}: error: '{m.group('name')}' is not a Metal attribute"
            elif line.endswith(" generated."):
                continue  # its counts include the dropped warnings
        if not skipping:
            lines.append(line)
    log = "\n".join(lines)
    return ok, log


def xcrun_check(name: str, text: str, manifest: dict) -> tuple[bool, str]:
    """Apple's compiler, to an .air file; MSL 3.0 is asked for when the manifest needs it."""
    version = manifest.get("requirements", {}).get("msl_version", "2.1")
    std = ["-std=metal3.0"] if version == "3.0" else []
    with tempfile.TemporaryDirectory(prefix="qd-msl-") as work:
        Path(work, name).write_text(text)
        cmd = ["xcrun", "-sdk", "macosx", "metal", *std, "-fno-fast-math", "-c", name, "-o", name + ".air"]
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    return proc.returncode == 0, proc.stderr


def make_checker() -> Checker:
    """The compile check for this target's files (raises ToolchainMissing)."""
    if sys.platform == "darwin" and shutil.which("xcrun"):
        ver = subprocess.run(["xcrun", "-sdk", "macosx", "metal", "--version"], capture_output=True, text=True)
        m = re.search(r"metal(?:fe)? version ([\w.\-]+)", ver.stdout + ver.stderr, re.I)
        tool = f"xcrun metal {m.group(1) if m else ''}".rstrip() + " (Apple)"

        def run(name: str, text: str, manifest: dict) -> tuple[bool, str]:
            return xcrun_check(name, text, manifest)
    else:
        clang = find_clang()
        tool = f"clang {clang_version(clang)} shim type-check (not Apple's Metal compiler)"

        def run(name: str, text: str, manifest: dict) -> tuple[bool, str]:
            return shim_check(clang, name, text)

    def check(name: str, text: str, manifest: dict, options: dict) -> Verdict:
        t0 = time.perf_counter()
        ok, log = run(name, text, manifest)
        seconds = time.perf_counter() - t0
        message = "" if ok else map_log(log.rstrip(), name, text, CLANG_LOCATION)
        return Verdict("msl", tool, name, ok, seconds, message)

    return check


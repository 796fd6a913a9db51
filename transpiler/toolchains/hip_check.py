"""The HIP compile check: every file through hipcc *and* through hipRTC, as the contract
promises both. hipcc runs with ``HIP_PLATFORM=amd`` always (with nvcc on PATH it would
otherwise pick the NVIDIA platform). hipRTC lives inside ``libamdhip64.so.5`` and is
driven through ctypes in a child process, because it aborts the whole process on some
architectures (gfx940/gfx942 in ROCm 5.2). The two compilers run concurrently."""
from __future__ import annotations

import ctypes.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from ..errors import ToolchainMissing
from ..ir.records import record
from . import Checker, Verdict, locate, map_log

INSTALL_HINT = "apt-get install -y --no-install-recommends hipcc libamdhip64-dev rocm-device-libs"
# clang's diagnostics; hipRTC names the file .../input/CompileSource, rewritten to ours first.
CLANG_LOCATION = r"(?P<file>[^\s:]+):(?P<line>\d+):\d+: (?:fatal )?(?:error|warning|note)"
# Messages meaning the toolchain is incomplete rather than the source wrong.
MISSING_PARTS = ("cannot find ROCm device library", "doesn't exist!", "No such file or directory: 'clang")

_HIPRTC_CHILD = r"""
import ctypes, json, os, re, sys
req = json.load(open(sys.argv[1]))
lib = ctypes.CDLL(req["lib"])
lib.hiprtcGetErrorString.restype = ctypes.c_char_p
version = "?"
with open("/proc/self/maps") as maps:
    for line in maps:
        if "libamdhip64" in line:
            m = re.search(r"\.so\.(\d+\.\d+)", os.path.realpath(line.split()[-1]))
            version = m.group(1) if m else version
            break
results = []
for arch in req["archs"]:
    prog = ctypes.c_void_p()
    rc = lib.hiprtcCreateProgram(ctypes.byref(prog), req["source"].encode(), req["name"].encode(), 0, None, None)
    if rc != 0:
        results.append({"arch": arch, "ok": False, "log": lib.hiprtcGetErrorString(rc).decode()})
        continue
    opts = ["--offload-arch=" + arch] + req["options"]
    rc = lib.hiprtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts]))
    n = ctypes.c_size_t()
    lib.hiprtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value + 1)
    lib.hiprtcGetProgramLog(prog, buf)
    log = buf.value.decode(errors="replace")
    if rc != 0 and not log.strip():
        log = lib.hiprtcGetErrorString(rc).decode()
    if rc == 0 and req["out"]:
        lib.hiprtcGetCodeSize(prog, ctypes.byref(n))
        code = ctypes.create_string_buffer(n.value)
        lib.hiprtcGetCode(prog, code)
        with open(req["out"] + "." + arch + ".co", "wb") as f:
            f.write(code.raw)
    lib.hiprtcDestroyProgram(ctypes.byref(prog))
    results.append({"arch": arch, "ok": rc == 0, "log": log})
json.dump({"version": version, "results": results}, open(sys.argv[2], "w"))
"""


@record
class Compile:
    tool: str
    arch: str
    ok: bool
    log: str
    seconds: float


def hip_env(workdir: str | None = None) -> dict[str, str]:
    """hipcc on the AMD platform; with ``workdir``, the compilers' scratch folders go there
    (hipRTC and hipcc leave a `NAME-XXXXXX` folder in the temp directory otherwise)."""
    env = {**os.environ, "HIP_PLATFORM": "amd"}
    if workdir is not None:
        env["TMPDIR"] = workdir
    return env


def _hipcc_version(path: str) -> str:
    out = subprocess.run([path, "--version"], env=hip_env(), capture_output=True, text=True).stdout
    m = re.search(r"HIP version: (\d+\.\d+)", out)
    return m.group(1) if m else "?"


def _hiprtc_version(library: str) -> str:
    """The version in the file name the library resolves to (libamdhip64.so.5.2.50200 -> 5.2),
    read by a child that loads it, as the checks do."""
    code = ("import ctypes, os, sys; ctypes.CDLL(sys.argv[1]); print(next((os.path.realpath(ln.split()[-1]) "
            "for ln in open('/proc/self/maps') if 'libamdhip64' in ln), ''))")
    out = subprocess.run([sys.executable, "-c", code, library], capture_output=True, text=True).stdout
    m = re.search(r"\.so\.(\d+\.\d+)", out)
    return m.group(1) if m else "?"


def _readelf_version(path: str) -> str:
    m = re.search(r"LLVM version ([\d.]+)", subprocess.run([path, "--version"], capture_output=True, text=True).stdout)
    return m.group(1) if m else "?"


locate.register(locate.Tool("hipcc", "hipcc", "HIP to AMD code objects (check --target hip)", INSTALL_HINT,
                            lambda: locate.on_path("hipcc"), _hipcc_version))
locate.register(locate.Tool("hiprtc", "hipRTC (libamdhip64.so.5)", "HIP compiled in-process, as a host does "
                            "(check --target hip)", INSTALL_HINT,
                            lambda: [(ctypes.util.find_library("amdhip64"), "system library path")],
                            _hiprtc_version, library=True))
locate.register(locate.Tool("llvm-readelf", "llvm-readelf", "registers and LDS of HIP code objects "
                            "(check --target hip --resources)", "apt-get install -y llvm-19",
                            lambda: locate.on_path("llvm-readelf-19", "llvm-readelf"), _readelf_version))


def hipcc_version() -> str:
    return locate.version("hipcc", locate.path_of("hipcc"))


def hiprtc_library() -> str:
    return locate.path_of("hiprtc")


def start_hipcc(path: str, arch: str, out: str) -> subprocess.Popen:
    cmd = [locate.path_of("hipcc"), f"--offload-arch={arch}", "--cuda-device-only",
           "--no-gpu-bundle-output", "-c", "-O3", os.path.basename(path), "-o", out]
    return subprocess.Popen(cmd, cwd=os.path.dirname(path), env=hip_env(os.path.dirname(path)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def start_hiprtc(name: str, text: str, archs: list[str], out: str) -> subprocess.Popen:
    """The child reads its request from ``OUT.request.json`` and answers in ``OUT.answer.json``."""
    request = {"lib": hiprtc_library(), "source": text, "name": name, "archs": archs, "options": ["-O3"],
               "out": out}
    with open(out + ".request.json", "w") as f:
        json.dump(request, f)
    return subprocess.Popen([sys.executable, "-c", _HIPRTC_CHILD, out + ".request.json", out + ".answer.json"],
                            env=hip_env(os.path.dirname(out)), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def compile_both(name: str, text: str, archs: list[str], workdir: str) -> list[Compile]:
    """hipcc and hipRTC over one source for each architecture; code objects land in ``workdir``
    as ``NAME.hipcc.ARCH.co`` and ``NAME.hiprtc.ARCH.co``."""
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        f.write(text)
    t0 = time.perf_counter()
    rtc_out = os.path.join(workdir, name + ".hiprtc")
    rtc = start_hiprtc(name, text, archs, rtc_out)
    hipccs = [(arch, start_hipcc(path, arch, f"{path}.hipcc.{arch}.co")) for arch in archs]
    results = []
    for arch, proc in hipccs:
        log = proc.communicate()[0]
        if proc.returncode != 0 and any(s in log for s in MISSING_PARTS):
            rtc.kill()
            raise ToolchainMissing("a complete hipcc (clang, lld and the ROCm device libraries)",
                                   INSTALL_HINT + "\n" + log.strip())
        results.append(Compile(f"hipcc {hipcc_version()}", arch, proc.returncode == 0, log,
                               time.perf_counter() - t0))
    err = rtc.communicate()[1]
    seconds = time.perf_counter() - t0
    if rtc.returncode != 0:
        why = f"signal {-rtc.returncode}" if rtc.returncode < 0 else f"exit status {rtc.returncode}"
        for arch in archs:
            results.append(Compile("hipRTC", arch, False, f"hipRTC crashed ({why}):\n{err}", seconds))
        return results
    with open(rtc_out + ".answer.json") as f:
        answer = json.load(f)
    for r in answer["results"]:
        log = re.sub(r"\S*/CompileSource\b", name, r["log"])
        results.append(Compile(f"hipRTC {answer['version']}", r["arch"], r["ok"], log, seconds))
    return results


def check_archs(manifest: dict, options: dict) -> list[str]:
    arch = options.get("arch") or ""
    if arch.startswith("gfx"):  # `check --arch` defaults to a CUDA name, meant for NVRTC
        return [arch]
    return list(manifest.get("requirements", {}).get("offload_arch") or ["gfx90a"])


def wave_mismatch(arch: str, wave: int | None) -> str | None:
    """Why ``arch`` cannot run a source that assumes ``wave`` lanes, if it cannot."""
    rdna = re.fullmatch(r"gfx1\d{3}", arch) is not None
    if wave == 64 and rdna:
        return f"the source assumes wave64, but HIP on {arch} (RDNA) runs wave32 only: translate with wave32=True"
    if wave == 32 and not rdna:
        return f"the source assumes wave32, but {arch} runs wave64 only: translate without wave32"
    return None


def resource_usage(code_object: str) -> dict[str, dict]:
    """Registers, LDS bytes and wavefront size per kernel, from the code object's metadata."""
    try:
        readelf = locate.path_of("llvm-readelf")
    except ToolchainMissing:
        return {}
    if not os.path.exists(code_object):
        return {}
    notes = subprocess.run([readelf, "--notes", code_object], capture_output=True, text=True).stdout
    usage: dict[str, dict] = {}
    for block in re.split(r"\n  - \.", notes)[1:]:
        name = re.search(r"\.name:\s+(\S+)", block)
        if name is None:
            continue
        fields = {}
        for key, label in (("vgpr_count", "vgprs"), ("sgpr_count", "sgprs"),
                           ("group_segment_fixed_size", "lds_bytes"), ("wavefront_size", "wavefront"),
                           ("vgpr_spill_count", "vgpr_spills")):
            m = re.search(rf"\.{key}:\s+(\d+)", block)
            if m:
                fields[label] = int(m.group(1))
        usage[name.group(1)] = fields
    return usage


def make_checker() -> Checker:
    """The compile check for this target's files (raises ToolchainMissing)."""
    locate.path_of("hipcc")  # raise ToolchainMissing before any file is tried
    hiprtc_library()

    def check(name: str, text: str, manifest: dict, options: dict) -> Verdict:
        archs = check_archs(manifest, options)
        for arch in archs:
            why = wave_mismatch(arch, manifest.get("subgroup_size"))
            if why:
                return Verdict("hip", f"hipcc {hipcc_version()} {arch}", name, False, 0.0, why)
        with tempfile.TemporaryDirectory(prefix="qd-hip-") as work:
            t0 = time.perf_counter()
            results = compile_both(name, text, archs, work)
            seconds = time.perf_counter() - t0
            details = {}
            if options.get("resources") and results[0].ok:
                details = resource_usage(os.path.join(work, f"{name}.hipcc.{archs[0]}.co"))
        ok = all(r.ok for r in results)
        message = ""
        if not ok:
            parts = []
            for r in results:
                parts.append(f"{r.tool} ({r.arch}): {'accepted' if r.ok else 'rejected'}")
                if not r.ok:
                    parts.append(map_log(r.log.rstrip(), name, text, CLANG_LOCATION))
            message = "\n".join(parts)
        tool = " + ".join(f"{r.tool} {r.arch}" for r in results)
        return Verdict("hip", tool, name, ok, seconds, message, details)

    return check

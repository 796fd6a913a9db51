"""NVRTC from the pip wheel (``nvidia-cuda-nvrtc``), through ctypes: no driver, no GPU,
and no ``cuda-bindings`` needed. Compiles to PTX and to an sm_XX cubin."""
from __future__ import annotations

import ctypes
import glob
import os
import re
import subprocess
import sys
import tempfile
from functools import cache

from ..errors import ToolchainMissing
from ..ir.records import record
from . import locate

INSTALL_HINT = "pip install nvidia-cuda-nvrtc"


@record
class NvrtcResult:
    ok: bool
    log: str
    ptx: bytes = b""
    cubin: bytes = b""


def _candidates() -> list[str]:
    found = []
    for base in sys.path:
        for pattern in ("nvidia/cu13/lib/libnvrtc.so.13", "nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
                        "nvidia/cu12/lib/libnvrtc.so.12"):
            found.extend(glob.glob(os.path.join(base, pattern)))
    found.extend(glob.glob("/usr/local/cuda/lib64/libnvrtc.so*"))
    return found


def _discover() -> list[tuple[str, str]]:
    """The candidates that load, as the first that does is the one used."""
    for path in _candidates():
        try:
            _load(path)
        except OSError:
            continue
        return [(path, "default folder" if path.startswith("/usr/local/cuda/") else "pip wheel")]
    return []


@cache
def _load(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    return lib


def _version(path: str) -> str:
    major, minor = ctypes.c_int(), ctypes.c_int()
    _load(path).nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return f"{major.value}.{minor.value}"


NVRTC = locate.register(locate.Tool("nvrtc", "NVRTC", "CUDA C++ to PTX and cubin in-process (check --target cuda, "
                                    "the CUDA executor)", INSTALL_HINT, _discover, _version, library=True))


def library() -> ctypes.CDLL:
    path = locate.path_of("nvrtc")
    try:
        return _load(path)
    except OSError as exc:  # a library named explicitly that does not load
        raise ToolchainMissing(f"NVRTC ({path}: {exc})", INSTALL_HINT) from None


def version() -> str:
    return locate.version("nvrtc", locate.path_of("nvrtc"))


def _get(lib: ctypes.CDLL, prog: ctypes.c_void_p, size_fn: str, get_fn: str) -> bytes:
    n = ctypes.c_size_t()
    if getattr(lib, size_fn)(prog, ctypes.byref(n)) != 0:
        return b""
    buf = ctypes.create_string_buffer(n.value)
    getattr(lib, get_fn)(prog, buf)
    return buf.raw[: n.value]


def compile_cuda(source: str, name: str = "kernel.cu", arch: str = "sm_90", cubin: bool = True,
                 options: tuple[str, ...] = ("-std=c++17",), verbose: bool = False) -> NvrtcResult:
    """Compile ``source``; with ``cubin`` for a real architecture (SASS), else PTX only."""
    lib = library()
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None)
    if rc != 0:
        return NvrtcResult(False, lib.nvrtcGetErrorString(rc).decode())
    arch_opt = f"-arch={arch}" if cubin else f"-arch=compute_{arch.split('_')[-1]}"
    opts = [arch_opt, *options] + (["--ptxas-options=-v"] if verbose else [])
    argv = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    try:
        rc = lib.nvrtcCompileProgram(prog, len(opts), argv)
        log = _get(lib, prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog").rstrip(b"\0").decode(errors="replace")
        if rc != 0:
            return NvrtcResult(False, log or lib.nvrtcGetErrorString(rc).decode())
        ptx = _get(lib, prog, "nvrtcGetPTXSize", "nvrtcGetPTX")
        out = _get(lib, prog, "nvrtcGetCUBINSize", "nvrtcGetCUBIN") if cubin else b""
        return NvrtcResult(True, log, ptx, out)
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def resource_usage(log: str) -> dict[str, dict]:
    """Registers, shared memory and spills per entry point from a ``-v`` ptxas log."""
    usage: dict[str, dict] = {}
    current = None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'|Function properties for (\w+)", line)
        if m:
            current = m.group(1) or m.group(2)
            usage.setdefault(current, {})
            continue
        if current is None:
            continue
        for key, pattern in (("registers", r"Used (\d+) registers"), ("shared_bytes", r"(\d+) bytes smem"),
                             ("spill_stores", r"(\d+) bytes spill stores"),
                             ("spill_loads", r"(\d+) bytes spill loads")):
            m = re.search(pattern, line)
            if m:
                usage[current][key] = int(m.group(1))
    return usage


# ----------------------------------------------------------------------------- NVSHMEM (qd.shmem)

NVSHMEM_INSTALL_HINT = "pip install nvidia-nvshmem-cu13"


def _wheel_dirs(*parts: str) -> list[str]:
    return [os.path.join(base, "nvidia", *parts) for base in sys.path]


@cache
def nvshmem_home() -> str:
    """The NVSHMEM wheel's root (include/, lib/), or $NVSHMEM_HOME."""
    for root in [os.environ.get("NVSHMEM_HOME", "")] + _wheel_dirs("nvshmem"):
        if root and os.path.isfile(os.path.join(root, "include", "nvshmem.h")):
            return root
    raise ToolchainMissing("the NVSHMEM headers and device library", NVSHMEM_INSTALL_HINT)


@cache
def cuda_include_dirs() -> list[str]:
    """The CUDA headers NVSHMEM's include (cuda_runtime.h) and CCCL's <cuda/std/...>: NVRTC
    builds in neither. From the pip wheels (nvidia-cuda-runtime, nvidia-cuda-cccl) or a toolkit."""
    for inc in _wheel_dirs("cu13", "include") + _wheel_dirs("cuda_runtime", "include") + ["/usr/local/cuda/include"]:
        if os.path.isfile(os.path.join(inc, "cuda_runtime.h")):
            cccl = os.path.join(inc, "cccl")
            if os.path.isfile(os.path.join(cccl, "cuda", "std", "cstdint")):
                return [inc, cccl]
            if os.path.isfile(os.path.join(inc, "cuda", "std", "cstdint")):
                return [inc]
    raise ToolchainMissing("the CUDA runtime and CCCL headers NVSHMEM includes",
                           "pip install nvidia-cuda-runtime nvidia-cuda-cccl")


def nvshmem_include_options() -> tuple[str, ...]:
    return tuple(f"-I{d}" for d in [os.path.join(nvshmem_home(), "include"), *cuda_include_dirs()])


def nvshmem_version() -> str:
    text = open(os.path.join(nvshmem_home(), "include", "non_abi", "nvshmem_version.h")).read()
    m = re.search(r'NVSHMEM_VENDOR_BASE_VERSION_STRING "([\d.]+)"', text)
    return m.group(1) if m else "unknown"


def _nvlink_version(path: str) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release ([\d.]+)", out)  # "Cuda compilation tools, release 13.0, V13.0.88"
    return m.group(1) if m else "?"


NVLINK = locate.register(locate.Tool(
    "nvlink", "nvlink (the CUDA device linker)", "links qd.shmem kernels with NVSHMEM (check --target cuda)",
    "pip install nvidia-cuda-nvcc",
    lambda: [(p, "pip wheel") for p in _wheel_dirs("cu13", "bin", "nvlink") if os.access(p, os.X_OK)]
    + [(p, "default folder") for p in ["/usr/local/cuda/bin/nvlink"] if os.access(p, os.X_OK)],
    _nvlink_version))


def nvlink() -> str | None:
    """nvlink from the nvcc wheel (nvidia-cuda-nvcc) or a toolkit: the device linker."""
    try:
        return locate.path_of("nvlink")
    except ToolchainMissing:
        return None


def link_nvshmem(cubin: bytes, arch: str = "sm_90") -> NvrtcResult:
    """Device-link a relocatable (-rdc=true) cubin with NVSHMEM's device library, as a host
    does before loading it: every NVSHMEM routine the code calls must resolve."""
    tool = locate.path_of("nvlink")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "kernel.cubin"), os.path.join(tmp, "linked.cubin")
        with open(src, "wb") as f:
            f.write(cubin)
        p = subprocess.run([tool, f"-arch={arch}", src, "-L" + os.path.join(nvshmem_home(), "lib"),
                            "-lnvshmem_device", "-o", out], capture_output=True, text=True)
        if p.returncode != 0 or not os.path.isfile(out):
            return NvrtcResult(False, (p.stdout + p.stderr).strip())
        with open(out, "rb") as f:
            return NvrtcResult(True, (p.stdout + p.stderr).strip(), cubin=f.read())

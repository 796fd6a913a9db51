"""The CUDA compile check: NVRTC to an sm_XX cubin."""
from __future__ import annotations

from . import Checker, Verdict, map_log, nvrtc, timed

NVRTC_LOCATION = r"(?P<file>[\w.\-]+)\((?P<line>\d+)\): (error|warning)"


def make_checker() -> Checker:
    """The compile check for this target's files (raises ToolchainMissing)."""
    nvrtc.library()  # raises ToolchainMissing before any file is tried
    tool = f"NVRTC {nvrtc.version()}"

    def check(name: str, text: str, manifest: dict, options: dict) -> Verdict:
        arch = options.get("arch", "sm_90")
        nvrtc_options = tuple(manifest["requirements"].get("nvrtc_options", []))
        nvshmem = "nvshmem" in manifest["requirements"]
        if nvshmem:  # qd.shmem: NVSHMEM's headers, then a device link against its library
            nvrtc_options += nvrtc.nvshmem_include_options()
        result, seconds = timed(nvrtc.compile_cuda, text, name, arch=arch, cubin=True,
                                options=nvrtc_options, verbose=bool(options.get("resources")))
        used = f"{tool} + nvlink (NVSHMEM {nvrtc.nvshmem_version()})" if nvshmem else tool
        if nvshmem and result.ok:
            linked, link_seconds = timed(nvrtc.link_nvshmem, result.cubin, arch)
            seconds += link_seconds
            if not linked.ok:
                return Verdict("cuda", f"{used} {arch}", name, False, seconds, linked.log)
        details = nvrtc.resource_usage(result.log) if result.ok and options.get("resources") else {}
        message = "" if result.ok and not options.get("resources") else map_log(result.log, name, text, NVRTC_LOCATION)
        return Verdict("cuda", f"{used} {arch}", name, result.ok, seconds, message if not result.ok else "", details)

    return check

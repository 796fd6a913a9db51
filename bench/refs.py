"""The reference kernels (reference/perf/ref/*.cu) cut down to what one comparison needs.

A ref file holds the hand-written kernels, the CUB ones and host wrappers that instantiate
CUB's device-wide dispatch (DeviceScan, DeviceRadixSort). NVRTC compiles device code only,
so for the toolchain-time table each algorithm is compiled from the file with every other
kernel and every host function removed (and the device-wide headers, which only those
wrappers need): the time is that of the algorithm alone, as for our one-kernel sources."""
from __future__ import annotations

import re
from pathlib import Path

SHIM = Path(__file__).resolve().parent / "shim"  # <cstdint> for NVRTC, which has no C++ library

_KERNEL = re.compile(r'^extern "C" __global__', re.M)
_HOST = re.compile(r"^cudaError_t\s+(\w+)\s*\(", re.M)


def _span(text: str, start: int) -> tuple[int, int]:
    """From ``start`` to just past the matching close of the first ``{``."""
    i = text.index("{", start)
    depth = 0
    while True:
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return start, i + 1
        i += 1


def _kernel_name(text: str, start: int) -> str:
    head = text[start:text.index("{", start)]
    return next(n for n in re.findall(r"(\w+)\s*\(", head) if n != "__launch_bounds__")


def kernels_in(text: str) -> list[str]:
    return [_kernel_name(text, m.start()) for m in _KERNEL.finditer(text)]


def extract(text: str, keep: list[str]) -> str:
    """``text`` with only the kernels in ``keep`` (and everything that is not a kernel or a
    host function) left."""
    cuts = []
    for m in _KERNEL.finditer(text):
        if _kernel_name(text, m.start()) not in keep:
            cuts.append(_span(text, m.start()))
    for m in _HOST.finditer(text):
        cuts.append(_span(text, m.start()))
    # Helpers built on CUB (templates, type aliases) go too when no kept kernel uses them,
    # so that a hand-written kernel is timed without the CUB headers.
    helpers = []
    for m in re.finditer(r"^template\s*<", text, re.M):
        a, b = _span(text, m.start())
        if "cub::" in text[a:b]:
            helpers.append(((a, b), re.search(r"(\w+)\s*\(", text[a:b]).group(1)))
    helpers += [(m.span(), m.group(1)) for m in re.finditer(r"^using (\w+)\s*=\s*cub::[^;]*;\n", text, re.M)]
    kept = "".join(text[slice(*_span(text, m.start()))] for m in _KERNEL.finditer(text)
                   if _kernel_name(text, m.start()) in keep)
    if "cub::" not in kept and not any(re.search(rf"\b{name}\b", kept) for _, name in helpers):
        cuts += [span for span, _ in helpers]
    missing = set(keep) - set(kernels_in(text))
    if missing:
        raise KeyError(f"no kernel {', '.join(sorted(missing))} in the reference file")
    for a, b in sorted(cuts, reverse=True):
        text = text[:a] + text[b:]
    text = re.sub(r"^#include <cub/device/[^>]*>\n", "", text, flags=re.M)
    # Headers only the removed kernels used: a hand-written kernel is timed without CUB.
    code = re.sub(r"^#include.*$|//.*$", "", text, flags=re.M)
    for lib in ("cub", "cuda"):
        if f"{lib}::" not in code:
            text = re.sub(rf"^#include <{lib}/[^>]*>\n", "", text, flags=re.M)
    return text


def nvrtc_options(ref_dir: Path, cccl: str) -> tuple[str, ...]:
    return ("-std=c++17", f"-I{ref_dir}", f"-I{cccl}", f"-I{SHIM}")

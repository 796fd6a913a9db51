"""What the bench sections share: paths, tool discovery, timing and table printing."""
from __future__ import annotations

import glob
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def perf_kit() -> Path | None:
    """The performance reference kit (sass_stats.py, ref/*.cu): $QD_PERF_REFERENCE, else
    ../shared/reference/perf beside the checkout, where the project keeps it."""
    for cand in (os.environ.get("QD_PERF_REFERENCE"), ROOT.parent / "shared" / "reference" / "perf",
                 "/work/shared/reference/perf"):
        if cand and (Path(cand) / "sass_stats.py").is_file():
            return Path(cand)
    return None


def cuda_tool(name: str) -> str | None:
    """A CUDA binary, the pip wheels' first: the system nvcc 13.0's ptxas rejects the PTX the
    13.5 wheels write, and the wheels are what `scripts/setup.sh toolchains` installs."""
    for sp in sys.path:
        for path in sorted(glob.glob(os.path.join(sp, "nvidia", "*", "bin", name)), reverse=True):
            if os.access(path, os.X_OK):
                return path
    return shutil.which(name)


def cccl_include() -> str | None:
    """CUB/Thrust/libcu++ headers: the wheel's (same version as its NVRTC), else the system's."""
    nvcc = cuda_tool("nvcc")
    cands = [str(Path(nvcc).parent.parent / "include" / "cccl")] if nvcc else []
    cands += sorted(glob.glob("/usr/local/cuda*/include/cccl"), reverse=True)
    for c in cands:
        if os.path.isdir(os.path.join(c, "cub")):
            return c
    return None


def median(xs):
    return statistics.median(xs) if xs else None


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def fmt(v, digits: int = 2, scale: float = 1.0) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    return f"{v * scale:.{digits}f}"


def table(title: str, head: list[str], rows: list[list], note: str | None = None) -> str:
    cells = [[str(c) for c in head]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[k]) for r in cells) for k in range(len(head))]
    lines = ["", title, "-" * len(title)]
    for i, r in enumerate(cells):
        # First column left-aligned (names), numbers right-aligned.
        lines.append("  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    if note:
        lines.append(note)
    return "\n".join(lines)


def say(text: str = "") -> None:
    print(text, flush=True)

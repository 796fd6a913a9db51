"""The benchmark suite (issue 8): is this the fastest way from a Python kernel to vendor
source, and is the output as good as hand-written CUDA? Prints four sections of tables and
writes a JSON report (bench/report.json).

  1. translation latency per kernel and target (examples + a generated corpus), the CLI's
     cold start, and cupyx.jit / Warp codegen beside ours where they are installed;
  2. NVRTC time to an sm_90 cubin, ours against the same algorithm by hand and with CUB;
  3. code quality: sm_90 SASS statistics against the reference kernels, AMDGPU registers;
  4. GPU throughput against CuPy and a device-to-device copy (skipped without a GPU).

    python bench/run.py [--quick] [--with-competitors] [--sections 1,2,3,4] [--json FILE]

Numbers are measurements on the machine at hand, never asserted: nothing here fails on a
slow result. Sections whose tools are missing say so and are skipped.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, ROOT, say  # noqa: E402


def run_sections(args, report: dict, sections: set[int], workdir: Path, timings: dict[str, float]) -> None:
    """Each section asked for, its seconds in ``timings``; their files in ``workdir``."""
    if 1 in sections:
        import latency

        t0 = time.perf_counter()
        latency.run(args, report, workdir)
        timings["1"] = time.perf_counter() - t0
    if sections & {2, 3}:
        import quality_kernels

        cases, notes = quality_kernels.cases(workdir)
        for n in notes:
            say(f"note: {n}")
        if 2 in sections:
            import toolchain

            t0 = time.perf_counter()
            examples = []
            from transpiler.cli import load_kernels

            for path in sorted((ROOT / "examples").glob("*.py")):
                ks, _ = load_kernels(str(path))
                examples += [(f"{path.stem}.{name}", k) for name, k in ks.items()]
            toolchain.run(args, report, cases, examples)
            timings["2"] = time.perf_counter() - t0
        if 3 in sections:
            import quality

            t0 = time.perf_counter()
            quality.run(args, report, cases, workdir)
            timings["3"] = time.perf_counter() - t0
    if 4 in sections:
        import gpu

        t0 = time.perf_counter()
        gpu.run(args, report)
        timings["4"] = time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer repeats and a 30-kernel corpus (a smoke run)")
    p.add_argument("--with-competitors", action="store_true",
                   help="install cupy-cuda13x and warp-lang into bench/.venv-competitors if they are not found")
    p.add_argument("--sections", default="1,2,3,4", help="comma-separated subset of 1,2,3,4")
    p.add_argument("--repeat", type=int, default=None, help="warm repeats per kernel and target (default 7; quick 3)")
    p.add_argument("--corpus", type=int, default=None, help="generated kernels (default 100; quick 30)")
    p.add_argument("--json", default=str(BENCH / "report.json"), help="where to write the report")
    p.add_argument("--gpu-sizes", default="24,26,28", help="log2 of the element counts for section 4")
    p.add_argument("--gpu-repeat", type=int, default=20)
    args = p.parse_args(argv)
    args.repeat = args.repeat or (3 if args.quick else 7)
    args.corpus = args.corpus or (30 if args.quick else 100)
    args.gpu_sizes = [int(s) for s in args.gpu_sizes.split(",")]
    sections = {int(s) for s in args.sections.split(",") if s.strip()}

    import transpiler as qd

    t_start = time.perf_counter()
    report: dict = {"machine": {"python": platform.python_version(), "platform": platform.platform(),
                                "processor": platform.processor() or platform.machine()},
                    "args": {k: v for k, v in vars(args).items()}}
    say(f"transpiler bench: Python {platform.python_version()} on {platform.machine()}, "
        f"{__import__('os').cpu_count()} CPUs; targets {', '.join(qd.TARGETS)}")
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="qd_bench_") as work:  # the sections' scratch files, removed at the end
        run_sections(args, report, sections, Path(work), timings)

    total = time.perf_counter() - t_start
    report["bench_seconds"] = {"sections": timings, "total": total}
    Path(args.json).write_text(json.dumps(report, indent=1, default=str) + "\n")
    say(f"\nbench: {total:.0f} s (" + ", ".join(f"section {k} {v:.0f} s" for k, v in timings.items())
        + f"); report written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

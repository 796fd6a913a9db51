"""Translation latency: `qd.translate` per kernel and target (warm median and the cold
first call), and the CLI's cold `emit` of each example. Prints a table; asserts nothing.

    python bench/transpile.py [--repeat N] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import transpiler as qd  # noqa: E402
from transpiler.translate import lower  # noqa: E402


def kernels():
    from conftest import corpus, load_module

    out = []
    for path in sorted((ROOT / "examples").glob("*.py")):
        module = load_module(path)
        out += [(f"examples/{path.stem}.{k.__name__}", k, {}) for k in vars(module).values()
                if isinstance(k, qd.Kernel)]
    return out + [(f"tests/kernels/{name}", k, t) for name, k, t in corpus()]


def time_translate(kernel, target: str, template_args: dict, repeat: int) -> tuple[float, float] | None:
    kernel.__dict__.pop("_ir_cache", None)
    t0 = time.perf_counter()
    try:
        qd.translate(kernel, target, template_args=template_args)
    except qd.TranspileError:
        return None
    cold = time.perf_counter() - t0
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        qd.translate(kernel, target, template_args=template_args)
        samples.append(time.perf_counter() - t0)
    return cold, statistics.median(samples)


def time_frontend(kernel, template_args: dict, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        kernel.__dict__.pop("_ir_cache", None)
        t0 = time.perf_counter()
        lower(kernel, template_args)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def cli_cold(path: Path) -> float:
    samples = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, str(ROOT / "cli.py"), "emit", str(path), "--target", "all"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        samples.append(time.perf_counter() - t0)
    return min(samples)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--json")
    args = p.parse_args()
    rows, report = [], {"translate": [], "cli_cold_s": {}}
    for name, kernel, targs in kernels():
        front = time_frontend(kernel, targs, args.repeat)
        cells = []
        for target in qd.TARGETS:
            r = time_translate(kernel, target, targs, args.repeat)
            cells.append("n/a" if r is None else f"{r[1] * 1e3:.3f} ({r[0] * 1e3:.1f})")
            report["translate"].append({"kernel": name, "target": target,
                                        "warm_ms": None if r is None else r[1] * 1e3,
                                        "cold_ms": None if r is None else r[0] * 1e3})
        rows.append((name, f"{front * 1e3:.3f}", *cells))
    head = ("kernel", "frontend ms", *[f"{t} warm (cold) ms" for t in qd.TARGETS])
    widths = [max(len(str(r[c])) for r in [head, *rows]) for c in range(len(head))]
    print("Translation latency: median of warm calls (IR cached), cold first call in parentheses")
    for r in [head, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    print("\nCLI cold start: `python cli.py emit FILE --target all` (best of 3, includes interpreter start)")
    for path in sorted((ROOT / "examples").glob("*.py")):
        s = cli_cold(path)
        report["cli_cold_s"][path.name] = s
        print(f"  {path.name:<16} {s:.3f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

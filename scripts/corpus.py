"""Run the corpus of real programs (tests/corpus/: Taichi's examples, Quadrants' demos, Genesis
kernels, each with only its import changed) on this project's executors and on Quadrants 1.3.3,
and compare the fields each dumps at the end.

    python scripts/corpus.py                        # every program; Quadrants from /tmp/qvenv
    python scripts/corpus.py mpm88 nbody --executors vulkan,cpu-cuda
    python scripts/corpus.py --quadrants-python /path/to/venv/bin/python

Each program runs in its own process (``QD_MODULE`` picks the module, ``CORPUS_ARCH`` /
``CORPUS_DIALECT`` the executor, ``CORPUS_OUT`` the .npz it writes). Every executor's fields are
compared with the reference: Quadrants on its CPU backend when its Python is found, else this
project's cpu-cuda executor. A field matches when max|got - want| <= rtol * max|want| (its
largest value: pointwise relative differences mean nothing where a field crosses zero), rtol
being the program's ``CORPUS_RTOL`` (``CORPUS_RTOL_OURS`` between this project's executors,
where it differs), with the reason in its file. ``CORPUS_EXPECT`` names known
differences ({executor or "quadrants": why}): reported, not failures. Prints a table (program,
executor, match, max relative difference) and exits 1 on an unexpected mismatch or error."""
from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
QUADRANTS_PYTHON = "/tmp/qvenv/bin/python"
# executor -> (module, environment); "quadrants" is the reference where it is installed
EXECUTORS = {
    "vulkan": ("transpiler", {"CORPUS_ARCH": "vulkan"}),
    "cpu-cuda": ("transpiler", {"CORPUS_ARCH": "cpu"}),
    "cpu-hip": ("transpiler", {"CORPUS_ARCH": "cpu", "CORPUS_DIALECT": "hip"}),
    "quadrants": ("quadrants", {"CORPUS_ARCH": "cpu"}),
}


@dataclass
class Row:
    program: str
    executor: str
    reference: str
    match: str           # "yes", "no", "error", "expected: ..." (a known difference)
    max_rel: float | None
    note: str = ""


def programs(names: list[str] | None = None) -> list[Path]:
    found = sorted(p for p in CORPUS.glob("*.py") if not p.name.startswith("_"))
    return [p for p in found if not names or p.stem in names]


def settings(path: Path) -> dict:
    """The program's CORPUS_* constants (RTOL, EXPECT, QUADRANTS_ARCH), read without running it."""
    found = {"EXPECT": {}, "QUADRANTS_ARCH": "cpu"}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id.startswith("CORPUS_"):
                found[node.targets[0].id[7:]] = ast.literal_eval(node.value)
    if "RTOL" not in found:
        raise SystemExit(f"{path}: no CORPUS_RTOL (the tolerance, with its reason)")
    return found


def tolerance(conf: dict, reference: str) -> float:
    """CORPUS_RTOL; against this project's own cpu-cuda, CORPUS_RTOL_OURS where a program sets
    one (the same random stream on every executor of this project, not Quadrants')."""
    return conf["RTOL"] if reference == "quadrants" else conf.get("RTOL_OURS", conf["RTOL"])


def run(path: Path, executor: str, python: str, timeout: float, arch: str | None = None) -> tuple[dict | None, str]:
    """The program's dumped fields on ``executor``, or None and the error's last lines."""
    module, env = EXECUTORS[executor]
    env = {**env, "CORPUS_ARCH": arch or env["CORPUS_ARCH"]}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "fields.npz"
        full = {**os.environ, **env, "QD_MODULE": module, "CORPUS_OUT": str(out)}
        try:
            p = subprocess.run([python, str(path)], env=full, cwd=CORPUS, capture_output=True, text=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"no result after {timeout:.0f} s"
        if p.returncode or not out.exists():
            lines = (p.stdout + p.stderr).strip().splitlines()
            return None, " | ".join(lines[-3:])[-400:]
        with np.load(out) as z:
            return {k: z[k] for k in z.files}, ""


def field_rel(g: np.ndarray | None, w: np.ndarray) -> float:
    """max|g - w| / max|w| (inf for a missing field, another shape, NaNs or infinities in
    different places)."""
    if g is None or g.shape != w.shape:
        return float("inf")
    g, w = g.astype(np.float64), w.astype(np.float64)
    inf = np.isinf(w)
    if (np.isnan(g) != np.isnan(w)).any() or (np.isinf(g) != inf).any() or (g[inf] != w[inf]).any():
        return float("inf")
    fin = np.isfinite(w)
    if not fin.any():
        return 0.0
    scale, diff = np.abs(w[fin]).max(), np.abs(g[fin] - w[fin]).max()
    return diff / scale if scale else (0.0 if diff == 0 else float("inf"))


def max_rel(got: dict, want: dict) -> tuple[float, list[str]]:
    """The largest field_rel over the fields, and each field's (name=value) where it is not 0."""
    rels = {k: field_rel(got.get(k), w) for k, w in want.items()}
    return max(rels.values(), default=0.0), [f"{k}={v:.1e}" for k, v in rels.items() if v]


def check(path: Path, executors: list[str], qpython: str | None, timeout: float, log: Callable = print) -> list[Row]:
    """One program on every executor, each compared with the reference."""
    conf = settings(path)
    ref_name = "quadrants" if qpython else "cpu-cuda"
    rtol, expect = tolerance(conf, ref_name), conf["EXPECT"]
    want, err = run(path, ref_name, qpython or sys.executable, timeout,
                    conf["QUADRANTS_ARCH"] if qpython else None)
    rows = [Row(path.stem, ref_name, "-", "reference" if want is not None else "error", None, err)]
    log(format_row(rows[0]))
    for ex in executors:
        if ex == ref_name:
            continue
        got, err = run(path, ex, sys.executable, timeout)
        known = expect.get(ex) or (expect.get("quadrants") if ref_name == "quadrants" else None)
        if got is None or want is None:
            rel, ok = None, False
        else:
            rel, fields = max_rel(got, want)
            ok = rel <= rtol
            err = err or ("" if ok else "differ: " + ", ".join(fields))
        match = "yes" if ok else f"expected: {known}" if known else "error" if got is None or want is None else "no"
        rows.append(Row(path.stem, ex, ref_name, match, rel, err))
        log(format_row(rows[-1]))
    return rows


def format_row(r: Row) -> str:
    rel = "-" if r.max_rel is None else f"{r.max_rel:.2e}"
    return f"| {r.program} | {r.executor} | {r.reference} | {r.match} | {rel} | {r.note} |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/corpus.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="programs (file stems in tests/corpus/); default all")
    ap.add_argument("--executors", default="vulkan,cpu-cuda,cpu-hip")
    ap.add_argument("--quadrants-python", default=QUADRANTS_PYTHON,
                    help="the Python of a venv with Quadrants 1.3.3 (none there: cpu-cuda is the reference)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per program and executor")
    a = ap.parse_args(argv)
    qpython = a.quadrants_python if a.quadrants_python and Path(a.quadrants_python).exists() else None
    print("| program | executor | compared with | match | max rel diff | note |\n|---|---|---|---|---|---|")
    rows = []
    for path in programs(a.names):
        rows += check(path, [e for e in a.executors.split(",") if e], qpython, a.timeout)
    bad = [r for r in rows if r.match in ("no", "error")]
    print(f"\n{len(rows)} runs; {len(bad)} unexpected mismatches or errors;"
          f" {sum(r.match.startswith('expected') for r in rows)} known differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

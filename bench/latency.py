"""Section 1: translation latency per kernel and target, and the CLI's cold start.

Definitions (every number is wall time on this machine, in one process unless stated):
- cold: the first ``qd.translate`` of a kernel to a target in a process that has imported
  the transpiler and translated other kernels: the kernel's own source is parsed again and
  its IR rebuilt (its parse-cache and IR-cache entries are dropped first).
- warm: the median of repeated calls with the kernel's IR cache dropped before each, so
  every call runs the frontend, the hazard checker and the target emitter (only the parsed
  AST is reused). The number the goals are about: on the corpus, median at or below
  0.3 ms and p90 below 1 ms per kernel and target (issue 19).
- cached: the median with the IR cache hit (hazards + emission only), what a second
  target of the same subgroup width costs.
- all-4 / 4: translating a kernel to cuda, hip, glsl and msl from an empty IR cache,
  divided by four: what `emit --target all` pays per kernel and target.
- CLI cold: `python cli.py emit FILE --target all` as a new process (interpreter start,
  imports, every kernel to every target, JSON manifests), stdout discarded.
"""
from __future__ import annotations

import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from common import ROOT, fmt, median, say, table

import transpiler as qd  # noqa: E402
from transpiler.cli import load_kernels  # noqa: E402

GOAL_WARM_MS = 1.0         # per kernel (issue 8): the "< 1 ms" count
GOAL_MEDIAN_MS = 0.3       # the corpus median per target (issue 19)
GOAL_P90_MS = 1.0          # the corpus p90 per target (issue 19)
GOAL_CLI_S = 0.5           # a 10-kernel file (issue 8)
GOAL_CLI_EXAMPLE_S = 0.2   # each example file (issue 19)


def _forget(kernel, parsed: bool) -> None:
    kernel.__dict__.pop("_ir_cache", None)
    kernel.__dict__.pop("_hazard_cache", None)  # the checker's verdicts on that IR
    if parsed:
        try:  # an implementation detail: the frontend's parse cache, keyed by code object and file
            from transpiler.frontend import source

            code = kernel.fn.__code__
            source._cache.pop((code, code.co_filename), None)
        except (ImportError, AttributeError):
            pass


def _translate(kernel, target: str, template_args: dict):
    return qd.translate(kernel, target, template_args=template_args, warn=False)


def measure_kernel(kernel, template_args: dict, repeat: int) -> dict:
    """cold / warm / cached per target, plus the all-targets figure, in ms."""
    out: dict = {"targets": {}}
    for t in qd.TARGETS:
        _forget(kernel, parsed=True)
        t0 = time.perf_counter()
        try:
            _translate(kernel, t, template_args)
        except Exception as exc:  # noqa: BLE001 - a target that rejects the kernel is a table cell
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            out["targets"][t] = {"error": re.sub(r"^.*?error: ", "", msg)[:120]}
            continue
        out["targets"][t] = {"cold_ms": (time.perf_counter() - t0) * 1e3}
    ok = [t for t in qd.TARGETS if "error" not in out["targets"][t]]
    warm = {t: [] for t in ok}
    for _ in range(repeat):
        for t in ok:
            _forget(kernel, parsed=False)
            t0 = time.perf_counter()
            _translate(kernel, t, template_args)
            warm[t].append((time.perf_counter() - t0) * 1e3)
    for t in ok:
        out["targets"][t]["warm_ms"] = median(warm[t])
        samples = []
        for _ in range(max(3, repeat // 2)):
            t0 = time.perf_counter()
            _translate(kernel, t, template_args)
            samples.append((time.perf_counter() - t0) * 1e3)
        out["targets"][t]["cached_ms"] = median(samples)
    if ok:
        samples = []
        for _ in range(max(3, repeat // 2)):
            _forget(kernel, parsed=False)
            t0 = time.perf_counter()
            for t in ok:
                _translate(kernel, t, template_args)
            samples.append((time.perf_counter() - t0) * 1e3 / len(ok))
        out["all_targets_per_target_ms"] = median(samples)
    return out


def load(path: Path) -> list[tuple[str, object]]:
    kernels, _ = load_kernels(str(path))
    return list(kernels.items())


def warm_up() -> None:
    """Imports, Jinja template compilation and first-use caches, outside every measurement."""
    for _, k in load(ROOT / "examples" / "saxpy.py"):
        for t in qd.TARGETS:
            _translate(k, t, {})


def quantile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def fresh_bytecode() -> bool:
    """Brings the package's .pyc files up to date (what `pip install` or a first run does);
    False where the checkout is read-only."""
    import compileall

    try:
        return bool(compileall.compile_dir(str(ROOT / "transpiler"), quiet=1)) and \
            bool(compileall.compile_file(str(ROOT / "cli.py"), quiet=1))
    except OSError:
        return False


def cli_cold(path: Path, runs: int) -> dict:
    """Wall time of `python cli.py emit PATH --target all` in fresh processes, and the CPU
    time (user + system) the process used: on a shared 2-core machine the wall time swings
    with the neighbours' load, the CPU time much less."""
    cmd = [sys.executable, str(ROOT / "cli.py"), "emit", str(path), "--target", "all"]
    samples, cpu, err = [], [], None
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        samples.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        if p.returncode != 0:
            err = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[0][:160]
    return {"median_s": median(samples), "min_s": min(samples), "cpu_median_s": median(cpu), "runs": runs,
            "error": err}


def process_baselines(runs: int) -> dict:
    """What a new Python process costs before the transpiler does anything."""
    out = {}
    for label, code in (("python -c pass", "pass"), ("import transpiler", "import transpiler"),
                        ("import transpiler + jinja2", "import transpiler, jinja2")):
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False)
            samples.append(time.perf_counter() - t0)
        out[label] = min(samples)
    return out


def import_profile(path: Path, top: int = 12) -> list[dict]:
    """`python -X importtime cli.py emit ...`: the slowest imports by cumulative time."""
    p = subprocess.run([sys.executable, "-X", "importtime", str(ROOT / "cli.py"), "emit", str(path), "--target", "all"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    rows = []
    for line in p.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append({"module": m.group(4), "self_us": int(m.group(1)), "cumulative_us": int(m.group(2)),
                         "depth": len(m.group(3)) // 2})
    top_level = [r for r in rows if r["depth"] == 0]
    return sorted(top_level, key=lambda r: -r["cumulative_us"])[:top]


def write_corpus(directory: Path, n: int, seed: int = 8) -> Path:
    from corpus import generate

    path = directory / f"bench_corpus_{n}.py"
    path.write_text(generate(n, seed))
    return path


def run(args, report: dict, workdir: Path) -> None:
    """Section 1; its generated corpora are written to ``workdir`` (run.py's, removed after)."""
    say("\n=== 1. Translation latency " + "=" * 60)
    say(__doc__.split("Definitions", 1)[1].split("\n", 1)[1].rstrip())
    warm_up()
    repeat = args.repeat
    tmp = workdir
    sec = report.setdefault("translation", {})

    # Examples: one row per kernel.
    rows, ex = [], []
    for path in sorted((ROOT / "examples").glob("*.py")):
        for name, k in load(path):
            m = measure_kernel(k, {}, repeat)
            m["kernel"] = f"{path.stem}.{name}"
            ex.append(m)
            cells = []
            for t in qd.TARGETS:
                c = m["targets"][t]
                cells.append("error" if "error" in c else f"{c['warm_ms']:.2f} ({c['cold_ms']:.1f})")
            rows.append([m["kernel"], *cells, fmt(m.get("all_targets_per_target_ms"))])
    sec["examples"] = ex
    say(table("Examples: warm ms (cold ms) per target; last column: all four targets from an empty IR cache, / 4",
              ["kernel", *qd.TARGETS, "all-4 / 4"], rows))
    errors = [(m["kernel"], t, m["targets"][t]["error"]) for m in ex for t in qd.TARGETS if "error" in m["targets"][t]]
    for kname, t, e in errors:
        say(f"  {kname} [{t}]: {e}")

    # The generated corpus: a summary per target.
    n = args.corpus
    corpus_path = write_corpus(tmp, n)
    results = []
    t0 = time.perf_counter()
    for name, k in load(corpus_path):
        m = measure_kernel(k, {}, repeat)
        m["kernel"] = name
        results.append(m)
    elapsed = time.perf_counter() - t0
    sec["corpus"] = {"n": n, "seed": 8, "kernels": results}
    rows = []
    summary = {}
    for t in [*qd.TARGETS, "all-4 / 4"]:
        if t == "all-4 / 4":
            warm = [m["all_targets_per_target_ms"] for m in results if m.get("all_targets_per_target_ms")]
            cold, cached, errs = [], [], 0
        else:
            cells = [m["targets"][t] for m in results]
            warm = [c["warm_ms"] for c in cells if "warm_ms" in c]
            cold = [c["cold_ms"] for c in cells if "cold_ms" in c]
            cached = [c["cached_ms"] for c in cells if "cached_ms" in c]
            errs = sum(1 for c in cells if "error" in c)
        under = sum(1 for w in warm if w < GOAL_WARM_MS)
        s = {"warm_median_ms": median(warm), "warm_p90_ms": quantile(warm, 0.9), "warm_max_ms": max(warm, default=None),
             "cold_median_ms": median(cold), "cold_max_ms": max(cold, default=None),
             "cached_median_ms": median(cached), "under_goal": under, "ok": len(warm), "errors": errs}
        summary[t] = s
        goals = "n/a" if t == "all-4 / 4" or not warm else " / ".join(
            "met" if ok else "over" for ok in (s["warm_median_ms"] <= GOAL_MEDIAN_MS, s["warm_p90_ms"] < GOAL_P90_MS))
        rows.append([t, fmt(s["warm_median_ms"]), fmt(s["warm_p90_ms"]), fmt(s["warm_max_ms"]),
                     fmt(s["cold_median_ms"]), fmt(s["cold_max_ms"]), fmt(s["cached_median_ms"]),
                     f"{under}/{len(warm)}", goals, errs])
    sec["corpus"]["summary"] = summary
    say(table(f"Generated corpus: {n} kernels (bench/corpus.py, seed 8), ms per kernel and target; goals: warm "
              f"median <= {GOAL_MEDIAN_MS:g} ms, p90 < {GOAL_P90_MS:g} ms",
              ["target", "warm med", "warm p90", "warm max", "cold med", "cold max", "cached med",
               f"< {GOAL_WARM_MS:g} ms", "med / p90 goal", "errors"], rows,
              note=f"({elapsed:.1f} s for the corpus; kernels with a block collective are the slow tail)"))

    # Competitors, when their packages are there.
    from competitors import run_section as competitors_section

    competitors_section(args, report, tmp)

    # CLI cold start, from the bytecode an installed package (or any earlier run) has: a
    # stale or missing .pyc would count compiling our own modules, every run where the
    # environment sets PYTHONDONTWRITEBYTECODE (this machine does).
    compiled = fresh_bytecode()
    ten = write_corpus(tmp, 10)
    runs = 3 if args.quick else 5
    cli = {"ten_kernel_file": cli_cold(ten, runs)}
    for path in sorted((ROOT / "examples").glob("*.py")):
        cli[f"examples/{path.name}"] = cli_cold(path, 1 if args.quick else 3)
    base = process_baselines(3)
    cli["baselines_s"] = base
    cli["imports"] = import_profile(ten)
    cli["bytecode_fresh"] = compiled
    report["cli_cold"] = cli
    rows = []
    for key, v in cli.items():
        if key in ("baselines_s", "imports", "bytecode_fresh"):
            continue
        goal = GOAL_CLI_S if key == "ten_kernel_file" else GOAL_CLI_EXAMPLE_S
        verdict = "" if v["error"] else (f"< {goal:g}: " + ("ok" if v["median_s"] < goal else "over"))
        label = "10-kernel generated file" if key == "ten_kernel_file" else key
        rows.append([label, f"{v['median_s']:.3f}", f"{v['min_s']:.3f}", f"{v['cpu_median_s']:.3f}",
                     v["error"] or verdict])
    for label, s in base.items():
        rows.append([f"(baseline) {label}", "", f"{s:.3f}", "", ""])
    say(table(f"CLI cold start: `python cli.py emit FILE --target all`, s (goals: 10-kernel file < {GOAL_CLI_S:g} s, "
              f"each example < {GOAL_CLI_EXAMPLE_S:g} s)",
              ["file", "wall median", "wall min", "CPU median", "goal / error"], rows))
    slow = ", ".join(f"{r['module']} {r['cumulative_us'] / 1e3:.0f} ms" for r in cli["imports"][:6])
    say(f"  slowest top-level imports on that path: {slow}")
    if not compiled:
        say("  (the package's bytecode could not be brought up to date: these include compiling its modules)")

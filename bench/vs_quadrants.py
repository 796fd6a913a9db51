"""The same kernels, spelled the same way, in the transpiler and in Quadrants 1.3.3, on the
same Vulkan device (lavapipe on a machine without a GPU), in one run: warm time per call
and first call, as ratios (ours / Quadrants; below 1.0 we are faster).

Each (kernel, size, framework) runs in its own process (bench/vs_runner.py: one first call,
0.2 s of untimed calls, then the median of REPS warm calls, each from launch to qd.sync() with the arguments
already on the device as qd.ndarray, the result checked against NumPy), the two
frameworks alternating, ROUNDS times; the table gives the median over rounds. A first call is
each framework's as its users get it, offline caches on (both frameworks' default): any process
but the first to run a kernel finds its translation, or Quadrants' compiled kernel, on disk. Quadrants
runs from its own virtual environment: bench/.venv-quadrants, which `make bench` (or
`python bench/quadrants_venv.py`) fills, or $QD_QUADRANTS_PYTHON, or /tmp/qvenv/bin/python.

    python bench/vs_quadrants.py [--quick] [--sizes 1024,4194304] [--rounds 3] [--reps 50] [--kernels a,b]

First, start-up on Vulkan (bench/vs_startup.py, each framework in new processes, alternating):
the import, ``qd.init(arch=qd.vulkan)``, the first calls of two kernels no process has run
before (a constant drawn per run in their text, so no disk cache has them): the process's first
kernel, right after qd.init, and the next one; and the import to the first result.
``--startup-rounds 0`` leaves it out.

A second table does the same for the CPU: our CPU executor (the CUDA text on the SIMT
emulator; its first call includes the C++ build, cached on disk afterwards) against
Quadrants' LLVM CPU backend, for saxpy, a sum, the 2-D stencil and the particles update (on
ndarrays, and on vector fields with a struct-for: Taichi's everyday spelling), the particles
update written `vel[i] += ...; pos[i] += ...` on vec3 ndarrays (no atomic once demoted), a
kernel-scope sum `s += x[i]` and a `+=` scatter to random elements, at 1K (the
launch cost) and 1M elements (throughput; both frameworks use every core there), and
`first_call`: saxpy from a module written anew in each process, so that its "first ms" is a
new kernel's translation and build in both (no cache knows it);
``--cpu-sizes ''`` leaves it out.

``--arch cuda`` runs the first table on an NVIDIA GPU instead (ours through CuPy, Quadrants'
CUDA backend; Quadrants then comes from the same Python when ``QD_QUADRANTS_PYTHON`` names it).

Not part of the test suite (a few minutes).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median, say, table  # noqa: E402
from quadrants_venv import quadrants_python  # noqa: E402

HERE = Path(__file__).resolve().parent
KERNELS = ["saxpy", "sum", "block_reduce", "histogram", "block_scan", "lookback_scan", "radix_rank", "stencil",
           "particles", "field_particles", "particles_add", "kernel_sum", "scatter"]
CPU_KERNELS = ["saxpy", "sum", "stencil", "particles", "field_particles", "particles_add", "kernel_sum", "scatter",
               "first_call"]
OURS = sys.executable
THEIRS = quadrants_python()


def run(python: str, module: str, kernel: str, n: int, reps: int, timeout: float, arch: str = "vulkan") -> dict:
    env = dict(os.environ, QD_MODULE=module, QD_ARCH=arch)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # both frameworks import from their bytecode caches
    try:
        proc = subprocess.run([python, str(HERE / "vs_runner.py"), kernel, str(n), str(reps)], capture_output=True,
                              text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"no result in {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        if proc.returncode < 0:
            return {"error": f"the process died of signal {-proc.returncode}"}
        last = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        return {"error": f"exit {proc.returncode}: " + (last[-1] if last else "")[:120]}
    return json.loads(lines[-1])


def measure(kernels: list[str], sizes: list[int], rounds: int, reps: int, timeout: float,
            arch: str = "vulkan") -> dict:
    results: dict = {}
    for k in kernels:
        for n in sizes:
            cell = results.setdefault(f"{k}@{n}", {"ours": [], "theirs": []})
            for _ in range(rounds):  # alternate, so a slow spell of the machine hits both
                cell["ours"].append(run(OURS, "transpiler", k, n, reps, timeout, arch))
                cell["theirs"].append(run(THEIRS, "quadrants", k, n, reps, timeout, arch))
    return results


STARTUP_ROWS = (("import_ms", "import"), ("init_ms", "qd.init(arch=qd.vulkan)"),
                ("first_ms", "first call of the first kernel"), ("next_ms", "first call of the next new kernel"),
                ("total_ms", "import to first result"))


def startup(rounds: int, timeout: float) -> dict:
    """bench/vs_startup.py in new processes, the two frameworks alternating: who -> runs."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # both frameworks import from their bytecode caches
    runs: dict = {"ours": [], "theirs": []}
    for _ in range(rounds):
        for who, python, module in (("ours", OURS, "transpiler"), ("theirs", THEIRS, "quadrants")):
            try:
                proc = subprocess.run([python, str(HERE / "vs_startup.py")], capture_output=True, text=True,
                                      env=dict(env, QD_MODULE=module), timeout=timeout)
            except subprocess.TimeoutExpired:
                runs[who].append({"error": f"no result in {timeout:.0f} s"})
                continue
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            last = [ln for ln in proc.stderr.splitlines() if ln.strip()] or ["no output"]
            runs[who].append(json.loads(lines[-1]) if lines else {"error": last[-1][:120]})
    return runs


def startup_table(runs: dict, rounds: int) -> str:
    good = {who: [r for r in rs if "error" not in r] for who, rs in runs.items()}
    rows, notes = [], [f"{who}: {rs[0]['error']}" for who, rs in runs.items() if rs and not good[who]]
    for key, label in STARTUP_ROWS:
        cells = {who: median([r[key] for r in rs]) if rs else None for who, rs in good.items()}
        ok = all(r["ok"] for rs in good.values() for r in rs)
        rows.append([label] + ["-" if cells[w] is None else f"{cells[w]:.1f}" for w in ("ours", "theirs")] +
                    ["-" if None in cells.values() else f"{cells['ours'] / cells['theirs']:.2f}" + ("" if ok else
                                                                                                 " WRONG")])
    return table(f"Start-up on the Vulkan device, new processes: ours / Quadrants 1.3.3 (median of {rounds} rounds; "
                 "ms)", ["stage", "ours ms", "Quadrants ms", "ratio"], rows, note="\n".join(notes) or None)


def summary(runs: list[dict]) -> dict:
    good = [r for r in runs if "error" not in r]
    if not good:
        return {"error": runs[0]["error"]}
    return {"warm_ms": median([r["warm_ms"] for r in good]), "first_ms": median([r["first_ms"] for r in good]),
            "ok": all(r["ok"] for r in good)}


def cell(s: dict, key: str) -> str:
    if "error" in s:
        return "-"
    return f"{s[key]:.3f}" + ("" if s["ok"] else " WRONG")


def ratio(a: dict, b: dict, key: str) -> str:
    if "error" in a or "error" in b:
        return "-"
    return f"{a[key] / b[key]:.2f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1024,4194304")
    p.add_argument("--arch", default="vulkan", choices=["vulkan", "cuda"], help="the device of the first table")
    p.add_argument("--cpu-sizes", default="1024,1048576", help="the CPU table at these sizes ('' for none)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--timeout", type=float, default=180.0)
    p.add_argument("--startup-rounds", type=int, default=7, help="new processes per framework for the start-up "
                   "table (import, qd.init, a new kernel's first call; 0 for none)")
    p.add_argument("--quick", action="store_true", help="one round, 20 reps")
    p.add_argument("--json", help="also write the raw results here")
    p.add_argument("--kernels", help="only these kernels, comma-separated (e.g. histogram,block_reduce)")
    a = p.parse_args()
    only = {k.strip() for k in (a.kernels or "").split(",") if k.strip()}
    unknown = only - set(KERNELS) - set(CPU_KERNELS)
    if unknown:
        p.error(f"unknown kernels {', '.join(sorted(unknown))}; choose from {', '.join(KERNELS)}")
    if a.quick:
        a.rounds, a.reps, a.startup_rounds = 1, 20, min(a.startup_rounds, 3)
    if not shutil.which(THEIRS):
        say(f"Quadrants not found at {THEIRS}: run python bench/quadrants_venv.py, or set QD_QUADRANTS_PYTHON")
        return
    results = {}
    if a.startup_rounds and a.arch == "vulkan":
        results["startup"] = startup(a.startup_rounds, a.timeout)
        say(startup_table(results["startup"], a.startup_rounds))
    sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    if sizes:  # (--sizes '': the CPU table alone)
        chosen = [k for k in KERNELS if not only or k in only]
        results[a.arch] = measure(chosen, sizes, a.rounds, a.reps, a.timeout, arch=a.arch)
        device = "Vulkan device" if a.arch == "vulkan" else "NVIDIA GPU (CUDA)"
        say(ratio_table(f"Same kernels on the same {device}: ours / Quadrants 1.3.3 ({a.rounds} rounds, median of "
                        f"{a.reps} warm calls each)", results[a.arch]))
    cpu_sizes = [int(s) for s in a.cpu_sizes.split(",") if s.strip()]
    cpu_kernels = [k for k in CPU_KERNELS if not only or k in only]
    if cpu_sizes and cpu_kernels:
        results["cpu"] = measure(cpu_kernels, cpu_sizes, a.rounds, a.reps, a.timeout, arch="cpu")
        say(ratio_table(f"On the CPU: our CPU executor (the CUDA text on the SIMT emulator) / Quadrants' LLVM CPU "
                        f"backend ({a.rounds} rounds, median of {a.reps} warm calls each)", results["cpu"]))
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))


def ratio_table(title: str, results: dict) -> str:
    rows, notes = [], []
    for key, c in results.items():
        k, n = key.split("@")
        ours, theirs = summary(c["ours"]), summary(c["theirs"])
        rows.append([k, n, cell(ours, "warm_ms"), cell(theirs, "warm_ms"), ratio(ours, theirs, "warm_ms"),
                     cell(ours, "first_ms"), cell(theirs, "first_ms"), ratio(ours, theirs, "first_ms")])
        for who, s in (("ours", ours), ("Quadrants", theirs)):
            if "error" in s:
                notes.append(f"{k} at {n}, {who}: {s['error']}")
    return table(title, ["kernel", "n", "ours warm ms", "Quadrants warm ms", "warm ratio", "ours first ms",
                         "Quadrants first ms", "first ratio"], rows, note="\n".join(notes) or None)


if __name__ == "__main__":
    main()

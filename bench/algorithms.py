"""qd.algorithms: device-wide radix sort and exclusive scan.

1. Throughput (elements/s) on Vulkan in this run: ours on the Vulkan device this machine
   has (lavapipe on a CPU-only machine) against Quadrants 1.3.3's qd.algorithms on the same
   device, run in its own virtual environment as a subprocess (bench/quadrants_venv.py: the
   bench's own venv, $QD_QUADRANTS_PYTHON, or /tmp/qvenv). Where Quadrants refuses to run an
   op there, the table says why.
2. SASS instructions (sm_90) of each phase of our sort (onesweep, as CUB's) and scan, compiled
   by the pip NVRTC and disassembled by the pip cuobjdump, next to CUB's DeviceRadixSort /
   DeviceScan kernels (the performance reference kit's sass_tables_sm90.txt).

Run: python bench/algorithms.py [--sizes 100000,1000000] [--reps 5]. Not part of the test
suite or the default bench run (it takes a minute).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cuda_tool, median, perf_kit, say, table  # noqa: E402
from quadrants_venv import quadrants_python  # noqa: E402

import numpy as np  # noqa: E402

import transpiler as qd  # noqa: E402

D = 3  # log256_max_n: up to 16.7M elements
U32 = qd.types.ndarray(qd.u32, 1)
I32 = qd.types.ndarray(qd.i32, 1)


@qd.kernel
def sort_keys(keys: U32, tmp: U32, scratch: U32, n: qd.types.ndarray(qd.i32, 0)):
    qd.algorithms.sort(keys, tmp, keys, tmp, scratch, n, qd.u32, False, 32, D)


@qd.kernel
def scan_i32(arr: I32, out: I32, scratch: U32, count: I32):
    qd.algorithms.exclusive_scan_add(arr, out, scratch, count[0], qd.i32, D)


# ---------------------------------------------------------------------------- throughput

def ours(sizes: list[int], reps: int) -> dict:
    qd.init(arch="vulkan")
    from transpiler.runtime import current

    device = current().device.name
    rng = np.random.default_rng(0)
    out = {}
    for n in sizes:
        row = {}
        data = rng.integers(0, 2**32, n, dtype=np.uint32)
        keys, tmp = qd.ndarray(qd.u32, (n,)), qd.ndarray(qd.u32, (n,))
        scratch = qd.ndarray(qd.u32, (qd.algorithms.sort_scratch_slots(n, D),))
        nn = qd.ndarray(qd.i32, ())
        nn.fill(n)
        times = []
        for k in range(reps + 1):  # the first call translates and compiles
            keys.from_numpy(data)
            t0 = time.perf_counter()
            sort_keys(keys, tmp, scratch, nn)
            if k:
                times.append(time.perf_counter() - t0)
        row["sort"] = {"s": median(times), "ok": bool((keys.to_numpy() == np.sort(data)).all())}
        vals = rng.integers(-100, 100, n).astype(np.int32)
        arr, res = qd.ndarray(qd.i32, (n,)), qd.ndarray(qd.i32, (n,))
        arr.from_numpy(vals)
        scratch = qd.ndarray(qd.u32, (qd.algorithms.exclusive_scan_scratch_slots(n, D),))
        cnt = qd.ndarray(qd.i32, (1,))
        cnt.fill(n)
        times = []
        for k in range(reps + 1):
            t0 = time.perf_counter()
            scan_i32(arr, res, scratch, cnt)
            if k:
                times.append(time.perf_counter() - t0)
        want = np.concatenate([[0], np.cumsum(vals)[:-1]]).astype(np.int32)
        row["scan"] = {"s": median(times), "ok": bool((res.to_numpy() == want).all())}
        out[str(n)] = row
    return {"device": device, "rows": out}


QUADRANTS_SCRIPT = r'''
import json, sys, time
import numpy as np
import quadrants as qd
sizes, reps, D = [int(x) for x in sys.argv[1].split(",")], int(sys.argv[2]), 3
qd.init(arch=qd.vulkan, offline_cache=False)
u32_1d, i32_1d = qd.types.ndarray(qd.u32, ndim=1), qd.types.ndarray(qd.i32, ndim=1)
i32_0d = qd.types.ndarray(qd.i32, ndim=0)

@qd.kernel
def sort_k(keys: u32_1d, tmp: u32_1d, scratch: u32_1d, n: i32_0d):
    qd.algorithms.sort(keys, tmp, keys, tmp, scratch, n, qd.u32, False, 32, D)

@qd.kernel
def scan_k(arr: i32_1d, o: i32_1d, scratch: u32_1d, cnt: i32_1d):
    qd.algorithms.exclusive_scan_add(arr, o, scratch, cnt[0], qd.i32, D)

def timed(run, reps):
    run(); qd.sync()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); run(); qd.sync(); ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]

def why(exc):
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"[:160]

rng, out = np.random.default_rng(0), {}
for n in sizes:
    row = {}
    try:
        keys, tmp = qd.ndarray(qd.u32, shape=(n,)), qd.ndarray(qd.u32, shape=(n,))
        sc = qd.ndarray(qd.u32, shape=(qd.algorithms.sort_scratch_slots(n, D),))
        nn = qd.ndarray(qd.i32, shape=()); nn.fill(n)
        data = rng.integers(0, 2**32, n, dtype=np.uint32)
        def run():
            keys.from_numpy(data); sort_k(keys, tmp, sc, nn)
        s = timed(run, reps)
        row["sort"] = {"s": s, "ok": bool((keys.to_numpy() == np.sort(data)).all())}
    except Exception as exc:
        row["sort"] = {"error": why(exc)}
    try:
        arr, o = qd.ndarray(qd.i32, shape=(n,)), qd.ndarray(qd.i32, shape=(n,))
        sc = qd.ndarray(qd.u32, shape=(qd.algorithms.exclusive_scan_scratch_slots(n, D),))
        cnt = qd.ndarray(qd.i32, shape=(1,)); cnt.fill(n)
        data = rng.integers(-100, 100, n).astype(np.int32); arr.from_numpy(data)
        s = timed(lambda: scan_k(arr, o, sc, cnt), reps)
        ok = bool((o.to_numpy() == np.concatenate([[0], np.cumsum(data)[:-1]]).astype(np.int32)).all())
        row["scan"] = {"s": s, "ok": ok}
    except Exception as exc:
        row["scan"] = {"error": why(exc)}
    out[str(n)] = row
print("JSON" + json.dumps(out))
'''


def quadrants(sizes: list[int], reps: int) -> dict:
    python = quadrants_python()
    if not os.access(python, os.X_OK):
        return {"error": f"Quadrants not found ({python}); run python bench/quadrants_venv.py, or set "
                         "QD_QUADRANTS_PYTHON"}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "quadrants_algorithms.py"
        script.write_text(QUADRANTS_SCRIPT)
        p = subprocess.run([python, str(script), ",".join(map(str, sizes)), str(reps)], capture_output=True,
                           text=True, cwd=tmp, timeout=1800)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("JSON")), None)
    if line is None:
        return {"error": (p.stderr or p.stdout).strip()[-300:]}
    return {"rows": json.loads(line[4:])}


def rate(cell: dict | None, n: int) -> str:
    if not cell:
        return "n/a"
    if "error" in cell:
        return "refused"
    text = f"{n / cell['s'] / 1e6:.1f}"
    return text if cell["ok"] else text + " (WRONG)"


# ---------------------------------------------------------------------------- SASS

SORT_PHASES = ["clear counts and tickets", "digit counts of every pass (one read)", "digit starts",
               "onesweep pass 1 (rank, look-back, scatter)"]
SCAN_PHASES = ["tile reduce", "tile reduce", "one tile", "add prefix (+ tile scan)", "add prefix (+ tile scan)"]


def sass_counts(kernel, arg_types: dict) -> dict[str, int] | str:
    """Instructions (NOPs left out) of every entry point of ``kernel``'s CUDA text on sm_90."""
    from transpiler.toolchains.nvrtc import compile_cuda

    tool = cuda_tool("cuobjdump")
    if tool is None:
        return "no cuobjdump (pip install nvidia-cuda-cuobjdump)"
    tr = qd.translate(kernel, "cuda", arg_types=arg_types)
    (name, source), = tr.sources.items()
    res = compile_cuda(source, name, "sm_90", True, tuple(tr.manifest["requirements"]["nvrtc_options"]))
    if not res.ok:
        return f"NVRTC: {res.log[-200:]}"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(res.cubin)
        f.flush()
        text = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True).stdout
    counts: dict[str, int] = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            current = m.group(1)
            counts[current] = 0
        elif current and re.match(r"\s*/\*[0-9a-f]{4}\*/\s+\S", line) and " NOP" not in line:
            counts[current] += 1
    # cuobjdump lists the entry points last first: launch order is the name's number
    return dict(sorted(counts.items(), key=lambda kv: int(re.search(r"(\d+)$", kv[0]).group(1))))


def cub_counts() -> dict[str, int]:
    kit = perf_kit()
    path = kit / "sass_tables_sm90.txt" if kit else None
    out = {}
    if path and path.is_file():
        for line in path.read_text().splitlines():
            parts = line.split()
            if parts and parts[0] in ("DeviceRadixSortOnesweepKernel", "DeviceRadixSortHistogramKernel",
                                      "DeviceScanKernel"):
                out[parts[0]] = int(parts[4])  # kernel regs smem spill SASS ...
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    mine = ours(sizes, args.reps)
    theirs = quadrants(sizes, args.reps)
    rows = []
    for n in sizes:
        for op in ("sort", "scan"):
            q = theirs.get("rows", {}).get(str(n), {}).get(op) if "rows" in theirs else {"error": theirs["error"]}
            rows.append([f"{'sort u32 keys' if op == 'sort' else 'exclusive_scan_add i32'}", n,
                         rate(mine["rows"][str(n)][op], n), rate(q, n)])
    say(table(f"Throughput on Vulkan ({mine['device']}), million elements/s, median of {args.reps}",
              ["op", "n", "transpiler", "Quadrants 1.3.3"], rows,
              note="ours: a kernel call (launches + its ndarrays' host copies); Quadrants: the kernel call and "
                   "qd.sync() (sort: also keys.from_numpy, to restore the input).\n"
                   + "".join(f"Quadrants {op}: {cell['error']}\n" for op, cell in
                             (theirs.get("rows", {}).get(str(sizes[0]), {}).items()) if "error" in cell)
                   + (f"Quadrants: {theirs['error']}\n" if "error" in theirs else "")))
    sort_sass = sass_counts(sort_keys, {})
    scan_sass = sass_counts(scan_i32, {})
    cub = cub_counts()
    rows = []
    if isinstance(sort_sass, dict):
        entries = list(sort_sass.items())
        for k, phase in enumerate(SORT_PHASES):
            rows.append([f"ours sort: {phase}", entries[k][0], entries[k][1]])
        rows.append(["ours sort: all entry points", f"{len(entries)} launches", sum(v for _, v in entries)])
    else:
        rows.append(["ours sort", "", sort_sass])
    if isinstance(scan_sass, dict):
        for (name, v), phase in zip(scan_sass.items(), SCAN_PHASES):
            rows.append([f"ours scan: {phase}", name, v])
    else:
        rows.append(["ours scan", "", scan_sass])
    for name, v in cub.items():
        rows.append([f"CUB {name}", "(reference kit)", v])
    say(table("SASS instructions, sm_90 (NOPs left out)", ["kernel", "entry point", "SASS"], rows,
              note="Both are onesweep: one histogram of every digit up front, then one launch per 8-bit digit "
                   "(ranking, decoupled look-back, scatter); ours adds a clear and a digit-start launch (7 launches "
                   "for u32 keys). CUB ranks 20 keys per thread, ours 16."))


if __name__ == "__main__":
    main()

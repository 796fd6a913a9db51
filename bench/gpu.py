"""Section 4: throughput on an NVIDIA GPU, through CuPy and qd.init(arch="cuda").

For N = 2^24 .. 2^28 elements:
- look-back scan (examples/lookback_scan.py, i32 inclusive prefix sum) vs cupy.cumsum;
- block-reduce sum (examples/last_block_reduce.py, f32, one launch) vs cupy.sum;
- one radix sort step (rank 256 u32 keys per block by an 8-bit digit with
  qd.simt.block.radix_rank_match_atomic_or and scatter them inside the block);
- qd.algorithms.sort (device-wide onesweep radix sort, u32 keys) vs cupy.sort (CUB's radix
  sort), both timed with a copy of the unsorted keys first (cupy.sort copies its input);
- qd.algorithms.exclusive_scan_add (i32) vs cupy.cumsum;
- a device-to-device copy of the same bytes, the bandwidth ceiling (the decoupled look-back
  paper's claim is that a scan approaches copy throughput; reference/perf.md section 3).

Each kernel is first checked against NumPy through the runtime (qd.init(arch="cuda"), numpy
arrays in and out, at N = 2^20). The timed launches use the program the runtime compiled,
with CuPy arrays already on the device and CUDA events around `repeat` back-to-back runs, so
host copies are not in the figure. GB/s counts the bytes a kernel must move: the scan and the
sort step read and write 4 B per element, the reduce reads 4 B, the copy reads and writes.

    python bench/gpu.py [--sizes 24,26,28] [--repeat 20] [--check-only] [--cpu-check]

--cpu-check runs the correctness checks on the CPU emulator (qd.init(arch="cpu")) at a small
N instead, which works on any machine.
"""
from __future__ import annotations

import argparse
import sys
from types import SimpleNamespace

import numpy as np

from common import ROOT, say, table

import transpiler as qd  # noqa: E402
from transpiler.cli import load_kernels  # noqa: E402

RADIX_BLOCK = 256
ALG_D = 4  # log256_max_n of qd.algorithms: up to 2^32 elements
u32v = qd.types.ndarray(dtype=qd.u32, ndim=1)
i32v = qd.types.ndarray(dtype=qd.i32, ndim=1)


@qd.kernel
def radix_step(keys: u32v, out: u32v, bit: qd.i32):
    """One digit pass of a block-local radix sort: every key lands at its stable rank by
    the 8-bit digit at ``bit`` within its block of 256."""
    qd.loop_config(block_dim=RADIX_BLOCK)
    for i in range(keys.shape[0]):
        bins = qd.simt.block.SharedArray((256,), qd.i32)
        excl = qd.simt.block.SharedArray((256,), qd.i32)
        key = keys[i]
        rank = qd.simt.block.radix_rank_match_atomic_or(key, RADIX_BLOCK, 8, bit, 8, bins, excl)
        out[(i // RADIX_BLOCK) * RADIX_BLOCK + rank] = key


@qd.kernel
def device_sort(keys: u32v, tmp: u32v, scratch: u32v, n: qd.types.ndarray(dtype=qd.i32, ndim=0)):
    qd.algorithms.sort(keys, tmp, keys, tmp, scratch, n, qd.u32, False, 32, ALG_D)


@qd.kernel
def device_scan(arr: i32v, out: i32v, scratch: u32v, count: i32v):
    qd.algorithms.exclusive_scan_add(arr, out, scratch, count[0], qd.i32, ALG_D)


def gpu_available() -> tuple[bool, str]:
    try:
        import cupy
    except ImportError:
        return False, "CuPy is not installed (pip install cupy-cuda13x on a machine with an NVIDIA GPU)"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - CuPy raises driver errors of several types
        return False, f"no usable CUDA driver ({type(exc).__name__}: {str(exc)[:80]})"
    if count == 0:
        return False, "no CUDA device"
    return True, cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()


def examples():
    scan, _ = load_kernels(str(ROOT / "examples" / "lookback_scan.py"))
    red, _ = load_kernels(str(ROOT / "examples" / "last_block_reduce.py"))
    scan_mod = sys.modules["_qd_user_lookback_scan"]
    return scan["prefix_sum"], scan_mod.TILE, red["sum_last_block"]


# --------------------------------------------------------------------------- workloads
# Each: name -> (kernel, arrays(n, xp) -> dict of arguments, bytes moved(n), check(args, n))

def scan_args(n: int, xp, tile: int):
    tiles = -(-n // tile)
    x = xp.asarray(np.random.default_rng(1).integers(-50, 50, n, dtype=np.int32))
    z = lambda k: xp.zeros(k, dtype=np.int32)  # noqa: E731
    return {"x": x, "y": z(n), "flags": z(tiles), "aggregates": z(tiles), "prefixes": z(tiles), "tile_counter": z(1)}


def reduce_args(n: int, xp, tiles: int = 2048):
    x = xp.asarray(np.random.default_rng(2).random(n, dtype=np.float32))
    return {"x": x, "partials": xp.zeros(tiles, np.float32), "counter": xp.zeros(1, np.int32),
            "out": xp.zeros(1, np.float32)}


def radix_args(n: int, xp):
    keys = xp.asarray(np.random.default_rng(3).integers(0, 2**32, n, dtype=np.uint32))
    return {"keys": keys, "out": xp.zeros(n, np.uint32), "bit": np.int32(0)}


def radix_expected(keys: np.ndarray) -> np.ndarray:
    blocks = keys.reshape(-1, RADIX_BLOCK)
    order = np.argsort(blocks & 0xFF, axis=1, kind="stable")
    return np.take_along_axis(blocks, order, axis=1).reshape(-1)


def sort_args(n: int, xp):
    keys = xp.asarray(np.random.default_rng(4).integers(0, 2**32, n, dtype=np.uint32))
    return {"keys": keys, "tmp": xp.zeros(n, np.uint32),
            "scratch": xp.zeros(qd.algorithms.sort_scratch_slots(n, ALG_D), np.uint32),
            "n": xp.asarray(np.array(n, dtype=np.int32))}


def device_scan_args(n: int, xp):
    arr = xp.asarray(np.random.default_rng(5).integers(-100, 100, n, dtype=np.int32))
    return {"arr": arr, "out": xp.zeros(n, np.int32),
            "scratch": xp.zeros(qd.algorithms.exclusive_scan_scratch_slots(n, ALG_D), np.uint32),
            "count": xp.asarray(np.array([n], dtype=np.int32))}


def check(n: int) -> list[tuple[str, bool, str]]:
    """Run each kernel through the runtime on numpy arrays and compare with NumPy."""
    prefix_sum, tile, sum_last_block = examples()
    out = []
    a = scan_args(n, np, tile)
    prefix_sum(**a)
    out.append(("look-back scan", bool(np.array_equal(a["y"], np.cumsum(a["x"], dtype=np.int32))), ""))
    a = reduce_args(n, np, tiles=64)
    sum_last_block(**a)
    want = float(np.sum(a["x"], dtype=np.float64))
    out.append(("block-reduce sum", abs(float(a["out"][0]) - want) <= 1e-4 * abs(want), f"{a['out'][0]} vs {want}"))
    a = radix_args(n, np)
    radix_step(**a)
    out.append(("radix sort step", bool(np.array_equal(a["out"], radix_expected(a["keys"]))), ""))
    a = sort_args(n, np)
    want = np.sort(a["keys"])
    device_sort(**a)
    out.append(("device-wide sort", bool(np.array_equal(a["keys"], want)), ""))
    a = device_scan_args(n, np)
    device_scan(**a)
    want = (np.cumsum(a["arr"], dtype=np.int32) - a["arr"]).astype(np.int32)
    out.append(("device-wide exclusive scan", bool(np.array_equal(a["out"], want)), ""))
    return out


class Timer:
    """A kernel's program as the CUDA backend loads it, launched on device arrays."""

    def __init__(self, kernel):
        from transpiler.runtime import current, plan_launches

        self.backend = current()
        tr = qd.translate(kernel, "cuda", **self.backend.translate_options())
        self.kir = tr.ir
        self.functions = self.backend.load(tr).functions
        self.plan_launches = plan_launches

    def launcher(self, values: dict):
        from transpiler.runtime import hidden_values

        cp = self.backend.cupy
        values = {**values, **hidden_values(self.kir, cp.zeros)}
        scalars = {p.name: p.type.np_dtype.type(values[p.name]) for p in self.kir.params if not p.is_array}
        # The launch plan reads only the arrays' shapes and the scalars' values.
        host = {**{k: SimpleNamespace(shape=v.shape) for k, v in values.items() if isinstance(v, cp.ndarray)},
                **scalars}
        launches = self.plan_launches(self.kir, host)
        args = []
        for p in self.kir.params:
            if p.is_array:
                args.append(values[p.name])
                args.extend(np.int32(s) for s in values[p.name].shape[:p.type.passed_extents])
            else:
                args.append(scalars[p.name])
        calls = [(self.functions[l.task.name], (l.blocks,), (l.task.block_dim if l.task.kind == "parallel" else 1,))
                 for l in launches if l.blocks]

        def run():
            for fn, grid, block in calls:
                fn(grid, block, tuple(args))
        return run


def device_time(cp, fn, repeat: int) -> float:
    """Seconds per call: one warm-up, then ``repeat`` calls between two events."""
    fn()
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeat):
        fn()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 1e3 / repeat


def _copy_gbs(cp, n: int, repeat: int) -> tuple[float, float]:
    src, dst = cp.arange(n, dtype=cp.int32), cp.empty(n, dtype=cp.int32)
    t = device_time(cp, lambda: dst.data.copy_from_device(src.data, 4 * n), repeat)
    return t, 8 * n / t / 1e9


def _scan(cp, timer, tile: int, n: int, repeat: int) -> dict:
    a = scan_args(n, cp, tile)
    ours = device_time(cp, timer.launcher(a), repeat)
    ok = bool(cp.array_equal(a["y"], cp.cumsum(a["x"], dtype=cp.int32)))
    lib = device_time(cp, lambda: cp.cumsum(a["x"], dtype=cp.int32), repeat)
    return {"workload": "look-back scan", "bytes": 8 * n, "ours_s": ours, "lib": "cupy.cumsum", "lib_s": lib,
            "correct": ok}


def _reduce(cp, timer, n: int, repeat: int) -> dict:
    a = reduce_args(n, cp)
    ours = device_time(cp, timer.launcher(a), repeat)
    lib = device_time(cp, lambda: cp.sum(a["x"]), repeat)
    return {"workload": "block-reduce sum", "bytes": 4 * n, "ours_s": ours, "lib": "cupy.sum", "lib_s": lib,
            "correct": None}


def _radix(cp, timer, n: int, repeat: int) -> dict:
    a = radix_args(n, cp)
    ours = device_time(cp, timer.launcher(a), repeat)
    return {"workload": "radix sort step", "bytes": 8 * n, "ours_s": ours, "lib": "", "lib_s": None, "correct": None}


def _sort(cp, timer, n: int, repeat: int) -> dict:
    a = sort_args(n, cp)
    unsorted = a["keys"].copy()
    launch = timer.launcher(a)

    def ours():
        a["keys"][...] = unsorted
        launch()
    t = device_time(cp, ours, repeat)
    ok = bool(cp.array_equal(a["keys"], cp.sort(unsorted)))
    lib = device_time(cp, lambda: cp.sort(unsorted), repeat)
    return {"workload": "device-wide sort", "bytes": 8 * n, "ours_s": t, "lib": "cupy.sort", "lib_s": lib,
            "correct": ok}


def _device_scan(cp, timer, n: int, repeat: int) -> dict:
    a = device_scan_args(n, cp)
    t = device_time(cp, timer.launcher(a), repeat)
    ok = bool(cp.array_equal(a["out"], cp.cumsum(a["arr"], dtype=cp.int32) - a["arr"]))
    lib = device_time(cp, lambda: cp.cumsum(a["arr"], dtype=cp.int32), repeat)
    return {"workload": "device-wide scan", "bytes": 8 * n, "ours_s": t, "lib": "cupy.cumsum", "lib_s": lib,
            "correct": ok}


def measure(sizes: list[int], repeat: int) -> list[dict]:
    import cupy as cp

    prefix_sum, tile, sum_last_block = examples()
    timers = {"scan": Timer(prefix_sum), "reduce": Timer(sum_last_block), "radix": Timer(radix_step),
              "sort": Timer(device_sort), "device_scan": Timer(device_scan)}
    rows = []
    for e in sizes:
        n = 1 << e
        copy, copy_gbs = _copy_gbs(cp, n, repeat)
        for row in (_scan(cp, timers["scan"], tile, n, repeat), _reduce(cp, timers["reduce"], n, repeat),
                    _radix(cp, timers["radix"], n, repeat), _sort(cp, timers["sort"], n, repeat),
                    _device_scan(cp, timers["device_scan"], n, repeat)):
            rows.append({**row, "log2n": e, "copy_s": copy, "copy_gbs": copy_gbs})
            cp.get_default_memory_pool().free_all_blocks()
    return rows


def run(args, report: dict) -> None:
    say("\n=== 4. GPU throughput " + "=" * 65)
    ok, why = gpu_available()
    if not ok:
        say(f"skipped: {why}. Where CuPy and an NVIDIA GPU exist: `python bench/gpu.py` (or make bench) "
            "times the look-back scan, the block-reduce sum and a radix sort step at N = 2^24..2^28 against "
            "cupy.cumsum / cupy.sum and a device-to-device copy.")
        report["gpu"] = {"skipped": why}
        return
    report["gpu"] = main_gpu(args.gpu_sizes, args.gpu_repeat, device=why)


def main_gpu(sizes: list[int], repeat: int, device: str) -> dict:
    qd.init(arch="cuda")
    say(f"device: {device}")
    checks = check(1 << 20)
    for name, good, detail in checks:
        say(f"  check {name} (N = 2^20, through qd.init(arch='cuda')): {'ok' if good else 'WRONG ' + detail}")
    rows = measure(sizes, repeat)
    cells = []
    for r in rows:
        gbs = r["bytes"] / r["ours_s"] / 1e9
        lib_gbs = r["bytes"] / r["lib_s"] / 1e9 if r["lib_s"] else None
        cells.append([r["workload"], f"2^{r['log2n']}", f"{r['ours_s'] * 1e3:.3f}", f"{gbs:.0f}",
                      f"{gbs / r['copy_gbs']:.0%}", r["lib"] or "-", f"{r['lib_s'] * 1e3:.3f}" if r["lib_s"] else "-",
                      f"{lib_gbs:.0f}" if lib_gbs else "-", f"{r['copy_gbs']:.0f}",
                      {True: "ok", False: "WRONG", None: ""}[r["correct"]]])
    say(table(f"GPU throughput (mean of {repeat} back-to-back launches); goal: scan > 85 % of copy "
              "bandwidth, at least parity with CUB (cupy.cumsum)",
              ["workload", "N", "ours ms", "ours GB/s", "of copy", "library", "lib ms", "lib GB/s", "copy GB/s",
               "result"], cells))
    return {"device": device, "checks": checks, "rows": rows}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="24,26,28")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--check-only", action="store_true", help="only the correctness checks (on the GPU)")
    p.add_argument("--cpu-check", action="store_true", help="the correctness checks on the CPU emulator, small N")
    a = p.parse_args()
    if a.cpu_check:
        qd.init(arch="cpu")
        for name, good, detail in check(1 << 12):
            say(f"check {name} (N = 2^12, CPU emulator): {'ok' if good else 'WRONG ' + detail}")
        return
    ok, why = gpu_available()
    if not ok:
        say(f"skipped: {why}")
        return
    if a.check_only:
        qd.init(arch="cuda")
        for name, good, detail in check(1 << 20):
            say(f"check {name}: {'ok' if good else 'WRONG ' + detail}")
        return
    main_gpu([int(s) for s in a.sizes.split(",")], a.repeat, why)


if __name__ == "__main__":
    main()

"""Section 3, device-wide reduce and scan: SASS per element of ours against CUB's
DeviceReduce::Sum and DeviceScan::InclusiveSum kernels (bench/refs_cuda/cub_device.cu),
both compiled by the pip nvcc + ptxas for sm_90 (bench/sass_loops.py).

- Reduce: the hot loop (what a device-wide reduce runs per tile on aligned data): its
  instructions, global and shared memory instructions per element, registers, spills.
- Scan: a single-pass scan has no such loop (a block scans one tile), so the whole kernel's
  instructions per item a thread handles; CUB's kernel, like our look-back example, holds a
  full-tile and a last-tile copy of the tile code.

Goal (issue 47): within 1.1x of CUB per element (RATIO_GOAL).
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

from common import BENCH, say, table
from sass_loops import classes, compile_sass, find, hot_loop

import transpiler as qd
from transpiler.lang.algorithms.common import ITEMS as LIB_SCAN_ITEMS

D = 3
F32, I32, U32 = (qd.types.ndarray(t, 1) for t in (qd.f32, qd.i32, qd.u32))
RATIO_GOAL = 1.1
CUB_SCAN_ITEMS = 24   # cub/device/dispatch/tuning/tuning_scan.cuh: sm90, 4-byte primitive sum: 128 threads, 24 items


@qd.kernel
def reduce_f32(arr: F32, out: F32, scratch: U32, count: I32):
    qd.algorithms.reduce_add(arr, out, scratch, count[0], qd.f32, D)


@qd.kernel
def reduce_i32(arr: I32, out: I32, scratch: U32, count: I32):
    qd.algorithms.reduce_add(arr, out, scratch, count[0], qd.i32, D)


@qd.kernel
def scan_i32(arr: I32, out: I32, scratch: U32, count: I32):
    qd.algorithms.exclusive_scan_add(arr, out, scratch, count[0], qd.i32, D)


@functools.lru_cache(maxsize=1)
def _cub() -> dict[str, dict] | str:
    return compile_sass(BENCH / "refs_cuda" / "cub_device.cu")


def _ours(kernel, workdir: Path) -> dict[str, dict] | str:
    tr = qd.translate(kernel, "cuda", warn=False)
    ((name, text),) = tr.sources.items()
    path = workdir / name
    path.write_text(text)
    return compile_sass(path)


def _example(name: str, kernel: str, workdir: Path):
    from transpiler.cli import load_kernels

    kernels, _ = load_kernels(str(BENCH.parent / "examples" / f"{name}.py"))
    text = (BENCH.parent / "examples" / f"{name}.py").read_text()
    consts = {k: int(v) for k, v in re.findall(r"^(BLOCK|ITEMS) = (\d+)$", text, flags=re.M)}
    return kernels[kernel], consts


def _per(value: int, per: float) -> str:
    return f"{value / per:.2f}"


def _loop_row(label: str, k: dict, elem_bytes: int, ref: float | None) -> tuple[list, float | None]:
    loop = hot_loop(k["insts"])
    if loop is None:
        return [label, k.get("regs"), k.get("spill"), "no loop", "", "", "", "", ""], None
    elems = loop["load_bytes"] / elem_bytes
    ipe = loop["insts"] / elems
    ratio = f"{ipe / ref:.2f}x" if ref else ""
    return [label, k.get("regs"), k.get("spill"), loop["insts"], f"{elems:g}", f"{ipe:.2f}",
            _per(loop["global"], elems), _per(loop["shared"], elems), ratio], ipe


def reduce_rows(workdir: Path) -> list[list]:
    cub = _cub()
    if isinstance(cub, str):
        return [["CUB reference did not build", cub[-200:]]]
    rows = []
    for dtype, kernel, tag in (("f32", reduce_f32, "If"), ("i32", reduce_i32, "Ii")):
        ref = find(cub, "DeviceReduceKernel", f"policy_selector_from_types{tag}")
        ours = _ours(kernel, workdir)
        if ref is None or isinstance(ours, str):
            rows.append([f"reduce_add {dtype}", "failed", ours if isinstance(ours, str) else "no CUB kernel"])
            continue
        ref_row, ref_ipe = _loop_row(f"  CUB DeviceReduceKernel {dtype}", ref[1], 4, None)
        name, main = next(iter(sorted(ours.items())))  # entry 0: the tiles; entry 1 folds <= 1024 partials
        row, _ = _loop_row(f"ours reduce_add {dtype} ({name})", main, 4, ref_ipe)
        rows += [row, ref_row]
    return rows


def _kernel_row(label: str, k: dict, items: float, ref: float | None) -> tuple[list, float]:
    c = classes(k["insts"])
    per = c["insts"] / items
    return [label, k.get("regs"), k.get("spill"), f"{items:g}", c["insts"], f"{per:.1f}",
            _per(c["global"], items), _per(c["shared"], items), f"{per / ref:.2f}x" if ref else ""], per


def cub_scan() -> tuple[list, float] | str:
    """CUB's DeviceScanKernel row and its SASS per item (or why it did not build)."""
    cub = _cub()
    if isinstance(cub, str):
        return "CUB reference did not build: " + cub[-200:]
    ref = find(cub, "DeviceScanKernel", "NullType")
    return _kernel_row("  CUB DeviceScanKernel i32 inclusive", ref[1], CUB_SCAN_ITEMS, None)


def library_scan(workdir: Path, ref_per: float) -> tuple[list, dict] | str:
    """Our exclusive_scan_add row and its measures: of its two launches (one clears the
    look-back flags) the one that scans, LIB_SCAN_ITEMS elements a thread."""
    lib = _ours(scan_i32, workdir)
    if isinstance(lib, str):
        return lib
    name, main = max(lib.items(), key=lambda kv: len(kv[1]["insts"]))
    row, per = _kernel_row(f"ours qd.algorithms.exclusive_scan_add i32 ({name})", main, LIB_SCAN_ITEMS, ref_per)
    return row, {"per_item": per, "ratio": per / ref_per, "regs": main.get("regs"), "spill": main.get("spill"),
                 "local": sum(bool(re.search(r"\b(LDL|STL)\b", t)) for _, t in main["insts"])}


def scan_rows(workdir: Path) -> list[list]:
    ref = cub_scan()
    if isinstance(ref, str):
        return [[ref]]
    ref_row, ref_per = ref
    rows = []
    kernel, consts = _example("lookback_scan", "prefix_sum", workdir)
    ours = _ours(kernel, workdir)
    if isinstance(ours, str):
        rows.append(["look-back example", "failed", ours])
    else:
        name, main = max(ours.items(), key=lambda kv: len(kv[1]["insts"]))
        rows.append(_kernel_row(f"ours examples/lookback_scan.py ({name}, BLOCK={consts.get('BLOCK')})", main,
                                consts.get("ITEMS", 1), ref_per)[0])
    lib = library_scan(workdir, ref_per)
    rows.append(["qd.algorithms.exclusive_scan_add", "failed", lib] if isinstance(lib, str) else lib[0])
    return rows + [ref_row]


def run(report: dict, workdir: Path) -> None:
    rrows = reduce_rows(workdir)
    say(table("Device-wide reduce, sm_90 SASS of the hot loop per element (ours vs CUB DeviceReduce::Sum)",
              ["kernel", "regs", "spill B", "loop insts", "elems/iter", "insts/elem", "global/elem",
               "shared/elem", "vs CUB"], rrows,
              note="  the loop loading the most bytes per instruction: on CUDA the 16-byte vector loop, taken when "
                   "the array is 16-byte aligned"))
    srows = scan_rows(workdir)
    say(table("Device-wide scan, sm_90 SASS per item (whole kernel / items per thread; ours vs CUB DeviceScan)",
              ["kernel", "regs", "spill B", "items/thr", "SASS", "SASS/item", "global/item", "shared/item",
               "vs CUB"], srows,
              note=f"  CUB: {CUB_SCAN_ITEMS} items per thread (its sm_90 tuning); both hold a full-tile and a "
                   "last-tile copy of the tile code"))
    report["device_algorithms"] = {"reduce": rrows, "scan": srows}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        run({}, Path(tmp))

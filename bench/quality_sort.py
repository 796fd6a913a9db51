"""Section 3, sort rows: sm_90 SASS per key of our onesweep pass against CUB's.

Both sides go through the pip wheels' compilers for sm_90: ours is the CUDA text of a u32
keys-only `qd.algorithms.sort`, compiled by NVRTC as the runtime would; CUB's is the
DeviceRadixSortOnesweepKernel that `cub::DeviceRadixSort::SortKeys<u32>` instantiates
(reference/perf/ref/d_block_radix_rank.cu), compiled by nvcc. sass_stats.py reads both.

Per key: a thread runs the pass's code once for its keys (the loops over them are
unrolled on both sides, the look-back loop aside), so the instructions one thread runs
per key are about the static count divided by the keys a thread ranks; the block's width
cancels out. The same for the shared-memory and global-memory instructions.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from common import cuda_tool, perf_kit, say, table

import transpiler as qd  # noqa: E402
from transpiler.lang.algorithms import radix_sort  # noqa: E402

# cub/device/dispatch/tuning/tuning_radix_sort.cuh, Policy900 (OnesweepPolicyKey32): u32
# keys only, 32-bit offsets: 384 threads x 20 keys (one ATOMS.ADD and one
# ATOMS.POPC.INC a key in its SASS, 20 of each, which sort_rows checks).
CUB_KEYS_PER_THREAD = 20
CUB_KERNEL = "DeviceRadixSortOnesweepKernel"
RATIO_GOAL = 1.2

U32 = qd.types.ndarray(qd.u32, 1)


@qd.kernel
def sort_u32_keys(keys: U32, tmp: U32, scratch: U32, n: qd.types.ndarray(qd.i32, 0)):
    qd.algorithms.sort(keys, tmp, keys, tmp, scratch, n, qd.u32, False, 32, 3)


def _stats(kit: Path, path: Path) -> list[dict] | str:
    from quality import sass_stats

    return sass_stats(kit, path)


def ours(kit: Path, workdir: Path) -> dict | str:
    """sass_stats of our onesweep pass (the largest entry point of the sort: the first pass)."""
    from transpiler.toolchains.nvrtc import compile_cuda

    tr = qd.translate(sort_u32_keys, "cuda", warn=False)
    ((name, source),) = tr.sources.items()
    res = compile_cuda(source, name, "sm_90", True, tuple(tr.manifest["requirements"]["nvrtc_options"]))
    if not res.ok:
        return f"NVRTC: {res.log[-300:]}"
    cubin = workdir / "sort_u32_keys.sm_90.cubin"
    cubin.write_bytes(res.cubin)
    rows = _stats(kit, cubin)
    return rows if isinstance(rows, str) else max(rows, key=lambda r: r["sass_body"])


def cub(kit: Path) -> dict | str:
    rows = _stats(kit, kit / "ref" / "d_block_radix_rank.cu")
    if isinstance(rows, str):
        return rows
    row = next((r for r in rows if CUB_KERNEL in r["kernel"]), None)
    if row is None:
        return f"{CUB_KERNEL} not in the reference's SASS"
    ops = row.get("full_ops", {})
    per_key = {op: ops.get(op) for op in ("ATOMS.ADD", "ATOMS.POPC.INC.32")}
    if any(v != CUB_KEYS_PER_THREAD for v in per_key.values()):
        return f"CUB's tuning changed: {per_key} (expected {CUB_KEYS_PER_THREAD} keys a thread, one of each a key)"
    return row


def _spills(r: dict) -> str:
    st, ld = r.get("spill_store_bytes"), r.get("spill_load_bytes")
    if st is None and ld is None:  # a cubin: ptxas's counts are not at hand, local memory ops are
        return f"{r['classes']['LDL/STL']} LDL/STL"
    return f"{st}/{ld}"


def sort_rows(ours_row: dict, cub_row: dict) -> tuple[list[list], float]:
    """Table rows (ours, CUB, ratio) and the ratio of SASS per key."""
    rows, per = [], {}
    for label, r, items in (("ours: onesweep pass", ours_row, radix_sort.ITEMS),
                            ("CUB: " + CUB_KERNEL, cub_row, CUB_KEYS_PER_THREAD)):
        c = r["classes"]
        per[label] = [r["sass_body"] / items, c["LDS/STS"] / items, c["LDG/STG"] / items]
        rows.append([label, items, r["regs"], r["smem_bytes"], _spills(r), r["sass_body"],
                     *(f"{v:.2f}" for v in per[label])])
    a, b = per.values()
    rows.append(["ours / CUB", "", "", "", "", "", *(f"{x / y:.2f}x" if y else "-" for x, y in zip(a, b))])
    return rows, a[0] / b[0]


def sort_pass(report: dict, workdir: Path) -> None:
    kit = perf_kit()
    if kit is None or not (cuda_tool("nvcc") and cuda_tool("cuobjdump")):
        say("skipped: the sort rows need the perf kit, nvcc and cuobjdump (pip install nvidia-cuda-nvcc "
            "nvidia-cuda-cuobjdump)")
        report["sort_per_key"] = {"skipped": "no perf kit or CUDA tools"}
        return
    mine, theirs = ours(kit, workdir), cub(kit)
    for who, r in (("ours", mine), ("CUB", theirs)):
        if isinstance(r, str):
            say(f"  sort rows: {who}: {r}")
            report["sort_per_key"] = {"error": f"{who}: {r}"}
            return
    rows, ratio = sort_rows(mine, theirs)
    say(table(f"Sort pass, sm_90 SASS per key (u32 keys; goal: ours / CUB <= {RATIO_GOAL}x)",
              ["kernel", "keys/thread", "regs", "smem", "spill", "SASS", "SASS/key", "LDS+STS/key",
               "LDG+STG/key"], rows,
              note="  per key: static instructions / keys a thread ranks (the per-key loops are unrolled on both "
                   "sides); ours by NVRTC, CUB's by nvcc, both the pip wheels' for sm_90"))
    say(f"  sort pass: {ratio:.2f}x CUB's SASS per key ({'within' if ratio <= RATIO_GOAL else 'over'} the "
        f"{RATIO_GOAL}x goal)")
    report["sort_per_key"] = {"ours": mine, "cub": theirs, "ours_items": radix_sort.ITEMS,
                              "cub_items": CUB_KEYS_PER_THREAD, "ratio": ratio, "goal": RATIO_GOAL}
    amd_sort_pass(report, workdir)


# ---------------------------------------------------------------------------- AMDGPU

AMD_ARCHS = (("gfx90a", False), ("gfx1030", True))  # CDNA at wave64, RDNA at wave32


def _isa_counts(co: Path, arch: str) -> dict[str, int]:
    """Instructions of each kernel up to its last s_endpgm (llvm-objdump-19)."""
    text = subprocess.run(["llvm-objdump-19", "-d", f"--mcpu={arch}", str(co)], capture_output=True, text=True).stdout
    ops: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <(\w+)>:", line)
        if m:
            cur = ops.setdefault(m.group(1), [])
        elif cur is not None and (m := re.match(r"^\s+([a-z_0-9]+)\b.*//", line)):
            cur.append(m.group(1))
    return {k: max((i for i, op in enumerate(v) if op == "s_endpgm"), default=len(v) - 1) + 1 for k, v in ops.items()}


def amd_sort_pass(report: dict, workdir: Path) -> None:
    """Our pass through hipcc at both wavefront widths: registers, LDS, spills, instructions
    per key. No AMD rival here (hipCUB is not installed), so no ratio."""
    from quality import _hipcc, amdgpu_notes

    if not all(shutil.which(t) for t in ("hipcc", "llvm-readelf-19", "llvm-objdump-19")):
        say("  sort rows, AMDGPU: skipped (hipcc, llvm-readelf-19, llvm-objdump-19 not all found)")
        return
    rows, out = [], {}
    for arch, wave32 in AMD_ARCHS:
        tr = qd.translate(sort_u32_keys, "hip", warn=False, wave32=wave32)
        ((_, source),) = tr.sources.items()
        src = workdir / f"sort_{arch}.hip"
        src.write_text(source)
        co, err = _hipcc(src, arch)
        if co is None:
            rows.append([f"ours ({arch})", "hipcc failed", *[""] * 6])
            say(f"  {arch}: {err}")
            continue
        notes, insts = amdgpu_notes(co), _isa_counts(co, arch)
        main = max(insts, key=insts.get)
        n = notes.get(main, {})
        spills = f"{n.get('vgpr_spill')}/{n.get('sgpr_spill')}"
        rows.append([f"ours: onesweep pass ({arch}, wave{n.get('wave')})", radix_sort.ITEMS, n.get("vgpr"),
                     n.get("sgpr"), n.get("lds"), n.get("scratch"), spills, insts[main],
                     f"{insts[main] / radix_sort.ITEMS:.2f}"])
        out[arch] = {"kernel": main, "notes": n, "insts": insts[main]}
    say(table("Sort pass, AMDGPU ISA per key (hipcc -O3; no hipCUB here to compare with)",
              ["kernel", "keys/thread", "VGPR", "SGPR", "LDS B", "scratch", "spill v/s", "insts", "insts/key"], rows))
    report["sort_per_key_amdgpu"] = out

"""Section 3: code quality of what we emit, against the reference kernels.

NVIDIA: reference/perf/sass_stats.py, run as it is (``sass_stats.py FILE.cu --json``) on our
emitted .cu and on the reference .cu files, with the pip wheels' nvcc and cuobjdump (13.5)
for both, so the two sides see the same compiler: registers, static shared bytes, spills,
SASS instructions up to the last EXIT and the key instruction classes.

AMDGPU: our .hip (wave64) through hipcc for gfx90a; VGPR / SGPR / LDS / scratch / spills
from the code object's metadata (llvm-readelf-19 --notes) and instruction counts from
llvm-objdump-19. The CUDA references use CUB and PTX and hipCUB is not installed, so the
AMD comparison is against bench/refs_hip/hand_block.hip, the hand block reduce and scans
of reference/perf/ref/common.cuh ported to 64-wide wavefronts.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import BENCH, cuda_tool, perf_kit, say, table

import transpiler as qd  # noqa: E402

CLASSES = ["BAR", "SHFL", "ATOM/RED", "MEMBAR", "LDG/STG", "LDS/STS", "LDL/STL", "MATCH/VOTE", "BRA"]


# ---------------------------------------------------------------------------- NVIDIA

def sass_stats(kit: Path, source: Path, extra: list[str] = ()) -> list[dict] | str:
    """Rows of sass_stats.py --json for every kernel in ``source``, or the failure text."""
    env = dict(os.environ)
    for name, var in (("nvcc", "NVCC"), ("cuobjdump", "CUOBJDUMP")):
        tool = cuda_tool(name)
        if tool:
            env.setdefault(var, tool)
    cmd = [sys.executable, str(kit / "sass_stats.py"), str(source), "--json", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return (p.stderr or p.stdout).strip()[-400:] or f"exit status {p.returncode}"
    return json.loads(p.stdout)


def _row(label: str, r: dict) -> list:
    spill = f"{r.get('spill_store_bytes')}/{r.get('spill_load_bytes')}"
    return [label, r["regs"], r["smem_bytes"], spill, r["sass_body"], *[r["classes"][c] for c in CLASSES]]


def _main_entry(rows: list[dict]) -> dict:
    """Of our entry points (serial setup tasks, init loops, the work), the largest."""
    return max(rows, key=lambda r: r["sass_body"])


def nvidia(args, report: dict, cases: list[dict], workdir: Path) -> None:
    kit = perf_kit()
    if kit is None:
        say("skipped: the performance reference kit (sass_stats.py, ref/*.cu) was not found; set QD_PERF_REFERENCE")
        report["sass"] = {"skipped": "no perf kit"}
        return
    if not (cuda_tool("nvcc") and cuda_tool("cuobjdump")):
        say("skipped: nvcc / cuobjdump not found (pip install nvidia-cuda-nvcc nvidia-cuda-cuobjdump)")
        report["sass"] = {"skipped": "no nvcc/cuobjdump"}
        return
    out_dir = workdir / "sass"
    out_dir.mkdir(exist_ok=True)
    jobs = {}
    for case in cases:
        tr = qd.translate(case["ours"], "cuda", warn=False)
        ((name, text),) = tr.sources.items()
        path = out_dir / name
        path.write_text(text)
        jobs[("ours", case["name"])] = path
    for ref in sorted({c["ref"] for c in cases}):
        jobs[("ref", ref)] = kit / "ref" / ref
    control = BENCH / "refs_cuda" / "gridstride_controls.cu"
    jobs[("control", "")] = control
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        extra = {("control", ""): [f"--nvcc-flag=-I{kit / 'ref'}"]}
        futures = {key: pool.submit(sass_stats, kit, path, extra.get(key, [])) for key, path in jobs.items()}
        results = {key: f.result() for key, f in futures.items()}
    sec = {"nvcc": cuda_tool("nvcc"), "rows": []}
    rows = []
    verdicts = []
    controls = results[("control", "")]
    for case in cases:
        ours = results[("ours", case["name"])]
        refs = results[("ref", case["ref"])]
        if isinstance(ours, str) or isinstance(refs, str):
            say(f"  {case['name']}: sass_stats failed: {ours if isinstance(ours, str) else refs}")
            continue
        by_name = {r["kernel"]: r for r in refs}
        main = _main_entry(ours)
        refs_used = {"hand": [by_name[k] for k in case["hand"] if k in by_name],
                     "cub": [by_name[k] for k in case["cub"] if k in by_name]}
        # The best reference doing the work (an init kernel that only clears flags is no rival).
        best = min((r for v in refs_used.values() for r in v if not r["kernel"].endswith("_init")),
                   key=lambda r: r["sass_body"])
        delta = main["sass_body"] - best["sass_body"]
        spills = (main.get("spill_store_bytes") or 0) + (main.get("spill_load_bytes") or 0)
        verdict = ("ok" if delta <= 0 else f"+{delta} vs {best['short']}") + ("" if spills == 0 else ", SPILLS")
        rows.append(_row(f"{case['name']}: ours ({main['kernel']})", main) + [verdict])
        for kind in ("hand", "cub"):
            for r in refs_used[kind]:
                rows.append(_row(f"  {kind}: {r['kernel']}", r) + [""])
        ctl = [r for r in (controls if isinstance(controls, list) else []) if r["kernel"] in case.get("controls", [])]
        for r in ctl:
            rows.append(_row(f"  control: {r['kernel']}", r) + [""])
        verdicts.append((case["name"], main["sass_body"], best["sass_body"], best["short"], spills))
        sec["rows"].append({"algorithm": case["name"], "ours": ours, "ours_main": main["kernel"],
                            "refs": refs_used, "controls": ctl, "best_ref": best["kernel"],
                            "sass_delta_vs_best": delta, "note": case.get("note")})
    if isinstance(controls, str):
        say(f"  grid-stride controls failed: {controls}")
    say(table("sm_90 SASS (sass_stats.py): ours vs the references; "
              "goal: no more SASS than the best reference, no spills",
              ["kernel", "regs", "smem", "spill", "SASS", *CLASSES, "vs best"], rows,
              note="  control: the hand reference in the same grid-stride task loop our entry points run "
                   "(bench/refs_cuda/gridstride_controls.cu)"))
    for case in cases:
        if case.get("note"):
            say(f"  {case['name']}: {case['note']}")
    report["sass"] = sec


# ---------------------------------------------------------------------------- AMDGPU

def _hipcc(src: Path, arch: str = "gfx90a") -> tuple[Path | None, str]:
    hipcc = shutil.which("hipcc")
    co = src.with_suffix(f".{arch}.co")
    p = subprocess.run([hipcc, f"--offload-arch={arch}", "--cuda-device-only", "--no-gpu-bundle-output", "-c", "-O3",
                        src.name, "-o", co.name], cwd=src.parent, capture_output=True, text=True,
                       env={**os.environ, "HIP_PLATFORM": "amd"})
    if p.returncode != 0:
        return None, (p.stderr or p.stdout).strip()[-300:]
    return co, ""


NOTE_KEYS = {"vgpr_count": "vgpr", "sgpr_count": "sgpr", "agpr_count": "agpr", "group_segment_fixed_size": "lds",
             "private_segment_fixed_size": "scratch", "vgpr_spill_count": "vgpr_spill",
             "sgpr_spill_count": "sgpr_spill", "wavefront_size": "wave"}


def amdgpu_notes(co: Path) -> dict[str, dict]:
    readelf = shutil.which("llvm-readelf-19") or shutil.which("llvm-readelf")
    text = subprocess.run([readelf, "--notes", str(co)], capture_output=True, text=True).stdout
    out = {}
    for block in re.split(r"\n  - \.", text)[1:]:
        name = re.search(r"\.name:\s+(\S+)", block)
        if name:
            out[name.group(1)] = {label: int(m.group(1)) for key, label in NOTE_KEYS.items()
                                  if (m := re.search(rf"\.{key}:\s+(\d+)", block))}
    return out


def amdgpu_isa(co: Path) -> dict[str, dict]:
    """Instruction counts per kernel up to its last s_endpgm (the s_nop / s_code_end padding
    after it is alignment, as sass_stats.py stops at the last EXIT): all, s_barrier, LDS
    accesses (ds_* but the cross-lane ones), cross-lane (ds_bpermute / ds_swizzle / DPP /
    readlane), global memory, branches."""
    objdump = shutil.which("llvm-objdump-19") or shutil.which("llvm-objdump")
    text = subprocess.run([objdump, "-d", "--mcpu=gfx90a", str(co)], capture_output=True, text=True).stdout
    insts: dict[str, list[tuple[str, str]]] = {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <(\w+)>:", line)
        if m:
            cur = insts.setdefault(m.group(1), [])
            continue
        m = re.match(r"^\s+([a-z_0-9]+)\b(.*?)//", line)
        if cur is not None and m:
            cur.append((m.group(1), m.group(2)))
    xlane = ("ds_bpermute_b32", "ds_permute_b32", "ds_swizzle_b32")
    out = {}
    for name, ops in insts.items():
        last = max((k for k, (op, _) in enumerate(ops) if op == "s_endpgm"), default=len(ops) - 1)
        body = ops[: last + 1]
        out[name] = {
            "insts": len(body),
            "s_barrier": sum(op == "s_barrier" for op, _ in body),
            "ds_ops": sum(op.startswith("ds_") and op not in xlane for op, _ in body),
            "xlane": sum(op in xlane or "_dpp" in op or "row_" in rest
                         or op.startswith(("v_readlane", "v_readfirstlane")) for op, rest in body),
            "global": sum(op.startswith(("global_", "flat_", "buffer_")) for op, _ in body),
            "branch": sum(op.startswith("s_cbranch") or op == "s_branch" for op, _ in body),
        }
    return out


AMD_COLS = ["vgpr", "sgpr", "lds", "scratch", "vgpr_spill", "sgpr_spill", "insts", "s_barrier", "ds_ops", "xlane",
            "global", "branch"]
HAND_HIP = {"block reduce f32": "hand_block_reduce_f32", "inclusive scan i32": "hand_block_inclusive_i32",
            "exclusive scan i32": "hand_block_exclusive_i32"}


def amdgpu_stats(co: Path) -> dict[str, dict]:
    notes, isa = amdgpu_notes(co), amdgpu_isa(co)
    return {k: {**v, **isa.get(k, {})} for k, v in notes.items()}


def amdgpu(args, report: dict, cases: list[dict], workdir: Path) -> None:
    missing = [t for t in ("hipcc", "llvm-readelf-19", "llvm-objdump-19") if shutil.which(t) is None]
    if missing:
        say(f"skipped: {', '.join(missing)} not found (scripts/setup.sh toolchains installs hipcc and clang-19)")
        report["amdgpu"] = {"skipped": f"missing {missing}"}
        return
    out_dir = workdir / "hip"
    out_dir.mkdir(exist_ok=True)
    sources = {}
    for case in cases:
        tr = qd.translate(case["ours"], "hip", warn=False)
        ((name, text),) = tr.sources.items()
        (out_dir / name).write_text(text)
        sources[case["name"]] = out_dir / name
    hand = out_dir / "hand_block.hip"
    hand.write_text((BENCH / "refs_hip" / "hand_block.hip").read_text())
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        built = dict(zip([*sources, "hand"], pool.map(_hipcc, [*sources.values(), hand])))
    hand_stats = amdgpu_stats(built["hand"][0]) if built["hand"][0] else {}
    if not built["hand"][0]:
        say(f"  the hand HIP references did not build: {built['hand'][1]}")
    rows, sec = [], {"arch": "gfx90a", "rows": []}
    for case in cases:
        co, err = built[case["name"]]
        if co is None:
            rows.append([f"{case['name']}: ours", "hipcc failed", *[""] * (len(AMD_COLS) - 1)])
            say(f"  {case['name']}: {err}")
            continue
        stats = amdgpu_stats(co)
        main = max(stats, key=lambda k: stats[k].get("insts", 0))
        rows.append([f"{case['name']}: ours ({main})", *[stats[main].get(c) for c in AMD_COLS]])
        entry = {"algorithm": case["name"], "ours": stats, "main": main}
        for kind, name in (("hand (HIP port)", HAND_HIP.get(case["name"], "")),
                           ("control", HAND_HIP.get(case["name"], "").replace("hand_", "control_"))):
            h = hand_stats.get(name)
            if h:
                rows.append([f"  {kind}: {name}", *[h.get(c) for c in AMD_COLS]])
                entry[kind.split()[0]] = h
        sec["rows"].append(entry)
    say(table("AMDGPU gfx90a (hipcc -O3, wave64): registers, LDS bytes and scratch from the code-object notes; "
              "instruction counts from llvm-objdump",
              ["kernel", "VGPR", "SGPR", "LDS B", "scratch", "v-spill", "s-spill", "insts", "s_barrier", "ds ops",
               "x-lane", "global", "branch"], rows,
              note="  x-lane: ds_bpermute / ds_swizzle / DPP / readlane; ds ops: the other LDS accesses; control: "
                   "the HIP port in our grid-stride task loop (bench/refs_hip/hand_block.hip)"))
    report["amdgpu"] = sec


def per_key(report: dict, workdir: Path) -> None:
    """SASS per key of the device-wide algorithms against CUB's (issue 47), a function each."""
    import quality_sort

    quality_sort.sort_pass(report, workdir)


def run(args, report: dict, cases: list[dict], workdir: Path) -> None:
    say("\n=== 3. Code quality " + "=" * 67)
    nvidia(args, report, cases, workdir)
    amdgpu(args, report, cases, workdir)
    per_key(report, workdir)
    per_element(report, workdir)


def per_element(report: dict, workdir: Path) -> None:
    import quality_device  # noqa: PLC0415 - the device-wide reduce and scan against CUB's kernels

    quality_device.run(report, workdir)


if __name__ == "__main__":  # python bench/quality.py: the per-key and per-element tables alone
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        per_key({}, Path(tmp))
        per_element({}, Path(tmp))

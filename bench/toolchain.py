"""Section 2: NVRTC time from CUDA source to an sm_90 cubin, our output against the same
algorithm written by hand and with CUB headers (reference/perf/ref, cut to that algorithm by
bench/refs.py; CUB needs the CCCL include path, ours needs none). Every compile is a new
NVRTC program in this process (the library is loaded once, before timing); the figure is the
median of the repeats."""
from __future__ import annotations

import statistics
import time

from common import cccl_include, fmt, perf_kit, say, table

import transpiler as qd  # noqa: E402


def nvrtc_time(source: str, name: str, options: tuple[str, ...], repeat: int) -> tuple[float | None, str]:
    from transpiler.toolchains.nvrtc import compile_cuda

    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = compile_cuda(source, name, arch="sm_90", cubin=True, options=options)
        samples.append(time.perf_counter() - t0)
        if not r.ok:
            return None, r.log.strip().splitlines()[0][:160] if r.log.strip() else "failed"
    return statistics.median(samples), ""


def run(args, report: dict, cases: list[dict], example_kernels: list[tuple[str, object]]) -> None:
    say("\n=== 2. Toolchain time: NVRTC -> sm_90 cubin " + "=" * 43)
    try:
        from transpiler.toolchains.nvrtc import library, version

        library()
    except Exception as exc:  # noqa: BLE001 - ToolchainMissing or a broken wheel
        say(f"skipped: NVRTC is not available ({exc}); `scripts/setup.sh toolchains` installs it")
        report["nvrtc"] = {"skipped": str(exc)}
        return
    say(f"NVRTC {version()}")
    repeat = 1 if args.quick else 3
    kit = perf_kit()
    cccl = cccl_include()
    sec = {"nvrtc_version": version(), "cccl": cccl, "algorithms": [], "examples": []}
    rows = []
    for case in cases:
        tr = qd.translate(case["ours"], "cuda", warn=False)
        (src,) = tr.sources.values()
        ours, err = nvrtc_time(src, next(iter(tr.sources)), tuple(tr.manifest["requirements"]["nvrtc_options"]),
                               repeat)
        entry = {"algorithm": case["name"], "ours_s": ours, "ours_error": err or None}
        hand = cub = None
        if kit and cccl:
            from refs import extract, nvrtc_options

            text = (kit / "ref" / case["ref"]).read_text()
            opts = nvrtc_options(kit / "ref", cccl)
            hand, herr = nvrtc_time(extract(text, case.get("hand_nvrtc", case["hand"])), case["ref"], opts, repeat)
            cub, cerr = nvrtc_time(extract(text, case["cub"]), case["ref"], opts, max(1, repeat - 1))
            entry.update(hand_s=hand, cub_s=cub, hand_error=herr or None, cub_error=cerr or None)
        sec["algorithms"].append(entry)
        ratio = f"{cub / ours:.1f}x" if ours and cub else "n/a"
        rows.append([case["name"], fmt(ours, 3), fmt(hand, 3), fmt(cub, 3), ratio])
    why = "" if kit and cccl else (" (references skipped: " + ("no perf kit; set QD_PERF_REFERENCE" if not kit
                                                               else "no CCCL headers") + ")")
    say(table(f"NVRTC to sm_90 cubin, s (median of {repeat}): ours vs the same algorithm by hand and with CUB" + why,
              ["algorithm", "ours", "hand-written", "CUB", "CUB / ours"], rows,
              note=f"  CUB via -I {cccl}; hand-written = reference/perf/ref kernels without CUB (common.cuh only)"))
    for e in sec["algorithms"]:
        for k in ("ours_error", "hand_error", "cub_error"):
            if e.get(k):
                say(f"  {e['algorithm']} {k[:-6]}: {e[k]}")

    rows = []
    for label, k in example_kernels:
        try:
            tr = qd.translate(k, "cuda", warn=False)
        except qd.TranspileError as exc:
            rows.append([label, "n/a", exc.message[:60]])
            continue
        (src,) = tr.sources.values()
        s, err = nvrtc_time(src, next(iter(tr.sources)), tuple(tr.manifest["requirements"]["nvrtc_options"]), repeat)
        entry_points = len(tr.manifest["entry_points"])
        sec["examples"].append({"kernel": label, "s": s, "error": err or None, "entry_points": entry_points})
        rows.append([label, fmt(s, 3), err or entry_points])
    say(table("NVRTC to sm_90 cubin for every example, s", ["kernel", "NVRTC s", "entry points"], rows))
    report["nvrtc"] = sec

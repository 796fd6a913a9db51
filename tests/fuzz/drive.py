"""The differential driver: generate a kernel, translate it for every target, compile a sample
with every toolchain, run it on Vulkan (lavapipe) and on both CPU executors (the CUDA and the
HIP text), and compare every array with the reference interpreter.

Failure classes, one per seed (the first found):
  crash            a Python exception out of the transpiler that is not a TranspileError
  false_rejection  a TranspileError on a kernel the generator believes valid (known target
                   limits, KNOWN_REFUSALS, are counted as ``refused`` instead)
  toolchain        a vendor compiler rejected the generated source (or the emulator's g++)
  wrong            an executor's arrays differ from the reference
  executor         an executor failed at run time (a deadlock report, a device error)
Each failing kernel is written to OUT/<class>/<seed>/ with kernel.py, report.txt (what
failed and the one-line reproduction command) and program.pkl (for --replay and --minimize).

  PYTHONPATH=tests:. python -m fuzz.drive -n 200            seeds 0..199
  PYTHONPATH=tests:. python -m fuzz.drive --seed 17         one seed, verbose
  PYTHONPATH=tests:. python -m fuzz.drive --replay DIR/program.pkl
  PYTHONPATH=tests:. python -m fuzz.minimize DIR/program.pkl
"""
from __future__ import annotations

import argparse
import importlib.util
import multiprocessing as mp
import os
import pickle
import re
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .generate import generate
from .program import Program, render, uses_subgroups
from .reference import Invalid, Undefined, reference

TARGETS = ["cuda", "hip", "glsl", "msl"]
EXECUTORS = {"vulkan": {"arch": "vulkan"}, "cpu-cuda": {"arch": "cpu"}, "cpu-hip": {"arch": "cpu", "dialect": "hip"}}
# Where an NVIDIA GPU and CuPy exist: --executors cuda,... (not a default: CI has no GPU).
GPU_EXECUTORS = {"cuda": {"arch": "cuda", "enable_fallback": False}}
EXECUTOR_TARGET = {"vulkan": "glsl", "cpu-cuda": "cuda", "cpu-hip": "hip", "cuda": "cuda"}
# Subgroup widths, when the runtime does not say (lavapipe's 8 lanes, CUDA's warps, HIP's waves).
SUBGROUP_WIDTH = {"vulkan": 8, "cpu-cuda": 32, "cpu-hip": 64, "cuda": 32}
TOL = 2e-3  # inexact floats: |got - want| <= TOL * 2**mag, mag bounding the stored expression

# Documented limits of a target (docs/lowering.md): refusing these is right, not a false rejection.
KNOWN_REFUSALS = {
    "msl": [r"Metal has no 64-bit floating-point type", r"Metal has no 64-bit integer read-modify-write atomics",
            r"64-bit integer .*Metal", r"Metal .*64-bit",
            r"on i64 is not supported on the msl target: SIMD-group functions take 8-, 16- and 32-bit values",
            r"on u64 is not supported on the msl target: SIMD-group functions take 8-, 16- and 32-bit values"],
    "glsl": [],
    "cuda": [],
    "hip": [],
}


# Device limits an executor refuses a kernel for, by the message (more storage buffers per
# shader than lavapipe's 32 crashed it: seed 34075).
DEVICE_LIMITS = r"binds \d+ storage buffers"


@dataclass
class Outcome:
    seed: int
    failure: str | None = None           # the failure class, or None
    detail: str = ""
    refused: list[str] = field(default_factory=list)      # targets that refused it for a known limit
    executed: list[str] = field(default_factory=list)     # executors that ran it
    compiled: list[str] = field(default_factory=list)     # toolchains that compiled it
    skipped: str | None = None           # the generator made something the reference rejects
    seconds: float = 0.0


def load_kernel(prog: Program, workdir: Path, with_module: bool = False):
    """Write the kernel module and import it the way a user's module is imported. Its fields
    are the module's own: every load makes fresh ones."""
    # A fresh folder each time: the frontend reads the source through linecache and the
    # import system caches bytecode by path, so a rewritten file must not reuse a path.
    sub = Path(tempfile.mkdtemp(dir=workdir))
    path = sub / f"{prog.name}.py"
    path.write_text(render(prog))
    spec = importlib.util.spec_from_file_location(f"fuzzmod_{prog.name}_{os.getpid()}_{time.monotonic_ns()}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return (getattr(module, prog.name), module) if with_module else getattr(module, prog.name)


def from_transpiler(exc: BaseException) -> bool:
    """Whether the exception was raised inside the transpiler package (not a runtime error)."""
    tb = traceback.extract_tb(exc.__traceback__)
    return bool(tb) and ("/transpiler/" in tb[-1].filename)


def known_refusal(target: str, message: str) -> bool:
    return any(re.search(p, message) for p in KNOWN_REFUSALS.get(target, []))


def arguments(prog: Program) -> list:
    """Every array's starting contents (fields' too), then the scalars."""
    args: list = []
    for a in prog.arrays:
        args.append(prog.inputs[a.name].copy() if a.name in prog.inputs else np.zeros(a.shape, a.dt.np))
    for s in prog.scalars:
        args.append(s.dt.np.type(s.value))
    return args


def launch(kernel, module, prog: Program, args: list) -> None:
    """Call the kernel: fields are filled from ``args`` first (``from_numpy``) and read back
    into them afterwards (``to_numpy``); the other arrays and the scalars are its arguments."""
    fields = [(k, getattr(module, a.name)) for k, a in enumerate(prog.arrays) if a.field]
    for k, f in fields:
        f.from_numpy(args[k])
    kernel(*[x for k, x in enumerate(args) if k >= len(prog.arrays) or not prog.arrays[k].field])
    for k, f in fields:
        args[k] = f.to_numpy()


def subgroup_width(executor: str) -> int:
    try:
        from transpiler.runtime import current

        return current().subgroup_size or SUBGROUP_WIDTH[executor]
    except Exception:  # noqa: BLE001 - the table, when the runtime cannot say
        return SUBGROUP_WIDTH[executor]


def ulps_apart(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """How many representable floats lie between got and want (0 for equal values, +0 and -0
    included, and for two NaNs; the type's whole range for one NaN)."""
    bits = np.dtype(f"i{got.dtype.itemsize}")
    lo = np.iinfo(bits).min

    def ordered(x):  # the integers in the floats' order: negative floats counted down from -0
        i = x.view(bits)
        return np.where(i < 0, lo - i, i)

    d = ordered(got) - ordered(want)  # wraps only for values far apart, never to a small number
    d = np.where(d == lo, np.iinfo(bits).max, np.abs(d))
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    return np.where(nan_got | nan_want, np.where(nan_got & nan_want, 0, np.iinfo(bits).max), d)


def compare(prog: Program, want: dict[str, np.ndarray], args: list) -> str | None:
    """The first few differences, or None."""
    for a, got in zip(prog.arrays, args):
        exp = want[a.name].reshape(-1)
        if got.shape != want[a.name].shape:
            return f"{a.name}: shape {got.shape}, want {want[a.name].shape}"
        got = got.reshape(-1)
        if a.ulps is not None:
            bad = ulps_apart(got, exp) > a.ulps
        elif a.dt.is_float and a.tol_mag is not None:
            bad = ~np.isclose(got, exp, rtol=0, atol=TOL * 2.0 ** a.tol_mag, equal_nan=True)
        elif a.dt.is_float:
            bad = ~((got == exp) | (np.isnan(got) & np.isnan(exp)))
        else:
            bad = got != exp
        if bad.any():
            idx = np.flatnonzero(bad)[:4]
            pairs = ", ".join(f"[{k}] want {exp[k]!r} got {got[k]!r}" for k in idx)
            return f"{a.name} ({a.dt.name}, {int(bad.sum())} of {exp.size} differ): {pairs}"
    return None


def check_seed(prog: Program, workdir: Path, executors: list[str], compile_all: bool,
               targets: list[str] = TARGETS) -> Outcome:
    """Run one program through every target and executor; the first failure decides its class."""
    import transpiler as qd
    from transpiler.errors import ToolchainMissing, TranspileError
    from transpiler.toolchains import check_sources

    out = Outcome(prog.seed)
    t0 = time.monotonic()
    wants: dict[int, dict] = {}
    try:
        wants[32] = reference(prog, 32)
        if uses_subgroups(prog):  # the same kernel is valid at every width
            for w in sorted(set(SUBGROUP_WIDTH.values())):
                if w not in wants:
                    wants[w] = reference(prog, w)
    except (Undefined, Invalid) as exc:
        out.skipped = f"{type(exc).__name__}: {exc}"
        return out
    kernel, module = load_kernel(prog, workdir, with_module=True)
    warnings.simplefilter("ignore")
    for target in targets:
        try:
            tr = qd.translate(kernel, target)
        except TranspileError as exc:
            if known_refusal(target, str(exc)):
                out.refused.append(target)
                continue
            out.failure, out.detail = "false_rejection", f"qd.translate(..., {target!r}):\n{exc}"
            return out
        except Exception as exc:  # noqa: BLE001 - every other exception is a transpiler crash
            out.failure, out.detail = "crash", f"qd.translate(..., {target!r}):\n{traceback.format_exc()}"
            return out
        if compile_all:
            try:
                verdicts = check_sources(target, tr.sources, tr.manifest)
            except ToolchainMissing:
                continue
            bad = [v for v in verdicts if not v.ok]
            if bad:
                out.failure, out.detail = "toolchain", f"{bad[0].tool} ({target}):\n{bad[0].message[:3000]}"
                return out
            out.compiled.append(target)
    for ex in executors:
        if EXECUTOR_TARGET[ex] in out.refused:
            continue
        qd.init(**{**EXECUTORS, **GPU_EXECUTORS}[ex])
        args = arguments(prog)
        width = subgroup_width(ex) if uses_subgroups(prog) else 32
        try:
            if width not in wants:
                wants[width] = reference(prog, width)
            want = wants[width]
            launch(kernel, module, prog, args)
        except TranspileError as exc:
            out.failure, out.detail = "false_rejection", f"{ex}:\n{exc}"
            return out
        except Exception as exc:  # noqa: BLE001
            if type(exc).__name__ == "DeviceUnsupported" and re.search(DEVICE_LIMITS, str(exc)):
                out.refused.append(ex)  # the device's documented limit, said before the launch
                continue
            text = traceback.format_exc()
            if "building" in str(exc) and "failed" in str(exc) or type(exc).__name__ == "ToolchainRejected":
                out.failure = "toolchain"
            elif from_transpiler(exc) and type(exc).__name__ not in ("KernelError", "DeadlockError",
                                                                        "DeviceUnsupported"):
                out.failure = "crash"
            else:
                out.failure = "executor"
            out.detail = f"{ex}:\n{text[-4000:]}"
            return out
        out.executed.append(ex)
        diff = compare(prog, want, args)
        if diff:
            out.failure, out.detail = "wrong", f"{ex}: {diff}"
            return out
    out.seconds = time.monotonic() - t0
    return out


def repro_command(seed: int, pkl: Path | None = None) -> str:
    if pkl is not None:
        return f"PYTHONPATH=tests:. python -m fuzz.drive --replay {pkl}"
    return f"PYTHONPATH=tests:. python -m fuzz.drive --seed {seed}"


def save_failure(prog: Program, outcome: Outcome, root: Path) -> Path:
    d = root / outcome.failure / str(prog.seed)
    d.mkdir(parents=True, exist_ok=True)
    (d / "kernel.py").write_text(render(prog))
    with open(d / "program.pkl", "wb") as f:
        pickle.dump(prog, f)
    (d / "report.txt").write_text(
        f"seed {prog.seed}: {outcome.failure}\n"
        f"reproduce: {repro_command(prog.seed)}\n"
        f"   or: {repro_command(prog.seed, d / 'program.pkl')}\n"
        f"minimize: PYTHONPATH=tests:. python -m fuzz.minimize {d / 'program.pkl'}\n\n{outcome.detail}\n")
    return d


# ----------------------------------------------------------------------------- workers

def _worker(conn, executors, sample, workdir) -> None:
    wd = Path(workdir)
    while True:
        job = conn.recv()
        if job is None:
            return
        seed = job
        prog = generate(seed)
        try:
            o = check_seed(prog, wd, executors, compile_all=sample > 0 and seed % sample == 0)
        except Exception:  # noqa: BLE001 - the driver itself failed: say so, keep going
            o = Outcome(seed, "crash", "driver:\n" + traceback.format_exc())
        conn.send(o)


def run_many(seeds: list[int], executors: list[str], sample: int, jobs: int, timeout: float,
             out_dir: Path | None, progress: Progress | None = None) -> tuple[list[Outcome], Counter]:
    """Check every seed with ``jobs`` worker processes; a seed that runs past ``timeout``
    seconds (a hang) is a failure of class ``timeout`` and its worker is replaced. The
    kernels' modules go to a temporary folder, removed at the end, however the run ends."""
    ctx = mp.get_context("fork")
    progress = progress or Progress(len(seeds))
    pending = list(reversed(seeds))
    workers: list[list] = []   # [process, conn, seed, started]
    results: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="qd_fuzz_") as tmp:

        def spawn():
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(child, executors, sample, tmp), daemon=True)
            p.start()
            return [p, parent, None, 0.0]

        for _ in range(max(1, min(jobs, len(seeds)))):
            workers.append(spawn())
        try:
            _loop(pending, workers, results, spawn, timeout, out_dir, progress)
        except KeyboardInterrupt:  # stopped early: report the seeds done so far
            # A second signal (`pkill -f` matches the workers too) must not cut the summary short.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            progress.say(f"interrupted after {len(results)} kernels")
            for w in workers:
                w[0].kill()
                w[0].join(5)
            return results, summarize(results)
        for w in workers:
            w[1].send(None)
            w[0].join(5)
    progress.close()
    return results, summarize(results)


def _loop(pending, workers, results, spawn, timeout, out_dir, progress) -> None:
    while pending or any(w[2] is not None for w in workers):
        for k, w in enumerate(workers):
            if w[2] is None and pending:
                w[2], w[3] = pending.pop(), time.monotonic()
                w[1].send(w[2])
            if w[2] is None:
                continue
            if w[1].poll(0.05):
                try:
                    o = w[1].recv()
                except EOFError:
                    o = Outcome(w[2], "crash", "the worker process died")
                    w[0].join(1)
                    workers[k] = spawn()
                else:
                    w[2] = None
                results.append(o)
                _report(o, out_dir, progress)
            elif time.monotonic() - w[3] > timeout or not w[0].is_alive():
                o = Outcome(w[2], "timeout" if w[0].is_alive() else "crash",
                            f"no answer after {timeout:.0f} s" if w[0].is_alive() else "the worker process died")
                w[0].kill()
                w[0].join()
                workers[k] = spawn()
                results.append(o)
                _report(o, out_dir, progress)


def _report(o: Outcome, out_dir: Path | None, progress: Progress) -> None:
    if o.failure:
        saved = save_failure(generate(o.seed), o, out_dir) if out_dir is not None else None
        progress.failure(o, saved)
    progress.advance(o)


class Progress:
    """What a run says while it runs, on ``stream``: each failure when it happens (one line:
    the seed, its class, the first line of what failed and the command that reproduces it),
    and the count so far (kernels done of the total, the rate, the time left, the failures):
    a line rewritten in place on a terminal, a plain line every ``every_s`` seconds elsewhere
    (a CI log, ``make fuzz > log``)."""

    def __init__(self, total: int, stream=None, live: bool | None = None, every_s: float = 30.0,
                 clock=time.monotonic) -> None:
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty() if live is None else live
        self.total, self.every_s, self.clock = total, every_s, clock
        self.done = self.failed = 0
        self.t0 = self.last = clock()
        self.shown = False

    def status(self) -> str:
        elapsed = max(self.clock() - self.t0, 1e-9)
        rate = self.done / elapsed
        left = f", {(self.total - self.done) / rate:.0f} s left" if rate > 0 and self.done < self.total else ""
        return (f"{self.done}/{self.total} kernels, {rate:.2f}/s{left}, "
                f"{self.failed} failure{'' if self.failed == 1 else 's'}")

    def say(self, line: str) -> None:
        if self.shown:  # the live line gives way; the next kernel draws it again
            self.stream.write("\r\x1b[K")
            self.shown = False
        print(line, file=self.stream, flush=True)

    def failure(self, o: Outcome, saved: Path | None) -> None:
        first = o.detail.strip().splitlines()[0][:160] if o.detail.strip() else ""
        where = f" (saved in {saved})" if saved is not None else ""
        self.say(f"FAIL seed {o.seed}: {o.failure}: {first}; reproduce: {repro_command(o.seed)}{where}")

    def advance(self, o: Outcome) -> None:
        self.done += 1
        self.failed += bool(o.failure)
        now = self.clock()
        if self.live:
            self.stream.write(f"\r\x1b[K{self.status()}")
            self.stream.flush()
            self.shown = True
        elif now - self.last >= self.every_s or self.done == self.total:
            self.last = now
            print(self.status(), file=self.stream, flush=True)

    def close(self) -> None:
        """End the live line (its last count stays), so what follows starts a line of its own."""
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
            self.shown = False


def summarize(results: list[Outcome]) -> Counter:
    c: Counter = Counter()
    c["kernels generated"] = len(results)
    for o in results:
        if o.skipped:
            c["skipped (reference refused)"] += 1
        for ex in o.executed:
            c[f"executed on {ex}"] += 1
        for t in o.compiled:
            c[f"compiled by the {t} toolchain"] += 1
        for t in o.refused:
            c[f"refused by {t} (known limit)"] += 1
        c[f"failures: {o.failure}" if o.failure else "passed"] += 1
    return c


def _stop(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzz.drive", description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=50, help="how many seeds (default 50)")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--seed", type=int, help="check this one seed and print everything")
    ap.add_argument("--replay", type=Path, help="check a saved program.pkl (e.g. a minimized one)")
    ap.add_argument("--show", action="store_true", help="with --seed: print the kernel source")
    ap.add_argument("--executors", default=",".join(EXECUTORS),
                    help="comma-separated: vulkan, cpu-cuda, cpu-hip; cuda where an NVIDIA GPU and CuPy exist")
    ap.add_argument("--sample", type=int, default=10, help="compile every Kth kernel with every toolchain (0: none)")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before a kernel counts as hung")
    ap.add_argument("--out", type=Path, default=Path("fuzz-failures"))
    ap.add_argument("--progress-every", type=float, default=30.0, metavar="S",
                    help="when the output is not a terminal: a progress line every S seconds (default 30)")
    a = ap.parse_args(argv)
    executors = [e for e in a.executors.split(",") if e]
    if a.seed is not None or a.replay is not None:
        prog = generate(a.seed) if a.replay is None else pickle.loads(a.replay.read_bytes())
        if a.show:
            print(render(prog))
        with tempfile.TemporaryDirectory(prefix="qd_fuzz_") as work:
            o = check_seed(prog, Path(work), executors, compile_all=True)
        print(f"seed {prog.seed}: {o.failure or ('skipped: ' + o.skipped if o.skipped else 'passed')}")
        print(f"  executed on {o.executed}, compiled by {o.compiled}, refused by {o.refused}")
        if o.detail:
            print(o.detail)
        return 1 if o.failure else 0
    t0 = time.monotonic()
    seeds = list(range(a.start, a.start + a.n))
    signal.signal(signal.SIGTERM, _stop)  # `kill PID` (a background job ignores SIGINT) ends it with a summary
    progress = Progress(len(seeds), every_s=a.progress_every)
    results, counts = run_many(seeds, executors, a.sample, a.jobs, a.timeout, a.out, progress)
    print(f"\n{len(results)} of {len(seeds)} kernels in {time.monotonic() - t0:.0f} s")
    for k, v in sorted(counts.items()):
        print(f"  {k}: {v}")
    if any(o.failure for o in results):
        print(f"failing kernels: {a.out}/<class>/<seed>/ (kernel.py, report.txt with the reproduction command)")
    return 1 if any(o.failure for o in results) else 0


if __name__ == "__main__":
    sys.exit(main())

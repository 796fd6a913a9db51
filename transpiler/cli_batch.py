"""Several files in one command (``transpiler check a.py b.py dir/ -j 4``): each file runs as
the one-file command would, its output captured, then printed in the order the files were
given whatever order they finish in, so ``-j 1`` and ``-j N`` print the same bytes. The exit
code is the worst of the files' (docs/cli.md: "Several files"); ``check`` and ``inspect``
end with one summary line per file. ``-j N`` runs the files in a pool of N processes."""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("transpiler.cli")

# From best to worst: ok, a toolchain missing, a kernel wrong or rejected, bad usage (the
# same order `check` ranks a rejected file above a missing toolchain in).
SEVERITY = (0, 3, 1, 2)
WORDS = {0: "ok", 1: "failed", 2: "usage error", 3: "toolchain missing"}

Runner = Callable[[argparse.Namespace], int]


@dataclass
class FileResult:
    path: str
    code: int
    out: str
    err: str
    seconds: float


def expand(paths: list[str]) -> tuple[list[str], bool]:
    """The files to run: each path given, a directory as its ``*.py`` files sorted by name.
    Also whether that is several files (or a directory): the summary then follows."""
    files, many = [], len(paths) > 1
    for p in paths:
        if os.path.isdir(p):
            many = True
            files.extend(str(f) for f in sorted(Path(p).glob("*.py")))
        else:
            files.append(p)
    return files, many


def worst(codes: list[int]) -> int:
    return max(codes, key=SEVERITY.index, default=0)


def run_one(run: Runner, args: argparse.Namespace, path: str) -> FileResult:
    """One file's command with its stdout and stderr captured."""
    # A file a directory brought in may be a helper module with no kernel: skipped, not an error.
    one = argparse.Namespace(**{**vars(args), "file": path, "files": [path], "from_directory": path not in args.files})
    if getattr(args, "output", None) and getattr(args, "output_per_file", False):
        one.output = os.path.join(args.output, Path(path).stem)
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(one)
    return FileResult(path, code, out.getvalue(), err.getvalue(), time.perf_counter() - t0)


_worker: tuple[Runner, argparse.Namespace] | None = None


def _start_worker(run: Runner, args: argparse.Namespace, setup: Callable[[argparse.Namespace], None]) -> None:
    global _worker
    _worker = (run, args)
    setup(args)  # logging and --toolchain choices, as in the parent (a spawned worker starts bare)


def _work(path: str) -> FileResult:
    return run_one(*_worker, path)


def results(run: Runner, args: argparse.Namespace, files: list[str], jobs: int,
            setup: Callable[[argparse.Namespace], None]) -> Iterator[FileResult]:
    """Every file's result, in the order of ``files``; with ``jobs`` > 1 from a process pool."""
    if jobs <= 1 or len(files) <= 1:
        for path in files:
            yield run_one(run, args, path)
        return
    import concurrent.futures.process  # noqa: PLC0415 - the pool's modules load only for -j N
    import multiprocessing  # noqa: PLC0415

    # fork where there is one: the workers start with the package imported (spawn re-imports it).
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    with concurrent.futures.ProcessPoolExecutor(min(jobs, len(files)), mp_context=context,
                                                initializer=_start_worker, initargs=(run, args, setup)) as pool:
        futures = [pool.submit(_work, path) for path in files]
        for path, future in zip(files, futures, strict=True):  # in file order: one done early waits its turn
            try:
                yield future.result()
            except concurrent.futures.process.BrokenProcessPool as exc:  # a worker died (a signal, memory)
                yield FileResult(path, 1, "", f"transpiler: error: {path}: the worker process died ({exc})\n", 0.0)


class Progress:
    """A live line on a terminal: ``[3/10] 1 failed, 0.8 files/s  next.py``; nothing elsewhere
    (``-v`` logs a plain line per file instead). ``clear`` before printing anything else."""

    def __init__(self, total: int, stream: io.TextIOBase, enabled: bool) -> None:
        self.total, self.stream, self.enabled = total, stream, enabled
        self.done = self.failed = 0
        self.t0 = time.perf_counter()
        self.shown = False

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False

    def advance(self, result: FileResult) -> None:
        self.done += 1
        self.failed += result.code != 0
        rate = self.done / max(time.perf_counter() - self.t0, 1e-9)
        log.info("%s: %s (%d/%d, %.2f s)", result.path, WORDS.get(result.code, result.code), self.done,
                 self.total, result.seconds)
        if self.enabled and self.done < self.total:
            failed = f" {self.failed} failed," if self.failed else ""
            self.stream.write(f"\r\x1b[K[{self.done}/{self.total}]{failed} {rate:.1f} files/s")
            self.stream.flush()
            self.shown = True


def run_many(run: Runner, args: argparse.Namespace, files: list[str], setup: Callable[[argparse.Namespace], None],
             summary: bool) -> int:
    """Run every file, print each one's output in order (``== FILE`` before it for check and
    inspect), then with ``summary`` a line per file and the totals. Returns the worst code."""
    show = not args.quiet and args.command != "emit" and sys.stderr.isatty()
    progress = Progress(len(files), sys.stderr, show)
    done = []
    for r in results(run, args, files, args.jobs, setup):
        done.append(r)
        progress.clear()
        if getattr(args, "json", False):
            pass  # one JSON document for every file, below
        else:
            if summary and r.out:
                sys.stdout.write(f"== {r.path}\n")
            sys.stdout.write(r.out)
            sys.stdout.flush()
        sys.stderr.write(r.err)
        sys.stderr.flush()
        progress.advance(r)
    progress.clear()
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps({"files": [json_entry(r) for r in done]}, indent=2) + "\n")
    elif summary:
        print_summary(done, args.quiet)
    return worst([r.code for r in done])


def json_entry(r: FileResult) -> dict:
    """One file of ``check --json``: its own document, or the error that stopped it."""
    try:
        doc = json.loads(r.out) if r.out.strip() else {}
    except json.JSONDecodeError:
        doc = {}
    entry = {"file": r.path, "exit_code": r.code, **doc}
    if not doc:
        entry["error"] = r.err.strip()
    return entry


def print_summary(done: list[FileResult], quiet: bool) -> None:
    counts: dict[str, int] = {}
    for r in done:
        word = WORDS.get(r.code, f"exit {r.code}")
        counts[word] = counts.get(word, 0) + 1
        if not (quiet and r.code == 0):
            print(f"{r.path}: {word}")
    print(f"{len(done)} files: " + ", ".join(f"{n} {w}" for w, n in counts.items()))

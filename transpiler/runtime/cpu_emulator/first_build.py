"""A new plain kernel's first build on the CPU executor (see CpuBackend.load): a light build
first, the optimised one on a thread from the kernel's second call (see CpuBackend.run), which
the program swaps in once it is ready.

The light build compiles the same wrapper and text with the same flags but ``LIGHT_OPT``
(-ffp-contract=off and the same math functions in both: the two compute bit-identical results,
tests/test_cpu_first_build.py), in a clang started ahead of time that waits for the wrapper
on its stdin, and links the object with ld.lld directly (started ahead the same way: the
linker script on its stdin names the object) against the runtime library alone, not through
the driver (crt files, libstdc++, libgcc: 45-51 ms against 18 here). Starting clang itself
(its shared libraries, the driver's search for a GCC installation) is 15-20 ms of any build,
so a spare pair waits on each scratch folder; one is started for the next kernel when this
one is taken. A new saxpy here: clang -O2 with the PCH, through the driver, 137 ms, then the
link 45; -O0 in a started clang 21, the started linker 4.

Everything this process starts (spares, the compilers and linkers of builds in progress) is
recorded here, so that an exit lets the optimised builds under way finish (EXIT_WAIT_S at
most: a short program's builds then reach the cache), kills the rest and removes their scratch
folders: no process outlives the program, and the cache only ever gains complete
entries (a build's folder is renamed into place whole, never after the exit has begun)."""
from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from collections.abc import Callable

from .. import profile

LIGHT_OPT = "-O0"

_lock = threading.Lock()
_owner = os.getpid()     # a forked child neither uses nor kills its parent's processes
_exiting = False
_running: set[subprocess.Popen] = set()   # compilers and linkers now running
_scratch: set[Path] = set()               # folders of builds in progress (spares' included)
_spares: dict[tuple, Spare] = {}
_pending: set[Rebuild] = set()            # optimised builds not done yet

# How long an exit waits for the optimised builds still running (see _at_exit): a new kernel's
# takes 0.1-0.3 s here once the precompiled header exists.
EXIT_WAIT_S = 5.0


class Exiting(RuntimeError):
    """The program is exiting: a background build stops here."""


def start(cmd: list[str], cwd: Path | None = None, stdin: bool = False) -> subprocess.Popen:
    """``cmd`` as a recorded child (see the module docstring), stdin a pipe if asked."""
    with _lock:
        if _exiting:
            raise Exiting("the program is exiting")
        proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _running.add(proc)
    return proc


def finish(proc: subprocess.Popen, text: str | None = None) -> tuple[int, str]:
    """Hand ``proc`` its stdin (if it reads it), wait for it: its exit status and stderr."""
    try:
        _, err = proc.communicate(None if text is None else text.encode())
    finally:
        with _lock:
            _running.discard(proc)
    return proc.returncode, err.decode(errors="replace")


def scratch(prefix: str, parent: Path) -> Path:
    """A new scratch folder (``.tmp``: the cache's eviction leaves it alone a while), recorded."""
    with _lock:  # made and recorded at once: the exit removes every folder made before it
        if _exiting:
            raise Exiting("the program is exiting")
        folder = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=parent))
        _scratch.add(folder)
    return folder


def install(folder: Path, final: Path) -> bool:
    """Rename a finished build's ``folder`` to ``final`` (atomically: another process may race
    us to it), unless the program is exiting; True when this call put it there."""
    with _lock:
        _scratch.discard(folder)
        if _exiting:
            shutil.rmtree(folder, ignore_errors=True)
            raise Exiting("the program is exiting")
        try:
            os.replace(folder, final)
            return True
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
            if not final.exists():
                raise
            return False


def discard(folder: Path) -> None:
    with _lock:
        _scratch.discard(folder)
    shutil.rmtree(folder, ignore_errors=True)


class Spare:
    """A clang and an ld.lld started on one scratch folder, each waiting for its stdin: the
    compiler for the wrapper (the kernel's text beside it, by name), the linker for a script
    naming the object."""

    def __init__(self, parent: Path, compile_cmd: list[str], link_cmd: list[str]):
        self.pid = os.getpid()
        self.folder = scratch("kl-", parent)
        obj, lib = self.folder / "kernel.o", self.folder / "kernel.so"
        try:
            self.cc = start([*compile_cmd, f"-I{self.folder}", "-c", "-x", "c++", "-", "-o", str(obj)],
                            self.folder, stdin=True)
            self.ld = start([*link_cmd, "/dev/stdin", "-o", str(lib)], self.folder, stdin=True)
        except BaseException:
            self.close()
            raise

    def build(self, source_name: str, source: str, wrapper: str) -> str | None:
        """Compile and link; None when both succeeded, else what went wrong."""
        (self.folder / source_name).write_text(source)
        (self.folder / "wrapper.cpp").write_text(wrapper)  # what was compiled, as a full build keeps it
        with profile.stage("compile") as note:
            note.append("started" if self.cc.poll() is None else "")
            rc, err = finish(self.cc, wrapper)
        if rc != 0:
            finish(self.ld, "")
            return err or f"the compiler exited with {rc}"
        with profile.stage("link"):
            rc, err = finish(self.ld, f'INPUT("{self.folder / "kernel.o"}")\n')
        return None if rc == 0 else err or f"the linker exited with {rc}"

    def close(self) -> None:
        for proc in (getattr(self, "cc", None), getattr(self, "ld", None)):
            if proc is not None and proc.poll() is None:
                proc.kill()
                finish(proc)
        discard(self.folder)


def take(key: tuple, make: Callable[[], Spare]) -> Spare:
    """The spare started for ``key`` (a new one if there is none, or it was not this
    process's, or its folder went)."""
    with _lock:
        spare = _spares.pop(key, None)
    if spare is not None and spare.pid == os.getpid() and spare.folder.is_dir():
        return spare
    return make()


def prepare(key: tuple, make: Callable[[], Spare]) -> None:
    """Start a spare for ``key`` unless one waits already (or the program is exiting)."""
    with _lock:
        if key in _spares or _exiting:
            return
    spare = make()
    with _lock:
        old = _spares.get(key)
        if old is None and not _exiting:
            _spares[key] = spare
            return
    spare.close()  # another thread's got there first


# Optimised builds running at once: one fewer than the CPUs (at least one), so that the
# program and the next light build keep a core (many new kernels in a row queue here).
_rebuilds = threading.BoundedSemaphore(max(1, len(os.sched_getaffinity(0)) - 1)
                                       if hasattr(os, "sched_getaffinity") else 1)


class Rebuild:
    """The optimised build of a module whose light build runs meanwhile, on a thread;
    ``then`` after it, on that thread (the backend's warm-up, which an exit does not wait for)."""

    def __init__(self, build: Callable[[], object], then: Callable[[], object] | None = None):
        self.module: object | None = None
        self.error: BaseException | None = None
        self._built = threading.Event()
        with _lock:
            _pending.add(self)
        self._thread = threading.Thread(target=self._run, args=(build, then), daemon=True, name="qd-cpu-rebuild")
        self._thread.start()

    def _run(self, build: Callable[[], object], then: Callable[[], object] | None) -> None:
        try:
            with _rebuilds:
                self.module = build()
        except BaseException as exc:  # noqa: BLE001 - kept: the light module simply stays
            self.error = exc
        finally:
            with _lock:
                _pending.discard(self)
            self._built.set()
        if then is not None:
            with contextlib.suppress(Exception):  # only a head start for later first calls
                then()

    @property
    def done(self) -> bool:
        return self._built.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the build; True when it is done."""
        return self._built.wait(timeout)


def _at_exit() -> None:
    """Let the optimised builds under way finish (EXIT_WAIT_S at most, in all), then kill what
    this process started and remove the scratch folders of unfinished builds. The wait is what
    puts a short program's optimised builds in the cache: killed, each of its runs would build
    and run the light module again (the bench's warm calls of a 1K kernel ran -O0 code: 3x)."""
    global _exiting
    if os.getpid() != _owner:
        return
    deadline = time.monotonic() + EXIT_WAIT_S
    with _lock:
        pending = list(_pending)
    for rebuild in pending:
        rebuild.wait(max(0.0, deadline - time.monotonic()))
    with _lock:
        _exiting = True
        procs = list(_running)
        folders = list(_scratch)
        _spares.clear()
    for proc in procs:
        with contextlib.suppress(OSError):
            proc.kill()
    for proc in procs:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            proc.wait(5)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


atexit.register(_at_exit)

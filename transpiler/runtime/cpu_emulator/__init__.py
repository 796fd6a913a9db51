"""Run the CUDA (or HIP) text the transpiler emits on the CPU, unchanged.

The generated ``.cu``/``.hip`` file is compiled by the host C++ compiler after
``qd_simt.h`` (beside this file), which supplies the GPU built-ins: every GPU thread of a
block is a fiber, blocks run in index order (a long grid-free task's blocks are split among
OS threads, see ``CpuBackend``), ``__shared__`` is per block, barriers and warp collectives
really wait. A task none of whose threads can wait for another runs them directly instead,
one after another, one element each (see ``_runs_direct``). A kernel whose tasks are all
plain loops (see ``_plain``) is compiled as a plain module instead: each task a vectorized
loop over its elements, split among OS threads, no fibers (qd_simt.h, QD_EMU_PLAIN). The scheduler lives in
``qd_simt_rt.cpp``, built once into a shared library that each kernel library links to. A
target says whether the emulator runs its text, and with which defines
(``Target.emulator_defines``). Both are cached by content hash under
``$XDG_CACHE_HOME/transpiler/cpu`` (``~/.cache/...``), or ``$QD_CPU_CACHE``.

A kernel that can never finish is not left hanging: a barrier or warp collective that some
thread never reaches raises ``DeadlockError`` at once, a loop that spins with nothing else
happening raises it after ``watchdog_s``; both name the Python line. Faults inside the
kernel (integer division by zero, a wild pointer, stack overflow) raise ``KernelError``.

``race_check=True`` runs each launch in a child process built with ThreadSanitizer
(fibers are TSan threads; barriers and warp collectives are its synchronization) and raises
``RaceError`` naming the two Python lines of the first data race.
"""
from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import hashlib
import linecache
import os
import re
import shutil
import sys
import struct
import subprocess
import tempfile
import threading
from pathlib import Path
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from ... import cache
from ...errors import ToolchainMissing
from ...ir import nodes as ir
from ...ir.records import record, field
from ...ir.walk import all_exprs, all_stmts, called_by
from ...targets import get_target, names
from ...ir.evaluate import evaluate, uniform_env
from ...targets.target import MAX_BLOCKS
from .. import Backend, Launch, Translation, entries_by_task, profile, warm_up
from . import first_build
from ..guards import KernelError

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ...targets.target import Target

HERE = Path(__file__).resolve().parent
HEADER = HERE / "qd_simt.h"
RUNTIME_SRC = HERE / "qd_simt_rt.cpp"
DRIVER_SRC = HERE / "qd_race_driver.cpp"

# Status codes of qd_emu_run (qd_simt.h).
_OK, _DEADLOCK, _HANG, _TRAP, _SIGNAL, _BAD_LAUNCH = range(6)
_POISON_SHARED, _DIRECT = 1, 2  # qd_emu_config.flags
_ERRLEN = 1 << 16

# Compiler flags: signed overflow traps (SIGILL, reported at its Python line) rather than
# wrapping (-fwrapv would hide it): C++ leaves it undefined and NVRTC and hipcc optimize on
# that, so the emitted text must never overflow a signed int (it computes in unsigned where
# a value may wrap). -g1 keeps line tables so a fault's address maps back to a generated
# line, and from there to the Python line.
_COMMON_FLAGS = ["-std=c++20", "-fPIC", "-g1", "-gdwarf-4", "-fsanitize=signed-integer-overflow",
                 "-fsanitize-undefined-trap-on-error", "-fno-strict-aliasing", "-pthread", "-U_FORTIFY_SOURCE"]


_TRAP_OVERFLOW = ("-fsanitize=signed-integer-overflow", "-fsanitize-undefined-trap-on-error")


class DeadlockError(KernelError):
    """Threads wait for each other forever: a barrier or warp collective not every thread
    reaches, or a loop waiting for something that never happens."""


class RaceError(KernelError):
    """ThreadSanitizer saw two threads access the same memory without synchronization."""


# ----------------------------------------------------------------------------- toolchain

def cache_root() -> Path:
    """Where built libraries are kept: the cache ``cpu`` (transpiler/cache.py: $QD_CPU_CACHE,
    else the user's cache directory), bounded there, least recently used first."""
    return Path(cache.directory("cpu"))


_compiler_ids: dict[str, str] = {}
_build_lock = threading.Lock()


def find_compiler(name: str | None = None, race_check: bool = False) -> str:
    """The host C++ compiler: ``name``, else $CXX, else clang++-19, g++, clang++. clang first:
    its UBSan sees every signed overflow the generated text has, where g++ first narrows
    `uint16_t(a * b)` to 16-bit arithmetic and so misses the overflow of the int it promotes to.
    A race check wants g++ before any other: Debian's g++ ships the TSan runtime, clang's is a
    separate package."""
    cxx = os.environ.get("CXX")
    candidates = [name] if name else ["g++", cxx, "clang++-19", "clang++"] if race_check else \
        [cxx, "clang++-19", "g++", "clang++"]
    for c in candidates:
        if c and shutil.which(c):
            return shutil.which(c)
    raise ToolchainMissing(name or "a C++20 compiler (g++ or clang++)", "apt-get install g++")


def compiler_id(cxx: str) -> str:
    """The compiler's path and version line, part of every build's cache key. Asking the
    compiler (`--version`) takes 30-40 ms, most of a first call whose build is cached, so the
    answer is kept on disk under the binary's identity (inode, size, modification time)."""
    hit = _compiler_ids.get(cxx)
    if hit is None:
        hit = _compiler_ids[cxx] = _stored_compiler_id(cxx)
    return hit


def _stored_compiler_id(cxx: str) -> str:
    st = os.stat(cxx)  # the binary itself, through any links
    key = digest(cxx, os.path.realpath(cxx), str(st.st_ino), str(st.st_size), str(st.st_mtime_ns))
    stored = cache_root() / f"cxx-{key}"
    try:
        ident = stored.read_text()
        cache.touch(stored)
        return ident
    except OSError:
        pass
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True)
    ident = cxx + "\n" + out.stdout.splitlines()[0] if out.stdout else cxx
    try:
        cache_root().mkdir(parents=True, exist_ok=True)
        scratch = stored.with_name(f"{stored.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        scratch.write_text(ident)
        os.replace(scratch, stored)  # whole, whoever writes it last
        cache.added("cpu", str(cache_root()), stored.name, len(ident))
    except OSError:
        pass  # a read-only cache: ask again next time
    return ident


def _clang_major(cxx: str) -> int:
    """clang's major version, 0 for any other compiler."""
    m = re.search(r"clang version (\d+)", compiler_id(cxx))
    return int(m.group(1)) if m else 0


_texts: dict[tuple, str] = {}


def _text(path: Path) -> str:
    """A source's text, read once per version of the file (its size and time): a first
    build's cache keys read the header and the runtime's source several times."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    text = _texts.get(key)
    if text is None:
        text = _texts[key] = path.read_text()
    return text


def digest(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _run_compiler(cmd: list[str], what: str) -> None:
    # (a child first_build records: an exit during a background build kills it)
    returncode, stderr = first_build.finish(first_build.start(cmd))
    if returncode != 0:
        if "-fsanitize=thread" in cmd and re.search(r"cannot find .*tsan|lib(clang_rt\.)?tsan", stderr):
            raise ToolchainMissing(f"the ThreadSanitizer runtime of {cmd[0]}",
                                   "apt-get install libtsan2 (g++) or libclang-rt-19-dev (clang++)")
        raise KernelError(f"building {what} for the CPU emulator failed:\n$ {' '.join(cmd)}\n{stderr}")


@contextlib.contextmanager
def building(final: Path, prefix: str) -> Iterator[Path]:
    """A scratch folder in the cache to build into (``.tmp``: the cache's eviction leaves it
    alone), moved into place as ``final`` atomically when the build succeeds (another process
    may race us to it) and counted against the cache's bound, removed when it fails (or the
    program exits first: see first_build)."""
    cache_root().mkdir(parents=True, exist_ok=True)
    tmp = first_build.scratch(prefix, cache_root())
    try:
        yield tmp
    except BaseException:
        first_build.discard(tmp)
        raise
    if first_build.install(tmp, final):
        cache.added("cpu", str(final.parent), final.name, cache.tree_size(final))


@contextlib.contextmanager
def build_lock(final: Path) -> Iterator[None]:
    """Held while one process builds ``final``: another that wants it (a second pytest-xdist
    worker, a second notebook) waits here and then finds it built, rather than compiling it
    again beside it. The lock files are 256 stripes by the name's hash (a wait for a build
    that only shares a stripe is rare and short), released when their file closes."""
    locks = cache_root() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / digest(final.name)[:2], "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _built_once(folder: str, key: str, name: str, command: Callable[[Path], list[str]], what: str) -> Path:
    """``name`` in the cache folder ``folder-key``, compiled by ``command(its path)`` the first
    time: once per process (the lock), once across processes (build_lock), and atomically
    (see building)."""
    final = cache_root() / f"{folder}-{key}"
    out = final / name
    if out.exists():
        cache.touch(final)
        return out
    with _build_lock, build_lock(final):
        if not out.exists():
            with building(final, f"{folder}-") as tmp:
                _run_compiler(command(tmp / name), what)
    return out


def runtime_library(cxx: str) -> Path:
    """The scheduler library (qd_simt_rt.cpp), built once per compiler and header version."""
    flags = _COMMON_FLAGS + ["-O2"]
    key = digest("rt", _text(HEADER), _text(RUNTIME_SRC), compiler_id(cxx), " ".join(flags))
    return _built_once("rt", key, "libqd_simt.so",
                       lambda out: [cxx, *flags, "-shared", f"-I{HERE}", str(RUNTIME_SRC), "-o", str(out), "-ldl"],
                       "the SIMT runtime")


def link_flags(cxx: str) -> list[str]:
    """LLVM's linker where clang brings its own: GNU ld took 0.12 s of a small kernel's 0.29 s
    build here, lld 0.06 (what it writes loads and traps the same)."""
    return ["-fuse-ld=lld"] if _lld(cxx) else []


def _lld(cxx: str) -> str | None:
    """The ld.lld beside clang ``cxx``, if there is one."""
    lld = os.path.join(os.path.dirname(os.path.realpath(cxx)), "ld.lld")
    return lld if _clang_major(cxx) and os.path.exists(lld) else None


def precompiled_header(cxx: str, flags: list[str], build: bool = True) -> Path | None:
    """qd_simt.h precompiled with exactly ``flags`` (clang refuses a PCH built with others),
    once per compiler, flags and header version: parsing it and the standard headers it
    includes is most of a small kernel's build (0.2 -> 0.1 s of CPU for saxpy here). None
    for a compiler other than clang, or when building it fails (the build then parses it),
    or (``build=False``) when it is not built yet."""
    if not _clang_major(cxx):
        return None
    # clang checks that the header a PCH was built from is unchanged (its size and time), so
    # the key holds the header's path and time as well as its text: a PCH built from another
    # checkout's identical copy, or before a `git checkout` rewrote this one, is not used.
    # -fpch-instantiate-templates: the header's own template instantiations (<cmath>'s
    # special functions, ...) are done once in the PCH, not in every kernel's build (30-40 ms
    # of a small plain kernel's here).
    stat = HEADER.stat()
    pch_flags = [*flags, "-fpch-instantiate-templates"]
    key = digest("pch", str(HEADER), str(stat.st_mtime_ns), _text(HEADER), compiler_id(cxx), " ".join(pch_flags))
    if not build:
        found = cache_root() / f"pch-{key}" / "qd_simt.h.pch"
        return found if found.exists() else None
    try:
        return _built_once("pch", key, "qd_simt.h.pch",
                           lambda out: [cxx, *pch_flags, f"-I{HERE}", "-x", "c++-header", str(HEADER), "-o", str(out)],
                           "the precompiled SIMT header")
    except KernelError:
        return None


def runtime_object(cxx: str) -> Path:
    """qd_simt_rt.cpp compiled for race-check executables: TSan fiber hooks on, the
    scheduler itself not instrumented (its bookkeeping is shared by all fibers on purpose)."""
    flags = _COMMON_FLAGS + ["-O2", "-DQD_EMU_TSAN"]
    key = digest("rt-tsan", _text(HEADER), _text(RUNTIME_SRC), compiler_id(cxx), " ".join(flags))
    return _built_once("rt", key, "qd_simt_rt.o",
                       lambda out: [cxx, *flags, "-c", f"-I{HERE}", str(RUNTIME_SRC), "-o", str(out)],
                       "the SIMT runtime (race check)")


_ENTRY_RE = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(")


# ----------------------------------------------------------------------------- a compiled module

@record
class CpuModule:
    """One generated source compiled for the emulator; ``launch`` runs an entry point."""

    source_name: str
    source: str
    dialect: str
    warp_size: int
    entries: list[str]
    lib_path: Path
    build_dir: Path
    python_files: dict[str, str] = field(default_factory=dict)  # basename -> full path, for source lines
    race_check: bool = False      # lib_path is then a TSan executable run in a child process
    was_cached: bool = False      # built by an earlier process (or call): found in the cache
    plain: bool = False           # every entry runs as a loop over its elements (build_module)
    _lib: ctypes.CDLL | None = None
    _fns: dict = field(default_factory=dict)

    def _fn(self, entry: str):
        fn = self._fns.get(entry)
        if fn is None:
            if self._lib is None:
                self._lib = ctypes.CDLL(str(self.lib_path))
            fn = getattr(self._lib, f"qd_launch_{entry}")
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
            fn.restype = ctypes.c_int
            self._fns[entry] = fn
        return fn

    def launch(self, entry: str, grid: int | Sequence[int], block: int | Sequence[int], args: Sequence, *,
               watchdog_s: float = 10.0,
               poison_shared: bool = True, arg_names: Sequence[str] | None = None) -> None:
        """Run ``entry`` over ``grid`` blocks of ``block`` threads (ints or 1-3 tuples).

        ``args`` in the kernel's parameter order: numpy arrays pass their data pointer (the
        kernel writes them in place), numpy scalars pass their value with their own dtype."""
        self.launch_many([(entry, grid, block)], args, watchdog_s=watchdog_s, poison_shared=poison_shared,
                         arg_names=arg_names)

    def launch_many(self, launches: Sequence[tuple], args: Sequence, *,
                    watchdog_s: float = 10.0, poison_shared: bool = True,
                    arg_names: Sequence[str] | None = None) -> Callable[[], None] | None:
        """Several launches in order over one argument list (a kernel's tasks), each
        ``(entry, grid, block)``, ``(entry, grid, block, workers)`` or ``(entry, grid, block,
        workers, direct)``: workers > 1 splits the blocks among that many OS threads, for a
        task whose blocks are independent and do nothing in order (no barrier, collective,
        shared array, fence or print); ``direct`` runs each thread to its end in turn, without
        fibers, for a task none of whose threads ever waits for another (see CpuBackend.load).
        Returns a function that runs the same launches again over the same memory (None for a
        race check, which runs in a child process)."""
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    raise TypeError(f"argument {i}: arrays must be C-contiguous")
            elif not isinstance(a, np.generic):
                raise TypeError(f"argument {i}: pass a numpy array or numpy scalar, got {type(a).__name__}")
        cfgs = []
        for entry, grid, block, *rest in launches:
            workers = max(1, int(rest[0])) if rest else 1
            flags = (_POISON_SHARED if poison_shared else 0) | (_DIRECT if len(rest) > 1 and rest[1] else 0)
            cfgs.append((entry, np.array([*_dim3(grid), *_dim3(block), int(watchdog_s * 1000), flags, 0, -1, workers],
                                         dtype=np.int64)))
        if self.race_check:
            self._run_child(cfgs, args, arg_names)
            return None
        slots = np.zeros(max(1, len(args)), dtype=np.uint64)
        raw = slots.view(np.uint8)
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                slots[i] = a.ctypes.data
            else:
                b = np.asarray(a).tobytes()
                raw[8 * i:8 * i + len(b)] = np.frombuffer(b, dtype=np.uint8)
        base = slots.ctypes.data
        ptrs = np.array([base + 8 * i for i in range(len(slots))], dtype=np.uint64)
        err = ctypes.create_string_buffer(_ERRLEN)
        # The addresses once: numpy's `.ctypes` builds an object per access (2 of a 1K saxpy's
        # 12 us warm call here).
        calls = [(entry, self._fn(entry), cfg.ctypes.data) for entry, cfg in cfgs]
        at = ptrs.ctypes.data

        def again(keep: tuple = (slots, ptrs, cfgs)) -> None:  # holds what `at` and `calls` point into
            for entry, fn, cfg in calls:
                rc = fn(at, cfg, err, _ERRLEN)
                if rc != _OK:
                    raise self.error(rc, err.value.decode(errors="replace"), entry)

        again()
        return again

    def _run_child(self, cfgs: list[tuple[str, np.ndarray]], args: Sequence, arg_names: Sequence[str] | None) -> None:
        with tempfile.TemporaryDirectory(prefix="qd-race-") as tmp:
            inp, outp = Path(tmp) / "in.bin", Path(tmp) / "out.bin"
            with open(inp, "wb") as f:
                f.write(struct.pack("<I", len(args)))
                for a in args:
                    b = a.tobytes() if isinstance(a, np.ndarray) else np.asarray(a).tobytes()
                    f.write(struct.pack("<IQ", 0 if isinstance(a, np.ndarray) else 1, len(b)))
                    f.write(b)
                f.write(struct.pack("<I", len(cfgs)))
                for entry, cfg in cfgs:
                    f.write(struct.pack("<I", self.entries.index(entry)))
                    f.write(cfg.tobytes())
            env = dict(os.environ, TSAN_OPTIONS="halt_on_error=1 exitcode=66 report_signal_unsafe=0 "
                                                "report_thread_leaks=0 " + os.environ.get("TSAN_OPTIONS", ""))
            proc = subprocess.run([str(self.lib_path), str(inp), str(outp)], capture_output=True, text=True, env=env)
            err = proc.stderr
            if "ThreadSanitizer: data race" in err:
                raise RaceError(self.race_message(err, args, arg_names))
            m = re.search(r"^QD_EMU_ERROR (\d+)\n(.*)", err, re.S | re.M)
            if m:
                entry = cfgs[0][0] if len(cfgs) == 1 else "kernel"
                raise self.error(int(m.group(1)), m.group(2).strip(), entry)
            if proc.returncode != 0:
                raise KernelError(f"the race-check run failed (exit status {proc.returncode}):\n{err[-4000:]}")
            data = outp.read_bytes()
            pos = 0
            for a in args:
                if isinstance(a, np.ndarray) and a.nbytes:
                    a.reshape(-1).view(np.uint8)[:] = np.frombuffer(data, np.uint8, a.nbytes, pos)
                    pos += a.nbytes

    def race_message(self, report: str, args: Sequence, arg_names: Sequence[str] | None) -> str:
        """The first TSan report, told in the kernel's terms: which array (element), which
        two Python lines, which GPU threads."""
        ranges = [(int(i), int(b, 16), int(e, 16))
                  for i, b, e in re.findall(r"QD_RACE_ARRAY (\d+) (0x\w+) (0x\w+)", report)]
        shared = re.search(r"QD_RACE_SHARED (0x\w+) (0x\w+)", report)
        names = dict(re.findall(r"Thread (T\d+) '([^']*)'", report))
        body = report[report.index("WARNING: ThreadSanitizer: data race"):]
        accesses = []
        for m in re.finditer(r"^  (Previous )?(atomic )?(read|write) of size (\d+) at (0x\w+) "
                             r"by (thread (T\d+)|main thread)"
                             r"[^\n]*\n((?:    #\d+[^\n]*\n)*)", body, re.M | re.I):
            line = None
            for fm in re.finditer(r"#\d+ \S+ (\S+):(\d+)", m.group(8)):
                if os.path.basename(fm.group(1)) == self.source_name:
                    line = int(fm.group(2))
                    if ".py:" in self.python_location(line):
                        break
            who = names.get(m.group(7) or "", m.group(6))
            accesses.append((f"{m.group(2) or ''}{m.group(3)}".lower(), int(m.group(5), 16), line, who))
        if not accesses:
            return "data race (ThreadSanitizer):\n" + body[:4000]
        what = "memory"
        addr = accesses[0][1]
        for i, b, e in ranges:
            if b <= addr < e:
                a = args[i]
                name = arg_names[i] if arg_names and i < len(arg_names) else f"argument {i}"
                k = (addr - b) // a.itemsize
                idx = np.unravel_index(k, a.shape) if a.ndim > 1 else (k,)
                what = f"`{name}`[{', '.join(str(int(x)) for x in idx)}]"
        if shared and int(shared.group(1), 16) <= addr < int(shared.group(2), 16):
            what = "shared memory"
        parts = []
        for kind, _, line, who in accesses[:2]:
            loc = f"@L{line}@" if line else "an unknown line"
            parts.append(f"{kind} at {loc} by {who}")
        return self.localize(f"data race on {what}: " + "; previous ".join(parts))

    # ------------------------------------------------------------------ diagnostics

    def python_location(self, gen_line: int) -> str:
        """``file.py:LINE`` from the ``// file.py:LINE`` comment on a generated line."""
        lines = self.source.splitlines()
        if 1 <= gen_line <= len(lines):
            m = re.search(r"//\s*([\w.\-]+\.py):(\d+)\s*$", lines[gen_line - 1])
            if m:
                return f"{m.group(1)}:{m.group(2)}"
        return f"{self.source_name}:{gen_line}"

    def _pc_line(self, offset: int) -> int | None:
        """The generated line of a code address in the kernel library (innermost first,
        preferring a frame whose line carries a Python location)."""
        tool = shutil.which("addr2line")
        if tool is None:
            return None
        out = subprocess.run([tool, "-i", "-e", str(self.lib_path), hex(offset)], capture_output=True, text=True)
        found = None
        for row in out.stdout.splitlines():
            m = re.match(r"(.*):(\d+)", row.split(" (discriminator")[0])
            if not m or os.path.basename(m.group(1)) != self.source_name:
                continue
            line = int(m.group(2))
            if ".py:" in self.python_location(line):
                return line
            found = found or line
        return found

    def localize(self, message: str) -> str:
        """The runtime's message with generated lines (``@L<n>@``) and code addresses
        (``@PC<hex>@``) replaced by Python locations, and those Python lines quoted."""
        locs: list[str] = []

        def at_line(line: int) -> str:
            loc = self.python_location(line)
            if loc not in locs:
                locs.append(loc)
            return loc

        def at_pc(m: re.Match[str]) -> str:
            line = self._pc_line(int(m.group(1), 16))
            return f"{self.lib_path.name}+0x{m.group(1)}" if line is None else at_line(line)

        text = re.sub(r"@L(\d+)@", lambda m: at_line(int(m.group(1))), message)
        text = re.sub(r"@PC([0-9a-f]+)@", at_pc, text)
        for loc in locs:
            file, _, line = loc.rpartition(":")
            path = self.python_files.get(file)
            src = linecache.getline(path, int(line)).strip() if path else ""
            if src:
                text += f"\n    {loc}: {src}"
        return text

    def error(self, rc: int, message: str, entry: str) -> KernelError:
        cls = DeadlockError if rc in (_DEADLOCK, _HANG) else KernelError
        return cls(f"{entry}: {self.localize(message)}")


@functools.cache
def _host_cpu() -> str:
    """What -march=native compiles for, part of a plain module's cache key: a cache shared
    between machines (a home directory on NFS, a CI cache) must not hand one CPU's build to
    another that lacks its instructions."""
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        import platform  # noqa: PLC0415 - only where /proc is missing
        return platform.machine() + platform.processor()
    keep = [ln for ln in info.splitlines() if ln.split(":")[0].strip() in ("model name", "flags", "Features")]
    return "\n".join(sorted(set(keep)))


def _dim3(v: int | Sequence[int]) -> tuple[int, int, int]:
    t = (int(v),) if isinstance(v, (int, np.integer)) else tuple(int(x) for x in v)
    if not 1 <= len(t) <= 3:
        raise ValueError(f"a grid or block size has 1 to 3 dimensions, got {v!r}")
    return (t + (1, 1))[:3]


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None)  # loading it builds a class: once, not on every launch


def _flush_c_stdout() -> None:
    sys.stdout.flush()
    _libc().fflush(None)


def emulated_targets() -> list[str]:
    """The targets whose text the emulator runs."""
    return [name for name in names() if get_target(name).emulator_defines is not None]


def emulated(dialect: str) -> Target:
    """The target called ``dialect``, which the emulator must be able to run."""
    if dialect not in emulated_targets():
        raise ValueError(f"dialect must be one of {', '.join(map(repr, emulated_targets()))}, got {dialect!r}")
    return get_target(dialect)


def _defines(dialect: str, wave32: bool, subgroup_size: int | None) -> list[str]:
    target = emulated(dialect)
    warp = target.subgroup_size(_width_options(wave32, subgroup_size))
    return [f"-DQD_EMU_WARP_SIZE={warp}"] + [f"-D{d}" for d in target.emulator_defines]


def kernel_flags(cxx: str, opt: str, defines: list[str], plain: bool = False, trap_overflow: bool = True) -> list[str]:
    """How a kernel (and the header it is precompiled with) is compiled, race checks aside.
    ``plain``: a module of plain tasks (see CpuBackend.load), whose loops over elements are
    left for the compiler to vectorize for this machine. ``trap_overflow=False`` (plain
    modules) drops the signed-overflow trap: a check's branch out of the loop is what keeps
    clang from vectorizing a loop of integer arithmetic (a 2-D stencil's index: 4.2 ms a call
    with it, 1.5 without); an overflow is then undefined, as under NVRTC and hipcc, and
    qd.init(debug=True) reports it as Quadrants does, from checks in the emitted text."""
    flags = _COMMON_FLAGS + [opt, "-fvisibility=hidden", "-w"] + defines
    if not trap_overflow:
        flags = [f for f in flags if f not in _TRAP_OVERFLOW]
    if plain:
        # -ffp-contract=off: no fused multiply-adds the emulator (and NumPy) would not do. The
        # backend's -O2, not -O3: at -O3 the element loop of a struct-for over a vec3 field (a
        # constant range) was no longer vectorized ("cannot identify array bounds").
        flags += ["-march=native", "-ffp-contract=off", "-DQD_EMU_PLAIN"]
    if plain and _clang_major(cxx):
        # A vec3 array's x, y, z of a block's elements as one masked load and shuffles (the
        # last block's elements past the range are masked off), not a gather per component:
        # particles on vec3 arrays, 1M elements, 2 threads here: 3.0 ms gathered, 1.1 scalar.
        flags += ["-mllvm", "-enable-masked-interleaved-mem-accesses=1"]
    if _clang_major(cxx) >= 18 and trap_overflow:  # one trap per check: else clang merges them, and a trap's
        flags += ["-mllvm", "-ubsan-unique-traps"]  # address maps to no line (LLVM 18+)
    return flags


# Before a module with reductions (build_module): an explicit vectorize hint is what lets clang
# reorder a float sum's additions, as Quadrants (fast math) does: a share's partial in the
# order of 8-16 lanes rather than of one (the body's other float arithmetic keeps its order).
# Only the task loop can take it (the other loops tick: a call); a loop an element runs once
# never becomes a loop. kernel_sum over 1M floats, 2 threads here: 0.95 ms a call scalar, 0.074
# vectorized.
_LOOP_HINT = ('#ifdef __clang__\n#undef QD_EMU_LOOP_HINT\n'
              '#define QD_EMU_LOOP_HINT _Pragma("clang loop vectorize(enable)")\n#endif\n')


def build_module(source: str, source_name: str = "kernel.cu", *, dialect: str = "cuda", wave32: bool = False,
                 subgroup_size: int | None = None, entries: Sequence[str] | None = None, compiler: str | None = None,
                 opt: str = "-O2",
                 python_files: dict[str, str] | None = None, race_check: bool = False,
                 plain: bool = False, trap_overflow: bool = True, shares: dict[str, int] | None = None,
                 prefetch: Sequence[str] = ()) -> CpuModule:
    """Compile one generated (or hand-written) CUDA/HIP source for the emulator, cached by
    content. ``entries`` defaults to every ``__global__`` function in the source.
    ``race_check`` builds a ThreadSanitizer executable instead (see the module docstring).
    ``plain``: every entry is a plain task's (see CpuBackend.load), run as a loop over its
    elements (qd_simt.h, QD_EMU_PLAIN), launched with a grid that covers its range;
    ``trap_overflow`` (see kernel_flags) applies to those; ``shares`` names the entries among
    them that are reductions (entry -> qd_simt.h PlainOp, see _reduction_op), each run once
    per OS thread's share; ``prefetch`` those whose atomics run after a prefetch pass (see
    _prefetchable)."""
    plan = _plan(source, source_name, dialect, wave32, subgroup_size, entries, compiler, opt, race_check, plain,
                 trap_overflow, shares, prefetch)
    lib = plan.final / plan.out_name
    cached = lib.exists()
    if cached:
        cache.touch(plan.final)
    else:
        # The header first: its build takes a lock of its own, which may be this one's stripe.
        pch = None if race_check else precompiled_header(plan.cxx, plan.flags)
        with build_lock(plan.final):
            cached = lib.exists()  # another process built it while this one waited
            if not cached:
                with building(plan.final, "k-") as tmp:
                    _compile_and_link(plan, source, source_name, tmp, pch, race_check)
    return plan.module(source, source_name, dialect, python_files, race_check, cached, plain and not race_check)


def is_built(source: str, source_name: str, **options: object) -> bool:
    """Whether build_module(source, source_name, **options) would find its module in the cache."""
    plan = _plan(source, source_name, options.get("dialect", "cuda"), options.get("wave32", False),
                 options.get("subgroup_size"), options.get("entries"), options.get("compiler"),
                 options.get("opt", "-O2"), options.get("race_check", False), options.get("plain", False),
                 options.get("trap_overflow", True), options.get("shares"), options.get("prefetch", ()))
    return (plan.final / plan.out_name).exists()


def light_module(source: str, source_name: str, *, dialect: str = "cuda", wave32: bool = False,
                 subgroup_size: int | None = None, entries: Sequence[str] | None = None, compiler: str | None = None,
                 python_files: dict[str, str] | None = None, shares: dict[str, int] | None = None,
                 prefetch: Sequence[str] = ()) -> CpuModule | None:
    """A plain module's light build (see first_build: -O0 in a clang started ahead, linked by
    ld.lld directly), cached as a full build is, under a key of its own. None where it cannot
    be made so (a compiler other than clang, no ld.lld beside it, no precompiled header) or
    its build failed: the full build then reports what is wrong."""
    plan = _plan(source, source_name, dialect, wave32, subgroup_size, entries, compiler, first_build.LIGHT_OPT,
                 False, True, False, shares, prefetch, light=True)
    cached = (plan.final / plan.out_name).exists()
    if cached:
        cache.touch(plan.final)
        return plan.module(source, source_name, dialect, python_files, False, True, True)
    spares = light_spares(plan.cxx, plan.flags)
    if spares is None:
        return None
    spare = first_build.take(*spares)
    try:
        failed = spare.build(source_name, source, plan.wrapper)
    except OSError as exc:
        failed = str(exc)
    if failed:
        spare.close()
        return None
    if first_build.install(spare.folder, plan.final):
        cache.added("cpu", str(plan.final.parent), plan.final.name, cache.tree_size(plan.final))
    return plan.module(source, source_name, dialect, python_files, False, False, True)


def light_spares(cxx: str, flags: list[str],
                 build: bool = True) -> tuple[tuple, Callable[[], first_build.Spare]] | None:
    """The key and maker of the spare compiler and linker (first_build.Spare) of a light build
    with ``flags``; None where there can be none (see light_module), or (``build=False``) the
    precompiled header is not built yet."""
    lld = _lld(cxx)
    pch = precompiled_header(cxx, flags, build) if lld else None
    if pch is None:
        return None
    rt = runtime_library(cxx)
    compile_cmd = [cxx, *flags, "-include-pch", str(pch), f"-I{HERE}"]
    # --eh-frame-hdr, as the driver passes it; no crt files or libraries: the kernel's few
    # outside names (libm's, the runtime's) come with the runtime library, which needs them.
    link_cmd = [lld, "-shared", "--eh-frame-hdr", str(rt), "-rpath", str(rt.parent)]
    key = (cxx, *flags, str(pch), str(rt))
    return key, functools.partial(first_build.Spare, cache_root(), compile_cmd, link_cmd)


def _prepare_light(cxx: str, flags: list[str], build: bool = True) -> bool:
    """Start a light build's spares, unless the precompiled header is to be built and
    ``build`` is False; whether they are started (or there can be none)."""
    try:
        spares = light_spares(cxx, flags, build)
        if spares is not None:
            first_build.prepare(*spares)
        return spares is not None or _lld(cxx) is None
    except Exception:  # noqa: BLE001 - only a head start: the build itself reports what is wrong
        return True


def _rebuild(cxx: str, light_flags: list[str], full: Callable[[], CpuModule]) -> CpuModule:
    """A light module's optimised build (first_build.Rebuild), after starting the spares of
    the next light build."""
    _prepare_light(cxx, light_flags)
    return full()


@record
class _Plan:
    """How one module is built (build_module, light_module) and where it is kept."""

    cxx: str
    warp: int
    names: list[str]
    flags: list[str]
    wrapper: str
    rt: Path
    final: Path
    out_name: str

    def module(self, source: str, source_name: str, dialect: str, python_files: dict[str, str] | None,
               race_check: bool, cached: bool, plain: bool) -> CpuModule:
        return CpuModule(source_name, source, dialect, self.warp, self.names, self.final / self.out_name, self.final,
                         dict(python_files or {}), race_check, cached, plain)


def _plan(source: str, source_name: str, dialect: str, wave32: bool, subgroup_size: int | None,
          entries: Sequence[str] | None, compiler: str | None, opt: str, race_check: bool, plain: bool,
          trap_overflow: bool, shares: dict[str, int] | None, prefetch: Sequence[str] = (),
          light: bool = False) -> _Plan:
    """See build_module; ``light``: a light build's (light_module), whose key differs."""
    target = emulated(dialect)
    cxx = find_compiler(compiler, race_check)
    warp = target.subgroup_size(_width_options(wave32, subgroup_size))
    names = list(entries) if entries is not None else _ENTRY_RE.findall(source)
    defines = _defines(dialect, wave32, subgroup_size)
    shares = shares if plain and shares and not race_check else {}
    prefetch = set(prefetch) if plain and not race_check else set()
    wrapper = f'#include "qd_simt.h"\n{_LOOP_HINT if shares else ""}#include "{source_name}"\n' + "".join(
        f"QD_EMU_SHARE_ENTRY({n}, {shares[n]})\n" if n in shares else
        f"QD_EMU_PREFETCH_ENTRY({n})\n" if n in prefetch else f"QD_EMU_ENTRY({n})\n" for n in names)
    if race_check:
        # -O1: TSan reports stay close to the source; seq_cst atomics: a GPU's fence + atomic
        # publication is a happens-before edge TSan can see (it does not model fences).
        flags = _COMMON_FLAGS + ["-O1", "-fsanitize=thread", "-w", "-DQD_EMU_TSAN",
                                 "-DQD_EMU_ATOMIC_ORDER=__ATOMIC_SEQ_CST"] + defines
        rt = runtime_object(cxx)
        wrapper += ('extern "C" { extern qd_entry_fn_t const qd_race_entries[] = {'
                    + ", ".join(f"qd_launch_{n}" for n in names)
                    + f"}}; extern const int qd_race_nentries = {len(names)}; }}\n")
        wrapper = wrapper.replace('#include "qd_simt.h"\n', '#include "qd_simt.h"\n'
                                  'typedef int (*qd_entry_fn_t)(void**, const long long*, char*, int);\n', 1)
        out_name = "race"
    else:
        flags = kernel_flags(cxx, opt, defines, plain, trap_overflow or not plain)
        rt = runtime_library(cxx)
        out_name = "kernel.so"
    folder = "kl" if light else "k"
    key = digest(folder, source, source_name, wrapper, _text(HEADER), compiler_id(cxx), " ".join(flags), str(rt),
                 _host_cpu() if plain else "",
                  _text(DRIVER_SRC) if race_check else "")
    return _Plan(cxx, warp, names, flags, wrapper, rt, cache_root() / f"{folder}-{key}", out_name)


def _compile_and_link(plan: _Plan, source: str, source_name: str, tmp: Path, pch: Path | None,
                      race_check: bool) -> None:
    cxx, flags, rt = plan.cxx, plan.flags, plan.rt
    (tmp / source_name).write_text(source)
    (tmp / "wrapper.cpp").write_text(plan.wrapper)
    if race_check:
        cmd = [cxx, *flags, f"-I{HERE}", str(tmp / "wrapper.cpp"), str(DRIVER_SRC), str(rt), "-o",
               str(tmp / plan.out_name), "-ldl"]
    else:
        cmd = [cxx, *flags, *(["-include-pch", str(pch)] if pch else []), "-shared",
               *link_flags(cxx), f"-I{HERE}", str(tmp / "wrapper.cpp"), "-o", str(tmp / plan.out_name),
               str(rt), f"-Wl,-rpath,{rt.parent}"]
    _run_compiler(cmd, source_name)


# ----------------------------------------------------------------------------- the backend

@record
class CpuProgram:
    module: CpuModule
    manifest: dict
    entries: dict[str, dict]          # entry name -> its manifest entry
    cappable: dict[str, bool]         # entry name -> grid may shrink without changing results
    splittable: dict[str, bool]       # entry name -> and its blocks may run on several OS threads at once
    direct: dict[str, bool]           # entry name -> and its threads one after another, without fibers
    runs: int = 0                     # launches so far: what a replay token names
    again: Callable[[], None] | None = None  # runs the last launches again (see replay)
    rebuild: first_build.Rebuild | None = None  # module's optimised build, while it is a light one
    build_later: tuple | None = None  # that build and what follows it, until the second call starts them

    def swap(self) -> None:
        """The optimised module in place of the light one, once its build is done (between
        launches: none is running)."""
        rebuild = self.rebuild
        if rebuild is not None and rebuild.done:
            self.rebuild = None
            if rebuild.module is not None:
                self.module, self.again = rebuild.module, None


# Node types whose meaning does not depend on which thread or block runs an iteration: a task
# made of these alone computes the same for any grid, so the CPU may run fewer blocks.
_GRID_FREE_STMTS = (ir.Declare, ir.Assign, ir.Store, ir.ExprStmt, ir.If, ir.For, ir.While, ir.Break, ir.Continue,
                    ir.Return, ir.Note)
_GRID_FREE_EXPRS = (ir.Const, ir.LocalRef, ir.ParamRef, ir.Shape, ir.Load, ir.BinOp, ir.Compare, ir.Logical,
                    ir.Unary, ir.Cast, ir.Select, ir.Math, ir.Atomic, ir.Call)


def _grid_free(kernel: ir.Kernel, task: ir.Task) -> bool:
    """Thread and block indices, shared arrays and collectives make the grid show (in the
    task's body or a function it calls). The epilogue does not: it is a reduction's block fold
    and one atomic per block (frontend/kernel_scope.py), the same total on any grid."""
    code = task.body + [st for f in called_by(kernel, task.body) for st in f.body]
    return all(isinstance(st, _GRID_FREE_STMTS) and not _in_shared(st) for st in all_stmts(code)) \
        and all(isinstance(e, _GRID_FREE_EXPRS) and not _in_shared(e) for e in all_exprs(code))


def _in_shared(node: ir.Expr | ir.Stmt) -> bool:
    return isinstance(node, (ir.Store, ir.Load, ir.Atomic)) and isinstance(node.array, ir.SharedArray)


def _runs_direct(task: ir.Task) -> bool:
    """A grid-free task none of whose threads can wait for another, so its threads may run to
    their ends one after another, without fibers: no `while` (a spin on a value another
    thread writes; a counted loop ends whatever the others do), no atomic (the emulator runs
    a warp's atomics in lockstep, a collective of its lanes, as a GPU's converged warp does)
    and no call of a real function (a fiber's stack is a GPU thread's, small; a recursion
    deep enough to overflow it is reported, which the OS thread's own stack would hide)."""
    return not any(isinstance(st, ir.While) for st in all_stmts(task.body)) and \
        not any(isinstance(e, (ir.Atomic, ir.Call)) for e in all_exprs(task.body))


def _plain(kernel: ir.Kernel, task: ir.Task, warp: int = 32) -> bool:
    """A task that runs as a plain loop over its elements (qd_simt.h, QD_EMU_PLAIN), on as
    many OS threads as pay, vectorized where the compiler can: a grid-free task (no thread
    index, shared array, barrier or collective, in its body or a function it calls): serial,
    or parallel with no epilogue or a reduction's of one operation (see _reduction_op), a
    range the host knows (the grid covers it: one element per GPU thread), no call of a real
    function (see _runs_direct) and no `while` beside an atomic (a spin on what another
    element does: the elements of an OS thread's share run one after another, so one may
    wait for a later one forever)."""
    if task.dynamic or not _grid_free(kernel, task):
        return False
    if (task.shared or task.epilogue) and _reduction_op(task, warp) is None:
        return False
    exprs = list(all_exprs(task.body))
    if any(isinstance(e, ir.Call) for e in exprs):
        return False
    return not (any(isinstance(st, ir.While) for st in all_stmts(task.body))
                and any(isinstance(e, ir.Atomic) for e in exprs))


# What a task that runs with prefetch passes may hold (see _prefetchable): no store to memory,
# print or call; an atomic only as a statement of its own (its result unused).
_PREFETCH_STMTS = (ir.Declare, ir.Assign, ir.ExprStmt, ir.If, ir.For, ir.Break, ir.Continue, ir.Return, ir.Note)


def _prefetchable(task: ir.Task) -> bool:
    """A plain task (no reduction's share) whose writes to memory are all atomics whose results
    it never reads, none to an array it reads: its atomics then run after a prefetch pass over
    each chunk of a block's elements (qd_simt.h, run_plain), in which every atomic only
    prefetches its element, so that the random misses of a scatter `y[idx[i]] += x[i]` overlap
    (each locked update otherwise waits for its own). The pass so reads what the real one
    reads (no array it reads changes in between: no fault or address of its own) and writes
    nothing (debug mode's checks store and print: no such task). 1M random f32 `+=`, 2 threads
    here, ms per call (median, a busy machine): 4.7 without, 4.1 with."""
    if task.epilogue or task.shared:
        return False
    stmts = list(all_stmts(task.body))
    if not all(isinstance(st, _PREFETCH_STMTS) for st in stmts):
        return False
    atomics = [e for e in all_exprs(task.body) if isinstance(e, ir.Atomic)]
    alone = {id(st.expr) for st in stmts if isinstance(st, ir.ExprStmt) and isinstance(st.expr, ir.Atomic)}
    written = {a.array.name for a in atomics}
    read = {e.array.name for e in all_exprs(task.body) if isinstance(e, ir.Load)}
    return bool(atomics) and all(id(a) in alone for a in atomics) and not written & read


# The reductions a plain module runs once per OS thread's share, as qd_simt.h's PlainOp.
_PLAIN_OPS = {"add": 0, "min": 1, "max": 2, "and": 3, "or": 4, "xor": 5}


def _reduction_op(task: ir.Task, warp: int = 32) -> int | None:
    """The PlainOp a parallel task's epilogue folds (frontend/kernel_scope.py: a block fold
    and one atomic per block, the one operation of all its atomics), for a plain module to
    run the task once per OS thread's share, lane 0 alone, the other lanes the operation's
    identity (qd_simt.h, run_share). None for a task without one or with several, or whose
    block has more subgroups of ``warp`` lanes than a subgroup has lanes: lane 0 then also
    reads the slots other subgroups publish (lang/blocklib.py, _block_fold), which a lone
    thread never writes."""
    if task.kind != "parallel" or not task.epilogue or -(-task.block_dim // warp) > warp:
        return None
    ops = {e.op for e in all_exprs(task.epilogue) if isinstance(e, ir.Atomic)}
    return _PLAIN_OPS.get(ops.pop()) if len(ops) == 1 else None


# A grid-free task whose epilogue folds a reduction per block runs on one OS thread (see load),
# its blocks one after another, each paying for its fold (a barrier and shuffles across 128
# fibers, about 80 us here) whatever its share of the loop: so on few blocks, an odd number
# (see thread_iterations). `s[None] += x[i]`, ms per call here, 1M / 4M elements: 511 blocks
# 42 / -, 65 blocks 9.6 / -, 9 blocks 4.9 / 24.7, 5 blocks 5.0 / -, 1 block 5.2 / 19.5.
FOLDING_BLOCKS = 5

# A grid-free task is split among OS threads, each taking at least this many iterations:
# handing a share to a helper thread (kept between launches, see qd_simt_rt.cpp) costs 15-20
# us here. saxpy, ms per call on 1 / 2 threads: 32K 0.057 / 0.056, 64K 0.099 / 0.073, 128K
# 0.20 / 0.12, 1M 1.61 / 0.86, 4M 6.1 / 3.4; a body of 200 sin() calls per element (compute,
# not memory, bound) 1.97x faster on 2. A machine with many cores so starts no more threads
# than pay for themselves.
ITERATIONS_PER_THREAD = 1 << 15


def _iterations(kernel: ir.Kernel, task: ir.Task, values: dict[str, object]) -> int:
    """The elements of a task whose range the host knows (plan_launches's count)."""
    scalars = {p.name: values[p.name].item() for p in kernel.params if not p.is_array}
    shapes = {p.name: values[p.name].shape for p in kernel.params if p.is_array}
    env = uniform_env(task)
    total = 1
    for begin, end in task.ranges:
        total *= max(0, evaluate(end, scalars, shapes, env) - evaluate(begin, scalars, shapes, env))
    return total


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _width_options(wave32: bool, subgroup_size: int | None) -> dict:
    return {"wave32": wave32, **({"emulated_subgroup_size": subgroup_size} if subgroup_size else {})}


class CpuBackend(Backend):
    """``qd.init(arch="cpu")``: the CUDA text (``dialect="hip"``: the HIP text, wave64 unless
    ``wave32=True``) compiled for the host and run by the SIMT emulator.
    ``subgroup_size`` (CUDA text: 4, 8, 16; default 32) runs a narrower warp than any NVIDIA
    GPU's, to test width-generic code at the widths of other devices.

    Options: ``watchdog_s`` (how long a loop may spin with nothing else happening before it
    is reported as a hang), ``race_check`` (ThreadSanitizer in a child process),
    ``compiler`` (host C++ compiler), ``opt`` (optimization flag), ``poison_shared`` (fill
    shared memory with NaN/INT_MAX patterns at block start), ``thread_iterations`` (a task
    whose result cannot depend on the grid but whose threads run as fibers runs on fewer
    blocks, each thread looping about this many times, on an odd number of blocks: a fiber
    per element costs more than the element (a task whose threads run directly keeps its
    grid, one element per thread, in order); a thread's elements lie a grid stride apart,
    and its strided lines stay in cache for the next threads, which read the same lines,
    only while a thread has few of them and the stride is no power of two (those all fall
    in the same cache sets). saxpy on 1M elements as fibers, ms per call here: 8192 blocks
    (one iteration each) 6.7, 2048 (4) 2.6, 1024 (8) 3.4, 512 (16) 5.3, 511 (16) 1.7, 64
    (128) 6.6; 4M: 512 blocks 23.9, 511 6.9),
    ``max_blocks`` (and at most this many blocks for such a task; 0: no cap), ``workers``
    (OS threads that split the blocks of such a task, each taking at least
    ``ITERATIONS_PER_THREAD`` iterations; default: the CPUs this process may use; 1: every
    launch on the calling thread, blocks in index order), ``plain`` (False: every task on the
    emulator, none as a plain loop over its elements; see _plain), ``light_first`` (False: a
    new plain kernel's first call waits for its optimised build rather than running a light
    one meanwhile; see first_build)."""

    name = "cpu"
    host_memory_kernels = True  # NumPy arguments are passed in place: small ones get red zones

    @property
    def clock_freq_hz(self) -> float | None:
        """The rate clock64() counts at here: nanoseconds of the thread's own running time (see
        qd_simt_rt.cpp). Not of the HIP text: Quadrants has clock_freq_hz() on CUDA alone."""
        return None if "QD_EMU_HIP" in emulated(self.dialect).emulator_defines else 1e9

    def __init__(self, dialect: str = "cuda", wave32: bool = False, race_check: bool = False,
                 watchdog_s: float = 10.0, compiler: str | None = None, opt: str = "-O2",
                 poison_shared: bool = True, thread_iterations: int = 16, max_blocks: int = 0,
                 subgroup_size: int | None = None, workers: int | None = None, plain: bool = True,
                 light_first: bool = True):
        try:
            emulated(dialect)
        except ValueError as exc:
            raise ValueError(f"qd.init(arch='cpu'): {exc}") from None
        self.dialect = self.target = dialect
        self.wave32 = bool(wave32)
        self.width = subgroup_size
        if subgroup_size is not None and emulated(dialect).subgroup_size(self.translate_options()) != subgroup_size:
            raise ValueError(f"qd.init(arch='cpu', subgroup_size={subgroup_size}): the {dialect} text cannot be "
                             "specialized to that width (the CUDA text narrows to 4, 8 or 16 lanes; the HIP "
                             "text picks its wavefront with wave32=True)")
        self.race_check = bool(race_check)
        self.watchdog_s = float(watchdog_s)
        self.compiler = find_compiler(compiler, race_check)
        self.opt = opt
        self.poison_shared = bool(poison_shared)
        self.thread_iterations = max(1, int(thread_iterations))
        self.max_blocks = int(max_blocks)
        self.workers = max(1, int(workers) if workers is not None else _usable_cpus())
        self.plain = bool(plain)
        self.light_first = bool(light_first)
        self._defines = _defines(dialect, self.wave32, self.width)
        self._warm_up: Callable[[], None] | None = None
        if not self.race_check:
            # What a first kernel call would otherwise pay first: a light build's compiler and
            # linker, started now (a millisecond here) where the header is built, else on a
            # thread that builds it first, so that they load while the translator's imports run
            # (next); the warm-up's translations and precompiled headers (see warm_up) once the
            # first build is done (started here, its translations took the interpreter from a
            # first call that came at once: 15-20 ms of it).
            defines = self._defines
            cxx = self.compiler
            if self.plain and self.light_first:
                light = kernel_flags(cxx, first_build.LIGHT_OPT, defines, True, False)
                if not _prepare_light(cxx, light, build=False):
                    threading.Thread(target=_prepare_light, args=(cxx, light), daemon=True,
                                     name="qd-cpu-spares").start()
            with contextlib.suppress(Exception):  # (what fails here fails in the first call, with its message)
                warm_up.imports(dialect)  # the first call's translation is then 2-6 ms, not ~50
            plain_flags = kernel_flags(cxx, opt, defines, True, False)
            self._warm_up = functools.partial(warm_up.start, dialect, lambda: [
                precompiled_header(cxx, flags) for flags in (plain_flags, kernel_flags(cxx, opt, defines))])
        # A range read on the device: blocks run one after another here, so few, but enough that
        # a thread's strided lines stay in cache for the next (see thread_iterations): saxpy over
        # a device-read count, ms per call here, 8 blocks: 1K 0.072, 64K 0.41, 1M 10.8, 4M 62;
        # 65 blocks: 0.075, 0.17, 2.1, 46.
        self.dynamic_blocks = 65

    def translate_options(self) -> dict:
        return _width_options(self.wave32, self.width)

    def load(self, tr: Translation) -> CpuProgram:
        kernel, manifest = tr.ir, tr.manifest
        (name, text), = tr.sources.items()
        entries = entries_by_task(kernel, manifest)
        pyfiles = {os.path.basename(kernel.file): kernel.file}
        # One TU, one mode: a kernel whose tasks are all plain is compiled as a plain module;
        # one with any other task keeps the emulator for all (its plain tasks run directly).
        warp = emulated(self.dialect).subgroup_size(self.translate_options())
        plain = not self.race_check and self.plain and all(_plain(kernel, t, warp) for t in kernel.tasks)
        ops = {entries[t.name]["name"]: _reduction_op(t, warp) for t in kernel.tasks} if plain else {}
        shares = {name: op for name, op in ops.items() if op is not None}
        prefetch = [entries[t.name]["name"] for t in kernel.tasks if plain and _prefetchable(t)]
        later = None  # the optimised build, begun once the first launch is done (see run)
        with profile.stage("build") as note:
            where = dict(dialect=self.dialect, wave32=self.wave32, subgroup_size=self.width,
                         entries=[e["name"] for e in entries.values()], compiler=self.compiler, shares=shares,
                         prefetch=prefetch)
            full = functools.partial(build_module, text, name, opt=self.opt, python_files=pyfiles,
                                     race_check=self.race_check, plain=plain, trap_overflow=False, **where)
            module = None
            # Not a module with reductions: its optimised build adds a float sum's elements in
            # vector lanes (see _LOOP_HINT), the light one in order, and later calls must see
            # what the first saw.
            if plain and self.light_first and not shares and \
                    not is_built(text, name, opt=self.opt, plain=True, trap_overflow=False, **where):
                module = light_module(text, name, python_files=pyfiles, **where)
                if module is not None:
                    light = kernel_flags(self.compiler, first_build.LIGHT_OPT, self._defines, True, False)
                    later = (functools.partial(_rebuild, self.compiler, light, full), self._warm_up)
                    self._warm_up = None  # (started by that build, when it is done)
            if module is None:
                module = full()
            note.append(("cached" if module.was_cached else "compiled") + (" light" if later else ""))
        if self._warm_up is not None:
            self._warm_up, start = None, self._warm_up
            start()
        cappable = {t.name: t.kind == "parallel" and _grid_free(kernel, t) for t in kernel.tasks}
        # A reduction's epilogue keeps a grid-free task's blocks in one OS thread: its shared
        # array is one buffer of the module, which blocks on two threads would both write.
        splittable = {t.name: cappable[t.name] and not t.shared and not t.epilogue for t in kernel.tasks}
        direct = {t.name: splittable[t.name] and not self.race_check and _runs_direct(t) for t in kernel.tasks}
        return CpuProgram(module, manifest, entries, cappable, splittable, direct, build_later=later)

    def arguments(self, program: CpuProgram, values: dict[str, object]) -> tuple[list, list[str]]:
        """The entry points' argument list in manifest order (arrays, their shapes as i32,
        scalars), and a name for each argument (for race reports)."""
        args: list = []
        names: list[str] = []
        for p in program.manifest["params"]:
            v = values[p["name"]]
            args.append(v)
            names.append(p["name"])
            if p["kind"] == "ndarray":  # the passed extents: a field's and a vector element's are constants
                passed = len(p["shape_arg_indices"])
                args.extend(np.int32(s) for s in v.shape[:passed])
                names.extend(f"{p['name']}.shape[{d}]" for d in range(passed))
        return args, names

    def run(self, program: CpuProgram, kernel: ir.Kernel, values: dict[str, object], launches: list[Launch]) -> None:
        program.swap()
        args, names = self.arguments(program, values)
        todo = []
        for launch in launches:
            if launch.blocks <= 0:
                continue
            entry = program.entries[launch.task.name]
            if program.module.plain:
                todo.append(self._plain_launch(kernel, launch, entry, values))
                continue
            blocks, workers = launch.blocks, 1
            direct = program.direct.get(launch.task.name, False)
            if program.cappable.get(launch.task.name):
                if not direct:  # a fiber per thread costs more than an element: fewer, longer threads
                    blocks = -(-blocks // self.thread_iterations)
                if not program.splittable[launch.task.name]:
                    blocks = min(blocks, FOLDING_BLOCKS)
                if self.max_blocks > 0:
                    blocks = min(blocks, self.max_blocks)
                if blocks % 2 == 0 and not direct:  # see thread_iterations: an odd grid, whose stride
                    blocks -= 1                       # is no power of two
                iterations = launch.blocks * entry["block_dim"]
                if iterations >= 2 * ITERATIONS_PER_THREAD and program.splittable[launch.task.name]:
                    workers = min(self.workers, blocks, iterations // ITERATIONS_PER_THREAD)
            todo.append((entry["name"], blocks, entry["block_dim"], workers, direct))
        program.again = None  # the last run's launches, replayable only once they completed
        try:
            again = program.module.launch_many(todo, args, watchdog_s=self.watchdog_s,
                                               poison_shared=self.poison_shared, arg_names=names)
        finally:
            _flush_c_stdout()  # what the kernel printed (printf) comes before what Python prints next
            self._start_rebuild(program)
        program.runs += 1
        program.again = again

    def _plain_launch(self, kernel: ir.Kernel, launch: Launch, entry: dict, values: dict[str, object]) -> tuple:
        """A plain task's launch: a grid of one GPU thread per element (MAX_BLOCKS capped
        the planned one, whose threads would each have looped), its blocks split among the
        OS threads in contiguous shares of at least ITERATIONS_PER_THREAD elements."""
        blocks, dim = launch.blocks, entry["block_dim"]
        if blocks >= MAX_BLOCKS:
            blocks = -(-_iterations(kernel, launch.task, values) // dim)
        workers = max(1, min(self.workers, blocks * dim // ITERATIONS_PER_THREAD))
        return entry["name"], blocks, dim, workers, True

    def replay_token(self, program: CpuProgram) -> object | None:
        # Arguments are host memory the kernel reads and writes in place: the same arrays and
        # scalars make the same launches.
        return program.runs if program.again is not None else None

    def replay(self, program: CpuProgram, token: object) -> bool:
        if program.runs != token or program.again is None or (program.rebuild and program.rebuild.done):
            return False  # (the last: run swaps the optimised module in)
        try:
            program.again()
        finally:
            _flush_c_stdout()
            self._start_rebuild(program)
        return True

    @staticmethod
    def _start_rebuild(program: CpuProgram) -> None:
        """At a light module's second call, after its launch, its optimised build (first_build.
        Rebuild): a kernel called once (most of a test suite's: building both doubled its CPU
        time) never pays for it, and a thread's start takes the interpreter a while (a switch
        interval), which no call waits for."""
        if program.build_later is not None and program.runs >= 1:
            program.rebuild, program.build_later = first_build.Rebuild(*program.build_later), None

"""The caches the package keeps on disk, in one place: where each lives, how big it may grow,
and how it sheds what was least recently used.

  cpu      the CPU emulator's builds: each kernel's library, the SIMT runtime, the
           precompiled header, the in-process glslang (runtime/cpu_emulator, spirv_compiler)
  spirv    the Vulkan runtime's SPIR-V, by the hash of its GLSL (runtime/vulkan.py)
  offline  Quadrants' offline cache: what a kernel translates to (offline_cache.py)
  jinja    Jinja2's compiled templates (targets/templates.py): one file per template,
           rewritten in place when the template changes, so its templates bound it

Each under ``$QD_CACHE_DIR``, else ``$XDG_CACHE_HOME/transpiler`` (``~/.cache/transpiler``),
else (a read-only home) a folder of the temp directory; the CPU builds under
``$QD_CPU_CACHE`` and the offline cache under ``offline_cache_file_path`` where those are given.

Cleaning follows Quadrants' ``qd.init`` options, or their ``QD_...`` environment variables
when an argument does not say (``QD_OFFLINE_CACHE_CLEANING_POLICY`` ...):
``offline_cache_cleaning_policy`` is one of
  never    nothing is ever removed
  version  a cache another version of the package wrote (its stamp says) is emptied; no bound
  lru      that, and a cache over its bound loses its least recently used entries (default)
  fifo     that, and it loses its oldest entries: a hit does not count as a use
``offline_cache_max_size_of_files`` (bytes) bounds each cache (unless given, each its own:
DEFAULT_BOUNDS), and ``offline_cache_cleaning_factor`` (default 0.25) is the share of the bound
freed at once, so that a cache is scanned once per that much written rather than on every write.

What the hot paths pay: a hit touches its entry (one ``utime``); a write appends its size to
the cache's ``.usage`` ledger and sums the ledger; only a sum over the bound (or no ledger)
scans the folder, evicting down to the bound less the factor and rewriting the ledger."""
from __future__ import annotations

import os
import time

from .ir.records import record
from .version import __version__

MB = 1 << 20
POLICIES = ("never", "version", "lru", "fifo")
FORMAT = 1  # bumped when what a cache's folder holds changes: the `version` policy empties it then
LEDGER, STAMP, LOCKS = ".usage", ".version", "locks"
# A `.tmp` entry is a write or build in progress (another process's, perhaps) for this long,
# and a crashed one's leftover after it: eviction leaves the first alone and takes the second.
IN_PROGRESS_S = 600.0
# A pinned entry (see Kind) used this recently is in use: a build may be reading it.
IN_USE_S = 60.0


@record(frozen=True)
class Kind:
    name: str
    what: str
    depth: int         # 1: the entries are the folder's items; 2: its sub-folders' (the offline cache's xx/NAME)
    bound: int | None  # bytes, unless qd.init says; None: bounded by what it holds, never evicted
    env: str | None    # an environment variable that names its folder
    # Prefixes of entries that others use while they are built, not only when they are found
    # (every kernel library links the SIMT runtime, rt-*, and includes the precompiled header,
    # pch-*): evicted only IN_USE_S after their last use, so that a build never loses them midway.
    pinned: tuple[str, ...] = ()


# The default bounds. CPU builds: one run of the test suite builds about 1,600 kernels, 225 MB
# (80 KB apiece, and a 4 MB precompiled header per compiler, header and flags): a bound below
# what one run uses would rebuild every kernel on every run (LRU over a cycle larger than the
# cache hits nothing), so it holds about two such runs. The others, Quadrants' 100 MB (SPIR-V
# 12 KB a shader, translations 10 KB a kernel: 8,000 or more entries).
KINDS = {k.name: k for k in (
    Kind("cpu", "CPU emulator builds", 1, 512 * MB, "QD_CPU_CACHE", ("rt-", "pch-")),
    Kind("spirv", "Vulkan SPIR-V", 1, 100 * MB, None),
    Kind("offline", "offline cache (translations)", 2, 100 * MB, "QD_OFFLINE_CACHE_FILE_PATH"),
    Kind("jinja", "Jinja2 compiled templates", 1, None, None),
    Kind("vulkan", "Vulkan devices made before (qd.init makes such a device beside)", 1, None, None),
)}


# ----------------------------------------------------------------------------- where

def root() -> str:
    """``$QD_CACHE_DIR``, else ``$XDG_CACHE_HOME/transpiler``, else ``~/.cache/transpiler``;
    where the default cannot be written (a read-only home, as in some CI sandboxes), a
    per-user folder of the temp directory."""
    given = os.environ.get("QD_CACHE_DIR")
    if given:
        return given
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "transpiler")
    try:
        os.makedirs(path, exist_ok=True)
        if os.access(path, os.W_OK):
            return path
    except OSError:
        pass
    import tempfile  # noqa: PLC0415 - only here: emit, which reaches this module, pays for no temp folder

    return os.path.join(tempfile.gettempdir(), f"transpiler-cache-{os.getuid()}")


def directory(kind: str) -> str:
    """The folder of the cache ``kind`` (created by whoever first writes to it)."""
    k = KINDS[kind]
    return (os.environ.get(k.env) if k.env else None) or os.path.join(root(), kind)


# ----------------------------------------------------------------------------- the policy

@record
class Settings:
    policy: str = "lru"
    max_bytes: int | None = None  # None: each cache's own bound
    factor: float = 0.25


_settings = Settings()
_checked: set[str] = set()  # the folders whose version stamp this process has read


def configure(policy: str | None = None, max_bytes: int | None = None, factor: float | None = None) -> None:
    """qd.init's cleaning options; one not given comes from its ``QD_`` environment variable
    (as Quadrants reads them), else the default. A bad value is a ValueError naming the choices."""
    global _settings
    env = os.environ.get
    policy = policy if policy is not None else env("QD_OFFLINE_CACHE_CLEANING_POLICY") or "lru"
    if policy not in POLICIES:
        raise ValueError(f"offline_cache_cleaning_policy {policy!r} is not one of {', '.join(POLICIES)}")
    size = max_bytes if max_bytes is not None else env("QD_OFFLINE_CACHE_MAX_SIZE_OF_FILES")
    share = factor if factor is not None else env("QD_OFFLINE_CACHE_CLEANING_FACTOR") or 0.25
    try:
        size = None if size in (None, "") else int(size)
        share = float(share)
    except ValueError:
        raise ValueError(f"offline_cache_max_size_of_files takes a number of bytes and offline_cache_cleaning_"
                         f"factor a number in [0, 1]; got {size!r} and {share!r}") from None
    if (size is not None and size < 0) or not 0.0 <= share <= 1.0:
        raise ValueError(f"offline_cache_max_size_of_files must be >= 0 bytes (got {size}) and "
                         f"offline_cache_cleaning_factor in [0, 1] (got {share})")
    _settings = Settings(policy, size, share)
    _checked.clear()  # a new policy reads the stamps again


try:  # the environment's settings, for a process that never calls qd.init (the CLI, a build script)
    configure()
except ValueError:  # a bad QD_OFFLINE_CACHE_... value: the defaults here, the ValueError from qd.init
    pass


def settings() -> Settings:
    """The policy, bound and factor in force (qd.init's, else the environment's)."""
    return _settings


def bound(kind: str) -> int | None:
    """The bytes the cache ``kind`` may hold under the current policy; None: no bound."""
    if _settings.policy not in ("lru", "fifo") or KINDS[kind].bound is None:
        return None
    return KINDS[kind].bound if _settings.max_bytes is None else _settings.max_bytes


# ----------------------------------------------------------------------------- the hot paths

def touch(path: str | os.PathLike) -> None:
    """A hit on the entry at ``path``: now its most recently used (not under ``fifo``, where
    an entry's time stays its creation's)."""
    if _settings.policy != "fifo":
        try:
            os.utime(path)
        except OSError:  # gone meanwhile, or a read-only cache: its order only
            pass


def added(kind: str, folder: str, name: str, size: int) -> None:
    """``name`` (of ``size`` bytes) was just written to ``folder``: count it, and bring the
    cache back under its bound when that puts it over (``name`` itself stays)."""
    _check_version(kind, folder)
    total = _append(folder, size)
    limit = bound(kind)
    if limit is not None and (total is None or total > limit):
        evict(kind, folder, limit, keep=name)


def tidy(kind: str, folder: str | None = None) -> None:
    """What Quadrants does at qd.init: empty a cache of another version (per the policy) and
    bring one over its bound under it (by its ledger: no scan unless it is over)."""
    folder = folder or directory(kind)
    if not os.path.isdir(folder):
        return
    _check_version(kind, folder)
    limit, total = bound(kind), _ledger(folder)
    if limit is not None and (total is None or total > limit):
        evict(kind, folder, limit)


def _ledger(folder: str) -> int | None:
    try:
        with open(os.path.join(folder, LEDGER)) as f:
            return sum(int(line) for line in f if line.strip())
    except (OSError, ValueError):
        return None


def _append(folder: str, size: int) -> int | None:
    """Add ``size`` to the ledger (an append: writers in other processes do not overwrite it)
    and return its total; None where there is none yet (the scan that follows writes one)."""
    try:
        fd = os.open(os.path.join(folder, LEDGER), os.O_WRONLY | os.O_APPEND)
    except OSError:
        return None
    try:
        os.write(fd, f"{int(size)}\n".encode())
    except OSError:
        return None
    finally:
        os.close(fd)
    return _ledger(folder)


def _write_ledger(folder: str, total: int) -> None:
    path = os.path.join(folder, LEDGER)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write(f"{total}\n")
        os.replace(tmp, path)
    except OSError:
        pass


def _check_version(kind: str, folder: str) -> None:
    """Once per process and folder: a cache whose stamp names another version of the package
    loses its entries, unless the policy is ``never``; not those used in the last
    IN_PROGRESS_S seconds, which a process of this version may have just made (xdist workers
    starting together on an old cache). A cache without a stamp (new, or older than the
    stamps) gets this version's; its bound trims it."""
    if folder in _checked or not os.path.isdir(folder):  # (no folder yet: its first writer stamps it)
        return
    _checked.add(folder)
    if _settings.policy == "never":
        return
    stamp = f"{FORMAT} {__version__}\n"
    path = os.path.join(folder, STAMP)
    try:
        with open(path) as f:
            if f.read() == stamp:
                return
        clean(kind, folder, before=time.time() - IN_PROGRESS_S)
    except FileNotFoundError:
        pass
    except OSError:  # unreadable: leave it as it is
        return
    try:
        with open(path, "w") as f:
            f.write(stamp)
    except OSError:
        pass


# ----------------------------------------------------------------------------- scans

@record
class Entry:
    path: str
    size: int
    mtime: float  # its last use (lru) or its creation (fifo)


def entries(kind: str, folder: str) -> list[Entry]:
    """Every entry of the cache in ``folder``, its size in bytes (a folder's: its files')."""
    k = KINDS[kind]
    out: list[Entry] = []
    for parent in _levels(folder, k.depth):
        try:
            with os.scandir(parent) as it:
                items = [e for e in it if not e.name.startswith(".") and e.name != LOCKS]
        except OSError:
            continue
        for e in items:
            try:
                st = e.stat(follow_symlinks=False)
                size = tree_size(e.path) if e.is_dir(follow_symlinks=False) else st.st_size
            except OSError:  # removed meanwhile
                continue
            out.append(Entry(e.path, size, st.st_mtime))
    return out


def _levels(folder: str, depth: int) -> list[str]:
    if depth == 1:
        return [folder]
    try:
        with os.scandir(folder) as it:
            return [e.path for e in it if e.is_dir(follow_symlinks=False) and e.name != LOCKS
                    and not e.name.startswith(".")]
    except OSError:
        return []


def tree_size(path: str | os.PathLike) -> int:
    """The bytes of the files under ``path``."""
    total = 0
    for parent, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(parent, name)).st_size
            except OSError:
                pass
    return total


def _in_use(kind: Kind, e: Entry, now: float) -> bool:
    """A write or build in progress, or a pinned entry used a moment ago: not to be removed."""
    if e.path.endswith(".tmp"):
        return now - e.mtime < IN_PROGRESS_S
    return bool(kind.pinned) and os.path.basename(e.path).startswith(kind.pinned) and now - e.mtime < IN_USE_S


def _remove(path: str) -> bool:
    import shutil  # noqa: PLC0415 - only to evict: emit, which reaches this module, never does

    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        return True
    except OSError:  # another process took it first
        return False


def evict(kind: str, folder: str, limit: float, keep: str | None = None) -> int:
    """Scan the cache; when it holds more than ``limit`` bytes, remove the least recently used
    entries (the oldest first, leaving ``keep`` and what is in use) until it holds at most
    ``limit`` less the cleaning factor's share. Rewrites the ledger; returns the bytes left."""
    now = time.time()
    found = entries(kind, folder)
    total = sum(e.size for e in found)
    if total > limit:
        target = limit * (1.0 - _settings.factor)
        for e in sorted(found, key=lambda e: e.mtime):
            if total <= target:
                break
            if os.path.basename(e.path) != keep and not _in_use(KINDS[kind], e, now) and _remove(e.path):
                total -= e.size
    _write_ledger(folder, total)
    return total


def clean(kind: str, folder: str | None = None, before: float | None = None) -> tuple[int, int]:
    """Empty the cache, but for what is in use (and, given ``before``, the entries used since
    then): (entries, bytes) removed."""
    folder = folder or directory(kind)
    if not os.path.isdir(folder):
        return 0, 0
    now, count, size, left = time.time(), 0, 0, 0
    for e in entries(kind, folder):
        if (before is None or e.mtime < before) and not _in_use(KINDS[kind], e, now) and _remove(e.path):
            count, size = count + 1, size + e.size
        else:
            left += e.size
    if KINDS[kind].depth == 2:  # the emptied sub-folders too
        for parent in _levels(folder, 2):
            try:
                os.rmdir(parent)
            except OSError:  # not empty
                pass
    _write_ledger(folder, left)
    return count, size

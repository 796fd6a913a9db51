"""Quadrants' offline cache for the executors: what a kernel instantiation translates to (its
sources, manifest and language line), kept on disk from one process to the next, as
``qd.init(offline_cache=True)`` (the default there and here) keeps Quadrants' compiled kernels.

The key is the frontend's IR, pickled whole (every node, type, name and source line the
target's passes and renderer read), with the shapes of the fields it binds, the target and
its options, and this package's own code (each module's and template's size and mtime, and
Jinja2's). The frontend still runs in every process: it reads the Python values a kernel
captures, which only its IR records. What a hit skips is the target's passes, rendering and
Jinja2's import: most of a first call's translation.

A kernel whose IR holds anything else (a Python object of the user's) is not cached, and a
target defined outside this package never is: their code is not in the key. An unreadable
or corrupt entry is a miss. ``QD_OFFLINE_CACHE=0`` (or ``offline_cache=False``) turns it off,
as in Quadrants; the directory is ``offline_cache_file_path``, else the cache ``offline`` of
transpiler/cache.py (``~/.cache/transpiler/offline``), which bounds its size."""
from __future__ import annotations

import hashlib
import io
import os
import pickle
import sys
import threading
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

from . import cache as caches
from .targets.templates import templates_dir

if TYPE_CHECKING:
    from .ir import nodes as ir
    from .targets.context import Options
    from .targets.target import Target

FORMAT = 1  # bumped when what an entry holds changes
# Entries are spread over 256 folders by their name's first two hex digits.


def directory(enabled: bool | None = None, path: str | None = None) -> str | None:
    """Where entries live, or None when the cache is off (``QD_OFFLINE_CACHE=0`` wins over
    ``enabled``, as Quadrants reads it; unset, ``enabled`` decides, True by default)."""
    env = os.environ.get("QD_OFFLINE_CACHE", "").strip()
    if env == "0" or (env == "" and enabled is False):
        return None
    if path:
        return os.fspath(path)
    return caches.directory("offline")


@cache
def code_identity() -> bytes:
    """This package's code as the translation depends on it: every module, template and
    header by size and modification time, Jinja2's too, and the Python version."""
    jinja = find_spec("jinja2")
    roots = [Path(__file__).resolve().parent, templates_dir()]
    if jinja is not None and jinja.origin:
        roots.append(Path(jinja.origin).parent)
    return files_identity(roots)


def files_identity(roots: list[Path]) -> bytes:
    """A digest of the name, size and modification time of every ``.py``, ``.j2`` and ``.h``
    file under ``roots`` (a stat each: about 2 ms for this package, against the tens a hash
    of their text would take)."""
    h = hashlib.sha256(f"{FORMAT}\0{sys.version}\0".encode())
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".j2", ".h")):
                    path = os.path.join(folder, name)
                    st = os.stat(path)
                    h.update(f"{os.path.relpath(path, root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.digest()


# Modules whose objects are plain data where the IR and a target's options hold them.
PLAIN_DATA = ("transpiler.ir.", "transpiler.errors", "transpiler.targets.context")


class _Uncacheable(Exception):
    pass


def _bound(kind: str, shape: tuple) -> tuple:
    return kind, shape


class _KeyPickler(pickle.Pickler):
    """Pickles IR as it is and a bound field as its shape (all the renderer reads of it);
    refuses anything else that is not plain data."""

    def reducer_override(self, obj: object) -> tuple:
        cls = type(obj)
        if cls in (list, dict, tuple, set, frozenset) or isinstance(obj, type) or obj is _bound:
            return NotImplemented
        module = cls.__module__
        if module.startswith(PLAIN_DATA):
            return NotImplemented
        if module == "transpiler.lang.field":
            return _bound, (cls.__name__, tuple(getattr(obj, "shape", ()) or ()))
        raise _Uncacheable(cls)


def key(kir: ir.Kernel, target: Target, options: Options) -> str | None:
    """The entry's name for translating ``kir`` with ``target`` and its ``options``, or None
    when it cannot be cached."""
    if not type(target).__module__.startswith("transpiler.targets."):
        return None
    buf = io.BytesIO()
    try:
        _KeyPickler(buf, protocol=5).dump((kir, target.name, type(target).__qualname__, options))
    except (_Uncacheable, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None
    h = hashlib.sha256(code_identity())
    h.update(buf.getbuffer())
    return h.hexdigest()


def load(folder: str, name: str) -> tuple[dict, dict, str] | None:
    """(sources, manifest, language) of the entry ``name``, or None."""
    path = os.path.join(folder, name[:2], name)
    try:
        with open(path, "rb") as f:
            entry = pickle.load(f)
        sources, manifest, language = entry
        if isinstance(sources, dict) and isinstance(manifest, dict) and isinstance(language, str):
            caches.touch(path)  # used: the last to go when the cache is over its bound
            return sources, manifest, language
    except Exception:  # noqa: BLE001 - missing, unreadable, truncated or from elsewhere: a miss
        pass
    return None


def store(folder: str, name: str, sources: dict, manifest: dict, language: str) -> None:
    """Write the entry atomically (a concurrent reader sees all of it or nothing); a
    read-only or full disk only costs the next process the translation."""
    path = os.path.join(folder, name[:2], name)
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            pickle.dump((sources, manifest, language), f, protocol=5)
        os.replace(tmp, path)
        caches.added("offline", folder, name, os.path.getsize(path))
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


"""Drive the real vendor compilers over generated sources and report their verdicts,
with every compiler message mapped back to the Python line it came from."""
from __future__ import annotations

import importlib
import os
import re
import time
from collections.abc import Callable
from typing import TypeVar

from ..errors import ToolchainMissing  # noqa: F401 - re-exported for callers
from ..ir.records import record, field
from ..targets import get_target

R = TypeVar("R")


@record
class Verdict:
    """One toolchain's answer for one generated file."""

    target: str
    tool: str
    file: str
    ok: bool
    seconds: float
    message: str = ""          # the compiler's log, lines mapped to Python locations
    details: dict = field(default_factory=dict)  # e.g. registers per entry point


_COMMENT = re.compile(r"//\s*([\w.\-]+\.py):(\d+)\s*$")


def line_origins(source: str) -> list[tuple[str, int] | None]:
    """The line map of generated ``source``: for each of its lines, the (``file.py``, LINE)
    its ``// file.py:LINE`` comment names, or None (a line no Python statement made)."""
    out = []
    for line in source.splitlines():
        m = _COMMENT.search(line)
        out.append((m.group(1), int(m.group(2))) if m else None)
    return out


def python_line_of(source: str, line_no: int) -> str | None:
    """The ``file.py:LINE`` comment on generated line ``line_no`` (or the closest one above)."""
    for origin in reversed(line_origins(source)[:max(line_no, 0)]):
        if origin:
            return f"{origin[0]}:{origin[1]}"
    return None


def map_log(log: str, file: str, source: str, pattern: str) -> str:
    """Prefix each compiler message that names a line of ``file`` with its Python location.
    ``pattern`` is a regex with a group named ``line`` matching the compiler's location."""
    out = []
    rx = re.compile(pattern)
    for line in log.splitlines():
        m = rx.search(line)
        if m and (not m.groupdict().get("file") or os.path.basename(m.group("file")) == file):
            where = python_line_of(source, int(m.group("line")))
            if where:
                line = f"{where}: {line}"
        out.append(line)
    return "\n".join(out)


# check(file name, source text, manifest, options) -> Verdict
Checker = Callable[[str, str, dict, dict], Verdict]


def check_sources(target: str, sources: dict[str, str], manifest: dict, options: dict | None = None) -> list[Verdict]:
    """Compile every generated file of one translation with the target's checker (its
    ``Target.checker`` module's ``make_checker()``); raises ToolchainMissing."""
    module = get_target(target).checker
    if module is None:
        raise ToolchainMissing(f"a {target} checker", "no compile check is known for this target")
    check = importlib.import_module(module).make_checker()
    return [check(name, text, manifest, options or {}) for name, text in sources.items()]


def timed(fn: Callable[..., R], *args: object, **kwargs: object) -> tuple[R, float]:
    t0 = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - t0

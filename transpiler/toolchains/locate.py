"""Where each vendor tool is, and how it was found: named on the command line
(``--toolchain NAME=PATH``), named by an environment variable (``TRANSPILER_<NAME>``, e.g.
``TRANSPILER_GLSLANG``, ``TRANSPILER_SPIRV_VAL``), or discovered (``PATH``, a pip wheel, a
toolkit's default folder, the system's library path), in that order. A tool named
explicitly that does not exist is missing: it never falls back to another copy, which
would check with a compiler the user did not ask for.

The checkers declare their tools here (``register``) with the discovery they always did;
``transpiler toolchains`` lists them all with the version each reports."""
from __future__ import annotations

import importlib
import logging
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from ..errors import ToolchainMissing

log = logging.getLogger(__name__)

# Each tool's module, in the order `transpiler toolchains` lists them; importing a module
# registers its tools.
MODULES = {"glslang": "glsl_check", "spirv-val": "glsl_check", "nvrtc": "nvrtc", "nvlink": "nvrtc",
           "hipcc": "hip_check", "hiprtc": "hip_check", "llvm-readelf": "hip_check", "clang": "msl_check"}


@dataclass(frozen=True)
class Tool:
    name: str                                        # as --toolchain NAME=PATH spells it
    what: str                                        # how messages name it ("glslangValidator")
    used_for: str                                    # one line for `transpiler toolchains`
    install: str                                     # the install hint of a missing one
    discover: Callable[[], list[tuple[str, str]]]   # (path, how found) candidates, best first
    version: Callable[[str], str]                   # what the tool at this path reports
    library: bool = False                            # a shared library (ctypes) rather than a program

    @property
    def env(self) -> str:
        return "TRANSPILER_" + self.name.upper().replace("-", "_")


@dataclass(frozen=True)
class Found:
    tool: Tool
    path: str
    how: str  # "--toolchain", "$TRANSPILER_...", "PATH", "pip wheel", "default folder", ...


_TOOLS: dict[str, Tool] = {}
_chosen: dict[str, str] = {}  # --toolchain NAME=PATH, for this process (and the workers it forks)


def register(tool: Tool) -> Tool:
    _TOOLS[tool.name] = tool
    return tool


def tool(name: str) -> Tool:
    if name not in _TOOLS:
        if name not in MODULES:
            raise ValueError(f"unknown toolchain {name!r}")
        importlib.import_module(f"{__package__}.{MODULES[name]}")
    return _TOOLS[name]


def tools() -> list[Tool]:
    return [tool(name) for name in MODULES]


def choose(name: str, path: str) -> str:
    """``--toolchain NAME=PATH``: ``path`` (a file, or a program name on PATH) for ``name``
    from now on. ValueError says what is wrong: an unknown name (with the names) or a path
    that does not exist."""
    t = tool(name)
    resolved = path if os.path.isfile(path) or t.library else shutil.which(path)
    if not resolved or not os.path.isfile(resolved):
        raise ValueError(f"--toolchain {name}={path}: no such file")
    _chosen[name] = os.path.abspath(resolved)
    return _chosen[name]


def chosen() -> dict[str, str]:
    return dict(_chosen)


def forget_choices() -> None:
    _chosen.clear()


def find(name: str) -> Found:
    """The tool ``name`` resolves to now; raises ToolchainMissing (with the install hint)."""
    t = tool(name)
    if name in _chosen:
        return Found(t, _chosen[name], "--toolchain")
    named = os.environ.get(t.env)
    if named:
        if not os.path.isfile(named):
            raise ToolchainMissing(f"{t.what} (${t.env}={named}: no such file)", t.install)
        return Found(t, named, f"${t.env}")
    found = _discovered(name, os.environ.get("PATH", ""), tuple(sys.path))
    if found is None:
        raise ToolchainMissing(t.what, t.install)
    return found


@cache
def _discovered(name: str, path_env: str, sys_path: tuple[str, ...]) -> Found | None:
    """Discovery, once per tool and search path (the runtimes look a tool up per compile)."""
    t = tool(name)
    for path, how in t.discover():
        if path:
            log.debug("toolchain %s: %s (%s)", name, path, how)
            return Found(t, path, how)
    log.debug("toolchain %s: not found (%s)", name, t.env)
    return None


def path_of(name: str) -> str:
    found = find(name)
    _log_found(found.tool.name, found.path, found.how)
    return found.path


@cache
def _log_found(name: str, path: str, how: str) -> None:
    log.info("toolchain %s: %s (%s)", name, path, how)  # once per process and place


@cache
def version(name: str, path: str) -> str:
    """The version the tool at ``path`` reports ("?" when it says nothing readable)."""
    try:
        return tool(name).version(path) or "?"
    except OSError:
        return "?"


# ----------------------------------------------------------------------------- discovery helpers

def on_path(*names: str) -> list[tuple[str, str]]:
    return [(shutil.which(n), "PATH") for n in names]


def in_files(paths: list[str], how: str) -> list[tuple[str, str]]:
    return [(p, how) for p in paths if os.path.isfile(p)]

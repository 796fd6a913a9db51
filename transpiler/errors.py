"""Diagnostics located at the user's Python source: ``file.py:LINE:COL: error: ...``."""
from __future__ import annotations

import linecache
import os
import re

from .ir.nodes import Loc
from .ir.records import record


def display_path(path: str) -> str:
    """The path relative to the working directory when it lies inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def format_diagnostic(severity: str, message: str, loc: Loc | None, hint: str | None = None) -> str:
    if loc is None:
        text = f"{severity}: {message}"
    else:
        text = f"{display_path(loc.file)}:{loc.line}:{loc.col + 1}: {severity}: {message}"
        line = linecache.getline(loc.file, loc.line).rstrip("\n")
        if line:
            text += f"\n    {line}\n    {' ' * loc.col}^"
    if hint:
        text += f"\nhint: {hint}"
    return text


@record
class Diagnostic:
    """A located finding that does not stop translation (a warning), or one a pass reports
    before raising: the hazard checker's, and the frontend's lossy conversions."""

    severity: str   # "error" | "warning"
    kind: str       # "lossy-conversion", or a hazard's kind ("divergent-barrier", "spin-wait", ...)
    message: str
    loc: Loc | None
    hint: str | None = None

    def __str__(self) -> str:
        return format_diagnostic(self.severity, self.message, self.loc, self.hint)


class TranspileError(Exception):
    """The user's kernel cannot be translated. ``str()`` is the full located diagnostic,
    then one note per call that led to it when it lies in a function the kernel called,
    innermost first (as a C++ compiler's "in instantiation of ... requested here" notes)."""

    def __init__(self, message: str, loc: Loc | None = None, hint: str | None = None,
                 notes: tuple[tuple[Loc, str], ...] = ()):
        self.message = message
        self.loc = loc
        self.hint = hint
        self.notes: list[tuple[Loc, str]] = list(notes)
        super().__init__(format_diagnostic("error", message, loc, hint))

    def called_from(self, site: Loc, callee: str) -> None:
        """Adds the note that ``callee``, where the error lies, was called at ``site``."""
        if site != self.loc and all(site != at for at, _ in self.notes):
            self.notes.append((site, f"in `{callee}`, called from here"))

    def __str__(self) -> str:
        return "\n".join([super().__str__(), *(format_diagnostic("note", text, at) for at, text in self.notes)])

    def __reduce__(self):  # noqa: ANN204 - pickled whole (a worker process's error): not rebuilt from str()
        return type(self), (self.message, self.loc, self.hint, tuple(self.notes))


class StaticValueError(TranspileError, ValueError):
    """A value its place cannot take, found before anything runs (a generator unpacked into
    qd.ndrange, the trace of a matrix that is not square): a ValueError, as Python's own, and
    Quadrants' compilation error class (TranspileError here)."""


class KernelArgumentError(TranspileError, TypeError):
    """A kernel called with arguments its parameters do not take: a TypeError, as Python's
    own, and Quadrants' syntax error class (which is TranspileError here)."""


_CALL_MISMATCH = ((re.compile(r"missing a required argument: '(\w+)'"), "Missing argument '{}'"),
                  (re.compile(r"too many positional arguments"), "Too many arguments"),
                  (re.compile(r"multiple values for argument '(\w+)'"), "Multiple values for argument '{}'"),
                  (re.compile(r"got an unexpected keyword argument '(\w+)'"), "Unexpected argument '{}'"))


def call_mismatch(exc: TypeError) -> str:
    """What ``inspect.Signature.bind`` said about a call, in Quadrants' words."""
    text = str(exc)
    for pattern, words in _CALL_MISMATCH:
        m = pattern.search(text)
        if m:
            return words.format(*m.groups())
    return text


class KernelAssertionError(RuntimeError, AssertionError):
    """A check a kernel makes in debug mode failed (an assert, an index out of bounds): an
    AssertionError, and the RuntimeError Quadrants' QuadrantsAssertionError also is."""


class ToolchainMissing(Exception):
    """A vendor toolchain needed for a check or a run is not installed."""

    def __init__(self, tool: str, install_hint: str):
        self.tool = tool
        self.install_hint = install_hint
        super().__init__(f"{tool} is not available; install it with: {install_hint}")


class ToolchainRejected(Exception):
    """The vendor compiler rejected generated source; ``message`` is mapped to Python lines."""

    def __init__(self, tool: str, message: str):
        self.tool = tool
        self.message = message
        super().__init__(f"{tool} rejected the generated source:\n{message}")


class TranslationWarning(UserWarning):
    """A located warning about the user's kernel: a conversion that loses precision, as
    Quadrants warns of one ("Assign may lose precision"), or f64 math a target computes in
    f32. Here, in the lowest layer, so that the targets raise it too."""

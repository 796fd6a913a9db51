"""The ``transpiler`` logger: the library logs through ``logging.getLogger("transpiler....")``
(translations with their timing, offline cache hits, toolchains found) and, as a library
should, configures nothing until asked: by the command line's ``-v``/``-q`` or by
``qd.init(log_level=...)``, which takes Quadrants' names (``qd.TRACE``, ``qd.DEBUG``,
``qd.INFO``, ``qd.WARN``, ``qd.ERROR``, ``qd.CRITICAL``, the strings they stand for, in any
case) or a ``logging`` level number."""
from __future__ import annotations

import logging
import sys

LOGGER = "transpiler"
# Quadrants' level names (quadrants/_logging.py); its "trace" is finer than debug, which
# Python's logging does not have: both show everything.
LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
          "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL}


class _Handler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (a redirect or pytest's capture too)."""

    @property
    def stream(self):  # noqa: ANN201 - the property StreamHandler reads
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


def level_of(value: str | int) -> int:
    """A ``logging`` level from Quadrants' names or a number; ValueError names the choices."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    level = LEVELS.get(str(value).strip().lower())
    if level is None:
        raise ValueError(f"log_level {value!r} is not one of {', '.join(n for n in LEVELS if n != 'warning')} "
                         "(qd.TRACE, qd.DEBUG, qd.INFO, qd.WARN, qd.ERROR, qd.CRITICAL)")
    return level


def set_level(value: str | int) -> None:
    """Show the ``transpiler`` logger's messages from ``value`` up, on stderr, as
    ``transpiler: LEVEL: message`` (one handler, however often this is called)."""
    logger = logging.getLogger(LOGGER)
    logger.setLevel(level_of(value))
    if not any(isinstance(h, _Handler) for h in logger.handlers):
        handler = _Handler()
        handler.setFormatter(logging.Formatter("transpiler: %(levelname)s: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False  # a program's own root handler would print every message twice


def set_verbosity(verbose: int, quiet: bool) -> None:
    """The command line's ``-q`` (errors only), default (warnings), ``-v`` (info), ``-vv`` (debug)."""
    if quiet:
        set_level(logging.ERROR)
    else:
        set_level((logging.WARNING, logging.INFO)[verbose] if verbose < 2 else logging.DEBUG)


def level() -> int:
    return logging.getLogger(LOGGER).getEffectiveLevel()

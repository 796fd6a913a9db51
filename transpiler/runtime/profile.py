"""``QD_PROFILE=1``: what each kernel's first call costs, stage by stage, one line on stderr
per instantiation:

    qd profile: saxpy (vulkan) first call 9.8 ms = translate 1.3 (frontend 0.7, hazards 0.1,
    emit 0.5) + load 2.0 (spirv 0.9 compiled, pipeline 0.7) + launch 1.6

Stages a backend times itself (``stage``) are named by it; the translation's come from
``Translation.seconds``. Off, every hook is a test of one module global."""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from collections.abc import Iterator

enabled = os.environ.get("QD_PROFILE", "").strip() not in ("", "0")

# The stages timed so far in the first call being profiled: (name, seconds, note).
_stages: list[tuple[str, float, str]] | None = None


@contextmanager
def stage(name: str) -> Iterator[list[str]]:
    """Time a part of a first call's load (a backend's compile, pipeline creation). The
    yielded list takes a note to print beside it (e.g. "cached")."""
    notes: list[str] = []
    if _stages is None:
        yield notes
        return
    t0 = time.perf_counter()
    try:
        yield notes
    finally:
        _stages.append((name, time.perf_counter() - t0, " ".join(notes)))


class FirstCall:
    """The account of one first call: start it, mark the translation and the load, end it
    with the launch."""

    def __init__(self, kernel: str, backend: str):
        global _stages
        self.kernel, self.backend = kernel, backend
        self.t0 = time.perf_counter()
        self.translate: dict[str, float] = {}
        self.translate_s = self.load_s = 0.0
        self.loaded: list[tuple[str, float, str]] = []
        _stages = []

    def translated(self, seconds: dict[str, float], elapsed: float) -> None:
        self.translate, self.translate_s = seconds, elapsed

    def loaded_in(self, elapsed: float) -> None:
        global _stages
        self.load_s, self.loaded, _stages = elapsed, _stages or [], None

    def done(self) -> None:
        global _stages
        _stages = None
        total = time.perf_counter() - self.t0
        launch = total - self.translate_s - self.load_s
        ms = lambda s: f"{s * 1e3:.1f}"  # noqa: E731
        parts = ", ".join(f"{k} {ms(v)}" for k, v in self.translate.items())
        loads = ", ".join(f"{name} {ms(s)}" + (f" {note}" if note else "") for name, s, note in self.loaded)
        print(f"qd profile: {self.kernel} ({self.backend}) first call {ms(total)} ms = translate "
              f"{ms(self.translate_s)}" + (f" ({parts})" if parts else "") + f" + load {ms(self.load_s)}"
              + (f" ({loads})" if loads else "") + f" + launch {ms(launch)}", file=sys.stderr, flush=True)

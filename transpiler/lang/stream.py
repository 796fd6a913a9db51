"""``qd.create_stream()`` and ``qd.create_event()``, as Quadrants spells them: a kernel call
takes ``qd_stream=s``, an event is recorded on one stream and waited for on another.

Every runtime here runs a launch to completion before the call returns, which is one of
the orders concurrent streams allow: so a stream and an event order nothing further, and
``synchronize()`` has nothing left to wait for. What Quadrants' own CPU backend does too
(its streams are no-op objects there)."""
from __future__ import annotations

import itertools

_handles = itertools.count(1)


class Stream:
    """A launch queue. Calls with ``qd_stream=`` this stream run in order, as all calls do here."""

    def __init__(self, handle: int | None = None):
        self._handle = next(_handles) if handle is None else handle
        self.destroyed = False

    @property
    def handle(self) -> int:
        return self._handle

    def synchronize(self) -> None:
        """Every launch on this stream has finished (they finish before their call returns)."""

    def destroy(self) -> None:
        self.destroyed = True

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *args) -> None:
        self.destroy()

    def __repr__(self) -> str:
        return f"<qd.Stream {self._handle}>"


class Event:
    """A point in a stream's work: ``e.record(s1)``, then ``e.wait(qd_stream=s2)``."""

    def __init__(self):
        self._handle = next(_handles)

    @property
    def handle(self) -> int:
        return self._handle

    def record(self, qd_stream: Stream | None = None) -> None:
        _check_stream(qd_stream)

    def wait(self, qd_stream: Stream | None = None) -> None:
        _check_stream(qd_stream)

    def synchronize(self) -> None:
        pass

    def destroy(self) -> None:
        pass

    def __enter__(self) -> Event:
        return self

    def __exit__(self, *args) -> None:
        self.destroy()


def create_stream() -> Stream:
    return Stream()


def create_event() -> Event:
    return Event()


def _check_stream(stream: object) -> None:
    if stream is not None and not isinstance(stream, Stream):
        raise TypeError(f"qd_stream= takes a stream made by qd.create_stream(), not {stream!r}")
    if stream is not None and stream.destroyed:
        raise RuntimeError(f"{stream!r} was destroyed")


def take_stream(kwargs: dict) -> dict:
    """A kernel call's keyword arguments without ``qd_stream=``, which is checked."""
    if "qd_stream" not in kwargs:
        return kwargs
    kwargs = dict(kwargs)
    _check_stream(kwargs.pop("qd_stream"))
    return kwargs

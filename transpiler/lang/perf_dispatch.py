"""``@qd.perf_dispatch``: one function with several registered implementations that compute
the same thing (Genesis registers its solver variants this way). Quadrants times the
compatible ones and keeps the fastest per argument geometry; here the first compatible
registration runs. Every implementation computes the same result by contract, so results
match Quadrants'; only its autotuning is not done."""
from __future__ import annotations

from collections.abc import Callable


class PerformanceDispatcher:
    def __init__(self, fn: Callable, get_geometry_hash: Callable):
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", "perf_dispatch")
        self.get_geometry_hash = get_geometry_hash
        self._implementations: list[tuple[Callable, Callable | None]] = []

    def register(self, implementation: Callable | None = None, *, is_compatible: Callable | None = None) -> Callable:
        """``@f.register`` or ``@f.register(is_compatible=...)`` on an implementation."""
        def add(impl: Callable) -> Callable:
            self._implementations.append((impl, is_compatible))
            return impl

        return add(implementation) if implementation is not None else add

    def __call__(self, *args, **kwargs):
        for impl, is_compatible in self._implementations:
            if is_compatible is None or is_compatible(*args, **kwargs):
                return impl(*args, **kwargs)
        raise RuntimeError(f"{self.__name__}: no registered implementation is compatible with these arguments")


def perf_dispatch(*, get_geometry_hash: Callable, **_timing) -> Callable[[Callable], PerformanceDispatcher]:
    """``@qd.perf_dispatch(get_geometry_hash=..., warmup=..., active=..., repeat_after_seconds=...)``."""
    return lambda fn: PerformanceDispatcher(fn, get_geometry_hash)

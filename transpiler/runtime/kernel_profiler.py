"""``qd.profiler``: Quadrants' kernel profiler. With ``qd.init(kernel_profiler=True)`` every kernel
call's run time is recorded (the launch returns when the device is done, so the wall time of
the run is the kernel's: its launches, and on Vulkan the copies around them);
``print_kernel_profiler_info()`` prints them per kernel in Quadrants' table,
``query_kernel_profiler_info(name)`` gives one kernel's count and min / avg / max ms."""
from __future__ import annotations

import warnings

__all__ = ["print_kernel_profiler_info", "query_kernel_profiler_info", "clear_kernel_profiler_info",
           "get_kernel_profiler_total_time", "set_kernel_profiler_toolkit"]

enabled = False
_records: list[tuple[str, float]] = []  # (kernel name, ms), in launch order


class KernelProfilerQueryResult:
    """One kernel's calls: ``counter`` and ``min`` / ``avg`` / ``max`` ms (0 if never called)."""

    def __init__(self, times: list[float]):
        self.counter = len(times)
        self.min = min(times, default=0.0)
        self.max = max(times, default=0.0)
        self.avg = sum(times) / len(times) if times else 0.0
        self.total = sum(times)

    def __repr__(self) -> str:
        return (f"KernelProfilerQueryResult(counter={self.counter}, min={self.min:.3f}, avg={self.avg:.3f}, "
                f"max={self.max:.3f})")


def record(name: str, ms: float) -> None:
    _records.append((name, ms))


def set_enabled(on: bool) -> None:
    """qd.init(kernel_profiler=...): a new init starts with no records."""
    global enabled
    enabled = bool(on)
    _records.clear()


def _off() -> bool:
    if not enabled:
        warnings.warn("use 'qd.init(kernel_profiler = True)' to turn on KernelProfiler.", stacklevel=3)
    return not enabled


def _by_kernel() -> dict[str, KernelProfilerQueryResult]:
    times: dict[str, list[float]] = {}
    for name, ms in _records:
        times.setdefault(name, []).append(ms)
    results = {name: KernelProfilerQueryResult(t) for name, t in times.items()}
    return dict(sorted(results.items(), key=lambda kv: kv[1].total, reverse=True))


def print_kernel_profiler_info(mode: str = "count") -> None:
    """The recorded calls, in Quadrants' table: per kernel (``mode="count"``) or one line per
    call in order (``"trace"``)."""
    if mode not in ("count", "trace"):
        raise ValueError("Arg `mode` must be of type 'str', and has the value 'count' or 'trace'.")
    if _off():
        return
    from . import cfg  # noqa: PLC0415 - runtime/__init__ imports this module before it defines cfg

    header = f"Kernel Profiler({mode}, default) @ {str(cfg.arch).upper()}"
    if mode == "trace":
        columns = "[  start.time | kernel.time ] Kernel name"
        rows, start = [], 0.0
        for name, ms in _records:
            rows.append(f"[{start:9.3f} ms |{ms:9.3f} ms ] {name}")
            start += ms
        summary = f"Number of records: {len(_records)}"
    else:
        columns = "[      %     total   count |      min       avg       max   ] Kernel name"
        total = sum(ms for _, ms in _records)
        rows = [f"[{r.total / total * 100 if total else 0.0:6.2f}% {r.total / 1000:7.3f} s {r.counter:6d}x |"
                f"{r.min:9.3f} {r.avg:9.3f} {r.max:9.3f} ms] {name}" for name, r in _by_kernel().items()]
        summary = f"[100.00%] Total execution time: {total / 1000:7.3f} s   number of results: {len(rows)}"
    width = max(len(columns), len(header))
    print("\n".join(["=" * width, header, "=" * width, columns, "-" * width, *rows, "-" * width, summary,
                     "=" * width]))


def query_kernel_profiler_info(name: str) -> KernelProfilerQueryResult | None:
    """The calls of the kernel ``name``: ``.counter``, ``.min``, ``.avg``, ``.max`` (ms)."""
    if _off():
        return None
    return KernelProfilerQueryResult([ms for n, ms in _records if n == name])


def clear_kernel_profiler_info() -> None:
    if not _off():
        _records.clear()


def get_kernel_profiler_total_time() -> float:
    """Seconds spent in the recorded calls."""
    if _off():
        return 0.0
    return sum(ms for _, ms in _records) / 1000


def set_kernel_profiler_toolkit(toolkit_name: str = "default") -> bool:
    """Only the default toolkit (wall time per call) exists here; CUPTI's metrics do not."""
    if toolkit_name != "default":
        warnings.warn(f"kernel profiler toolkit {toolkit_name!r} is not available here; the default one is used",
                      stacklevel=2)
        return False
    return True

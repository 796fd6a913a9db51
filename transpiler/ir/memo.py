"""Memoize whole-kernel analyses and rewrites. The IR of an instantiation is never mutated
(passes build new kernels), so a result computed for one kernel object stays valid; warm
re-translation then skips every walk over the IR."""
from __future__ import annotations

import functools
from collections.abc import Callable

_results: dict[tuple, tuple] = {}
_LIMIT = 4096  # entries; each holds its kernel's IR alive


def per_kernel(fn: Callable | None = None, *, key: Callable | None = None) -> Callable:
    """Cache ``fn(kernel, *args)`` on the kernel object's identity and ``key(*args)``
    (the args themselves by default; they must then be hashable)."""
    if fn is None:
        return lambda f: per_kernel(f, key=key)

    name = fn.__qualname__

    @functools.wraps(fn)
    def cached(kernel: object, *args: object, **kwargs: object):
        if key is not None:
            slot = (name, id(kernel), key(*args, **kwargs))
        else:
            slot = (name, id(kernel), (args, tuple(sorted(kwargs.items())) if kwargs else ()))
        hit = _results.get(slot)
        if hit is None or hit[0] is not kernel:  # the object itself is kept, so its id stays unique
            if len(_results) >= _LIMIT:  # a process that builds IR over and over (a bench, the fuzzer)
                _results.clear()
            hit = _results[slot] = (kernel, fn(kernel, *args, **kwargs))
        return hit[1]

    return cached


class Identity:
    """An unhashable value in a cache key, compared by identity. The key holds the value, so
    its id cannot be reused by another object while the entry exists."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity) and other.value is self.value


def freeze(d: dict | None, dataclass_key: Callable | None = None) -> tuple:
    """A hashable key for a dict of values (unhashable values by identity). A dataclass
    instance is keyed by ``dataclass_key(value)``: what of it a translation reads, which the
    language knows and the IR does not (the caller passes lang.field.instance_key)."""
    if not d:
        return ()
    items = []
    for k, v in sorted(d.items()):
        keyed = getattr(type(v), "_qd_cache_key", None)  # a value that says what of it a translation reads
        if keyed is not None:
            v = keyed(v)
        elif dataclass_key is not None and hasattr(type(v), "__dataclass_fields__"):  # what its members bind
            v = dataclass_key(v)
        else:
            try:
                hash(v)
            except TypeError:
                v = Identity(v)
        items.append((k, v))
    return tuple(items)

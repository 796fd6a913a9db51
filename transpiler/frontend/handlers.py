"""Tables of handlers: what the frontend does with a built-in, a method or an attribute is
looked up in a table filled by ``@TABLE.handler(key, ...)`` next to each handler (as Warp's
``add_builtin`` registers its built-ins), instead of tested for in a chain of ``if``s."""
from __future__ import annotations

from collections.abc import Callable


class HandlerTable(dict):
    """Key (a name, or a Python callable) -> the function that lowers it."""

    def handler(self, *keys: object) -> Callable[[Callable], Callable]:
        def register(fn: Callable) -> Callable:
            for key in keys:
                self[key] = fn
            return fn

        return register

    def find(self, key: object) -> Callable | None:
        """The handler of ``key``; None for a key with none (or one that cannot be a key)."""
        try:
            return self.get(key)
        except TypeError:  # an unhashable value
            return None

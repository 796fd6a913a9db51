"""What the language's host-side objects ask of the runtime: a field's storage, the ndarray
class, the dtype Python's int and float stand for, what qd.init chose and the executor.

lang sits below the runtime and never imports it. The runtime installs these hooks when it
is imported (``install``, in runtime/__init__.py), as the package installs the launcher
(``set_launcher``); the package, above both, says how to import the runtime (``set_loader``),
so that ``import transpiler as qd`` still loads NumPy and the runtime only when a field,
an ndarray or the config is first used."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

_hooks: dict[str, Any] = {}
_loader: list[Callable[[], object]] = []


def install(**hooks: Any) -> None:
    """The runtime's hooks: ``ndarray`` (the class), ``python_dtype``, ``field_storage``,
    ``config`` (qd.cfg), ``executor`` (the running one, started on first use) and
    ``compiled_kernels`` (how many programs were loaded since qd.init)."""
    _hooks.update(hooks)


def set_loader(load: Callable[[], object]) -> None:
    """How to import the runtime, which installs the hooks when it is imported."""
    _loader[:] = [load]


def _hook(name: str) -> Any:
    if name not in _hooks:
        if not _loader:
            raise RuntimeError(f"no runtime is installed to provide {name}")
        _loader[0]()
    return _hooks[name]


def ndarray_class() -> type:
    """``qd.ndarray``'s class, to make one."""
    return _hook("ndarray")


def is_ndarray(value: object) -> bool:
    """Whether ``value`` is a ``qd.ndarray``. Before the runtime is loaded none exists, so
    the answer needs no import."""
    cls = _hooks.get("ndarray")
    return cls is not None and isinstance(value, cls)


def python_dtype(dtype: Any) -> Any:
    """``dtype``, or the one Python's int / float / bool stands for under qd.init's defaults."""
    return _hook("python_dtype")(dtype)


def field_storage(shape: tuple[int, ...], dtype: Any) -> Any:
    """A field's storage (a NumPy array) in the executor's memory where the host sees it."""
    return _hook("field_storage")(shape, dtype)


def config() -> Any:
    """``qd.cfg``: what the last qd.init chose (its defaults before any)."""
    return _hook("config")


def set_defaults(**types: Any) -> None:
    """qd.init's default_fp / default_ip changed (``fp=``, ``ip=``) without a new qd.init."""
    _hook("set_defaults")(**types)


def compiled_kernels() -> int:
    """The kernel programs translated and loaded since qd.init (one per kernel and signature)."""
    return _hook("compiled_kernels")()


def executor() -> Any:
    """The executor running kernels (the default one started if qd.init was not called)."""
    return _hook("executor")()

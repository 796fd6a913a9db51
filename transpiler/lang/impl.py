"""``qd.lang.impl``: the few functions of Quadrants' internal module that user code reaches
for (Genesis: ``impl.current_cfg().debug``, ``get_max_shared_memory_bytes``)."""
from __future__ import annotations

from . import exception, host
from .kernel import Kernel


def current_cfg() -> object:
    """What the last qd.init chose (``qd.cfg``; before any, its defaults: no executor is
    started by asking, so a module the command line imports can read it)."""
    return host.config()


def get_max_shared_memory_bytes(*, is_lowerbound_ok: bool = False) -> int:
    """Shared memory one block may use on the executor running kernels, in bytes."""
    return host.executor().max_shared_memory


def __getattr__(name: str):
    # Quadrants' exception classes and Kernel, as `from quadrants.lang.impl import ...` finds them
    if name.startswith("Quadrants"):
        return getattr(exception, name)
    if name == "Kernel":
        return Kernel
    raise AttributeError(f"qd.lang.impl has no `{name}`: of Quadrants' internal module this package provides "
                         "current_cfg(), get_max_shared_memory_bytes(), Kernel and the exception classes")

"""The kernel language's surface: what ``import transpiler as qd`` exposes and the frontend
recognises. ``kernel`` (decorators, annotations, markers), ``ops`` (the built-in
operations), ``types``, ``math``, ``simt`` (block / subgroup / grid / system), ``shmem``
(NVSHMEM), ``blocklib`` (the block collectives, written in the language itself) and ``tile``
(the register tiles ``qd.simt.Tile16x16`` / ``Tile32x32``, likewise)."""
import importlib

from .kernel import (  # noqa: F401
    Arch, BoundFunc, Func, HostFunc, Kernel, NdarrayAnnotation, RealFunc, Template, builtin, comptime, func, kernel,
    ndarray_annotation, param_kind, real_func, self_annotation, set_launcher, static, template,
)


def __getattr__(name: str):
    if name in ("impl", "exception", "util"):  # qd.lang.impl.current_cfg(), ...: imported when asked for
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The registry of target languages: the one place that lists them.

Built-in targets are named here with the module that defines each, and imported only when
asked for (the emit path of one target loads nothing of the others). A target defined
outside the package joins with ``register`` (see docs/adding-a-target.md).
"""
from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .target import Target

# name -> "module:Class", in the order `--target all` and the docs list them.
_BUILTIN = {
    "cuda": "cuda:CudaTarget",
    "hip": "hip:HipTarget",
    "glsl": "glsl:GlslTarget",
    "msl": "msl:MslTarget",
}
TARGETS = tuple(_BUILTIN)  # the built-in targets (the public contract's four)

_registered: dict[str, Target] = {}  # the instances in use, built-in ones once loaded
_extra: list[str] = []               # targets registered from outside, in registration order


def names() -> tuple[str, ...]:
    """Every target a translation may ask for: the built-in ones, then registered ones."""
    return TARGETS + tuple(_extra)


def get_target(name: str) -> Target:
    """The target called ``name`` (KeyError when there is none)."""
    target = _registered.get(name)
    if target is None:
        module, cls = _BUILTIN[name].split(":")
        target = _registered[name] = getattr(importlib.import_module(f"{__name__}.{module}"), cls)()
    return target


def all_targets() -> Iterator[Target]:
    for name in names():
        yield get_target(name)


def register(target: Target) -> Target:
    """Add a target defined outside the package (replacing one of the same name)."""
    if target.name in _BUILTIN:
        raise ValueError(f"{target.name!r} is a built-in target")
    if target.name not in _extra:
        _extra.append(target.name)
    _registered[target.name] = target
    return target


def unregister(name: str) -> None:
    if name in _extra:
        _extra.remove(name)
        del _registered[name]

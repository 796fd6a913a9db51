"""``qd.translate``: one kernel to one target's sources and manifest."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from . import lang
from .errors import TranspileError
from .ir import nodes as ir

TARGETS = ("cuda", "hip", "glsl", "msl")


class HazardWarning(UserWarning):
    """A SIMT hazard the checker found (see transpiler/passes/hazards.py)."""


@dataclass
class Translation:
    """The generated files (name -> text, in launch order), the binding manifest, and the
    hazard warnings the checker reported (errors raise instead)."""

    target: str
    sources: dict[str, str]
    manifest: dict
    ir: ir.Kernel
    warnings: list = field(default_factory=list)


def _freeze(d: dict | None):
    if not d:
        return ()
    items = []
    for k, v in sorted(d.items()):
        try:
            hash(v)
        except TypeError:
            v = id(v)
        items.append((k, v))
    return tuple(items)


def lower(kernel: lang.Kernel, template_args: dict | None = None, arg_types: dict | None = None,
          subgroup_size: int | None = None) -> ir.Kernel:
    """The typed IR of one instantiation, cached on the kernel object."""
    from .frontend.lower import lower_kernel

    cache = kernel.__dict__.setdefault("_ir_cache", {})
    base = (_freeze(template_args), _freeze(arg_types))
    hit = cache.get(base + (subgroup_size,))
    if hit is None:
        hit = cache.get(base + ("any width",))
    if hit is None:
        hit = lower_kernel(kernel, template_args, arg_types, subgroup_size)
        # IR that never asked for the subgroup width is the same at every width: one
        # lowering then serves hip (64) as well as cuda, glsl and msl (32).
        width = subgroup_size if hit.subgroup_size is not None else "any width"
        cache[base + (width,)] = hit
    return hit


def translate(kernel: lang.Kernel, target: str, **options) -> Translation:
    """Translate ``kernel`` for ``target`` ("cuda", "hip", "glsl" or "msl").

    Options: ``template_args`` (values of qd.template() parameters), ``arg_types``
    (annotations for parameters that have none), ``line_directives`` (emit #line),
    ``no_hazards`` (skip the SIMT hazard checker), ``warn`` (False: return hazard warnings
    in ``.warnings`` without issuing Python warnings).
    Raises ``TranspileError`` with a located message when the kernel is not valid."""
    from .targets import get_target

    if not isinstance(kernel, lang.Kernel):
        raise TypeError(f"qd.translate expects a @qd.kernel, got {kernel!r}")
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; choose one of {', '.join(TARGETS)}")
    try:
        t = get_target(target)
    except (KeyError, ModuleNotFoundError):
        raise TranspileError(f"the {target} target is not available in this version") from None
    subgroup_size = t.subgroup_size(options)
    kir = lower(kernel, options.get("template_args"), options.get("arg_types"), subgroup_size)
    hazards = []
    if not options.get("no_hazards"):
        from .passes.hazards import check_hazards

        # The IR of an instantiation never changes, so its verdict is computed once per target.
        cache = kernel.__dict__.setdefault("_hazard_cache", {})
        key = (id(kir), target, subgroup_size)
        if key not in cache:
            cache[key] = check_hazards(kir, target, subgroup_size)
        hazards = cache[key]
        if options.get("warn", True):
            for h in hazards:
                warnings.warn(str(h), HazardWarning, stacklevel=2)
    sources, manifest = t.translate(kir, options)
    return Translation(target, sources, manifest, kir, hazards)

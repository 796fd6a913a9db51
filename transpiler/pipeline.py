"""The translation pipeline, the one path from a ``@qd.kernel`` to a target's sources and
manifest. The CLI, ``qd.translate`` and every runtime go through ``translate``:

    lower (frontend, then atomic demotion; cached per instantiation)
    -> hazard check (once per instantiation, and per target and width only where it reads them)
    -> capability check (f64, system scope, NVSHMEM against the target's flags)
    -> target-dependent passes (block-vote emulation, atomics legalization)
    -> render (a fresh TranslationContext per call)
"""
from __future__ import annotations

import gc
import logging
import threading
import time
import warnings
from contextlib import contextmanager

from typing import TYPE_CHECKING

from .errors import TranslationWarning  # re-exported: qd.TranslationWarning
from .ir import nodes as ir
from .ir import types as T
from .ir.memo import freeze
from .ir.records import record, field
from .lang.field import instance_key
from .lang.kernel import BoundKernel, Kernel
from .targets import all_targets, get_target, names

if TYPE_CHECKING:
    from .targets.context import Options, TranslationContext
    from .targets.target import Target

log = logging.getLogger(__name__)  # "transpiler.pipeline": shown by -v and qd.init(log_level=qd.INFO)


class HazardWarning(TranslationWarning):
    """A SIMT hazard the checker found (see transpiler/passes/hazards.py)."""


@record
class Translation:
    """The generated files (name -> text, in launch order), the binding manifest, and the
    located warnings: the frontend's, then the hazard checker's (errors raise instead)."""

    target: str
    sources: dict[str, str]
    manifest: dict
    ir: ir.Kernel  # the typed IR of the instantiation, before the target's passes
    warnings: list = field(default_factory=list)
    language: str = ""  # the target language and version the sources are written in
    # Seconds each stage took (frontend, hazards, emit); about 0 for one the kernel's cache
    # of earlier translations served.
    seconds: dict = field(default_factory=dict)


def lower(kernel: Kernel, template_args: dict | None = None, arg_types: dict | None = None,
          subgroup_size: int | None = None, defaults: T.Defaults | None = None) -> ir.Kernel:
    """The typed IR of one instantiation, cached on the kernel object. ``defaults``: the
    types Python's int and float stand for (i32 and f32 unless given)."""
    from .frontend.lower import lower_kernel  # noqa: PLC0415 - the frontend, passes and targets load with the first translation: `import transpiler` stays light
    from .passes.demote import demote_atomics  # noqa: PLC0415 - the frontend, passes and targets load with the first translation: `import transpiler` stays light

    defaults = defaults or T.Defaults()
    cache = kernel.__dict__.setdefault("_ir_cache", {})
    base = (freeze(template_args, instance_key), freeze(arg_types, instance_key), defaults)
    hit = cache.get(base + (subgroup_size,))
    if hit is None:
        hit = cache.get(base + ("any width",))
    if hit is None:
        with T.using_defaults(defaults):
            # Atomics no other thread can observe become plain updates once here, for every target.
            hit = demote_atomics(lower_kernel(kernel, template_args, arg_types, subgroup_size))
        # IR that never asked for the subgroup width is the same at every width: one
        # lowering then serves hip (64) as well as cuda, glsl and msl (32).
        width = subgroup_size if hit.width_sensitive else "any width"
        cache[base + (width,)] = hit
    return hit


def translate(kernel: Kernel, target: str, **options) -> Translation:
    """Translate ``kernel`` for ``target`` ("cuda", "hip", "glsl", "msl", or a registered one).

    Options: ``template_args`` (values of qd.template() parameters), ``arg_types``
    (annotations for parameters that have none, or dtypes for untyped ndarrays),
    ``default_ip`` / ``default_fp`` (what Python's int and float stand for), ``debug`` (keep the
    kernel's asserts: a failed one is reported in the manifest's ``asserts`` buffer, as
    qd.init(debug=True) does), ``subgroup_size`` (GLSL: the device's;
    HIP: 64 or 32), ``wave32`` (HIP on RDNA), ``fast_math`` (GLSL), ``lavapipe`` (GLSL: work around
    Mesa's lavapipe, as qd.init(arch="vulkan") does on it), ``line_directives``
    (emit #line), ``no_hazards`` (skip the SIMT hazard checker), ``warn`` (False: return
    hazard warnings in ``.warnings`` without issuing Python warnings), ``offline_cache`` (a
    directory: reuse the sources an earlier process made for the same IR, see offline_cache.py;
    the executors pass it, ``qd.translate`` and the CLI always translate).
    Raises ``TranspileError`` with a located message when the kernel is not valid."""
    if isinstance(kernel, BoundKernel):  # a data-oriented instance's kernel: `self` is a template value
        options = dict(options, template_args={"self": kernel.instance, **(options.get("template_args") or {})})
        kernel = kernel.kernel
    if not isinstance(kernel, Kernel):
        raise TypeError(f"qd.translate expects a @qd.kernel, got {kernel!r}")
    if target not in names():
        raise ValueError(f"unknown target {target!r}; choose one of {', '.join(names())}")
    t = get_target(target)
    opts = t.options(options)
    with _collector_paused():
        return _translate(kernel, t, opts, options)


_pause_lock = threading.Lock()
_pauses = 0
_collector_was_on = False


@contextmanager
def _collector_paused():
    """Python's cycle collector off while a translation runs (the other threads' too), back
    to how it was when the last one ends: a translation allocates tens of thousands of
    objects, so the collector ran several times in each and walked every object the process
    holds (5-10% of a translation in a process that has translated a hundred kernels). It only
    defers: what a translation leaves in cycles is collected after it."""
    global _pauses, _collector_was_on
    with _pause_lock:
        if _pauses == 0:
            _collector_was_on = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _collector_was_on:
                gc.enable()


def _translate(kernel: Kernel, t: Target, opts: Options, options: dict) -> Translation:
    t0 = time.perf_counter()
    kir = lower(kernel, options.get("template_args"), options.get("arg_types"), opts.subgroup_size,
                T.Defaults(options.get("default_ip") or T.i32, options.get("default_fp") or T.f32,
                           bool(options.get("debug"))))
    t1 = time.perf_counter()
    seconds = {"frontend": t1 - t0}
    hazards = []
    if not options.get("no_hazards"):
        hazards = _hazards(kernel, kir, t, opts.subgroup_size)
        seconds["hazards"] = time.perf_counter() - t1
    if options.get("warn", True):
        for d in kir.diagnostics:
            warnings.warn(str(d), TranslationWarning, stacklevel=3)  # qd.translate's caller
        for h in hazards:
            warnings.warn(str(h), HazardWarning, stacklevel=3)
    t2 = time.perf_counter()
    folder, entry, hit = options.get("offline_cache"), None, None
    if folder:
        from . import offline_cache  # noqa: PLC0415 - only with an offline cache folder

        entry = offline_cache.key(kir, t, opts)
        hit = entry and offline_cache.load(folder, entry)
    if hit:
        sources, manifest, language = hit
        seconds["offline cache"] = time.perf_counter() - t2
    else:
        ctx = translate_ir(kir, t, opts)
        sources, manifest, language = ctx.sources, ctx.manifest, t.language(ctx)
        if entry:
            offline_cache.store(folder, entry, sources, manifest, language)
        seconds["emit"] = time.perf_counter() - t2
    log.info("translated %s for %s in %.1f ms%s", kir.name, t.name, 1e3 * sum(seconds.values()),
             " (offline cache hit)" if hit else "")
    return Translation(t.name, sources, manifest, kir, kir.diagnostics + hazards, language, seconds)


def translate_ir(kir: ir.Kernel, target: str | Target, options: dict | Options | None = None) -> TranslationContext:
    """The part of the pipeline after the frontend and the hazard checker, for IR built by
    other means too (the lowering tables' one-statement kernels): the capability check, the
    target's passes, and rendering into a fresh context (``.sources``, ``.manifest``)."""
    from .passes.block_votes import emulate_block_votes  # noqa: PLC0415 - the frontend, passes and targets load with the first translation: `import transpiler` stays light
    from .passes.capabilities import check_capabilities  # noqa: PLC0415 - the frontend, passes and targets load with the first translation: `import transpiler` stays light
    from .passes.legalize import legalize_atomics  # noqa: PLC0415 - the frontend, passes and targets load with the first translation: `import transpiler` stays light
    from .passes.vector_loads import scalarize_vector_loads  # noqa: PLC0415 - the frontend, passes and targets load with the first translation: `import transpiler` stays light
    from .targets.context import Options, ParamNames, TranslationContext  # noqa: PLC0415 - the frontend, passes and targets load with the first translation: `import transpiler` stays light

    if isinstance(target, str):
        target = get_target(target)
    if not isinstance(options, Options):
        options = target.options(options or {})

    check_capabilities(kir, target, all_targets())
    if not target.caps.block_votes:
        kir = emulate_block_votes(kir)
    kir = legalize_atomics(kir, target.dialect)
    if not target.caps.vector_loads:
        kir = scalarize_vector_loads(kir)
    ctx = TranslationContext(target, kir, options, ParamNames.choose(target.dialect, kir))
    ctx.sources, ctx.manifest = target.render(ctx)
    return ctx


def _hazards(kernel: Kernel, kir: ir.Kernel, target: Target, subgroup_size: int | None) -> list:
    """The checker's findings; the IR of an instantiation never changes, so they are computed
    once per IR and what the checker reads: the target only where it matters (hazards.
    target_key), the width only where a finding hinged on it. Most kernels: once for all
    four targets."""
    from .passes.hazards import check_hazards_at, target_key  # noqa: PLC0415 - the frontend, passes and targets load with the first translation: `import transpiler` stays light

    cache = kernel.__dict__.setdefault("_hazard_cache", {})
    profile = target_key(kir, target)
    for width in (subgroup_size, "any width"):
        hit = cache.get((id(kir), profile, width))
        if hit is not None and hit[0] is kir:  # (an id outlives its IR where the IR cache was dropped)
            return hit[1]
    found, width_read = check_hazards_at(kir, target, subgroup_size)
    cache[id(kir), profile, subgroup_size if width_read else "any width"] = (kir, found)
    return found

"""Run kernels from Python: ``qd.init(arch=...)`` picks a backend, calling a kernel binds
its arguments, sizes each task's grid on the host and hands the launches to the backend.

Backends (each in its own module, imported only when chosen):
  vulkan  GLSL -> SPIR-V, any Vulkan device (Mesa's lavapipe on a CPU-only machine)
  cuda    CUDA C through CuPy on an NVIDIA GPU
  cpu     the CUDA (or HIP) text itself, compiled by the host C++ compiler against the
          project's SIMT emulator header (``cpu_emulator``)

Every backend gets its code from the one pipeline (``pipeline.translate``), which also runs
the hazard checker, once per instantiation: a backend names its target and the options it
translates with, and loads what comes out.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass

import numpy as np

from .. import lang
from ..errors import TranspileError
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.evaluate import evaluate, uniform_env
from ..pipeline import Translation, freeze, translate
from .ndarray import Ndarray, ndarray  # noqa: F401

BACKENDS = {"vulkan": ("vulkan", "VulkanBackend"), "cuda": ("cuda", "CudaBackend"),
            "cpu": ("cpu_emulator", "CpuBackend")}
MAX_BLOCKS = 65535


@dataclass
class Launch:
    """One entry point to run: its task and its grid (``blocks`` = 0 means skip)."""

    task: ir.Task
    blocks: int


class Backend:
    """What every backend provides. ``load`` is called once per kernel instantiation."""

    name = ""
    target = ""  # the target language it runs

    def translate_options(self) -> dict:
        """The options its code is translated with (e.g. the device's subgroup size)."""
        return {}

    @property
    def subgroup_size(self) -> int | None:
        """The width kernels are specialized to here (what subgroup.group_size() gives)."""
        from ..targets import get_target

        return get_target(self.target).subgroup_size(self.translate_options())

    def load(self, tr: Translation):
        """Make the translation runnable (compile, create pipelines); returns the program."""
        raise NotImplementedError

    def run(self, program, kernel: ir.Kernel, values: dict[str, object], launches: list[Launch]) -> None:
        """``values``: parameter name -> numpy array (written back in place) or numpy scalar."""
        raise NotImplementedError


_backend: Backend | None = None
_no_hazards = False


def init(arch: str = "vulkan", *, no_hazards: bool = False, **options) -> None:
    """``no_hazards=True`` skips the hazard checker on first calls (e.g. to watch the CPU
    emulator report a deadlock the checker would have refused)."""
    global _backend, _no_hazards
    if arch not in BACKENDS:
        raise ValueError(f"unknown arch {arch!r}; choose one of {', '.join(BACKENDS)}")
    module, cls = BACKENDS[arch]
    _backend = getattr(importlib.import_module(f"{__name__}.{module}"), cls)(**options)
    _no_hazards = no_hazards


def current() -> Backend:
    if _backend is None:
        init()
    return _backend


def bind_arguments(kernel: lang.Kernel, args: tuple, kwargs: dict):
    """Split the call's arguments into template values, parameter types for unannotated
    ndarrays, and the run-time values (arrays as contiguous numpy arrays)."""
    sig = inspect.signature(kernel.fn)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{kernel.__name__}(): {exc}") from None
    annotations = inspect.get_annotations(kernel.fn, eval_str=True)
    template_args, arg_types, values = {}, {}, {}
    for name, value in bound.arguments.items():
        ann = annotations.get(name)
        if isinstance(ann, lang.Template) or ann is lang.template:
            template_args[name] = value
            continue
        if isinstance(ann, lang.NdarrayAnnotation):
            arr = value.data if isinstance(value, Ndarray) else value
            if not isinstance(arr, np.ndarray):
                raise TypeError(f"{kernel.__name__}(): `{name}` must be a numpy array or qd.ndarray, "
                                f"got {type(value).__name__}")
            dtype = T.from_numpy(arr.dtype)
            if ann.dtype is not None and ann.dtype != dtype:
                raise TypeError(f"{kernel.__name__}(): `{name}` must hold {ann.dtype.name}, got {dtype.name}")
            if ann.ndim is not None and ann.ndim != arr.ndim:
                raise TypeError(f"{kernel.__name__}(): `{name}` must have {ann.ndim} dimension(s), got {arr.ndim}")
            if not arr.flags.c_contiguous:
                raise TypeError(f"{kernel.__name__}(): `{name}` must be C-contiguous (use np.ascontiguousarray)")
            if ann.dtype is None or ann.ndim is None:
                arg_types[name] = lang.NdarrayAnnotation(dtype, arr.ndim)
            values[name] = arr
        elif isinstance(ann, T.DType):
            values[name] = ann.np_dtype.type(value)
        else:
            raise TypeError(f"{kernel.__name__}(): parameter `{name}` has an unsupported annotation")
    return template_args, arg_types, values


def plan_launches(kernel: ir.Kernel, values: dict[str, object]) -> list[Launch]:
    scalars = {p.name: values[p.name].item() for p in kernel.params if not p.is_array}
    shapes = {p.name: values[p.name].shape for p in kernel.params if p.is_array}
    launches = []
    for task in kernel.tasks:
        if task.kind == "serial":
            launches.append(Launch(task, 1))
            continue
        env = uniform_env(task)
        total = 1
        for begin, end in task.ranges:
            total *= max(0, evaluate(end, scalars, shapes, env) - evaluate(begin, scalars, shapes, env))
        blocks = min(-(-total // task.block_dim), MAX_BLOCKS)
        launches.append(Launch(task, blocks))
    return launches


def launch(kernel: lang.Kernel, args: tuple, kwargs: dict) -> None:
    backend = current()
    template_args, arg_types, values = bind_arguments(kernel, args, kwargs)
    cache = kernel.__dict__.setdefault("_program_cache", {})
    key = (backend.name, id(backend), freeze(template_args), freeze(arg_types))
    hit = cache.get(key)
    if hit is None:
        # The first call translates (and runs the hazard checker: a divergent barrier is an
        # error before anything runs, warnings are qd.HazardWarning) and loads the program.
        tr = translate(kernel, backend.target, template_args=template_args, arg_types=arg_types,
                       no_hazards=_no_hazards, **backend.translate_options())
        hit = cache[key] = (tr.ir, backend.load(tr))
    kir, program = hit
    backend.run(program, kir, values, plan_launches(kir, values))


__all__ = ["init", "launch", "ndarray", "Ndarray", "Backend", "Launch", "TranspileError"]

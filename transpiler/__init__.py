"""transpiler: write a GPU kernel once in Python, get CUDA C, HIP, GLSL and Metal source.

``import transpiler as qd`` gives the whole kernel language, spelled as in Quadrants.
"""
import contextlib as _contextlib
import os as _os
import sys as _sys
import warnings as _warnings
from collections.abc import Callable as _Callable

from . import log_config as _log_config
from .errors import TranspileError  # noqa: F401
from .ir.types import (  # noqa: F401
    bool_ as u1, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64,
)
from .lang import ad, math, shmem, simt, types  # noqa: F401
from .lang import algorithms  # noqa: F401
from .lang import host as _host
from .lang import impl as _impl
from .lang import library as _library
from .lang import matrixfree as _matrixfree
from .lang import ops as _ops
from .lang.buffer_view import BufferView  # noqa: F401
from .lang.extension import Extension as extension, is_extension_enabled  # noqa: F401
# Quadrants' exception classes, as its users catch them: every kernel error here is a located
# TranspileError, raised when the kernel is translated.
from .lang.exception import (  # noqa: F401
    QuadrantsAssertionError, QuadrantsCompilationError, QuadrantsIndexError, QuadrantsNameError, QuadrantsRuntimeError,
    QuadrantsRuntimeTypeError, QuadrantsSyntaxError, QuadrantsTypeError,
)
from .lang.field import Backend, Layout, data_oriented, field, ndarray, tensor  # noqa: F401
from .lang.field import reset_fields as _reset_fields
from .lang.impl import current_cfg as _current_cfg
from .lang.kernel import (  # noqa: F401
    Arch, Func, Kernel, RealFunc, Template, func, kernel, real_func, ref, set_launcher, static, template,
)
from .lang.kernel import python_scope as _python_scope
from .lang.kernel import running_disabled as _running_disabled
from .lang.matrix import Matrix, Struct, Vector, dataclass  # noqa: F401
from .lang.names import Namespace
from .lang.names import missing as _missing
from .lang.ops import (  # noqa: F401
    abs, acos, asin, atan, atan2, atomic_add, atomic_and, atomic_cas, atomic_exchange, atomic_max, atomic_min,
    atomic_mul, atomic_or, atomic_sub, atomic_xor, bit_cast, bit_shr, block_local, cache_read_only, cast, ceil, cos,
    cosh, exp, floor, grouped, log, loop_config, max, min, ndrange, one, polar_decompose, pow, random, randn, raw_div,
    raw_mod, round, rsqrt, select, sin, sinh, solve, sqrt, static_assert, static_print, stream_parallel, svd, tan, tanh,
    trunc,
    typeof, volatile_load, zero,
)
from .lang.ops import clock_counter, clock_freq_hz  # noqa: F401 - the cycle counter and its rate
from .lang.mathlib import frexp  # noqa: F401 - qd.frexp, as qd.math.frexp
from .lang.ops import (  # noqa: F401 - sparse SNodes and small decompositions, hints
    activate, append, assume_in_range, deactivate, eig, is_active, length, make_spd, no_activate, rescale_index,
    sym_eig,
)
from .lang.perf_dispatch import perf_dispatch  # noqa: F401
from .lang.snode import (  # noqa: F401
    SNode, axes, deactivate_all_snodes, i, ij, ijk, ijkl, ijl, ik, ikl, il, j, jk, jkl, jl, k, kl, l, root,
)
from .lang.stream import Event, Stream, create_event, create_stream  # noqa: F401
from .lang.tile import outer  # noqa: F401
from .pipeline import HazardWarning, Translation, TranslationWarning, translate  # noqa: F401
from .targets import TARGETS  # noqa: F401
from .version import __version__  # noqa: F401

_library.install()  # qd.simt's collectives and tiles, written in the language itself
linalg = _matrixfree.namespace()

# The module paths Quadrants' (and Taichi's) users import, `import transpiler.math as tm`,
# `from transpiler.algorithms import sort`, `from transpiler.lang.simt import subgroup`,
# `from transpiler.types.annotations import template`: each the same object as the attribute
# it names (tests/test_module_paths.py). The paths left out, and why: docs/differences.md.
_paths = {"ad": ad, "algorithms": algorithms, "math": math, "types": types, "simt": simt, "shmem": shmem,
          "linalg": linalg}
for _scope in ("block", "subgroup", "grid", "warp"):
    _paths[f"simt.{_scope}"] = _paths[f"lang.simt.{_scope}"] = getattr(simt, _scope)
_paths["types.primitive_types"] = types.primitive_types  # (a class here, with the module's names)
_paths.update({f"types.{_name}": Namespace(f"qd.types.{_name}", **{n: getattr(types, n) for n in _names.split()})
               for _name, _names in (
                   ("annotations", "template Template sparse_matrix_builder"),
                   ("compound_types", "matrix vector struct"),
                   ("ndarray_type", "ndarray NDArray"),
                   ("utils", "is_integral is_real is_signed is_tensor"))})
for _name, _module in _paths.items():
    _sys.modules.setdefault(f"{__name__}.{_name}", _module)
del _paths, _scope, _name, _module

int8, int16, int32, int64 = i8, i16, i32, i64
uint8, uint16, uint32, uint64 = u8, u16, u32, u64
float16, float32, float64 = f16, f32, f64
global_thread_idx = simt.block.global_thread_idx
Tensor = types.Tensor
wrap, is_tensor = types.wrap, types.is_tensor

# Architectures for qd.init: strings (with Quadrants' `.name`), so that naming one imports nothing heavy.
gpu, cuda, amdgpu, metal, vulkan, cpu, x64, arm64 = map(Arch, ("gpu", "cuda", "amdgpu", "metal", "vulkan", "cpu", "x64",
                                                              "arm64"))

# `while qd.graph.do_while(flag):` (graph=True kernels): the runtimes repeat the loop's tasks from
# the host, as Quadrants does on every backend but CUDA 12.4+ on Hopper.
graph = Namespace("qd.graph", do_while=_ops.do_while, parallel_context=_ops.parallel_context, parallel=_ops.parallel)
# (deprecated spellings)
graph_do_while, graph_parallel_context, graph_parallel = _ops.do_while, _ops.parallel_context, _ops.parallel
# The graph's sections mean nothing outside a kernel: Quadrants takes them there as no-ops.
_python_scope.update({"graph.parallel_context": _contextlib.nullcontext, "graph.parallel": _contextlib.nullcontext})

# `qd._lib.core.with_vulkan()`: what Taichi's examples ask before picking an arch. This package
# writes source for each of these backends (qd.init falls back, with a warning, to one this
# machine runs); OpenGL it does not target.
_lib = Namespace("qd._lib", core=Namespace(
    "qd._lib.core", with_vulkan=lambda: True, with_cuda=lambda: True, with_metal=lambda: True,
    with_amdgpu=lambda: True, with_opengl=lambda: False, with_gles=lambda: False,
    DeviceCapability=_impl.DeviceCapability, data_type_size=lambda dtype: dtype.bits // 8,
    QuadrantsRuntimeError=QuadrantsRuntimeError))


# The runtime (and NumPy) load only when first needed: a kernel call, a field or ndarray used,
# qd.init. Importing it installs lang's host hooks (lang/host.py).
def _load_runtime() -> None:
    from . import runtime  # noqa: F401, PLC0415 - loaded on first need (above)


def _launch(kernel_: Kernel, args: tuple, kwargs: dict):
    from .runtime import launch  # noqa: PLC0415 - loaded on first need (above)

    return launch(kernel_, args, kwargs)


def _subgroup_width() -> int | None:
    return _host.executor().subgroup_size


set_launcher(_launch)
_host.set_loader(_load_runtime)
_python_scope.update({"subgroup.group_size": _subgroup_width,
                      "subgroup.log2_group_size": lambda: _subgroup_width().bit_length() - 1})


class _LazyModulePaths:
    """``import transpiler.profiler``: a path whose module is the runtime's, found only when
    imported (a finder on sys.meta_path), so that ``import transpiler`` still loads no runtime."""

    lazy = {f"{__name__}.profiler": "profiler"}

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        from importlib.machinery import ModuleSpec  # noqa: PLC0415 - only when a path is imported

        return ModuleSpec(name, self) if name in self.lazy else None

    def create_module(self, spec: object) -> object:
        module = __getattr__(self.lazy[spec.name])
        self.own_spec = module.__spec__  # (the import system is about to give it this path's)
        return module

    def exec_module(self, module: object) -> None:  # the runtime's module ran when it was imported
        module.__spec__ = self.own_spec  # its name, file and spec stay the runtime's


_sys.meta_path.append(_LazyModulePaths())


def __getattr__(name: str):
    if name == "cfg":  # qd.cfg: what qd.init chose (the runtime, and numpy, only when asked)
        return _current_cfg()
    if name == "profiler":  # qd.profiler: the kernel profiler qd.init(kernel_profiler=True) turns on
        from .runtime import kernel_profiler  # noqa: PLC0415 - loaded on first need (above)

        return kernel_profiler
    # A Quadrants name not provided (yet), or a near miss: say which, and what to use.
    raise AttributeError(_missing("qd", name, globals()))


def pure(fn: _Callable) -> _Callable:
    """``@qd.pure`` (deprecated in Quadrants for ``@qd.kernel(fastcache=True)``): it warns as
    Quadrants does, and changes nothing here, where every translation is cached."""
    _warnings.warn("Use of @qd.pure is deprecated. Please use @qd.kernel(fastcache=True). @qd.pure is intended to be "
                  "removed in v4.0.0", DeprecationWarning, stacklevel=2)
    fn.is_pure = True
    return fn


def init(arch: str = "vulkan", **options) -> None:
    """Choose where kernels run when called from Python (the runtime loads on first call).
    ``log_level`` (qd.TRACE, qd.DEBUG, qd.INFO, qd.WARN, qd.ERROR, qd.CRITICAL, or those
    strings; else ``$QD_LOG_LEVEL``, as in Quadrants) shows the ``transpiler`` logger's
    messages from that level up on stderr."""
    if _running_disabled():  # the command line is importing the file to translate it: its -v/-q rule
        return
    level = options.get("log_level") or _os.environ.get("QD_LOG_LEVEL")
    if level:
        set_logging_level(level)
    from .runtime import init as _init  # noqa: PLC0415 - loaded on first need (above)

    _init(arch, **options)


# Quadrants' logging levels (quadrants/_logging.py): the strings qd.init(log_level=...) takes.
TRACE, DEBUG, INFO, WARN, ERROR, CRITICAL = "trace", "debug", "info", "warn", "error", "critical"


def set_logging_level(level: str | int) -> None:
    """Show the ``transpiler`` logger's messages from ``level`` up (qd.INFO: each translation
    with its time, offline cache hits, the toolchains found; qd.DEBUG: more)."""
    _log_config.set_level(level)


def is_logging_effective(level: str | int) -> bool:
    return _log_config.level_of(level) >= _log_config.level()


def reset() -> None:
    """Forget the executor (the next kernel call, or qd.init, starts a new one) and the
    contents of every field: as after a fresh qd.init in Quadrants."""
    if _running_disabled():
        return
    _reset_fields()
    from .runtime import reset as _reset  # noqa: PLC0415 - loaded on first need (above)

    _reset()


def sync() -> None:
    """Wait for launched kernels to finish: a kernel call here returns when it is done."""

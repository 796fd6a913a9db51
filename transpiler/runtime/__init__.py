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

import functools
import importlib
import inspect
import itertools
import time
import warnings
import weakref

import numpy as np

from .. import cache, lang, offline_cache
from ..errors import KernelArgumentError, ToolchainMissing, TranspileError, call_mismatch
from ..ir import nodes as ir
from ..ir import types as T
from ..ir.evaluate import evaluate, uniform_env
from ..ir.memo import freeze
from ..ir.records import record
from ..ir.walk import all_exprs, all_stmts, task_code
from ..lang.buffer_view import BufferView
from ..lang.external import is_tensor, tensor_argument
from ..lang.field import instance_key
from ..lang.host import install as install_host_hooks
from ..lang.matrix import HostStruct, MatrixType, dataclass_members
from ..pipeline import Translation, translate
from ..targets import get_target
from ..targets.target import MAX_BLOCKS
from . import guards, kernel_profiler, profile
from .ndarray import Ndarray, ndarray  # noqa: F401

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    import cupy
    from numpy.typing import DTypeLike

BACKENDS = {"vulkan": ("vulkan", "VulkanBackend"), "cuda": ("cuda", "CudaBackend"),
            "cpu": ("cpu_emulator", "CpuBackend")}


@record
class Launch:
    """One entry point to run: its task and its grid (``blocks`` = 0 means skip)."""

    task: ir.Task
    blocks: int


class Backend:
    """What every backend provides. ``load`` is called once per kernel instantiation."""

    name = ""
    target = ""  # the target language it runs

    @functools.cached_property
    def serial(self) -> int:
        """This backend's number, never reused in the process: programs loaded on it are
        cached under it (an id() can come back for the next backend once this one is gone)."""
        return next(_serials)

    def translate_options(self) -> dict:
        """The options its code is translated with (e.g. the device's subgroup size)."""
        return {}

    @property
    def subgroup_size(self) -> int | None:
        """The width kernels are specialized to here (what subgroup.group_size() gives)."""
        return get_target(self.target).subgroup_size(self.translate_options())

    # Blocks for a task whose range is read on the device (any number is correct: the
    # grid-stride loop covers the range): the manifest's suggestion, for a large GPU.
    dynamic_blocks = 1024

    def load(self, tr: Translation) -> object:
        """Make the translation runnable (compile, create pipelines); returns the program."""
        raise NotImplementedError

    def run(self, program: object, kernel: ir.Kernel, values: dict[str, object], launches: list[Launch]) -> None:
        """``values``: parameter name -> numpy array (written back in place) or numpy scalar."""
        raise NotImplementedError

    def replay(self, program: object, token: object) -> bool:
        """Run ``program`` again exactly as its last run (same buffers, scalars and grid) if
        that run is the one ``token`` (from ``replay_token``) names and needed nothing from
        the host; True if it did. The warm launch of a kernel called again with the same
        device arrays and scalars then skips binding, planning and recording."""
        return False

    def replay_token(self, program: object) -> object | None:
        """After ``run``: a token naming that run, if it can be replayed (else None)."""
        return None

    # Shared memory a block may use (bytes): the CUDA text's static limit, which the CPU
    # executor keeps too; a device's own where it says (Vulkan).
    max_shared_memory = 48 * 1024

    def resident_array(self, shape: tuple[int, ...], dtype: DTypeLike) -> np.ndarray | None:
        """Zeroed memory for a qd.ndarray that kernels use in place (no copies around a
        launch), or None where this executor has none: the array lives on the host."""
        return None

    # Whether kernels use host memory in place (the CPU executor): then NumPy arguments and the
    # kernel's own scratch get red zones on the host (see guards.py); an executor that copies
    # them to its own buffers guards those.
    host_memory_kernels = False

    # Whether ``resident_array``'s memory is the host array itself (mapped and coherent), so
    # the host reads and writes it with no host_read / host_written: a field's storage then.
    resident_is_host = False

    # An executor whose resident memory is not the host's (a GPU's, mirrored by a host array)
    # keeps the two in step through these; where the host array is the memory, they do nothing.
    def host_read(self, arr: np.ndarray) -> None:
        """The host is about to read resident ``arr``: bring it up to date with the device."""

    def host_written(self, arr: np.ndarray) -> None:
        """The host has written all of resident ``arr``: the device's copy is out of date."""


def array_storage(shape: tuple[int, ...], dtype: DTypeLike) -> tuple[np.ndarray, Backend | None]:
    """A qd.ndarray's storage: the current executor's resident memory and that executor,
    else guarded host memory (see guards.py) and None."""
    if _backend is not None:
        arr = _backend.resident_array(shape, dtype)
        if arr is not None:
            return arr, _backend
    return guards.allocate(shape, dtype), None


def field_storage(shape: tuple[int, ...], dtype: DTypeLike) -> np.ndarray:
    """A field's storage: the current executor's resident memory where that is the host's own
    (Vulkan's mapped memory: its kernels bind it in place, with no copy in or out around a
    launch, and Python scope reads and writes it directly), else zeroed guarded host memory (guards.py)."""
    if _backend is not None and _backend.resident_is_host:
        arr = _backend.resident_array(shape, dtype)
        if arr is not None:
            return arr
    return guards.allocate(shape, dtype)


def written_arrays(kernel: ir.Kernel) -> frozenset[str]:
    """The ndarray parameters some task stores to or updates atomically."""
    out: set[str] = set()
    for task in kernel.tasks:
        code = task_code(kernel, task)
        written = [st.array for st in all_stmts(code) if isinstance(st, ir.Store)]
        written += [e.array for e in all_exprs(code) if isinstance(e, ir.Atomic)]
        out.update(a.name for a in written if isinstance(a, ir.Param))
    return frozenset(out)


_serials = itertools.count(1)
_backend: Backend | None = None
_no_hazards = False
_offline_cache: str | None = None  # the offline cache's directory (see transpiler/offline_cache.py), or None
_defaults = T.Defaults()

# qd.init's arch names -> the executor that is that arch here (None: this package has no
# runtime for it: AMD GPUs, Metal). On a machine without it, Quadrants falls back
# (enable_fallback=True): so do we, to the best executor there is, saying so.
ARCHS = {"gpu": None, "cuda": "cuda", "amdgpu": None, "metal": None, "vulkan": "vulkan",
         "cpu": "cpu", "x64": "cpu", "arm64": "cpu"}
BEST_FIRST = ("cuda", "vulkan", "cpu")


# qd.init options of Quadrants that change nothing a kernel computes here (debugging, caches,
# profilers, memory pools, its own compiler's passes: the fields of its CompileConfig), or
# that only some executors take (fast_math): accepted, kept in qd.cfg, and dropped where they
# do not apply.
QUADRANTS_OPTIONS = frozenset("""
    debug offline_cache offline_cache_file_path offline_cache_cleaning_policy offline_cache_cleaning_factor
    offline_cache_max_size_of_files cuda_stack_limit demote_dense_struct_fors demote_no_access_mesh_fors
    print_full_traceback check_out_of_bound gdb_trigger log_level kernel_profiler device_memory_GB
    device_memory_fraction advanced_optimization cfg_optimization print_ir print_ir_dbg_info print_accessor_ir
    print_preprocessed_ir print_struct_llvm_ir print_kernel_llvm_ir print_kernel_llvm_ir_optimized
    print_kernel_asm print_kernel_amdgcn verbose verbose_kernel_launches default_gpu_block_dim
    default_cpu_block_dim cpu_block_dim_adaptive cpu_max_num_threads max_block_dim saturating_grid_dim
    packed dynamic_index opt_level fast_math flatten_if make_thread_local make_block_local
    make_cpu_multithreading_loop simplify_before_lower_access simplify_after_lower_access lower_access
    move_loop_invariant_outside_if cache_loop_invariant_global_vars detect_read_only auto_mesh_local
    experimental_auto_mesh_local auto_mesh_local_default_occupacy make_mesh_block_local
    optimize_mesh_reordered_mapping mesh_localize_all_attr_mappings mesh_localize_from_end_mapping
    mesh_localize_to_end_mapping excepthook short_circuit_operators src_ll_cache fastcache
    real_matrix_scalarize force_scalarize_matrix half2_vectorization quant_opt_atomic_demotion
    quant_opt_store_fusion ad_stack_experimental_enabled ad_stack_size ad_stack_sparse_threshold_bytes
    num_compile_threads gpu_max_reg timeline use_graph debug_dump_path vk_api_version default_up
    raise_on_templated_floats checkpoint_yield_on_arg_ids resume_from_checkpoint
    external_metal_command_queue external_metal_command_queue_is_torch_queue
""".split())


class Config:
    """``qd.cfg`` (and ``qd.lang.impl.current_cfg()``): what the last qd.init chose, read as
    Quadrants' config is: ``arch`` (the executor running: "vulkan", "cuda" or "cpu"),
    ``debug``, ``default_fp``, ``default_ip``, ``random_seed``, ``fast_math``, and any other
    option given (None for one that was not)."""

    def __init__(self) -> None:
        self.set(lang.Arch("vulkan"), {})

    def set(self, arch: str, options: dict) -> None:
        self.__dict__.clear()
        self.__dict__.update(arch=arch, debug=False, fast_math=False, default_fp=_defaults.fp,
                             default_ip=_defaults.ip, random_seed=_random_seed)
        self.__dict__.update(options)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return None

    def __repr__(self) -> str:
        return f"<qd.cfg arch={self.arch!r} debug={self.debug}>"


def _caches(options: dict) -> str | None:
    """qd.init's cache options (transpiler/cache.py): the policy and bound of every cache, each
    cleaned now as Quadrants cleans its own at qd.init; returns the offline cache's folder."""
    folder = offline_cache.directory(options.get("offline_cache"), options.get("offline_cache_file_path"))
    cache.configure(options.get("offline_cache_cleaning_policy"), options.get("offline_cache_max_size_of_files"),
                    options.get("offline_cache_cleaning_factor"))
    for kind, where in (("offline", folder), ("spirv", None), ("cpu", None)):
        if kind != "offline" or where:
            cache.tidy(kind, where)
    return folder


def init(arch: str = "vulkan", *, no_hazards: bool = False, default_fp: T.DType | None = None,
         default_ip: T.DType | None = None, enable_fallback: bool = True, random_seed: int = 0, **options) -> None:
    """Choose the executor (``arch``: gpu, cuda, amdgpu, metal, vulkan, cpu, x64, arm64; an
    arch this machine cannot run falls back to the best one it can, with a warning, unless
    ``enable_fallback=False``). ``default_fp`` / ``default_ip`` are what Python's float and
    int stand for in kernels (f32 and i32 unless given). ``no_hazards=True`` skips the
    hazard checker on first calls. ``random_seed`` starts qd.random's sequence of launches
    (the same seed, the same numbers). Other options go to the executor (``device``,
    ``fast_math`` for Vulkan and CUDA; ``dialect="hip"``, ``race_check`` for the CPU)."""
    global _backend, _no_hazards, _defaults, _random_seed, _launches, _offline_cache, _compiled
    lang.field.new_program()
    if arch not in ARCHS:
        raise ValueError(f"unknown arch {arch!r}; choose one of {', '.join(ARCHS)}")
    for what, t, kind in (("default_fp", default_fp, "float"), ("default_ip", default_ip, "int")):
        if t is not None and not (isinstance(t, T.DType) and (t.is_float if kind == "float" else t.is_int)):
            raise ValueError(f"qd.init({what}=...) takes a {kind} dtype such as "
                             f"qd.{'f64' if kind == 'float' else 'i64'}, got {t!r}")
    _defaults = T.Defaults(default_ip or T.i32, default_fp or T.f32, bool(options.get("debug", False)))
    kernel_profiler.set_enabled(options.get("kernel_profiler", False))
    lang.math.follow_defaults(_defaults.fp, _defaults.ip)
    _random_seed, _launches, _compiled = int(random_seed), 0, 0
    _no_hazards = no_hazards
    _offline_cache = _caches(options)
    if _capture is not None:  # `transpiler emit --run`: the command line's executor, whatever the program asks
        arch, options = _capture.arch, {**options, **_capture.options}
    own = ARCHS[arch]
    candidates = ([own] if own else []) + ([b for b in BEST_FIRST if b != own] if enable_fallback or arch == "gpu"
                                           else [])
    failures = [] if own or arch == "gpu" else [f"no {arch} runtime in this package"]
    for name in candidates:
        module, cls = BACKENDS[name]
        try:
            backend = getattr(importlib.import_module(f"{__name__}.{module}"), cls)
            takes = inspect.signature(backend.__init__).parameters
            # Quadrants' options this executor has no use for are dropped; others (a typo) still fail.
            _backend = backend(**{k: v for k, v in options.items() if k in takes or k not in QUADRANTS_OPTIONS})
        except (ToolchainMissing, RuntimeError, ImportError, OSError) as exc:  # cannot start here: the next one
            failures.append(f"{name}: {exc}")
            continue
        if arch != "gpu" and name != own:
            warnings.warn(f"qd.init(arch={arch!r}): not available here ({'; '.join(failures)}); running on {name}",
                          RuntimeWarning, stacklevel=3)
        cfg.set(lang.Arch(name), options)
        return
    _backend = None
    raise RuntimeError(f"qd.init(arch={arch!r}) found no executor: " + "; ".join(failures))


_random_seed = 0
_launches = 0
_compiled = 0  # the kernel programs translated and loaded since qd.init (one per kernel and signature)
cfg = Config()


def compiled_kernels() -> int:
    """How many kernel programs were translated and loaded on the executor since qd.init: one
    per kernel and distinct signature (template values, argument types), as Quadrants counts
    its compiled functions; a call that reuses one adds nothing."""
    return _compiled


def _next_seed() -> int:
    """A new seed for every launch that uses qd.random: qd.init(random_seed=...) mixed with
    the launch count (splitmix32), so repeated calls draw new numbers, reproducibly."""
    global _launches
    _launches += 1
    z = (_random_seed * 0x9E3779B9 + _launches * 0x632BE5AB) & 0xFFFFFFFF
    z = ((z ^ (z >> 16)) * 0x85EBCA6B) & 0xFFFFFFFF
    z = ((z ^ (z >> 13)) * 0xC2B2AE35) & 0xFFFFFFFF
    return z ^ (z >> 16)


# `transpiler emit --run` (runtime/capture.py): it picks the executor every qd.init starts and
# hears of each specialization the first time a launch translates it.
_capture = None


def set_capture(recorder: object | None) -> None:
    global _capture
    _capture = recorder


def reset() -> None:
    """No executor until the next qd.init or kernel call; the launch and compile counters restart."""
    global _backend, _launches, _compiled
    _backend = None
    _launches = _compiled = 0


def current() -> Backend:
    if _backend is None:
        init()
    return _backend


def _as_array(value: object):
    """The numpy array behind a kernel argument, or None when it is not an array (a
    BufferView: its range of the backing array's host memory, which the kernel then writes)."""
    if isinstance(value, BufferView):
        whole = _as_array(value.ndarray)
        view = value.data()
        value.ndarray._written()  # what the launch writes there is the newest copy
        return view if whole is not None else None
    if isinstance(value, Ndarray):
        owner = value._owner
        if owner is not None and owner is not _backend:
            # Made on an executor since replaced (qd.init again): from now on the array is its
            # host copy, brought up to date first.
            owner.host_read(value.data)
            value._owner = None
        return value.data
    return value if isinstance(value, np.ndarray) else None


class ArrayArgumentError(TypeError, ValueError):
    """An array argument its parameter does not take: the TypeError this package raised first,
    and the ValueError Quadrants raises ("Invalid value for argument ...")."""


def _shape_mismatch(arr: np.ndarray, ndim: int | None, element_shape: tuple[int, ...], numpy: bool) -> str | None:
    """How an array's shape differs from what its parameter takes (Quadrants' words: a NumPy
    array's dimensions, a qd.ndarray's outer dimensions), or None."""
    outer = arr.ndim - len(element_shape)
    if element_shape and numpy and ndim is not None and arr.ndim != ndim + len(element_shape):
        return (f"array has ndim={ndim} element_dim={len(element_shape)}, array with {arr.ndim} dimensions is "
                "provided")
    if element_shape and (outer < 0 or arr.shape[outer:] != element_shape):
        return (f"element_shape={element_shape}, array with element shape of {arr.shape[max(outer, 0):]} is "
                "provided")
    if ndim is not None and ndim != outer:
        return (f"array has ndim={ndim}, array with {arr.ndim} dimensions is provided" if numpy else
                f"ndim={ndim}, but {outer}d ndarray with shape {arr.shape[:outer]} is provided")
    return None


def bind_arguments(kernel: lang.Kernel, args: tuple, kwargs: dict):
    """Split the call's arguments into template values, the types of ndarrays whose
    annotation leaves dtype or ndim open, the run-time values (arrays as contiguous
    numpy arrays, scalars as numpy scalars of the parameter's dtype), and the write backs
    to run after the launch (for an argument the kernel runs on a copy of). A parameter whose
    annotation is not supported is left out: translating reports it at the ``def``."""
    cached = kernel.__dict__.get("_binding")
    if cached is None:  # once per kernel: both cost more than a warm launch's Vulkan calls
        cached = kernel.__dict__["_binding"] = (inspect.signature(kernel.fn),
                                                inspect.get_annotations(kernel.fn, eval_str=True))
    sig, annotations = cached
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise KernelArgumentError(f"{kernel.__name__}(): {call_mismatch(exc)}") from None
    template_args, arg_types, values, write_backs = {}, {}, {}, []
    todo = [(name, lang.self_annotation(kernel.fn, name, annotations.get(name)), value)
            for name, value in bound.arguments.items()]
    while todo:
        name, ann, value = todo.pop(0)
        kind = lang.param_kind(ann)
        if kind in ("compound", "dataclass"):
            todo[0:0] = _members(kernel, name, ann, value)  # one parameter per member, in order
            continue
        tensor = is_tensor(value)
        if kind == "template" and not tensor and _as_array(value) is None:
            template_args[name] = value
        elif kind == "ndarray" and (value is None or isinstance(value, (lang.field.Field, lang.field.StructField))):
            template_args[name] = value  # a field for a qd.Tensor parameter: the module storage it names
        elif kind in ("template", "ndarray"):
            arr_values, arg_type, after = _bind_array(kernel, name, kind, ann, value)
            values.update(arr_values)
            write_backs += after
            if arg_type is not None:
                arg_types[name] = arg_type
        elif kind == "scalar":
            dtype = T.i32 if ann is bool else (T.python_type(ann) or ann)
            values[name] = dtype(value)
    return template_args, arg_types, values, write_backs


def _bind_array(kernel: lang.Kernel, name: str, kind: str, ann: object,
                value: object) -> tuple[dict, lang.NdarrayAnnotation | None, list]:
    """An array argument's run-time values (the contiguous array, and the grad and dual arrays
    that go with it), the type it translates with when its annotation leaves dtype or ndim open
    (None: the annotation's own), and the write backs to run after the launch."""
    write_backs = []
    grad = None
    if is_tensor(value):  # a torch tensor: its own memory on the CPU (else a copy written back after)
        arr, grad, after = tensor_argument(value, f"{kernel.__name__}(): `{name}`")
        write_backs += after
    else:
        arr = _as_array(value)
    if arr is None:
        raise TypeError(f"{kernel.__name__}(): `{name}` must be a numpy array or qd.ndarray, "
                        f"got {type(value).__name__}")
    dtype = T.from_numpy(arr.dtype)
    want = declared = lang.ndarray_annotation(ann) if kind == "ndarray" else lang.NdarrayAnnotation()
    if isinstance(value, Ndarray) and value.element_shape and (kind == "template" or want.dtype is None):
        # a qd.ndarray of vectors keeps its element type (ndim counts the outer dimensions)
        want = lang.NdarrayAnnotation(value.element_type, want.ndim if kind == "ndarray" else None)
    want_dtype = T.python_type(want.dtype) or want.dtype
    element_shape = tuple(want.element_shape or ())
    element_type = want_dtype if isinstance(want_dtype, MatrixType) else None
    if element_type is not None:  # vec3 elements: the array's last dimension is 3
        element_shape = want_dtype.shape + element_shape
        want_dtype = T.python_type(want_dtype.dtype) or want_dtype.dtype or T.defaults().fp
    outer = arr.ndim - len(element_shape)
    invalid = f"{kernel.__name__}(): Invalid value for argument {name} - required"
    shape_problem = _shape_mismatch(arr, want.ndim, element_shape, isinstance(value, np.ndarray))
    if shape_problem:
        raise ArrayArgumentError(f"{invalid} {shape_problem} (`{name}` "
                                 + (f"holds elements of shape {element_shape}: its last dimension(s) must be "
                                    f"{element_shape})" if element_shape else f"must have {want.ndim} dimension(s))"))
    retyped = None
    if want_dtype is not None and want_dtype != dtype:
        if element_type is None or not (dtype.is_int or dtype.is_float):
            raise ArrayArgumentError(f"{invalid} array has dtype={want_dtype.name}, array with dtype={dtype.name} is "
                                     f"provided (`{name}` must hold {want_dtype.name}, got {dtype.name})")
        # A vector / matrix element type takes its scalars' type from the array, as in
        # Quadrants (an i32 array for a `qd.math.mat2` parameter holds i32 matrices).
        retyped = MatrixType(element_type.shape, dtype)
    if not arr.flags.c_contiguous:  # (a transposed or strided view: run on a copy, written back after)
        if not isinstance(value, np.ndarray):
            raise TypeError(f"{kernel.__name__}(): `{name}` must be C-contiguous")
        arr = np.ascontiguousarray(arr)
        write_backs.append(functools.partial(np.copyto, value, arr))
    arg_type = None
    if retyped is not None:
        arg_type = lang.NdarrayAnnotation(retyped, outer, element_shape=want.element_shape)
    elif want_dtype is None or want.ndim is None or declared.dtype is None:
        arg_type = lang.NdarrayAnnotation(want.dtype if element_shape else dtype, outer,
                                          element_shape=want.element_shape)
    values = {name: arr}
    if grad is not None:  # a tensor that requires grad: its .grad is x.grad in the kernel
        values[(name, "grad")] = grad
    for companion_kind in ("grad", "dual"):  # a qd.ndarray made with needs_grad=True: what x.grad binds to
        companion = getattr(value, "__dict__", {}).get("_" + companion_kind)
        if companion is not None:
            values[(name, companion_kind)] = _as_array(companion)
    return values, arg_type, write_backs


def _members(kernel: lang.Kernel, name: str, ann: object, value: object) -> list[tuple[str, object, object]]:
    """A struct / vector / matrix argument's scalars, or a Python dataclass argument's
    members: (parameter name, annotation, value), as the frontend flattens the parameter."""
    from ..frontend.structs import leaves  # noqa: PLC0415 - the frontend loads with the first translation

    if lang.param_kind(ann) == "dataclass":
        return [(f"{name}_{member}", t, getattr(value, member)) for member, t in dataclass_members(ann)]
    out = []
    for flat, dtype, path in leaves(ann, name):
        v = value
        try:
            for step in path:
                v = (v[step] if isinstance(v, dict) else getattr(v, step)) if isinstance(step, str) else \
                    np.asarray(v)[step]
        except (KeyError, AttributeError, IndexError) as exc:
            raise TypeError(f"{kernel.__name__}(): `{name}` has no {'.'.join(map(str, path))} ({exc})") from None
        out.append((flat, dtype, v))
    return out


def _result_value(p: ir.Param, value: np.ndarray):
    """What one result buffer holds, as Python has it: a scalar, a bool, or a vector / matrix."""
    if p.type.element_shape:
        return value.copy()
    return bool(value.item()) if p.type.bool_elements else value.item()


def _assembled(t: object, parts: Iterator[object]):
    """A struct or tuple result built from its parts' values, in the order the frontend stored
    them: a struct as a Python-scope struct value, a vector as one, a tuple as a tuple."""
    if isinstance(t, tuple):
        return tuple(_assembled(item, parts) for item in t)
    members = getattr(t, "members", None)
    if isinstance(members, dict):
        return HostStruct({name: _assembled(T.python_type(mt) or mt, parts) for name, mt in members.items()}, t)
    value = next(parts)
    return t(value) if isinstance(t, MatrixType) else value


def entries_by_task(kernel: ir.Kernel, manifest: dict) -> dict[str, dict]:
    """Each task's manifest entry point, by the task's name: the manifest lists them in task
    order, named as emitted (a name the target reserves is renamed: `kernel` on Metal)."""
    entries = manifest["entry_points"]
    if len(entries) != len(kernel.tasks):
        raise AssertionError(f"{kernel.name}: {len(kernel.tasks)} tasks but {len(entries)} entry points")
    return {t.name: e for t, e in zip(kernel.tasks, entries, strict=True)}


def python_dtype(dtype: T.DType | type) -> T.DType:
    """``dtype``, or the one Python's int / float / bool stands for under qd.init's defaults."""
    with T.using_defaults(_defaults):
        return T.python_type(dtype) or dtype


def plan_launches(kernel: ir.Kernel, values: dict[str, object]) -> list[Launch]:
    scalars = {p.name: values[p.name].item() for p in kernel.params if not p.is_array}
    shapes = {p.name: values[p.name].shape for p in kernel.params if p.is_array}
    launches = []
    for task in kernel.tasks:
        if task.kind == "serial":
            launches.append(Launch(task, 1))
            continue
        if task.dynamic:  # the range is read on the device: a fixed grid sized to this executor
            launches.append(Launch(task, current().dynamic_blocks))
            continue
        env = uniform_env(task)
        total = 1
        for begin, end in task.ranges:
            total *= max(0, evaluate(end, scalars, shapes, env) - evaluate(begin, scalars, shapes, env))
        blocks = min(-(-total // task.block_dim), MAX_BLOCKS)
        launches.append(Launch(task, blocks))
    return launches


def run_with_loops(backend: Backend, program: object, kir: ir.Kernel, values: dict, launches: list[Launch]) -> None:
    """Launch the tasks in order, each ``qd.graph.do_while`` loop's again while its flag is
    nonzero: the tasks between two reads of a flag go in one run, after which the flag (a
    0-d ndarray the run copied back, or device memory the host maps) is read on the host,
    as Quadrants does on the backends without conditional graph nodes."""
    children: dict[int | None, list[int]] = {}
    for k, loop in enumerate(kir.loops):
        children.setdefault(loop.parent, []).append(k)

    def run_range(first: int, stop: int, parent: int | None) -> None:
        pending, k = [], first
        inner = {kir.loops[c].first: c for c in children.get(parent, [])}
        while k < stop:
            c = inner.get(k)
            if c is None:
                pending.append(launches[k])
                k += 1
                continue
            if pending:
                backend.run(program, kir, values, pending)
                pending = []
            loop = kir.loops[c]
            while True:
                run_range(loop.first, loop.stop, c)
                if not flag_value(values[loop.flag.name]):
                    break
            k = loop.stop
        if pending:
            backend.run(program, kir, values, pending)

    run_range(0, len(launches), None)


def flag_value(value: np.ndarray | cupy.ndarray) -> int:
    """A 0-d i32 array's value on the host (the call's arrays are numpy's, or CuPy's on CUDA)."""
    if not isinstance(value, np.ndarray):
        value = value.get()
    return int(np.asarray(value).reshape(-1)[0])


def hidden_values(kir: ir.Kernel, zeros: Callable[..., object] = np.zeros) -> dict[str, object]:
    """The kernel's own arguments: a zeroed buffer per kernel-scope variable and the result
    (made by ``zeros``: numpy's, or a device array module's), its fields' storage, its seed."""
    out: dict[str, object] = {}
    for p in kir.params:
        if not p.hidden or p.of:  # (x.grad: the argument's, bound by the call)
            continue
        if p.role == "field":  # the module's field: its storage, kept across calls
            out[p.name] = kir.bindings[p.name].storage()
        else:
            out[p.name] = zeros(p.type.element_shape, p.type.dtype.np_dtype) if p.is_array else np.uint32(_next_seed())
    return out


def buffer_names(kir: ir.Kernel) -> dict[str, str]:
    """How an overrun report names each buffer parameter: a field, an ndarray argument, or
    the kernel's own scratch (a kernel-scope variable, the result)."""
    out = {}
    for p in kir.params:
        if p.role == "field":  # (by the field's own name: a parameter's may carry a suffix)
            field = kir.bindings.get(p.name)
            out[p.name] = f"field `{getattr(field, 'name', None) or getattr(field, '_qd_name', None) or p.name}`"
        elif p.hidden and not p.of:
            out[p.name] = f"the kernel's own buffer `{p.name}` ({p.role or 'scratch'})"
        else:
            out[p.name] = f"ndarray `{p.name}`"
    return out


def memory_key(arr: np.ndarray) -> tuple:
    """What makes two arguments one buffer: the same memory seen the same way (an array
    passed for two parameters, or two views of it from the same address)."""
    return (arr.__array_interface__["data"][0], arr.nbytes, arr.dtype.str)


def _replay_key(args: tuple) -> tuple | None:
    """What must be the same for a call to replay the last one: each qd.ndarray itself (a
    weak reference: holding it would keep its memory alive) and each scalar's type and
    value (its bytes: -0.0 == 0.0 but is pushed differently); None when an argument is
    anything else (a numpy array is copied in each call)."""
    key = []
    for a in args:
        if isinstance(a, Ndarray):
            key.append(weakref.ref(a))
        elif type(a) in (int, float, bool) or isinstance(a, np.generic):
            key.append(_scalar_key(a))
        else:
            return None
    return tuple(key)


def _scalar_key(a: object) -> tuple:
    return (type(a), a, np.signbit(a) if isinstance(a, (float, np.floating)) else None)


class _FieldStorage:
    """In a replay key: a field and (weakly) the storage its last call bound."""

    __slots__ = ("field", "storage")

    def __init__(self, field: lang.field.Field | Ndarray, storage: np.ndarray):
        self.field, self.storage = field, weakref.ref(storage)

    def same(self) -> bool:
        field = self.field  # (a field's storage is made on first use: reading it must not make it)
        current = field.__dict__.get("_data") if isinstance(field, lang.field.Field) else field.storage()
        return current is self.storage()


def _same_call(key: tuple, args: tuple) -> bool:
    if len(key) != len(args):
        return False
    for k, a in zip(key, args, strict=True):
        if isinstance(k, weakref.ref):
            if k() is not a:
                return False
        elif k[0] is not type(a) or not k == _scalar_key(a):
            return False
    return True


def launch(kernel: lang.Kernel, args: tuple, kwargs: dict) -> object:
    """Run ``kernel`` on the current executor; returns what the kernel returns (or None)."""
    global _compiled
    backend = current()
    last = kernel.__dict__.get("_last_call")
    t0 = time.perf_counter()
    if last is not None and not kwargs and last[0] is backend and _same_call(last[1], args) \
            and all(f.same() for f in last[4]) and _zeroed(last[7]) and backend.replay(last[2], last[3]):
        if last[5] is not None:
            last[5].verify(kernel.__name__, last[6])
        if kernel_profiler.enabled:
            kernel_profiler.record(kernel.__name__, (time.perf_counter() - t0) * 1e3)
        return last[8]()
    with T.using_defaults(_defaults):  # Python's int and float in annotations, at call time
        template_args, arg_types, values, write_backs = bind_arguments(kernel, args, kwargs)
    if backend.host_memory_kernels:  # (before the hidden values, which are guarded already)
        guards.shield(values, write_backs, [name for name in values if isinstance(name, str)])
    cache = kernel.__dict__.setdefault("_program_cache", {})
    key = (backend.serial, freeze(template_args, instance_key), freeze(arg_types, instance_key), _defaults)
    hit = cache.get(key)
    first = None
    if hit is None:
        if _capture is not None:
            _capture.observe(kernel, template_args, arg_types, _defaults)
        # The first call translates (and runs the hazard checker: a divergent barrier is an
        # error before anything runs, warnings are qd.HazardWarning) and loads the program.
        first = profile.FirstCall(kernel.__name__, backend.name) if profile.enabled else None
        t0 = time.perf_counter()
        tr = translate(kernel, backend.target, template_args=template_args, arg_types=arg_types,
                       no_hazards=_no_hazards, default_ip=_defaults.ip, default_fp=_defaults.fp, debug=_defaults.debug,
                       offline_cache=_offline_cache, **backend.translate_options())
        t1 = time.perf_counter()
        hit = cache[key] = (tr.ir, backend.load(tr))
        if first is not None:
            first.translated(tr.seconds, t1 - t0)
            first.loaded_in(time.perf_counter() - t1)
        _compiled += 1
    kir, program = hit
    hidden = [p for p in kir.params if p.hidden]
    values.update(hidden_values(kir, guards.allocate if backend.host_memory_kernels else np.zeros))
    for p in hidden:
        if p.of:  # x.grad / x.dual in the kernel: the argument's own
            if (p.of, p.role) not in values and kernel.autodiff is not None:
                values[(p.of, p.role)] = np.zeros(values[p.of].shape, values[p.of].dtype)  # (a constant: no adjoint)
            if (p.of, p.role) not in values:
                raise TypeError(f"{kernel.__name__}(): the kernel uses `{p.of}.{p.role}`: pass a qd.ndarray made with "
                                f"needs_{p.role}=True for `{p.of}`")
            values[p.name] = values[(p.of, p.role)]
    t0 = time.perf_counter()
    if kir.loops:
        run_with_loops(backend, program, kir, values, plan_launches(kir, values))
    else:
        backend.run(program, kir, values, plan_launches(kir, values))
    if kir.prints:  # (first: before a failed check's error, as the device printed them before it stopped)
        from .prints import show_prints  # noqa: PLC0415 - only for a kernel that prints

        show_prints(kir, values)
    if kernel_profiler.enabled:  # (the run returns when the device is done)
        kernel_profiler.record(kernel.__name__, (time.perf_counter() - t0) * 1e3)
    checks = guards.checklist(values)
    describe = functools.partial(buffer_names, kir)
    try:
        if checks is not None:
            checks.verify(kernel.__name__, describe)
    finally:
        for write_back in write_backs:  # an argument the kernel ran on a copy of: what the kernel wrote
            write_back()
    if kir.asserts:
        from .asserts import raise_failed_assert  # noqa: PLC0415 - only when an assert failed

        raise_failed_assert(kir, values)
    if first is not None:
        first.done()
    # A kernel with no arguments of its own but fields (not a seed) may be replayed by the next
    # call with the same arguments, while each field keeps the storage this call bound
    # (qd.reset() lets it go); on an executor whose kernels use host memory in place, so may
    # one with scratch buffers and a result: the same buffers, zeroed again.
    fields = [p for p in hidden if p.role == "field"]
    own = [values[p.name] for p in hidden if p.role in ("scratch", "result") and not p.of] \
        if backend.host_memory_kernels else []
    replayable = len(fields) + len(own) == len(hidden) and not kwargs and not kir.loops
    token = backend.replay_token(program) if replayable else None
    key = None if token is None else _replay_key(args)
    results = [p for p in hidden if p.role == "result"]
    returned = functools.partial(_returned, kernel, kir, results, [values[p.name] for p in results])
    kernel.__dict__["_last_call"] = None if key is None else \
        (backend, key, program, token, tuple(_FieldStorage(kir.bindings[p.name], values[p.name]) for p in fields),
         checks, describe, own, returned)
    return returned()


def _zeroed(buffers: list[np.ndarray]) -> bool:
    """The kernel's own buffers as a new call gets them (hidden_values): zeros."""
    for b in buffers:
        b.fill(0)
    return True


def _returned(kernel: lang.Kernel, kir: ir.Kernel, results: list[ir.Param], buffers: list[np.ndarray]) -> object:
    """What the kernel returns, from its result buffers (None when it has none)."""
    if not results:
        return None
    parts = iter([_result_value(p, b) for p, b in zip(results, buffers, strict=True)])
    if not kir.result_paths:
        return next(parts)
    from ..frontend.kernel_scope import result_type  # noqa: PLC0415 - the frontend loads with the first translation

    return _assembled(result_type(kernel.__dict__["_binding"][1]["return"]), parts)


# What the language's host-side objects (fields, qd.ndarray, qd.cfg) ask of the runtime,
# which lang cannot import: installed as this module is imported (see lang/host.py).
def set_defaults(fp: T.DType | None = None, ip: T.DType | None = None) -> None:
    """What Python's float / int stand for in kernels from now on, as qd.init's default_fp /
    default_ip set them (``qd.lang.impl.get_runtime().default_ip = qd.u32``)."""
    global _defaults
    _defaults = T.Defaults(ip or _defaults.ip, fp or _defaults.fp, _defaults.debug)
    lang.math.follow_defaults(_defaults.fp, _defaults.ip)
    cfg.__dict__.update(default_fp=_defaults.fp, default_ip=_defaults.ip)


install_host_hooks(ndarray=Ndarray, python_dtype=python_dtype, field_storage=field_storage, config=cfg,
                   executor=current, set_defaults=set_defaults, compiled_kernels=compiled_kernels)


__all__ = ["init", "launch", "ndarray", "Ndarray", "Backend", "Launch", "TranspileError"]

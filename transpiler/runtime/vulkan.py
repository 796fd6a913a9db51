"""Run kernels through Vulkan: the GLSL target's files -> SPIR-V (glslang) -> one compute
pipeline per task, on any Vulkan 1.2 device. A machine without a GPU uses Mesa's
lavapipe (llvmpipe on the CPU).

The binding contract is the manifest's: ndarray k is a storage buffer at set 0, binding
k; scalars and extents are push constants at the recorded offsets. Buffers are
host-visible and host-coherent, so a launch is: copy the arrays in, record every task's
dispatch into one command buffer (a compute->compute barrier between them), submit, wait,
copy the written arrays back into the caller's numpy arrays.

Every cffi struct handed to a Vulkan call is bound to a Python variable until the call
returns: an inline nested struct is garbage-collected before the call reads it.

lavapipe caveat: llvmpipe ends a shader invocation's loops after 65535 back-edges in total
(LP_MAX_TGSI_LOOP_ITERATIONS in Mesa's gallivm), silently. Grid-stride loops stay far
below that; a serial loop (or a spin-wait) longer than it is cut short on the CPU driver.
Kernels are translated for lavapipe with the GLSL target's ``lavapipe`` option: a fence is
an atomic on a shared word (llvmpipe takes memoryBarrier() for a workgroup barrier, which
in a spin-wait ended the workgroup mid-loop), and each iteration of a loop that polls memory
(volatile loads, atomic reads) pauses first, so a spin-wait lasts tens of milliseconds,
not one, before that cut (see GlslRenderer.stmt_Fence and stmt_While).
"""
from __future__ import annotations

import atexit
import functools
import hashlib
import os
import struct
import sys
import threading
import warnings
import weakref

import numpy as np

from .. import cache
from ..errors import ToolchainMissing
from ..ir import nodes as ir
from ..ir.records import record, field
from ..ir.walk import all_exprs, all_stmts, task_node_kinds
from . import (
    Backend, Launch, Translation, buffer_names, entries_by_task, guards, memory_key, profile, spirv_compiler, warm_up,
    written_arrays,
)

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

INSTALL_HINT = "pip install vulkan; apt-get install libvulkan1 mesa-vulkan-drivers (lavapipe runs on the CPU)"
VULKAN_API = (1, 2)

# Optional device features the GLSL target may ask for: the struct that carries each one,
# the device extension that struct needs (None: core in Vulkan 1.2), and its members.
CORE_FEATURES = ("shaderInt64", "shaderFloat64", "shaderInt16")
FEATURE_STRUCTS = (
    ("VkPhysicalDeviceVulkan11Features", "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES", None,
     ("storageBuffer16BitAccess",)),
    ("VkPhysicalDeviceVulkan12Features", "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES", None,
     ("storageBuffer8BitAccess", "shaderInt8", "shaderFloat16", "shaderBufferInt64Atomics",
      "shaderSharedInt64Atomics", "vulkanMemoryModel", "vulkanMemoryModelDeviceScope",
      "shaderSubgroupExtendedTypes")),
    ("VkPhysicalDeviceSubgroupSizeControlFeatures",
     "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES", "VK_EXT_subgroup_size_control",
     ("subgroupSizeControl", "computeFullSubgroups")),
    ("VkPhysicalDeviceShaderAtomicFloatFeaturesEXT",
     "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT", "VK_EXT_shader_atomic_float",
     ("shaderBufferFloat32Atomics", "shaderBufferFloat32AtomicAdd", "shaderBufferFloat64Atomics",
      "shaderBufferFloat64AtomicAdd", "shaderSharedFloat32Atomics", "shaderSharedFloat32AtomicAdd",
      "shaderSharedFloat64Atomics", "shaderSharedFloat64AtomicAdd")),
    ("VkPhysicalDeviceShaderClockFeaturesKHR",
     "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CLOCK_FEATURES_KHR", "VK_KHR_shader_clock",
     ("shaderSubgroupClock", "shaderDeviceClock")),
    ("VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT",
     "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_2_FEATURES_EXT", "VK_EXT_shader_atomic_float2",
     ("shaderBufferFloat32AtomicMinMax", "shaderBufferFloat64AtomicMinMax",
      "shaderSharedFloat32AtomicMinMax", "shaderSharedFloat64AtomicMinMax")),
)
# Device kinds, most wanted first.
DEVICE_RANK = ("VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU", "VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU",
               "VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU", "VK_PHYSICAL_DEVICE_TYPE_CPU",
               "VK_PHYSICAL_DEVICE_TYPE_OTHER")
# VK_EXT_subgroup_size_control, core in Vulkan 1.3 under the same values; the `vulkan`
# package leaves some of the extension's aliases None, hence the numbers.
REQUIRE_FULL_SUBGROUPS_BIT = 0x2  # VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT
SUBGROUP_OPERATIONS = ("BASIC", "VOTE", "ARITHMETIC", "BALLOT", "SHUFFLE", "SHUFFLE_RELATIVE", "CLUSTERED", "QUAD")
PUSH_FORMATS = {"bool": "<I", "i32": "<i", "u32": "<I", "i64": "<q", "u64": "<Q", "f32": "<f", "f64": "<d"}


class DeviceUnsupported(RuntimeError):
    """The chosen Vulkan device lacks something a kernel needs (a feature, a limit)."""


VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"
PRINTF_HINT = "apt-get install vulkan-validationlayers"


def _loader_version(vk: ModuleType) -> tuple[int, int]:
    try:
        v = vk.vkEnumerateInstanceVersion()
    except Exception:  # noqa: BLE001 - a Vulkan 1.0 loader has no such call
        return (1, 0)
    return vk.VK_VERSION_MAJOR(v), vk.VK_VERSION_MINOR(v)


def validation_layer_present(vk: ModuleType) -> bool:
    return any(_text(layer.layerName) == VALIDATION_LAYER for layer in vk.vkEnumerateInstanceLayerProperties())


def _vulkan():
    try:
        import vulkan  # noqa: PLC0415 - optional: vulkan, and libvulkan.so.1 may be missing
    except (ImportError, OSError) as exc:  # OSError: the package is there, libvulkan.so.1 is not
        raise ToolchainMissing(f"Vulkan ({exc})", INSTALL_HINT) from None
    return vulkan


def _text(value: object) -> str:
    """A char array from the `vulkan` package: it hands some out as str, some as cdata."""
    if isinstance(value, str):
        return value
    from vulkan import ffi  # noqa: PLC0415 - optional: vulkan (loaded by _vulkan first)

    return ffi.string(value).decode()


# ----------------------------------------------------------------------------- the device

class Device:
    """One Vulkan instance, physical device, logical device and compute queue, created
    once per process (see ``get_device``) with every optional feature the device has."""

    def __init__(self, choice: str | int | None = None, printf: bool = False):
        vk = self.vk = _vulkan()
        self.ffi = vk.ffi
        self.lock = threading.RLock()  # re-entered when a qd.ndarray is freed during a launch (a GC)
        self.printed: list[str] = []  # debugPrintfEXT output, when ``printf``
        self.printed_capable = printf
        # Vulkan 1.3 where the loader has it: shaders that print need its core
        # VK_KHR_shader_non_semantic_info (lavapipe does not list the extension).
        version = vk.VK_MAKE_VERSION(1, 3, 0) if _loader_version(vk) >= (1, 3) else \
            vk.VK_MAKE_VERSION(*VULKAN_API, 0)
        app = vk.VkApplicationInfo(pApplicationName="transpiler", apiVersion=version)
        keep = []
        if printf:
            # The validation layer runs the shaders' debugPrintfEXT; nothing else of it is wanted.
            features = vk.VkValidationFeaturesEXT(
                pEnabledValidationFeatures=[vk.VK_VALIDATION_FEATURE_ENABLE_DEBUG_PRINTF_EXT],
                pDisabledValidationFeatures=[getattr(vk, f"VK_VALIDATION_FEATURE_DISABLE_{n}_EXT") for n in (
                    "THREAD_SAFETY", "API_PARAMETERS", "OBJECT_LIFETIMES", "CORE_CHECKS", "UNIQUE_HANDLES")])
            keep.append(features)
            info = vk.VkInstanceCreateInfo(pNext=features, pApplicationInfo=app,
                                           ppEnabledLayerNames=[VALIDATION_LAYER],
                                           ppEnabledExtensionNames=["VK_EXT_debug_utils", "VK_EXT_validation_features"])
        else:
            info = vk.VkInstanceCreateInfo(pApplicationInfo=app)
        try:
            self.instance = vk.vkCreateInstance(info, None)
        except vk.VkError as exc:
            raise ToolchainMissing(f"a Vulkan driver ({type(exc).__name__})", INSTALL_HINT) from None
        if printf:
            self._messenger = self._listen()
        self.physical = self._pick(choice)
        props = vk.vkGetPhysicalDeviceProperties(self.physical)
        self.name = _text(props.deviceName)
        self.type = next(t for t in DEVICE_RANK if getattr(vk, t) == props.deviceType)
        self.lavapipe = self.name.startswith("llvmpipe")
        limits = props.limits
        self.max_push_constants = limits.maxPushConstantsSize
        self.max_workgroup_size = limits.maxComputeWorkGroupSize[0]
        self.max_workgroup_invocations = limits.maxComputeWorkGroupInvocations
        self.max_workgroups = limits.maxComputeWorkGroupCount[0]
        self.max_shared_memory = limits.maxComputeSharedMemorySize
        self.max_storage_buffers = min(limits.maxPerStageDescriptorStorageBuffers,
                                       limits.maxDescriptorSetStorageBuffers)
        self.extensions = {_text(e.extensionName) for e in vk.vkEnumerateDeviceExtensionProperties(self.physical, None)}
        self._subgroup_properties()
        self.features = self._create_device()
        self.queue = vk.vkGetDeviceQueue(self.device, self.queue_family, 0)
        mem = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        self.memory_types = [mem.memoryTypes[k].propertyFlags for k in range(mem.memoryTypeCount)]
        pool_info = vk.VkCommandPoolCreateInfo(flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                               queueFamilyIndex=self.queue_family)
        self.command_pool = vk.vkCreateCommandPool(self.device, pool_info, None)
        self.fence = vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(), None)
        self._fences = self.ffi.new("VkFence[1]", [self.fence])

    def submit_and_wait(self, submit: object) -> None:
        """Run one recorded submission (a VkSubmitInfo) to completion. The loader's functions
        are called directly: the binding's argument conversion cost more than the three calls."""
        vk, lib = self.vk, self.vk.lib
        result = lib.vkQueueSubmit(self.queue, 1, self.ffi.addressof(submit), self.fence)
        if result != vk.VK_SUCCESS:
            raise vk.exception_codes[result]
        result = lib.vkWaitForFences(self.device, 1, self._fences, vk.VK_TRUE, 2**64 - 1)
        lib.vkResetFences(self.device, 1, self._fences)
        if result != vk.VK_SUCCESS:
            raise vk.exception_codes[result]

    def __repr__(self) -> str:
        return f"<Vulkan device {self.name!r} ({self.type[len('VK_PHYSICAL_DEVICE_TYPE_'):].lower()})>"

    def _listen(self):
        """Collect what shaders print (the layer's DEBUG-PRINTF messages) into ``printed``."""
        vk = self.vk

        def callback(severity: int, types: int, data: object, user: object):
            text = self.ffi.string(data.pMessage).decode(errors="replace")
            if "DEBUG-PRINTF" in text:
                self.printed.append(text.rsplit(" | ", 1)[-1])
            return 0

        self._callback = callback  # cffi keeps only a weak hold on it
        info = vk.VkDebugUtilsMessengerCreateInfoEXT(
            messageSeverity=vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT, messageType=(
                vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT),
            pfnUserCallback=callback)
        return vk.vkGetInstanceProcAddr(self.instance, "vkCreateDebugUtilsMessengerEXT")(self.instance, info, None)

    def flush_printed(self) -> None:
        """Write what the last submission's shaders printed to stdout, in order."""
        if self.printed:
            sys.stdout.write("".join(self.printed))
            sys.stdout.flush()
            self.printed.clear()

    def _pick(self, choice: str | int | None):
        vk = self.vk
        candidates = []
        for k, pd in enumerate(vk.vkEnumeratePhysicalDevices(self.instance)):
            props = vk.vkGetPhysicalDeviceProperties(pd)
            name = _text(props.deviceName)
            major, minor = vk.VK_VERSION_MAJOR(props.apiVersion), vk.VK_VERSION_MINOR(props.apiVersion)
            if (major, minor) < VULKAN_API:
                continue
            if choice is not None and not (choice == k or (isinstance(choice, str) and choice.lower() in name.lower())):
                continue
            rank = next(r for r, t in enumerate(DEVICE_RANK) if getattr(vk, t) == props.deviceType)
            candidates.append((rank, k, pd))
        if not candidates:
            wanted = f" matching {choice!r}" if choice is not None else ""
            raise ToolchainMissing(f"a Vulkan {VULKAN_API[0]}.{VULKAN_API[1]} device{wanted}", INSTALL_HINT)
        return min(candidates, key=lambda c: c[:2])[2]

    def _subgroup_properties(self) -> None:
        """``subgroup_size`` (the default width), ``subgroup_operations`` (VK_SUBGROUP_FEATURE_
        names usable in compute shaders) and ``subgroup_size_range`` (the widths a pipeline
        may require; just the default without VK_EXT_subgroup_size_control for compute)."""
        vk, ffi = self.vk, self.ffi
        sub = ffi.new("VkPhysicalDeviceSubgroupProperties*")
        sub.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES
        props2 = ffi.new("VkPhysicalDeviceProperties2*")
        props2.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
        props2.pNext = sub
        control = None
        if "VK_EXT_subgroup_size_control" in self.extensions:
            control = ffi.new("VkPhysicalDeviceSubgroupSizeControlProperties*")
            control.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES
            sub.pNext = control
        vk.vkGetPhysicalDeviceProperties2(self.physical, props2)
        self.subgroup_size = int(sub.subgroupSize)
        compute = bool(sub.supportedStages & vk.VK_SHADER_STAGE_COMPUTE_BIT)
        self.subgroup_operations = frozenset(
            name for name in SUBGROUP_OPERATIONS
            if compute and sub.supportedOperations & getattr(vk, f"VK_SUBGROUP_FEATURE_{name}_BIT"))
        self.subgroup_size_range = (self.subgroup_size, self.subgroup_size)
        self.max_workgroup_subgroups = None  # a limit only on pipelines that require a width
        if control is not None and control.requiredSubgroupSizeStages & vk.VK_SHADER_STAGE_COMPUTE_BIT:
            self.subgroup_size_range = (int(control.minSubgroupSize), int(control.maxSubgroupSize))
            self.max_workgroup_subgroups = int(control.maxComputeWorkgroupSubgroups)

    def _feature_chain(self):
        """A VkPhysicalDeviceFeatures2 chain over the structs this device can fill:
        (head, [(member names, struct)], keep-alive list)."""
        vk, ffi = self.vk, self.ffi
        head = ffi.new("VkPhysicalDeviceFeatures2*")
        head.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
        parts, prev = [(CORE_FEATURES, head.features)], head
        keep = [head]
        for cname, stype, ext, names in FEATURE_STRUCTS:
            if ext is not None and ext not in self.extensions:
                continue
            s = ffi.new(cname + "*")
            s.sType = getattr(vk, stype)
            prev.pNext = s
            prev = s
            parts.append((names, s))
            keep.append(s)
        return head, parts, keep

    def _create_device(self) -> frozenset[str]:
        vk = self.vk
        query, query_parts, _keep_query = self._feature_chain()
        vk.vkGetPhysicalDeviceFeatures2(self.physical, query)
        supported = {n for names, s in query_parts for n in names if getattr(s, n)}
        # Enable everything optional the device has: kernels come later and share the device.
        enable, enable_parts, _keep_enable = self._feature_chain()
        for names, s in enable_parts:
            for n in names:
                if n in supported:
                    setattr(s, n, vk.VK_TRUE)
        exts = sorted({ext for _, _, ext, names in FEATURE_STRUCTS
                       if ext is not None and ext in self.extensions and supported & set(names)})
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        self.queue_family = next(k for k, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
        queue_info = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.queue_family, queueCount=1,
                                                pQueuePriorities=[1.0])
        info = vk.VkDeviceCreateInfo(pNext=enable, pQueueCreateInfos=[queue_info], ppEnabledExtensionNames=exts)
        self.device = vk.vkCreateDevice(self.physical, info, None)
        self.enabled_extensions = frozenset(exts)
        return frozenset(supported)

    def memory_types_for(self, type_bits: int) -> list[int]:
        """Memory types a buffer can live in, best first: host-visible and host-coherent
        (so arrays are copied with memcpy and no flushes), device-local too where a type is
        both (integrated GPUs, resizable BAR, lavapipe)."""
        vk = self.vk
        want = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        usable = [k for k, flags in enumerate(self.memory_types) if type_bits & (1 << k) and flags & want == want]
        if not usable:
            raise DeviceUnsupported(f"{self.name} has no host-visible, host-coherent memory for storage buffers")
        local = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
        return sorted(usable, key=lambda k: not self.memory_types[k] & local)


_devices: dict[object, Device] = {}
_devices_lock = threading.Lock()


def get_device(choice: str | int | None = None, printf: bool = False) -> Device:
    """The process-wide Vulkan device: ``choice`` is an index or part of a device name;
    by default a discrete GPU, else an integrated one, else the CPU (lavapipe). With
    ``printf``, a second instance of it with the validation layer's debug printf on."""
    with _devices_lock:
        dev = _devices.get((choice, printf))
        if dev is None:
            dev = _devices[(choice, printf)] = Device(choice, printf)
            if len(_devices) == 1:
                atexit.register(_shutdown)
        return dev


def _shutdown() -> None:
    for dev in _devices.values():
        try:
            dev.vk.vkDeviceWaitIdle(dev.device)
        except Exception:  # noqa: BLE001 - the interpreter is exiting; nothing to report to
            pass


# ----------------------------------------------------------------------------- the device, beside qd.init

# Creating the device is most of qd.init: the `vulkan` binding's import, the loader's instance
# (it loads every installed driver), the device and its queue: 100-130 ms on lavapipe, 2 cores.
# Where this configuration made a device before, qd.init leaves that to a thread of its own and
# returns; the first use of the device waits for it. Without that record it is made in qd.init,
# as a failure there lets qd.init fall back to another executor.
_DRIVER_DIRS = ("/etc/vulkan/icd.d", "/usr/share/vulkan/icd.d", "/usr/local/share/vulkan/icd.d",
                "~/.local/share/vulkan/icd.d")


def _record_path(choice: str | int | None, printf: bool) -> str:
    """The file whose presence says a device for ``choice`` was made here: named by what
    decides whether one can be (the choice, the loader's VK_* variables, the driver manifests'
    folders, which a driver installed or removed changes, and the binding's package)."""
    import importlib.util  # noqa: PLC0415 - only here

    spec = importlib.util.find_spec("vulkan")
    parts = [repr(choice), str(printf), spec.origin if spec else "-"]
    parts += sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("VK_"))
    for folder in _DRIVER_DIRS:
        try:
            parts.append(f"{folder}:{os.stat(os.path.expanduser(folder)).st_mtime_ns}")
        except OSError:
            parts.append(f"{folder}:-")
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]
    return os.path.join(cache.directory("vulkan"), "device-" + digest)


class _Beside:
    """``first(True)`` then ``get_device(choice, printf)`` in a thread; ``get`` waits for the device.
    (One thread from qd.init: each start waits for the new thread to run, which, while others
    hold the interpreter, cost qd.init 10 ms a thread; ``first`` starts the warm-up's.)"""

    def __init__(self, choice: str | int | None, printf: bool, record_path: str, first: Callable[[bool], object]):
        self.device: Device | None = None
        self.error: BaseException | None = None
        self.record_path = record_path
        self.thread = threading.Thread(target=self._make, args=(choice, printf, first), daemon=True,
                                       name="qd-vulkan-device")
        _beside.add(self.thread)
        self.thread.start()

    def _make(self, choice: str | int | None, printf: bool, first: Callable[[bool], object]) -> None:
        try:
            first(True)
        except Exception:  # noqa: BLE001 - a head start only; the device is what matters here
            pass
        try:
            self.device = get_device(choice, printf)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits (get)
            self.error = exc
            try:  # the next qd.init makes it in place again, and may fall back
                os.remove(self.record_path)
            except OSError:
                pass

    def get(self) -> Device:
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.device


_beside: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


@atexit.register
def _join_beside() -> None:
    """A device still being made when the program ends: finished, not cut off inside the driver."""
    for thread in list(_beside):
        thread.join()


def start_device(choice: str | int | None, printf: bool, first: Callable[[bool], object]) -> Callable[[], Device]:
    """``first(beside)``, and what gives the device: made already, made here (no record of one),
    or in a thread (which calls ``first`` too); ``beside`` says whether it is that thread."""
    with _devices_lock:
        dev = _devices.get((choice, printf))
    path = None if dev is not None else _record_path(choice, printf)
    if path is not None and os.path.exists(path):
        return _Beside(choice, printf, path, first).get
    first(False)
    if dev is None:
        dev = get_device(choice, printf)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").close()
        except OSError:
            pass  # a read-only home: each qd.init makes the device in place
    return lambda: dev


# ----------------------------------------------------------------------------- SPIR-V

_spirv_cache: dict[str, bytes] = {}


def spirv_ready() -> None:
    """What ``spirv_for`` imports and asks first, ahead of a first call (3 ms of it)."""
    from ..targets.glsl import TARGET_ENV  # noqa: F401, PLC0415 - see spirv_for
    from ..toolchains.glsl_check import compile_glsl  # noqa: F401, PLC0415

    spirv_compiler.identity()


def spirv_for(text: str, name: str) -> tuple[bytes, str]:
    """SPIR-V for one GLSL file, cached by the hash of its text and compiler (in memory and
    on disk), and where it came from: "in memory", "from disk" or "compiled". Compiled in
    this process where glslang's libraries are installed (a few ms, see spirv_compiler),
    else by glslangValidator (~0.16 s a file)."""
    # Imported here, not by qd.init: the GLSL target and the glslang command line's module (with
    # subprocess, shutil, tempfile) cost 20-40 ms there, and a first call imports them anyway.
    from ..targets.glsl import TARGET_ENV  # noqa: PLC0415
    from ..toolchains.glsl_check import compile_glsl, glslang_version  # noqa: PLC0415

    in_process = spirv_compiler.identity()
    compiler = f"in-process {in_process}" if in_process else glslang_version()
    key = hashlib.sha256(f"{compiler}\0{TARGET_ENV}\0{text}".encode()).hexdigest()
    hit = _spirv_cache.get(key)
    if hit is not None:
        return hit, "in memory"
    origin = "from disk"
    folder = cache.directory("spirv")
    path = os.path.join(folder, key + ".spv")
    try:
        with open(path, "rb") as f:
            hit = f.read()
        cache.touch(path)
    except OSError:
        hit = None
    if not hit:
        origin = "compiled"
        hit = spirv_compiler.compile_in_process(text) if in_process else None
        if not hit:
            hit = compile_glsl(text, name)
        try:
            os.makedirs(folder, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write(hit)
            os.replace(tmp, path)  # atomic: a concurrent reader never sees half a file
            cache.added("spirv", folder, key + ".spv", len(hit))
        except OSError:
            pass  # a read-only home only costs the recompilation
    _spirv_cache[key] = hit
    return hit, origin


# ----------------------------------------------------------------------------- programs

def _word_end(nbytes: int) -> int:
    """Where an array's red zone starts in its buffer: past the 32-bit word its last element
    ends in, since a shader stores a bool (or a packed 8/16-bit element) as a whole word."""
    return -(-nbytes // 4) * 4


@record
class _Buffer:
    buffer: object
    memory: object
    capacity: int
    view: np.ndarray  # the persistently mapped memory, as bytes


# lavapipe sets up every workgroup anew: a shader that has barriers runs as coroutines, one per
# SIMD row of invocations, about 1.5 us a workgroup, which a block reduction over 4M elements
# (32,768 workgroups of 128) paid 50 ms of, a third of its run. Such a task is launched there
# with Quadrants' cap on a SPIR-V grid-stride launch, 131,072 invocations, its loop covering
# the rest. One without barriers pays less a workgroup, and more for each stride across memory:
# over 4M elements, saxpy and the 2-D stencil took 12 and 35 ms on a workgroup per block, 7 and
# 21 capped at 131,072 invocations, while the particles update (vec3 elements) took 36 ms, 46
# capped there, 27-31 at 524,288: that cap, for all of them (min of 30 calls, AMD EPYC, 2
# cores). At most MAX_STRIDES iterations per invocation either way, as llvmpipe ends an
# invocation's loops after 65,535 back-edges in all.
CAPPED_INVOCATIONS = 131072
STREAMING_INVOCATIONS = 524288
MAX_STRIDES = 64
SAME_IN_EVERY_BLOCK = ("thread_idx", "block_dim")


def grid_stride_only(task: ir.Task) -> bool:
    """Whether ``task`` computes the same on any grid that its grid-stride loop covers the range
    with, which on lavapipe runs faster on a smaller one: no loop or function call of its own
    (so a bounded number of back-edges per iteration, and no spin-wait on another block), and
    nothing that tells blocks apart (block or grid indices, device-scope fences)."""
    if task.kind != "parallel" or task.dynamic:
        return False
    kinds = task_node_kinds(task)
    if kinds & {ir.For, ir.While, ir.Call}:
        return False
    code = task.code()
    return all(e.kind in SAME_IN_EVERY_BLOCK for e in all_exprs(code) if type(e) is ir.ThreadIndex) and \
        all(st.scope in ("subgroup", "block") for st in all_stmts(code) if type(st) is ir.Fence)


def few_workgroups(task: ir.Task) -> int:
    """The workgroups a ``grid_stride_only`` task is capped to on lavapipe."""
    block_level = bool(task.shared) or ir.Barrier in task_node_kinds(task)
    return max(1, (CAPPED_INVOCATIONS if block_level else STREAMING_INVOCATIONS) // task.block_dim)


@record
class VulkanProgram:
    """One kernel instantiation on one device: pipelines, layouts and its buffers."""

    kernel: ir.Kernel
    sources: dict[str, str]
    manifest: dict
    set_layout: object
    pipeline_layout: object
    modules: list
    pipelines: dict[str, object]   # task name -> pipeline
    descriptor_pool: object
    descriptor_set: object
    command_buffer: object
    push_bytes: int
    push_members: list[tuple[str, int | None, str, int]]  # (param, dim or None, dtype, offset)
    bindings: dict[str, int]       # ndarray name -> binding
    written: frozenset[str]        # ndarrays some task stores to: only these are copied back
    buffers: dict[int, _Buffer] = field(default_factory=dict)
    bound: dict[int, object] = field(default_factory=dict)  # binding -> buffer in the descriptor set
    bind_epoch: int = 0            # bumped when the descriptor set changes (a recording then goes stale)
    recorded: tuple | None = None  # what the command buffer holds: (dispatches, push constants, bind_epoch)
    submit: object = None          # its VkSubmitInfo, made once
    runs: int = 0                  # launches so far; with `staged`, what a replay token names
    staged: bool = True            # whether the last run copied arrays in or out
    grid_caps: dict[str, int] = field(default_factory=dict)  # task name -> most workgroups (see few_workgroups)


@record
class _Printing:
    """A program loaded on the printing twin of the device."""

    backend: VulkanBackend
    program: VulkanProgram


class VulkanBackend(Backend):
    """``qd.init(arch="vulkan", device=None, fast_math=False)``: ``device`` picks a physical
    device by index or by part of its name; the default prefers a discrete GPU and falls
    back to the CPU. ``fast_math`` lets the driver reassociate and fuse float arithmetic."""

    name = "vulkan"
    target = "glsl"
    resident_is_host = True  # mapped, coherent memory (see resident_array)

    def __init__(self, device: str | int | None = None, fast_math: bool = False, subgroup_size: int | None = None,
                 printf: bool = False, **_options):
        # Beside the device's creation (which lets go of the GIL): the SPIR-V step's modules and the
        # cache key's compiler identity first (its imports, a stat of the library), which a first
        # call's disk hit asks for; glslang's built-in tables in a thread of their own from the start
        # (C++, without the GIL: a new kernel called right after qd.init waited for them, first call
        # 72-84 -> 29-48 ms).
        self._device = start_device(device, printf, lambda in_thread: warm_up.start(
            "glsl", first=spirv_ready, beside=spirv_compiler.fill_builtins, render_early=in_thread))
        self.choice = device
        self.fast_math = fast_math
        self._printing: VulkanBackend | None = None  # where kernels that print run (see load)
        self._asked_subgroup_size = subgroup_size
        self.resident: dict[int, _Buffer] = {}  # the host address of a qd.ndarray's mapping -> its buffer
        if subgroup_size is not None:  # a width the device cannot run fails qd.init
            _ = self.subgroup_size

    @functools.cached_property
    def device(self) -> Device:
        """The Vulkan device (made beside qd.init: the first use waits for it)."""
        return self._device()

    @functools.cached_property
    def _subgroup_size(self) -> int:
        dev, size = self.device, self._asked_subgroup_size
        low, high = dev.subgroup_size_range
        if size is not None and size != dev.subgroup_size and not (
                "subgroupSizeControl" in dev.features and low <= size <= high and size & (size - 1) == 0):
            raise DeviceUnsupported(f"{dev.name} cannot run compute shaders with subgroup size {size} "
                                    f"(it supports {low}..{high}, default {dev.subgroup_size})")
        return size or dev.subgroup_size

    @functools.cached_property
    def max_shared_memory(self) -> int:
        return self.device.max_shared_memory

    @functools.cached_property
    def on_cpu(self) -> bool:
        return self.device.type == "VK_PHYSICAL_DEVICE_TYPE_CPU"

    @functools.cached_property
    def dynamic_blocks(self) -> int:
        # lavapipe: a few workgroups per core do
        return 8 * (os.cpu_count() or 1) if self.on_cpu else Backend.dynamic_blocks

    @property
    def device_features(self) -> frozenset[str]:
        """The optional features the device has (qd.lang.impl.get_runtime().prog.get_device_caps())."""
        return self.device.features

    @property
    def subgroup_size(self) -> int:
        """The width kernels are specialized to: the device's (lavapipe: 8) unless
        ``qd.init(arch="vulkan", subgroup_size=N)`` picked another the device can require."""
        return self._subgroup_size

    # ---------------------------------------------------------------- compile

    def translate_options(self) -> dict:
        # lavapipe needs other fences and slower spin-waits (see GlslRenderer.stmt_Fence, stmt_While).
        return {"fast_math": self.fast_math, "subgroup_size": self.subgroup_size, "lavapipe": self.device.lavapipe}

    def load(self, tr: Translation) -> VulkanProgram | _Printing:
        """A kernel that prints runs on the device's twin with the validation layer's debug
        printf on (what it prints goes to stdout after each launch); without the layer it
        runs silently, and says so once."""
        if tr.manifest["requirements"].get("debug_printf") and not self.device.printed_capable:
            printing = self.printing_backend()
            if printing is not None:
                return _Printing(printing, printing.load(tr))
        return self.load_here(tr)

    def printing_backend(self) -> VulkanBackend | None:
        if self._printing is None:
            if not validation_layer_present(self.device.vk):
                if not getattr(VulkanBackend, "_told", False):
                    VulkanBackend._told = True
                    warnings.warn(f"print() in kernels shows nothing on Vulkan without the validation layer "
                                  f"({PRINTF_HINT})", RuntimeWarning, stacklevel=4)
                return None
            self._printing = VulkanBackend(self.choice, self.fast_math, self.subgroup_size, printf=True)
        return self._printing

    def load_here(self, tr: Translation) -> VulkanProgram:
        dev, vk = self.device, self.device.vk
        kernel, sources, manifest = tr.ir, tr.sources, tr.manifest
        self._check_requirements(kernel, manifest)
        arrays = [p for p in manifest["params"] if p["kind"] == "ndarray"]
        set_layout = pipeline_layout = pool = dset = None
        storage = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
        bindings = [vk.VkDescriptorSetLayoutBinding(binding=p["binding"], descriptorType=storage,
                                                    descriptorCount=1, stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)
                    for p in arrays]
        set_layouts = []
        if bindings:
            layout_info = vk.VkDescriptorSetLayoutCreateInfo(pBindings=bindings)
            set_layout = vk.vkCreateDescriptorSetLayout(dev.device, layout_info, None)
            set_layouts = [set_layout]
            pool_size = vk.VkDescriptorPoolSize(type=storage, descriptorCount=len(bindings))
            pool_info = vk.VkDescriptorPoolCreateInfo(maxSets=1, pPoolSizes=[pool_size])
            pool = vk.vkCreateDescriptorPool(dev.device, pool_info, None)
            alloc = vk.VkDescriptorSetAllocateInfo(descriptorPool=pool, pSetLayouts=set_layouts)
            dset = vk.vkAllocateDescriptorSets(dev.device, alloc)[0]
        push_bytes = -(-manifest["requirements"]["push_constant_bytes"] // 4) * 4
        ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=push_bytes)] \
            if push_bytes else []
        pl_info = vk.VkPipelineLayoutCreateInfo(pSetLayouts=set_layouts or None, pPushConstantRanges=ranges or None)
        pipeline_layout = vk.vkCreatePipelineLayout(dev.device, pl_info, None)
        modules, pipelines = [], {}
        for task_name, e in entries_by_task(kernel, manifest).items():
            with profile.stage("spirv") as note:
                spirv, origin = spirv_for(sources[e["file"]], e["file"])
                note.append(origin)
            with profile.stage("pipeline"):
                sm_info = vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv)
                module = vk.vkCreateShaderModule(dev.device, sm_info, None)
                modules.append(module)
                required, flags = self._subgroup_control(manifest, e)
                chain = {} if required is None else {"pNext": required}
                stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module,
                                                           pName=e["entry"], flags=flags, **chain)
                create = vk.VkComputePipelineCreateInfo(stage=stage, layout=pipeline_layout)
                pipelines[task_name] = vk.vkCreateComputePipelines(dev.device, None, 1, [create], None)[0]
        cb_info = vk.VkCommandBufferAllocateInfo(commandPool=dev.command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                                 commandBufferCount=1)
        with dev.lock:  # the pool is shared by every program on this device
            command_buffer = vk.vkAllocateCommandBuffers(dev.device, cb_info)[0]
        members = []
        for p in manifest["params"]:
            if p["kind"] == "ndarray":
                members += [(p["name"], d, "i32", off) for d, off in enumerate(p["shape_push_constant_offsets"])]
            else:
                members.append((p["name"], None, p.get("push_constant_dtype", p["dtype"]), p["push_constant_offset"]))
        caps = {t.name: few_workgroups(t) for t in kernel.tasks if self.on_cpu and grid_stride_only(t)}
        return VulkanProgram(kernel, sources, manifest, set_layout, pipeline_layout, modules, pipelines, pool, dset,
                             command_buffer, push_bytes, members, {p["name"]: p["binding"] for p in arrays},
                             written_arrays(kernel), grid_caps=caps)

    def _subgroup_control(self, manifest: dict, entry: dict):
        """The pNext struct pinning a pipeline's subgroup width, and the stage flags, for code
        specialized to one (None, 0 when the code does not care, or when the device cannot
        pin it and its default width is the one)."""
        dev, vk, ffi = self.device, self.device.vk, self.device.ffi
        size = manifest["requirements"].get("required_subgroup_size")
        low, high = dev.subgroup_size_range
        if size is None:
            return None, 0
        # A required width also caps a workgroup at maxComputeWorkgroupSubgroups subgroups.
        fits = dev.max_workgroup_subgroups is None or -(-entry["block_dim"] // size) <= dev.max_workgroup_subgroups
        if "subgroupSizeControl" not in dev.features or not low <= size <= high or not fits:
            if size != dev.subgroup_size:
                raise DeviceUnsupported(f"kernel {manifest['kernel']} is specialized to subgroup size {size}; "
                                        f"{dev.name} runs {dev.subgroup_size} and cannot be asked for another")
            return None, 0
        required = ffi.new("VkPipelineShaderStageRequiredSubgroupSizeCreateInfo*")
        required.sType = vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO
        required.requiredSubgroupSize = size
        flags = 0
        if "computeFullSubgroups" in dev.features and entry["block_dim"] % size == 0:
            # Block algorithms index subgroups as thread_idx // size: no partial subgroups.
            flags = REQUIRE_FULL_SUBGROUPS_BIT
        return required, flags

    def _check_requirements(self, kernel: ir.Kernel, manifest: dict) -> None:
        dev, req = self.device, manifest["requirements"]
        missing_ops = [op for op in req.get("subgroup_operations", []) if op not in dev.subgroup_operations]
        if missing_ops:
            raise DeviceUnsupported(f"kernel {kernel.name} uses subgroup operations ({', '.join(missing_ops)}) that "
                                    f"{dev.name} does not support in compute shaders")
        missing = [f for f in req["features"] if f not in dev.features]
        if missing:
            raise DeviceUnsupported(f"kernel {kernel.name} needs the Vulkan feature(s) {', '.join(missing)}, which "
                                    f"{dev.name} does not support")
        buffers = sum(1 for p in manifest["params"] if p["kind"] == "ndarray")
        if buffers > dev.max_storage_buffers:
            # Past the limit lavapipe crashed (fuzz seed 34075, 34 buffers of its 32): say so instead.
            hidden = sum(1 for p in manifest["params"] if p["kind"] == "ndarray" and p.get("role") not in (None, "arg"))
            raise DeviceUnsupported(
                f"kernel {kernel.name} binds {buffers} storage buffers ({hidden} of them its own: fields, and "
                f"kernel-scope variables other loops read, one per vector or matrix component); {dev.name} "
                f"allows {dev.max_storage_buffers} per shader. Pass fewer arrays, or keep top-level values that "
                f"later loops read in an array of your own")
        if req["push_constant_bytes"] > dev.max_push_constants:
            raise DeviceUnsupported(f"kernel {kernel.name} passes {req['push_constant_bytes']} bytes of scalars and "
                                    f"extents as push constants; {dev.name} allows {dev.max_push_constants}")
        for e in manifest["entry_points"]:
            if e["shared_bytes"] > dev.max_shared_memory:
                raise DeviceUnsupported(f"kernel {kernel.name}: entry point {e['name']} uses {e['shared_bytes']} bytes "
                                        f"of shared memory; {dev.name} has {dev.max_shared_memory} per workgroup")
            if e["block_dim"] > min(dev.max_workgroup_size, dev.max_workgroup_invocations):
                raise DeviceUnsupported(f"kernel {kernel.name}: block_dim {e['block_dim']} exceeds {dev.name}'s "
                                        f"limit of {min(dev.max_workgroup_size, dev.max_workgroup_invocations)}")

    # ---------------------------------------------------------------- run

    def run(self, program: VulkanProgram, kernel: ir.Kernel, values: dict[str, object],
            launches: list[Launch]) -> None:
        if isinstance(program, _Printing):
            program.backend.run(program.program, kernel, values, launches)
            return
        dev, vk = self.device, self.device.vk
        with dev.lock:
            arrays = {name: values[name] for name in program.bindings}
            owners, staged = self._bind_buffers(program, arrays)
            for name in staged:  # numpy arrays go through the program's buffers; qd.ndarrays live in theirs
                arr = arrays[name]
                program.buffers[program.bindings[name]].view[:arr.nbytes] = arr.reshape(-1).view(np.uint8)
            push = self._push_constants(program, values, arrays)
            # The same launches with the same scalars and buffers: submit the recording again.
            recording = (tuple((l.task.name, l.blocks) for l in launches), bytes(push), program.bind_epoch)
            if program.recorded != recording:
                self._record(program, push, launches)
                program.recorded = recording
            if program.submit is None:
                program.submit = vk.VkSubmitInfo(pCommandBuffers=[program.command_buffer])
            zones = [(name, self._staged_zone(program, name, arrays[name])) for name in sorted(staged)]
            dev.submit_and_wait(program.submit)
            dev.flush_printed()
            for name in sorted({owners[w] for w in program.written} & staged):
                arr = arrays[name]
                arr.reshape(-1).view(np.uint8)[:] = program.buffers[program.bindings[name]].view[:arr.nbytes]
            program.runs += 1
            program.staged = bool(staged)
        if zones:
            guards.Checklist(zones).verify(kernel.name, functools.partial(buffer_names, kernel))

    def _staged_zone(self, program: VulkanProgram, name: str, arr: np.ndarray) -> guards.Guard:
        """The red zone after a staged array in its binding's buffer (bound with it: a write
        one past the end lands there), filled with the pattern before the launch."""
        buf = program.buffers[program.bindings[name]]
        start = _word_end(arr.nbytes)
        return guards.Guard(None, buf.view[start:min(buf.capacity, start + guards.MAX_BACK)], start)

    def replay_token(self, program: VulkanProgram | _Printing) -> object | None:
        if isinstance(program, _Printing) or program.staged:
            return None
        return program.runs

    def replay(self, program: VulkanProgram, token: object) -> bool:
        dev = self.device
        with dev.lock:
            if program.runs != token:  # run since with other arguments: its recording is another's
                return False
            dev.submit_and_wait(program.submit)
        return True

    def _bind_buffers(self, program: VulkanProgram, arrays: dict[str, np.ndarray]) -> tuple[dict[str, str], set[str]]:
        """Point the descriptor set at each array's buffer: a qd.ndarray's own (device-resident,
        see resident_array), else the program's buffer for that binding, grown to fit, which
        the array is staged through. The same array passed for two parameters gets one
        buffer, as one pointer would on CUDA. Returns parameter -> the parameter whose buffer
        it uses, and the parameters staged through the program's buffers."""
        dev, vk = self.device, self.device.vk
        owners: dict[str, str] = {}
        by_memory: dict[tuple, str] = {}
        for name, arr in arrays.items():
            owners[name] = by_memory.setdefault(memory_key(arr), name) if arr.nbytes else name
        chosen: dict[str, _Buffer] = {}
        staged: set[str] = set()
        for name, arr in arrays.items():
            if owners[name] != name:
                continue
            resident = self.resident.get(arr.__array_interface__["data"][0])
            if resident is not None and arr.nbytes <= resident.capacity:
                chosen[name] = resident
                continue
            binding = program.bindings[name]
            need = max(16, -(-arr.nbytes // 16) * 16) + guards.back_bytes(arr.shape, arr.itemsize)
            buf = program.buffers.get(binding)
            if buf is None or buf.capacity < need:
                if buf is not None:
                    self._free(buf)
                program.buffers[binding] = buf = self._allocate(need)
            chosen[name] = buf
            if arr.nbytes:
                staged.add(name)
        writes, infos = [], []  # infos: the structs the writes point at, alive until the update
        for name, owner in owners.items():
            binding = program.bindings[name]
            buf = chosen[owner]
            if program.bound.get(binding) is buf.buffer:
                continue
            info = vk.VkDescriptorBufferInfo(buffer=buf.buffer, offset=0, range=buf.capacity)
            infos.append(info)
            writes.append(vk.VkWriteDescriptorSet(dstSet=program.descriptor_set, dstBinding=binding, descriptorCount=1,
                                                  descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                  pBufferInfo=[info]))
            program.bound[binding] = buf.buffer
        if writes:
            vk.vkUpdateDescriptorSets(dev.device, len(writes), writes, 0, None)
            program.bind_epoch += 1
        return owners, staged

    def resident_array(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """A qd.ndarray's storage: zeroed device memory the host sees mapped (lavapipe's is
        host memory; a GPU's host-visible heap otherwise), bound by kernels in place, with no
        copy in or out around a launch. Freed when the last view of it goes."""
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        vk = self.device.vk
        try:
            with self.device.lock:  # (with the red zone after it, bound with it: see guards.py)
                zone = guards.back_bytes(shape, np.dtype(dtype).itemsize)
                buf = self._allocate(max(16, -(-nbytes // 16) * 16) + zone)
        except (vk.VkErrorOutOfDeviceMemory, vk.VkErrorOutOfHostMemory):
            size = float(nbytes)
            for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):  # as NumPy's message writes it
                if size < 1024 or unit == "PiB":
                    break
                size /= 1024
            raise MemoryError(f"Vulkan could not allocate {size:.2f} {unit} for an array of shape {shape} "
                              f"({np.dtype(dtype).name})") from None
        mapped, buf.view = buf.view, None  # the _Buffer must not keep its own array alive
        mapped[:nbytes] = 0
        array = guards.register(mapped[:nbytes].view(dtype).reshape(shape), None, mapped[_word_end(nbytes):])
        address = mapped.__array_interface__["data"][0]
        self.resident[address] = buf
        weakref.finalize(mapped, self._release_resident, address)
        return array

    def _release_resident(self, address: int) -> None:
        buf = self.resident.pop(address, None)
        if buf is not None:
            with self.device.lock:
                self._free(buf)

    def _allocate(self, size: int) -> _Buffer:
        dev, vk = self.device, self.device.vk
        info = vk.VkBufferCreateInfo(size=size, usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                     sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
        buffer = vk.vkCreateBuffer(dev.device, info, None)
        req = vk.vkGetBufferMemoryRequirements(dev.device, buffer)
        memory = None
        candidates = dev.memory_types_for(req.memoryTypeBits)
        for k, index in enumerate(candidates):
            alloc = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=index)
            try:
                memory = vk.vkAllocateMemory(dev.device, alloc, None)
                break
            except (vk.VkErrorOutOfDeviceMemory, vk.VkErrorOutOfHostMemory):
                # A small device-local window (no resizable BAR) fills up: fall back to host memory.
                if k == len(candidates) - 1:
                    vk.vkDestroyBuffer(dev.device, buffer, None)
                    raise
        vk.vkBindBufferMemory(dev.device, buffer, memory, 0)
        mapped = vk.vkMapMemory(dev.device, memory, 0, req.size, 0)
        return _Buffer(buffer, memory, size, np.frombuffer(mapped, dtype=np.uint8))

    def _free(self, buf: _Buffer) -> None:
        dev, vk = self.device, self.device.vk
        buf.view = None
        vk.vkUnmapMemory(dev.device, buf.memory)
        vk.vkDestroyBuffer(dev.device, buf.buffer, None)
        vk.vkFreeMemory(dev.device, buf.memory, None)

    def _push_constants(self, program: VulkanProgram, values: dict, arrays: dict) -> bytearray:
        data = bytearray(program.push_bytes)
        for name, dim, dtype, offset in program.push_members:
            if dim is not None:
                value = arrays[name].shape[dim]
                if value >= 2**31:
                    raise ValueError(f"{program.kernel.name}(): `{name}` has {value} elements along dimension {dim}; "
                                     "extents are 32-bit")
            else:
                value = values[name].item()
                value = float(value) if dtype.startswith("f") else int(value)
            struct.pack_into(PUSH_FORMATS[dtype], data, offset, value)
        return data

    def _record(self, program: VulkanProgram, push: bytearray, launches: list[Launch]) -> None:
        vk, ffi = self.device.vk, self.device.ffi
        cb = program.command_buffer
        vk.vkResetCommandBuffer(cb, 0)
        begin = vk.VkCommandBufferBeginInfo(flags=0)  # submitted again while the launch stays the same
        vk.vkBeginCommandBuffer(cb, begin)
        compute = vk.VK_PIPELINE_BIND_POINT_COMPUTE
        stage = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        if program.descriptor_set is not None:
            vk.vkCmdBindDescriptorSets(cb, compute, program.pipeline_layout, 0, 1, [program.descriptor_set], 0, None)
        if program.push_bytes:
            push_data = ffi.from_buffer(push)
            vk.vkCmdPushConstants(cb, program.pipeline_layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, program.push_bytes,
                                  push_data)
        # Each task sees every write of the tasks before it, as the launches' order promises.
        between = vk.VkMemoryBarrier(srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT,
                                     dstAccessMask=vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT)
        first = True
        for launch in launches:
            if launch.blocks == 0:
                continue
            if not first:
                vk.vkCmdPipelineBarrier(cb, stage, stage, 0, 1, [between], 0, None, 0, None)
            first = False
            vk.vkCmdBindPipeline(cb, compute, program.pipelines[launch.task.name])
            cap = program.grid_caps.get(launch.task.name)
            blocks = launch.blocks if cap is None else min(launch.blocks, max(cap, -(-launch.blocks // MAX_STRIDES)))
            vk.vkCmdDispatch(cb, blocks, 1, 1)
        # Make the results visible to the host's reads after the fence.
        to_host = vk.VkMemoryBarrier(srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT,
                                     dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT)
        vk.vkCmdPipelineBarrier(cb, stage, vk.VK_PIPELINE_STAGE_HOST_BIT, 0, 1, [to_host], 0, None, 0, None)
        vk.vkEndCommandBuffer(cb)

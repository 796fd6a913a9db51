"""``qd.lang.impl``: the few functions of Quadrants' internal module that user code reaches
for (Genesis: ``impl.current_cfg().debug``, ``get_max_shared_memory_bytes``; a program asking
``get_runtime().prog.get_device_caps()`` whether the Vulkan device has f64 before using it)."""
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


# Quadrants' DeviceCapability names (``qd._lib.core.DeviceCapability.spirv_has_float64``): the
# Vulkan device features each stands for, which get_device_caps() reports (1 or 0).
DEVICE_CAPABILITIES = {
    "spirv_has_int8": "shaderInt8", "spirv_has_int16": "shaderInt16", "spirv_has_int64": "shaderInt64",
    "spirv_has_float16": "shaderFloat16", "spirv_has_float64": "shaderFloat64",
    "spirv_has_atomic_int64": "shaderBufferInt64Atomics", "spirv_has_atomic_float16": "shaderBufferFloat16Atomics",
    "spirv_has_atomic_float": "shaderBufferFloat32Atomics",
    "spirv_has_atomic_float_add": "shaderBufferFloat32AtomicAdd",
    "spirv_has_atomic_float64": "shaderBufferFloat64Atomics", "spirv_has_shader_clock": "shaderDeviceClock",
}
DeviceCapability = type("DeviceCapability", (), {name: name for name in DEVICE_CAPABILITIES})


class _Program:
    def config(self) -> object:
        """``qd.cfg``: what the last qd.init chose."""
        return current_cfg()

    def _get_num_ndarrays(self) -> int:
        """The ndarrays made since qd.init that are still alive (freed when the last reference goes)."""
        return host.ndarray_class().count_live()

    def get_device_caps(self) -> dict[str, int]:
        """The capabilities of the executor's device: a Vulkan device's features; empty
        elsewhere (the CPU and CUDA executors run no SPIR-V), as Quadrants reports them."""
        features = getattr(host.executor(), "device_features", frozenset())
        return {cap: int(f in features) for cap, f in DEVICE_CAPABILITIES.items()} if features else {}


class _Runtime:
    """What ``get_runtime()`` offers here: the default types (which it may change, as qd.init's
    default_fp / default_ip do) and the device's capabilities."""

    prog = _Program()

    @property
    def default_fp(self):
        return current_cfg().default_fp

    @default_fp.setter
    def default_fp(self, dtype: object) -> None:
        host.set_defaults(fp=dtype)

    @property
    def default_ip(self):
        return current_cfg().default_ip

    @default_ip.setter
    def default_ip(self, dtype: object) -> None:
        host.set_defaults(ip=dtype)

    def set_default_fp(self, dtype: object) -> None:
        host.set_defaults(fp=dtype)

    def set_default_ip(self, dtype: object) -> None:
        host.set_defaults(ip=dtype)

    def get_num_compiled_functions(self) -> int:
        """The kernel programs translated and loaded since qd.init: one per kernel and distinct
        signature, as Quadrants counts its materialized kernels (a field's fill() runs no kernel
        here, so it adds none)."""
        return host.compiled_kernels()


def get_cuda_compute_capability() -> int:
    """The compute capability CUDA kernels run at: the GPU's on the CUDA executor; on the CPU
    executor of the CUDA text, 70, the least that text needs (16-bit atomicCAS, __match_*_sync)."""
    return getattr(host.executor(), "compute_capability", 70)


def get_runtime() -> _Runtime:
    return _Runtime()


def __getattr__(name: str):
    # Quadrants' exception classes and Kernel, as `from quadrants.lang.impl import ...` finds them
    if name.startswith("Quadrants"):
        return getattr(exception, name)
    if name == "Kernel":
        return Kernel
    raise AttributeError(f"qd.lang.impl has no `{name}`: of Quadrants' internal module this package provides "
                         "current_cfg(), get_max_shared_memory_bytes(), get_cuda_compute_capability(), get_runtime() "
                         "(default_fp, default_ip, get_num_compiled_functions(), prog.config(), "
                         "prog.get_device_caps()), Kernel and the exception classes")

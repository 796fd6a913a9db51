"""Run the CUDA output on an NVIDIA GPU through CuPy (``qd.init(arch=qd.cuda)``).

CuPy compiles the very text ``qd.translate(kernel, "cuda")`` returns (NVRTC underneath),
so what runs is what a C++ host would embed. Arrays are copied to the device before the
launches and back afterwards; the tasks run in order on one stream."""
from __future__ import annotations

import numpy as np

from ..ir import nodes as ir
from . import Backend, Launch, Translation, entries_by_task, memory_key


class CudaBackend(Backend):
    name = "cuda"
    target = "cuda"

    def __init__(self, fast_math: bool = False, **options):
        try:
            import cupy
        except ImportError:
            raise RuntimeError("qd.init(arch=qd.cuda) needs CuPy: pip install cupy-cuda13x") from None
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # noqa: BLE001 - CuPy raises driver errors of several types
            raise RuntimeError(f"qd.init(arch=qd.cuda) found no usable CUDA driver: {exc}") from None
        if count == 0:
            raise RuntimeError("qd.init(arch=qd.cuda) found no CUDA GPU")
        self.cupy = cupy
        self.fast_math = fast_math
        self.options = options

    def translate_options(self) -> dict:
        return {"fast_math": self.fast_math}

    def load(self, tr: Translation):
        manifest = tr.manifest
        (source,) = tr.sources.values()
        module = self.cupy.RawModule(code=source, options=tuple(manifest["requirements"]["nvrtc_options"]),
                                     name_expressions=None)
        functions = {task: module.get_function(e["name"]) for task, e in entries_by_task(tr.ir, manifest).items()}
        return manifest, functions

    def run(self, program, kernel: ir.Kernel, values: dict[str, object], launches: list[Launch]) -> None:
        manifest, functions = program
        cp = self.cupy
        # One device array per host memory: a kernel given the same array twice (a sort's keys
        # as its values) sees one buffer, as on the other executors.
        by_memory: dict[tuple, object] = {}
        device = {}
        for p in kernel.params:
            if p.is_array:
                key = memory_key(values[p.name])
                if key not in by_memory:
                    by_memory[key] = cp.asarray(values[p.name])
                device[p.name] = by_memory[key]
        args = []
        for p in kernel.params:
            if p.is_array:
                args.append(device[p.name])
                args.extend(np.int32(n) for n in values[p.name].shape[:p.type.passed_extents])
            else:
                args.append(values[p.name])
        for launch in launches:
            if launch.blocks == 0:
                continue
            block = launch.task.block_dim if launch.task.kind == "parallel" else 1
            functions[launch.task.name]((launch.blocks,), (block,), tuple(args))
        cp.cuda.get_current_stream().synchronize()
        for name, arr in device.items():
            if by_memory.pop(memory_key(values[name]), None) is not None:  # each memory copied back once
                values[name][...] = cp.asnumpy(arr)

"""Run the CUDA output on an NVIDIA GPU through CuPy (``qd.init(arch=qd.cuda)``).

CuPy compiles the very text ``qd.translate(kernel, "cuda")`` returns (NVRTC underneath),
so what runs is what a C++ host would embed. The tasks run in order on one stream. A
qd.ndarray lives in device memory, mirrored by a host array that is brought up to date
only when the host reads it (and the device's only after the host wrote it); a numpy
array is copied to the device before the launches and back afterwards."""
from __future__ import annotations

import functools
import weakref

import numpy as np

from ..ir import nodes as ir
from ..ir.records import record, field
from . import Backend, Launch, Translation, entries_by_task, memory_key, warm_up, written_arrays

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import cupy
    from numpy.typing import DTypeLike


@record(eq=False)
class _Mirror:
    """A qd.ndarray's device memory, and which side holds its newest contents."""

    device: object                  # the CuPy array
    host: weakref.ref               # the host array that mirrors it
    host_stale: bool = False        # a kernel wrote it since the host last read it
    device_stale: bool = False      # the host wrote it since a kernel last read it


@record(eq=False)
class CudaProgram:
    functions: dict[str, object]    # task name -> CuPy RawKernel
    written: frozenset[str]         # the array parameters some task writes
    runs: int = 0                   # launches so far: what a replay token names
    # The last run's launches, when every array it used was resident: (kernel, grid, block)
    # per launch, the arguments, the mirrors read and the mirrors written.
    again: tuple | None = field(default=None, repr=False)
    # Those launches captured as one CUDA graph, replayed by one call (None: not captured yet;
    # False: this driver or CuPy could not capture them, so they are launched one by one).
    graph: object = field(default=None, repr=False)


class CudaBackend(Backend):
    name = "cuda"
    target = "cuda"

    def __init__(self, fast_math: bool = False, **options):
        try:
            import cupy  # noqa: PLC0415 - optional: cupy, only for qd.cuda
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
        self.resident: dict[int, _Mirror] = {}  # the address of a qd.ndarray's host array -> its device memory
        warm_up.start("cuda")  # beside the CUDA context's creation (the first device array)

    @property
    def compute_capability(self) -> int:
        """The GPU's (qd.lang.impl.get_cuda_compute_capability()): 90 for sm_90."""
        return int(self.cupy.cuda.Device().compute_capability)

    @property
    def clock_freq_hz(self) -> float:
        """The rate clock64() (qd.clock_counter()) counts at: the GPU's clock (CUDA reports kHz)."""
        return float(self.cupy.cuda.runtime.getDeviceProperties(self.cupy.cuda.Device().id)["clockRate"]) * 1e3

    def translate_options(self) -> dict:
        return {"fast_math": self.fast_math}

    def load(self, tr: Translation) -> CudaProgram:
        manifest = tr.manifest
        (source,) = tr.sources.values()
        module = self.cupy.RawModule(code=source, options=tuple(manifest["requirements"]["nvrtc_options"]),
                                     name_expressions=None)
        functions = {task: module.get_function(e["name"]) for task, e in entries_by_task(tr.ir, manifest).items()}
        return CudaProgram(functions, written_arrays(tr.ir))

    def run(self, program: CudaProgram, kernel: ir.Kernel, values: dict[str, object], launches: list[Launch]) -> None:
        cp = self.cupy
        # One device array per host memory: a kernel given the same array twice (a sort's keys
        # as its values) sees one buffer, as on the other executors.
        by_memory: dict[tuple, tuple[object, _Mirror | None]] = {}
        args: list = []
        used: list[_Mirror] = []
        written: set[_Mirror] = set()
        staged: list[tuple[np.ndarray, object]] = []  # (host, device) of the arrays copied in, to copy back
        for p in kernel.params:
            if not p.is_array:
                args.append(values[p.name])
                continue
            host = values[p.name]
            key = memory_key(host)
            if key not in by_memory:
                mirror = self._mirror_of(host)
                if mirror is None:
                    dev = cp.asarray(host)
                    staged.append((host, dev))
                else:
                    used.append(mirror)
                    dev = self._device_copy(mirror)
                by_memory[key] = (dev, mirror)
            dev, mirror = by_memory[key]
            if mirror is not None and p.name in program.written:
                written.add(mirror)
            args.append(dev)
            args.extend(np.int32(n) for n in host.shape[:p.type.passed_extents])
        calls = [(program.functions[launch.task.name], (launch.blocks,),
                  (launch.task.block_dim if launch.task.kind == "parallel" else 1,))
                 for launch in launches if launch.blocks]
        arguments = tuple(args)
        self._launch(calls, arguments, written)
        for host, dev in staged:
            host[...] = cp.asnumpy(dev)
        program.runs += 1
        program.again = None if staged else (calls, arguments, used, written)
        program.graph = None

    def _launch(self, calls: list, args: tuple, written: set[_Mirror], graph: object = None) -> None:
        """Run ``calls`` (or ``graph``, the same captured) and wait for them."""
        if graph:
            graph.launch(self.stream)
            self.stream.synchronize()
        else:
            for function, grid, block in calls:
                function(grid, block, args)
            self.cupy.cuda.get_current_stream().synchronize()
        for mirror in written:
            mirror.host_stale = True

    def replay_token(self, program: CudaProgram) -> object | None:
        return None if program.again is None else program.runs

    def replay(self, program: CudaProgram, token: object) -> bool:
        if program.runs != token or program.again is None:
            return False
        calls, args, used, written = program.again
        for mirror in used:
            self._device_copy(mirror)
        if len(calls) > 1 and program.graph is None:  # several launches: one graph call costs less
            program.graph = self._capture(calls, args)
        self._launch(calls, args, written, program.graph)
        return True

    @functools.cached_property
    def stream(self) -> cupy.cuda.Stream:
        """The stream graphs are captured and replayed on: a blocking one, so it stays in order
        with the copies and launches on the default stream."""
        return self.cupy.cuda.Stream()

    def _capture(self, calls: list, args: tuple):
        """``calls`` as a CUDA graph, or False where they cannot be captured here."""
        try:
            self.stream.begin_capture()
            try:
                for function, grid, block in calls:
                    function(grid, block, args, stream=self.stream)
            finally:
                graph = self.stream.end_capture()
            return graph
        except Exception:  # noqa: BLE001 - CuPy and the driver raise several types: launch them one by one
            return False

    def resident_array(self, shape: tuple[int, ...], dtype: DTypeLike) -> np.ndarray | None:
        """A qd.ndarray's storage: zeroed device memory, and the host array that mirrors it
        (what the runtime passes around; the device copy is found by its address)."""
        host = np.zeros(shape, dtype)
        if host.nbytes == 0:
            return None
        address = host.__array_interface__["data"][0]
        self.resident[address] = _Mirror(self.cupy.zeros(shape, dtype), weakref.ref(host))
        weakref.finalize(host, self.resident.pop, address, None)
        return host

    def _mirror_of(self, host: np.ndarray) -> _Mirror | None:
        mirror = self.resident.get(host.__array_interface__["data"][0])
        return mirror if mirror is not None and mirror.host() is host else None

    def _device_copy(self, mirror: _Mirror):
        if mirror.device_stale:
            mirror.device.set(mirror.host())
            mirror.device_stale = False
        return mirror.device

    def host_read(self, arr: np.ndarray) -> None:
        mirror = self._mirror_of(arr)
        if mirror is not None and mirror.host_stale:
            arr[...] = mirror.device.get()
            mirror.host_stale = False

    def host_written(self, arr: np.ndarray) -> None:
        mirror = self._mirror_of(arr)
        if mirror is not None:
            mirror.host_stale, mirror.device_stale = False, True

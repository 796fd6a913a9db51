"""Start-up on Vulkan, in the framework ``QD_MODULE`` names (transpiler or quadrants), in a
new process: prints one JSON line with the import, ``qd.init(arch=qd.vulkan)``, and the first
calls of two kernels no process has run before (a constant drawn for this run is in their text,
so no cache on disk has them: translation, compilation and pipeline are all in the call), from
the launch to qd.sync() with the arguments already on the device: ``first_ms`` the process's
first kernel (right after qd.init and two arrays: whatever either framework still does for its
start-up is in it), ``next_ms`` the second (what each new kernel costs); ``total_ms`` is the
import to the first result. Results are checked against NumPy.

    QD_MODULE=transpiler|quadrants python bench/vs_startup.py
"""
from __future__ import annotations

import importlib.util
import json
import os
import random
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = os.environ.get("QD_MODULE", "transpiler")
KERNEL = '''import {module} as qd


@qd.kernel
def fresh(x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        y[i] = x[i] * {c!r} + 1.0
'''


def fresh_kernel(folder: str, name: str, c: float):
    path = os.path.join(folder, f"{name}.py")  # a kernel's source is read from its file
    with open(path, "w") as f:
        f.write(KERNEL.format(module=MODULE, c=c))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.fresh


def timed_call(qd, kernel, x, y) -> float:
    t = time.perf_counter()
    kernel(x, y)
    qd.sync()
    return time.perf_counter() - t


def main() -> None:
    if MODULE == "transpiler":
        sys.path.insert(0, os.path.dirname(HERE))
    t0 = time.perf_counter()
    qd = importlib.import_module(MODULE)
    t1 = time.perf_counter()
    qd.init(arch=qd.vulkan)
    t2 = time.perf_counter()
    c = [1.0 + random.random(), 2.0 + random.random()]
    values = np.random.default_rng(7).random(1024, np.float32)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        kernels = [fresh_kernel(tmp, f"fresh_{k}", c[k]) for k in range(2)]
        x, y = qd.ndarray(qd.f32, shape=(1024,)), qd.ndarray(qd.f32, shape=(1024,))
        x.from_numpy(values)
        first = timed_call(qd, kernels[0], x, y)
        total = time.perf_counter() - t0
        ok &= bool(np.allclose(y.to_numpy(), values * np.float32(c[0]) + np.float32(1.0), rtol=1e-6))
        after = timed_call(qd, kernels[1], x, y)
        ok &= bool(np.allclose(y.to_numpy(), values * np.float32(c[1]) + np.float32(1.0), rtol=1e-6))
    print(json.dumps({"import_ms": (t1 - t0) * 1e3, "init_ms": (t2 - t1) * 1e3, "first_ms": first * 1e3,
                      "next_ms": after * 1e3, "total_ms": total * 1e3, "ok": ok}))


if __name__ == "__main__":
    main()

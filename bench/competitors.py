"""Python -> CUDA source latency of the transpiler, cupyx.jit and NVIDIA Warp, on the same
three kernels (saxpy, an atomic sum, a 256-thread block sum), measured the same way for all:
each iteration writes a fresh module with a unique constant, imports it and times only the
call that produces CUDA source (no cache can hit; no NVRTC). "cold" is the first kernel of a
new process after the imports, "warm" the median of the following ones.

    python bench/competitors.py --tool ours|cupy|warp [--iters N]     # JSON on stdout

How the others are driven without a GPU (reference/perf.md, section 2):
- cupyx.jit: `cupyx.jit._compile.transpile(func, ['extern "C"', '__global__'], 'cuda', in_types,
  void)`, with `cupy._core._full_mask` / `_get_warpsize` patched (they query the driver);
- Warp: `wp.compile_aot_module(module, arch=90, module_dir=...)` with
  `warp._src.build.build_cuda` replaced by a stub, so the time is Warp's codegen, hashing and
  file writes, not NVRTC; `enable_backward` is off, as we generate no adjoint.

run.py installs cupy-cuda13x and warp-lang into bench/.venv-competitors only with
--with-competitors (never into the project venv, where an importable CuPy changes what the
CUDA runtime and the test suite's GPU probe do); otherwise it uses that venv if it exists.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNELS = ("saxpy", "atomic_sum", "block_sum")

OURS = {
    "saxpy": '''
import transpiler as qd
v = qd.types.ndarray(dtype=qd.f32, ndim=1)

@qd.kernel
def saxpy(a: qd.f32, x: v, y: v):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i] + {c}
''',
    "atomic_sum": '''
import transpiler as qd
v = qd.types.ndarray(dtype=qd.f32, ndim=1)

@qd.kernel
def atomic_sum(x: v, total: v):
    for i in range(x.shape[0]):
        total[0] += x[i] + {c}
''',
    "block_sum": '''
import transpiler as qd
v = qd.types.ndarray(dtype=qd.f32, ndim=1)

@qd.kernel
def block_sum(x: v, out: v):
    qd.loop_config(block_dim=256)
    for i in range(x.shape[0]):
        s = qd.simt.block.reduce_add(x[i] + {c}, 256, qd.f32)
        if qd.simt.block.thread_idx() == 0:
            out[i // 256] = s
''',
}

CUPY = {
    "saxpy": '''
from cupyx import jit

@jit.rawkernel()
def saxpy(a, x, y, n):
    i = jit.blockIdx.x * jit.blockDim.x + jit.threadIdx.x
    if i < n:
        y[i] = a * x[i] + y[i] + {c}
''',
    "atomic_sum": '''
from cupyx import jit

@jit.rawkernel()
def atomic_sum(x, total, n):
    i = jit.blockIdx.x * jit.blockDim.x + jit.threadIdx.x
    if i < n:
        jit.atomic_add(total, 0, x[i] + {c})
''',
    # The same algorithm as ours and the hand reference: xor butterflies around one
    # shared-memory exchange (the cupyx.jit block_sum of reference/perf.md).
    "block_sum": '''
import numpy
from cupyx import jit

@jit.rawkernel()
def block_sum(x, out, n):
    smem = jit.shared_memory(numpy.float32, 8)
    tid = jit.threadIdx.x
    v = x[jit.blockIdx.x * 256 + tid] + {c}
    v += jit.shfl_xor_sync(0xffffffff, v, 16)
    v += jit.shfl_xor_sync(0xffffffff, v, 8)
    v += jit.shfl_xor_sync(0xffffffff, v, 4)
    v += jit.shfl_xor_sync(0xffffffff, v, 2)
    v += jit.shfl_xor_sync(0xffffffff, v, 1)
    if tid % 32 == 0:
        smem[tid // 32] = v
    jit.syncthreads()
    t = numpy.float32(0)
    if tid < 8:
        t = smem[tid]
    t += jit.shfl_xor_sync(0xffffffff, t, 16)
    t += jit.shfl_xor_sync(0xffffffff, t, 8)
    t += jit.shfl_xor_sync(0xffffffff, t, 4)
    t += jit.shfl_xor_sync(0xffffffff, t, 2)
    t += jit.shfl_xor_sync(0xffffffff, t, 1)
    if tid == 0:
        out[jit.blockIdx.x] = t
''',
}

WARP = {
    "saxpy": '''
import warp as wp
wp.set_module_options({{"enable_backward": False}})

@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i] + {c}
''',
    "atomic_sum": '''
import warp as wp
wp.set_module_options({{"enable_backward": False}})

@wp.kernel
def atomic_sum(x: wp.array(dtype=float), total: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(total, 0, x[i] + {c})
''',
    # Warp's block reduction is the tile API (a tile per 256-thread block).
    "block_sum": '''
import warp as wp
wp.set_module_options({{"enable_backward": False, "block_dim": 256}})

@wp.kernel
def block_sum(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(x, shape=256, offset=i * 256)
    s = wp.tile_sum(t) * {c}
    wp.tile_store(out, s, offset=i)
''',
}


class Tool:
    def __init__(self, name: str, workdir: Path):
        self.name, self.workdir = name, workdir
        t0 = time.perf_counter()
        getattr(self, f"_init_{name}")()
        self.import_s = time.perf_counter() - t0

    # ---------------------------------------------------------------- ours
    def _init_ours(self):
        root = Path(__file__).resolve().parent.parent
        sys.path.insert(0, str(root))
        import transpiler

        self.qd = transpiler
        self.sources = OURS

    def _gen_ours(self, mod, name):
        k = getattr(mod, name)
        tr = self.qd.translate(k, "cuda", warn=False)
        return next(iter(tr.sources.values()))

    # ---------------------------------------------------------------- cupyx.jit
    def _init_cupy(self):
        import cupy
        import numpy
        from cupyx.jit import _compile, _cuda_types

        # Both query the driver (absent here); their answers on every NVIDIA GPU.
        cupy._core._full_mask = lambda: 0xFFFFFFFF
        cupy._core._get_warpsize = lambda: 32
        self._compile, self._types, self.np = _compile, _cuda_types, numpy
        self.sources = CUPY

    def _gen_cupy(self, mod, name):
        t, np = self._types, self.np
        arr = t.CArray(np.float32, 1, True, True)
        i32, f32 = t.Scalar(np.int32), t.Scalar(np.float32)
        in_types = {"saxpy": (f32, arr, arr, i32), "atomic_sum": (arr, arr, i32), "block_sum": (arr, arr, i32)}[name]
        func = getattr(mod, name)
        func = getattr(func, "_func", func)
        res = self._compile.transpile(func, ['extern "C"', "__global__"], "cuda", in_types, t.void)
        return res.code

    # ---------------------------------------------------------------- Warp
    def _init_warp(self):
        import warp as wp
        import warp._src.build as build

        wp.config.quiet = True
        wp.config.kernel_cache_dir = str(self.workdir / "warp-cache")
        wp.init()

        def no_nvrtc(source_path, arch, output_path, *args, **kwargs):
            open(output_path, "wb").close()

        build.build_cuda = no_nvrtc
        self.wp = wp
        self.sources = WARP

    def _gen_warp(self, mod, name):
        out = Path(tempfile.mkdtemp(dir=self.workdir))
        self.wp.compile_aot_module(mod, arch=90, module_dir=str(out), use_ptx=False)
        (cu,) = list(out.glob("*.cu"))
        return cu.read_text()

    # ---------------------------------------------------------------- driver
    def once(self, name: str, serial: int) -> tuple[float, int]:
        modname = f"bench_{self.name}_{name}_{serial}"
        path = self.workdir / f"{modname}.py"
        path.write_text(self.sources[name].format(c=f"{1.0 + serial * 1e-3:.4f}"))
        mod = importlib.import_module(modname)
        t0 = time.perf_counter()
        code = getattr(self, f"_gen_{self.name}")(mod, name)
        return time.perf_counter() - t0, len(code)


def measure(tool: str, iters: int, workdir: Path) -> dict:
    """Each kernel's codegen time with ``tool``, its modules (and Warp's cache) in ``workdir``."""
    sys.path.insert(0, str(workdir))
    t = Tool(tool, workdir)
    out = {"tool": tool, "import_s": t.import_s, "kernels": {}}
    serial = 0
    for name in KERNELS:
        samples, chars = [], 0
        try:
            for _ in range(iters + 1):
                s, chars = t.once(name, serial)
                serial += 1
                samples.append(s * 1e3)
        except Exception as exc:  # noqa: BLE001 - report, do not stop the other kernels
            out["kernels"][name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
            continue
        out["kernels"][name] = {"cold_ms": samples[0], "warm_ms": statistics.median(samples[1:]), "chars": chars}
    return out


# ---------------------------------------------------------------------- run.py's side

COMPETITOR_VENV = Path(__file__).resolve().parent / ".venv-competitors"
PACKAGES = ["cupy-cuda13x", "warp-lang", "numpy"]


def _has(python: str, module: str) -> bool:
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


def competitor_python(install: bool) -> tuple[str | None, str]:
    """An interpreter with cupyx and warp: $QD_BENCH_COMPETITOR_PYTHON, this one, or
    bench/.venv-competitors (created and filled only when ``install``)."""
    cands = [os.environ.get("QD_BENCH_COMPETITOR_PYTHON"), sys.executable, str(COMPETITOR_VENV / "bin" / "python")]
    for c in cands:
        if c and os.path.exists(c) and (_has(c, "cupyx.jit") or _has(c, "warp")):
            return c, f"found in {c}"
    if not install:
        return None, "not installed (pass --with-competitors to install cupy-cuda13x and warp-lang into " \
                     "bench/.venv-competitors)"
    py = str(COMPETITOR_VENV / "bin" / "python")
    try:
        if not os.path.exists(py):
            subprocess.run([sys.executable, "-m", "venv", str(COMPETITOR_VENV)], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", *PACKAGES], check=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        return None, f"installing {', '.join(PACKAGES)} failed: {exc}"
    return py, f"installed into {COMPETITOR_VENV}"


def _run_tool(python: str, tool: str, iters: int) -> dict:
    p = subprocess.run([python, __file__, "--tool", tool, "--iters", str(iters)], capture_output=True, text=True)
    if p.returncode != 0:
        return {"tool": tool, "error": (p.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(p.stdout)


def run_section(args, report: dict, tmp: Path) -> None:
    from common import fmt, say, table

    iters = 3 if args.quick else 5
    results = {"ours": _run_tool(sys.executable, "ours", iters)}
    python, why = competitor_python(args.with_competitors)
    if python:
        for tool in ("cupy", "warp"):
            results[tool] = _run_tool(python, tool, iters) if _has(python, "cupyx.jit" if tool == "cupy" else "warp") \
                else {"tool": tool, "error": f"not importable in {python}"}
    report["competitors"] = {"how": why, "results": results}
    rows = []
    for name in KERNELS:
        row = [name]
        for tool in ("ours", "cupy", "warp"):
            r = results.get(tool)
            k = (r or {}).get("kernels", {}).get(name, {})
            row.append("n/a" if not k or "error" in k else f"{k['warm_ms']:.2f} ({k['cold_ms']:.2f})")
        rows.append(row)
    imports = ["import s"] + [fmt((results.get(t) or {}).get("import_s")) for t in ("ours", "cupy", "warp")]
    say(table("Python -> CUDA source, same kernel, fresh module each time: warm ms (cold ms)",
              ["kernel", "transpiler", "cupyx.jit", "Warp codegen"], rows + [imports],
              note=f"  cupyx.jit / Warp: {why}\n  our import is lazy: the transpiler's first cold figure also carries "
                   "the imports the others pay in `import` (jinja2, the frontend, the targets)"))
    for tool, r in results.items():
        if r and "error" in r:
            say(f"  {tool}: {r['error']}")
        for name, k in (r or {}).get("kernels", {}).items():
            if "error" in k:
                say(f"  {tool} {name}: {k['error']}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tool", choices=["ours", "cupy", "warp"], required=True)
    p.add_argument("--iters", type=int, default=5)
    a = p.parse_args()
    # Warp's native library prints its banner on fd 1; keep fd 1 for the JSON alone.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    with tempfile.TemporaryDirectory(prefix=f"qd_bench_{a.tool}_") as work:
        result = measure(a.tool, a.iters, Path(work))
    sys.stdout.flush()
    out.write(json.dumps(result) + "\n")
    out.flush()


if __name__ == "__main__":
    main()

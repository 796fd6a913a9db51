"""Writes past the end of a buffer without debug mode (runtime/guards.py): a red zone after
(and on the CPU before) every buffer the executors allocate catches them; the launch raises
OverrunError naming the kernel and the buffer, nothing outside the buffer changes, and the
process goes on. On the CPU executor such a write corrupted the host heap before."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import transpiler as qd
from transpiler.runtime import guards
from transpiler.runtime.cpu_emulator import KernelError

ROOT = Path(__file__).resolve().parent.parent
N = 102  # 408 bytes: glibc's chunk for it has no slack, its next chunk's header follows at once


@qd.kernel
def past_the_field(f: qd.template(), k: qd.f32):
    for i in range(f.shape[0] + 1):
        f[i] = k * i


@qd.kernel
def past_the_array(a: qd.types.ndarray(qd.f32, ndim=1), k: qd.f32):
    for i in range(a.shape[0] + 1):
        a[i] = k * i


@qd.kernel
def past_the_row(a: qd.types.ndarray(qd.f32, ndim=2)):
    for j in range(a.shape[1]):
        a[a.shape[0], j] = 7.0


@qd.kernel
def before_the_start(a: qd.types.ndarray(qd.f32, ndim=1)):
    for i in range(1):
        a[i - 1] = 5.0


@qd.kernel
def read_one_past(a: qd.types.ndarray(qd.f32, ndim=1), out: qd.types.ndarray(qd.f32, ndim=1)):
    for i in range(a.shape[0]):
        out[i] = a[i] + a[i + 1] * 0.0  # a[n]: the red zone's pattern, a finite float


@qd.kernel
def poke(a: qd.types.ndarray(qd.f32, ndim=1), at: qd.types.ndarray(qd.i32, ndim=1)):
    for i in range(1):
        a[at[0]] = 9.0


@qd.kernel
def axpy(a: qd.types.ndarray(qd.f32, ndim=1), b: qd.types.ndarray(qd.f32, ndim=1), k: qd.f32):
    for i in a:
        b[i] = k * a[i] + b[i]


@pytest.fixture
def guarded_executor(executor):
    """An executor whose buffers carry red zones: Vulkan and the CPU's; CUDA's device memory,
    which CuPy allocates, does not (docs/runtime.md)."""
    if executor == "cuda":
        pytest.skip("CUDA's device buffers carry no red zones")
    return executor


def _message_names(exc: pytest.ExceptionInfo, kernel: str, buffer: str) -> None:
    text = str(exc.value)
    assert isinstance(exc.value, KernelError)
    assert text.startswith(f"{kernel}: wrote past the end of {buffer} (bytes 0 to 3 after its last element)"), text
    assert "debug=True" in text


def test_a_write_one_past_a_field_is_reported_and_the_field_kept(guarded_executor, rng):
    f = qd.field(qd.f32, shape=N)
    for k in (2.0, 3.0):  # twice: the zone was restored after the first
        with pytest.raises(guards.OverrunError) as exc:
            past_the_field(f, k)
        _message_names(exc, "past_the_field", "field `f`")
        np.testing.assert_array_equal(f.to_numpy(), k * np.arange(N, dtype=np.float32))
    a, b = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    want = 1.5 * a + b
    axpy(a, b, 1.5)  # further kernels run as before
    np.testing.assert_allclose(b, want, rtol=1e-6)


@pytest.mark.parametrize("kind", ["qd.ndarray", "numpy"])
def test_a_write_one_past_an_ndarray_is_reported_and_the_array_kept(guarded_executor, kind, rng):
    data = rng.standard_normal(N).astype(np.float32)
    arr = qd.ndarray(qd.f32, N) if kind == "qd.ndarray" else data.copy()
    with pytest.raises(guards.OverrunError) as exc:
        past_the_array(arr, 0.5)
    _message_names(exc, "past_the_array", "ndarray `a`")
    got = arr.to_numpy() if kind == "qd.ndarray" else arr
    np.testing.assert_array_equal(got, 0.5 * np.arange(N, dtype=np.float32))  # (a NumPy array: written back)
    b = data.copy()
    axpy(got.copy(), b, 2.0)
    np.testing.assert_allclose(b, 2.0 * got + data, rtol=1e-6)


def test_a_replayed_launch_is_checked_too(guarded_executor):
    """The same qd.ndarrays again: the launch is replayed as recorded, and still checked."""
    a, at = qd.ndarray(qd.f32, N), qd.ndarray(qd.i32, 1)
    poke(a, at)
    at.from_numpy(np.array([N], np.int32))
    with pytest.raises(guards.OverrunError, match=r"^poke: wrote past the end of ndarray `a` \(bytes 0 to 3 after"):
        poke(a, at)
    at.from_numpy(np.array([N - 1], np.int32))
    poke(a, at)
    want = np.zeros(N, np.float32)
    want[[0, N - 1]] = 9.0
    np.testing.assert_array_equal(a.to_numpy(), want)


def test_a_write_past_a_buffer_view_of_the_tail_names_the_view(guarded_executor):
    """qd.BufferView (x[16:48] of a 1-d qd.ndarray) binds a range of the ndarray's memory:
    past the end of the last range is past the ndarray's, reported at this launch."""
    x = qd.ndarray(qd.f32, 48)
    with pytest.raises(guards.OverrunError, match=r"^past_the_array: wrote past the end of ndarray `a`"):
        past_the_array(x[16:48], 1.0)
    np.testing.assert_array_equal(x.to_numpy()[16:], np.arange(32, dtype=np.float32))


def test_a_row_past_a_2d_array_lands_in_its_zone(guarded_executor):
    a = qd.ndarray(qd.f32, (9, 40))
    with pytest.raises(guards.OverrunError, match=r"past_the_row: .*ndarray `a` \(bytes 0 to 159 after"):
        past_the_row(a)
    assert not a.to_numpy().any()


def test_a_write_before_the_start_is_reported_on_the_cpu(guarded_executor):
    if guarded_executor == "vulkan":
        pytest.skip("Vulkan binds each buffer from its start: no zone before it (docs/runtime.md)")
    a = qd.ndarray(qd.f32, 16)
    with pytest.raises(guards.OverrunError, match=r"ndarray `a` \(bytes 4 to 1 before its first element\)"):
        before_the_start(a)


def test_a_read_one_past_the_end_reads_the_zone_and_goes_on(guarded_executor, rng):
    a = qd.ndarray(qd.f32, N)
    data = rng.standard_normal(N).astype(np.float32)
    a.from_numpy(data)
    out = qd.ndarray(qd.f32, N)
    read_one_past(a, out)
    np.testing.assert_array_equal(out.to_numpy(), data)


def test_a_guarded_allocation_is_aligned_zeroed_checked_and_released():
    mem = guards.allocate((3,), np.float64)
    g = guards.guard_of(mem)
    assert g is not None and g.intact() and mem.ctypes.data % 16 == 0 and not mem.any()
    mem.view(np.uint8).base[guards.FRONT + mem.nbytes] = 0  # a byte just past the end
    assert not g.intact()
    assert g.damage() == "bytes 0 to 0 after its last element" and g.intact()  # restored
    key = id(mem)
    del mem, g
    gc.collect()
    assert key not in guards._guards


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB, and calloc's lazy pages: Linux")
def test_a_big_guarded_allocation_takes_no_memory_until_written():
    """A field's capacity under a sparse level is reserved whole: its pages must stay
    untouched (calloc's), as np.zeros left them, save the zones'."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    big = guards.allocate((1 << 26,), np.float32)  # 256 MiB
    assert guards.guard_of(big).intact() and big[-1] == 0.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 16 * 1024


def test_back_zones_take_one_row_within_bounds():
    assert guards.back_bytes((100,), 4) == 64
    assert guards.back_bytes((50, 20, 2), 4) == 192     # a row of 160 bytes, in 64-byte steps
    assert guards.back_bytes((2, 10**6), 8) == guards.MAX_BACK


@pytest.mark.toolchain
def test_large_numpy_arrays_stay_in_place_on_the_cpu(rng):
    qd.init(arch="cpu")
    n = guards.COPY_LIMIT // 4 + 1
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    want = 0.5 * a + b
    axpy(a, b, 0.5)
    np.testing.assert_allclose(b, want, rtol=1e-6)


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("arch", ["cpu-cuda", "cpu-hip", "vulkan"])
def test_a_differential_evolution_overrun_is_named_and_the_process_exits_normally(arch):
    """Taichi's differential_evolution shape (tests/programs): one past the end of one field
    and a row past another; then more kernels, on small and large NumPy arrays, checked."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "programs" / "differential_evolution.py"), arch],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    for heap_message in ("double free", "corrupted", "malloc", "free():", "Segmentation"):
        assert heap_message not in out
    assert ("OverrunError: evolve: wrote past the end of field `best_fit` (bytes 0 to 3 after its last element) "
            "and of field `history` (bytes 0 to 159 after its last element)") in proc.stdout
    assert proc.stdout.rstrip().endswith("ok")


USE_GUARDS = r"""
#define QD_EMBED_GUARDS
#include "axpy.cuda.h"
#include "axpy.glsl.h"
#include <cstdio>

int main() {
    using namespace qd::embed;
    const std::size_t n = 102;
    auto* a = static_cast<float*>(guarded_alloc(n * sizeof(float)));
    if (a == nullptr || reinterpret_cast<std::uintptr_t>(a) % 16 != 0) return 1;
    for (std::size_t i = 0; i < n; ++i) {
        if (a[i] != 0.0f) return 2;  // zeroed
        a[i] = float(i);            // in range: nothing to report
    }
    if (!guarded_check(a).ok || guarded_bound_bytes(a) != n * sizeof(float) + 64) return 3;
    volatile float sink = a[n];  // a read one past the end reads the zone
    (void)sink;
    a[n] = 1.0f;                 // a write one past the end
    GuardReport r = guarded_check(a);
    if (r.ok || r.after != 4 || r.before != 0) return 4;
    if (!guarded_check(a).ok) return 5;  // the zone was restored
    a[-1] = 1.0f;
    r = guarded_check(a);
    if (r.ok || r.before != 4 || r.after != 0) return 6;
    for (std::size_t i = 0; i < n; ++i) {
        if (a[i] != float(i)) return 7;  // the buffer itself untouched by the checks
    }
    auto* rows = static_cast<float*>(guarded_alloc(9 * 40 * sizeof(float), 40 * sizeof(float)));
    rows[9 * 40 + 39] = 1.0f;    // the last element of the row past the end
    r = guarded_check(rows);
    if (r.ok || r.after != 160) return 8;
    guarded_free(rows);
    guarded_free(a);
    std::puts("guards ok");
    return 0;
}
"""


@pytest.mark.toolchain
@pytest.mark.parametrize("compiler, flags", [("g++", ["-fsanitize=address"]), ("clang++-19", [])])
def test_the_embedding_headers_guard_helper_catches_a_write_past_the_end(tmp_path, compiler, flags):
    """Opt-in (QD_EMBED_GUARDS) in every generated header, one copy when several are included;
    under AddressSanitizer, the writes past the end stay in memory the allocation owns."""
    import shutil

    from transpiler.header import header_name, render_header

    if shutil.which(compiler) is None:
        pytest.skip(f"needs {compiler}")
    for target in ("cuda", "glsl"):
        tr = qd.translate(axpy, target)
        (tmp_path / header_name(tr.manifest)).write_text(render_header(tr))
    (tmp_path / "use.cpp").write_text(USE_GUARDS)
    exe = tmp_path / "use"
    build = [compiler, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-O1", *flags, "-o", str(exe), "use.cpp"]
    r = subprocess.run(build, capture_output=True, text=True, cwd=tmp_path)
    if r.returncode != 0 and flags and "asan" in r.stderr:
        r = subprocess.run([b for b in build if b not in flags], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[:3000]
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert (run.returncode, run.stdout.strip()) == (0, "guards ok"), run.stderr[:3000]
    header = (tmp_path / "axpy.cuda.h").read_text()
    assert "guard_max_back = 4096;" in header and "guard_pattern = 0xA5;" in header  # the runtime's own
    assert (guards.MAX_BACK, guards.PATTERN, guards.FRONT) == (4096, 0xA5, 64)

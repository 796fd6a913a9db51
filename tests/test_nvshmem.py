"""Multi-GPU memory ordering: the system-scope fence on every target, and qd.shmem
(NVSHMEM on CUDA): every routine compiled by NVRTC with -rdc=true against the NVSHMEM
wheel's headers and device-linked against its library, the manifest's NVSHMEM contract,
the seed's ordering hazards at their lines (and none on the correct patterns), the
located errors, and the two-PE ring example's C++ host built with nvcc (run where GPUs are)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import transpiler as qd
from transpiler.errors import ToolchainMissing
from transpiler.header import render_header
from transpiler.ir.printer import dump_kernel
from transpiler.toolchains import check_sources

from conftest import ROOT, have_gpu, load_module, target_names

KERNELS_FILE = Path(__file__).resolve().parent / "nvshmem_kernels.py"
KERNELS = load_module(KERNELS_FILE)
LINES = KERNELS_FILE.read_text().splitlines()
EXAMPLE = ROOT / "examples" / "nvshmem_ring"
EXIT_NO_DEVICE = 77


def kernels_of(module) -> dict[str, qd.Kernel]:
    return {k.__name__: k for k in vars(module).values() if isinstance(k, qd.Kernel)}


def marked_line(kernel: qd.Kernel, tag: str) -> tuple[int, str]:
    """The one line of ``kernel`` carrying ``# TAG: TEXT`` (its number and TEXT)."""
    first = kernel.fn.__code__.co_firstlineno
    starts = sorted(k.fn.__code__.co_firstlineno for k in kernels_of(KERNELS).values())
    end = next((s for s in starts if s > first), len(LINES) + 1)
    found = [(n, m.group(1).strip()) for n in range(first, end)
             if (m := re.search(rf"#\s*{tag}:\s*(.+)$", LINES[n - 1]))]
    assert len(found) == 1, (kernel.__name__, found)
    return found[0]


def nvrtc_or_skip():
    try:
        from transpiler.toolchains import nvrtc

        nvrtc.library()
        nvrtc.nvshmem_home()
        nvrtc.cuda_include_dirs()
        if nvrtc.nvlink() is None:
            raise ToolchainMissing("nvlink", "pip install nvidia-cuda-nvcc")
    except ToolchainMissing as exc:
        pytest.skip(str(exc))
    return nvrtc


def assert_compiles(tr: qd.Translation):
    verdicts = check_sources(tr.target, tr.sources, tr.manifest)
    assert verdicts
    for v in verdicts:
        assert v.ok, f"{v.tool} rejected {v.file}:\n{v.message}\n{next(iter(tr.sources.values()))}"
    return verdicts


# ----------------------------------------------------------------------------- system scope

@qd.kernel
def publish_to_host(data: qd.types.ndarray(dtype=qd.f32, ndim=1), flag: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(data.shape[0]):
        data[i] = 1.0
        qd.simt.system.mem_fence()  # the host (or a peer GPU) reading mapped memory sees data before flag
        qd.atomic_exchange(flag[i], 1)


SYSTEM_FENCE_LINE = publish_to_host.fn.__code__.co_firstlineno + 4


@pytest.mark.toolchain
def test_system_fence_is_threadfence_system_on_cuda():
    nvrtc_or_skip()
    tr = qd.translate(publish_to_host, "cuda")
    assert "__threadfence_system();  // test_nvshmem.py:%d" % SYSTEM_FENCE_LINE in tr.sources["publish_to_host.cu"]
    assert "fence system" in dump_kernel(tr.ir)
    assert tr.warnings == []  # a system fence publishes to other blocks as well as a device one
    assert_compiles(tr)


@pytest.mark.toolchain
@pytest.mark.skipif(shutil.which("hipcc") is None, reason="needs hipcc (apt-get install hipcc)")
def test_system_fence_is_threadfence_system_on_hip():
    tr = qd.translate(publish_to_host, "hip")
    assert "__threadfence_system();" in tr.sources["publish_to_host.hip"]
    assert_compiles(tr)  # hipcc and hipRTC


@pytest.mark.parametrize("target", target_names(lacking=("system_scope",)))
def test_system_fence_is_a_located_error_without_a_system_scope(target):
    with pytest.raises(qd.TranspileError) as info:
        qd.translate(publish_to_host, target)
    err = info.value
    assert err.loc.line == SYSTEM_FENCE_LINE and err.loc.col == 8
    assert f"qd.simt.system.mem_fence() is not supported on the {target} target" in err.message
    assert "hint: use qd.simt.grid.mem_fence()" in str(err)


# ----------------------------------------------------------------------------- every routine, every dtype

RMA_DTYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64"]
ADD_DTYPES = ["i32", "u32", "i64", "u64"]             # fetch_add, add, compare_swap
EXTENDED_DTYPES = ["i32", "u32", "i64", "u64", "f32", "f64"]  # swap, fetch, set
WAIT_DTYPES = ["i16", "u16", "i32", "u32", "i64", "u64"]
CMPS = ["CMP_EQ", "CMP_NE", "CMP_GT", "CMP_GE", "CMP_LT", "CMP_LE"]


def every_routine_source() -> str:
    """One kernel calling every qd.shmem routine on every dtype NVSHMEM has it for."""
    params = ", ".join(f"r_{t}: qd.shmem.symmetric(dtype=qd.{t}, ndim=1), l_{t}: qd.types.ndarray(dtype=qd.{t}, ndim=1)"
                       for t in RMA_DTYPES)
    body = ["pe = (qd.shmem.my_pe() + 1) % qd.shmem.n_pes()", "wide = qd.i64(4)"]
    for t in RMA_DTYPES:
        body += [f"qd.shmem.put(r_{t}[0], l_{t}[0], 4, pe)",
                 f"qd.shmem.put_nbi(r_{t}[4], l_{t}[4], wide, pe)",
                 f"qd.shmem.get(l_{t}[8], r_{t}[8], 4, pe)",
                 f"qd.shmem.get_nbi(l_{t}[12], r_{t}[12], 4, pe)",
                 "qd.shmem.quiet()",
                 f"qd.shmem.p(r_{t}[16], l_{t}[17], pe)",
                 f"l_{t}[18] = qd.shmem.g(r_{t}[18], pe)"]
    for t in ADD_DTYPES:
        body += [f"l_{t}[20] = qd.shmem.atomic_fetch_add(r_{t}[20], 3, pe)",
                 f"qd.shmem.atomic_add(r_{t}[20], 2, pe)",
                 f"l_{t}[21] = qd.shmem.atomic_compare_swap(r_{t}[21], 0, 1, pe)"]
    for t in EXTENDED_DTYPES:
        body += [f"l_{t}[22] = qd.shmem.atomic_swap(r_{t}[22], 5, pe)",
                 f"l_{t}[23] = qd.shmem.atomic_fetch(r_{t}[23], pe)",
                 f"qd.shmem.atomic_set(r_{t}[24], 6, pe)"]
    body += ["qd.shmem.fence()", "qd.shmem.quiet()"]
    for k, t in enumerate(WAIT_DTYPES):
        body.append(f"qd.shmem.wait_until(r_{t}[25], qd.shmem.{CMPS[k % len(CMPS)]}, 1)")
    body.append("qd.shmem.barrier_all()")
    return "import transpiler as qd\n\n\n@qd.kernel\ndef every_routine(" + params + "):\n" + \
        textwrap.indent("\n".join(body), "    ") + "\n"


@pytest.fixture(scope="module")
def every_routine(tmp_path_factory):
    path = tmp_path_factory.mktemp("shmem") / "every_routine.py"
    path.write_text(every_routine_source())
    return qd.translate(load_module(path).every_routine, "cuda", warn=False)


def test_every_routine_is_its_typed_nvshmem_call(every_routine):
    src = every_routine.sources["every_routine.cu"]
    for call in ["nvshmem_my_pe()", "nvshmem_n_pes()", "nvshmem_float_put(&r_f32[0], &l_f32[0], 4, pe)",
                 "nvshmem_double_put_nbi(&r_f64[4], &l_f64[4], wide, pe)", "nvshmem_int8_get(&l_i8[8], &r_i8[8], 4, pe)",
                 "nvshmem_uint16_get_nbi(", "nvshmem_int_p(&r_i32[16], l_i32[17], pe)", "nvshmem_uint64_g(&r_u64[18], pe)",
                 "nvshmem_put16(&r_f16[0], &l_f16[0], 4, pe)", "nvshmem_uint16_p((uint16_t*)&r_f16[16], qd_half(l_f16[17]).bits, pe)",
                 "nvshmem_int_atomic_fetch_add(&r_i32[20], 3, pe)", "nvshmem_uint_atomic_add(&r_u32[20], 2u, pe)",
                 "int64_t(nvshmem_uint64_atomic_fetch_add((uint64_t*)&r_i64[20], (uint64_t)(3ll), pe))",
                 "nvshmem_int64_atomic_compare_swap(&r_i64[21], 0ll, 1ll, pe)", "nvshmem_float_atomic_swap(&r_f32[22], 5.0f, pe)",
                 "nvshmem_double_atomic_fetch(&r_f64[23], pe)", "nvshmem_uint64_atomic_set(&r_u64[24], 6ull, pe)",
                 "nvshmem_int_wait_until(&r_i32[25], NVSHMEM_CMP_GT, 1)", "nvshmem_short_wait_until(&r_i16[25], NVSHMEM_CMP_EQ, int16_t(1))",
                 "nvshmem_uint_wait_until(&r_u32[25], NVSHMEM_CMP_GE, 1u)",
                 "nvshmem_fence();", "nvshmem_quiet();", "nvshmem_barrier_all();"]:
        assert call in src, call
    assert src.count("#include <nvshmem.h>") == 1 and "typedef" not in src  # the header brings <cstdint>
    dump = dump_kernel(every_routine.ir)
    for text in ["r_f32: symmetric ndarray(f32, 1d)", "shmem_put(&r_f32[0:i32], &l_f32[0:i32], 4:i32, pe.",
                 "shmem_atomic_fetch_add.i32(&r_i32[20:i32], 3:i32, pe.", "shmem_wait_until(&r_i16[25:i32], eq, 1:i16)",
                 "shmem_fence", "shmem_quiet", "shmem_barrier_all", "shmem_my_pe.i32()"]:
        assert text in dump, text


@pytest.mark.toolchain
@pytest.mark.slow
def test_every_routine_compiles_with_nvrtc_rdc_and_links_against_nvshmem(every_routine):
    nvrtc = nvrtc_or_skip()
    (v,) = assert_compiles(every_routine)
    assert f"NVSHMEM {nvrtc.nvshmem_version()}" in v.tool and "nvlink" in v.tool


def test_manifest_marks_the_kernel_as_needing_nvshmem(every_routine):
    m = every_routine.manifest
    req = m["requirements"]
    assert req["nvrtc_options"] == ["-std=c++17", "-rdc=true", "--fmad=false"] and req["min_sm"] == 75
    shmem = req["nvshmem"]
    assert shmem["relocatable_device_code"] is True and shmem["nvcc_options"] == ["-rdc=true"]
    assert shmem["collective_launch"] is True  # barrier_all on the device
    assert shmem["libraries"] == ["nvshmem_host", "nvshmem_device"] and shmem["headers"] == ["nvshmem.h"]
    assert shmem["symmetric_params"] == [f"r_{t}" for t in RMA_DTYPES]
    assert any("nvshmemx_collective_launch" in n for n in shmem["host_notes"])
    assert any("nvshmemx_cumodule_init" in n for n in shmem["host_notes"])
    symmetric = {p["name"]: p.get("symmetric", False) for p in m["params"]}
    assert symmetric["r_f32"] is True and symmetric["l_f32"] is False and "symmetric" not in m["params"][1]
    nvrtc = nvrtc_or_skip()
    installed = nvrtc.nvshmem_version()
    assert installed.split(".")[0] == shmem["version"].split(".")[0], (installed, shmem["version"])


def test_manifest_follows_the_schema(every_routine):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "manifest.schema.json").read_text())
    ring = qd.translate(load_module(EXAMPLE / "kernels.py").ring, "cuda")
    for m in (every_routine.manifest, ring.manifest):
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(m))
        assert not errors, [e.message for e in errors]
    assert ring.manifest["requirements"]["nvshmem"]["collective_launch"] is False


def test_kernels_without_shmem_stay_self_contained():
    tr = qd.translate(publish_to_host, "cuda")
    src = tr.sources["publish_to_host.cu"]
    assert "#include" not in src and "nvshmem_" not in src and "typedef int int32_t;" in src
    assert "nvshmem" not in tr.manifest["requirements"] and tr.manifest["requirements"]["min_sm"] == 75


@pytest.mark.toolchain
def test_the_cuda_header_explains_the_host_side(tmp_path):
    ring = qd.translate(load_module(EXAMPLE / "kernels.py").ring, "cuda")
    header = render_header(ring)
    assert "// NVSHMEM 3.8.0: the source calls NVSHMEM device routines" in header
    assert "inline constexpr bool collective_launch = false;" in header
    assert 'symmetric_params = { { "send", "recv", "flag" } };' in header
    assert "nvshmemx_cumodule_init(module)" in header
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    (tmp_path / "ring.cuda.h").write_text(header)
    (tmp_path / "use.cpp").write_text('#include "ring.cuda.h"\nstatic_assert(qd::ring::cuda::requires_nvshmem);\n'
                                      "int main() { return int(qd::ring::cuda::symmetric_params.size()) - 3; }\n")
    r = subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "use.cpp"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# ----------------------------------------------------------------------------- errors

ERRORS = [k for k in kernels_of(KERNELS).values() if any("# error:" in line for line in
                                                          LINES[k.fn.__code__.co_firstlineno - 1:][:12])]


@pytest.mark.parametrize("kernel", ERRORS, ids=[k.__name__ for k in ERRORS])
def test_wrong_uses_are_located_errors(kernel):
    line, text = marked_line(kernel, "error")
    with pytest.raises(qd.TranspileError) as info:
        qd.translate(kernel, "cuda")
    assert info.value.loc.line == line, str(info.value)
    assert text in info.value.message, str(info.value)


@pytest.mark.parametrize("target", target_names(lacking=("nvshmem",)))
def test_other_targets_reject_shmem_at_its_first_use(target):
    ring = load_module(EXAMPLE / "kernels.py").ring
    with pytest.raises(qd.TranspileError) as info:
        qd.translate(ring, target)
    assert f"qd.shmem is not supported on the {target} target: NVSHMEM exists for CUDA only" in info.value.message
    assert info.value.loc.line == ring.fn.__code__.co_firstlineno + 1  # the first symmetric parameter
    if target not in qd.TARGETS:
        return  # the command line knows the built-in targets (a program that registers one can call its main)
    r = subprocess.run([sys.executable, str(ROOT / "cli.py"), "emit", str(EXAMPLE / "kernels.py"), "--target", target],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1 and "kernels.py:" in r.stderr and "Traceback" not in r.stderr


# ----------------------------------------------------------------------------- hazards

HAZARDS = [k for k in kernels_of(KERNELS).values() if any("# hazard:" in line for line in
                                                           LINES[k.fn.__code__.co_firstlineno - 1:][:12])]
CLEAN = [k for name, k in kernels_of(KERNELS).items() if name.startswith(("clean_", "silenced_"))]


@pytest.mark.parametrize("kernel", HAZARDS, ids=[k.__name__ for k in HAZARDS])
def test_ordering_hazards_warn_at_their_line(kernel):
    line, kind = marked_line(kernel, "hazard")
    tr = qd.translate(kernel, "cuda", warn=False)
    assert [(h.kind, h.loc.line) for h in tr.warnings] == [(kind, line)], [str(h) for h in tr.warnings]
    (h,) = tr.warnings
    assert h.hint and "qd.shmem." in h.hint  # the fix


def test_signal_warning_names_data_signal_and_fix():
    tr = qd.translate(KERNELS.unfenced_signal, "cuda", warn=False)
    text = str(tr.warnings[0])
    data_line, _ = marked_line(KERNELS.unfenced_signal, "hazard")
    assert f"the signal `flag` can reach PE `peer` before the put to `data` at line {data_line - 1}" in text
    assert "hint: call qd.shmem.fence() between the data and the signal" in text


@pytest.mark.parametrize("kernel", CLEAN, ids=[k.__name__ for k in CLEAN])
def test_correct_patterns_do_not_warn(kernel):
    assert qd.translate(kernel, "cuda", warn=False).warnings == []


@pytest.mark.toolchain
@pytest.mark.slow
def test_the_ring_example_is_clean_and_compiles():
    nvrtc_or_skip()
    tr = qd.translate(load_module(EXAMPLE / "kernels.py").ring, "cuda", warn=False)
    assert tr.warnings == []
    assert_compiles(tr)


def test_cli_prints_the_ordering_warning():
    r = subprocess.run([sys.executable, str(ROOT / "cli.py"), "emit", str(KERNELS_FILE), "--kernel", "unfenced_signal"],
                       capture_output=True, text=True, cwd=ROOT)
    line, _ = marked_line(KERNELS.unfenced_signal, "hazard")
    assert r.returncode == 0, r.stderr
    assert re.search(rf"nvshmem_kernels.py:{line}:5: warning: the signal `flag` can reach PE `peer`", r.stderr)


# ----------------------------------------------------------------------------- the example's host

def gpu_count() -> int:
    if shutil.which("nvidia-smi"):
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        return r.stdout.count("GPU ") if r.returncode == 0 else 0
    if have_gpu():
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    return 0


@pytest.mark.toolchain
@pytest.mark.slow
def test_ring_host_builds_and_runs_where_it_can(tmp_path):
    """Transpile, compile and link the C++ host with nvcc (-rdc=true, NVSHMEM's host and
    device libraries from the wheels); run one PE (a ring of one), and two where there are
    two GPUs; without a device it must say so and exit 77."""
    nvrtc = nvrtc_or_skip()
    if shutil.which("make") is None or shutil.which("g++") is None:
        pytest.skip("needs make and g++ (nvcc's host compiler)")
    if not (Path(nvrtc.nvlink()).parent / "nvcc").exists():
        pytest.skip("needs nvcc (pip install nvidia-cuda-nvcc)")
    build = tmp_path / "build"
    r = subprocess.run(["make", "-C", str(EXAMPLE), f"BUILD={build}", f"PY={sys.executable}"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    exe = build / "nvshmem_ring"
    assert exe.exists() and (build / "ring.cuda.h").exists() and (build / "ring.json").exists()
    run = subprocess.run([str(exe), "--pes", "1", "--n", "4096"], capture_output=True, text=True, timeout=300)
    if run.returncode == EXIT_NO_DEVICE:
        assert "no CUDA device" in run.stdout, run.stdout + run.stderr
        return
    assert run.returncode == 0 and "PE 0/1: OK (" in run.stdout, run.stdout + run.stderr
    if gpu_count() >= 2:
        run = subprocess.run([str(exe), "--pes", "2", "--n", "4096"], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0 and run.stdout.count(": OK (") == 2, run.stdout + run.stderr


def test_symmetric_keyword_and_routines_with_side_effects_are_kept():
    tr = qd.translate(KERNELS.fetches_as_statements, "cuda", warn=False)
    assert tr.manifest["params"][0]["symmetric"] is True  # qd.types.ndarray(..., symmetric=True)
    src = tr.sources["fetches_as_statements.cu"]
    assert "        nvshmem_int_atomic_fetch_add(&c[0], 1, peer);" in src
    assert re.search(r"int32_t end = nvshmem_int_g\(&c\[1\], peer\);.*\n.*for \(int32_t j = 0; j < end;", src)
    assert "while (nvshmem_int_atomic_fetch(&c[3], peer) == 0) {" in src

"""Embedding the generated code in C++: the manifest schema, the C++ headers (compiled by
g++ and clang++), their grid rule against the Python runtime's, the CMake module, and the
two example hosts (Vulkan, built and run on whatever device there is, lavapipe on a CPU;
CUDA, built and linked, run where a driver exists)."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import transpiler as qd
from transpiler.cli import load_kernels
from transpiler.header import common_context, header_name, render_header

from conftest import ROOT, corpus, target_names, toolchain_test
from manifest_schema import SCHEMA, schema, schema_text
from transpiler.targets import get_target

SNAPSHOTS = sorted((ROOT / "tests" / "snapshots").glob("*/*.json"))
EXAMPLE_FILES = sorted(ROOT.glob("examples/*.py")) + sorted(ROOT.glob("examples/*/kernels.py"))
CXX_FLAGS = ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only"]
EXIT_NO_DRIVER = 77

needs_cmake = toolchain_test("needs cmake and g++ (scripts/setup.sh toolchains)",
                             shutil.which("cmake") is None or shutil.which("g++") is None)
needs_gxx = toolchain_test("needs g++", shutil.which("g++") is None)


def translations(kernels_with_templates, targets: list[str]):
    """Every (kernel, target) translation that the target accepts."""
    out = []
    with warnings.catch_warnings():  # hazard warnings are test_diagnostics' business
        warnings.simplefilter("ignore")
        for kernel, template_args in kernels_with_templates:
            for target in targets:
                try:
                    out.append(qd.translate(kernel, target, template_args=template_args))
                except qd.TranspileError:
                    continue  # e.g. f64 on Metal: its snapshot is the diagnostic
    return out


def corpus_translations(targets: list[str]):
    return translations([(k, t) for _, k, t in corpus()], targets)


def example_translations(targets: list[str]):
    return translations([(k, {}) for f in EXAMPLE_FILES for k in load_kernels(str(f))[0].values()], targets)


# ----------------------------------------------------------------------------- manifest schema

@pytest.fixture(scope="module")
def validator():
    """The schema of every registered target's manifest (one registered from outside too)."""
    jsonschema = pytest.importorskip("jsonschema")
    every = schema(target_names())
    jsonschema.Draft202012Validator.check_schema(every)
    return jsonschema.Draft202012Validator(every)


def test_the_committed_schema_lists_the_built_in_targets():
    """Its target enum and file extensions are generated from the registry."""
    assert SCHEMA.read_text() == schema_text(list(qd.TARGETS)), "run python tests/manifest_schema.py"
    listed = json.loads(SCHEMA.read_text())
    assert listed["properties"]["target"]["enum"] == list(qd.TARGETS)
    for target in qd.TARGETS:
        assert f"|{get_target(target).file_ext[1:]}" in listed["$defs"]["file"]["pattern"].replace("(", "|")


def test_the_schema_admits_registered_targets_only(validator):
    manifest = json.loads(next(p for p in SNAPSHOTS if p.stem == "normalize").read_text())
    manifest["target"] = "spirv"
    assert errors(validator, manifest)
    manifest = json.loads(next(p for p in SNAPSHOTS if p.stem == "normalize" and p.parent.name == "cuda").read_text())
    manifest["files"] = ["normalize.spv"]
    assert errors(validator, manifest)


def errors(validator, manifest) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(manifest)]


def test_golden_manifests_follow_the_schema(validator):
    assert len(SNAPSHOTS) >= 4 * 10
    for path in SNAPSHOTS:
        assert not errors(validator, json.loads(path.read_text())), path


def test_example_manifests_follow_the_schema(validator):
    trs = example_translations(target_names())
    assert {tr.target for tr in trs} == set(target_names())
    for tr in trs:
        assert not errors(validator, tr.manifest), (tr.manifest["kernel"], tr.target)


def test_schema_rejects_one_targets_fields_in_another(validator):
    manifests = {p.parent.name: json.loads(p.read_text()) for p in SNAPSHOTS if p.stem == "normalize"}
    glsl = manifests["glsl"]
    glsl["params"][0]["arg_index"] = 0
    assert errors(validator, glsl)
    msl = manifests["msl"]
    del msl["params_buffer"]
    assert errors(validator, msl)
    cuda = manifests["cuda"]
    cuda["entry_points"][0]["grid"] = {"rule": "ceil_div", "extent": [{"begin": "0", "end": "n"}], "max_blocks": 1}
    assert errors(validator, cuda)  # a serial task has a single-block grid


# ----------------------------------------------------------------------------- headers

@pytest.fixture(scope="module")
def corpus_headers(tmp_path_factory):
    """Every corpus kernel's header for every target that accepts it, in one folder."""
    out = tmp_path_factory.mktemp("headers")
    trs = corpus_translations(target_names("header"))
    for tr in trs:
        (out / header_name(tr.manifest)).write_text(render_header(tr))
    return out, trs


def compile_headers(compiler: str, folder: Path, headers: list[str], *flags: str) -> None:
    tu = folder / f"tu_{abs(hash((compiler, tuple(headers), flags)))}.cpp"
    tu.write_text("".join(f'#include "{h}"\n' for h in headers) + "int main() { return 0; }\n")
    r = subprocess.run([compiler, *CXX_FLAGS, *flags, str(tu)], capture_output=True, text=True, cwd=folder)
    assert r.returncode == 0, f"{compiler} {' '.join(flags)}:\n{r.stderr[:4000]}"


@needs_gxx
@pytest.mark.parametrize("compiler", ["g++", "clang++-19"])
def test_every_corpus_header_compiles(corpus_headers, compiler):
    if shutil.which(compiler) is None:
        pytest.skip(f"needs {compiler}")
    folder, trs = corpus_headers
    names = [header_name(tr.manifest) for tr in trs]
    assert {tr.target for tr in trs} == set(target_names("header")) and len(names) == len(set(names))
    compile_headers(compiler, folder, names)                      # all together: no clashes
    for target in target_names("header"):                         # each on its own: self-contained
        compile_headers(compiler, folder, [next(n for n in names if n.endswith(f".{target}.h"))])


def cuda_include_dir() -> str | None:
    for base in sys.path:
        for found in sorted(glob.glob(os.path.join(base, "nvidia", "*", "include", "cuda.h"))):
            if os.path.exists(os.path.join(os.path.dirname(found), "cuda_runtime_api.h")):
                return os.path.dirname(found)
    return None


@needs_gxx
def test_cuda_launch_helpers_compile_against_the_cuda_headers(corpus_headers):
    include = cuda_include_dir()
    if include is None:
        pytest.skip("needs the CUDA headers of the nvidia-cuda-runtime wheel (scripts/setup.sh toolchains)")
    folder, trs = corpus_headers
    names = [header_name(tr.manifest) for tr in trs if tr.target == "cuda"]
    compile_headers("g++", folder, names, "-isystem", include, "-DQD_CUDA_DRIVER_API", "-DQD_CUDA_RUNTIME_API")


@needs_gxx
def test_hip_launch_helpers_compile_against_the_hip_headers(corpus_headers):
    if not Path("/usr/include/hip/hip_runtime_api.h").exists():
        pytest.skip("needs libamdhip64-dev")
    folder, trs = corpus_headers
    names = [header_name(tr.manifest) for tr in trs if tr.target == "hip"]
    compile_headers("g++", folder, names, "-D__HIP_PLATFORM_AMD__", "-DQD_HIP_RUNTIME_API")


@needs_gxx
def test_vulkan_helper_compiles_against_the_vulkan_headers(corpus_headers):
    if not Path("/usr/include/vulkan/vulkan.h").exists():
        pytest.skip("needs libvulkan-dev")
    folder, trs = corpus_headers
    compile_headers("g++", folder, [header_name(tr.manifest) for tr in trs if tr.target == "glsl"], "-DQD_VULKAN")


def test_header_carries_the_manifest():
    kernels, _ = load_kernels(str(ROOT / "examples" / "cpp_vulkan" / "kernels.py"))
    tr = qd.translate(kernels["standardize"], "glsl")
    text = render_header(tr)
    assert text.startswith("// C++17 header embedding GLSL 450")
    assert "namespace qd::standardize::glsl {" in text
    for name, source in tr.sources.items():
        assert source in text and f'"{name[:-5]}.spv"' in text
    for p in tr.manifest["params"]:
        if p["kind"] == "ndarray":
            assert f"inline constexpr std::uint32_t {p['name']} = {p['binding']};" in text
        else:
            assert f"static_assert(offsetof(PushConstants, {p['name']}) == {p['push_constant_offset']}," in text
    assert f"push_constant_bytes = {tr.manifest['requirements']['push_constant_bytes']};" in text
    assert "alignas(8) double scale;" in text


def test_header_names_survive_cxx_keywords_and_macros():
    ctx = common_context({"k.cu": ""}, {
        "kernel": "embed", "target": "cuda", "source": "k.py", "subgroup_size": 32, "requirements": {},
        "entry_points": [], "params": [
            {"name": "new", "kind": "ndarray", "dtype": "f32", "ndim": 1, "arg_index": 0, "shape_arg_indices": [1]},
            {"name": "unix", "kind": "scalar", "dtype": "i32", "arg_index": 2},
            {"name": "__x", "kind": "scalar", "dtype": "i32", "arg_index": 3}]}, "CUDA C++")
    assert ctx["namespace"] == "qd::embed_::cuda"
    assert ctx["members"] == {"new": "new_", "new_shape_0": "new_shape_0", "unix": "unix_", "__x": "qd_x"}


@needs_gxx
@pytest.mark.parametrize("kernels", ["corpus", "examples"])  # apart: both have a `histogram`
def test_grid_helpers_agree_with_the_python_runtime(tmp_path, kernels):
    """grid_blocks() in C++ against runtime.plan_launches for every corpus and example
    kernel, at sizes that leave a partial block, empty ranges and the max_blocks cap."""
    import numpy as np

    from transpiler.runtime import plan_launches

    trs = corpus_translations(["cuda"]) if kernels == "corpus" else example_translations(["cuda"])
    cases = [(tr, shape_scale) for tr in trs for shape_scale in (1, 0, 1000000)]
    body, expected = [], []
    for n, (tr, scale) in enumerate(cases):
        members = common_context(tr.sources, tr.manifest, tr.language)["members"]
        ns = common_context(tr.sources, tr.manifest, tr.language)["namespace"]
        values, sets = {}, []
        for k, p in enumerate(tr.ir.params):
            if p.is_array and p.type.static_shape is not None:  # a field: its shape is in the code
                values[p.name] = np.zeros(p.type.static_shape, p.type.dtype.np_dtype)
            elif p.is_array:
                shape = tuple((13 + 5 * k + 3 * d) * scale if d == 0 else 3 + d for d in range(p.type.ndim))
                values[p.name] = np.broadcast_to(np.zeros(1, p.type.dtype.np_dtype), shape) if shape else \
                    np.zeros((), p.type.dtype.np_dtype)  # a 0-d buffer: the kernel's own (scratch, result)
                sets += [f"a.{members[f'{p.name}_shape_{d}']} = {s};" for d, s in enumerate(shape)]
            elif p.type.is_int:
                values[p.name] = p.type.np_dtype.type(2 + k % 3)
                sets.append(f"a.{members[p.name]} = {2 + k % 3};")
            else:
                values[p.name] = p.type.np_dtype.type(1)
        expected += [f"{n} {k} {launch.blocks}" for k, launch in enumerate(plan_launches(tr.ir, values))]
        body.append(f"{{ {ns}::Args a{{}}; {' '.join(sets)} for (std::size_t k = 0; k < {ns}::num_entry_points; ++k) "
                    f"std::printf(\"{n} %zu %u\\n\", k, {ns}::grid_blocks(k, a)); }}")
    headers = []
    for tr in {header_name(tr.manifest): tr for tr, _ in cases}.values():
        (tmp_path / header_name(tr.manifest)).write_text(render_header(tr))
        headers.append(header_name(tr.manifest))
    (tmp_path / "grid.cpp").write_text("".join(f'#include "{h}"\n' for h in headers) + "#include <cstdio>\n"
                                       "int main() {\n" + "\n".join(body) + "\n}\n")
    exe = tmp_path / "grid"
    r = subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-o", str(exe), "grid.cpp"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[:4000]
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")[:-1]
    assert got == expected
    assert any(line.endswith(" 65535") for line in got) and any(line.endswith(" 0") for line in got)


def test_cli_writes_the_header(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "cli.py"), "emit", "examples/saxpy.py", "--target", "glsl,cuda",
                        "-o", str(tmp_path), "--header"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "saxpy.glsl.h" in r.stdout
    assert (tmp_path / "cuda" / "saxpy.cuda.h").read_text().startswith("// C++17 header embedding CUDA C++")
    assert (tmp_path / "glsl" / "saxpy.glsl.h").exists()
    r = subprocess.run([sys.executable, str(ROOT / "cli.py"), "emit", "examples/saxpy.py", "--target", "msl",
                        "--header"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("#endif  // QD_GENERATED_saxpy_MSL_H")


# ----------------------------------------------------------------------------- CMake and the hosts

def cmake_build(source: Path, build: Path, *defs: str, target: str | None = None) -> subprocess.CompletedProcess:
    configure = subprocess.run(["cmake", "-S", str(source), "-B", str(build), f"-DTRANSPILER_PYTHON={sys.executable}",
                                *defs], capture_output=True, text=True)
    assert configure.returncode == 0, configure.stdout[-3000:] + configure.stderr[-3000:]
    return rebuild(build, target)


def rebuild(build: Path, target: str | None = None) -> subprocess.CompletedProcess:
    r = subprocess.run(["cmake", "--build", str(build), "-j", "2", *(["--target", target] if target else [])],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    return r


@needs_cmake
def test_vulkan_host_builds_and_prints_ok(tmp_path_factory):
    if shutil.which("glslangValidator") is None or not Path("/usr/include/vulkan/vulkan.h").exists():
        pytest.skip("needs glslang-tools and libvulkan-dev")
    build = tmp_path_factory.mktemp("cpp_vulkan")
    cmake_build(ROOT / "examples" / "cpp_vulkan", build)
    for kernel in ("standardize", "reduce_i32", "seed_grid", "grid_energy"):
        manifest = json.loads((build / "vk_kernels" / "glsl" / f"{kernel}.json").read_text())
        for e in manifest["entry_points"]:
            assert (build / "vk_kernels" / "glsl" / (e["file"][:-5] + ".spv")).exists()
    r = subprocess.run([str(build / "vulkan_host")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "OK", r.stdout + r.stderr


@needs_cmake
def test_cuda_host_builds_and_runs_where_it_can(tmp_path_factory):
    build = tmp_path_factory.mktemp("cpp_cuda")
    cmake_build(ROOT / "examples" / "cpp_cuda", build)
    exe = build / "cuda_host"
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    if r.returncode == EXIT_NO_DRIVER:
        assert "no CUDA driver" in r.stderr or "no usable CUDA driver" in r.stderr or "no CUDA device" in r.stderr
    else:
        assert r.returncode == 0 and r.stdout.splitlines()[-1] == "OK", r.stdout + r.stderr
    # NVRTC needs no driver: the embedded sources compile here too.
    r = subprocess.run([str(exe), "--compile-only"], capture_output=True, text=True, timeout=300)
    if r.returncode == EXIT_NO_DRIVER:
        pytest.skip(f"no NVRTC: {r.stderr.strip()}")
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "OK", r.stdout + r.stderr


MODULE_PROJECT = """
cmake_minimum_required(VERSION 3.20)
project(module_test LANGUAGES CXX)
include("{root}/cmake/Transpiler.cmake")
transpiler_add_kernels(gen SOURCES kernels.py TARGETS glsl cuda hip msl KERNELS scaled TEMPLATE factor=3)
add_executable(app main.cpp)
target_compile_features(app PRIVATE cxx_std_17)
target_compile_options(app PRIVATE -Wall -Wextra -Werror)
target_link_libraries(app PRIVATE gen)
"""
MODULE_KERNELS = """
import transpiler as qd


@qd.kernel
def scaled(x: qd.types.ndarray(dtype=qd.f32, ndim=1), factor: qd.template()):
    for i in range(x.shape[0]):
        x[i] = x[i] * factor{extra}


@qd.kernel
def ignored(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        x[i] = 0.0
"""
MODULE_MAIN = """
#include "scaled.glsl.h"
#include "scaled.cuda.h"
#include "scaled.hip.h"
#include "scaled.msl.h"
#include <cstdio>
#include <cstring>
int main() {
    namespace G = qd::scaled::glsl;
    std::printf("%zu %s\\n", G::num_entry_points, std::strstr(G::sources[0], "* 3") ? "factor=3" : "?");
    return qd::scaled::cuda::entry_points[0].block_dim == 128 ? 0 : 1;
}
"""


@needs_cmake
def test_cmake_module_generates_at_build_time_and_tracks_the_python_file(tmp_path):
    if shutil.which("glslangValidator") is None:
        pytest.skip("needs glslang-tools")
    src, build = tmp_path / "src", tmp_path / "build"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(MODULE_PROJECT.format(root=ROOT.as_posix()))
    (src / "kernels.py").write_text(MODULE_KERNELS.format(extra=""))
    (src / "main.cpp").write_text(MODULE_MAIN)
    cmake_build(src, build)
    out = build / "gen"
    assert sorted(p.name for p in (out / "glsl").iterdir()) == ["scaled.comp", "scaled.glsl.h", "scaled.json",
                                                                 "scaled.spv"]
    for target, ext in (("cuda", "cu"), ("hip", "hip"), ("msl", "metal")):
        assert sorted(p.name for p in (out / target).iterdir()) == sorted(
            [f"scaled.{ext}", "scaled.json", f"scaled.{target}.h"])
    r = subprocess.run([str(build / "app")], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "1 factor=3\n", r.stdout + r.stderr

    # A new task in the Python file: CMake re-configures, regenerates and rebuilds.
    stamp = (out / "glsl" / "scaled.json").stat().st_mtime_ns
    (src / "kernels.py").write_text(MODULE_KERNELS.format(extra=textwrap.indent(
        "\nfor i in range(x.shape[0]):\n    x[i] = x[i] + 1.0", "    ")))
    os.utime(src / "kernels.py", ns=(stamp + 10**9, stamp + 10**9))
    rebuild(build)
    assert (out / "glsl" / "scaled_1.spv").exists()
    r = subprocess.run([str(build / "app")], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("2 "), r.stdout + r.stderr


@needs_cmake
def test_cmake_module_reports_a_kernel_error_at_configure_time(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(MODULE_PROJECT.format(root=ROOT.as_posix()).split("transpiler_add")[0] +
                                        "transpiler_add_kernels(gen SOURCES kernels.py TARGETS cuda)\n")
    (src / "kernels.py").write_text("import transpiler as qd\n\n\n@qd.kernel\ndef scaled(x: qd.f32):\n"
                                    "    y = {i for i in range(3)}\n")
    r = subprocess.run(["cmake", "-S", str(src), "-B", str(tmp_path / "build"),
                        f"-DTRANSPILER_PYTHON={sys.executable}"], capture_output=True, text=True)
    assert r.returncode != 0
    assert "kernels.py:6:" in r.stderr and "set comprehensions are not supported" in r.stderr


@needs_gxx
@pytest.mark.parametrize("target", ["cuda", "glsl"])
def test_the_header_reads_the_value_a_kernel_returns(tmp_path, target):
    from conftest import KERNELS, load_module

    tr = qd.translate(load_module(KERNELS / "kernel_scope.py").mean_and_noise, target)
    assert tr.manifest["result"] == {"param": "qd_result", "dtype": "f32"}
    (tmp_path / "k.h").write_text(render_header(tr))
    ns = f"qd::mean_and_noise::{target}"
    (tmp_path / "use.cpp").write_text(
        '#include "k.h"\n#include <cstring>\n#include <type_traits>\n'
        f"static_assert(std::is_same_v<{ns}::result_type, float>);\n"
        "int main() {\n"
        "    const float device_copy = 2.5f;  // what the host copied back from the result buffer\n"
        f"    const auto& b = {ns}::buffers[{ns}::result_buffer];\n"
        '    return std::strcmp(b.role, "result") == 0 && std::strcmp(b.name, "qd_result") == 0 && b.ndim == 0 &&\n'
        f"           {ns}::read_result(&device_copy) == 2.5f ? 0 : 1;\n"
        "}\n")
    exe = tmp_path / "use"
    r = subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-o", str(exe), "use.cpp"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[:3000]
    assert subprocess.run([str(exe)]).returncode == 0


@needs_gxx
@pytest.mark.parametrize("target", ["cuda", "glsl"])
def test_run_entries_repeats_each_graph_do_while_loop_as_the_python_runtime_does(tmp_path, target):
    """The header's run_entries() against the Python runtime's schedule, for nested loops:
    the C++ side launches through a callback that plays the serial tasks' flag updates."""
    from conftest import KERNELS, load_module

    from transpiler.runtime import plan_launches, run_with_loops

    relax = load_module(KERNELS / "multitask.py").relax
    tr = qd.translate(relax, target)
    assert [(loop["first"], loop["stop"], loop["flag"], loop["parent"]) for loop in tr.manifest["loops"]] == \
        [(1, 5, "sweeps", None), (2, 4, "passes", 0)]
    # Python: the tasks each run launches, the flags updated as the serial tasks do.
    values = {"x": np.zeros(8, np.float32), "sweeps": np.array(3, np.int32), "passes": np.array(0, np.int32)}
    effects = {1: ("passes", "=", 2), 3: ("passes", "-", 1), 4: ("sweeps", "-", 1)}
    order = []

    class Recorder:
        def run(self, program, kir, vals, launches):
            for launch in launches:
                k = kir.tasks.index(launch.task)
                order.append(k)
                if k in effects:
                    name, op, v = effects[k]
                    vals[name][()] = v if op == "=" else vals[name] - v

    run_with_loops(Recorder(), None, tr.ir, values, plan_launches(tr.ir, values))
    assert order == [0] + [1, 2, 3, 2, 3, 4] * 3
    # C++: the same effects, through run_entries().
    (tmp_path / "k.h").write_text(render_header(tr))
    ns = f"qd::relax::{target}"
    (tmp_path / "use.cpp").write_text(
        '#include "k.h"\n#include <cstdio>\n#include <cstring>\n'
        "int main() {\n"
        f"    std::int32_t flag[{ns}::num_buffers] = {{}};\n"
        f"    std::size_t sweeps = 0, passes = 0;\n"
        f"    for (std::size_t b = 0; b < {ns}::num_buffers; ++b) {{\n"
        f'        if (std::strcmp({ns}::buffers[b].name, "sweeps") == 0) sweeps = b;\n'
        f'        if (std::strcmp({ns}::buffers[b].name, "passes") == 0) passes = b;\n'
        "    }\n"
        "    flag[sweeps] = 3;\n"
        f"    return {ns}::run_entries([&](std::size_t k) {{\n"
        '        std::printf("%zu ", k);\n'
        "        if (k == 1) flag[passes] = 2;\n"
        "        if (k == 3) flag[passes] -= 1;\n"
        "        if (k == 4) flag[sweeps] -= 1;\n"
        "        return 0;\n"
        "    }, [&](std::size_t buffer, std::int32_t& value) { value = flag[buffer]; return 0; });\n"
        "}\n")
    exe = tmp_path / "use"
    r = subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-o", str(exe), "use.cpp"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[:3000]
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0 and [int(k) for k in run.stdout.split()] == order


def test_struct_and_tuple_results_follow_the_schema(validator):
    from test_language import returns_struct, returns_tuple

    for kernel in (returns_struct, returns_tuple):
        for target in target_names():
            tr = qd.translate(kernel, target)
            assert "result" not in tr.manifest and not errors(validator, tr.manifest), (kernel.__name__, target)
            if get_target(target).has_header:
                assert "read_result" not in render_header(tr)  # each part's buffer is read as the manifest lists it

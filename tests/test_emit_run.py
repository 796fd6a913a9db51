"""``emit / check / inspect --run PROGRAM.py [-- ARGS]``: the program runs on an executor of the
command line's choice, and every kernel specialization it launched is written, once, under a
name that is the same in every run (runtime/capture.py)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, toolchain_test
from manifest_schema import schema

CALLTYPED = ROOT / "tests" / "calltyped"
PROGRAM = CALLTYPED / "specializations.py"
TARGETS = ("cuda", "hip", "glsl", "msl")
needs_cpu_executor = toolchain_test("the CPU executor compiles with g++", shutil.which("g++") is None)


def cli(*args, env=None, cwd=ROOT):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, **(env or {})}, timeout=900)


def emitted(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


# What specializations.py launches: scale with (dtype, ndim, factor) and the solver's two kernels
# for each of its two instances (n, substeps).
SCALE = [("f32:1", 2), ("u32:1", 2), ("f32:2", 2), ("i32:1", 3), ("f32:1", 3)]
SOLVERS = [(16, 2), (8, 3)]


@needs_cpu_executor
def test_each_specialization_is_written_once_to_every_target(tmp_path):
    r = cli("emit", "--run", PROGRAM, "--target", "all", "-o", tmp_path, "--", "11")
    assert r.returncode == 0, r.stderr
    # The program's output is on stderr (stdout lists the files), in its order.
    assert "scale float32 1-d x2:" in r.stderr and "solver 8 x3:" in r.stderr and "x2:" not in r.stdout
    index = json.loads((tmp_path / "specializations.json").read_text())
    assert (index["program"], index["args"], index["executor"]) == ("specializations.py", ["11"], "cpu-cuda")
    specs = index["specializations"]
    scale = [s for s in specs if s["kernel"] == "scale"]
    assert [(s["arg_types"]["x"], s["template_values"]["factor"]) for s in scale] == SCALE
    assert all(s["arg_types"]["out"] == s["arg_types"]["x"] for s in scale)
    for method in ("init", "step"):
        mine = [s for s in specs if s["kernel"] == f"Solver.{method}"]
        state = [(s["template_values"]["self"]["members"]["n"], s["template_values"]["self"]["members"]["substeps"])
                 for s in mine]
        assert state == SOLVERS, method
        assert all(s["name"].startswith(f"Solver_{method}_") for s in mine)
    assert len(specs) == len(SCALE) + 2 * len(SOLVERS) == len({s["name"] for s in specs})
    validator = pytest.importorskip("jsonschema").Draft202012Validator(schema(list(TARGETS)))
    for s in specs:
        assert s["name"].startswith(s["kernel"].replace(".", "_") + "_") and len(s["name"].rsplit("_", 1)[1]) == 8
        for target in TARGETS:
            files = s["files"][target]
            manifest = json.loads((tmp_path / target / f"{s['name']}.json").read_text())
            assert manifest["specialization"] == {k: v for k, v in s.items() if k != "files"}
            validator.validate(manifest)
            assert files == [f"{target}/{n}" for n in manifest["files"]] + [f"{target}/{s['name']}.json"]
    written = emitted(tmp_path)
    assert len(written) == 1 + len(specs) * 2 * len(TARGETS)  # one source and one manifest per target
    cu = written[f"cuda/{scale[1]['name']}.cu"].decode()  # the u32 one, entry point named after it
    assert f"void __launch_bounds__(128) {scale[1]['name']}(" in cu and "uint32_t* x" in cu


@needs_cpu_executor
def test_the_same_bytes_in_every_run_and_on_every_executor(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    r = cli("emit", "--run", PROGRAM, "--target", "all", "-o", first, "-q", env={"PYTHONHASHSEED": "1"})
    assert r.returncode == 0 and r.stdout == "", r.stderr
    r = cli("emit", "--run", PROGRAM, "--target", "all", "-o", second, "-q", "--executor", "cpu-hip",
            env={"PYTHONHASHSEED": "2"})
    assert r.returncode == 0, r.stderr
    a, b = emitted(first), emitted(second)
    index_a, index_b = json.loads(a.pop("specializations.json")), json.loads(b.pop("specializations.json"))
    assert a == b
    assert (index_a["executor"], index_b["executor"]) == ("cpu-cuda", "cpu-hip")
    assert index_a["specializations"] == index_b["specializations"]


@needs_cpu_executor
def test_a_kernel_picked_by_its_python_name_and_printed_to_stdout():
    r = cli("emit", "--run", PROGRAM, "--kernel", "Solver.step", "--target", "cuda", "-q")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count('extern "C" __global__') == 2 and r.stdout.count('"kernel": "Solver.step"') == 2
    assert "solver" not in r.stderr  # -q: what the program prints is dropped
    r = cli("emit", "--run", PROGRAM, "--kernel", "nope")
    assert r.returncode == 2 and "launched no kernel named nope (it launched: Solver.init, Solver.step, scale)" \
        in r.stderr


@needs_cpu_executor
def test_check_run_passes_every_toolchain():
    r = cli("check", "--run", PROGRAM, "--target", "all", "--json", "-q")
    assert r.returncode in (0, 3), r.stderr  # 3: a toolchain missing here (its verdict says which)
    report = json.loads(r.stdout)
    for target, verdict in report["targets"].items():
        assert verdict["verdict"] in ("ok", "missing"), (target, verdict)
    checked = {c["kernel"] for c in report["checks"] if c["verdict"] == "ok"}
    assert len(checked) == len(SCALE) + 2 * len(SOLVERS)


@needs_cpu_executor
def test_inspect_run_shows_each_specialization():
    r = cli("inspect", "--run", PROGRAM, "--kernel", "scale", "-q")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("==== typed IR of scale_") == len(SCALE)


def test_a_program_that_raises_is_a_located_usage_error(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("import sys\nimport transpiler as qd\n\n\ndef main(argv):\n"
                    "    n = int(argv[0])\n    return n\n\n\nsys.exit(main(sys.argv[1:]))\n")
    r = cli("emit", "--run", prog, "--", "many")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].endswith("prog.py:6:9: error: the program raised ValueError: invalid literal for int() with "
                             "base 10: 'many'"), r.stderr
    assert lines[1].strip() == "n = int(argv[0])" and lines[2].strip() == "^"
    assert "nothing was written" in r.stderr
    r = cli("emit", "--run", prog)
    assert r.returncode == 2 and "prog.py:6:13: error: the program raised IndexError: list index out of range" \
        in r.stderr


def test_a_program_that_launches_nothing_or_fails_says_so(tmp_path):
    prog = tmp_path / "quiet.py"
    prog.write_text("import transpiler as qd\n\n\n@qd.kernel\ndef f(x: qd.types.ndarray()):\n"
                    "    for i in range(x.shape[0]):\n        x[i] = 1\n\n\nprint('hello')\n")
    r = cli("emit", "--run", prog, "-o", tmp_path / "out")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == ["hello", f"{prog}: error: the program ran to its end and launched no kernel",
                                     "hint: the program's work must run when it is run as a script (under `if "
                                     "__name__ == \"__main__\":`); give its arguments after `--`: transpiler emit "
                                     "--run prog.py -- ARGS"]
    assert not (tmp_path / "out").exists()
    prog.write_text("import sys\nsys.exit(3)\n")
    r = cli("check", "--run", prog)
    assert r.returncode == 2 and f"{prog}: error: the program exited with status 3; nothing was written" in r.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["emit", PROGRAM, "--", "1"], "arguments after `--` and --depfile go with --run"),
    (["emit", "--run", PROGRAM, "--template", "factor=2"], "--template does not go with --run"),
    (["emit", "--run", PROGRAM, "--depfile", "x.d"], "--depfile needs -o DIR"),
    (["check", "--run", PROGRAM, "--executor", "metal"], "invalid choice: 'metal'"),
])
def test_run_usage_errors(args, message):
    r = cli(*args)
    assert r.returncode == 2 and message in r.stderr, r.stderr


# ----------------------------------------------------------------------------- the call-typed corpus

CORPUS = sorted(p for p in CALLTYPED.glob("*.py") if p.name != "specializations.py" and not p.name.startswith("_"))


@needs_cpu_executor
@pytest.mark.slow
@pytest.mark.parametrize("program", CORPUS, ids=[p.stem for p in CORPUS])
def test_calltyped_corpus_emits_and_checks_with_run(program, tmp_path):
    """Kernels typed by their calls (untyped ndarrays, template values, solver methods), modelled
    on Genesis's solvers and Taichi's examples, each with its own small driver."""
    r = cli("emit", "--run", program, "--target", "all", "-o", tmp_path, "-q")
    assert r.returncode == 0, r.stderr
    index = json.loads((tmp_path / "specializations.json").read_text())
    assert index["specializations"]
    for s in index["specializations"]:
        assert set(s["files"]) == set(TARGETS)
        # a C identifier without `__` or a leading `_` (Genesis's `_kernel_*` methods included)
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*_[0-9a-f]{8}", s["name"]), s["name"]
    r = cli("check", "--run", program, "--target", "all", "--json", "-q")
    assert r.returncode in (0, 3), r.stderr
    assert all(v["verdict"] in ("ok", "missing") for v in json.loads(r.stdout)["targets"].values()), r.stdout


# ----------------------------------------------------------------------------- CMake: transpiler_add_program

PROGRAM_PROJECT = """
cmake_minimum_required(VERSION 3.20)
project(run_test LANGUAGES CXX)
include("{root}/cmake/Transpiler.cmake")
transpiler_add_program(gen PROGRAM prog.py TARGETS glsl cuda hip msl ARGS 2)
list(GET gen_SPECIALIZATIONS 0 first)
add_executable(app main.cpp)
target_compile_features(app PRIVATE cxx_std_17)
target_compile_definitions(app PRIVATE FIRST_HEADER="${{first}}.cuda.h" FIRST_NS=${{first}})
target_link_libraries(app PRIVATE gen)
"""
PROGRAM_HELPER = "FACTORS = {factors}\n"
PROGRAM_MAIN = """
import sys

import numpy as np

import transpiler as qd
from helper import FACTORS


@qd.kernel
def scaled(x: qd.types.ndarray(), factor: qd.template()):
    for i in range(x.shape[0]):
        x[i] = x[i] * factor


if __name__ == "__main__":
    for f in FACTORS[:int(sys.argv[1])]:
        scaled(np.ones(8, np.float32), f)
"""
PROGRAM_APP = """
#include FIRST_HEADER
#include <cstdio>
int main() {
    std::printf("%zu\\n", qd::FIRST_NS::cuda::num_entry_points);
    return 0;
}
"""


@toolchain_test("needs cmake, g++ and glslang-tools (scripts/setup.sh toolchains)",
                 not all(shutil.which(t) for t in ("cmake", "g++", "glslangValidator")))
def test_cmake_runs_the_program_at_build_time_and_tracks_its_modules(tmp_path):
    src, build = tmp_path / "src", tmp_path / "build"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(PROGRAM_PROJECT.format(root=ROOT.as_posix()))
    (src / "prog.py").write_text(PROGRAM_MAIN)
    (src / "helper.py").write_text(PROGRAM_HELPER.format(factors="(2, 3, 4)"))
    (src / "main.cpp").write_text(PROGRAM_APP)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    r = subprocess.run(["cmake", "-S", src, "-B", build, f"-DTRANSPILER_PYTHON={sys.executable}", *generator],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    r = subprocess.run(["cmake", "--build", build], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = build / "gen"
    index = json.loads((out / "specializations.json").read_text())
    assert [s["template_values"]["factor"] for s in index["specializations"]] == [2, 3]
    first, second = (s["name"] for s in index["specializations"])
    assert sorted(p.name for p in (out / "glsl").iterdir()) == sorted(
        f"{n}.{ext}" for n in (first, second) for ext in ("comp", "json", "glsl.h", "spv"))
    assert (out / "cuda" / f"{second}.cuda.h").is_file() and (out / "msl" / f"{first}.metal").is_file()
    r = subprocess.run([build / "app"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "1\n", r.stdout + r.stderr

    # A module the program imports changes what it launches: the build re-runs it.
    stamp = (out / "specializations.json").stat().st_mtime_ns
    (src / "helper.py").write_text(PROGRAM_HELPER.format(factors="(2, 5, 4)"))
    os.utime(src / "helper.py", ns=(stamp + 10**9, stamp + 10**9))
    r = subprocess.run(["cmake", "--build", build], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    index = json.loads((out / "specializations.json").read_text())
    assert [s["template_values"]["factor"] for s in index["specializations"]] == [2, 5]
    assert index["specializations"][0]["name"] == first  # the same specialization keeps its name
    third = index["specializations"][1]["name"]
    assert third != second and (out / "glsl" / f"{third}.spv").is_file()
    r = subprocess.run(["cmake", "--build", build], capture_output=True, text=True)  # nothing left to do
    assert r.returncode == 0 and "transpiler: run" not in r.stdout, r.stdout

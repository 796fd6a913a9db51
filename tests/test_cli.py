"""The command line: emit, check, inspect, and its exit codes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import transpiler as qd
from transpiler.cli import UsageError, build_parser, parse_targets
from transpiler.targets import names, register, unregister
from transpiler.targets.target import Target

ROOT = Path(__file__).resolve().parent.parent
BAD = Path(__file__).resolve().parent / "bad_kernels.py"


def cli(*args, env=None, cwd=ROOT):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env)


def test_emit_to_stdout():
    r = cli("emit", "examples/saxpy.py", "--target", "cuda")
    assert r.returncode == 0, r.stderr
    assert 'extern "C" __global__ void __launch_bounds__(128) saxpy(' in r.stdout
    assert "y[i] = a * x[i] + y[i];  // saxpy.py:" in r.stdout
    manifest = json.loads(r.stdout[r.stdout.index("\n{\n  \"kernel\"") + 1:])
    assert manifest["entry_points"][0]["name"] == "saxpy"


def test_emit_to_directory(tmp_path):
    r = cli("emit", "examples/saxpy.py", "--target", "cuda", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "saxpy.cu").read_text().startswith("// CUDA C++")
    assert json.loads((tmp_path / "saxpy.json").read_text())["target"] == "cuda"


def test_emit_all_targets_uses_one_folder_per_target(tmp_path):
    r = cli("emit", "examples/saxpy.py", "--target", "all", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cuda", "glsl", "hip", "msl"]
    for target in ("cuda", "glsl", "hip", "msl"):
        assert (tmp_path / target / "saxpy.json").exists()


def test_bad_kernel_exits_1_with_located_error():
    r = cli("emit", BAD, "--kernel", "list_comp")
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    first = r.stderr.splitlines()[0]
    assert first.startswith("tests/bad_kernels.py:") and ": error: a list comprehension in a kernel iterates over values known" in first
    assert r.stderr.splitlines()[2].strip() == "^"


def test_import_failure_is_located(tmp_path):
    bad = tmp_path / "broken.py"
    bad.write_text("import transpiler as qd\n\nx = 1 / 0\n")
    r = cli("emit", bad)
    assert r.returncode == 1
    assert "broken.py:3:1: error: importing broken.py failed: ZeroDivisionError" in r.stderr
    assert "Traceback" not in r.stderr


def test_syntax_error_is_located(tmp_path):
    bad = tmp_path / "syntax.py"
    bad.write_text("import transpiler as qd\n\ndef f(:\n    pass\n")
    r = cli("emit", bad)
    assert r.returncode == 1 and "syntax.py:3:" in r.stderr and "invalid Python syntax" in r.stderr


@pytest.mark.parametrize("args", [
    ["emit"],
    ["emit", "examples/saxpy.py", "--target", "fortran"],
    ["emit", "examples/saxpy.py", "--kernel", "nope"],
    ["emit", "no_such_file.py"],
    ["frobnicate"],
])
def test_usage_errors_exit_2(args):
    r = cli(*args)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr


def test_the_help_and_target_choices_come_from_the_registry(capsys):
    """No list of targets is written in the CLI: a registered one is in its help and accepted."""
    class Other(Target):
        name = "other"

    def emit_help() -> str:
        with pytest.raises(SystemExit):
            build_parser().parse_args(["emit", "--help"])
        return " ".join(capsys.readouterr().out.split())

    assert f"--target TARGET {', '.join(names())}, a comma-separated list, or all" in emit_help()
    with pytest.raises(UsageError, match="unknown target other"):
        parse_targets("other")
    register(Other())
    try:
        assert f"{', '.join(names())}, a comma-separated list" in emit_help() and "other, a comma" in emit_help()
        assert parse_targets("cuda,other") == ["cuda", "other"] and "other" not in parse_targets("all")
    finally:
        unregister("other")


@pytest.mark.toolchain
def test_check_passes_nvrtc():
    r = cli("check", "examples/saxpy.py", "--target", "cuda", "--resources")
    assert r.returncode == 0, r.stderr
    assert "saxpy [cuda] saxpy.cu: NVRTC" in r.stdout and ": ok (" in r.stdout
    assert "registers" in r.stdout


def test_check_missing_toolchain_exits_3(tmp_path):
    # A Python that cannot see the NVRTC wheel: run from a copy of the tree with no site-packages.
    env = dict(os.environ, PYTHONNOUSERSITE="1")
    code = ("import sys; sys.path = [p for p in sys.path if 'site-packages' not in p] + "
            "[p for p in sys.path if 'site-packages' in p and 'nvidia' not in p]; "
            "import transpiler.toolchains.nvrtc as n; n._candidates = lambda: []; "
            "from transpiler.cli import main; sys.exit(main(['check', 'examples/saxpy.py']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 3, r.stderr
    assert "pip install nvidia-cuda-nvrtc" in r.stderr


HIDE_NVRTC = ("import sys; sys.path = [p for p in sys.path if 'site-packages' not in p] + "
              "[p for p in sys.path if 'site-packages' in p and 'nvidia' not in p]; "
              "import transpiler.toolchains.nvrtc as n; n._candidates = lambda: []; "
              "from transpiler.cli import main; sys.exit(main(sys.argv[1:]))")


@pytest.mark.toolchain
def test_check_all_checks_every_target_before_exiting_3_for_a_missing_one():
    env = dict(os.environ, PYTHONNOUSERSITE="1")
    run = lambda *a: subprocess.run([sys.executable, "-c", HIDE_NVRTC, "check", "examples/saxpy.py", "--target", "all", *a],  # noqa: E731
                                    capture_output=True, text=True, cwd=ROOT, env=env)
    r = run()
    assert r.returncode == 3, r.stderr
    lines = r.stdout.splitlines()
    assert lines[-4:] == ["cuda: missing; install it with: pip install nvidia-cuda-nvrtc",
                          "hip: ok", "glsl: ok", "msl: ok"], r.stdout
    assert "saxpy [glsl] saxpy.comp: glslang" in r.stdout  # the others ran after the missing one
    r = run("--json")
    assert r.returncode == 3, r.stderr
    out = json.loads(r.stdout)
    assert out["targets"]["cuda"] == {"verdict": "missing", "files": 0, "tool": "NVRTC",
                                      "install": "pip install nvidia-cuda-nvrtc"}
    assert {t: v["verdict"] for t, v in out["targets"].items()} == {"cuda": "missing", "hip": "ok", "glsl": "ok",
                                                                     "msl": "ok"}
    assert {c["target"] for c in out["checks"] if c["verdict"] == "ok"} == {"hip", "glsl", "msl"}


def test_version_and_python_m():
    r = subprocess.run([sys.executable, "-m", "transpiler", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == f"transpiler {qd.__version__}", r.stderr
    r = subprocess.run([sys.executable, "-m", "transpiler", "emit", "examples/saxpy.py", "--target", "glsl"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and "void main()" in r.stdout, r.stderr


def test_inspect_shows_ir_and_python_lines():
    r = cli("inspect", "examples/saxpy.py", "--kernel", "saxpy")
    assert r.returncode == 0, r.stderr
    assert "==== typed IR of saxpy" in r.stdout
    assert "y[i.0] = add.f32(mul.f32(a, x[i.0]), y[i.0])" in r.stdout
    assert "# saxpy.py:8: y[i] = a * x[i] + y[i]" in r.stdout


def test_template_values_from_the_command_line():
    r = cli("emit", "tests/kernels/static.py", "--template", "radius=3")
    assert r.returncode == 0, r.stderr
    assert "x[i - 3] + x[i + 3]" in r.stdout
    r = cli("emit", "tests/kernels/static.py")
    assert r.returncode == 1 and "template parameter `radius` needs a value" in r.stderr


def test_emit_path_imports_nothing_heavy():
    code = ("import sys, io; from transpiler.cli import main; sys.stdout = io.StringIO(); "
            "main(['emit', 'examples/saxpy.py', '--target', 'all']); sys.stdout = sys.__stdout__; "
            "heavy = [m for m in ('numpy', 'cupy', 'vulkan', 'cuda', 'transpiler.toolchains.nvrtc', "
            "'transpiler.runtime') if m in sys.modules]; print(heavy)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_line_directives_are_opt_in():
    plain = cli("emit", "examples/saxpy.py", "--target", "cuda").stdout
    assert "#line" not in plain
    r = cli("emit", "examples/saxpy.py", "--target", "cuda", "--line-directives")
    assert r.returncode == 0 and '#line 8 "saxpy.py"' in r.stdout


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("example", sorted(p.name for p in (ROOT / "examples").glob("*.py")))
def test_every_example_passes_every_toolchain(example):
    r = cli("check", f"examples/{example}", "--target", "all")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "REJECTED" not in r.stdout


@pytest.mark.toolchain
def test_rejected_source_is_mapped_to_the_python_line(tmp_path):
    from transpiler.toolchains import check_sources

    sys.path.insert(0, str(ROOT / "examples"))
    import transpiler as qd
    from conftest import load_module

    saxpy = load_module(ROOT / "examples" / "saxpy.py").saxpy
    tr = qd.translate(saxpy, "cuda")
    name, text = next(iter(tr.sources.items()))
    broken = text.replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + undefined_symbol;")
    (v,) = check_sources("cuda", {name: broken}, tr.manifest)
    assert not v.ok
    assert "saxpy.py:8: saxpy.cu(" in v.message and "undefined_symbol" in v.message


PROGRAM = '''import numpy as np
import transpiler as qd

qd.init(arch=qd.vulkan)
print("the program's own output")


@qd.kernel
def saxpy(a: float, x: qd.types.ndarray(), y: qd.types.ndarray()) -> None:
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


x = np.ones(4, np.float32)
y = np.ones(4, np.float32)
saxpy(2.0, x, y)
print(y)
'''


def test_emit_does_not_run_the_users_program(tmp_path):
    src = tmp_path / "program.py"
    src.write_text(PROGRAM)
    r = cli("emit", src, "--target", "cuda")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("// CUDA C++") and "the program's own output" not in r.stdout
    assert "the program's own output" in r.stderr and "[1. 1. 1. 1.]" in r.stderr  # the call did not run
    assert r.stderr.count("do not run (first: saxpy)") == 1


def test_untyped_ndarrays_default_to_f32_and_say_so(tmp_path):
    src = tmp_path / "program.py"
    src.write_text(PROGRAM)
    r = cli("emit", src, "--target", "glsl")
    assert r.returncode == 0, r.stderr
    assert "program.py:9: note: ndarray `x` of saxpy is typed by the call; translated as f32, 1-d" in r.stderr
    manifest = json.loads(r.stdout[r.stdout.index("\n{\n  \"kernel\"") + 1:])
    assert manifest["assumed"] == {"x": "f32:1", "y": "f32:1"}
    r = cli("emit", src, "--target", "cuda", "--template", "x=f64:1", "--template", "y=f64")
    assert r.returncode == 0, r.stderr
    assert "double* x" in r.stdout and "double* y" in r.stdout and "note: ndarray `x`" not in r.stderr
    r = cli("emit", src, "--template", "x=f64:one")
    assert r.returncode == 2 and "neither a Python literal, a name the file defines nor an array type" in r.stderr


TEMPLATE_ARRAYS = '''
import argparse
import transpiler as qd

parser = argparse.ArgumentParser()
parser.add_argument("--n", type=int, default=8)
args = parser.parse_args()  # the program's own arguments: the command line's are not its


@qd.func
def bump(arr: qd.Template, idx: qd.i32) -> None:
    arr[idx] += 1


@qd.kernel
def through_func(a: qd.Template, unused: qd.Template) -> None:
    for i in range(a.shape[0]):
        bump(a, i)


@qd.kernel
def grouped_fill(img: qd.Template, scale: qd.template()) -> None:
    for I in qd.grouped(qd.ndrange(4, 8, 2)):
        img[I] = (I[0] + I[1] + I[2]) * scale


@qd.kernel
def zero_d(c: qd.Template) -> None:
    c[()] += 1


@qd.func
def sample(qf, u, v):  # Taichi's stable-fluid spelling: the index vector built in the helper
    I = qd.Vector([int(u), int(v)])
    I = qd.max(0, qd.min(7, I))
    return qf[I]


@qd.kernel
def resample(qf: qd.template(), out: qd.template()) -> None:
    for i in range(8):
        out[i] = sample(qf, i + 0.5, i * 0.5)
'''


def test_template_parameters_used_as_arrays_default_to_f32_and_say_so(tmp_path):
    src = tmp_path / "templated.py"
    src.write_text(TEMPLATE_ARRAYS)
    r = cli("emit", src, "--target", "cuda", "--kernel", "through_func", "--kernel", "zero_d")
    assert r.returncode == 0, r.stderr
    assert "note: ndarray `a` of through_func is typed by the call; translated as f32, 1-d" in r.stderr
    assert "note: ndarray `c` of zero_d is typed by the call; translated as f32, 0-d" in r.stderr
    assert "unused" not in r.stderr  # never used: it needs no value
    r = cli("emit", src, "--target", "cuda", "--kernel", "grouped_fill", "--template", "scale=2")
    assert r.returncode == 0, r.stderr
    assert "ndarray `img` of grouped_fill is typed by the call; translated as f32, 3-d" in r.stderr
    r = cli("emit", src, "--target", "cuda", "--kernel", "grouped_fill")
    assert r.returncode == 1 and "template parameter `scale` needs a value" in r.stderr
    r = cli("emit", src, "--target", "cuda", "--kernel", "resample")
    assert r.returncode == 0, r.stderr
    assert "ndarray `qf` of resample is typed by the call; translated as f32, 2-d" in r.stderr  # (was 1-d: an error)


DATA_ORIENTED = '''
import transpiler as qd


@qd.data_oriented
class Simulation:
    def __init__(self, n):
        self.x = qd.field(qd.f32, shape=n)

    @qd.kernel
    def step(self):
        for i in self.x:
            self.x[i] += 1.0


sim = Simulation(100)
sim.step()
'''


def test_data_oriented_instances_are_translated_by_name(tmp_path):
    src = tmp_path / "sim.py"
    src.write_text(DATA_ORIENTED)
    r = cli("emit", src, "--target", "cuda", "--kernel", "sim.step")
    assert r.returncode == 0, r.stderr
    assert "step(float* x)" in r.stdout and "x[i] = x[i] + 1.0f;" in r.stdout and "i < 100" in r.stdout
    src.write_text(DATA_ORIENTED.replace("sim = Simulation(100)\nsim.step()\n", "Simulation(8).step()\n"))
    r = cli("emit", src, "--target", "cuda")
    assert r.returncode == 2 and "translated through an instance the module makes" in r.stderr


def test_emit_writes_every_kernel_that_translates_and_reports_the_others(tmp_path):
    src = tmp_path / "solver.py"
    src.write_text(
        "import transpiler as qd\n"
        "\n"
        "vel = qd.Vector.field(2, qd.f32, shape=(8, 8))\n"
        "dye = qd.field(qd.f32, shape=(8, 8))\n"
        "\n"
        "@qd.kernel\n"
        "def advect(qf: qd.template(), dt: qd.f32):\n"
        "    for I in qd.grouped(qf):\n"
        "        qf[I] = qf[I] * (1.0 - dt)\n"
        "\n"
        "@qd.kernel\n"
        "def broken():\n"
        "    for i, j in dye:\n"
        "        dye[i, j] = {k for k in range(3)}[0]\n")
    r = cli("emit", src, "--target", "all", "--template", "qf=vel", "-o", tmp_path / "out")
    assert r.returncode == 1
    errors = [line for line in r.stderr.splitlines() if ": error: " in line]  # once, not once per target
    assert errors == [f"{src}:14:21: error: set comprehensions are not supported in kernels"], r.stderr
    for target in ("cuda", "glsl", "hip", "msl"):
        manifest = json.loads((tmp_path / "out" / target / "advect.json").read_text())
        assert [f["shape"] for f in manifest["fields"]] == [[8, 8]]  # the field named on the command line
        assert not (tmp_path / "out" / target / "broken.json").exists()
    r = cli("emit", src, "--kernel", "advect", "--template", "qf=dye", "--target", "cuda")
    assert r.returncode == 0 and "note: ndarray" not in r.stderr, r.stderr
    r = cli("emit", src, "--kernel", "advect", "--template", "qf=nothing_here")
    assert r.returncode == 2 and "a name the file defines" in r.stderr


def test_emit_prints_a_lossy_conversion_once_and_goes_on(tmp_path):
    src = tmp_path / "lossy.py"
    src.write_text("import transpiler as qd\n\n\n@qd.kernel\n"
                   "def lossy(a: qd.types.ndarray(dtype=qd.i32, ndim=1), b: qd.types.ndarray(dtype=qd.f32, ndim=1)):\n"
                   "    for i in range(a.shape[0]):\n"
                   "        a[i] = b[i] * 0.5\n")
    r = cli("emit", src, "--target", "all", "-o", tmp_path / "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("lossy.py:7:16: warning: implicit conversion from f32 to i32 truncates") == 1, r.stderr
    assert "a[i] = int32_t(b[i] * 0.5f);" in (tmp_path / "out" / "cuda" / "lossy.cu").read_text()


def test_static_print_goes_to_stderr_not_into_the_sources(tmp_path):
    src = tmp_path / "shows.py"
    src.write_text("import transpiler as qd\n\n\n@qd.kernel\n"
                   "def shows(a: qd.types.ndarray(dtype=qd.f32, ndim=1)):\n"
                   "    qd.static_print('block', 128)\n"
                   "    for i in range(a.shape[0]):\n"
                   "        a[i] = 1.0\n")
    r = cli("emit", src, "--target", "cuda", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "block 128" in r.stderr and "block 128" not in r.stdout and "extern \"C\"" in r.stdout

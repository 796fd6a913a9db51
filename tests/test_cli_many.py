"""The command line over several files (directories, -j N, the summary, the worst exit code),
-v/-q and logging, output paths checked up front and I/O failures in one line, and the
toolchains named explicitly (--toolchain, TRANSPILER_<NAME>, `transpiler toolchains`)."""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import transpiler as qd
from transpiler import log_config
from transpiler.cli import main
from transpiler.cli_batch import expand, worst

ROOT = Path(__file__).resolve().parent.parent
SAXPY, HISTOGRAM, STENCIL = "examples/saxpy.py", "examples/histogram.py", "examples/stencil2d.py"
BAD = """import transpiler as qd


@qd.kernel
def bad(x: qd.types.ndarray(qd.f32, ndim=1)):
    for i in x:
        x[i] = x[i] + "one"
"""
needs_glslang = pytest.mark.skipif(shutil.which("glslangValidator") is None or shutil.which("spirv-val") is None,
                                   reason="needs glslang-tools and spirv-tools")


def cli(*args, env=None, stdout=subprocess.PIPE):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)


def without_times(text: str) -> str:
    return re.sub(r"\(\d+\.\d+ s\)", "(T s)", text)


@pytest.fixture
def bad_file(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(BAD)
    return path


# ----------------------------------------------------------------------------- several files

def test_emit_several_files_prints_each_as_alone_in_order():
    one = [cli("emit", f, "--target", "cuda,glsl") for f in (HISTOGRAM, SAXPY)]
    both = cli("emit", HISTOGRAM, SAXPY, "--target", "cuda,glsl")
    assert both.returncode == 0, both.stderr
    assert both.stdout == one[0].stdout + one[1].stdout
    assert "files:" not in both.stdout  # emit keeps its output pure: no summary


def test_emit_several_files_writes_a_folder_per_file(tmp_path):
    r = cli("emit", SAXPY, HISTOGRAM, "--target", "all", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["histogram", "saxpy"]
    for stem in ("saxpy", "histogram"):
        assert sorted(p.name for p in (tmp_path / stem).iterdir()) == ["cuda", "glsl", "hip", "msl"]
        assert json.loads((tmp_path / stem / "cuda" / f"{stem}.json").read_text())["kernel"] == stem
    assert f"saxpy [cuda]: {tmp_path / 'saxpy' / 'cuda' / 'saxpy.cu'}" in r.stdout


def test_a_directory_is_its_python_files_sorted(tmp_path, bad_file):
    for name in ("b_saxpy.py", "a_hist.py"):
        shutil.copy(ROOT / (SAXPY if "saxpy" in name else HISTOGRAM), tmp_path / name)
    (tmp_path / "notes.txt").write_text("not python")
    files, many = expand([str(tmp_path)])
    assert [Path(f).name for f in files] == ["a_hist.py", "b_saxpy.py", "bad.py"] and many
    assert expand([SAXPY]) == ([SAXPY], False)
    r = cli("emit", tmp_path, "--target", "cuda")
    assert r.returncode == 1
    assert r.stdout.index("histogram(") < r.stdout.index("saxpy(")  # a_hist.py first
    assert "bad.py:7:16: error: strings are not supported in kernels" in r.stderr


def test_a_helper_module_in_a_directory_is_skipped_a_named_one_is_not(tmp_path):
    shutil.copy(ROOT / SAXPY, tmp_path / "saxpy.py")
    (tmp_path / "helpers.py").write_text("SCALE = 2.0\n")
    r = cli("emit", tmp_path, "--target", "cuda", "-v")
    assert r.returncode == 0, r.stderr
    assert f"transpiler: INFO: {tmp_path / 'helpers.py'} defines no @qd.kernel: skipped" in r.stderr
    named = cli("emit", tmp_path / "helpers.py", tmp_path / "saxpy.py", "--target", "cuda")
    assert named.returncode == 2 and "helpers.py defines no @qd.kernel" in named.stderr


def test_emit_one_bad_file_the_others_are_still_written(tmp_path, bad_file):
    out = tmp_path / "out"
    r = cli("emit", SAXPY, bad_file, HISTOGRAM, "-o", out)
    assert r.returncode == 1
    assert (out / "saxpy" / "saxpy.cu").exists() and (out / "histogram" / "histogram.cu").exists()
    assert not (out / "bad").exists()
    assert r.stderr.count("error: strings are not supported") == 1 and "Traceback" not in r.stderr


def test_the_exit_code_is_the_worst_files():
    assert worst([0, 0]) == 0
    assert worst([0, 3]) == 3
    assert worst([3, 1, 0]) == 1  # a wrong kernel outranks a missing toolchain, as in one file's check
    assert worst([1, 2, 3]) == 2
    assert worst([]) == 0


def test_emit_several_files_with_the_same_stem_is_a_usage_error(tmp_path):
    (tmp_path / "a").mkdir()
    shutil.copy(ROOT / SAXPY, tmp_path / "a" / "saxpy.py")
    r = cli("emit", SAXPY, tmp_path / "a" / "saxpy.py", "-o", tmp_path / "out")
    assert r.returncode == 2 and "would both write into" in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args, message", [
    (["emit", "--run", SAXPY, HISTOGRAM], "--run runs one program: give one file"),
    (["inspect", "--html", "x.html", SAXPY, HISTOGRAM], "inspect --html makes a page of one file"),
    (["check", "-j", "x", SAXPY], "is not a number of processes"),
])
def test_several_files_usage_errors(args, message, tmp_path):
    r = cli(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]  # (argparse's own errors come after its usage lines)
    assert last.startswith("transpiler") and message in last


def test_an_empty_directory_is_a_usage_error(tmp_path):
    r = cli("check", tmp_path)
    assert r.returncode == 2 and r.stderr.strip() == f"transpiler: error: no Python files in {tmp_path}"


@pytest.mark.toolchain
@needs_glslang
def test_check_several_files_one_bad_summary_and_exit_code(bad_file):
    r = cli("check", SAXPY, bad_file, STENCIL, "--target", "glsl")
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[0] == f"== {SAXPY}" and f"== {STENCIL}" in lines
    assert lines[-4:] == [f"{SAXPY}: ok", f"{bad_file}: failed", f"{STENCIL}: ok", "3 files: 2 ok, 1 failed"]
    assert "bad.py:7:16: error: strings are not supported in kernels" in r.stderr
    quiet = cli("check", SAXPY, bad_file, "--target", "glsl", "-q")
    assert quiet.stdout.splitlines()[-2:] == [f"{bad_file}: failed", "2 files: 1 ok, 1 failed"]


@pytest.mark.toolchain
@needs_glslang
def test_check_jobs_2_prints_what_jobs_1_prints(bad_file, tmp_path):
    # The first file is the slowest (three kernels, one of them large), so with two workers
    # the later files finish first: the output must wait for it.
    files = ["examples/lookback_scan.py", bad_file, SAXPY, HISTOGRAM, STENCIL]
    one = cli("check", *files, "--target", "glsl,msl", "-j", "1")
    two = cli("check", *files, "--target", "glsl,msl", "-j", "2")
    assert one.returncode == two.returncode == 1
    assert without_times(two.stdout) == without_times(one.stdout)
    assert two.stderr == one.stderr
    assert [ln for ln in one.stdout.splitlines() if ln.startswith("== ")] == [f"== {f}" for f in files if f != bad_file]


@pytest.mark.toolchain
@needs_glslang
def test_check_several_files_json_is_one_document(bad_file):
    r = cli("check", SAXPY, bad_file, "--target", "glsl", "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 1
    good, bad = doc["files"]
    assert good["file"] == SAXPY and good["exit_code"] == 0 and good["targets"]["glsl"]["verdict"] == "ok"
    assert bad["exit_code"] == 1 and "strings are not supported" in bad["error"]


# ----------------------------------------------------------------------------- progress and verbosity

@pytest.mark.toolchain
@needs_glslang
def test_check_shows_a_live_progress_line_on_a_terminal_only(bad_file):
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", SAXPY, bad_file, HISTOGRAM,
                               "--target", "glsl"], stdout=subprocess.PIPE, stderr=follower, cwd=ROOT, timeout=300)
        os.close(follower)
        follower = -1
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    assert proc.returncode == 1
    assert b"\r\x1b[K[1/3] " in seen and b"[2/3] 1 failed," in seen and b"files/s" in seen
    piped = cli("check", SAXPY, bad_file, HISTOGRAM, "--target", "glsl")
    assert "\r" not in piped.stderr and "files/s" not in piped.stderr


def test_verbose_logs_translations_and_files(bad_file):
    r = cli("emit", SAXPY, bad_file, "--target", "cuda", "-v")
    assert re.search(r"^transpiler: INFO: translated saxpy for cuda in \d+\.\d ms$", r.stderr, re.M)
    assert re.search(rf"^transpiler: INFO: {re.escape(str(bad_file))}: failed \(2/2, ", r.stderr, re.M)
    assert "INFO" not in cli("emit", SAXPY, "--target", "cuda").stderr
    assert cli("targets", "-q").returncode == 0 and cli("cmake-dir", "-v").returncode == 0


def test_quiet_emit_lists_no_files(tmp_path):
    r = cli("emit", SAXPY, HISTOGRAM, "-o", tmp_path, "-q")
    assert r.returncode == 0 and r.stdout == "" and (tmp_path / "saxpy" / "saxpy.cu").exists()


def test_log_level_names_follow_quadrants():
    assert (qd.TRACE, qd.DEBUG, qd.INFO, qd.WARN, qd.ERROR, qd.CRITICAL) == \
        ("trace", "debug", "info", "warn", "error", "critical")
    assert log_config.level_of(qd.WARN) == logging.WARNING and log_config.level_of("INFO") == logging.INFO
    assert log_config.level_of(qd.TRACE) == logging.DEBUG
    with pytest.raises(ValueError, match="log_level 'loud' is not one of trace, debug, info, warn"):
        log_config.level_of("loud")


def test_set_logging_level_shows_translations(capsys):
    before = logging.getLogger("transpiler").level

    @qd.kernel
    def scale_for_log(x: qd.types.ndarray(qd.f32, ndim=1), s: qd.f32):
        for i in x:
            x[i] = x[i] * s

    try:
        qd.set_logging_level(qd.INFO)
        assert qd.is_logging_effective(qd.WARN) and not qd.is_logging_effective(qd.DEBUG)
        qd.translate(scale_for_log, "glsl")
        assert re.search(r"transpiler: INFO: translated scale_for_log for glsl in \d", capsys.readouterr().err)
        qd.set_logging_level("error")
        qd.translate(scale_for_log, "msl")
        assert "translated" not in capsys.readouterr().err
    finally:
        logging.getLogger("transpiler").setLevel(before)


@pytest.mark.toolchain
def test_init_log_level_is_honoured(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text("import numpy as np\nimport transpiler as qd\n\nqd.init(arch=qd.cpu, log_level=qd.INFO)\n\n\n"
                       "@qd.kernel\ndef twice(x: qd.types.ndarray(qd.f32, ndim=1)):\n    for i in x:\n"
                       "        x[i] = 2 * x[i]\n\n\na = np.random.default_rng(1).random(64, dtype=np.float32)\n"
                       "b = a.copy()\ntwice(b)\nassert np.allclose(b, 2 * a)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^transpiler: INFO: translated twice for \w+ in \d", r.stderr, re.M)
    quiet = subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                           env={**env, "QD_LOG_LEVEL": "error"})
    assert "translated twice" in quiet.stderr  # the argument wins over $QD_LOG_LEVEL, as in Quadrants
    program.write_text(program.read_text().replace(", log_level=qd.INFO", ""))
    by_env = subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                            env={**env, "QD_LOG_LEVEL": "info"})
    assert "transpiler: INFO: translated twice" in by_env.stderr
    assert "translated" not in subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                                              env=env).stderr


# ----------------------------------------------------------------------------- output paths

@pytest.mark.parametrize("name", ["saxpy.cu", "kernels.glsl", "api.h", "manifest.JSON"])
def test_output_that_looks_like_a_file_is_a_usage_error_before_any_work(tmp_path, bad_file, name):
    r = cli("emit", bad_file, "-o", tmp_path / name)
    assert r.returncode == 2
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"transpiler: error: -o {tmp_path / name}: looks like a file name") and "hint: -o " in line
    assert not (tmp_path / name).exists()  # and the bad kernel was never read: no diagnostic above


def test_output_that_is_a_file_is_a_usage_error(tmp_path, bad_file):
    existing = tmp_path / "out"
    existing.write_text("keep me")
    r = cli("emit", bad_file, SAXPY, "-o", existing)
    assert r.returncode == 2
    assert r.stderr == (f"transpiler: error: -o {existing}: is a file, and -o names the directory the sources and "
                        f"manifests go into; hint: -o {tmp_path / 'out_out'}/ (or no -o: to stdout)\n")
    assert existing.read_text() == "keep me"


def test_an_existing_directory_with_a_suffix_is_fine(tmp_path):
    out = tmp_path / "build.cu"
    out.mkdir()
    assert cli("emit", SAXPY, "-o", out).returncode == 0 and (out / "saxpy.cu").exists()


def test_a_write_that_fails_is_one_line_with_exit_code_1(tmp_path):
    (tmp_path / "plain").write_text("")
    r = cli("emit", SAXPY, "-o", tmp_path / "plain" / "out")
    assert r.returncode == 1
    assert r.stderr == f"transpiler: error: I/O error: {tmp_path / 'plain' / 'out'}: Not a directory\n"


def test_a_read_only_directory_is_one_line_with_exit_code_1(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("this user writes into read-only folders (root)")
        r = cli("emit", SAXPY, HISTOGRAM, "-o", ro / "out")
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert f"transpiler: error: I/O error: {ro / 'out'}: Permission denied" in r.stderr.splitlines()
    finally:
        ro.chmod(stat.S_IRWXU)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_on_stdout_is_one_line_with_exit_code_1():
    with open("/dev/full", "w") as full:
        r = cli("emit", SAXPY, "--target", "all", stdout=full)
    assert r.returncode == 1
    assert r.stderr == "transpiler: error: I/O error writing the output: No space left on device\n"


# ----------------------------------------------------------------------------- toolchains named

@pytest.fixture
def glslang_wrapper(tmp_path):
    """A copy of glslangValidator that also notes each run, to see which one the checks used."""
    real = shutil.which("glslangValidator")
    if real is None:
        pytest.skip("needs glslang-tools")
    wrapper = tmp_path / "my-glslang"
    wrapper.write_text(f'#!/bin/sh\necho run >> "{tmp_path / "runs"}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@pytest.mark.toolchain
def test_an_environment_variable_names_a_toolchain(glslang_wrapper):
    env = {**os.environ, "TRANSPILER_GLSLANG": str(glslang_wrapper)}
    r = cli("toolchains", env=env)
    assert r.returncode == 0, r.stderr
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("glslang ")]
    assert line.split() == ["glslang", "12.0.0" if "12.0.0" in line else line.split()[1], str(glslang_wrapper),
                            "($TRANSPILER_GLSLANG)"]
    assert "unknown" not in line and "?" not in line  # the wrapper reports the real tool's version
    check = cli("check", SAXPY, "--target", "glsl", env=env)
    assert check.returncode == 0 and (glslang_wrapper.parent / "runs").read_text().count("run") >= 2


@pytest.mark.toolchain
def test_the_option_names_a_toolchain_over_the_environment(glslang_wrapper, tmp_path):
    env = {**os.environ, "TRANSPILER_GLSLANG": "/no/such/glslang"}
    missing = cli("check", SAXPY, "--target", "glsl", env=env)
    assert missing.returncode == 3 and "$TRANSPILER_GLSLANG=/no/such/glslang: no such file" in missing.stderr
    r = cli("toolchains", "--toolchain", f"glslang={glslang_wrapper}", "--json", env=env)
    (row,) = [t for t in json.loads(r.stdout)["toolchains"] if t["name"] == "glslang"]
    assert row["path"] == str(glslang_wrapper) and row["how"] == "--toolchain" and row["version"] not in ("?", "")
    check = cli("check", SAXPY, "--target", "glsl", "--toolchain", f"glslang={glslang_wrapper}", "-v", env=env)
    assert check.returncode == 0, check.stderr
    assert f"transpiler: INFO: toolchain glslang: {glslang_wrapper} (--toolchain)" in check.stderr
    assert (tmp_path / "runs").exists()


@pytest.mark.parametrize("option, message", [
    ("ptxas2=/bin/true", "unknown toolchain 'ptxas2'"),
    ("glslang=/no/such/file", "--toolchain glslang=/no/such/file: no such file"),
    ("glslang", "--toolchain expects NAME=PATH"),
])
def test_a_bad_toolchain_option_is_a_usage_error_with_the_names(option, message):
    r = cli("check", SAXPY, "--toolchain", option)
    assert r.returncode == 2
    (line,) = r.stderr.splitlines()
    assert line.startswith("transpiler: error: ") and message in line
    assert line.endswith("the names are: glslang, spirv-val, nvrtc, nvlink, hipcc, hiprtc, llvm-readelf, clang")


def test_toolchains_lists_every_tool_in_process(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH: those tools say how to install them
    monkeypatch.setenv("TRANSPILER_HIPCC", str(tmp_path / "nope"))
    assert main(["toolchains", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["toolchains"]}
    assert list(rows) == ["glslang", "spirv-val", "nvrtc", "nvlink", "hipcc", "hiprtc", "llvm-readelf", "clang"]
    assert not rows["glslang"]["found"] and "glslang-tools" in rows["glslang"]["install"]
    assert rows["hipcc"]["missing"] == f"hipcc ($TRANSPILER_HIPCC={tmp_path / 'nope'}: no such file)"
    assert rows["spirv-val"]["env"] == "TRANSPILER_SPIRV_VAL" and rows["llvm-readelf"]["env"] == "TRANSPILER_LLVM_READELF"

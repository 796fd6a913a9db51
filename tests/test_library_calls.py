"""Errors in functions a kernel calls are located in the user's code, with a note per call
that led there; a call into the standard library, NumPy or an installed package is an error at
the user's call, naming the kernel language's spelling where there is one (and every spelling
named translates); through the Python API the error arrives without the translator's frames."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import transpiler as qd
from transpiler.frontend.library_calls import BUILTIN_EQUIVALENTS, EQUIVALENTS

from conftest import load_module

ROOT = Path(__file__).resolve().parent.parent

HELPERS = '''\
import json
import math
import numpy as np
import transpiler as qd


def inner(v):
    return json.dumps(v)


def helper(v):
    return inner(v) + 1.0


@qd.kernel
def chain(x: qd.types.ndarray(qd.f32, ndim=1)):
    for i in x:
        x[i] = helper(x[i])


@qd.kernel
def numpy_sin(x: qd.types.ndarray(qd.f32, ndim=1)):
    for i in x:
        x[i] = np.sin(x[i])


@qd.kernel
def math_exp(x: qd.types.ndarray(qd.f32, ndim=1)):
    for i in x:
        x[i] = math.exp(x[i])


@qd.kernel
def builtin_sorted(x: qd.types.ndarray(qd.f32, ndim=1)):
    for i in x:
        x[i] = sorted(x[i])


@qd.kernel
def builtin_str(x: qd.types.ndarray(qd.f32, ndim=1)):
    for i in x:
        x[i] = str(x[i])


@qd.func
def checked(v):
    return v[0]


@qd.real_func
def real(v: qd.f32) -> qd.f32:
    return checked(v)


@qd.kernel
def in_real_func(x: qd.types.ndarray(qd.f32, ndim=1)):
    for i in x:
        x[i] = real(x[i])


class Scale:
    def __init__(self, k):
        self.k = k

    @qd.func
    def __call__(self, v):
        return v * self.k


scale = Scale(3.0)


@qd.kernel
def callable_object(x: qd.types.ndarray(qd.f32, ndim=1)):
    for i in x:
        x[i] = scale(x[i])
'''


@pytest.fixture(scope="module")
def helpers(tmp_path_factory):
    path = tmp_path_factory.mktemp("helpers") / "helper_kernels.py"
    path.write_text(HELPERS)
    return load_module(path), path


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def error_of(kernel, target: str = "cuda") -> qd.TranspileError:
    with pytest.raises(qd.TranspileError) as info:
        qd.translate(kernel, target)
    return info.value


def test_helper_chain_into_the_standard_library(helpers):
    module, path = helpers
    err = error_of(module.chain)
    # located at the user's call into the library, not in json/__init__.py
    assert Path(err.loc.file) == path and err.loc.line == line_of(path, "return json.dumps(v)")
    assert err.message == "`json.dumps` is a Python library function; it cannot run in a kernel"
    assert err.hint is None  # (there is nothing to decorate)
    # one note per call, innermost first, each at the user's call
    assert [(at.line, text) for at, text in err.notes] == [
        (line_of(path, "return inner(v) + 1.0"), "in `inner`, called from here"),
        (line_of(path, "x[i] = helper(x[i])"), "in `helper`, called from here")]
    text = str(err)
    lines = text.splitlines()
    assert lines[0].endswith(f"helper_kernels.py:{err.loc.line}:{err.loc.col + 1}: error: {err.message}")
    assert lines[1].strip() == "return json.dumps(v)" and lines[2].index("^") == lines[1].index("json")
    assert lines[3].endswith(f":{err.notes[0][0].line}:12: note: in `inner`, called from here")
    assert lines[4].strip() == "return inner(v) + 1.0" and lines[5].index("^") == lines[4].index("inner")
    assert lines[6].endswith(": note: in `helper`, called from here") and lines[7].strip() == "x[i] = helper(x[i])"
    assert "decorate" not in text and "json/__init__.py" not in text


def test_numpy_function_names_the_kernel_spelling(helpers):
    module, path = helpers
    err = error_of(module.numpy_sin)
    assert err.loc.line == line_of(path, "x[i] = np.sin(x[i])")
    assert err.message == "`np.sin` is a Python library function; it cannot run in a kernel"
    assert err.hint == "use qd.sin in a kernel" and not err.notes


def test_math_function_on_a_run_time_value_names_the_kernel_spelling(helpers):
    module, path = helpers
    err = error_of(module.math_exp)
    assert err.loc.line == line_of(path, "x[i] = math.exp(x[i])")
    assert err.message == "`math.exp` needs arguments known at translation time"
    assert err.hint == "use qd.exp for run-time values"


@pytest.mark.parametrize("name", ["sorted", "str"])
def test_builtin_gets_no_hint_that_cannot_be_followed(helpers, name):
    module, path = helpers
    err = error_of(getattr(module, f"builtin_{name}"))
    assert err.loc.line == line_of(path, f"x[i] = {name}(x[i])")
    assert err.message == f"`{name}` is a Python built-in; it cannot run in a kernel"
    assert err.hint is None and "decorate" not in str(err)


def test_error_in_a_real_func_notes_its_calls(helpers):
    module, path = helpers
    err = error_of(module.in_real_func)
    assert err.loc.line == line_of(path, "return v[0]")
    assert [(at.line, text) for at, text in err.notes] == [
        (line_of(path, "return checked(v)"), "in `checked`, called from here"),
        (line_of(path, "x[i] = real(x[i])"), "in `real`, called from here")]


def test_object_whose_call_is_a_func_is_called(helpers):
    """The hint for a callable object (`decorate `X.__call__` with @qd.func`) works."""
    module, _ = helpers
    tr = qd.translate(module.callable_object, "cuda")
    assert "3.0f" in next(iter(tr.sources.values()))


def test_installed_package_function_is_a_library_call(tmp_path):
    """A plain function of a package in a site-packages folder is not the user's to inline."""
    site = tmp_path / "venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    (site / "somepkg_d48.py").write_text("def twice(v):\n    return v * 2\n")
    kernel_file = tmp_path / "uses_pkg.py"
    kernel_file.write_text(textwrap.dedent('''\
        import somepkg_d48
        import transpiler as qd


        @qd.kernel
        def k(x: qd.types.ndarray(qd.f32, ndim=1)):
            for i in x:
                x[i] = somepkg_d48.twice(x[i])
        '''))
    sys.path.insert(0, str(site))
    try:
        module = load_module(kernel_file)
    finally:
        sys.path.remove(str(site))
    err = error_of(module.k)
    assert err.loc.line == 8 and Path(err.loc.file) == kernel_file
    assert err.message == "`somepkg_d48.twice` is a Python library function; it cannot run in a kernel"


def test_error_with_notes_pickles_whole(helpers):
    """A worker process's error (`-j`) reads the same in the parent."""
    module, _ = helpers
    err = error_of(module.chain)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and str(back) == str(err) and back.notes == err.notes


# Each hint's spelling, written as a kernel uses it (EXPR of x[i]: an f32).
_USE = {"qd.atan2": "qd.atan2(x[i], 2.0)", "qd.pow": "qd.pow(x[i], 2.0)", "qd.min": "qd.min(x[i], 2.0)",
        "qd.max": "qd.max(x[i], 2.0)", "qd.select": "qd.select(x[i] > 0.0, x[i], 2.0)",
        "qd.math.clamp": "qd.math.clamp(x[i], 0.0, 1.0)",
        "qd.math.dot": "qd.math.dot(qd.Vector([x[i], 1.0, 2.0]), qd.Vector([x[i], 1.0, 2.0]))",
        "qd.math.cross": "qd.math.cross(qd.Vector([x[i], 1.0, 2.0]), qd.Vector([1.0, x[i], 2.0]))[0]",
        "qd.random": "qd.random()"}
SPELLINGS = sorted({s for s in [*EQUIVALENTS.values(), *BUILTIN_EQUIVALENTS.values()] if s.startswith("qd.")})


@pytest.mark.parametrize("target", ["cuda", "glsl"])
def test_every_hinted_spelling_translates(tmp_path, target):
    source = ["import transpiler as qd", ""]
    for n, spelling in enumerate(SPELLINGS):
        use = _USE.get(spelling, f"{spelling}(x[i])")
        source += ["", "@qd.kernel", f"def k{n}(x: qd.types.ndarray(qd.f32, ndim=1)):", "    for i in x:",
                   f"        x[i] = qd.cast({use}, qd.f32)", ""]
    path = tmp_path / f"spellings_{target}.py"
    path.write_text("\n".join(source))
    module = load_module(path)
    for n, spelling in enumerate(SPELLINGS):
        assert qd.translate(getattr(module, f"k{n}"), target).sources, spelling


API_SCRIPT = '''\
import numpy as np
import transpiler as qd

qd.init(arch=qd.cpu)


def helper(v):
    return np.sin(v)


@qd.kernel
def k(x: qd.types.ndarray(qd.f32, ndim=1)):
    for i in x:
        x[i] = helper(x[i])


k(np.ones(4, np.float32))
'''


def run_script(tmp_path: Path, debug: bool) -> str:
    script = tmp_path / "api_user.py"
    script.write_text(API_SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("QD_DEBUG_TRACEBACK", None)
    if debug:
        env["QD_DEBUG_TRACEBACK"] = "1"
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=120)
    assert r.returncode == 1
    return r.stderr


@pytest.mark.slow
def test_api_error_has_the_users_frame_on_top(tmp_path):
    stderr = run_script(tmp_path, debug=False)
    frames = [line.strip() for line in stderr.splitlines() if line.strip().startswith('File "')]
    assert frames[0].startswith(f'File "{tmp_path / "api_user.py"}", line 17, in <module>')
    # the kernel call's own frame is the only one of the package; nothing of the translator
    package = [f for f in frames if str(ROOT / "transpiler") in f]
    assert len(frames) == 2 and package == [f for f in frames if "transpiler/lang/kernel.py" in f]
    assert "frontend" not in stderr and "pipeline.py" not in stderr and "During handling" not in stderr
    assert "transpiler.errors.TranspileError: api_user.py:8:12: error: `np.sin` is a Python library function" \
        in stderr
    assert "hint: use qd.sin in a kernel" in stderr and "api_user.py:14:16: note: in `helper`" in stderr


@pytest.mark.slow
def test_api_error_keeps_the_translators_frames_when_asked(tmp_path):
    stderr = run_script(tmp_path, debug=True)
    frames = [line for line in stderr.splitlines() if line.strip().startswith('File "')]
    assert len(frames) > 10
    assert any("transpiler/frontend/calls.py" in f for f in frames)
    assert any("transpiler/pipeline.py" in f for f in frames)

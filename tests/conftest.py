"""Shared test fixtures: the kernel corpus, executors, the snapshot-update flag, and the
markers of the fast loop.

Markers (pyproject.toml): ``toolchain`` - the test runs an external compiler (NVRTC, hipcc,
glslang, clang, g++ for the CPU emulator, cmake) or Vulkan; ``slow`` - it takes seconds.
``pytest -m "not toolchain and not slow"`` is the loop to run after every edit; the whole
suite (what CI runs, through ``make test``) is ``pytest -n auto --dist worksteal``. Tests that take an executor, a Vulkan device or an
emulator module are marked here; the others carry the marker themselves."""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
KERNELS = Path(__file__).resolve().parent / "kernels"


# ----------------------------------------------------------------------------- speed
# Bytecode for this process, the pytest-xdist workers (`make test` runs `pytest -n auto`) and
# every interpreter a test starts (the CLI's tests start about 60): under PYTHONDONTWRITEBYTECODE
# (set on some machines to keep source trees clean) each one compiled the package anew, 0.2 s of
# CPU apiece. Kept out of the tree, in one folder of the temp directory that they share: Python
# writes a .pyc atomically and checks it against its source's time and size before use.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) or sys.dont_write_bytecode:
    os.environ.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / f"transpiler-pyc-{os.getuid()}"))
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
    sys.dont_write_bytecode = False
# ----------------------------------------------------------------------------- end speed


# ----------------------------------------------------------------------------- the temp folder
# What the tests, the pytest-xdist workers and every program they start write to the temp folder
# lands in one folder of it for the session (TMPDIR), removed at the end with the bytecode of the
# modules tests wrote there: nothing a run makes stays in the temp folder, and whatever a test or
# a tool leaves behind is named at the end. A failed run keeps it (its tests' tmp_path folders).
@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    if hasattr(config, "workerinput"):  # an xdist worker: TMPDIR is already the controller's folder
        return
    config.session_temp = tempfile.mkdtemp(prefix="transpiler-tests-")
    os.environ["TMPDIR"] = tempfile.tempdir = config.session_temp


def pytest_sessionfinish(session, exitstatus):
    folder = getattr(session.config, "session_temp", None)
    if folder is None:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    left = sorted(name for name in os.listdir(folder) if not name.startswith("pytest-of-"))
    if left and reporter is not None:
        reporter.write_line(f"left in the temp folder by the tests: {', '.join(left)}", yellow=True)
    if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        if reporter is not None:
            reporter.write_line(f"the run's temp folder, kept for its failed tests: {folder}")
        return
    shutil.rmtree(folder, ignore_errors=True)
    if os.environ.get("PYTHONPYCACHEPREFIX"):
        shutil.rmtree(os.path.join(os.environ["PYTHONPYCACHEPREFIX"], folder.lstrip(os.sep)), ignore_errors=True)

import transpiler as qd  # noqa: E402


# Fixtures that stand for a toolchain: a test taking one is a toolchain test.
TOOLCHAIN_FIXTURES = {"executor", "lanes_executor", "vulkan", "dialect", "mod", "prims", "corpus_headers", "every_routine"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if TOOLCHAIN_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.toolchain)
    only = config.getoption("--executor")
    if only:
        keep, drop = [], []
        for item in items:
            params = getattr(getattr(item, "callspec", None), "params", {})
            ran_there = any(v == only for k, v in params.items() if k.endswith("executor"))
            (keep if ran_there or (only == "cuda" and item.get_closest_marker("gpu")) else drop).append(item)
        items[:] = keep
        config.hook.pytest_deselected(items=drop)


def toolchain_test(reason: str, missing: bool):
    """A decorator: the test runs a toolchain, and is skipped (saying why) when it cannot exist here."""
    def wrap(fn):
        return pytest.mark.toolchain(pytest.mark.skipif(missing, reason=reason)(fn))

    return wrap


def pytest_addoption(parser):
    parser.addoption("--update-snapshots", action="store_true",
                     help="rewrite tests/snapshots from the current output instead of comparing")
    parser.addoption("--executor", metavar="NAME",
                     help="only the tests that run on this executor (cuda: also those marked gpu), e.g. "
                          "`pytest --executor cuda` on a machine with an NVIDIA GPU")


def load_module(path: Path):
    name = f"corpus_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def corpus() -> list[tuple[str, qd.Kernel, dict]]:
    """(id, kernel, template_args) for every kernel in tests/kernels, in file order."""
    out = []
    for path in sorted(KERNELS.glob("*.py")):
        module = load_module(path)
        templates = getattr(module, "TEMPLATE_ARGS", {})
        kernels = [v for v in vars(module).values() if isinstance(v, qd.Kernel)]
        kernels.sort(key=lambda k: k.fn.__code__.co_firstlineno)
        for k in kernels:
            out.append((f"{path.stem}.{k.__name__}", k, templates.get(k.__name__, {})))
    return out


def have_gpu() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver or no device all mean "no GPU"
        return False


# Every execution test runs on each executor. All but "cuda" exist on any machine the
# README's test command has set up; "cuda" needs an NVIDIA GPU.
EXECUTORS = ["vulkan", "cpu-cuda", "cpu-hip", "cuda"]
# Those whose target allows a recursive @qd.real_func (GLSL does not).
RECURSIVE_EXECUTORS = ["cpu-cuda", "cpu-hip", "cuda"]


# Subgroup widths: vulkan 8 (lavapipe), cpu-cuda 32, cpu-hip 64; cpu-cuda-16 is the CUDA text
# specialized to 16 lanes for the emulator, the width of Intel and Mali GPUs (subgroup tests).
SUBGROUP_EXECUTORS = ["vulkan", "cpu-cuda-16", "cpu-cuda", "cpu-hip", "cuda"]
EXECUTOR_INIT = {"vulkan": {"arch": "vulkan"}, "cpu-cuda": {"arch": "cpu"},
                 "cpu-cuda-16": {"arch": "cpu", "subgroup_size": 16},
                 "cpu-hip": {"arch": "cpu", "dialect": "hip"}, "cuda": {"arch": "cuda", "enable_fallback": False}}


def init_executor(name: str, **options) -> None:
    """qd.init for the executor a test runs on, with extra options."""
    qd.init(**EXECUTOR_INIT[name], **options)


@pytest.fixture(params=EXECUTORS)
def executor(request):
    return _start(request.param)


@pytest.fixture(params=SUBGROUP_EXECUTORS)
def lanes_executor(request):
    """An executor, at every subgroup width this machine can run: 8, 16, 32, 64 (and the GPU's)."""
    return _start(request.param)


def _start(name: str) -> str:
    if name == "cuda" and not have_gpu():
        pytest.skip("needs an NVIDIA GPU with CuPy; this machine has none")
    init_executor(name)
    return name


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(1234)


def assert_compiles(target: str, tr, what: str = "") -> None:
    """Every file of translation ``tr`` accepted by ``target``'s real toolchain (a skip, saying
    why, where the toolchain cannot exist on this machine)."""
    from transpiler.errors import ToolchainMissing
    from transpiler.toolchains import check_sources

    try:
        verdicts = check_sources(target, tr.sources, tr.manifest)
    except ToolchainMissing as exc:
        pytest.skip(str(exc))
    for v in verdicts:
        assert v.ok, f"{what}{': ' if what else ''}{v.tool} rejected {v.file}:\n{v.message}\n\n{tr.sources[v.file]}"


def tool_available(name: str) -> bool:
    return shutil.which(name) is not None



# ----------------------------------------------------------------------------- target selection
# Tests choose their targets from the registry by what the targets can do, never by name, so a
# new target runs in every test its capabilities admit. QD_EXTRA_TARGETS="PATH.py:Class,..."
# (paths from the repository root) registers targets defined outside the package first: the
# suite's target-parametrized tests then run on them too (tests/test_extra_target.py does so).
from transpiler.targets import get_target, names, register  # noqa: E402 - after sys.path names the checkout

EXTRA_TARGETS = "QD_EXTRA_TARGETS"


def register_extra_targets(spec: str) -> list[str]:
    """Register each ``PATH.py:Class`` target of ``spec``; its folder joins sys.path, where its
    compile check (``Target.checker``) is imported from. Returns their names."""
    out = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        path, _, cls = item.partition(":")
        file = ROOT / path
        if str(file.parent) not in sys.path:
            sys.path.insert(0, str(file.parent))
        module = importlib.import_module(file.stem)
        out.append(register(getattr(module, cls)()).name)
    return out


register_extra_targets(os.environ.get(EXTRA_TARGETS, ""))


def target_names(*needs: str, lacking: tuple[str, ...] = ()) -> list[str]:
    """The registered targets (built-in first) that have every capability in ``needs`` and
    none in ``lacking``: a ``Capabilities`` field (``subgroups``, ``f64``, ``recursion``, ...)
    or ``header`` (a C++ embedding header)."""
    def has(target, need: str) -> bool:
        return target.has_header if need == "header" else getattr(target.caps, need)

    return [name for name in names() if all(has(get_target(name), need) for need in needs)
            and not any(has(get_target(name), need) for need in lacking)]
# ----------------------------------------------------------------------------- end target selection

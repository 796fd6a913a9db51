"""Stands in for Quadrants' ``tests/python/conftest.py`` (scripts/quadrants_tests.py copies it
over theirs): it makes ``import quadrants`` this project, maps the arch of every qd.init (the
runner's before a test, and a test's own) to an executor, resets after each test, and logs each
test's outcome for the harness's table."""
from __future__ import annotations

import gc
import importlib
import importlib.abc
import importlib.util
import json
import os
import sys
import time
import types

import pytest

import transpiler

EXECUTOR = os.environ.get("QDT_EXECUTOR", "cpu-cuda")
INIT = {"cpu-cuda": {"arch": "cpu"}, "cpu-hip": {"arch": "cpu", "dialect": "hip"}, "vulkan": {"arch": "vulkan"}}
# Options their runner adds for its own GPUs' memory pools: not the test's.
RUNNER_OPTIONS = ("device_memory_GB", "cuda_stack_limit", "enable_fallback")


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``quadrants.X`` is ``transpiler.X``: the module, or the object that attribute path names
    (``quadrants._lib.core``); ``quadrants.lang.misc`` (test selection) and ``quadrants._test_tools``
    (their tests' helpers) are the runner's."""

    def find_spec(self, name, path=None, target=None):
        if name == "quadrants" or name.startswith("quadrants."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        if spec.name == "quadrants.lang.misc":
            return _misc()
        if spec.name.startswith("quadrants._test_tools"):  # helpers of their tests: the runner's
            return importlib.import_module("tests.test_tools" + spec.name[len("quadrants._test_tools"):])
        real = "transpiler" + spec.name[len("quadrants"):]
        try:
            return importlib.import_module(real)
        except ModuleNotFoundError:
            obj = transpiler
            for part in real.split(".")[1:]:
                obj = getattr(obj, part)  # AttributeError: the name is missing here, as in a user's import
            return obj

    def exec_module(self, module):
        pass


def _misc() -> types.ModuleType:
    from tests import test_utils  # noqa: PLC0415 - the runner's arch and extension tables

    misc = types.ModuleType("quadrants.lang.misc")
    misc.get_host_arch_list = lambda: [transpiler.x64]
    misc.is_arch_supported = lambda arch: str(arch) in (test_utils.ROLE, "cpu", "x64", "arm64")
    misc.is_extension_supported = test_utils.supports
    misc.__getattr__ = lambda name: getattr(transpiler, name)
    return misc


sys.meta_path.insert(0, _Alias())
import quadrants  # noqa: E402


_init = transpiler.init


def mapped_init(arch=None, **options) -> None:
    """qd.init as a test calls it, its arch mapped to this run's executor (a GPU arch) or the
    CPU executor of the CUDA text (a host arch); qd.cfg.arch then says the arch asked for (the
    one the executor plays: tests ask it, and no part of the project's runtime reads it)."""
    from tests import test_utils  # noqa: PLC0415

    arch = getattr(transpiler, test_utils.ROLE) if arch is None else arch
    init = INIT[EXECUTOR] if str(arch) in ("cuda", "amdgpu", "vulkan", "gpu", "metal") else INIT["cpu-cuda"]
    _init(**init, **{k: v for k, v in options.items() if k not in RUNNER_OPTIONS})
    transpiler.lang.impl.current_cfg().__dict__["arch"] = arch


transpiler.init = mapped_init


@pytest.fixture(autouse=True)
def wanted_arch(request, req_arch, req_options):
    if req_arch is not None:
        mapped_init(req_arch, **req_options)
    yield
    if req_arch is not None:
        quadrants.reset()
    gc.collect()


def pytest_generate_tests(metafunc):
    if not getattr(metafunc.function, "__qd_test__", False):
        metafunc.parametrize("req_arch,req_options", [(None, None)], ids=["none"])


@pytest.fixture
def temporary_module():
    loaded = []

    def _import(name):
        loaded.append(name)
        return importlib.import_module(name)

    yield _import
    for name in loaded:
        sys.modules.pop(name, None)


def _log(record: dict) -> None:
    path = os.environ.get("QDT_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")


def pytest_runtest_logstart(nodeid, location):
    _log({"id": nodeid, "event": "start", "t": time.time()})


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        message = ""
        if report.outcome == "failed":
            crash = getattr(report.longrepr, "reprcrash", None)
            message = crash.message if crash is not None else str(report.longrepr)[-2000:]
        elif report.outcome == "skipped" and isinstance(report.longrepr, tuple):
            message = report.longrepr[2]
        _log({"id": report.nodeid, "event": report.when, "outcome": report.outcome, "message": message[:2000]})


def pytest_collectreport(report):
    if report.outcome == "failed":
        _log({"id": report.nodeid or "<collect>", "event": "collect", "outcome": "failed",
              "message": str(report.longrepr)[-2000:]})

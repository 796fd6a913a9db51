"""A target defined outside the package (tests/extra_target/opencl.py: OpenCL C) registers
and translates the whole feature corpus, with no edit of the package: what
docs/adding-a-target.md promises. Its output is snapshotted beside it and compiled by clang's
OpenCL C front end."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import transpiler as qd
from features.corpus import features, portable
from transpiler.targets import names, register, unregister
from transpiler.toolchains import check_sources

from conftest import EXTRA_TARGETS, ROOT

HERE = Path(__file__).resolve().parent / "extra_target"
SNAPSHOTS = HERE / "snapshots"
FEATURES = features()
# What this small dialect leaves out, each a located error: subgroups, f16, f64, NVSHMEM, recursion and
# system scope (and the block library and the register tiles, which are built on subgroups).
UNSUPPORTED = {"subgroup_shuffles", "subgroup_folds", "subgroup_votes", "block_reduce", "block_scan", "wave32",
               "half_floats", "double_math", "nvshmem_put", "system_fence", "scalar_params", "real_recursion",
               "register_tiles"}


@pytest.fixture(scope="module")
def opencl():
    if "opencl" in names():  # registered for the whole run (QD_EXTRA_TARGETS): leave it so
        yield "opencl"
        return
    sys.path.insert(0, str(HERE))
    from opencl import OpenclTarget

    register(OpenclTarget())
    yield "opencl"
    unregister("opencl")
    sys.path.remove(str(HERE))


def translate(feature, target):
    try:
        tr = qd.translate(feature.kernel, target, warn=False, **feature.options_for(target))
    except qd.TranspileError as exc:
        return None, portable(exc)
    return tr, None


def test_registering_adds_the_target_and_unregistering_removes_it(opencl):
    assert "opencl" in names() and "opencl" not in qd.TARGETS  # `--target all` stays the four


@pytest.mark.parametrize("feature", FEATURES, ids=[f.name for f in FEATURES])
def test_every_feature_translates_or_is_a_located_error(opencl, feature, request):
    tr, error = translate(feature, opencl)
    folder = SNAPSHOTS / feature.name
    files = {f"{feature.kernel.__name__}.error": error + "\n"} if tr is None else \
        {**tr.sources, f"{feature.kernel.__name__}.json": json.dumps(tr.manifest, indent=2) + "\n"}
    if request.config.getoption("--update-snapshots"):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / name).write_text(text)
    else:
        assert sorted(p.name for p in folder.iterdir()) == sorted(files), "run --update-snapshots"
        for name, text in files.items():
            assert (folder / name).read_text() == text, f"{feature.name}/{name} differs from its snapshot"
    if feature.name in UNSUPPORTED:
        assert error is not None and error.startswith(f"{feature.path.name}:"), error
    else:
        assert tr is not None, error


@pytest.mark.toolchain
@pytest.mark.parametrize("feature", [f for f in FEATURES if f.name not in UNSUPPORTED],
                         ids=[f.name for f in FEATURES if f.name not in UNSUPPORTED])
def test_output_compiles_with_clang_opencl(opencl, feature):
    if shutil.which("clang-19") is None and shutil.which("clang") is None:
        pytest.skip("needs clang (apt-get install clang-19)")
    tr, error = translate(feature, opencl)
    for v in check_sources(opencl, tr.sources, tr.manifest):
        assert v.ok, f"{v.tool} rejected {v.file}:\n{v.message}"


# ----------------------------------------------------------------------------- the suite on it
# docs/adding-a-target.md's promise, end to end: with this target registered for the whole run
# (QD_EXTRA_TARGETS), every test that takes its targets from conftest's target_names() runs on
# it where its capabilities allow, and passes.
TARGET_TESTS = sorted(p for p in Path(__file__).resolve().parent.glob("test_*.py")
                      if p.name != Path(__file__).name and "target_names(" in p.read_text())


def run_suite_with_opencl(tmp_path: Path, *args: str) -> tuple[int, list[str]]:
    """Pytest over TARGET_TESTS with the OpenCL target registered: (passed, the ids of those
    that ran on it)."""
    report = tmp_path / "report.xml"
    env = dict(os.environ, **{EXTRA_TARGETS: f"{HERE.relative_to(ROOT) / 'opencl.py'}:OpenclTarget"})
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                        *args, *map(str, TARGET_TESTS)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    cases = list(ET.parse(report).getroot().iter("testcase"))
    passed = [c for c in cases if not any(x.tag in ("failure", "error", "skipped") for x in c)]
    return len(passed), [c.get("name") for c in passed if "opencl" in c.get("name")]


@pytest.mark.slow
def test_the_target_parametrized_tests_pass_on_it(tmp_path):
    """The fast loop's share of those files, whole (tests that loop over target_names() inside
    have no target in their id)."""
    assert len(TARGET_TESTS) >= 20
    passed, on_opencl = run_suite_with_opencl(tmp_path, "-m", "not toolchain and not slow")
    assert passed >= 400 and len(on_opencl) >= 50, (passed, on_opencl)


@pytest.mark.toolchain
@pytest.mark.slow
def test_the_target_parametrized_compile_tests_pass_on_it(tmp_path):
    """Their compile tests, on this target only: clang's OpenCL C front end accepts every output."""
    if shutil.which("clang-19") is None and shutil.which("clang") is None:
        pytest.skip("needs clang (apt-get install clang-19)")
    passed, on_opencl = run_suite_with_opencl(tmp_path, "-m", "toolchain or slow", "-k", "opencl")
    assert passed == len(on_opencl) >= 50, (passed, on_opencl)

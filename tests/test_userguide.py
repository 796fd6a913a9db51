"""The user-guide corpus (tests/userguide/): kernels written as Quadrants' user guide and
Taichi's ndarray examples write them translate unchanged for every target, every output
compiles with its real toolchain, and every kernel computes what NumPy says on Vulkan and on
the CPU executors (the CUDA and HIP text)."""
from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import transpiler as qd
import userguide
from transpiler.runtime import bind_arguments
from transpiler.toolchains import check_sources
from userguide.cases import CASES

from conftest import target_names

for _info in pkgutil.iter_modules(userguide.__path__):
    importlib.import_module(f"userguide.{_info.name}")
IDS = [c.id for c in CASES]
# Every case on every target that has what it needs.
ON_TARGETS = [pytest.param(c, t, id=f"{c.id}-{t}") for c in CASES for t in target_names(*c.needs)]


def translate(c, target: str):
    args, _ = c.setup(np.random.default_rng(0))
    template_args, arg_types, _, _ = bind_arguments(c.kernel, args, {})
    return qd.translate(c.kernel, target, template_args=template_args, arg_types=arg_types, warn=False)


def test_the_corpus_is_at_least_thirty_kernels():
    assert len(CASES) >= 30 and len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("c,target", ON_TARGETS)
def test_translates_unchanged(c, target):
    tr = translate(c, target)
    assert tr.sources and tr.manifest["entry_points"]


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("c,target", ON_TARGETS)
def test_compiles(c, target):
    tr = translate(c, target)
    for v in check_sources(target, tr.sources, tr.manifest):
        assert v.ok, f"{v.tool} rejected {v.file}:\n{v.message}"


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_computes_what_numpy_says(c, executor):
    args, check = c.setup(np.random.default_rng(1234))
    check(c.kernel(*args))

"""Targets are immutable descriptions in one registry; everything a translation learns lives
in its own context; no shared code asks which target it is working for."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import transpiler as qd
from features.corpus import features
from transpiler.header import render_header
from transpiler.targets import TARGETS, all_targets, get_target, names
from transpiler.targets.dialect import Dialect

from conftest import target_names

PACKAGE = Path(qd.__file__).resolve().parent


@qd.kernel
def with_fence(x: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(x.shape[0]):
        x[i] = 1
        qd.simt.grid.mem_fence()


@qd.kernel
def with_float_atomic(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        x[0] += 1.0


@qd.kernel
def plain(x: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(x.shape[0]):
        x[i] = 2


def test_msl_version_does_not_leak_from_one_translation_into_the_next():
    # The same target object serves every call: a fence once asked for MSL 3.2, and the
    # requirement used to stay with the target for every later kernel.
    assert get_target("msl") is get_target("msl")
    assert qd.translate(with_fence, "msl").manifest["requirements"]["msl_version"] == "3.2"
    assert qd.translate(with_float_atomic, "msl").manifest["requirements"]["msl_version"] == "3.0"
    plain_tr = qd.translate(plain, "msl")
    assert plain_tr.manifest["requirements"]["msl_version"] == "2.1"
    assert plain_tr.sources["plain.metal"].startswith("// Metal Shading Language 2.1.")


def test_hip_wave_width_is_per_translation():
    assert qd.translate(plain, "hip", wave32=True).manifest["subgroup_size"] == 32
    assert qd.translate(plain, "hip").manifest["subgroup_size"] == 64
    assert qd.translate(plain, "hip", wave32=True).manifest["requirements"]["offload_arch"] == ["gfx1030"]


def test_glsl_fast_math_is_per_translation():
    assert "precise float" in qd.translate(with_float_atomic, "glsl").sources["with_float_atomic.comp"]
    assert "precise" not in qd.translate(with_float_atomic, "glsl", fast_math=True).sources["with_float_atomic.comp"]
    assert "precise float" in qd.translate(with_float_atomic, "glsl").sources["with_float_atomic.comp"]


def test_cuda_and_hip_float_contraction_follows_fast_math():
    """Unfused a * b + c by default (the result every other executor gives, bit for bit);
    the host compiles with these options, so they are the manifest's."""
    def options(target, **kw):
        req = qd.translate(with_float_atomic, target, **kw).manifest["requirements"]
        return req["nvrtc_options"] if target == "cuda" else req["compile_options"]
    assert "--fmad=false" in options("cuda") and "--fmad=false" not in options("cuda", fast_math=True)
    assert "-ffp-contract=off" in options("hip") and "-ffp-contract=off" not in options("hip", fast_math=True)


@pytest.mark.parametrize("name", target_names())
def test_targets_and_dialects_refuse_state(name):
    target = get_target(name)
    with pytest.raises(AttributeError, match="immutable"):
        target.fast_math = True
    with pytest.raises(AttributeError, match="immutable"):
        target.dialect.subgroup_size = 8


def test_translating_everything_leaves_no_state_on_any_target():
    for feature in features():
        for target in names():
            try:
                qd.translate(feature.kernel, target, warn=False, **feature.options_for(target))
            except qd.TranspileError:
                pass
    for target in all_targets():
        assert vars(target) == {} and vars(target.dialect) == {}, target.name


@qd.kernel
def with_shuffle(x: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(x.shape[0]):
        x[i] = qd.simt.subgroup.shuffle(x[i], qd.u32(0))


@qd.real_func
def set_two(a: qd.ref(qd.i32)):
    a += 2


@qd.kernel
def with_reference(x: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(x.shape[0]):
        v = 0
        set_two(v)
        x[i] = v


@pytest.mark.parametrize("name", target_names())
def test_the_capabilities_tests_select_by_are_what_the_target_does(name):
    """``subgroups``, ``references`` and ``has_header`` (what conftest's target_names selects on)
    agree with the dialect, the renderer and the templates: a target that claims one has it, one
    that does not says so."""
    target = get_target(name)
    assert target.caps.subgroups == (type(target.dialect).subgroup is not Dialect.subgroup), \
        "set Capabilities(subgroups=...) to whether the dialect spells subgroup operations"
    if target.caps.subgroups:
        tr = qd.translate(with_shuffle, name)
        assert tr.sources
    else:
        with pytest.raises(qd.TranspileError, match=f"subgroup.shuffle is not supported on the {name} target") as info:
            qd.translate(with_shuffle, name)
        assert info.value.loc.line == with_shuffle.fn.__code__.co_firstlineno + 3
    if target.caps.references:
        assert qd.translate(with_reference, name).sources
    else:
        with pytest.raises(qd.TranspileError, match=f"not supported on the {name} target") as info:
            qd.translate(with_reference, name)
        assert info.value.loc.line == set_two.fn.__code__.co_firstlineno + 1  # its def line
    if target.has_header:
        assert f"namespace qd::plain::{name}" in render_header(qd.translate(plain, name))
    else:
        with pytest.raises(ValueError, match="has no C\\+\\+ embedding header"):
            render_header(qd.translate(plain, name))


def test_registry_lists_every_target_once():
    assert names()[:4] == ("cuda", "hip", "glsl", "msl") == qd.TARGETS
    with pytest.raises(ValueError, match="unknown target 'spirv'"):
        qd.translate(plain, "spirv")


BUILTIN_NAMES = set(TARGETS)


def _compares_a_target_name(node: ast.AST) -> bool:
    if not isinstance(node, ast.Compare):
        return False
    for side in [node.left, *node.comparators]:
        consts = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
        if any(isinstance(c, ast.Constant) and c.value in BUILTIN_NAMES for c in consts):
            return True
    return False


def test_no_code_outside_a_target_module_tests_a_target_name():
    own = {f"targets/{name}" for name in TARGETS}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if any(rel.startswith(prefix) for prefix in own):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if _compares_a_target_name(node):
                found.append(f"{rel}:{node.lineno}")
    assert found == []


def test_ir_is_traversed_only_by_ir_walk():
    """Passes, hazards, runtimes and targets use ir/walk.py; none reflects on node fields."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        # context: Needs.merge over its own fields; lang/matrix: the user's dataclass parameters
        if rel in ("ir/walk.py", "targets/context.py", "lang/matrix.py"):
            continue
        if re.search(r"\bfields\(", path.read_text()):
            found.append(rel)
    assert found == []

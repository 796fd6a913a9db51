"""What one translation of a kernel computes once for the others (the IR, the hazard
checker's findings, the range analysis of an entry's statements) is never served to a
translation it does not fit: another kernel, another instantiation, another subgroup width,
a target with other capabilities."""
from __future__ import annotations

import pytest

import transpiler as qd
from transpiler.passes.hazards import check_hazards_at, target_key
from transpiler.pipeline import lower
from transpiler.targets import get_target

SOURCE = '''
import transpiler as qd

SCALE = {scale}


@qd.func
def bump(v):
    return v + {bump}


@qd.kernel
def k(x: qd.types.ndarray(qd.i32, 2), n: qd.i32):
    for i, j in qd.ndrange(x.shape[0], x.shape[1]):
        t = i * 3 + j
        x[i, j] = bump(x[t % x.shape[0], j] * SCALE) + n
'''


def _module(tmp_path, name: str, scale: int, bump: int):
    from conftest import load_module

    path = tmp_path / f"{name}.py"
    path.write_text(SOURCE.format(scale=scale, bump=bump))
    return load_module(path)


def _all_targets(kernel, **options) -> dict[str, str]:
    return {t: "\n".join(qd.translate(kernel, t, warn=False, **options).sources.values()) for t in qd.TARGETS}


def _fresh(kernel, target: str, **options) -> str:
    for cache in ("_ir_cache", "_hazard_cache"):
        kernel.__dict__.pop(cache, None)
    return "\n".join(qd.translate(kernel, target, warn=False, **options).sources.values())


def test_kernels_that_differ_in_a_module_constant_or_a_redefined_func_translate_apart(tmp_path):
    """Kernels whose text is the same, in modules that differ only in a module-level constant
    or in what a qd.func of the same name adds, each keep their own code on every target,
    whichever was translated first, and what each gets is what it gets alone."""
    base = _module(tmp_path, "base_mod", 7, 11).k
    scaled = _module(tmp_path, "scaled_mod", 9, 11).k
    bumped = _module(tmp_path, "bumped_mod", 7, 13).k
    got = {name: _all_targets(k) for name, k in (("base", base), ("scaled", scaled), ("bumped", bumped))}
    for t in qd.TARGETS:
        assert "7" in got["base"][t] and "9" in got["scaled"][t] and "13" in got["bumped"][t]
        assert len({got["base"][t], got["scaled"][t], got["bumped"][t]}) == 3
    for name, k in (("bumped", bumped), ("scaled", scaled), ("base", base)):
        for t in reversed(qd.TARGETS):
            assert _fresh(k, t) == got[name][t]


@qd.kernel
def _templated(x: qd.types.ndarray(qd.f32, 1), step: qd.template()):
    for i in range(x.shape[0] // step):
        j = i * step
        x[j] = x[j] * 2.0 + step


def test_each_template_value_gets_its_own_translation_on_every_target():
    """Instantiations of one kernel alternate, target by target: each keeps its own code, and
    it is the code the instantiation gets from nothing cached."""
    got = {}
    for t in qd.TARGETS:
        for step in (2, 3):
            got[step, t] = "\n".join(qd.translate(_templated, t, warn=False, template_args={"step": step}).sources.values())
    for t in qd.TARGETS:
        assert got[2, t] != got[3, t]
        for step in (3, 2):
            assert _fresh(_templated, t, template_args={"step": step}) == got[step, t]


vec = qd.types.ndarray(qd.f32, 1)
ivec = qd.types.ndarray(qd.i32, 1)


@qd.kernel
def _publication(data: vec, flag: ivec):
    for i in range(data.shape[0]):
        data[i] = 1.0
        qd.simt.grid.mem_fence()
        qd.atomic_exchange(flag[i], 1)


@qd.kernel
def _plain(x: vec):
    for i in range(x.shape[0]):
        x[i] = x[i] * 2.0


@qd.kernel
def _spin_on_plain_flag(flag: ivec, count: ivec):
    for i in range(flag.shape[0]):
        while flag[0] == 0:
            qd.atomic_add(count[flag[i]], 1)


@pytest.mark.parametrize("order", [qd.TARGETS, tuple(reversed(qd.TARGETS))])
@pytest.mark.parametrize("kernel, kind", [(_publication, "metal-publication"), (_spin_on_plain_flag, "metal-spin-wait")])
def test_a_target_with_other_capabilities_gets_its_own_hazard_findings(order, kernel, kind):
    """Metal's fences order only atomics: its translation warns about the plain store (or the
    plain load a loop spins on), the others (whose fences order every store) do not, in
    either order of translation."""
    for cache in ("_ir_cache", "_hazard_cache"):
        kernel.__dict__.pop(cache, None)
    kinds = {t: [w.kind for w in qd.translate(kernel, t, warn=False).warnings] for t in order}
    assert kinds == {"cuda": [], "hip": [], "glsl": [], "msl": [kind]}


def test_the_hazard_findings_are_keyed_on_what_the_checker_reads():
    """The target is in the key only where the checker reads it (a loop or a fence, on a
    target whose fences do not order plain stores), the width only where a finding hinged on
    it (a branch on ``thread_idx // 32`` under a collective)."""
    assert {target_key(lower(_plain), get_target(t)) for t in qd.TARGETS} == {None}
    fenced = lower(_publication)
    assert {t: target_key(fenced, get_target(t)) for t in qd.TARGETS} == {
        "cuda": None, "hip": None, "glsl": None, "msl": get_target("msl").title}
    assert check_hazards_at(lower(_plain), get_target("cuda"), 32) == ([], False)
    assert check_hazards_at(lower(_collective), get_target("glsl"), 32) == ([], True)


@qd.kernel
def _collective(a: vec, n: ivec):
    qd.loop_config(block_dim=64)
    for i in range(a.shape[0]):
        tid = qd.simt.block.thread_idx()
        if n[tid // 32] > 0:
            a[i] = qd.simt.subgroup.reduce_add(a[i])


def test_a_subgroup_width_gets_its_own_hazard_findings():
    """A branch on ``thread_idx // 32`` is uniform across 32 lanes, not across 64: a subgroup
    operation under it is an error only at the wider width, in either order of translation."""
    def check(width):
        if width == 32:
            assert qd.translate(_collective, "glsl", warn=False, subgroup_size=32).warnings == []
        else:
            with pytest.raises(qd.TranspileError, match="reached only by some lanes"):
                qd.translate(_collective, "glsl", warn=False, subgroup_size=64)

    for widths in ((32, 64, 32), (64, 32, 64)):
        for cache in ("_ir_cache", "_hazard_cache"):
            _collective.__dict__.pop(cache, None)
        for width in widths:
            check(width)

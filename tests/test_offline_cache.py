"""The offline cache (transpiler/offline_cache.py): what an executor's first call of a kernel
translates to, kept on disk for the next process, as Quadrants' offline_cache keeps its
compiled kernels. A hit must give exactly what translating gives; anything that changes the
translation must miss."""
from __future__ import annotations

import dataclasses
import os

import numpy as np

import transpiler as qd
from conftest import ROOT, corpus, init_executor, load_module, target_names
from transpiler import offline_cache
from transpiler.pipeline import lower, translate
from transpiler.targets import get_target

SCALE = 2.0


@qd.kernel
def scaled(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        x[i] = x[i] * SCALE


def fresh(kernel) -> None:
    """What a new process has: no IR of ``kernel`` in memory."""
    kernel.__dict__.pop("_ir_cache", None)
    kernel.__dict__.pop("_program_cache", None)
    kernel.__dict__.pop("_last_call", None)


def entries(folder) -> list[str]:
    """The entries, not the cache's own bookkeeping (transpiler/cache.py: .usage, .version)."""
    return sorted(f for _, _, files in os.walk(folder) for f in files if not f.startswith("."))


def kernels() -> list[tuple[str, qd.Kernel, dict]]:
    """The corpus, the examples and the user-guide kernels."""
    out = list(corpus())
    for path in [*sorted((ROOT / "examples").glob("*.py")), *sorted((ROOT / "tests" / "userguide").glob("*.py"))]:
        module = load_module(path)
        out += [(f"{path.stem}.{k.__name__}", k, {}) for k in vars(module).values() if isinstance(k, qd.Kernel)]
    seen: set[int] = set()
    return [c for c in out if id(c[1]) not in seen and not seen.add(id(c[1]))]  # a kernel one module imports from another


def test_a_hit_gives_what_translating_gives_for_every_corpus_kernel_and_target(tmp_path):
    compared = 0
    for name, kernel, template_args in kernels():
        for target in target_names():
            try:
                want = translate(kernel, target, template_args=template_args, warn=False)
            except Exception:  # noqa: BLE001 - a kernel this target refuses: nothing to cache
                continue
            first = translate(kernel, target, template_args=template_args, warn=False, offline_cache=str(tmp_path))
            fresh(kernel)
            again = translate(kernel, target, template_args=template_args, warn=False, offline_cache=str(tmp_path))
            # a target defined outside the package is not cached: its code is not in the key
            built_in = type(get_target(target)).__module__.startswith("transpiler.targets.")
            assert "emit" in first.seconds, (name, target)
            assert ("offline cache" if built_in else "emit") in again.seconds, (name, target)
            for got in (first, again):
                assert (got.sources, got.manifest, got.language) == (want.sources, want.manifest, want.language), \
                    (name, target)
            assert [str(w) for w in again.warnings] == [str(w) for w in want.warnings]
            compared += 1
    assert compared > 150


def test_a_changed_capture_misses(tmp_path):
    global SCALE
    folder = str(tmp_path)
    first = translate(scaled, "cuda", offline_cache=folder)
    try:
        SCALE = 3.0
        fresh(scaled)
        changed = translate(scaled, "cuda", offline_cache=folder)
    finally:
        SCALE = 2.0
        fresh(scaled)
    assert "emit" in changed.seconds
    (src,) = changed.sources.values()
    assert "3.0f" in src and src != next(iter(first.sources.values()))
    assert len(entries(tmp_path)) == 2


def test_options_and_targets_are_in_the_key(tmp_path):
    folder = str(tmp_path)
    a = translate(scaled, "glsl", offline_cache=folder)
    b = translate(scaled, "glsl", offline_cache=folder, fast_math=True)
    c = translate(scaled, "msl", offline_cache=folder)
    assert all("emit" in t.seconds for t in (a, b, c))
    assert a.sources != b.sources and len(entries(tmp_path)) == 3


def test_a_bound_fields_shape_is_in_the_key(tmp_path):
    """The manifest names each field the kernel binds with its shape: another shape, another
    entry."""
    folder = str(tmp_path)
    seen = []
    for n in (8, 16):
        grid = qd.field(qd.f32, shape=(n,))

        @qd.kernel
        def fill():
            for i in grid:
                grid[i] = 1.0

        tr = translate(fill, "cuda", offline_cache=folder)
        seen.append(tr.manifest["fields"][0]["shape"])
        assert "emit" in tr.seconds
    assert seen == [[8], [16]]


def test_what_cannot_be_keyed_is_not_cached(tmp_path):
    kir = lower(scaled)
    glsl = get_target("glsl")
    assert offline_cache.key(kir, glsl, glsl.options({})) is not None
    odd = dataclasses.replace(kir, bindings={"x": object()})  # a Python object of the user's
    assert offline_cache.key(odd, glsl, glsl.options({})) is None

    class OwnTarget(type(glsl)):  # a target defined outside the package: its code is not in the key
        pass

    assert offline_cache.key(kir, OwnTarget(), glsl.options({})) is None


def test_a_corrupt_entry_is_a_miss_and_is_replaced(tmp_path):
    folder = str(tmp_path)
    want = translate(scaled, "hip", offline_cache=folder)
    (name,) = entries(tmp_path)
    path = tmp_path / name[:2] / name
    path.write_bytes(b"not a pickle")
    fresh(scaled)
    again = translate(scaled, "hip", offline_cache=folder)
    assert "emit" in again.seconds and again.sources == want.sources
    fresh(scaled)
    assert "offline cache" in translate(scaled, "hip", offline_cache=folder).seconds


def test_the_code_identity_follows_every_file(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "t.j2").write_text("{{ x }}\n")
    (tmp_path / "notes.txt").write_text("not code\n")
    before = offline_cache.files_identity([tmp_path])
    (tmp_path / "notes.txt").write_text("changed, still not code\n")
    assert offline_cache.files_identity([tmp_path]) == before
    (tmp_path / "sub" / "t.j2").write_text("{{ x }} {{ y }}\n")
    assert offline_cache.files_identity([tmp_path]) != before


def test_where_the_cache_lives_and_how_it_is_turned_off(tmp_path, monkeypatch):
    monkeypatch.delenv("QD_OFFLINE_CACHE", raising=False)
    monkeypatch.setenv("QD_CACHE_DIR", str(tmp_path))
    assert offline_cache.directory() == str(tmp_path / "offline")
    assert offline_cache.directory(True, tmp_path / "mine") == str(tmp_path / "mine")
    assert offline_cache.directory(False) is None
    monkeypatch.setenv("QD_OFFLINE_CACHE", "0")  # as Quadrants reads it: wins over the argument
    assert offline_cache.directory(True, tmp_path / "mine") is None
    monkeypatch.setenv("QD_OFFLINE_CACHE", "1")
    assert offline_cache.directory(False) == str(tmp_path / "offline")


def test_an_executor_reuses_an_earlier_runs_translation(executor, tmp_path, rng, monkeypatch, capsys):
    """qd.init(offline_cache_file_path=...): the first call of a new process (a new executor,
    no IR in memory) is served from the disk and computes the same; offline_cache=False
    neither reads nor writes it."""
    from transpiler.runtime import profile, warm_up

    monkeypatch.delenv("QD_OFFLINE_CACHE", raising=False)
    monkeypatch.setattr(profile, "enabled", True)
    monkeypatch.setattr(warm_up, "_started", set(qd.TARGETS))  # its kernels would land in the folder too
    x = rng.standard_normal(300).astype(np.float32)
    for run in range(2):
        init_executor(executor, offline_cache_file_path=str(tmp_path))
        fresh(scaled)
        y = x.copy()
        scaled(y)
        np.testing.assert_array_equal(y, x * np.float32(2.0))
        (line,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("qd profile: scaled")]
        assert ("emit" if run == 0 else "offline cache") in line, line
    assert len(entries(tmp_path)) == 1
    init_executor(executor, offline_cache=False, offline_cache_file_path=str(tmp_path / "off"))
    fresh(scaled)
    scaled(x.copy())
    assert "emit" in capsys.readouterr().err and not (tmp_path / "off").exists()


def test_a_full_cache_loses_its_least_recently_used_entries(tmp_path, monkeypatch):
    """Over its bound (transpiler/cache.py), the cache loses its least recently used entries
    down to the bound less the cleaning factor's share; a load counts as a use."""
    from transpiler import cache

    names = [f"ab{k:062x}" for k in range(5)]
    for k, name in enumerate(names[:4]):
        offline_cache.store(str(tmp_path), name, {"k.cu": str(k) * 100}, {}, "CUDA")
        os.utime(tmp_path / "ab" / name, ns=(k * 10**9, k * 10**9))
    size = os.path.getsize(tmp_path / "ab" / names[0])
    monkeypatch.setattr(cache, "_settings", cache.Settings("lru", 4 * size + size // 2, 0.5))
    assert offline_cache.load(str(tmp_path), names[0]) == ({"k.cu": "0" * 100}, {}, "CUDA")  # used: the newest
    offline_cache.store(str(tmp_path), names[4], {"k.cu": "4" * 100}, {}, "CUDA")  # five: over 4.5, keep 2.25
    assert entries(tmp_path) == sorted([names[0], names[4]])


def test_the_warm_up_kernels_translate_everywhere_through_the_cache(tmp_path):
    """The warm-up thread swallows its errors (it only gives a first call a head start): its two
    kernels must translate on every target, and a later process's warm-up finds them on disk."""
    from transpiler.runtime import warm_up

    for target in qd.TARGETS:
        for kernel in (warm_up.warm_up, warm_up.warm_up_block):
            fresh(kernel)
        warm_up.translate_once(target, str(tmp_path))
    assert len(entries(tmp_path)) == 2 * len(qd.TARGETS)
    for kernel in (warm_up.warm_up, warm_up.warm_up_block):
        fresh(kernel)
        assert "offline cache" in translate(kernel, "glsl", warn=False, offline_cache=str(tmp_path)).seconds


def test_the_warm_up_writes_to_the_folder_of_the_init_that_started_it(tmp_path, monkeypatch):
    """A qd.init that comes while an earlier one's warm-up runs (the executor fixture's, then a
    test's own with offline_cache_file_path=...) does not get the warm-up's entries."""
    import threading

    from transpiler import runtime
    from transpiler.runtime import warm_up

    monkeypatch.setattr(warm_up, "_started", set())
    monkeypatch.setattr(runtime, "_offline_cache", str(tmp_path / "first"))
    for kernel in (warm_up.warm_up, warm_up.warm_up_block):
        fresh(kernel)
    warm_up.start("msl", first=lambda: setattr(runtime, "_offline_cache", str(tmp_path / "later")))
    for t in threading.enumerate():  # none left when the warm-up already ended (a loaded machine's race)
        if t.name == "qd-warm-up-msl":
            t.join(120)
    assert len(entries(tmp_path / "first")) == 2 and not (tmp_path / "later").exists()


def test_the_warm_up_loads_the_emitter_that_its_cache_hits_skipped(tmp_path):
    """A process whose warm-up kernels come from the disk has not imported Jinja2 by then; the
    warm-up thread's last step loads it and renders once, so that a kernel new to the cache
    does not pay for that in its first call. In fresh interpreters: the first fills the cache."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from transpiler.runtime import warm_up\n"
        f"warm_up.translate_once('glsl', {str(tmp_path)!r})\n"
        "before = 'jinja2' in sys.modules\n"
        "warm_up.emitter_once('glsl')\n"
        "from transpiler.targets import templates\n"
        "print(before, 'jinja2' in sys.modules, templates.template.cache_info().currsize > 0)\n"
    )
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
            for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert runs[0].stdout.split() == ["True", "True", "True"]   # the cache was empty: it rendered
    assert runs[1].stdout.split() == ["False", "True", "True"]  # served from the disk, then loaded


def test_an_unwritable_folder_only_costs_the_translation(tmp_path):
    blocker = tmp_path / "a file, not a folder"
    blocker.write_text("")
    first = translate(scaled, "msl", offline_cache=str(blocker))
    fresh(scaled)
    again = translate(scaled, "msl", offline_cache=str(blocker))
    assert "emit" in again.seconds and again.sources == first.sources
    assert entries(tmp_path) == [blocker.name]

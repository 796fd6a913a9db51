"""The corpus of real programs (tests/corpus/: Taichi's examples, Quadrants' demos), each run
whole in its own process by scripts/corpus.py: this project's executors against each other
(cpu-cuda the reference), and against Quadrants 1.3.3 where its venv exists (/tmp/qvenv, as
bench/ finds it). A known difference (a program's CORPUS_EXPECT) is an xfail with its reason."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("corpus_runner", Path(__file__).parent.parent / "scripts" / "corpus.py")
corpus = importlib.util.module_from_spec(_spec)
sys.modules["corpus_runner"] = corpus  # its dataclass looks its module up there
_spec.loader.exec_module(corpus)

PROGRAMS = corpus.programs()


def _compare(path: Path, executor: str, reference: str, python: str) -> None:
    conf = corpus.settings(path)
    arch = conf["QUADRANTS_ARCH"] if reference == "quadrants" else None
    want, err = corpus.run(path, reference, python, 600, arch)
    assert want is not None, f"{path.stem} on {reference}: {err}"
    got, err = corpus.run(path, executor, sys.executable, 600)
    known = conf["EXPECT"].get(executor) or (conf["EXPECT"].get("quadrants") if reference == "quadrants" else None)
    if got is None:
        if known:
            pytest.xfail(f"{known} ({err})")
        raise AssertionError(f"{path.stem} on {executor}: {err}")
    rel, fields = corpus.max_rel(got, want)
    rtol = corpus.tolerance(conf, reference)
    if rel > rtol and known:
        pytest.xfail(f"{known} (max rel diff {rel:.1e}: {', '.join(fields)})")
    assert rel <= rtol, f"{path.stem}: {executor} vs {reference}: {', '.join(fields)} > {rtol}"


@pytest.mark.slow
@pytest.mark.toolchain
@pytest.mark.parametrize("executor", ["vulkan", "cpu-hip"])
@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_executors_agree(path, executor):
    _compare(path, executor, "cpu-cuda", sys.executable)


@pytest.mark.slow
@pytest.mark.toolchain
@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_same_as_quadrants(path):
    if not Path(corpus.QUADRANTS_PYTHON).exists():
        pytest.skip(f"Quadrants 1.3.3 is not installed at {corpus.QUADRANTS_PYTHON} (its own venv, as bench/ uses)")
    _compare(path, "cpu-cuda", "quadrants", corpus.QUADRANTS_PYTHON)


def test_every_program_names_its_source_and_tolerance():
    """Each program's header names the repository, path, commit and license; its tolerance is set."""
    assert len(PROGRAMS) >= 8
    for p in PROGRAMS:
        head = p.read_text()[:1500]
        assert "Source: " in head and "commit " in head and "Apache-2.0" in head, p.name
        assert corpus.settings(p)["RTOL"] >= 0, p.name

"""The module paths Quadrants' users import (found in its tests/python, docs and misc/demos,
and its public submodules) import here too, and give the same objects as the attributes they
name; ``import transpiler`` and these paths still load neither NumPy nor the runtime. The paths
left out on purpose are listed, with the reason, in docs/differences.md."""
from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import transpiler as qd

ROOT = Path(__file__).resolve().parent.parent

# path -> the attribute chain (from the package) it stands for
PATHS = {
    "transpiler.ad": "ad",
    "transpiler.algorithms": "algorithms",
    "transpiler.linalg": "linalg",
    "transpiler.math": "math",
    "transpiler.types": "types",
    "transpiler.shmem": "shmem",
    "transpiler.simt": "simt",
    "transpiler.lang": "lang",
    "transpiler.lang.simt": "simt",
    "transpiler.types.primitive_types": "types.primitive_types",
    **{f"transpiler{prefix}.simt.{scope}": f"simt.{scope}"
       for prefix in ("", ".lang") for scope in ("block", "subgroup", "grid", "warp")},
}
# `from path import name`: name -> the package's attribute it must be
FROM_IMPORTS = {
    "transpiler.algorithms": {"sort": "algorithms.sort", "reduce_add": "algorithms.reduce_add",
                              "PrefixSumExecutor": "algorithms.PrefixSumExecutor"},
    "transpiler.math": {"vec3": "math.vec3", "normalize": "math.normalize", "pi": "math.pi", "inf": "math.inf",
                        "isinf": "math.isinf", "vdir": "math.vdir", "cmul": "math.cmul"},
    "transpiler.types": {"ndarray": "types.ndarray", "vector": "types.vector", "template": "template"},
    "transpiler.types.primitive_types": {"f32": "f32", "float32": "f32", "i64": "i64", "uint8": "u8"},
    "transpiler.types.annotations": {"template": "template", "Template": "Template"},
    "transpiler.types.compound_types": {"matrix": "types.matrix", "vector": "types.vector", "struct": "types.struct"},
    "transpiler.types.ndarray_type": {"ndarray": "types.ndarray", "NDArray": "types.NDArray"},
    "transpiler.types.utils": {"is_integral": "types.is_integral", "is_tensor": "types.is_tensor"},
    "transpiler.linalg": {"MatrixFreeCG": "linalg.MatrixFreeCG", "LinearOperator": "linalg.LinearOperator"},
    "transpiler.ad": {"Tape": "ad.Tape", "FwdMode": "ad.FwdMode"},
    "transpiler.lang": {"impl": "lang.impl", "exception": "lang.exception", "util": "lang.util"},
    "transpiler.lang.simt": {"subgroup": "simt.subgroup", "block": "simt.block", "warp": "simt.warp"},
    "transpiler.lang.impl": {"current_cfg": "lang.impl.current_cfg", "Kernel": "Kernel",
                             "QuadrantsSyntaxError": "QuadrantsSyntaxError"},
    "transpiler.lang.exception": {"QuadrantsSyntaxError": "QuadrantsSyntaxError",
                                  "QuadrantsRuntimeError": "QuadrantsRuntimeError"},
    "transpiler.lang.util": {"has_pytorch": "lang.util.has_pytorch", "to_numpy_type": "lang.util.to_numpy_type"},
    "transpiler.lang.stream": {"Stream": "Stream", "Event": "Event"},
    "transpiler.simt.subgroup": {"reduce_add": "simt.subgroup.reduce_add", "shuffle": "simt.subgroup.shuffle"},
    "transpiler.simt.block": {"SharedArray": "simt.block.SharedArray", "sync": "simt.block.sync"},
}


def attribute(chain: str) -> object:
    obj = qd
    for part in chain.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("path", PATHS)
def test_the_path_imports_as_the_attribute(path):
    assert importlib.import_module(path) is attribute(PATHS[path])
    exec(f"import {path} as imported", namespace := {})  # noqa: S102 - the statement itself, as users write it
    assert namespace["imported"] is attribute(PATHS[path])


@pytest.mark.parametrize("path", FROM_IMPORTS)
def test_from_the_path_import_names(path):
    names = FROM_IMPORTS[path]
    exec(f"from {path} import {', '.join(names)}", namespace := {})  # noqa: S102
    for name, chain in names.items():
        assert namespace[name] is attribute(chain), f"from {path} import {name}"


def test_a_missing_name_on_a_path_says_why():
    with pytest.raises(ImportError, match=r"cannot import name 'templat'"):
        exec("from transpiler.types.annotations import templat", {})  # noqa: S102
    with pytest.raises(AttributeError, match=r"qd\.types\.annotations has no `templat`; did you mean"):
        importlib.import_module("transpiler.types.annotations").templat  # noqa: B018
    with pytest.raises(ModuleNotFoundError, match=r"transpiler\.simt\.reductions"):
        importlib.import_module("transpiler.simt.reductions")


def test_the_paths_load_neither_numpy_nor_the_runtime_and_the_profiler_path_loads_it():
    """In a fresh interpreter: every path above, then ``transpiler.profiler`` (the runtime's
    kernel profiler, the one path that loads it, only when imported)."""
    script = (
        "import sys, importlib\n"
        f"for p in {sorted(set(PATHS) | set(FROM_IMPORTS))!r}: importlib.import_module(p)\n"
        "heavy = sorted(m for m in sys.modules if m == 'numpy' or m.startswith('transpiler.runtime'))\n"
        "assert not heavy, heavy\n"
        "import transpiler, transpiler.profiler as p\n"
        "assert p is transpiler.profiler and p.__name__ == 'transpiler.runtime.kernel_profiler'\n"
        "assert p.__spec__.name == p.__name__\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_deliberately_missing_paths_are_documented():
    text = (ROOT / "docs" / "differences.md").read_text()
    for path in ("quadrants.lang.misc", "quadrants.lang.simt.reductions", "quadrants.types.enums",
                 "quadrants.experimental", "quadrants.interop", "quadrants._test_tools"):
        assert f"`{path}`" in text, path

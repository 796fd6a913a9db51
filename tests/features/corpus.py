"""The feature corpus: one small kernel file per language feature in this folder (naga's
model). A file's docstring says what it shows; an ``# options: {...}`` comment line holds the
translation options as a Python literal, with per-target overrides under a target's name (a file
with more than one kernel names the one it shows as ``FEATURE``):

    # options: {"template_args": {"radius": 2}, "glsl": {"subgroup_size": 8}}

Each (feature, target) pair snapshots to ``snapshots/<feature>/<target>/``: the sources and
``<kernel>.json`` (the manifest), or ``<kernel>.error`` with the located diagnostic when the
target cannot express the feature; ``snapshots/<feature>/ir.txt`` is the typed IR. Every
snapshot is compiled by its target's real toolchain (tests/test_features.py)."""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import transpiler as qd
from transpiler.errors import display_path
from transpiler.targets import names

HERE = Path(__file__).resolve().parent
SNAPSHOTS = HERE / "snapshots"


@dataclass
class Feature:
    name: str            # the file's stem
    path: Path
    kernel: qd.Kernel
    options: dict        # as written: shared options plus per-target overrides

    def options_for(self, target: str) -> dict:
        shared = {k: v for k, v in self.options.items() if k not in names()}
        return {**shared, **self.options.get(target, {})}


def _options(path: Path) -> dict:
    for line in path.read_text().splitlines():
        if line.startswith("# options:"):
            return ast.literal_eval(line.split(":", 1)[1].strip())
    return {}


def _load(path: Path):
    name = f"feature_{path.stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def features() -> list[Feature]:
    out = []
    for path in sorted(HERE.glob("*.py")):
        if path.name == "corpus.py" or path.name.startswith("_"):
            continue
        module = _load(path)
        kernels = [v for v in vars(module).values() if isinstance(v, qd.Kernel)]
        if hasattr(module, "FEATURE"):  # a kernel made from another (a derivative: `FEATURE = f.grad`)
            kernels = [module.FEATURE]
        if len(kernels) != 1:
            raise AssertionError(f"{path.name}: a feature file holds exactly one @qd.kernel (or names the one it "
                                 f"shows as FEATURE), found {len(kernels)}")
        out.append(Feature(path.stem, path, kernels[0], _options(path)))
    return out


def snapshot_files(feature: Feature, target: str) -> dict[str, str]:
    """The files one (feature, target) pair snapshots to, by path relative to SNAPSHOTS."""
    base = f"{feature.name}/{target}"
    stem = feature.kernel.__name__
    try:
        tr = qd.translate(feature.kernel, target, warn=False, **feature.options_for(target))
    except qd.TranspileError as exc:
        return {f"{base}/{stem}.error": portable(exc) + "\n"}
    files = {f"{base}/{name}": text for name, text in tr.sources.items()}
    files[f"{base}/{stem}.json"] = json.dumps(tr.manifest, indent=2) + "\n"
    if tr.warnings:
        files[f"{base}/{stem}.warnings"] = "".join(f"{w}\n" for w in tr.warnings)
    return files


def portable(exc: qd.TranspileError) -> str:
    """The located diagnostic with the file's name alone (the same from any folder)."""
    text = str(exc)
    if exc.loc is not None:
        text = text.replace(display_path(exc.loc.file), os.path.basename(exc.loc.file), 1)
    return text


def ir_file(feature: Feature) -> dict[str, str]:
    """The typed IR, specialized (where the kernel asks) to a 32-wide subgroup."""
    from transpiler.ir.printer import dump_kernel
    from transpiler.pipeline import lower

    opts = feature.options
    kir = lower(feature.kernel, opts.get("template_args"), opts.get("arg_types"), opts.get("subgroup_size", 32))
    return {f"{feature.name}/ir.txt": dump_kernel(kir)}

"""Layers point down only (docs: the architecture's "Layers point down only"): every import in
the package, at module level or inside a function, relative or absolute, names a module of
its own layer or of one below. And no import cycle ties modules of different folders, nor
more than three modules of one.

The layers, bottom up, as the table below lists them: the IR, the errors, the language
(lang/: its descriptions and the library written in it, which imports lang.qd, not the
package), the analyses on the IR (passes/, capabilities passed in), the frontend and the
targets (with their toolchains), the driver (the pipeline, the offline cache, the C++
header), the execution (runtime/, which installs its hooks into lang), the public package,
and the tools (the CLI, the HTML page, the lowering tables).

The imports are read from the source with ``ast``, nothing imported. An import under ``if
TYPE_CHECKING:`` counts as any other, in both checks: it runs nothing, but the type it names
is a dependency a reader follows, so it may not name an upper layer nor close a cycle."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "transpiler"

# (layer, the package's top-level modules and folders in it), bottom up.
LAYERS = (
    ("core", ("ir",)),
    ("base", ("errors", "log_config", "cache", "version")),
    ("language", ("lang",)),
    ("analyses", ("passes",)),
    ("front/back", ("frontend", "targets", "toolchains")),
    ("driver", ("pipeline", "offline_cache", "header")),
    ("execution", ("runtime",)),
    ("public", ("__init__",)),
    ("tools", ("cli", "cli_batch", "cli_toolchains", "cli_cache", "inspect_html", "lowering_tables", "__main__")),
)
RANK = {part: rank for rank, (_, parts) in enumerate(LAYERS) for part in parts}


def module_name(path: Path, package: Path) -> str:
    parts = ("transpiler",) + path.relative_to(package).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(p, package): p for p in sorted(package.rglob("*.py"))}


def layer_of(module: str) -> int:
    """The rank of ``module``'s layer: by the package's top-level module or folder it is in."""
    parts = module.split(".")
    return RANK["__init__" if len(parts) == 1 else parts[1]]


def imports(module: str, path: Path, known: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, module of the package) for every import in ``path``: ``from . import x`` names
    the submodule x where there is one, else the package it is a name of."""
    tree = ast.parse(path.read_text(), str(path))
    here = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(here.split(".")[:len(here.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:  # `import transpiler.lang.ops` -> that module
                name = name.rpartition(".")[0]
            if name:
                found.append((node.lineno, name))
    return found


def import_graph(package: Path = PACKAGE) -> tuple[dict[str, Path], dict[str, list[tuple[int, str]]]]:
    known = modules(package)
    return known, {m: imports(m, p, known) for m, p in known.items()}


@functools.cache
def package_graph() -> tuple[dict[str, Path], dict[str, list[tuple[int, str]]]]:
    """The package's own graph, read once for the tests below."""
    return import_graph(PACKAGE)


def upward(known: dict[str, Path], graph: dict[str, list[tuple[int, str]]]) -> list[str]:
    """Each import that points up, as file:line, what it imports and the two layers."""
    out = []
    for module, found in graph.items():
        for line, target in found:
            if layer_of(target) > layer_of(module):
                where = known[module].relative_to(known["transpiler"].parent.parent)
                out.append(f"{where}:{line}: {module} ({LAYERS[layer_of(module)][0]}) imports {target} "
                           f"({LAYERS[layer_of(target)][0]})")
    return out


def cycles(graph: dict[str, list[tuple[int, str]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    edges = {m: sorted({t for _, t in found if t != m}) for m, found in graph.items()}
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def folder(module: str, known: dict[str, Path]) -> Path:
    return known[module].parent


def test_every_module_has_a_layer():
    known = package_graph()[0]
    assert len(known) > 100  # the package, not an empty folder
    for module in known:
        layer_of(module)  # a KeyError names a new top-level module or folder the table must place


def test_imports_point_down_only():
    found = upward(*package_graph())
    assert not found, "imports that point up a layer:\n" + "\n".join(found)


def test_no_cycle_across_folders_nor_of_more_than_three_modules():
    known, graph = package_graph()
    bad = [c for c in cycles(graph) if len(c) > 3 or len({folder(m, known) for m in c}) > 1]
    assert not bad, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in bad)


# ----------------------------------------------------------------------------- the checks themselves

def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "transpiler" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "transpiler"


@pytest.mark.parametrize("text, line", [
    ("import transpiler as qd\n", 1),
    ("def f():\n    from ..runtime import current\n", 2),
    ("def f():\n    from .. import ndarray\n", 2),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..runtime import current\n", 3),
])
def test_an_upward_import_is_named_with_its_line_and_layers(tmp_path, text, line):
    package = _package(tmp_path, {"__init__.py": "", "lang/__init__.py": "", "lang/field.py": text,
                                  "runtime/__init__.py": "current = None\n"})
    found = upward(*import_graph(package))
    assert len(found) == 1 and found[0].startswith(f"transpiler/lang/field.py:{line}: transpiler.lang.field (language)")


def test_downward_imports_pass(tmp_path):
    package = _package(tmp_path, {
        "__init__.py": "from .lang import field\n", "lang/__init__.py": "",
        "lang/field.py": "from typing import TYPE_CHECKING\nfrom ..ir import nodes\nif TYPE_CHECKING:\n"
                         "    from ..ir.nodes import Expr\n",
        "ir/__init__.py": "", "ir/nodes.py": "", "runtime/__init__.py": "from ..lang import field\n"})
    assert upward(*import_graph(package)) == []


def test_cycles_are_found_with_their_members(tmp_path):
    package = _package(tmp_path, {"__init__.py": "", "lang/__init__.py": "",
                                  "lang/a.py": "from . import b\n", "lang/b.py": "def f():\n    from .a import x\n",
                                  "lang/c.py": "from . import a\n"})
    assert cycles(import_graph(package)[1]) == [["transpiler.lang.a", "transpiler.lang.b"]]


def test_a_cycle_closed_by_an_annotation_import_is_found(tmp_path):
    package = _package(tmp_path, {"__init__.py": "", "lang/__init__.py": "", "lang/a.py": "from . import b\n",
                                  "lang/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                               "    from .a import A\n"})
    assert cycles(import_graph(package)[1]) == [["transpiler.lang.a", "transpiler.lang.b"]]

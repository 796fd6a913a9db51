"""Reading a kernel's Python source into an AST whose positions are those of the file."""
from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Callable

from ..errors import TranspileError
from ..ir.nodes import Loc


@dataclass(frozen=True, slots=True)
class ParsedFunction:
    node: ast.FunctionDef
    file: str
    indent: int  # columns removed by dedenting; added back in every Loc
    # One Loc per source position: lowering asks for the same node's place many times.
    locs: dict = field(default_factory=dict, compare=False, repr=False)

    def loc(self, node: ast.AST) -> Loc:
        key = (node.lineno, node.col_offset)
        hit = self.locs.get(key)
        if hit is None:
            hit = self.locs[key] = Loc(self.file, node.lineno, node.col_offset + self.indent)
        return hit


_cache: dict[object, ParsedFunction] = {}


def parse_function(fn: Callable) -> ParsedFunction:
    """Parse ``fn``'s definition once per code object (later calls hit the cache)."""
    code = getattr(fn, "__code__", None)
    # Code objects compare equal without their file name: the same function in a copy of the
    # file (at the same line) must still be located in its own file.
    key = (code, code.co_filename) if code is not None else fn
    hit = _cache.get(key)
    if hit is not None:
        return hit
    try:
        file = inspect.getsourcefile(fn) or inspect.getfile(fn)
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise TranspileError(f"cannot read the source of {fn.__qualname__}: {exc}",
                             hint="kernels must be defined in a .py file") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    first = text.splitlines()[0]
    indent = len(first) - len(first.lstrip())
    tree = ast.parse(dedented)
    ast.increment_lineno(tree, start - 1)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise TranspileError(f"{fn.__qualname__} is not a plain function definition",
                             Loc(file, start, indent))
    parsed = ParsedFunction(node, file, indent)
    _cache[key] = parsed
    return parsed

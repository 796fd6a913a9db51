"""Reading a kernel's Python source into an AST whose positions are those of the file."""
from __future__ import annotations

import ast
import inspect
from collections.abc import Callable

from ..errors import TranspileError
from ..ir.nodes import Loc
from ..ir.records import record, field


@record(frozen=True, slots=True)
class ParsedFunction:
    node: ast.FunctionDef  # parsed with the file's own lines and columns
    file: str
    # One Loc per source position: lowering asks for the same node's place many times.
    locs: dict = field(default_factory=dict, compare=False, repr=False)

    def loc(self, node: ast.AST) -> Loc:
        key = (node.lineno, node.col_offset)
        hit = self.locs.get(key)
        if hit is None:
            hit = self.locs[key] = Loc(self.file, node.lineno, node.col_offset)
        node._qd_loc = hit  # a node belongs to one parsed file: lowering's next ask is one getattr
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
        all_lines, first = inspect.findsource(fn)
    except (OSError, TypeError) as exc:
        raise TranspileError(f"cannot read the source of {fn.__qualname__}: {exc}",
                             hint="kernels must be defined in a .py file") from None
    start = first + 1
    if fn.__name__ == "<lambda>":
        parsed = ParsedFunction(_lambda_def(fn, all_lines, start, file), file)
        _cache[key] = parsed
        return parsed
    text = _definition(all_lines, first)
    node = _parse(text, start) if text is not None else None
    if node is None:  # the quick cut failed: let inspect find the block (it tokenizes)
        lines, start = inspect.getsourcelines(fn)
        text = "".join(lines)
        node = _parse(text, start)
    if not isinstance(node, ast.FunctionDef):
        raise TranspileError(f"{fn.__qualname__} is not a plain function definition",
                             Loc(file, start, len(text) - len(text.lstrip(" "))))
    parsed = ParsedFunction(node, file)
    _cache[key] = parsed
    return parsed


def _lambda_def(fn: Callable, lines: list[str], start: int, file: str) -> ast.FunctionDef:
    """A lambda as the function ``def <lambda>(args): return body`` at the lambda's place:
    the lambda of its line(s) whose body starts where its code does."""
    pos = next((p for p in fn.__code__.co_positions() if p[0] is not None), None)
    for end in range(start, min(start + 20, len(lines)) + 1):
        try:
            tree = ast.parse("\n" * (start - 1) + "".join(lines[start - 1:end]).lstrip())
        except SyntaxError:
            continue
        found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
        if pos is not None:
            exact = [n for n in found if (n.body.lineno, n.body.col_offset) == (pos[0], pos[2])]
            found = exact or found
        if found:
            lam = found[0]
            ret = ast.Return(lam.body, lineno=lam.body.lineno, col_offset=lam.body.col_offset)
            return ast.FunctionDef("<lambda>", lam.args, [ret], [], None, lineno=lam.lineno,
                                   col_offset=lam.col_offset, type_params=[])
    raise TranspileError(f"cannot read the source of the lambda at line {start}", Loc(file, start, 0))


def _definition(lines: list[str], first: int) -> str | None:
    """The definition starting at ``lines[first]``: its one-line decorators and its def at
    one indentation, then every line up to the next one indented no deeper (blank lines and
    comments aside). None where that shape does not hold (a decorator over several lines);
    a line that ends it early (inside a string or brackets) leaves text that does not
    parse. Either way inspect's tokenizer then finds the end instead."""
    indent = len(lines[first]) - len(lines[first].lstrip())
    end = first
    while end < len(lines) and lines[end].lstrip().startswith("@"):
        end += 1
    if end == len(lines) or not lines[end].lstrip().startswith(("def ", "async def ")) \
            or len(lines[end]) - len(lines[end].lstrip()) != indent:
        return None
    end += 1
    while end < len(lines):
        body = lines[end].strip()
        if body and not body.startswith("#") and len(lines[end]) - len(lines[end].lstrip()) <= indent:
            break
        end += 1
    return "".join(lines[first:end])


def _parse(text: str, start: int) -> ast.AST | None:
    """The statement ``text`` (a definition from line ``start`` of its file) holds, parsed
    with the file's line numbers and columns: blank lines in front rather than renumbering
    every node, and an indented definition (a method, a kernel defined in a function) inside
    an `if` rather than dedented (a line at column 0 inside a string would stop dedenting)."""
    indented = text[:1] in (" ", "\t")
    try:
        tree = ast.parse("\n" * (start - 1 - indented) + ("if 1:\n" if indented else "") + text)
    except SyntaxError:
        return None
    return tree.body[0].body[0] if indented else tree.body[0]

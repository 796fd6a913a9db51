"""The Jinja2 environment the targets render with: ``templates/`` beside the package in a
checkout (``transpiler/templates`` once installed), plus any folders a target brings of its
own (a target defined outside the package)."""
from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path

from ..cache import directory as cache_directory
from ..errors import TranspileError
from ..ir.memo import freeze

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

    import jinja2


def templates_dir() -> Path:
    """``templates/`` beside the package in a checkout, ``transpiler/templates`` once installed."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "templates", here / "templates"):
        if (candidate / "cuda").is_dir():
            return candidate
    raise FileNotFoundError("the transpiler templates are missing")


@cache
def jinja_env(extra_dirs: tuple[str, ...] = ()) -> jinja2.Environment:
    """One environment per search path: a target's own folders first, then the package's."""
    import jinja2  # noqa: PLC0415 - Jinja2 loads when a template first renders, not at import

    syntax = dict(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([*extra_dirs, str(templates_dir())]),
        undefined=jinja2.StrictUndefined, bytecode_cache=_bytecode_cache(jinja2, syntax), auto_reload=False, **syntax,
    )
    env.filters["params"] = join_params
    env.filters["body"] = body
    return env


def _bytecode_cache(jinja2: ModuleType, syntax: dict):
    """Jinja's on-disk cache of compiled templates, beside the package's other caches (the
    cache ``jinja`` of transpiler/cache.py): parsing and compiling the templates was a third of
    a cold `emit --target all`. Entries are checked against the template source; the syntax
    options and Jinja's version, which change the compiled code too, are in the file name."""
    tag = hashlib.sha1(repr((jinja2.__version__, sorted(syntax.items()))).encode()).hexdigest()[:12]

    class Cache(jinja2.FileSystemBytecodeCache):
        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:  # its folder removed meanwhile (`transpiler cache clean`) or read-only
                pass

    folder = cache_directory("jinja")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:  # nowhere to keep it: compile every time
        return None
    return Cache(folder, pattern=f"__transpiler_{tag}_%s.cache")


def join_params(params: list[str]) -> str:
    """A parameter list on one line, or one parameter per line when that gets long."""
    one_line = ", ".join(params)
    if len(one_line) <= 90:
        return one_line
    return "\n    " + ",\n    ".join(params)


def body(lines: list[str]) -> str:
    """A function body's lines, indented, each ending its line: ``{\n{{ e.lines | body }}}``
    (one string instead of a template loop, which cost more than the rest of the module)."""
    return "".join(f"    {line}\n" for line in lines)


@cache
def template(name: str, extra_dirs: tuple[str, ...] = ()) -> jinja2.Template:
    return jinja_env(extra_dirs).get_template(name)


# Helper texts are a function of the helper (name, dtype, spelling, extras) and the target's
# constants alone: rendering each once per process keeps Jinja's macro machinery (a module
# per template, a context per call) out of every translation that needs the same helper.
_helper_texts: dict[tuple, str] = {}


def helper_texts(target: str, names: tuple[str, ...], extra_dirs: tuple[str, ...], values: dict,
                 helpers: list) -> list[str]:
    """Each helper's text, from the first template of ``names`` that defines its macro,
    rendered with ``values`` (the target's constants)."""
    base = (target, names, extra_dirs, freeze(values))
    modules = None
    out = []
    for h in helpers:
        key = base + (h.name, h.dtype, h.ctype, freeze(h.extra))
        text = _helper_texts.get(key)
        if text is None:
            if modules is None:
                modules = [template(name, extra_dirs).make_module(values) for name in names]
            macro = next((getattr(m, h.name) for m in modules if hasattr(m, h.name)), None)
            if macro is None:
                raise TranspileError(f"internal error: the {target} target has no helper {h.name!r}")
            if len(_helper_texts) > 4096:  # a target that passes fresh unhashable values each call
                _helper_texts.clear()
            text = _helper_texts[key] = str(macro(h))
        out.append(text)
    return out

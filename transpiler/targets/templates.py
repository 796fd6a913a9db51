"""The Jinja2 environment the targets render with: ``templates/`` beside the package in a
checkout (``transpiler/templates`` once installed), plus any folders a target brings of its
own (a target defined outside the package)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path


def templates_dir() -> Path:
    """``templates/`` beside the package in a checkout, ``transpiler/templates`` once installed."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "templates", here / "templates"):
        if (candidate / "cuda").is_dir():
            return candidate
    raise FileNotFoundError("the transpiler templates are missing")


@lru_cache(maxsize=None)
def jinja_env(extra_dirs: tuple[str, ...] = ()):
    """One environment per search path: a target's own folders first, then the package's."""
    import jinja2

    syntax = dict(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([*extra_dirs, str(templates_dir())]),
        undefined=jinja2.StrictUndefined, bytecode_cache=_bytecode_cache(jinja2, syntax), **syntax,
    )
    env.filters["params"] = join_params
    return env


def _bytecode_cache(jinja2, syntax: dict):
    """Jinja's on-disk cache of compiled templates (its per-user temp directory, which it
    checks is private): parsing and compiling the templates was a third of a cold
    `emit --target all`. Entries are checked against the template source; the syntax
    options and Jinja's version, which change the compiled code too, are in the file name."""
    import hashlib

    tag = hashlib.sha1(repr((jinja2.__version__, sorted(syntax.items()))).encode()).hexdigest()[:12]
    try:
        return jinja2.FileSystemBytecodeCache(pattern=f"__transpiler_{tag}_%s.cache")
    except (OSError, RuntimeError):  # no usable temp directory: compile every time
        return None


def join_params(params: list[str]) -> str:
    """A parameter list on one line, or one parameter per line when that gets long."""
    one_line = ", ".join(params)
    if len(one_line) <= 90:
        return one_line
    return "\n    " + ",\n    ".join(params)


@lru_cache(maxsize=None)
def template(name: str, extra_dirs: tuple[str, ...] = ()):
    return jinja_env(extra_dirs).get_template(name)

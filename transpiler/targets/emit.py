"""From typed IR to source files and a manifest, for any target: the parts every target
shares (entry-point bodies, grid rules, the manifest) live here; a target supplies its
dialect, its signature and its Jinja template."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..ir import nodes as ir
from ..passes.block_votes import emulate_block_votes
from ..passes.legalize import legalize_atomics
from ..passes.tasks import task_loop
from .base import Dialect, Helper, Renderer

GENERATOR = "transpiler 0.1.0"
MAX_BLOCKS = 65535  # grid-stride loops cover larger ranges; every API accepts this many


def templates_dir() -> Path:
    """``templates/`` beside the package in a checkout, ``transpiler/templates`` once installed."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "templates", here / "templates"):
        if (candidate / "cuda").is_dir():
            return candidate
    raise FileNotFoundError("the transpiler templates are missing")


@lru_cache(maxsize=None)
def jinja_env():
    import jinja2

    syntax = dict(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
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
def template(name: str):
    return jinja_env().get_template(name)


@dataclass
class EntryPoint:
    name: str
    kind: str
    block_dim: int
    origin: str
    params: list[str]
    lines: list[str]
    task: ir.Task
    shared_bytes: int = 0
    extras: dict = field(default_factory=dict)  # target-specific template values


class Target:
    name = ""
    dialect: Dialect
    template = ""
    file_ext = ""
    one_file_per_task = False
    language = ""  # the header line's language and version
    renderer_class = Renderer  # a target whose language needs other expression spellings subclasses it

    # ---------------------------------------------------------------- per target

    def subgroup_size(self, options: dict) -> int | None:
        """The subgroup width code for this target is specialized to (None: unknown)."""
        return self.dialect.subgroup_size

    def signature(self, r: Renderer, kernel: ir.Kernel, task: ir.Task) -> list[str]:
        raise NotImplementedError

    def param_manifest(self, kernel: ir.Kernel) -> list[dict]:
        raise NotImplementedError

    def requirements(self, features: set[str], used_types: set[str]) -> dict:
        return {}

    def module_context(self, entries: list[EntryPoint], helpers: list[Helper], features: set[str],
                       used_types: set[str]) -> dict:
        return {}

    # ---------------------------------------------------------------- shared

    def render_entry(self, kernel: ir.Kernel, task: ir.Task, options: dict) -> tuple[EntryPoint, Renderer]:
        r = self.renderer_class(self.dialect, line_directives=bool(options.get("line_directives")))
        r.block_dim = task.block_dim if task.kind == "parallel" else None
        params = self.signature(r, kernel, task)
        self.declare_shared(r, task)
        body = task_loop(task)
        r.block(body, 0)
        origin = f"{os.path.basename(task.loc.file)}:{task.loc.line}"
        shared = sum(s.type.nbytes for s in task.shared)
        return EntryPoint(task.name, task.kind, task.block_dim if task.kind == "parallel" else 1,
                          origin, params, r.lines, task, shared), r

    def declare_shared(self, r: Renderer, task: ir.Task) -> None:
        """Declare the task's shared arrays at the top of its entry point (static
        allocation: one per block, whatever loop the SharedArray call sits in)."""
        for array in task.shared:
            name = r.declare_name(array, array.name)
            r.used_types.add(array.type.dtype.name)
            r.put(0, self.dialect.shared_decl(r, array, name), array.loc)

    def header_line(self, kernel: ir.Kernel) -> str:
        return f"{self.language}. Generated by {GENERATOR} from {os.path.basename(kernel.file)}; do not edit."

    def translate(self, kernel: ir.Kernel, options: dict) -> tuple[dict[str, str], dict]:
        if not self.dialect.has_block_votes:
            kernel = emulate_block_votes(kernel)
        kernel = legalize_atomics(kernel, self.dialect)
        entries, helpers, features, used_types = [], {}, set(), set()
        renderers = []
        for task in kernel.tasks:
            entry, r = self.render_entry(kernel, task, options)
            entries.append(entry)
            renderers.append(r)
            for key, h in r.helpers.items():
                helpers.setdefault(key, h)
            features |= r.features
            used_types |= r.used_types
        sorted_helpers = [helpers[k] for k in sorted(helpers)]
        sources: dict[str, str] = {}
        base_ctx = dict(header=self.header_line(kernel), generator=GENERATOR, kernel=kernel.name)
        if self.one_file_per_task:
            for entry, r in zip(entries, renderers):
                hs = [r.helpers[k] for k in sorted(r.helpers)]
                ctx = dict(base_ctx, entry=entry, helpers=hs, features=r.features,
                           **self.module_context([entry], hs, r.features, r.used_types))
                sources[entry.name + self.file_ext] = template(self.template).render(ctx)
        else:
            ctx = dict(base_ctx, entries=entries, helpers=sorted_helpers, features=features,
                       **self.module_context(entries, sorted_helpers, features, used_types))
            sources[kernel.name + self.file_ext] = template(self.template).render(ctx)
        files = list(sources)
        manifest = {
            "kernel": kernel.name,
            "target": self.name,
            "generator": GENERATOR,
            "source": os.path.basename(kernel.file),
            "files": files,
            "entry_points": [self.entry_manifest(e, files[k] if self.one_file_per_task else files[0])
                             for k, e in enumerate(entries)],
            "params": self.param_manifest(kernel),
            "requirements": self.requirements(features, used_types),
            "subgroup_size": self.dialect.subgroup_size,
        }
        return sources, manifest

    def entry_manifest(self, e: EntryPoint, file: str) -> dict:
        task = e.task
        if task.kind == "serial":
            grid = {"rule": "single", "blocks": 1}
        else:
            env = uniform_env(task)
            grid = {
                "rule": "ceil_div",
                "extent": [{"begin": grid_text(b, env), "end": grid_text(x, env)} for b, x in task.ranges],
                "max_blocks": MAX_BLOCKS,
            }
        return {"name": e.name, "file": file, "kind": task.kind, "block_dim": e.block_dim,
                "shared_bytes": e.shared_bytes, "grid": grid, "source_line": task.loc.line}


def uniform_env(task: ir.Task) -> dict[int, ir.Expr]:
    """The values of the top-level locals a task recomputes first (its range may use them)."""
    env: dict[int, ir.Expr] = {}
    for st in task.prelude:
        if isinstance(st, ir.Declare) and st.init is not None:
            env[id(st.var)] = st.init
        elif isinstance(st, ir.Assign):
            env[id(st.var)] = st.value
    return env


_GRID_OPS = {"add": "+", "sub": "-", "mul": "*", "truncdiv": "/", "truncmod": "%",
             "lshift": "<<", "rshift": ">>", "bitand": "&", "bitor": "|", "bitxor": "^"}


def grid_text(e: ir.Expr, env: dict[int, ir.Expr]) -> str:
    """A C expression for a range bound over parameter names and ``NAME_shape_K`` (a host
    computes the grid from it; Python's // and % are floor-based, spelled as functions)."""
    if isinstance(e, ir.Const):
        return str(int(e.value)) if not isinstance(e.value, float) else repr(e.value)
    if isinstance(e, ir.ParamRef):
        return e.param.name
    if isinstance(e, ir.Shape):
        return f"{e.array.name}_shape_{e.dim}"
    if isinstance(e, ir.LocalRef) and id(e.var) in env:
        return grid_text(env[id(e.var)], env)
    if isinstance(e, ir.Cast):
        return grid_text(e.a, env)
    if isinstance(e, ir.Unary) and e.op == "neg":
        return f"(-{grid_text(e.a, env)})"
    if isinstance(e, ir.BinOp) and e.op in _GRID_OPS:
        return f"({grid_text(e.a, env)} {_GRID_OPS[e.op]} {grid_text(e.b, env)})"
    if isinstance(e, ir.BinOp) and e.op in ("floordiv", "mod"):
        return f"{e.op}({grid_text(e.a, env)}, {grid_text(e.b, env)})"
    if isinstance(e, ir.Math) and e.fn in ("min", "max", "abs"):
        return f"{e.fn}({', '.join(grid_text(a, env) for a in e.args)})"
    raise TypeError(f"range bound not expressible on the host: {type(e).__name__}")


def shape_arg_names(p: ir.Param) -> list[str]:
    return [f"{p.name}_shape_{d}" for d in range(p.type.ndim)]

"""What a target is: an immutable description (capabilities, spellings, ABI and manifest
layout, templates, header context, toolchain checker, evidence for its lowerings), and the
shared way every target renders a translation from its ``TranslationContext``.

Nothing here or in a target subclass keeps state between calls: ``render`` reads the
context and fills it; the next call gets a fresh one.
"""
from __future__ import annotations

import os
from typing import Any

from ..ir import nodes as ir
from ..ir.evaluate import uniform_env
from ..ir.walk import called_by
from ..passes.capabilities import Capabilities
from ..passes.prints import HEADER as PRINT_HEADER
from ..passes.prints import WORDS as PRINT_WORDS
from ..passes.tasks import task_loop
from .context import EntryPoint, Needs, Options, TranslationContext, Usage
from .dialect import Dialect
from .renderer import Renderer
from .templates import helper_texts, template

GENERATOR = "transpiler 0.1.0"
MAX_BLOCKS = 65535  # grid-stride loops cover larger ranges; every API accepts this many
# Blocks for a task whose range is read on the device (the host cannot size its grid): its
# grid-stride loop is correct with any number, this many keep a large GPU busy.
DYNAMIC_BLOCKS = 1024


class Target:
    """One target language. Subclasses are tables and pure functions of the context."""

    name = ""
    title = ""                        # the language as people name it ("Metal"), for messages
    dialect: Dialect
    caps = Capabilities()
    why_not: dict[str, str] = {}      # capability -> why the target lacks it (error messages)
    renderer_class = Renderer         # a target whose expressions need other spellings subclasses it
    needs_class = Needs               # the typed requirements rendering discovers
    file_ext = ""
    one_file_per_task = False         # GLSL: one shader per task
    module_template = ""
    helper_templates: tuple[str, ...] = ()  # searched in order for a helper's macro
    header_template = ""
    template_dirs: tuple[str, ...] = ()     # a target's own template folders (out-of-tree targets)
    default_subgroup_size: int | None = None
    checker: str | None = None        # the module whose make_checker() compiles this target's output
    evidence: tuple[str, ...] = ()    # why each memory-order lowering was chosen (docs/lowering.md)
    # The CPU SIMT emulator's preprocessor defines for this dialect; None: it cannot run it.
    emulator_defines: tuple[str, ...] | None = None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is an immutable description; per-translation state "
                             "belongs in the TranslationContext")

    def __repr__(self) -> str:
        return f"<target {self.name}>"

    @property
    def has_header(self) -> bool:
        """Whether the target has a C++ embedding header (``header_template``; ``qd embed``)."""
        return bool(self.header_template)

    # ---------------------------------------------------------------- options

    def subgroup_size(self, options: dict) -> int | None:
        """The subgroup width code for this target is specialized to (None: unknown)."""
        return self.default_subgroup_size

    def options(self, options: dict) -> Options:
        return Options(subgroup_size=self.subgroup_size(options),
                       line_directives=bool(options.get("line_directives")),
                       fast_math=bool(options.get("fast_math")), wave32=bool(options.get("wave32")),
                       lavapipe=bool(options.get("lavapipe")))

    # ---------------------------------------------------------------- per target

    def stepped_indices(self, ctx: TranslationContext) -> bool:
        """Whether a multi-dimensional task's indices are stepped from one grid-stride iteration
        to the next (passes/tasks.py) rather than divided out of the linear index in each: where
        a thread runs its loop many times and division is slow."""
        return False

    def language(self, ctx: TranslationContext) -> str:
        """The header line's language and version."""
        raise NotImplementedError

    def layout(self, ctx: TranslationContext) -> Any:
        """The parameter layout every entry point shares (push constants, a params struct)."""
        return None

    def signature(self, r: Renderer, ctx: TranslationContext, task: ir.Task) -> list[str]:
        raise NotImplementedError

    def finish_entry(self, r: Renderer, ctx: TranslationContext, entry: EntryPoint) -> None:
        """Adjust a rendered entry point (e.g. declarations only the body showed were needed)."""

    def param_manifest(self, ctx: TranslationContext) -> list[dict]:
        raise NotImplementedError

    def requirements(self, ctx: TranslationContext) -> dict:
        return {}

    def finish_manifest(self, ctx: TranslationContext, manifest: dict) -> dict:
        return manifest

    def module_context(self, ctx: TranslationContext, entries: list[EntryPoint], usage: Usage) -> dict:
        """Template values for one source file holding ``entries``."""
        return {}

    def header_context(self, manifest: dict, common: dict) -> dict:
        """Template values for the C++ embedding header (``header.py`` gives ``common``)."""
        return {}

    # ---------------------------------------------------------------- shared

    def declare_shared(self, r: Renderer, task: ir.Task) -> None:
        """Declare the task's shared arrays at the top of its entry point (static
        allocation: one per block, whatever loop the SharedArray call sits in)."""
        for array in task.shared:
            name = r.declare_name(array, array.name)
            r.usage.types.add(array.type.dtype.name)
            r.put(0, self.dialect.shared_decl(r, array, name), array.loc)

    def render_entry(self, ctx: TranslationContext, task: ir.Task) -> EntryPoint:
        parallel = task.kind == "parallel"
        r = self.renderer_class(ctx, Usage(self.needs_class()), task.block_dim if parallel else None)
        params = self.signature(r, ctx, task)
        self.declare_shared(r, task)
        r.block(task_loop(task, self.stepped_indices(ctx)), 0)
        functions = [r.function(f) for f in called_by(ctx.kernel, task.code())]
        origin = f"{os.path.basename(task.loc.file)}:{task.loc.line}"
        shared = sum(s.type.nbytes for s in task.shared)
        entry = EntryPoint(ctx.names.entries[task.name], task.kind, task.block_dim if parallel else 1, origin, params,
                           r.lines, task, r.usage, shared, functions=functions)
        self.finish_entry(r, ctx, entry)
        return entry

    def header_line(self, ctx: TranslationContext) -> str:
        return f"{self.language(ctx)}. Generated by {GENERATOR} from {os.path.basename(ctx.kernel.file)}; do not edit."

    def helper_context(self, ctx: TranslationContext) -> dict:
        """What the helper templates read besides the helper itself: the target's constants,
        never the kernel's (the templates' StrictUndefined says so when one tries)."""
        return self.dialect.helper_values(ctx.options.subgroup_size)

    def render_file(self, ctx: TranslationContext, base: dict, entries: list[EntryPoint], usage: Usage) -> str:
        called = {f.name: f for e in entries for f in e.functions}
        functions = [called[f.name] for f in ctx.kernel.functions if f.name in called]
        values = dict(base, entries=entries, functions=functions, **self.module_context(ctx, entries, usage))
        if self.one_file_per_task:
            values["entry"] = entries[0]
        values["helpers"] = helper_texts(self.name, self.helper_templates, self.template_dirs, self.helper_context(ctx),
                                         usage.sorted_helpers())
        return template(self.module_template, self.template_dirs).render(values)

    def render(self, ctx: TranslationContext) -> tuple[dict[str, str], dict]:
        """The source files (in launch order) and the manifest of one translation."""
        ctx.layout = self.layout(ctx)
        ctx.usage = Usage(self.needs_class())
        for task in ctx.kernel.tasks:
            entry = self.render_entry(ctx, task)
            ctx.entries.append(entry)
            ctx.usage.merge(entry.usage)
        base = dict(header=self.header_line(ctx), generator=GENERATOR, kernel=ctx.kernel.name)
        sources: dict[str, str] = {}
        if self.one_file_per_task:
            for entry in ctx.entries:
                sources[entry.name + self.file_ext] = self.render_file(ctx, base, [entry], entry.usage)
        else:
            sources[ctx.kernel.name + self.file_ext] = self.render_file(ctx, base, ctx.entries, ctx.usage)
        files = list(sources)
        manifest = {
            "kernel": ctx.kernel.name,
            "target": self.name,
            "generator": GENERATOR,
            "source": os.path.basename(ctx.kernel.file),
            "files": files,
            "entry_points": [entry_manifest(e, files[k] if self.one_file_per_task else files[0])
                             for k, e in enumerate(ctx.entries)],
            "params": self.param_manifest(ctx),
            "requirements": self.requirements(ctx),
            "subgroup_size": ctx.options.subgroup_size,
        }
        fields = [p for p in ctx.kernel.params if p.role == "field"]
        if fields:  # module storage: one buffer per field, shared by every kernel that uses it
            manifest["fields"] = [field_entry(p, ctx.kernel.bindings[p.name].shape) for p in fields]
        if ctx.kernel.loops:  # qd.graph.do_while: the host repeats these entry points while the flag is nonzero
            manifest["loops"] = [{"first": loop.first, "stop": loop.stop, "flag": loop.flag.name, "parent": loop.parent}
                                 for loop in ctx.kernel.loops]
        if ctx.kernel.asserts:  # debug mode: what a nonzero word 0 of the `assert` buffer reports
            manifest["asserts"] = {"param": next(p.name for p in ctx.kernel.params if p.role == "assert"),
                                   "checks": ctx.kernel.asserts}
        if ctx.kernel.prints:  # print(): the records the `print` buffer holds after the launch, and their text
            manifest["prints"] = {"param": next(p.name for p in ctx.kernel.params if p.role == "print"),
                                  "words": PRINT_WORDS, "header_words": PRINT_HEADER, "sites": ctx.kernel.prints}
        results = [p for p in ctx.kernel.params if p.role == "result"]
        paths = ctx.kernel.result_paths
        if results and not paths:
            manifest["result"] = result_entry(results[0])
        elif results:  # a struct or a tuple: a buffer per scalar or vector / matrix part, in order
            manifest["results"] = [{"path": paths[p.name], **result_entry(p)} for p in results]
        return sources, self.finish_manifest(ctx, manifest)


def result_entry(p: ir.Param) -> dict:
    return {"param": p.name, "dtype": p.type.dtype.name,
            **({"element_shape": list(p.type.element_shape)} if p.type.element_shape else {})}


def entry_manifest(e: EntryPoint, file: str) -> dict:
    task = e.task
    if task.kind == "serial":
        grid = {"rule": "single", "blocks": 1}
    elif task.dynamic:  # its range is read on the device: any grid works, this one fills a large GPU
        grid = {"rule": "fixed", "blocks": DYNAMIC_BLOCKS}
    else:
        env = uniform_env(task)
        grid = {
            "rule": "ceil_div",
            "extent": [{"begin": grid_text(b, env), "end": grid_text(x, env)} for b, x in task.ranges],
            "max_blocks": MAX_BLOCKS,
        }
    return {"name": e.name, "file": file, "kind": task.kind, "block_dim": e.block_dim,
            "shared_bytes": e.shared_bytes, "grid": grid, "source_line": task.loc.line}


_GRID_COMPARE = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
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
    if isinstance(e, ir.Unary) and e.op in ("neg", "not"):
        return f"({'-' if e.op == 'neg' else '!'}{grid_text(e.a, env)})"
    if isinstance(e, ir.Compare):
        return f"({grid_text(e.a, env)} {_GRID_COMPARE[e.op]} {grid_text(e.b, env)})"
    if isinstance(e, ir.Logical):
        return f"({grid_text(e.a, env)} {'&&' if e.op == 'and' else '||'} {grid_text(e.b, env)})"
    if isinstance(e, ir.Select):
        return f"({grid_text(e.cond, env)} ? {grid_text(e.a, env)} : {grid_text(e.b, env)})"
    if isinstance(e, ir.BinOp) and e.op in _GRID_OPS:
        return f"({grid_text(e.a, env)} {_GRID_OPS[e.op]} {grid_text(e.b, env)})"
    if isinstance(e, ir.BinOp) and e.op in ("floordiv", "mod"):
        return f"{e.op}({grid_text(e.a, env)}, {grid_text(e.b, env)})"
    if isinstance(e, ir.Math) and e.fn in ("min", "max", "abs"):
        return f"{e.fn}({', '.join(grid_text(a, env) for a in e.args)})"
    raise TypeError(f"range bound not expressible on the host: {type(e).__name__}")


def field_entry(p: ir.Param, shape: tuple[int, ...]) -> dict:
    """The manifest's description of a field the kernel uses: what to allocate once for the
    module (its parameter is named like it)."""
    n = 1
    for k in shape:
        n *= k
    return {"name": p.name, "dtype": p.type.dtype.name, "shape": list(shape), **element_entry(p),
            "bytes": n * p.type.element_size * p.type.dtype.nbytes}


def element_entry(p: ir.Param) -> dict:
    """The manifest's description of an ndarray of vectors or matrices: the element's shape
    (its scalars follow the outer indices, packed, as in NumPy's ``(*shape, *element_shape)``
    array) and the bytes from one element to the next."""
    es = p.type.element_shape
    out = {"element_shape": list(es), "element_stride": p.type.element_size * p.type.dtype.nbytes} if es else {}
    if p.type.static_shape is not None:  # a field: its extents are in the code, not passed
        out["shape"] = list(p.type.static_shape)
    return out


def param_role(p: ir.Param) -> dict:
    """The manifest's ``role`` of a parameter the kernel adds itself (a scratch slot, the
    result, the random seed)."""
    if not p.hidden:
        return {}
    return {"role": p.role, "of": p.of} if p.of else {"role": p.role}


def shape_arg_names(p: ir.Param) -> list[str]:
    return [f"{p.name}_shape_{d}" for d in range(p.type.passed_extents)]

"""Everything one translation learns, in one object created per call: the options it runs
with, the kernel after the target's passes, the names parameters take in the target, the
target's parameter layout, and what the rendered code turned out to need. Targets read and
fill it; they keep nothing of their own between calls."""
from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from ..ir import nodes as ir
from ..ir.records import record, field
from ..passes.capabilities import TargetProfile
from .dialect import Dialect, Helper


class TranslatingTarget(TargetProfile, Protocol):
    """What a translation reads of its target (target.py's ``Target``, which creates the
    context and so sits above it): the passes' profile and the dialect's spellings."""

    dialect: Dialect


@record
class Needs:
    """The requirements rendering discovers (a Vulkan feature, a Metal version, ...). Each
    target subclasses it with typed fields; ``merge`` folds an entry point's into the
    module's: sets unite, flags or, the first value set wins."""

    def merge(self, other: Needs) -> None:
        for f in dataclasses.fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, set):
                mine |= theirs
            elif isinstance(mine, bool):
                setattr(self, f.name, mine or theirs)
            elif mine is None:
                setattr(self, f.name, theirs)


@record
class Usage:
    """What one entry point (or, merged, a whole module) uses: helper functions by
    (name, dtype), dtypes spelled anywhere, and the target's typed ``needs``."""

    needs: Needs
    helpers: dict[tuple[str, str], Helper] = field(default_factory=dict)
    types: set[str] = field(default_factory=set)
    line_directives: bool = False  # a `#line` directive was written

    def merge(self, other: Usage) -> None:
        for key, h in other.helpers.items():
            self.helpers.setdefault(key, h)
        self.types |= other.types
        self.needs.merge(other.needs)
        self.line_directives |= other.line_directives

    def sorted_helpers(self) -> list[Helper]:
        """Helpers in name order: deterministic, and the order the templates expect."""
        return [self.helpers[k] for k in sorted(self.helpers)]


@record(frozen=True)
class Options:
    """The translation options a target reads (validated by ``Target.options``)."""

    subgroup_size: int | None = None  # the width the code is specialized to
    line_directives: bool = False     # `#line` directives pointing at the Python
    fast_math: bool = False           # let the compiler fuse floats (GLSL: reassociate too)
    wave32: bool = False              # HIP: 32-lane wavefronts (RDNA)
    lavapipe: bool = False            # GLSL: work around Mesa's lavapipe (see GlslRenderer.stmt_Fence)


@record
class ParamNames:
    """Every parameter's and ndarray extent's name as the target spells it, chosen once per
    translation so every entry point (and every layout) agrees."""

    params: dict[int, str]              # id(param) -> name
    shapes: dict[tuple[int, int], str]  # (id(param), dim) -> name
    taken: set[str]
    functions: dict[str, str] = field(default_factory=dict)  # a real function's IR name -> name
    entries: dict[str, str] = field(default_factory=dict)    # a task's name -> its entry point's

    @classmethod
    def choose(cls, dialect: Dialect, kernel: ir.Kernel) -> ParamNames:
        """In parameter order, each ndarray's extents right after it (``NAME_shape_K``), as
        the entry points' signatures list them, so a suffix lands the same everywhere."""
        taken: set[str] = set()

        def declare(base: str, avoid: frozenset[str] = frozenset()) -> str:
            base = dialect.identifier(base)
            name, k = base, 1
            while name in taken or name in avoid:
                name = f"{base}_{k}"
                k += 1
            taken.add(name)
            return name

        params, shapes = {}, {}
        for p in kernel.params:
            # The kernel's own buffers are named qd_*, which no user name can take; a field is
            # named after it, like a parameter the user wrote.
            params[id(p)] = p.name if p.hidden and p.role != "field" else declare(p.name)
            taken.add(params[id(p)])
            if p.is_array:
                for d in range(p.type.passed_extents):
                    shapes[(id(p), d)] = declare(f"{p.name}_shape_{d}")
        # Functions are named after the parameters (whose names are fixed first), never as
        # an entry point, and no local may then shadow them.
        # Entry points keep the task's name unless the language reserves it (a kernel named
        # `kernel` on Metal); the manifest gives the name emitted.
        entries = {t.name: dialect.entry_identifier(t.name) for t in kernel.tasks}
        functions = {f.name: declare(f.name, frozenset(entries.values())) for f in kernel.functions}
        return cls(params, shapes, taken, functions, entries)

    def of(self, p: ir.Param) -> str:
        return self.params[id(p)]

    def shape(self, p: ir.Param, dim: int) -> str:
        return self.shapes[(id(p), dim)]


@record
class RenderedFunction:
    """A @qd.real_func's definition as one entry point rendered it (the same text in every
    entry point that calls it)."""

    name: str
    head: str            # qualifier, result type and name
    params: list[str]
    lines: list[str]
    origin: str          # file.py:LINE of its def
    forward: bool        # declared before the definitions (a recursion cycle calls it early)


@record
class EntryPoint:
    name: str
    kind: str
    block_dim: int
    origin: str
    params: list[str]
    lines: list[str]
    task: ir.Task
    usage: Usage
    shared_bytes: int = 0
    extras: dict = field(default_factory=dict)  # target-specific template values
    functions: list[RenderedFunction] = field(default_factory=list)  # the real functions it calls


@record
class TranslationContext:
    target: TranslatingTarget
    kernel: ir.Kernel        # after the target's passes (block-vote emulation, atomics legalization)
    options: Options
    names: ParamNames
    layout: Any = None       # the target's parameter layout (push constants, a params struct)
    entries: list[EntryPoint] = field(default_factory=list)
    usage: Usage | None = None  # every entry point's, merged
    sources: dict[str, str] = field(default_factory=dict)  # the result: file name -> text, in launch order
    manifest: dict = field(default_factory=dict)

    @property
    def dialect(self) -> Dialect:
        return self.target.dialect

    @property
    def needs(self) -> Needs:
        return self.usage.needs

"""``transpiler inspect FILE.py --html OUT.html``: one self-contained page with the Python
source beside every target's text, linked line by line.

The links come from the ``// file.py:LINE`` comment the renderer puts on every statement,
read by ``toolchains.line_origins`` (the parser the compile checks map messages with). The
page is plain HTML with its CSS and script inline (templates/html/inspect.html.j2), no
network; this module only gathers the data: the lines split into highlighted tokens, the
hazard warnings and refusals at their lines, the entry points of each manifest and, with
``--resources``, what the compile checks report. Same input, same bytes."""
from __future__ import annotations

import argparse
import collections
import itertools
import json
import keyword
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ToolchainMissing
from .targets.templates import template
from .toolchains import check_sources, line_origins

if TYPE_CHECKING:
    from .ir.nodes import Loc
    from .lang.kernel import BoundKernel, Kernel
    from .pipeline import Translation

# ------------------------------------------------------------------ a small highlighter

_NUMBER = r"(?<![\w.])(?:0[xXbBoO][0-9a-fA-F_]+|\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[uUlLfFhH]*"
_STRING = r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'"

# The words every C-like target spells its statements and types with: C/C++ plus the
# qualifiers of CUDA, HIP, GLSL and Metal.
C_KEYWORDS = frozenset("""
    auto bool break case char const constexpr continue default do double else enum extern false
    float for goto if inline int long return short signed sizeof static static_assert struct switch
    template true typedef typename union unsigned using void volatile while namespace
    int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t half
    __global__ __device__ __host__ __shared__ __forceinline__ __launch_bounds__ __restrict__
    kernel device constant threadgroup thread uint uchar ushort ulong atomic_int atomic_uint
    layout buffer uniform shared in out inout precise coherent readonly writeonly restrict
    vec2 vec3 vec4 ivec2 ivec3 ivec4 uvec2 uvec3 uvec4 dvec2 dvec3 dvec4 mat2 mat3 mat4 dmat2 dmat3 dmat4
""".split())

# name -> (token pattern, keywords, the class of a block that spans lines)
_SYNTAX = {
    "python": (re.compile(rf"(?P<com>#.*)|(?P<open>[rRbBuUfF]{{0,2}}(?:\"\"\"|'''))|"
                          rf"(?P<str>[rRbBuUfF]{{0,2}}(?:{_STRING}))|(?P<kw>@[\w.]+)|(?P<num>{_NUMBER})|(?P<word>[A-Za-z_]\w*)"),
               frozenset(keyword.kwlist) | {"self"}, "str"),
    "c": (re.compile(rf"(?P<com>//.*)|(?P<open>/\*)|(?P<str>{_STRING})|(?P<pp>^\s*#\s*\w+)|"
                     rf"(?P<num>{_NUMBER})|(?P<word>[A-Za-z_]\w*)"),
          C_KEYWORDS, "com"),
}


def highlight(lines: list[str], language: str) -> list[list[tuple[str, str]]]:
    """Each line as (class, text) tokens: ``kw``, ``com``, ``str``, ``num``, ``pp`` or ``""``
    (plain). Triple-quoted Python strings and C block comments carry over to later lines."""
    rx, keywords, block_class = _SYNTAX[language]
    out, closer = [], None
    for line in lines:
        tokens: list[tuple[str, str]] = []

        def add(cls: str, text: str, tokens: list[tuple[str, str]] = tokens) -> None:
            if tokens and tokens[-1][0] == cls:
                tokens[-1] = (cls, tokens[-1][1] + text)
            elif text:
                tokens.append((cls, text))

        pos = 0
        while pos < len(line):
            if closer:  # inside a block opened on this line or an earlier one
                end = line.find(closer, pos)
                stop = len(line) if end < 0 else end + len(closer)
                add(block_class, line[pos:stop])
                closer, pos = (closer if end < 0 else None), stop
                continue
            m = rx.search(line, pos)
            if m is None:
                add("", line[pos:])
                break
            add("", line[pos:m.start()])
            kind = m.lastgroup
            if kind == "open":
                add(block_class, m.group())
                closer = "*/" if language == "c" else m.group()[-3:]
            elif kind == "word":
                add("kw" if m.group() in keywords else "", m.group())
            else:
                add(kind, m.group())
            pos = m.end()
        out.append(tokens)
    return out


# ------------------------------------------------------------------ the page's data

def instantiations(items: list[str] | None) -> list[list[str]]:
    """The --template items of each instantiation: a NAME given several values gives one
    instantiation per value (every combination when several names are)."""
    by_name: dict[str, list[str]] = {}
    for item in items or []:
        by_name.setdefault(item.partition("=")[0], []).append(item)
    return [list(combo) for combo in itertools.product(*by_name.values())]


def grid_text(grid: dict, block_dim: int) -> str:
    """The manifest's grid rule in words (docs/manifest.md)."""
    if grid["rule"] == "single":
        return "1 block of 1 thread"
    if grid["rule"] == "fixed":
        return f"{grid['blocks']} blocks (the range is read on the device)"
    n = " * ".join(e["end"] if e["begin"] == "0" else f"({e['end']} - {e['begin']})" for e in grid["extent"])
    return f"min(ceil(n / {block_dim}), {grid['max_blocks']}) blocks, n = {n}"


def _diag(severity: str, targets: list[str], text: str) -> dict:
    return {"severity": severity, "targets": ", ".join(targets), "text": text}


def build_variant(vid: str, label: str, kernel: Kernel | BoundKernel, results: list, resources: bool) -> dict:
    """One kernel instantiation: its Python lines and one pane per target. ``results``:
    (target, Translation or TranspileError) in target order."""
    py_file = kernel.fn.__code__.co_filename
    base = os.path.basename(py_file)
    py_text = Path(py_file).read_text().splitlines()
    python = [{"n": n, "tokens": t, "diags": [], "mapped": False}
              for n, t in enumerate(highlight(py_text, "python"), start=1)]

    def at_python(loc: Loc | None) -> dict | None:
        if loc is None or os.path.basename(loc.file) != base or not 0 < loc.line <= len(python):
            return None
        return python[loc.line - 1]

    found: dict[tuple, dict] = {}  # (severity, loc, message) -> one diagnostic, for every target that gave it
    elsewhere = []  # those not at a line of this file (a refusal with no location)
    panes, entries, manifests = [], [], []
    for target, tr in results:
        pane = {"target": target, "language": "", "files": [], "refusal": None}
        panes.append(pane)
        problems = [("error", tr)] if isinstance(tr, Exception) else [(h.severity, h) for h in tr.warnings]
        for severity, p in problems:
            key = (severity, str(p.loc), p.message)
            if key not in found:
                found[key] = _diag(severity, [], f"{severity}: {p.message}" + (f"\nhint: {p.hint}" if p.hint else ""))
                line = at_python(p.loc)
                (line["diags"] if line is not None else elsewhere).append(found[key])
            found[key]["targets"] = ", ".join(filter(None, [found[key]["targets"], target]))
        if isinstance(tr, Exception):
            pane["refusal"] = str(tr)
            continue
        pane["language"] = tr.language
        hazards: dict[int, list] = {}
        for h in tr.warnings:
            if at_python(h.loc) is not None:
                hazards.setdefault(h.loc.line, []).append(h)
        for name, text in tr.sources.items():
            lines = text.splitlines()
            out = []
            for n, tokens, origin in zip(range(1, len(lines) + 1), highlight(lines, "c"), line_origins(text),
                                         strict=True):
                py = origin[1] if origin and origin[0] == base and 0 < origin[1] <= len(python) else None
                diags = []
                if py is not None:
                    python[py - 1]["mapped"] = True
                    for h in hazards.pop(py, []):  # a warning shows under the first line its Python line became
                        diags.append(_diag(h.severity, [target], f"{h.severity}: {h.message}"))
                out.append({"n": n, "tokens": tokens, "py": py, "diags": diags})
            pane["files"].append({"name": name, "lines": out})
        usage = check_resources(target, tr) if resources else {}
        for e in tr.manifest["entry_points"]:
            entries.append({"target": target, "name": e["name"], "file": e["file"], "kind": e["kind"],
                            "block_dim": e["block_dim"], "shared_bytes": e["shared_bytes"],
                            "grid": grid_text(e["grid"], e["block_dim"]), "line": e["source_line"],
                            "usage": usage.get((e["file"], e["name"])) or usage.get((e["file"], e.get("entry")))
                            or usage.get("note", "")})
        manifests.append({"target": target, "requirements": json.dumps(tr.manifest["requirements"], sort_keys=True),
                          "json": json.dumps(tr.manifest, indent=2)})
    return {"id": vid, "label": label, "python_file": base, "python": python, "panes": panes,
            "elsewhere": elsewhere, "entries": entries, "manifests": manifests, "resources": resources}


def check_resources(target: str, tr: Translation) -> dict:
    """(file, entry point) -> "registers 40, spill_stores 0, ..." from the target's compile
    check (``check --resources``), or {"note": why not} when its toolchain is missing."""
    try:
        verdicts = check_sources(target, tr.sources, tr.manifest, {"resources": True})
    except ToolchainMissing as exc:
        return {"note": f"not measured: {exc.tool} is not installed"}
    out = {}
    for v in verdicts:
        if not v.ok:
            out["note"] = f"{v.tool} rejected {v.file}"
        for entry, figures in v.details.items():
            out[(v.file, entry)] = ", ".join(f"{k.replace('_', ' ')} {val}" for k, val in figures.items())
    if not out:
        out["note"] = f"{verdicts[0].tool if verdicts else target}: no figures"
    return out


def collect(args: argparse.Namespace, translations: Callable) -> list[dict]:
    """The page's variants: every picked kernel, per --template instantiation, translated for
    every target asked for by the CLI's ``translations``. A target's refusal stays in its pane;
    a kernel every target refuses is the user's error and raises it (the CLI prints it as
    file.py:LINE:COL)."""
    combos = instantiations(args.template)
    variants, seen = [], set()
    for items in combos:
        results = translations(argparse.Namespace(**{**vars(args), "template": items}), keep_going=True)
        by_kernel: dict[int, tuple] = {}
        for kernel, target, tr in results:
            by_kernel.setdefault(id(kernel), (kernel, []))[1].append((target, tr))
        for kernel, per_target in by_kernel.values():
            if all(isinstance(tr, Exception) for _, tr in per_target):
                raise per_target[0][1]
            key = (kernel.__name__, tuple((t, str(tr) if isinstance(tr, Exception) else tuple(tr.sources.values()))
                                          for t, tr in per_target))
            if key in seen:  # this kernel does not use the template that differs
                continue
            seen.add(key)
            variants.append(build_variant(f"v{len(variants)}", kernel.__name__, kernel, per_target, args.resources))
            variants[-1]["template"] = items
    counts = collections.Counter(v["label"] for v in variants)
    for v in variants:  # name the --template values of a kernel that has several instantiations
        if counts[v["label"]] > 1:
            v["label"] += f" ({', '.join(v['template'])})"
    return variants


def render_page(args: argparse.Namespace, translations: Callable) -> str:
    """The ``inspect --html`` page; ``translations`` is the CLI's, which imports this module
    (the page is the CLI's, and never imports it back)."""
    variants = collect(args, translations)
    title = f"{os.path.basename(args.file)}: transpiler inspect"
    return template("html/inspect.html.j2").render(title=title, variants=variants)

"""The C++ embedding header: one ``<kernel>.<target>.h`` per translation, for a host that
compiles or loads the generated code itself (NVRTC, hipRTC, glslang, Metal).

It is built from the translation's sources and manifest only (plus the language name), so
it states exactly the contract the manifest documents: the source text, the entry points in
launch order, a parameter struct laid out as the target binds it (proved by
``static_assert``), the bindings or argument order, block and shared-memory sizes,
requirements, and grid helpers. The parts every target shares are here; each target's
``header_context`` adds its own, and its text lives in its ``header_template`` (over
``templates/common/``).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .targets import get_target
from .targets.cxx import CXX_KEYWORDS
from .targets.host_abi import HOST_TYPES
from .targets.target import GENERATOR
from .targets.templates import template

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .pipeline import Translation

# Names a member must not take besides the keywords: standard macros (and GNU mode's
# predefined `unix`/`linux`), which would rewrite the member's name.
MACRO_NAMES = frozenset("""
NULL EOF offsetof assert errno stdin stdout stderr unix linux major minor
""".split())
# The helper functions the manifest's grid expressions call (see targets/emit.grid_text).
GRID_FUNCTIONS = ("floordiv", "mod", "min", "max", "abs")
# Namespaces the header itself puts under qd::.
RESERVED_NAMESPACES = frozenset({"embed"})
_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)|(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
                    r"|(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^(),<>?:!]))")


def header_name(manifest: dict) -> str:
    return f"{manifest['kernel']}.{manifest['target']}.h"


def render_header(tr: Translation) -> str:
    """The header text for one translation."""
    target = get_target(tr.target)
    if not target.header_template:
        raise ValueError(f"the {target.name} target has no C++ embedding header")
    values = common_context(tr.sources, tr.manifest, tr.language)
    values.update(target.header_context(tr.manifest, values))
    return template(target.header_template, target.template_dirs).render(values)


# ----------------------------------------------------------------------------- names

class Names:
    """C++ identifiers for the manifest's names: keywords, macros and reserved spellings
    get a suffix, and no two names in one scope collide."""

    def __init__(self, taken: set[str] | None = None):
        self.taken = set(taken or ())
        self.map: dict[str, str] = {}

    def add(self, name: str) -> str:
        base = name
        if "__" in base or re.match(r"_[A-Z]", base):
            base = "qd" + base.replace("__", "_")   # reserved to the implementation in C++
        if base in CXX_KEYWORDS or base in MACRO_NAMES:
            base += "_"
        out = base
        while out in self.taken:
            out += "_"
        self.taken.add(out)
        self.map[name] = out
        return out


def cxx_namespace(kernel: str) -> str:
    n = Names().add(kernel)
    return n + "_" if n in RESERVED_NAMESPACES else n


def raw_string(text: str) -> str:
    """``text`` as a C++ raw string literal with a delimiter that does not occur in it."""
    for k in range(100):
        delim = "qd" if k == 0 else f"qd{k}"
        if f"){delim}\"" not in text:
            return f'R"{delim}({text}){delim}"'
    raise ValueError("no raw-string delimiter fits")  # pragma: no cover - needs 100 crafted collisions


def c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def string_array(items: Iterable[str]) -> str:
    """A std::array initializer of C strings (``{}`` when empty)."""
    items = [c_string(x) for x in items]
    return "{ { " + ", ".join(items) + " } }" if items else "{}"


def grid_expression(text: str, members: dict[str, str], obj: str) -> str:
    """A manifest extent expression (C over parameter names and NAME_shape_K) as C++ over
    the fields of ``obj``, every value widened to int64 and every helper qualified."""
    out, pos = [], 0
    tokens = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"unexpected text in grid expression {text!r} at {pos}")
        tokens.append(m)
        pos = m.end()
    for k, m in enumerate(tokens):
        ident, number, op = m.groups()
        if ident is not None:
            is_call = k + 1 < len(tokens) and tokens[k + 1].group(3) == "("
            if is_call:
                if ident not in GRID_FUNCTIONS:
                    raise ValueError(f"unknown function {ident} in grid expression {text!r}")
                out.append(f"::qd::embed::{ident}")
            elif ident in members:
                out.append(f"std::int64_t({obj}.{members[ident]})")
            else:
                raise ValueError(f"grid expression {text!r} names {ident}, which is no parameter or extent")
        elif number is not None:
            if "." in number or "e" in number.lower():
                raise ValueError(f"non-integer bound {number} in grid expression {text!r}")
            out.append(number if int(number) < 2**31 else number + "ll")
        elif op == "-" and (k == 0 or tokens[k - 1].group(3) in ("(", ",")):
            out.append("-")  # unary
        else:
            out.append({",": ", "}.get(op, f" {op} " if op not in "()" else op))
    return "".join(out)


# ----------------------------------------------------------------------------- contexts

def common_context(sources: dict[str, str], manifest: dict, language: str) -> dict:
    kernel, target = manifest["kernel"], manifest["target"]
    names = Names()
    members = {}  # manifest name (parameter or NAME_shape_K) -> C++ field name
    params = []
    for p in manifest["params"]:
        name = names.add(p["name"])
        members[p["name"]] = name
        shapes = []
        if p["kind"] == "ndarray":
            for d in range(0 if "shape" in p else p["ndim"]):  # a field's extents are in the code
                shapes.append(names.add(f"{p['name']}_shape_{d}"))
                members[f"{p['name']}_shape_{d}"] = shapes[-1]
        params.append(dict(p, cxx=name, shapes=shapes))
    source_names = Names()
    files = [{"file": f, "var": source_names.add(re.sub(r"\W", "_", f)), "literal": raw_string(text)}
             for f, text in sources.items()]
    entries = []
    for e in manifest["entry_points"]:
        grid = e["grid"]
        extent = [{"begin": grid_expression(x["begin"], members, "p"), "end": grid_expression(x["end"], members, "p"),
                   "text": f"[{x['begin']}, {x['end']})"} for x in grid.get("extent", [])]
        entries.append({
            "name": e["name"], "function": e.get("entry", e["name"]), "file": e["file"],
            "block_dim": e["block_dim"], "shared_bytes": e["shared_bytes"], "serial": grid["rule"] == "single",
            "fixed": grid["blocks"] if grid["rule"] == "fixed" else None,
            "max_blocks": grid.get("max_blocks", grid["blocks"] if grid["rule"] == "fixed" else 1),
            "source_line": e["source_line"], "extent": extent,
        })
    return {
        "kernel": kernel, "target": target, "generator": GENERATOR, "source": manifest["source"],
        "namespace": f"qd::{cxx_namespace(kernel)}::{target}",
        "guard": f"QD_GENERATED_{re.sub(r'[^A-Za-z0-9]', '_', kernel)}_{target.upper()}_H",
        "language": language,
        "files": files, "entries": entries, "params": params, "members": members,
        "requirements": manifest["requirements"], "subgroup_size": manifest["subgroup_size"],
        "result": result_context(manifest, params),
        "module_fields": fields_context(manifest, params),
        "loops": loops_context(manifest, params),
        "prints": prints_context(manifest, params),
        "cstr": c_string, "strings": string_array,
    }


def loops_context(manifest: dict, params: list[dict]) -> list[dict]:
    """The qd.graph.do_while loops: entry range, the flag's buffer index, the enclosing loop."""
    arrays = [p["name"] for p in params if p["kind"] == "ndarray"]
    return [{"first": loop["first"], "stop": loop["stop"], "buffer": arrays.index(loop["flag"]), "flag": loop["flag"],
             "parent": -1 if loop["parent"] is None else loop["parent"]} for loop in manifest.get("loops", [])]


def fields_context(manifest: dict, params: list[dict]) -> list[dict]:
    """The module's fields the kernel uses: name, buffer index, bytes to allocate."""
    arrays = [p["name"] for p in params if p["kind"] == "ndarray"]
    return [{"name": f["name"], "buffer": arrays.index(f["name"]), "bytes": f["bytes"]}
            for f in manifest.get("fields", [])]


def prints_context(manifest: dict, params: list[dict]) -> dict | None:
    """The print buffer's index and size, and each print() site's table row and parts."""
    prints = manifest.get("prints")
    if prints is None:
        return None
    arrays = [p["name"] for p in params if p["kind"] == "ndarray"]
    sites = []
    for s in prints["sites"]:
        parts = [f"{{ {c_text(p['text'])}, 0, nullptr }}" if "text" in p else
                 f"{{ nullptr, {p['arg']}, {c_string(p['spec'])} }}" for p in s["parts"]]
        sites.append({"id": s["id"], "task": -1 if s["task"] is None else s["task"],
                      "phase": 0 if s["phase"] is None else ("prelude", "body", "epilogue").index(s["phase"]),
                      "num_keys": s["keys"], "args": s["args"], "parts": parts, "where": f"{s['file']}:{s['line']}"})
    return {"param": prints["param"], "buffer": arrays.index(prints["param"]), "words": prints["words"], "sites": sites}


def c_text(text: str) -> str:
    """``text`` as a C string literal, control characters escaped (octal: no hex digit that
    follows can extend it)."""
    out = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(f"\\{ord(c):03o}" if ord(c) < 32 or ord(c) == 127 else c for c in out) + '"'


def result_context(manifest: dict, params: list[dict]) -> dict | None:
    """The returned value's type and buffer, when the kernel returns one."""
    result = manifest.get("result")
    if result is None:
        return None
    arrays = [p for p in params if p["kind"] == "ndarray"]
    k = next(k for k, p in enumerate(arrays) if p["name"] == result["param"])
    ctype = HOST_TYPES[result["dtype"]]
    count = 1
    for n in result.get("element_shape", ()):
        count *= n
    return {"dtype": result["dtype"], "ctype": ctype if count == 1 else f"std::array<{ctype}, {count}>",
            "count": count, "name": arrays[k]["cxx"], "buffer": k}

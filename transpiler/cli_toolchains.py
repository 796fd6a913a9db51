"""``transpiler toolchains`` and ``--toolchain NAME=PATH``: which vendor tool each check uses,
where it was found and how (the option, its ``TRANSPILER_<NAME>`` environment variable,
``PATH``, a pip wheel, a default folder), and the version it reports.

Only this command and the options of check/inspect load the toolchains layer: ``emit``
imports none of it."""
from __future__ import annotations

import argparse
import json
import sys

from .errors import ToolchainMissing

EXIT_OK = 0


def add_toolchain_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--toolchain", action="append", metavar="NAME=PATH",
                        help="use the tool at PATH for NAME (glslang, spirv-val, nvrtc, nvlink, hipcc, hiprtc, "
                             "llvm-readelf, clang), over $TRANSPILER_<NAME> and discovery (repeatable; "
                             "`transpiler toolchains` lists them)")


def apply_choices(items: list[str] | None) -> None:
    """Make every ``--toolchain NAME=PATH`` this process's choice; ValueError says why one cannot be."""
    if not items:
        return
    from .toolchains import locate  # noqa: PLC0415 - the emit path imports no toolchain

    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--toolchain expects NAME=PATH, got {item!r}; the names are: {', '.join(locate.MODULES)}")
        try:
            locate.choose(name.strip(), path)
        except ValueError as exc:
            raise ValueError(f"{exc}; the names are: {', '.join(locate.MODULES)}") from None


def rows() -> list[dict]:
    """One entry per tool: where it is, how it was found and its version, or how to install it."""
    from .toolchains import locate  # noqa: PLC0415 - the emit path imports no toolchain

    out = []
    for tool in locate.tools():
        row = {"name": tool.name, "env": tool.env, "used_for": tool.used_for}
        try:
            found = locate.find(tool.name)
        except ToolchainMissing as exc:
            row.update(found=False, missing=exc.tool, install=exc.install_hint)
        else:
            row.update(found=True, path=found.path, how=found.how, version=locate.version(tool.name, found.path))
        out.append(row)
    return out


def cmd_toolchains(args: argparse.Namespace) -> int:
    table = rows()
    if args.json:
        sys.stdout.write(json.dumps({"toolchains": table}, indent=2) + "\n")
        return EXIT_OK
    width = max(len(r["name"]) for r in table)
    for r in table:
        if r["found"]:
            print(f"{r['name']:<{width}}  {r['version']:<8}  {r['path']}  ({r['how']})")
        else:
            print(f"{r['name']:<{width}}  {'missing':<8}  install: {r['install']}  (or {r['env']}=PATH)")
        if args.verbose:
            print(f"{'':<{width}}  {r['used_for']}; set by --toolchain {r['name']}=PATH or {r['env']}")
    return EXIT_OK


def add_toolchains_command(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    t = sub.add_parser("toolchains", parents=parents,
                       help="list the vendor tools the checks use: path, how it was found, version")
    add_toolchain_option(t)
    t.add_argument("--json", action="store_true", help="print the list as JSON")
    t.set_defaults(run=cmd_toolchains)

"""The command line: ``emit``, ``check`` and ``inspect`` (``python cli.py ...`` in a checkout,
``transpiler ...`` once installed).

Exit codes: 0 success; 1 the kernel is wrong (a located diagnostic on stderr) or a
toolchain rejected the output; 2 bad usage; 3 a needed toolchain is missing.
The emit path imports no toolchain, CuPy or Vulkan.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import json
import logging
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType

from . import __version__
from .cli_batch import expand, run_many
from .cli_toolchains import add_toolchain_option, add_toolchains_command, apply_choices
from .cli_cache import add_cache_command
from .errors import ToolchainMissing, TranspileError
from .frontend.param_inference import array_spec, explain, explain_warning, parse_array_spec, untyped_params
from .ir.nodes import Loc
from .ir.printer import dump_kernel
from .lang.kernel import BoundKernel, Kernel, translating_only
from .log_config import set_verbosity
from .pipeline import translate
from .targets import TARGETS, get_target, names

EXIT_OK, EXIT_KERNEL, EXIT_USAGE, EXIT_TOOLCHAIN = 0, 1, 2, 3
PROG = "transpiler"
log = logging.getLogger("transpiler.cli")


class UsageError(Exception):
    pass


class LocatedUsageError(UsageError):
    """A usage error that is already a located diagnostic (the program --run ran raised)."""


def load_kernels(path: str) -> tuple[dict, object]:
    """Import ``path`` and return its @qd.kernel objects in definition order."""
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"no such file: {path}")
    name = "_qd_user_" + file.stem.replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(file.resolve().parent))

    def note(message: str) -> None:
        print(f"{file.name}: note: {message}", file=sys.stderr)

    argv, sys.argv = sys.argv, [str(file)]  # its own argument parsing sees a run with no arguments
    try:
        # Importing must not run the user's program: its kernel calls and qd.init do nothing,
        # and whatever it prints goes to stderr, never into the sources on stdout.
        with translating_only(note), contextlib.redirect_stdout(sys.stderr):
            spec.loader.exec_module(module)
    except TranspileError:
        raise
    except SyntaxError as exc:
        raise TranspileError(f"invalid Python syntax: {exc.msg}",
                             Loc(str(file), exc.lineno or 1, max((exc.offset or 1) - 1, 0))) from None
    except Exception as exc:  # noqa: BLE001 - report where the user's module failed
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == file.resolve()]
        loc = Loc(str(file), frames[-1].lineno, 0) if frames else None
        raise TranspileError(f"importing {file.name} failed: {type(exc).__name__}: {exc}", loc) from None
    finally:
        sys.path.pop(0)
        sys.argv = argv
    kernels = {k: v for k, v in vars(module).items() if isinstance(v, Kernel)}
    # A @qd.data_oriented instance made at module level: its kernel methods, as `sim.step`.
    for var, obj in vars(module).items():
        if getattr(type(obj), "_qd_data_oriented", False):
            for attr, member in vars(type(obj)).items():
                if isinstance(member, Kernel):
                    kernels[f"{var}.{attr}"] = BoundKernel(member, obj, f"{var}.{attr}")
    kernels = dict(sorted(kernels.items(), key=lambda kv: kv[1].fn.__code__.co_firstlineno))
    log.debug("imported %s: %d kernel(s): %s", path, len(kernels), ", ".join(kernels))
    return kernels, module


def pick_kernels(kernels: dict, wanted: list[str] | None, path: str) -> list:
    if not kernels:
        raise UsageError(f"{path} defines no @qd.kernel")
    if not wanted:
        return list(kernels.values())
    missing = [w for w in wanted if w not in kernels]
    if missing:
        raise UsageError(f"no kernel named {', '.join(missing)} in {path} (it has: {', '.join(kernels)})")
    return [kernels[w] for w in wanted]


def parse_targets(value: str) -> list[str]:
    if value == "all":
        return list(TARGETS)
    targets = [t.strip() for t in value.split(",") if t.strip()]
    bad = [t for t in targets if t not in names()]
    if bad:
        raise UsageError(f"unknown target {', '.join(bad)}; choose from {', '.join(names())} or all")
    return targets


def parse_templates(items: list[str] | None, module: ModuleType | None = None) -> tuple[dict, dict]:
    """``--template NAME=VALUE``: a Python literal is the value of a qd.template() parameter,
    and so is a name the file defines at module level (``--template vf=velocities``: a field);
    ``DTYPE`` or ``DTYPE:NDIM`` (f32, i32:2, ...) types an ndarray the annotation leaves
    open (or an array passed to a qd.template() parameter). Returns (values, array types)."""
    values, arrays = {}, {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--template expects NAME=VALUE, got {item!r}")
        spec = parse_array_spec(value)
        if spec:
            arrays[name] = spec
            continue
        try:
            values[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            path = value.strip().split(".")
            found = module if all(p.isidentifier() for p in path) else None
            for part in path:
                found = getattr(found, part, None)
            if found is None:
                raise UsageError(f"--template {name}: {value!r} is neither a Python literal, a name the file defines "
                                 "nor an array type such as f32 or i32:2") from None
            values[name] = found
    return values, arrays


def translations(args: argparse.Namespace, keep_going: bool = False) -> list:
    """(kernel, target, Translation) for every picked kernel and target. ``keep_going``: a
    target's TranspileError takes the Translation's place instead of being raised."""
    if args.run_program:
        return run_translations(args, keep_going)
    kernels, module = load_kernels(args.file)
    if not kernels and getattr(args, "from_directory", False):  # a helper module beside the kernels
        log.info("%s defines no @qd.kernel: skipped", args.file)
        return []
    if not kernels and any(getattr(v, "_qd_data_oriented", False) for v in vars(module).values()):
        raise UsageError(f"{args.file} defines no @qd.kernel outside its @qd.data_oriented classes: their kernel "
                         "methods are translated through an instance the module makes (sim = Simulation(...)), "
                         "as `--kernel sim.step`")
    picked = pick_kernels(kernels, args.kernel, args.file)
    targets = parse_targets(args.target)
    template_args, arg_types = parse_templates(args.template, module)
    options = {"template_args": template_args,
               "line_directives": getattr(args, "line_directives", False), "wave32": args.wave32,
               "subgroup_size": args.subgroup_size,
               "no_hazards": args.no_hazards, "debug": args.debug, "warn": False}
    out, shown = [], set()
    for k in picked:
        try:  # the types no call gives: from the kernel's uses (frontend/param_inference.py)
            assumed = untyped_params(k, arg_types, template_args)
        except TranspileError as exc:
            if not keep_going:
                raise
            out.extend((k, t, exc) for t in targets)
            continue
        for pname, inf in assumed.items():
            print(f"{os.path.basename(k.fn.__code__.co_filename)}:{inf.line}: note: ndarray `{pname}` of {k.__name__} "
                  f"is typed by the call; translated as {inf.ann.dtype.name}, {inf.ann.ndim}-d: {inf.reason} "
                  f"(--template {pname}=DTYPE:NDIM to choose)", file=sys.stderr)
        kernel_types = {**arg_types, **{n: inf.ann for n, inf in assumed.items()}}
        for t in targets:
            try:
                with contextlib.redirect_stdout(sys.stderr):  # qd.static_print: never into sources on stdout
                    tr = translate(k, t, **options, arg_types=kernel_types)
            except TranspileError as exc:
                if not keep_going:
                    raise explain(exc, assumed) from None
                out.append((k, t, explain(exc, assumed)))
                continue
            if assumed:  # the manifest says what the command line chose, as stderr did
                tr.manifest["assumed"] = {n: array_spec(inf.ann) for n, inf in assumed.items()}
            for h in tr.warnings:  # warnings print once per location and go on
                if str(h) not in shown:
                    shown.add(str(h))
                    print(explain_warning(h, assumed), file=sys.stderr)
            out.append((k, t, tr))
    return out


def run_translations(args: argparse.Namespace, keep_going: bool = False) -> list:
    """``--run``: (specialization, target, Translation) for every kernel specialization the
    program launched (runtime/capture.py), in first-launch order, each translated as it was
    first launched. ``--kernel`` picks by the kernel's Python name or the specialization's."""
    from .runtime import capture  # noqa: PLC0415 - the runtime loads only to run a program

    if args.template:
        raise UsageError("--template does not go with --run: the program's calls give the template values")
    targets = parse_targets(args.target)
    options = {"line_directives": getattr(args, "line_directives", False), "wave32": args.wave32,
               "subgroup_size": args.subgroup_size, "no_hazards": args.no_hazards, "warn": False}

    def emit(spec: capture.Specialization) -> list:
        if args.kernel and not {spec.name, spec.description["kernel"], spec.kernel.fn.__name__} & set(args.kernel):
            return []
        out = []
        for t in targets:
            try:
                with contextlib.redirect_stdout(sys.stderr):  # qd.static_print: never into sources on stdout
                    tr = translate(spec.kernel, t, **options, template_args=spec.template_args,
                                   arg_types=spec.arg_types, default_fp=spec.defaults.fp,
                                   default_ip=spec.defaults.ip, debug=args.debug or spec.defaults.debug)
            except TranspileError as exc:  # (reported after the run: never raised into the program)
                out.append((spec.kernel, t, exc))
                continue
            tr.manifest["specialization"] = spec.description
            out.append((spec.kernel, t, tr))
        return out

    recorder = capture.Recorder(args.executor, emit)
    try:
        args.ran_files = capture.run_program(args.file, args.program_args, recorder, quiet=args.quiet)
    except capture.ProgramError as exc:
        raise LocatedUsageError(str(exc)) from None
    specs = recorder.specializations
    launched = sorted({s.description["kernel"] for s in specs})
    missing = [w for w in args.kernel or [] if not any(w in (s.name, s.description["kernel"], s.kernel.fn.__name__)
                                                       for s in specs)]
    if missing:
        raise UsageError(f"{args.file} launched no kernel named {', '.join(missing)} (it launched: "
                         f"{', '.join(launched)})")
    out, shown = [], set()
    for spec in specs:
        for kernel, t, tr in spec.outputs:
            if isinstance(tr, TranspileError) and not keep_going:
                raise tr
            for h in getattr(tr, "warnings", ()):  # warnings print once per location and go on
                if str(h) not in shown:
                    shown.add(str(h))
                    print(str(h), file=sys.stderr)
            out.append((kernel, t, tr))
    return out


def write_run_index(args: argparse.Namespace, results: list, written: dict) -> None:
    """``emit --run -o DIR``: DIR/specializations.json lists what the program launched and the
    files each specialization became (relative to DIR); ``--depfile`` names it and the Python
    files the program ran, for a build system that reruns the program when one changes."""
    index = Path(args.output) / "specializations.json"
    entries: dict[str, dict] = {}
    for kernel, target, tr in results:
        entry = entries.setdefault(kernel.__name__, {"name": kernel.__name__, **tr.manifest["specialization"],
                                                     "files": {}})
        entry["files"][target] = written[(kernel.__name__, target)]
    text = {"program": os.path.basename(args.file), "args": args.program_args, "executor": args.executor,
            "specializations": list(entries.values())}
    index.write_text(json.dumps(text, indent=2) + "\n")
    if args.depfile:
        def escaped(p: str) -> str:
            return p.replace("\\", "/").replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")

        deps = " \\\n  ".join(escaped(p) for p in args.ran_files)
        Path(args.depfile).write_text(f"{escaped(os.path.abspath(index))}: \\\n  {deps}\n")


def cmd_emit(args: argparse.Namespace) -> int:
    """Every kernel that translates is written; each one that does not is reported (its
    located diagnostic on stderr) and makes the exit code 1."""
    if getattr(args, "depfile", None) and args.output is None:
        raise UsageError("--depfile needs -o DIR (it names DIR/specializations.json)")
    results, failed = [], []
    for r in translations(args, keep_going=True):
        (failed if isinstance(r[2], TranspileError) else results).append(r)
    shown = set()
    for _, _, exc in failed:
        if str(exc) not in shown:  # the same mistake on every target is told once
            shown.add(str(exc))
            print(str(exc), file=sys.stderr)
    status = EXIT_KERNEL if failed else EXIT_OK
    if args.header:  # only then: the header module and its templates cost a few ms to load
        from .header import header_name, render_header  # noqa: PLC0415 - the header module only for --header
    targets = parse_targets(args.target)
    if args.output is None:
        for _, _, tr in results:
            for text in tr.sources.values():
                sys.stdout.write(text)
                sys.stdout.write("\n")
            sys.stdout.write(json.dumps(tr.manifest, indent=2) + "\n")
            if args.header:
                sys.stdout.write(render_header(tr))
        return status
    files = {}
    for kernel, target, tr in results:
        out = Path(args.output) / target if len(targets) > 1 else Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in tr.sources.items():
            (out / name).write_text(text)
        (out / f"{kernel.__name__}.json").write_text(json.dumps(tr.manifest, indent=2) + "\n")
        written = [*tr.sources, f"{kernel.__name__}.json"]
        if args.header:
            written.append(header_name(tr.manifest))
            (out / written[-1]).write_text(render_header(tr))
        files[(kernel.__name__, target)] = [(out / n).relative_to(args.output).as_posix() for n in written]
        if not args.quiet:
            print(f"{kernel.__name__} [{target}]: " + ", ".join(str(out / n) for n in written))
    if args.run_program:
        write_run_index(args, results, files)
    return status


def cmd_check(args: argparse.Namespace) -> int:
    """Every translation through its target's toolchain. A missing toolchain is a verdict like
    the others: the remaining targets are still checked, and the exit code (1 rejected, else 3
    missing) comes after all of them."""
    from .toolchains import check_sources  # noqa: PLC0415 - the emit path imports no toolchain

    records: list[dict] = []
    for kernel, target, tr in translations(args):
        options = {"resources": args.resources, "arch": args.arch}
        base = {"kernel": kernel.__name__, "target": target}
        try:
            verdicts = check_sources(target, tr.sources, tr.manifest, options)
        except ToolchainMissing as exc:
            records.append({**base, "verdict": "missing", "tool": exc.tool, "install": exc.install_hint})
            if not args.json:
                print(f"{kernel.__name__} [{target}]: {exc.tool}: missing; install it with: {exc.install_hint}",
                      file=sys.stderr)
            continue
        for v in verdicts:
            records.append({**base, "verdict": "ok" if v.ok else "rejected", "tool": v.tool, "file": v.file,
                            "seconds": round(v.seconds, 3), "details": v.details,
                            **({} if v.ok else {"message": v.message})})
            if args.json:
                continue
            verdict = "ok" if v.ok else "REJECTED"
            print(f"{kernel.__name__} [{target}] {v.file}: {v.tool}: {verdict} ({v.seconds:.2f} s)")
            for entry, usage in v.details.items():
                print("    " + entry + ": " + ", ".join(f"{k} {val}" for k, val in usage.items()))
            if not v.ok:
                print(v.message, file=sys.stderr)
    summary = target_verdicts(records)
    if args.json:
        sys.stdout.write(json.dumps({"targets": summary, "checks": records}, indent=2) + "\n")
    else:
        for target, s in summary.items():
            extra = f"; install it with: {s['install']}" if s["verdict"] == "missing" else ""
            print(f"{target}: {s['verdict']}{extra}")
    verdicts = {s["verdict"] for s in summary.values()}
    return EXIT_KERNEL if "rejected" in verdicts else EXIT_TOOLCHAIN if "missing" in verdicts else EXIT_OK


def target_verdicts(records: list[dict]) -> dict[str, dict]:
    """One verdict per target: rejected if any file was, else missing if its toolchain is, else ok."""
    out: dict[str, dict] = {}
    for r in records:
        s = out.setdefault(r["target"], {"verdict": "ok", "files": 0})
        if r["verdict"] == "missing":
            s.update(tool=r["tool"], install=r["install"])
            if s["verdict"] == "ok":
                s["verdict"] = "missing"
        else:
            s["files"] += 1
            if r["verdict"] == "rejected":
                s["verdict"] = "rejected"
    return out


def cmd_inspect(args: argparse.Namespace) -> int:
    if args.html:  # only then: the page's module and template load
        from .inspect_html import render_page  # noqa: PLC0415 - the page's module only for --html

        args.target = args.target or "all"
        page = render_page(args, translations)
        if args.html == "-":
            sys.stdout.write(page)
            return EXIT_OK
        try:
            Path(args.html).write_text(page, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.html}: {exc.strerror}") from None
        print(f"wrote {args.html}", file=sys.stderr)
        return EXIT_OK
    if not args.kernel and not args.run_program:
        raise UsageError("inspect needs --kernel NAME (or --html OUT.html, which shows every kernel)")
    if args.resources:
        raise UsageError("inspect --resources goes with --html (check --resources prints them)")
    args.target = args.target or "cuda"
    results = translations(args)
    shown_ir = set()
    for kernel, target, tr in results:
        if id(kernel) not in shown_ir:
            shown_ir.add(id(kernel))
            print(f"==== typed IR of {kernel.__name__}")
            print(dump_kernel(tr.ir))
        src_file = tr.ir.file
        py_lines = Path(src_file).read_text().splitlines()
        for name, text in tr.sources.items():
            print(f"==== {target}: {name}")
            print(side_by_side(text, py_lines))
    return EXIT_OK


def side_by_side(text: str, py_lines: list[str]) -> str:
    """Each generated line, with the Python line it came from printed above its first use."""
    from .toolchains import line_origins  # noqa: PLC0415 - the emit path imports no toolchain

    out, last = [], None
    for line, origin in zip(text.splitlines(), line_origins(text), strict=True):
        if origin:
            name, n = origin
            if n != last and 0 < n <= len(py_lines):
                out.append(f"{'':>6}# {name}:{n}: {py_lines[n - 1].strip()}")
            last = n
        out.append(f"{'':>6}{line}")
    return "\n".join(out)


def cmd_targets(args: argparse.Namespace) -> int:
    """The lowering tables: what each atomic, fence and load becomes on every target."""
    from .lowering_tables import markdown  # noqa: PLC0415 - translates tables of kernels: only for this command

    sys.stdout.write(markdown() + "\n")
    return EXIT_OK


def cmake_dir() -> Path:
    """The folder with TranspilerConfig.cmake: transpiler/cmake/ when installed, cmake/ in a checkout."""
    here = Path(__file__).resolve().parent
    installed = here / "cmake"
    return installed if (installed / "TranspilerConfig.cmake").is_file() else here.parent / "cmake"


def cmd_cmake_dir(args: argparse.Namespace) -> int:
    print(cmake_dir())
    return EXIT_OK


def subgroup_size_arg(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 128 or n & (n - 1):
        raise argparse.ArgumentTypeError(f"{text!r} is not a subgroup size (a power of two from 1 to 128)")
    return n


def add_common(sp: argparse.ArgumentParser) -> None:
    """The options emit, check and inspect share: the files, what to translate, and how."""
    sp.add_argument("files", nargs="+", metavar="FILE",
                    help="Python files that define @qd.kernel functions, or directories (their *.py files)")
    sp.add_argument("-j", "--jobs", type=jobs_arg, default=1, metavar="N",
                    help="translate (and check) N files at once in a process pool (0: one per CPU); the output "
                         "is the same, in the order the files were given")
    sp.add_argument("--target", default="cuda", help=f"{', '.join(names())}, a comma-separated list, or all")
    sp.add_argument("--kernel", action="append",
                    help="a kernel to translate (repeatable; default: every kernel in the file)")
    sp.add_argument("--template", action="append", metavar="NAME=VALUE",
                    help="the value of a qd.template() parameter (a Python literal, or a name the file defines), "
                         "or the DTYPE[:NDIM] of an untyped ndarray (f32, i32:1, vec3:2)")
    sp.add_argument("--wave32", action="store_true", help="HIP: compile for 32-wide wavefronts (RDNA)")
    sp.add_argument("--subgroup-size", type=subgroup_size_arg, metavar="N",
                    help="the subgroup width to specialize to where a target has a choice: GLSL the "
                         "Vulkan device's (default 32), HIP 64 or 32 (= --wave32); CUDA and Metal are 32")
    sp.add_argument("--no-hazards", action="store_true",
                    help="skip the SIMT hazard checker (a `# qd: ignore-hazard` comment silences one line)")
    sp.add_argument("--debug", action="store_true",
                    help="keep the kernels' asserts, as qd.init(debug=True): a failed one is reported in the "
                         "buffer the manifest's `asserts` entry describes")
    sp.add_argument("--run", action="store_true", dest="run_program",
                    help="run the file as a program (its __main__; its arguments after --) and translate every "
                         "kernel specialization it launches, each named <kernel>_<hash> (docs/cli.md)")
    sp.add_argument("--executor", default="cpu-cuda", choices=["cpu-cuda", "cpu-hip", "vulkan", "cuda"],
                    help="with --run: where the program's kernels run (default cpu-cuda, the CPU executor of "
                         "the CUDA text), whatever arch its qd.init names")


def verbosity_parser() -> argparse.ArgumentParser:
    """-v / -q, which every command takes."""
    v = argparse.ArgumentParser(add_help=False)
    v.add_argument("-v", "--verbose", action="count", default=0,
                   help="log what the library does on stderr (-v: translations, toolchains, files; -vv: debug)")
    v.add_argument("-q", "--quiet", action="store_true",
                   help="only errors: no list of files written (emit), no progress or ok lines (several files); "
                        "with --run, drop what the program prints")
    return v


def add_emit(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    e = sub.add_parser("emit", parents=parents, help="write the generated sources and manifests")
    add_common(e)
    e.add_argument("-o", "--output", help="directory to write into (one sub-directory per target when "
                                          "several are asked for, and per file, DIR/<file stem>/, when several "
                                          "files are given); default: stdout")
    e.add_argument("--line-directives", action="store_true", help="emit #line directives pointing at the Python")
    e.add_argument("--depfile", metavar="FILE",
                   help="with --run and -o: write a Make depfile: DIR/specializations.json depends on the Python "
                        "files the program ran")
    e.add_argument("--header", action="store_true", help="also write a C++17 header per kernel and target, "
                                                         "<kernel>.<target>.h, embedding the source and its bindings")
    e.set_defaults(run=cmd_emit)


def add_check(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    c = sub.add_parser("check", parents=parents, help="compile the generated sources with the real toolchains")
    add_common(c)
    c.add_argument("--resources", action="store_true", help="report registers and shared memory (CUDA)")
    c.add_argument("--arch", default="sm_90", help="CUDA architecture for the cubin (default sm_90)")
    c.add_argument("--json", action="store_true", help="print the verdicts as JSON (per target and per file)")
    add_toolchain_option(c)
    c.set_defaults(run=cmd_check)


def add_inspect(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    i = sub.add_parser("inspect", parents=parents,
                       help="show the typed IR and the generated source beside the Python lines")
    add_common(i)
    i.add_argument("--html", metavar="OUT.html",
                   help="write one self-contained page instead (- for stdout): the Python beside every target "
                        "(default: all), linked line by line; every kernel unless --kernel, and one "
                        "instantiation per value when --template gives a NAME several")
    i.add_argument("--resources", action="store_true",
                   help="with --html: registers and spills per entry point where the toolchains are installed")
    add_toolchain_option(i)
    i.set_defaults(run=cmd_inspect, target=None)


def add_targets(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    t = sub.add_parser("targets", parents=parents,
                       help="print the lowering tables (atomics, fences, volatile loads) per target")
    t.add_argument("--markdown", action="store_true", help="the docs/lowering.md text (the default output too)")
    t.set_defaults(run=cmd_targets)


def add_cmake_dir(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    d = sub.add_parser("cmake-dir", parents=parents, help="print the folder for find_package(Transpiler): "
                                                          "cmake -DTranspiler_DIR=$(transpiler cmake-dir)")
    d.set_defaults(run=cmd_cmake_dir)


# The subcommands, in the order --help lists them: each adds its parser (with the -v/-q
# parents) and sets ``run``. A new command is one more function here.
COMMANDS = [add_emit, add_check, add_targets, add_cmake_dir, add_inspect, add_toolchains_command,
            add_cache_command]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=f"Python GPU kernels to GPU source ({', '.join(names())}).")
    p.add_argument("--version", action="version", version=f"transpiler {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    parents = [verbosity_parser()]
    for add in COMMANDS:
        add(sub, parents)
    return p


def jobs_arg(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of processes (0: one per CPU)")
    return n or os.cpu_count() or 1


def setup(args: argparse.Namespace) -> None:
    """What every process running the command needs first: the log level, the toolchains chosen."""
    set_verbosity(args.verbose, args.quiet)
    try:
        apply_choices(getattr(args, "toolchain", None))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def failure(exc: Exception) -> int:
    """The one line (or located diagnostic) an error prints, and its exit code."""
    if isinstance(exc, LocatedUsageError):
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    if isinstance(exc, UsageError):
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(exc, TranspileError):
        print(str(exc), file=sys.stderr)
        return EXIT_KERNEL
    if isinstance(exc, ToolchainMissing):
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_TOOLCHAIN
    print(f"{PROG}: error: {io_message(exc)}", file=sys.stderr)  # an OSError: writing failed
    return EXIT_KERNEL


def run_command(args: argparse.Namespace) -> int:
    """One command on one file (or none): its exit code, errors reported as `failure` says."""
    try:
        return args.run(args)
    except BrokenPipeError:
        raise
    except (UsageError, TranspileError, ToolchainMissing, OSError) as exc:
        return failure(exc)


# Names an -o directory is unlikely to have: the files the commands write, and their kin.
FILE_SUFFIXES = frozenset(".cu .cuh .hip .comp .glsl .spv .metal .msl .air .h .hpp .c .cc .cpp .o .so .ptx .cubin "
                          ".json .html .txt .py .d".split())


def check_output_dir(value: str) -> None:
    """``-o`` names a directory: one that is a file, or whose name says file, is a usage
    error before any work (a directory named ``saxpy.cu`` is never what was meant)."""
    path = Path(value)
    if path.is_dir():
        return
    suggest = f"{path.with_suffix('') if path.suffix else path.parent / (path.name + '_out')}/"
    if path.exists():
        raise UsageError(f"-o {value}: is a file, and -o names the directory the sources and manifests go into; "
                         f"hint: -o {suggest} (or no -o: to stdout)")
    if path.suffix.lower() in FILE_SUFFIXES:
        raise UsageError(f"-o {value}: looks like a file name, and -o names the directory the sources and "
                         f"manifests go into; hint: -o {suggest} (or no -o: to stdout)")


def io_message(exc: OSError) -> str:
    """One line for a failed write (a read-only folder, a full disk): exit code 1, no traceback."""
    what = exc.strerror or str(exc)
    return f"I/O error: {exc.filename}: {what}" if exc.filename else f"I/O error writing the output: {what}"


def check_usage(args: argparse.Namespace, files: list[str], many: bool) -> None:
    """What the command line can be refused for before any file is read."""
    if (args.program_args or getattr(args, "depfile", None)) and not getattr(args, "run_program", False):
        raise UsageError("arguments after `--` and --depfile go with --run (transpiler emit --run prog.py -- ARGS)")
    if not hasattr(args, "files"):
        return
    if not files:
        raise UsageError(f"no Python files in {', '.join(args.files)}")
    if many and args.run_program:
        raise UsageError("--run runs one program: give one file")
    if many and getattr(args, "html", None):
        raise UsageError("inspect --html makes a page of one file: give one file")
    if getattr(args, "output", None):
        check_output_dir(args.output)
        stems: dict[str, str] = {}
        for f in files if many else []:
            other = stems.setdefault(Path(f).stem, f)
            if other != f:
                raise UsageError(f"{other} and {f} would both write into {Path(args.output) / Path(f).stem}/: "
                                 "emit them with separate -o directories")
        args.output_per_file = many


def warm_up(args: argparse.Namespace) -> None:
    """Import what every file's translation (and check) loads before the pool forks: the
    workers inherit it instead of each importing it again (~0.3 s a worker)."""
    importlib.import_module(f"{__package__}.frontend.lower")
    for t in parse_targets(args.target or "all"):
        target = get_target(t)
        if args.command != "emit" and target.checker:
            importlib.import_module(target.checker)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    program_args = []
    if "--" in argv:  # what follows is the --run program's own command line
        cut = argv.index("--")
        argv, program_args = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)
    args.program_args = program_args
    try:
        setup(args)
        files, many = expand(args.files) if hasattr(args, "files") else ([], False)
        check_usage(args, files, many)
        if not many:
            args.file = files[0] if files else None
            code = run_command(args)
        else:
            if args.jobs > 1:
                warm_up(args)
            code = run_many(run_command, args, files, setup, summary=args.command != "emit")
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        os._exit(EXIT_OK)
    except (UsageError, OSError) as exc:  # an OSError here: stdout could not take the output
        if isinstance(exc, OSError) and exc.filename is None:
            with contextlib.suppress(OSError, ValueError):  # nor can it at exit: point it at nothing
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return failure(exc)


if __name__ == "__main__":
    sys.exit(main())

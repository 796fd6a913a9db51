"""Run a user's program and record every kernel specialization it launches: what
``transpiler emit --run`` (and ``check`` / ``inspect --run``) writes.

A specialization is what the executors translate once and cache (runtime.launch's program
cache): a kernel with one set of template values (a data-oriented ``self`` by the state its
kernels read), one set of types for the ndarrays its annotations leave open, and qd.init's
defaults. Each is handed to the caller when first launched, while the program runs, because
a data-oriented instance's state may change later and a translation reads it then.

Names are stable across runs and across programs that launch more or fewer of them:
``<kernel>_<h>``, ``h`` the first 8 hex digits of the SHA-256 of the specialization's
description (its manifest entry without the name); a method of a data-oriented class is
``<Class>_<method>_<h>`` (runs of underscores made one, leading ones dropped). Two
specializations with the same description that translate to different text (template values
described only by their names) get ``_2``, ``_3``, ... in first-launch order."""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import math
import os
import re
import runpy
import sys
import traceback
from pathlib import Path

from .. import lang
from ..errors import TranspileError, display_path, format_diagnostic
from ..ir import types as T
from ..ir.memo import freeze
from ..ir.nodes import Loc
from ..ir.records import field, record
from ..lang.field import Field, StructField, instance_key
from ..lang.matrix import MatrixType, dataclass_members

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

# --executor NAME -> (qd.init's arch, the options that pick the executor)
EXECUTORS = {"cpu-cuda": ("cpu", {"dialect": "cuda"}), "cpu-hip": ("cpu", {"dialect": "hip"}),
             "vulkan": ("vulkan", {}), "cuda": ("cuda", {})}


class ProgramError(Exception):
    """The program raised, exited with a nonzero status, or launched nothing: ``str()`` is
    the located diagnostic (the program's line where there is one)."""


@record
class Specialization:
    """One kernel specialization the program launched. ``kernel`` is a copy of the launched
    kernel named ``name`` (its entry points and files take that name); ``outputs`` is what
    the caller's ``emit`` made of it."""

    name: str
    kernel: lang.Kernel
    description: dict
    template_args: dict
    arg_types: dict
    defaults: T.Defaults
    outputs: list = field(default_factory=list)


class Recorder:
    """What the runtime tells of each new specialization (``observe``), and the executor every
    qd.init of the program gets instead of the arch it names (``arch``, ``options``)."""

    def __init__(self, executor: str, emit: Callable[[Specialization], list]):
        self.arch, self.options = EXECUTORS[executor]
        self.emit = emit
        self.specializations: list[Specialization] = []
        self._seen: dict[tuple, Specialization] = {}

    def observe(self, kernel: lang.Kernel, template_args: dict, arg_types: dict, defaults: T.Defaults) -> None:
        key = (kernel, freeze(template_args, instance_key), freeze(arg_types, instance_key), defaults)
        if key in self._seen:  # the same one again (a later qd.init starts a new program cache)
            return
        description = describe(kernel, template_args, arg_types, defaults)
        digest = hashlib.sha256(json.dumps(description, sort_keys=True).encode()).hexdigest()[:8]
        # (no `__` and no leading `_`: C++ reserves them, and Genesis's methods are `_kernel_*`)
        base = f"{re.sub('_{2,}', '_', description['kernel'].replace('.', '_')).strip('_') or 'kernel'}_{digest}"
        same = [s for s in self.specializations if s.description == description]
        for k in range(len(same) + 1):
            name = base if k == 0 else f"{base}_{k + 1}"
            spec = Specialization(name, renamed(kernel, name), {"name": name, **description}, dict(template_args),
                                  dict(arg_types or {}), defaults)
            spec.outputs = self.emit(spec)
            twin = next((s for s in same if s.name == name), None)
            if twin is None:
                self.specializations.append(spec)
                break
            if _texts(twin.outputs) == _texts(spec.outputs):  # it translates as one seen before: the same
                spec = twin
                break
        self._seen[key] = spec


def _texts(outputs: list) -> list:
    return [str(tr) if isinstance(tr, Exception) else (target, tuple(tr.sources.items()))
            for _, target, tr in outputs]


def renamed(kernel: lang.Kernel, name: str) -> lang.Kernel:
    """A copy of ``kernel`` that translates under ``name``, with none of its caches."""
    clone = object.__new__(type(kernel))
    clone.__dict__.update({k: v for k, v in kernel.__dict__.items() if not (k.startswith("_") and
                                                                            not k.startswith("__"))})
    clone.__name__ = name
    return clone


def describe(kernel: lang.Kernel, template_args: dict, arg_types: dict, defaults: T.Defaults) -> dict:
    """The manifest's ``specialization`` entry, JSON: the kernel's Python name and module, the
    types the call gave the ndarrays the annotations leave open, the template values, and
    qd.init's defaults."""
    owner = template_args.get("self")
    python_name = kernel.__name__
    if getattr(type(owner), "_qd_data_oriented", False):
        python_name = f"{type(owner).__name__}.{python_name}"
    return {"kernel": python_name, "module": kernel.fn.__module__,
            "arg_types": {n: array_type(a) for n, a in sorted((arg_types or {}).items())},
            "template_values": {n: value(v) for n, v in sorted(template_args.items())},
            "defaults": {"fp": defaults.fp.name, "ip": defaults.ip.name, "debug": bool(defaults.debug)}}


def type_name(t: object) -> str:
    if isinstance(t, MatrixType):
        return f"{'x'.join(map(str, t.shape))}{type_name(T.python_type(t.dtype) or t.dtype)}"
    return getattr(t, "name", None) or str(t)


def array_type(a: lang.NdarrayAnnotation) -> str:
    """``DTYPE:NDIM`` as --template spells it; a vector/matrix element as ``3f32:1`` (a 3-vector
    of f32) or ``2x2f32:1``."""
    dtype = type_name(T.python_type(a.dtype) or a.dtype)
    if a.element_shape:
        dtype = f"{'x'.join(map(str, a.element_shape))}{dtype}"
    return f"{dtype}:{a.ndim}"


def value(v: object, seen: frozenset = frozenset()) -> object:
    """A template value as JSON that is the same in every run of the program (never an
    address): Python scalars as themselves; a field or ndarray by dtype and shape; a
    data-oriented instance or dataclass by its class and the members its kernels read."""
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, (tuple, list)):
        return [value(x, seen) for x in v]
    if isinstance(v, (T.DType, MatrixType)):
        return {"type": type_name(v)}
    if isinstance(v, Field):
        return {"field": type_name(v.dtype), "element_shape": list(v.element_shape), "shape": list(v.shape)}
    if isinstance(v, StructField):
        return {"struct_field": {k: value(m, seen) for k, m in sorted(v.members.items())}}
    if getattr(type(v), "_qd_bound_like_field", False):  # a qd.ndarray member
        return {"ndarray": type_name(v.dtype), "element_shape": list(v.element_shape), "shape": list(v.shape)}
    oriented = getattr(type(v), "_qd_data_oriented", False)
    if (oriented or dataclasses.is_dataclass(v) and not isinstance(v, type)) and id(v) not in seen:
        state = vars(v) if oriented else {name: getattr(v, name) for name, _ in dataclass_members(type(v))}
        members = {k: value(m, seen | {id(v)}) for k, m in sorted(state.items()) if _read_by_kernels(m)}
        return {"class" if oriented else "dataclass": type(v).__qualname__, "members": members}
    if hasattr(v, "__qualname__"):  # a function, class or kernel passed as a value: by its name
        return {"object": f"{getattr(v, '__module__', '')}.{v.__qualname__}"}
    state = getattr(v, "__dict__", None)
    described = {"object": f"{type(v).__module__}.{type(v).__qualname__}"}
    if isinstance(state, dict) and id(v) not in seen and len(seen) < 4:  # a config a kernel reads via qd.static
        described["members"] = {k: value(m, seen | {id(v)}) for k, m in sorted(state.items())
                                if not k.startswith("__") and not callable(m)}
    return described


def _read_by_kernels(m: object) -> bool:
    """What of an instance its kernels' translations read (as lang.field.instance_key)."""
    return type(m) in (int, float, bool, str, type(None), tuple) or isinstance(m, (Field, StructField)) or \
        getattr(type(m), "_qd_bound_like_field", False) or getattr(type(m), "_qd_data_oriented", False) or \
        (dataclasses.is_dataclass(m) and not isinstance(m, type))


# ----------------------------------------------------------------------------- running the program

def run_program(path: str, argv: list[str], recorder: Recorder, quiet: bool = False) -> list[str]:
    """Run ``path`` as ``__main__`` with ``argv`` as sys.argv[1:], on the recorder's executor,
    telling the recorder of each specialization. What the program prints goes to stderr (to
    nowhere when ``quiet``): stdout is the command's. Returns the Python files it ran (the
    program and the modules it imported from outside the standard library, site-packages and
    this package): what a build's depfile lists. Raises ProgramError, or the TranspileError
    a kernel it launched raised."""
    from .. import runtime  # noqa: PLC0415 - this module's own package: its hooks

    file = Path(path).resolve()
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *argv]
    sys.path.insert(0, str(file.parent))
    runtime.reset()
    runtime.set_capture(recorder)
    try:
        with _stdout_elsewhere(quiet):
            runpy.run_path(str(file), run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise ProgramError(f"{display_path(path)}: error: the program exited with status {exc.code}; nothing was "
                               "written") from None
    except TranspileError as exc:
        if exc.loc is not None:
            raise  # a kernel it launched is wrong: that kernel's located diagnostic
        raise ProgramError(_located(exc, file)) from None
    except Exception as exc:  # noqa: BLE001 - the program's own failure, located at its line
        raise ProgramError(_located(exc, file)) from None
    finally:
        runtime.set_capture(None)
        runtime.reset()
        sys.argv, sys.path[:] = saved_argv, saved_path
    if not recorder.specializations:
        raise ProgramError(f"{display_path(path)}: error: the program ran to its end and launched no kernel\nhint: " + (
            "the program's work must run when it is run as a script (under `if __name__ == \"__main__\":`); "
            "give its arguments after `--`: transpiler emit --run prog.py -- ARGS"))
    return [str(file), *sorted(p for p in _user_files() if p != str(file))]


def _located(exc: BaseException, file: Path) -> str:
    """``prog.py:LINE:COL: error: the program raised ...`` at the program's deepest frame (else
    the deepest frame of a file outside this package)."""
    frames = traceback.extract_tb(exc.__traceback__)
    package = Path(__file__).resolve().parent.parent
    mine = [f for f in frames if Path(f.filename).resolve() == file] or \
        [f for f in frames if package not in Path(f.filename).resolve().parents and "runpy" not in f.filename]
    loc = None
    if mine:
        f = mine[-1]
        loc = Loc(f.filename, f.lineno, getattr(f, "colno", None) or 0)
    text = str(exc).strip()
    return format_diagnostic("error", f"the program raised {type(exc).__name__}" + (f": {text}" if text else ""), loc,
                             "nothing was written; fix the program (or its arguments after `--`) and run again")


@contextlib.contextmanager
def _stdout_elsewhere(quiet: bool) -> Iterator[None]:
    """Python's sys.stdout and file descriptor 1 (what a compiled kernel's printf writes to)
    sent to stderr, or to /dev/null when ``quiet``."""
    sys.stdout.flush()
    saved = os.dup(1)
    sink = os.open(os.devnull, os.O_WRONLY) if quiet else os.dup(2)
    os.dup2(sink, 1)
    try:
        with contextlib.redirect_stdout(io.StringIO() if quiet else sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(sink)


def _user_files() -> list[str]:
    """The .py files of loaded modules that are neither the standard library's, an installed
    package's (under the interpreter's prefixes) nor this package's."""
    package = Path(__file__).resolve().parent.parent
    skip = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p}
    out = set()
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if not name or not name.endswith(".py"):
            continue
        p = Path(name).resolve()
        if p.is_file() and package not in p.parents and not any(s in p.parents for s in skip) \
                and "site-packages" not in p.parts and "dist-packages" not in p.parts:
            out.add(str(p))
    return sorted(out)

"""Shrink a failing kernel while its failure class (and executor or target) stays the same:
greedy delta debugging over the ``Program`` description. Passes, repeated until nothing
shrinks: drop whole tasks and helpers, drop chunks of statements (halves, quarters, ...,
single ones), replace an ``if`` or a loop by its body, replace an expression by one of its
operands of the same type or by a typed 0 / 1, and drop the arrays and scalars no longer
used. A candidate the reference finds invalid (a variable no longer defined) is skipped.

  PYTHONPATH=tests:. python -m fuzz.minimize fuzz-failures/wrong/123/program.pkl

writes program.min.pkl and kernel.min.py beside the input and prints the kernel."""
from __future__ import annotations

import argparse
import pickle
import re
import sys
import tempfile
import time
from pathlib import Path
from collections.abc import Callable, Iterator

from .program import Expr, Program, Stmt, render, walk_bodies
from .reference import Invalid, Undefined, reference


def failure_of(prog: Program, executors: list[str], targets: list[str], workdir: Path,
               compile_all: bool = True) -> tuple[str | None, str]:
    from .drive import check_seed

    o = check_seed(prog, workdir, executors, compile_all=compile_all, targets=targets)
    return o.failure, o.detail


def signature_of(failure: str | None, detail: str) -> tuple[str | None, str, str]:
    """What must stay the same: the class, the executor or target named first, and for
    everything but wrong results the error message with names and numbers blotted out."""
    first = detail.strip().split(":")[0] if detail else ""
    key = ""
    if failure not in (None, "wrong"):
        lines = [ln for ln in detail.splitlines() if "error" in ln.lower()] or detail.strip().splitlines()[-1:]
        key = lines[0].split("error:", 1)[-1] if lines else ""
        key = re.sub(r"[0-9]+", "0", re.sub(r"`[^`]*`", "`_`", key)).strip()
    return failure, first, key


def _exprs_of_stmt(s: Stmt) -> Iterator[Expr]:
    for e in s.exprs:
        if e is not None:
            yield from _walk_expr(e)


def _walk_expr(e: Expr) -> Iterator[Expr]:
    yield e
    for a in e.args:
        yield from _walk_expr(a)


def all_exprs(prog: Program) -> list[Expr]:
    out: list[Expr] = []
    for body in walk_bodies(prog):
        for s in body:
            out += list(_exprs_of_stmt(s))
    return out


def _typed(v, t) -> Expr:
    from .generate import lit

    return Expr("cast", t, [lit(float(v) if t.is_float else v)], "cast")


def candidates(prog: Program) -> Iterator[tuple[str, Callable[[Program], None]]]:
    """Edits of a clone, biggest first."""
    for k in range(len(prog.tasks)):
        yield f"drop task {k}", lambda p, k=k: p.tasks.pop(k)
    for k in range(len(prog.helpers)):
        yield f"drop helper {k}", lambda p, k=k: p.helpers.pop(k)
    nbodies = len(list(walk_bodies(prog)))
    for b in range(nbodies):
        body = list(walk_bodies(prog))[b]
        n = len(body)
        size = n
        while size >= 1:
            for start in range(0, n, size):
                def cut(p, b=b, start=start, size=size):
                    del list(walk_bodies(p))[b][start:start + size]
                yield f"drop statements {start}..{start + size} of body {b}", cut
            size //= 2
    for b in range(nbodies):
        body = list(walk_bodies(prog))[b]
        for k, s in enumerate(body):
            for j, inner in enumerate(s.bodies):
                def inline(p, b=b, k=k, j=j):
                    body = list(walk_bodies(p))[b]
                    body[k:k + 1] = body[k].bodies[j]
                yield f"inline body {j} of statement {k} in body {b}", inline
    for k, e in enumerate(all_exprs(prog)):
        options = [a for a in e.args if a.t == e.t and not a.literal]
        if e.t.kind not in ("bool", "vec", "struct") and e.op not in ("lit", "static", "var", "tid", "sgop") and \
                not (e.op == "cast" and e.args and e.args[0].op == "lit"):
            options += [_typed(0, e.t), _typed(1, e.t)]
        for opt in options:
            def swap(p, k=k, opt=opt):
                node = all_exprs(p)[k]
                node.__dict__.update(pickle.loads(pickle.dumps(opt)).__dict__)
            yield f"simplify expression {k}", swap


def drop_unused(prog: Program) -> None:
    text = render(prog)
    first_in = next((a for a in prog.arrays if a.role == "in" and not a.field), None)
    body = text.split(") -> None:", 1)[-1]
    keep = []
    for a in prog.arrays:
        if a is first_in or f"{a.name}[" in body or f"{a.name}." in body:
            keep.append(a)
    prog.arrays[:] = keep
    prog.scalars[:] = [s for s in prog.scalars if s.name in body]


def minimize(prog: Program, executors: list[str], targets: list[str], budget_s: float = 600.0,
             log=print) -> Program:
    """The smallest program found within ``budget_s`` that fails as ``prog`` does; the
    candidates' modules in a temporary folder, removed at the end."""
    with tempfile.TemporaryDirectory(prefix="qd_min_") as work:
        return _minimize(prog, executors, targets, budget_s, log, Path(work))


def _minimize(prog: Program, executors: list[str], targets: list[str], budget_s: float, log,
              workdir: Path) -> Program:
    want = signature_of(*failure_of(prog, executors, targets, workdir))
    if want[0] is None:
        raise SystemExit("the program does not fail; nothing to minimize")
    log(f"minimizing a {want[0]} ({want[1]}), {len(render(prog).splitlines())} lines")
    t0 = time.monotonic()
    best = prog
    progress = True
    while progress and time.monotonic() - t0 < budget_s:
        progress = False
        for what, edit in candidates(best):
            if time.monotonic() - t0 > budget_s:
                break
            cand = best.clone()
            try:
                edit(cand)
            except (IndexError, KeyError):
                continue
            drop_unused(cand)
            try:
                reference(cand)
            except (Invalid, Undefined, RecursionError):
                continue
            except Exception:  # noqa: BLE001 - a broken candidate
                continue
            if signature_of(*failure_of(cand, executors, targets, workdir, want[0] == "toolchain")) == want:
                best = cand
                progress = True
                log(f"  {what}: {len(render(best).splitlines())} lines")
                break  # candidates are positions in the old program: start over
    return best


def main(argv: list[str] | None = None) -> int:
    from .drive import EXECUTORS, TARGETS

    ap = argparse.ArgumentParser(prog="python -m fuzz.minimize", description=__doc__.split("\n\n")[0])
    ap.add_argument("program", type=Path, help="a program.pkl written by the driver")
    ap.add_argument("--executors", default=",".join(EXECUTORS))
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--budget", type=float, default=600.0, help="seconds to spend (default 600)")
    a = ap.parse_args(argv)
    prog = pickle.loads(a.program.read_bytes())
    small = minimize(prog, [e for e in a.executors.split(",") if e], [t for t in a.targets.split(",") if t],
                     a.budget)
    out = a.program.with_name("program.min.pkl")
    out.write_bytes(pickle.dumps(small))
    a.program.with_name("kernel.min.py").write_text(render(small))
    print(render(small))
    print(f"wrote {out} and {out.with_name('kernel.min.py')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

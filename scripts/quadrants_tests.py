"""Run Quadrants' own test files (its ``tests/python``) against this project, adapting only the
runner, and print a table of run items passed / failed / skipped per file and executor.

    python scripts/quadrants_tests.py                      # every file in FILES, every executor
    python scripts/quadrants_tests.py test_ndarray -e vulkan --failures
    python scripts/quadrants_tests.py --table              # the table of what was run before

The files come from the mirror of Quadrants' repository (``git archive HEAD tests/python``), or
from ``--quadrants-src`` (a checkout holding ``tests/python``), and are copied to a temporary
folder with the runner's files (scripts/quadrants_runner/) in place of theirs:
``tests/test_utils.py`` (the ``test(arch=...)`` decorator: which arch each executor plays, the
extensions it has) and their ``tests/python/conftest.py`` (``import quadrants`` is ``transpiler``,
qd.init before a test and qd.reset after, an outcome log) and ``quadrants._test_tools`` (their
tests' helpers: a kernel loaded from text, qd.init on the same arch). Their test files are not
changed.

Executors and the Quadrants arch each plays: ``cpu-cuda`` (the CPU executor of the CUDA text:
``cuda``, and ``x64`` for a test only for the host CPU), ``cpu-hip`` (of the HIP text:
``amdgpu``), ``vulkan`` (lavapipe, 8-lane subgroups: ``vulkan``). Each (file, executor) runs in
its own pytest process; its result is kept under ``--results`` so files can be run one at a
time and the table printed over all of them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNNER = Path(__file__).resolve().parent / "quadrants_runner"
MIRROR = Path("/work/.mirror/Genesis-Embodied-AI+quadrants/repo")
EXECUTORS = ("cpu-cuda", "cpu-hip", "vulkan")

# The files run, and the rule that chose them: a file is in when what it tests is the kernel
# language or its runtime as this project implements them (kernels and funcs, fields and
# ndarrays, scalar types and their operations, math, vectors and matrices, structs, loops,
# atomics, qd.simt and tiles, algorithms). A whole file is out when it tests
#   - a feature docs/differences.md says this project does not have: quantized types
#     (test_quant_*, test_bitpacked_fields), meshes (test_mesh), FieldsBuilder, checkpoints;
#   - Quadrants' own implementation rather than the language: its C++ core and bindings
#     (test_binding, test_cuda_internals, test_runtime, test_memory, test_gc), its IR passes
#     and their dumps, its offline cache and fast cache's files (test_cache, test_offline_cache),
#     its packaging and tools (test_pyi_stubs, test_tools_*, test_xdist_*, test_kernel_coverage),
#     its allocator, threads and devices' queues (test_metal_*, test_threading), and files whose
#     tests import its private modules throughout (test_tile imports quadrants.lang.simt._tile at
#     its top, so none of it can be collected; 168 of test_algorithms' 180 tests size their runs
#     with quadrants.algorithms._reduce / _radix_sort helpers): PRIVATE, run with --all;
#   - interoperation with a third library beyond NumPy (torch, pydantic: test_*torch*);
# and the remaining files are left for later runs (autodiff, sparse levels, the tensor/layout
# API, graphs), named in LATER so a run can include them with --all.
FILES = """
    test_ndarray test_unary_ops test_shared_array test_atomic test_bit_operations test_volatile_load
    test_simt test_math_module test_matrix test_field test_struct test_custom_struct
    test_loops test_for test_while test_if test_continue test_for_break test_function test_return
    test_argument test_cast test_types test_type_promotion test_pow test_mod test_div test_abs
    test_compare test_bool_op test_logical_op test_scalar_op test_element_wise test_reduction
    test_scan test_sort test_ndrange test_grouped test_static test_matrix_slice
    test_vector_swizzle test_local_atomics test_f16 test_overflow test_literal test_fill
    test_copy_from test_global_thread_idx test_intrinsics test_tuple_assign test_assign
    test_matrix_return test_matrix_arg test_matrix_different_type test_external_array test_numpy
""".split()
PRIVATE = ["test_tile", "test_algorithms"]
LATER = """
    test_ad_basics test_ad_for test_ad_if test_dynamic test_bitmasked test_sparse_basics test_struct_for
    test_offset test_indices test_linalg test_random test_py_dataclass test_kernel_templates
    test_syntax_errors test_lang test_basics test_graph test_svd test_eig
""".split()


def extract(src: Path | None, into: Path) -> Path:
    """Quadrants' tests/python under ``into``, with the runner's two files in place of theirs."""
    if src is not None:
        shutil.copytree(src / "tests" / "python", into / "tests" / "python")
    else:
        archive = subprocess.run(["git", "-C", str(MIRROR), "archive", "HEAD", "tests/python"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "tests" / "__init__.py").write_text("")
    shutil.copy(RUNNER / "test_utils.py", into / "tests" / "test_utils.py")
    shutil.copy(RUNNER / "conftest.py", into / "tests" / "python" / "conftest.py")
    shutil.copytree(RUNNER / "test_tools", into / "tests" / "test_tools")
    (into / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    return into


def outcomes(log: Path) -> dict[str, dict]:
    """Each test's outcome from the runner's log: failed if any phase failed (or it started
    and never finished: the file's time ran out, or the process crashed), else skipped if
    skipped, else passed."""
    items: dict[str, dict] = {}
    if not log.exists():
        return items
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        unfinished = {"outcome": "failed", "message": "started, never finished (timeout or crash)"}
        item = items.setdefault(rec["id"], unfinished)
        if rec["event"] == "start":
            continue
        if rec["outcome"] == "failed":
            item.update(outcome="failed", message=rec["message"], done=True)
        elif item.get("done") and item["outcome"] == "failed":
            continue
        elif rec["outcome"] == "skipped":
            item.update(outcome="skipped", message=rec["message"], done=True)
        elif rec["event"] == "call":
            item.update(outcome="passed", message="", done=True)
    return items


def run_one(tests: Path, name: str, executor: str, results: Path, timeout: int, project: Path) -> dict:
    log = results / f"{name}.{executor}.log"
    log.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=str(project), QDT_EXECUTOR=executor, QDT_LOG=str(log))
    cmd = [sys.executable, "-m", "pytest", "-q", "-c", str(tests / "pytest.ini"), "--rootdir", str(tests),
           f"tests/python/{name}.py"]
    start = time.time()
    try:
        proc = subprocess.run(cmd, cwd=tests, env=env, capture_output=True, text=True, timeout=timeout)
        tail = proc.stdout[-3000:] + proc.stderr[-3000:]
    except subprocess.TimeoutExpired:
        tail = f"timed out after {timeout} s"
    result = {"file": name, "executor": executor, "seconds": round(time.time() - start, 1),
              "items": outcomes(log), "tail": tail}
    (results / f"{name}.{executor}.json").write_text(json.dumps(result, indent=1))
    return result


def counts(result: dict) -> tuple[int, int, int]:
    values = [i["outcome"] for i in result["items"].values()]
    return values.count("passed"), values.count("failed"), values.count("skipped")


def table(results: Path, files: list[str], executors: list[str]) -> str:
    rows = [["file", *executors]]
    totals = {e: [0, 0, 0] for e in executors}
    for name in files:
        row = [name]
        for e in executors:
            path = results / f"{name}.{e}.json"
            if not path.exists():
                row.append("-")
                continue
            p, f, s = counts(json.loads(path.read_text()))
            totals[e] = [a + b for a, b in zip(totals[e], (p, f, s))]
            row.append(f"{p}/{f}/{s}")
        rows.append(row)
    rows.append(["total (pass/fail/skip)", *(f"{t[0]}/{t[1]}/{t[2]}" for t in totals.values())])
    rows.append(["passed of run items", *(f"{100 * t[0] / max(1, t[0] + t[1]):.1f}%" for t in totals.values())])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)


def summary(message: str) -> str:
    """The line of a failure's message that says what went wrong."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("E ") or "Error" in line or "error:" in line or line.startswith(("Failed", "assert")):
            return line[:300]
    return lines[-1][:300] if lines else ""


def failures(results: Path, files: list[str], executors: list[str]) -> str:
    out = []
    for name in files:
        for e in executors:
            path = results / f"{name}.{e}.json"
            if path.exists():
                for test_id, item in json.loads(path.read_text())["items"].items():
                    if item["outcome"] == "failed":
                        out.append(f"[{e}] {test_id}\n    {summary(item['message'])}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="test file names (test_ndarray); default: FILES")
    ap.add_argument("-e", "--executor", action="append", choices=EXECUTORS, help="default: all three")
    ap.add_argument("--quadrants-src", type=Path, help="a Quadrants checkout (default: the mirror's HEAD)")
    ap.add_argument("--results", type=Path, default=Path(tempfile.gettempdir()) / "quadrants_tests")
    ap.add_argument("--project", type=Path, default=ROOT,
                    help="the checkout whose transpiler runs them (default: this one; another: a before/after table)")
    ap.add_argument("--timeout", type=int, default=1200, help="seconds per file and executor")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--all", action="store_true", help="FILES, PRIVATE and LATER")
    ap.add_argument("--table", action="store_true", help="only print the table of earlier runs")
    ap.add_argument("--failures", action="store_true", help="list each failed item and its message")
    args = ap.parse_args(argv)
    files = [f.removesuffix(".py") for f in args.files] or (FILES + PRIVATE + LATER if args.all else FILES)
    executors = args.executor or list(EXECUTORS)
    args.results.mkdir(parents=True, exist_ok=True)
    if not args.table:
        with tempfile.TemporaryDirectory(prefix="qdtests-") as tmp:
            tests = extract(args.quadrants_src, Path(tmp))
            jobs = [(f, e) for f in files for e in executors]
            with ThreadPoolExecutor(args.jobs) as pool:
                project = args.project.resolve()
                for r in pool.map(lambda job: run_one(tests, *job, args.results, args.timeout, project), jobs):
                    p, f, s = counts(r)
                    print(f"{r['file']} [{r['executor']}] {p} passed, {f} failed, {s} skipped ({r['seconds']} s)",
                          flush=True)
    print(table(args.results, files, executors))
    if args.failures:
        print(failures(args.results, files, executors))
    return 0


if __name__ == "__main__":
    sys.exit(main())

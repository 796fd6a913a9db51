"""print() on every target and executor: records in the print buffer the manifest's `prints`
entry describes (passes/prints.py), formatted after the launch by the Python runtime
(runtime/prints.py) or the C++ header's print_text(), the same text in the same order on
every executor, as Quadrants formats it."""
from __future__ import annotations

import json
import math
import shutil
import subprocess

import numpy as np
import pytest

import transpiler as qd
from transpiler.header import render_header
from transpiler.passes.prints import HEADER, WORDS
from transpiler.runtime import prints as runtime_prints

from conftest import assert_compiles, target_names, toolchain_test

vec3 = qd.types.vector(3, qd.f32)


@qd.kernel
def show(x: qd.types.ndarray(dtype=qd.f32, ndim=1), d: qd.types.ndarray(dtype=qd.f64, ndim=1),
         b: qd.types.ndarray(dtype=qd.u8, ndim=1), v: qd.types.ndarray(dtype=vec3, ndim=1), n: qd.i64, u: qd.u64):
    print("start", n, u, True, 2.0, sep=", ")
    for i in range(x.shape[0]):
        print(i, x[i], d[i], b[i], x[i] > 0.0, v[i], "|", end=";\n")
    for i, j in qd.ndrange(2, 3):
        print(f"({i},{j}) {x[i * 3 + j]:.3e} {n:+06d} {True} {1.23}")  # (known fields: Python's text)
    print("end")


def expected_show(x, d, b, v, n, u) -> str:
    def vec(row):
        return "[" + ", ".join("%f" % float(c) for c in row) + "]"

    text = f"start, {n}, {u}, 1, 2.000000\n"
    for i in range(len(x)):
        text += f"{i} {float(x[i]):f} {float(d[i]):.12f} {int(b[i])} {int(x[i] > 0)} {vec(v[i])} |;\n"
    for i in range(2):
        for j in range(3):
            text += f"({i},{j}) {float(x[i * 3 + j]):.3e} {n:+06d} True 1.23\n"
    return text + "end\n"


def show_args(rng):
    m = 300  # three blocks of 128: the records of later blocks may arrive first
    x = rng.uniform(-2, 2, m).astype(np.float32)
    d = rng.uniform(-1e3, 1e3, m)
    b = rng.integers(0, 256, m).astype(np.uint8)
    v = rng.uniform(-5, 5, (m, 3)).astype(np.float32)
    return x, d, b, v, int(rng.integers(-10**12, -10**9)), int(rng.integers(2**63, 2**64 - 1, dtype=np.uint64))


def test_every_executor_prints_the_same_text_in_loop_order(executor, capfd, rng):
    if executor == "vulkan" and "glsl" not in target_names("f64"):
        pytest.skip("GLSL has no f64 here")
    args = show_args(rng)
    capfd.readouterr()
    show(*args)
    assert capfd.readouterr().out == expected_show(*args)


@qd.kernel
def count(n: qd.i32, hits: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(n):
        print(qd.atomic_add(hits[0], 1) >= 0, i)


def test_a_full_buffer_keeps_what_fits_and_says_how_many_were_dropped(executor, capfd):
    fits = (WORDS - HEADER) // 4  # a record: the site, the iteration, two values
    n = fits + 1000
    hits = np.zeros(1, np.int32)
    capfd.readouterr()
    count(n, hits)
    lines = capfd.readouterr().out.splitlines()
    assert hits[0] == n  # each value was computed, printed or not
    assert lines[-1] == f"[count: 1000 more print() calls dropped: the print buffer ({WORDS} words) is full]"
    printed = [int(line.split()[1]) for line in lines[:-1]]
    assert len(printed) == fits and printed == sorted(set(printed)) and all(line.startswith("1 ") for line in lines[:-1])


@qd.real_func
def report(k: qd.i32) -> qd.i32:
    print("in", k)
    return k * 2


@qd.kernel
def calls_report(x: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(1):
        print("before")
        x[i] = report(x[i])


def test_a_real_function_prints_too(capfd):
    from conftest import init_executor

    init_executor("cpu-cuda")
    x = np.array([21], np.int32)
    capfd.readouterr()
    calls_report(x)
    assert capfd.readouterr().out == "before\nin 21\n" and x[0] == 42


@pytest.mark.parametrize("spec,value,text", [
    ("%f", -math.nan, "-nan"), ("%f", math.nan, "nan"), ("%8F", -math.inf, "    -INF"), ("%.12f", 0.1, "0.100000000000"),
    ("%08lld", -42, "-0000042"), ("%llu", 2**64 - 1, "18446744073709551615"), ("%x", 255, "ff"), ("%a", 1.5, "0x1.8p+0"),
    ("%A", 0.0, "0X0P+0"), ("%+.2e", 12345.678, "+1.23e+04"), ("%d", 1, "1"),
])
def test_values_are_formatted_as_c_printf_formats_them(spec, value, text):
    assert runtime_prints.c_format(spec, value) == text


# ----------------------------------------------------------------------------- the manifest and the header

@qd.kernel
def show32(x: qd.types.ndarray(dtype=qd.f32, ndim=1), v: qd.types.ndarray(dtype=vec3, ndim=1), n: qd.i64,
           w: qd.u16):
    print("start", n, w, True, sep=", ")
    for i in range(x.shape[0]):
        print(i, x[i], x[i] > 0.0, v[i], "|", end=";\n")
    for i, j in qd.ndrange(2, 3):
        print(f"({i},{j}) {x[i * 3 + j]:.3e}")
    print("end")


def test_print_manifests_follow_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    from manifest_schema import schema

    validator = jsonschema.Draft202012Validator(schema(target_names()))
    for target in target_names():
        manifest = qd.translate(show32, target).manifest
        assert not list(validator.iter_errors(manifest)), target
        (param,) = [p for p in manifest["params"] if p.get("role") == "print"]
        assert param["name"] == manifest["prints"]["param"] and param["element_shape"] == [WORDS]
        assert [(s["task"], s["phase"], s["keys"]) for s in manifest["prints"]["sites"]] == \
            [(0, "body", 0), (1, "body", 1), (2, "body", 2), (3, "body", 0)]


@pytest.mark.toolchain
@pytest.mark.parametrize("target", target_names())
def test_printing_kernels_compile(target):
    """Metal included (compiled, not run): its text is the other targets' records."""
    assert_compiles(target, qd.translate(show32, target))
    assert_compiles(target, qd.translate(count, target))


needs_gxx = toolchain_test("needs g++", shutil.which("g++") is None)


@needs_gxx
@pytest.mark.parametrize("target", target_names("header"))
def test_the_headers_print_text_prints_what_the_runtime_prints(tmp_path, monkeypatch, rng, target):
    """A buffer one run left (cpu-cuda), formatted by the header's print_text() compiled with
    g++: the same text as the Python runtime's, for each target's header."""
    from conftest import init_executor

    init_executor("cpu-cuda")
    got = {}

    def keep(kir, values):
        got["words"] = np.array(values[next(p.name for p in kir.params if p.role == "print")], np.uint32).reshape(-1)
        got["text"] = runtime_prints.print_text(kir.name, kir.prints, got["words"])

    monkeypatch.setattr(runtime_prints, "show_prints", keep)
    x = rng.uniform(-2, 2, 300).astype(np.float32)
    x[7], x[8] = np.nan, -np.inf
    show32(x, rng.uniform(-5, 5, (300, 3)).astype(np.float32), -(2**40) - 3, 65535)
    assert got["text"].startswith("start, -1099511627779, 65535, 1\n0 ") and "7 nan 0 [" in got["text"]
    got["words"][1] = 3  # as if three calls had not fitted
    (tmp_path / "words.bin").write_bytes(got["words"].tobytes())
    (tmp_path / "k.h").write_text(render_header(qd.translate(show32, target)))
    ns = f"qd::show32::{target}"
    (tmp_path / "use.cpp").write_text(
        '#include "k.h"\n#include <cstdio>\n#include <vector>\n'
        "int main() {\n"
        f"    std::vector<std::uint32_t> words({ns}::print_buffer_words);\n"
        '    std::FILE* f = std::fopen("words.bin", "rb");\n'
        "    if (!f || std::fread(words.data(), 4, words.size(), f) != words.size()) return 2;\n"
        "    std::fclose(f);\n"
        f'    if (std::strcmp({ns}::buffers[{ns}::print_buffer].role, "print") != 0) return 3;\n'
        f"    std::fputs({ns}::print_text(words.data()).c_str(), stdout);\n"
        "}\n")
    r = subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-o", "use", "use.cpp"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[:3000]
    run = subprocess.run([str(tmp_path / "use")], capture_output=True, text=True, cwd=tmp_path)
    expected = runtime_prints.print_text("show32", json.loads(json.dumps(qd.translate(show32, target).manifest))
                                         ["prints"]["sites"], got["words"])
    assert run.returncode == 0 and run.stdout == expected
    assert expected.endswith(f"[show32: 3 more print() calls dropped: the print buffer ({WORDS} words) is full]\n")

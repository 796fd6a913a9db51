"""Bad kernels get a located error: the right line, the message, the source line and a caret."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import transpiler as qd

from conftest import load_module

BAD = Path(__file__).resolve().parent / "bad_kernels.py"
MODULE = load_module(BAD)
MARKER = re.compile(r"#\s*error(?:@(\w+))?:\s*(.+)$")
LINES = BAD.read_text().splitlines()
MARKERS = {n + 1: MARKER.search(line) for n, line in enumerate(LINES) if MARKER.search(line)}
KERNELS = [v for v in vars(MODULE).values() if isinstance(v, qd.Kernel)]


STARTS = sorted(k.fn.__code__.co_firstlineno for k in KERNELS) + [len(LINES) + 1]


def expected_target(kernel) -> str:
    """The target a kernel's own marker names (cuda when it names none)."""
    first = kernel.fn.__code__.co_firstlineno
    end = STARTS[STARTS.index(first) + 1]
    for line, m in MARKERS.items():
        if first <= line < end and m.group(1):
            return m.group(1)
    return "cuda"


@pytest.mark.parametrize("kernel", KERNELS, ids=[k.__name__ for k in KERNELS])
def test_bad_kernel_is_located(kernel):
    target = expected_target(kernel)
    with pytest.raises(qd.TranspileError) as info:
        qd.translate(kernel, target)
    err = info.value
    assert err.loc is not None, f"no location: {err}"
    assert Path(err.loc.file).resolve() == BAD
    marker = MARKERS.get(err.loc.line)
    assert marker is not None, f"reported line {err.loc.line} has no `# error:` marker:\n{err}"
    assert marker.group(2).strip() in err.message, f"{err.message!r} lacks {marker.group(2)!r}"
    text = str(err)
    # file:LINE:COL: error: message, then the source line and a caret under the column.
    head, src, caret = text.splitlines()[:3]
    assert head.startswith(f"{Path(err.loc.file).name}:{err.loc.line}:") or f":{err.loc.line}:{err.loc.col + 1}: error: " in head
    assert src.strip() == LINES[err.loc.line - 1].strip()
    assert caret.strip() == "^" and caret.index("^") - 4 == err.loc.col


def test_every_marker_is_reported():
    seen = set()
    for kernel in KERNELS:
        try:
            qd.translate(kernel, expected_target(kernel))
        except qd.TranspileError as err:
            seen.add(err.loc.line)
    assert set(MARKERS) <= seen, f"markers never reported: {sorted(set(MARKERS) - seen)}"


def test_type_errors_name_the_types():
    with pytest.raises(qd.TranspileError, match="got f32 and i32"):
        qd.translate(MODULE.bitwise_on_float, "cuda")


def test_hint_for_unknown_function():
    with pytest.raises(qd.TranspileError) as info:
        qd.translate(MODULE.unknown_function, "cuda")
    assert "hint: decorate `_Scaler.__call__` with @qd.func" in str(info.value)  # (tests/test_library_calls.py follows it)


def test_hint_names_the_cell_of_a_dynamic_list():
    with pytest.raises(qd.TranspileError) as info:
        qd.translate(MODULE.append_without_its_cell, "cuda")
    assert "hint: name the cell: lists_of_ints[i].append(...)" in str(info.value)

"""The benchmark suite's own pieces (bench/): the generated corpus, the reference-kernel
cutter, the code-quality cases and the GPU section's kernels. Nothing here is timed:
speed is measured by `make bench`, never asserted."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import transpiler as qd
from conftest import target_names

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import corpus  # noqa: E402
import refs  # noqa: E402
from common import perf_kit  # noqa: E402


def load(path: Path) -> dict:
    from transpiler.cli import load_kernels

    return load_kernels(str(path))[0]


def test_corpus_is_deterministic_and_translates_everywhere(tmp_path):
    text = corpus.generate(40, seed=8)
    assert text == corpus.generate(40, seed=8)
    # the 10-kernel file of the CLI figure is the corpus' first ten kernels
    assert corpus.generate(10, seed=8).split("\n", 1)[1] in text
    path = tmp_path / "gen_corpus.py"
    path.write_text(text)
    kernels = load(path)
    assert len(kernels) == 40
    assert any("qd.simt.block." in line for line in text.splitlines())
    for name, k in kernels.items():
        for target in target_names("subgroups"):  # the corpus uses the block library
            tr = qd.translate(k, target, warn=False)
            assert tr.sources, (name, target)


@pytest.mark.skipif(perf_kit() is None, reason="the performance reference kit (shared/reference/perf) is absent")
def test_reference_cutter_keeps_one_algorithm():
    text = (perf_kit() / "ref" / "c_decoupled_lookback.cu").read_text()
    assert refs.kernels_in(text) == ["hand_lookback_init", "hand_lookback_scan_i32", "cub_lookback_init",
                                     "cub_lookback_scan_i32"]
    hand = refs.extract(text, ["hand_lookback_init", "hand_lookback_scan_i32"])
    assert refs.kernels_in(hand) == ["hand_lookback_init", "hand_lookback_scan_i32"]
    assert "#include <cub/" not in hand and "using TileState" not in hand and "host_cub" not in hand
    cub = refs.extract(text, ["cub_lookback_init", "cub_lookback_scan_i32"])
    assert refs.kernels_in(cub) == ["cub_lookback_init", "cub_lookback_scan_i32"]
    assert "using TileState" in cub and "#include <cub/device/" not in cub and "host_cub" not in cub
    with pytest.raises(KeyError):
        refs.extract(text, ["no_such_kernel"])


def test_quality_cases_translate(tmp_path):
    import quality_kernels

    cases, notes = quality_kernels.cases(tmp_path)
    assert notes == []  # the examples still have the BLOCK / ITEMS constants the bench rescales
    for case in cases:
        for target in ("cuda", "hip"):
            assert qd.translate(case["ours"], target, warn=False).sources


@pytest.mark.toolchain
def test_gpu_section_kernels_are_right_on_the_cpu_emulator():
    import gpu

    qd.init(arch="cpu")
    results = gpu.check(1 << 12)
    assert [(name, ok) for name, ok, _ in results] == [("look-back scan", True), ("block-reduce sum", True),
                                                      ("radix sort step", True), ("device-wide sort", True),
                                                      ("device-wide exclusive scan", True)]


def test_radix_expected_is_a_stable_digit_sort():
    import gpu

    keys = np.array(list(range(255, -1, -1)) * 2, dtype=np.uint32) * np.uint32(0x101)
    out = gpu.radix_expected(keys)
    blocks = out.reshape(-1, gpu.RADIX_BLOCK)
    assert all(np.all(np.diff(b & 0xFF) >= 0) for b in blocks)


@pytest.mark.toolchain
def test_vs_quadrants_kernels_compute_what_numpy_does(executor):
    """Every kernel bench/vs_quadrants.py times, at a small size, checked against NumPy the
    way vs_runner checks it, on each executor: a table of ratios over a wrong result would
    measure nothing (Quadrants' block scan at 4M is one)."""
    import vs_quadrants
    import vs_runner

    for name in vs_quadrants.KERNELS:
        kernel, args, check = vs_runner.case(name, 4096)
        kernel(*args)
        qd.sync()
        assert check(), name


@pytest.mark.toolchain
@pytest.mark.slow
def test_sort_pass_sass_per_key_is_within_goal_of_cub(tmp_path):
    """bench/quality.py's sort rows: our onesweep pass against CUB's, sm_90 SASS per key
    (issue 47: within 1.2x), and no local-memory traffic (spills) in ours."""
    import quality_sort
    from common import cuda_tool

    if perf_kit() is None or not (cuda_tool("nvcc") and cuda_tool("cuobjdump")):
        pytest.skip("needs the perf kit, nvcc and cuobjdump")
    report: dict = {}
    quality_sort.sort_pass(report, tmp_path)
    row = report["sort_per_key"]
    assert "ratio" in row, row
    assert row["ratio"] <= quality_sort.RATIO_GOAL, row["ratio"]
    assert row["ours"]["classes"]["LDL/STL"] == 0


@pytest.mark.toolchain
@pytest.mark.slow
def test_library_scan_sass_per_item_is_within_goal_of_cub(tmp_path):
    """bench/quality.py's scan rows: qd.algorithms.exclusive_scan_add's scanning launch
    against CUB's DeviceScanKernel, sm_90 SASS per item (issue 47: within 1.1x), and no
    local-memory traffic (spills) in ours."""
    import quality_device
    from common import cccl_include, cuda_tool

    if not (cuda_tool("nvcc") and cuda_tool("cuobjdump") and cccl_include()):
        pytest.skip("needs nvcc, cuobjdump and CUB's headers")
    ref = quality_device.cub_scan()
    assert not isinstance(ref, str), ref
    lib = quality_device.library_scan(tmp_path, ref[1])
    assert not isinstance(lib, str), lib
    row, m = lib
    assert m["ratio"] <= quality_device.RATIO_GOAL, row
    assert m["spill"] == 0 and m["local"] == 0, row

"""The kernels whose generated code is compared with the hand-written and CUB references
(reference/perf/ref/*.cu), written at the references' shapes: 256-thread blocks, f32
reduce, i32 scans, 8-bit radix digits.

The last-block reduce and the look-back scan are the examples themselves
(examples/last_block_reduce.py, examples/lookback_scan.py), re-instantiated with the
references' BLOCK = 256 and ITEMS = 8, so the bench follows the examples as they change."""
from __future__ import annotations

import re
from pathlib import Path

import transpiler as qd

BLOCK = 256
f32v = qd.types.ndarray(dtype=qd.f32, ndim=1)
i32v = qd.types.ndarray(dtype=qd.i32, ndim=1)
u32v = qd.types.ndarray(dtype=qd.u32, ndim=1)


@qd.kernel
def block_reduce_f32(x: f32v, out: f32v):
    qd.loop_config(block_dim=BLOCK)
    for i in range(x.shape[0]):
        s = qd.simt.block.reduce_add(x[i], BLOCK, qd.f32)
        if qd.simt.block.thread_idx() == 0:
            out[i // BLOCK] = s


@qd.kernel
def block_inclusive_i32(x: i32v, y: i32v):
    qd.loop_config(block_dim=BLOCK)
    for i in range(x.shape[0]):
        y[i] = qd.simt.block.inclusive_add(x[i], BLOCK, qd.i32)


@qd.kernel
def block_exclusive_i32(x: i32v, y: i32v):
    qd.loop_config(block_dim=BLOCK)
    for i in range(x.shape[0]):
        y[i] = qd.simt.block.exclusive_add(x[i], BLOCK, qd.i32)


@qd.kernel
def radix_rank_u32(keys: u32v, ranks: i32v, bit: qd.i32):
    qd.loop_config(block_dim=BLOCK)
    for i in range(keys.shape[0]):
        bins = qd.simt.block.SharedArray((256,), qd.i32)
        excl = qd.simt.block.SharedArray((256,), qd.i32)
        ranks[i] = qd.simt.block.radix_rank_match_atomic_or(keys[i], BLOCK, 8, bit, 8, bins, excl)


def rescaled_example(name: str, workdir: Path, **constants) -> tuple[Path, str]:
    """examples/NAME.py with its module constants set (``BLOCK=256``), written to ``workdir``;
    returns the path and a note when a constant was not found (the example's own value stays)."""
    root = Path(__file__).resolve().parent.parent
    text = (root / "examples" / f"{name}.py").read_text()
    missing = []
    for const, value in constants.items():
        text, n = re.subn(rf"^{const} = \d+$", f"{const} = {value}", text, count=1, flags=re.M)
        if n == 0:
            missing.append(const)
    path = workdir / f"{name}_bench.py"
    path.write_text(text)
    note = f"{name}: kept the example's own {', '.join(missing)}" if missing else ""
    return path, note


def cases(workdir: Path) -> tuple[list[dict], list[str]]:
    """Each comparison: our kernel (object), and the reference kernels by ref file."""
    from transpiler.cli import load_kernels

    lb_path, n1 = rescaled_example("last_block_reduce", workdir, BLOCK=BLOCK)
    sc_path, n2 = rescaled_example("lookback_scan", workdir, BLOCK=BLOCK, ITEMS=8)
    lb, _ = load_kernels(str(lb_path))
    sc, _ = load_kernels(str(sc_path))
    notes = [n for n in (n1, n2) if n]
    return [
        {"name": "block reduce f32", "ours": block_reduce_f32, "ref": "a_block_reduce.cu",
         "hand": ["hand_block_reduce_f32"], "cub": ["cub_block_reduce_f32"], "controls": ["control_block_reduce_f32"]},
        {"name": "inclusive scan i32", "ours": block_inclusive_i32, "ref": "b_block_scan.cu",
         "hand": ["hand_block_inclusive_i32"], "cub": ["cub_block_inclusive_warpscans_i32"],
         "controls": ["control_block_inclusive_i32"]},
        {"name": "exclusive scan i32", "ours": block_exclusive_i32, "ref": "b_block_scan.cu",
         "hand": ["hand_block_exclusive_i32"], "cub": ["cub_block_exclusive_warpscans_i32"],
         "controls": ["control_block_exclusive_i32"]},
        {"name": "radix rank u32 8-bit", "ours": radix_rank_u32, "ref": "d_block_radix_rank.cu",
         "hand": ["hand_radix_rank_match_u32"], "cub": ["cub_radix_rank_match_u32"],
         "note": "ours ranks 1 key per thread, the references 4"},
        {"name": "last-block reduce f32", "ours": lb["sum_last_block"], "ref": "e_last_block_reduce.cu",
         "hand": ["hand_last_block_reduce_f32", "hand_last_block_reduce_acqrel_f32"],
         "cub": ["cub_last_block_reduce_f32"],
         "hand_nvrtc": ["hand_last_block_reduce_f32"]},
        {"name": "look-back scan i32", "ours": sc["prefix_sum"], "ref": "c_decoupled_lookback.cu",
         "hand": ["hand_lookback_init", "hand_lookback_scan_i32"],
         "cub": ["cub_lookback_init", "cub_lookback_scan_i32"],
         "note": "ours: 8 items per thread, staged through shared memory for coalesced loads and stores"},
    ], notes

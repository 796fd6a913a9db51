"""What a corpus program needs from its runner (scripts/corpus.py): which module ``qd`` is
(``QD_MODULE``: transpiler or quadrants), which executor ``init()`` picks (``CORPUS_ARCH``:
vulkan or cpu; ``CORPUS_DIALECT=hip``: the CPU executor of the HIP text), the starting state (from
NumPy, seeded: every runtime starts from the same numbers, where ``qd.random`` would differ),
and where the fields go at the end (``CORPUS_OUT``, an .npz file).

A program imports ``qd`` from here in place of its ``import taichi as ti`` / ``import
quadrants as qd``; nothing else in its kernels changes."""
from __future__ import annotations

import importlib
import os
import sys

import numpy as np

MODULE = os.environ.get("QD_MODULE", "transpiler")
if MODULE == "transpiler":  # the checkout this file is in, ahead of any installed copy
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
qd = importlib.import_module(MODULE)


def init(**options) -> None:
    """``qd.init`` with the program's own options (default_fp, ...) on the runner's executor."""
    options.pop("arch", None)
    arch = os.environ.get("CORPUS_ARCH", "cpu")
    if MODULE == "transpiler":
        if os.environ.get("CORPUS_DIALECT"):
            options["dialect"] = os.environ["CORPUS_DIALECT"]
        qd.init(arch=arch, enable_fallback=False, **options)
    else:
        qd.init(arch=getattr(qd, arch), **options)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def dump(**fields) -> None:
    """Every field (or ndarray, or NumPy array) by name, into ``CORPUS_OUT``."""
    arrays = {k: np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v) for k, v in fields.items()}
    out = os.environ.get("CORPUS_OUT")
    if out:
        np.savez(out, **arrays)
    else:
        for k, a in arrays.items():
            print(f"{k}: {a.dtype}{list(a.shape)} sum {a.astype(np.float64).sum():.6g}")

"""``qd.extension`` and ``qd.is_extension_enabled(ext)``: Quadrants' names for its optional
features, and which of them this package has, on every executor: sparse levels (emulated on
dense storage), 64-bit types, reverse mode through loops that carry values (replayed, where
Quadrants keeps a stack: ``adstack``), asserts under ``debug=True`` and block-local storage (a
hint). Quantized types, meshes and external functions it does not have (docs/differences.md)."""
from __future__ import annotations

import enum


class Extension(str, enum.Enum):
    sparse = "sparse"
    quant = "quant"
    quant_basic = "quant_basic"
    data64 = "data64"
    adstack = "adstack"
    bls = "bls"
    assertion = "assertion"
    extfunc = "extfunc"
    mesh = "mesh"


PROVIDED = frozenset({Extension.sparse, Extension.data64, Extension.adstack, Extension.bls, Extension.assertion})


def is_extension_enabled(ext: Extension | str) -> bool:
    """Whether kernels here may use ``ext`` (the same on every executor this package has)."""
    return Extension(ext) in PROVIDED

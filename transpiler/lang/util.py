"""``qd.lang.util``: the helpers of Quadrants' module of that name that user code calls."""
from __future__ import annotations

import shutil

from .external import has_pytorch, to_numpy_type, to_pytorch_type

__all__ = ["has_pytorch", "has_clangpp", "to_numpy_type", "to_pytorch_type"]


def has_clangpp() -> bool:
    return shutil.which("clang++") is not None

"""One module per target language; ``get_target`` imports only the one asked for."""
from __future__ import annotations

import importlib

from .emit import Target

_MODULES = {"cuda": ("cuda", "CudaTarget"), "hip": ("hip", "HipTarget"),
            "glsl": ("glsl", "GlslTarget"), "msl": ("msl", "MslTarget")}


def get_target(name: str) -> Target:
    module, cls = _MODULES[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)()

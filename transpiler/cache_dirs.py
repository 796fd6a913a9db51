"""Where the package keeps what it caches on disk (SPIR-V, the offline cache's translations)."""
from __future__ import annotations

import os


def cache_dir(kind: str) -> str:
    """``$QD_CACHE_DIR/kind``, else ``$XDG_CACHE_HOME/transpiler/kind`` (``~/.cache/transpiler/kind``)."""
    base = os.environ.get("QD_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "transpiler")
    return os.path.join(base, kind)

"""``load_kernel_from_string``: a kernel written as text, imported from a file of its own (the
language reads a kernel's source from its file)."""
from __future__ import annotations

import contextlib
import importlib.util
import sys
import tempfile
from pathlib import Path


@contextlib.contextmanager
def load_kernel_from_string(source: str, name: str):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
            yield getattr(module, name)
        finally:
            sys.modules.pop(name, None)

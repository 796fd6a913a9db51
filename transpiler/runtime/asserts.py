"""Debug mode's failed asserts, read back after a launch (frontend/debug_checks.py writes
the report): the first failing thread's message, raised as Python's AssertionError."""
from __future__ import annotations

import numpy as np

from ..errors import KernelAssertionError
from ..ir import nodes as ir
from ..ir import types as T
from .prints import decode_scalars


def raise_failed_assert(kir: ir.Kernel, values: dict) -> None:
    param = next(p for p in kir.params if p.role == "assert")
    words = np.asarray(values[param.name]).reshape(-1)
    if words[0] == 0:
        return
    check = kir.asserts[int(words[0]) - 1]
    raise KernelAssertionError(failed_assert_message(check, words[1:]))


def failed_assert_message(check: dict, words: np.ndarray) -> str:
    """The message of ``check`` (a manifest ``asserts`` entry) from the words its values left."""
    values, _ = decode_scalars(check["args"], words)  # (as frontend/debug_checks.py's _words stored them)
    args = [bool(v) if T.SCALARS[name] is T.bool_ else v for name, v in zip(check["args"], values, strict=True)]
    text = ""
    for part in check["parts"]:
        if "text" in part:
            text += part["text"]
        elif part["style"] == "percent":
            text += part["spec"] % args[part["arg"]]
        else:
            text += format(args[part["arg"]], part["spec"])
    where = f"{check['file']}:{check['line']}: {check['what']}"
    return f"{text} ({where})" if text else f"Assertion failure: {where}"

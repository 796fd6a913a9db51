"""Debug mode's failed asserts, read back after a launch (frontend/debug_checks.py writes
the report): the first failing thread's message, raised as Python's AssertionError."""
from __future__ import annotations

import numpy as np

from ..errors import KernelAssertionError
from ..ir import nodes as ir
from ..ir import types as T


def raise_failed_assert(kir: ir.Kernel, values: dict) -> None:
    param = next(p for p in kir.params if p.role == "assert")
    words = np.asarray(values[param.name]).reshape(-1)
    if words[0] == 0:
        return
    check = kir.asserts[int(words[0]) - 1]
    raise KernelAssertionError(failed_assert_message(check, words[1:]))


def failed_assert_message(check: dict, words: np.ndarray) -> str:
    """The message of ``check`` (a manifest ``asserts`` entry) from the words its values left."""
    args, at = [], 0
    for name in check["args"]:  # (as frontend/debug_checks.py's _words stored them)
        t = T.SCALARS[name]
        n = 2 if t.bits == 64 else 1
        raw = np.asarray(words[at:at + n], np.uint32)
        at += n
        if n == 2:
            args.append(raw.view(t.np_dtype)[0].item())
        elif t.is_float:  # (an f16 was widened to f32)
            args.append(float(raw.view(np.float32)[0]))
        elif t is T.bool_:
            args.append(bool(raw[0]))
        else:  # (a narrow integer was widened to 32 bits)
            args.append(int(raw.view(np.int32 if t.kind == "int" else np.uint32)[0]))
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

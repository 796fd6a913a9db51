"""Debug mode's failed asserts, read back after a launch (frontend/debug_checks.py writes
the report): the first failing thread's message, raised as Python's AssertionError."""
from __future__ import annotations

import numpy as np

from ..errors import KernelAssertionError
from ..ir import nodes as ir


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
    for name in check["args"]:
        dtype = np.dtype({"bool": np.bool_, "f16": np.float32}.get(name, name.replace("f", "float").replace(
            "u", "uint").replace("i", "int")) if name not in ("bool",) else np.bool_)
        n = 2 if dtype.itemsize == 8 else 1
        raw = np.asarray(words[at:at + n], np.uint32)
        at += n
        if dtype.itemsize == 8:
            args.append(raw.view(dtype)[0].item())
        elif dtype.kind == "f":
            args.append(float(raw.view(np.float32)[0]))
        elif dtype == np.bool_:
            args.append(bool(raw[0]))
        else:
            args.append(int(raw.view(np.int32 if dtype.kind == "i" else np.uint32)[0]))
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

"""What a kernel's ``print()`` calls wrote to its print buffer (passes/prints.py lays the
records out), formatted as C's printf formats them and written to stdout after the launch:
the same text on every executor. The C++ header's ``print_text()`` does the same for embedders."""
from __future__ import annotations

import math
import sys

import numpy as np

from ..ir import nodes as ir
from ..ir import types as T
from ..passes.prints import HEADER, PHASES


def show_prints(kir: ir.Kernel, values: dict) -> None:
    param = next(p for p in kir.params if p.role == "print")
    words = np.asarray(values[param.name]).reshape(-1).view(np.uint32)
    text = print_text(kir.name, kir.prints, words)
    if text:
        sys.stdout.write(text)
        sys.stdout.flush()


def print_text(kernel: str, sites: list[dict], words: np.ndarray) -> str:
    """The text of the records in ``words`` (a whole print buffer), ordered by task, phase,
    iteration and offset, with a note of the records that did not fit."""
    records, at, end = [], 0, min(int(words[0]), len(words) - HEADER)
    while at < end and words[HEADER + at]:  # (a zero: a record that did not fit, and none after it did)
        site = sites[int(words[HEADER + at]) - 1]
        record = words[HEADER + at + 1:]
        keys = tuple(int(k) for k in record[:site["keys"]].view(np.int32))
        args, n = decode_scalars(site["args"], record[site["keys"]:])
        task = (1 << 31) if site["task"] is None else site["task"]
        phase = PHASES.index(site["phase"]) if site["phase"] else 0
        records.append(((task, phase, keys, at), site, args))
        at += 1 + site["keys"] + n
    records.sort(key=lambda r: r[0])
    text = "".join(_format(site["parts"], args) for _, site, args in records)
    dropped = int(words[1])
    if dropped:
        text += f"[{kernel}: {dropped} more print() call{'s' if dropped != 1 else ''} dropped: the print buffer " \
                f"({len(words)} words) is full]\n"
    return text


def decode_scalars(types: list[str], words: np.ndarray) -> tuple[list, int]:
    """The values of ``types`` from their words (a 64-bit one low word first; a narrower one
    widened to 32 bits, a bool as 0 or 1), and how many words they took: a print record's
    values, a failed assert's."""
    out, at = [], 0
    for name in types:
        t = T.SCALARS[name]
        n = 2 if t.bits == 64 else 1
        raw = np.ascontiguousarray(words[at:at + n], np.uint32)
        at += n
        if n == 2:
            out.append(raw.view(t.np_dtype)[0].item())
        elif t.is_float:  # (an f16 was widened to f32)
            out.append(float(raw.view(np.float32)[0]))
        else:  # (a narrow integer or a bool was widened to 32 bits)
            out.append(int(raw.view(np.int32 if t.kind == "int" else np.uint32)[0]))
    return out, at


def _format(parts: list[dict], args: list) -> str:
    return "".join(p["text"] if "text" in p else c_format(p["spec"], args[p["arg"]]) for p in parts)


def c_format(spec: str, value: int | float) -> str:
    """``value`` as C's printf prints it with ``spec`` ("%.3f", "%08lld"): Python's % but
    for a NaN's sign (-nan) and %a's hexadecimal float."""
    spec = spec.replace("ll", "")  # (Python's % takes no length modifier)
    if spec[-1] in "aA":
        mantissa, exponent = float(value).hex().split("p")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        text = f"{mantissa}p{exponent}"
        return text.upper() if spec[-1] == "A" else text
    if isinstance(value, float) and math.isnan(value) and math.copysign(1.0, value) < 0:
        return (spec % -math.inf).replace("inf", "nan").replace("INF", "NAN")
    return spec % value

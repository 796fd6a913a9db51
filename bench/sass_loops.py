"""SASS of whole device-wide kernels, per element: compile a .cu with the pip nvcc for sm_90
(ptxas -v for registers and spills), disassemble with cuobjdump -sass, and read off

- the hot loop: of the loops (a branch back to a lower address, with the instructions between
  the target and the branch), the one that loads the most bytes per instruction: the loop a
  device-wide reduce spends its time in on aligned data. Its elements per iteration are its
  global load bytes over the element size, so the counts divide into per-element costs;
- the whole kernel's instructions (up to the last EXIT) and memory instruction classes, for
  kernels without such a loop (a single-pass scan does one tile per block): divided by the
  items a thread handles, a static per-item cost.

No GPU is needed; nothing runs.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from common import cccl_include, cuda_tool

INSN = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;")
FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
PRED = re.compile(r"^@!?U?P(?:T|\d+)\s+")
BRANCH = re.compile(r"^BRA(?:\.\S+)?\s+0x([0-9a-f]+)")
WIDTH = {"128": 16, "64": 8, "U8": 1, "S8": 1, "U16": 2, "S16": 2}
GLOBAL = ("LDG", "STG", "LD", "ST")
SHARED = ("LDS", "STS", "ATOMS", "LDSM")


def compile_sass(source: Path, arch: str = "sm_90") -> dict[str, dict] | str:
    """Per kernel (mangled name): regs, spill bytes and its instructions [(address, text)]
    without predicates; or why it could not be built."""
    nvcc, cuobjdump, cccl = cuda_tool("nvcc"), cuda_tool("cuobjdump"), cccl_include()
    if not (nvcc and cuobjdump):
        return "needs nvcc and cuobjdump (pip install nvidia-cuda-nvcc nvidia-cuda-cuobjdump)"
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        cmd = [nvcc, f"-arch={arch}", "-cubin", "-std=c++17", "-Xptxas", "-v", "-o", str(cubin), str(source)]
        if cccl:
            cmd.insert(1, f"-I{cccl}")
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return (p.stderr or p.stdout).strip()[-400:]
        sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True).stdout
    usage = _ptxas_usage(p.stderr + p.stdout)
    out: dict[str, dict] = {}
    cur = None
    for line in sass.splitlines():
        m = FUNC.match(line)
        if m:
            cur = out.setdefault(m.group(1), {"insts": [], **usage.get(m.group(1), {})})
            continue
        m = INSN.match(line)
        if m and cur is not None:
            cur["insts"].append((int(m.group(1), 16), PRED.sub("", m.group(2))))
    for k in out.values():
        last = max((i for i, (_, t) in enumerate(k["insts"]) if t.startswith("EXIT")), default=len(k["insts"]) - 1)
        k["insts"] = [x for x in k["insts"][: last + 1] if not x[1].startswith("NOP")]
    return out


def _ptxas_usage(log: str) -> dict[str, dict]:
    usage, name = {}, None
    for line in log.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$]+)'?", line)
        if m:
            name = m.group(1)
            usage.setdefault(name, {})
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and name:
            usage[name]["spill"] = int(m.group(1)) + int(m.group(2))
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            usage[name]["regs"] = int(m.group(1))
    return usage


def _op(text: str) -> str:
    return text.split()[0]


def _bytes(op: str) -> int:
    return next((v for k, v in WIDTH.items() if f".{k}" in op), 4)


def classes(insts: list[tuple[int, str]]) -> dict[str, int]:
    ops = [_op(t) for _, t in insts]
    return {"insts": len(ops),
            "global": sum(o.split(".")[0] in GLOBAL for o in ops),
            "shared": sum(o.split(".")[0] in SHARED for o in ops),
            "load_bytes": sum(_bytes(o) for o in ops if o.split(".")[0] in ("LDG", "LD"))}


def hot_loop(insts: list[tuple[int, str]]) -> dict | None:
    """The innermost-or-not loop loading the most bytes per instruction, with its classes."""
    best = None
    for addr, text in insts:
        m = BRANCH.match(text)
        if not m or int(m.group(1), 16) > addr:
            continue
        start = int(m.group(1), 16)
        body = classes([x for x in insts if start <= x[0] <= addr])
        if body["load_bytes"] and (best is None or body["load_bytes"] / body["insts"] >
                                   best["load_bytes"] / best["insts"]):
            best = body
    return best


def find(kernels: dict[str, dict], *parts: str) -> tuple[str, dict] | None:
    """The kernel whose mangled name holds every part."""
    return next(((k, v) for k, v in kernels.items() if all(p in k for p in parts)), None)

"""Output is byte-identical across processes with different hash seeds."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import hashlib, json, sys
sys.path.insert(0, "tests")
import transpiler as qd
from conftest import corpus, target_names
h = hashlib.sha256()
for _, kernel, targs in corpus():
    for target in target_names():
        try:
            tr = qd.translate(kernel, target, template_args=targs)
        except qd.TranspileError as exc:
            h.update(str(exc).encode())
            continue
        for name, text in tr.sources.items():
            h.update(name.encode() + text.encode())
        h.update(json.dumps(tr.manifest, sort_keys=False).encode())
print(h.hexdigest())
"""


def render(seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_two_processes_two_hash_seeds_same_bytes():
    assert render("1") == render("424242")

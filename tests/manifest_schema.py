"""The manifest schema's two lines that list targets, generated from the target registry.

docs/manifest.schema.json is written by hand except the ``target`` enum and the ``file``
name pattern (one extension per target): those are rendered here from ``Target.name`` and
``Target.file_ext``. tests/test_embedding.py checks that the committed file equals the one
generated for the built-in targets, and validates manifests against the one generated for
every registered target (so a target registered from outside validates too; the rules per
target in the schema's ``allOf`` cover the built-in ones).

After adding a built-in target: ``python tests/manifest_schema.py`` rewrites the file."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script too

from transpiler.targets import TARGETS, get_target  # noqa: E402 - after sys.path names the checkout

SCHEMA = ROOT / "docs" / "manifest.schema.json"
_TARGET = re.compile(r'^(    "target": )\{"enum": \[[^\]]*\]\},$', re.M)
_FILE = re.compile(r'^(    "file": \{"type": "string", "pattern": "[^"]*\\\\\.)\([^)]*\)(\$"\},)$', re.M)


def schema_text(targets: list[str]) -> str:
    """The schema file's text with its target list and file extensions those of ``targets``."""
    text = SCHEMA.read_text()
    extensions = "|".join(dict.fromkeys(get_target(t).file_ext.lstrip(".") for t in targets))
    text, n_target = _TARGET.subn(lambda m: m.group(1) + '{"enum": ' + json.dumps(list(targets)) + "},", text)
    text, n_file = _FILE.subn(lambda m: f"{m.group(1)}({extensions}){m.group(2)}", text)
    assert n_target == n_file == 1, "the schema's target enum or file pattern line changed its form"
    return text


def schema(targets: list[str]) -> dict:
    return json.loads(schema_text(targets))


if __name__ == "__main__":
    SCHEMA.write_text(schema_text(list(TARGETS)))

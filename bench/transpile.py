"""Translation latency alone: section 1 of bench/run.py (per kernel and target, warm and
cold, the generated corpus, the CLI's cold start). Prints tables; asserts nothing.

    python bench/transpile.py [--repeat N] [--json FILE] [--quick]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import main  # noqa: E402

if __name__ == "__main__":
    args = sys.argv[1:]
    if not any(a == "--json" or a.startswith("--json=") for a in args):
        args += ["--json", str(Path(__file__).resolve().parent / "report-translation.json")]
    sys.exit(main(["--sections", "1", *args]))

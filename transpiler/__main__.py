"""``python -m transpiler``: the same command as ``transpiler``."""
import sys

from .cli import main

sys.exit(main())

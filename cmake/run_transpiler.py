"""The `transpiler` command of the package this file is installed with (transpiler/cmake/):
what Transpiler.cmake runs after `pip install`, wherever pip put the package."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from transpiler.cli import main  # noqa: E402

sys.exit(main())

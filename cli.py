"""The transpiler's command line in a checkout: `python cli.py emit|check|inspect ...`.

Installed, the same program is the `transpiler` command (see transpiler/cli.py)."""
import sys

from transpiler.cli import main

if __name__ == "__main__":
    sys.exit(main())

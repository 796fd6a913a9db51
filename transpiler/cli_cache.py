"""``transpiler cache info`` and ``transpiler cache clean``: the package's on-disk caches
(transpiler/cache.py), as Quadrants' ``qd cache clean`` empties its own."""
from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from . import cache


def add_cache_command(sub: argparse._SubParsersAction, parents: Sequence[argparse.ArgumentParser] = ()) -> None:
    """``cache`` and its two actions, as a subcommand of the command line."""
    c = sub.add_parser("cache", parents=list(parents), help="show (info) or empty (clean) the on-disk caches",
                       description="The caches: " + "; ".join(f"{k.name}, {k.what}" for k in cache.KINDS.values())
                                   + ". Each under $QD_CACHE_DIR, else $XDG_CACHE_HOME/transpiler "
                                     "(~/.cache/transpiler); bound and policy as qd.init's offline_cache_* options "
                                     "(environment: QD_OFFLINE_CACHE_MAX_SIZE_OF_FILES, "
                                     "QD_OFFLINE_CACHE_CLEANING_POLICY).")
    actions = c.add_subparsers(dest="action", required=True)
    info = actions.add_parser("info", help="each cache's folder, entries, size and bound")
    info.set_defaults(run=cmd_info)
    clean = actions.add_parser("clean", help="empty the caches (every one, or those named)")
    clean.add_argument("kinds", nargs="*", type=kind_arg, metavar="CACHE",
                       help=f"among {', '.join(cache.KINDS)} (default: all)")
    clean.set_defaults(run=cmd_clean)


def kind_arg(text: str) -> str:
    if text not in cache.KINDS:
        raise argparse.ArgumentTypeError(f"no cache {text!r}; the caches are {', '.join(cache.KINDS)}")
    return text


def human(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def cmd_info(args: argparse.Namespace) -> int:
    rows = [("cache", "folder", "entries", "size", "bound")]
    for kind in cache.KINDS.values():
        folder = cache.directory(kind.name)
        found = cache.entries(kind.name, folder) if os.path.isdir(folder) else []
        limit = cache.bound(kind.name)
        shown = human(limit) if limit is not None else "none (its templates)" if kind.bound is None else "none"
        rows.append((kind.name, folder, str(len(found)), human(sum(e.size for e in found)), shown))
    widths = [max(len(r[k]) for r in rows) for k in range(5)]
    for r in rows:
        print("  ".join(cell.rjust(w) if k in (2, 3) else cell.ljust(w) for k, (cell, w) in enumerate(zip(r, widths)))
              .rstrip())
    s = cache.settings()
    print(f"policy {s.policy}, cleaning factor {s.factor:g} (qd.init's offline_cache_cleaning_policy and "
          "offline_cache_cleaning_factor, or their QD_ environment variables)")
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    for name in args.kinds or cache.KINDS:
        folder = cache.directory(name)
        count, size = cache.clean(name, folder)
        print(f"{name}: removed {count} entries, {human(size)} ({folder})")
    return 0

"""`matbench cache list|clear`: see and free what matbench keeps in MATBENCH_CACHE."""

from __future__ import annotations

import argparse


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cache",
        help="list or clear matbench's cache (dequantised GGUF models, assembled offline models)",
        description="matbench keeps each GGUF model it loads as a float32 copy (several times the "
        "file's size) and the offline models' assembled files in MATBENCH_CACHE (default "
        "~/.cache/matbench). Cleared entries are rebuilt on the next load.",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", help="every entry with its size and source").set_defaults(func=run_list)
    clear = actions.add_parser(
        "clear", help="delete the entries named (as `list` prints them), or every one with --all"
    )
    clear.add_argument("names", nargs="*", metavar="NAME")
    clear.add_argument("--all", action="store_true", help="every entry")
    clear.set_defaults(func=run_clear)


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB"


def run_list(args: argparse.Namespace) -> int:
    from matbench.models.cache import cache_entries
    from matbench.models.sources import cache_root

    entries = cache_entries()
    print(f"{cache_root()}: {len(entries)} entries, {_gb(sum(e.bytes for e in entries))}")
    for e in entries:
        print(f"{e.name:<32} {_gb(e.bytes):>10}  {e.kind}: {e.source}")
    return 0


def run_clear(args: argparse.Namespace) -> int:
    from matbench.errors import MatbenchError
    from matbench.models.cache import cache_entries, remove, select

    entries = cache_entries()
    if args.all == bool(args.names):
        raise MatbenchError("name the entries to clear (`matbench cache list` shows them) or pass --all, not both")
    chosen = entries if args.all else select(entries, args.names)
    freed = remove(chosen)
    print(f"cleared {len(chosen)} entries, freed {_gb(freed)}")
    return 0

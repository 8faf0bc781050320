"""Argument helpers shared by several commands."""

from __future__ import annotations

import argparse


def add_dialog_sources(p: argparse.ArgumentParser) -> None:
    p.add_argument("--locomo", metavar="PATH", help="your copy of LoCoMo's locomo10.json (harvest suite)")
    p.add_argument("--realtalk", metavar="DIR", help="your folder of REALTALK's Chat_*.json (harvest suite)")


def choices(what: str, allowed: tuple[str, ...]):
    def parse(text: str) -> tuple[str, ...]:
        items = tuple(t.strip() for t in text.split(",") if t.strip())
        if items == ("all",):
            return tuple(a for a in allowed if a != "auto")
        bad = [t for t in items if t not in allowed]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"unknown {what} {','.join(bad) or text!r}; choose from {', '.join(allowed)} or all")
        return items

    return parse

"""Markdown summary of discovery results files (one row per model x readout x serving)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _classes(arm: dict) -> str:
    c = arm["classes"]
    return f"{c['follow']}/{c['anti']}/{c['const']}/{c['other']}"


def discovery_rows(paths: list[Path]) -> list[str]:
    head = ("| model | readout | serving | root f/a/c/o | root p | prevalence | chain f/a/c/o | chain p "
            "| comprehension (txt) [95% CI] | root shift mean [95% CI] | root shift +:- (sign p) "
            "| control f+a, shift≠0 | gates passed |")
    rows = [head, "|" + "---|" * (head.count("|") - 1)]
    for path in sorted(paths):
        r = json.loads(path.read_text())
        cfg, arms = r["config"], r["metrics"]["arms"]
        root, chain, txt, ctl = arms["root"], arms["chain"], arms["txt"], arms["control"]
        shift = root["donor_shift"]
        gates = ", ".join(f"{g} {v['passed']}/{v['checked']}" + (f" ({v['skipped']} n/a)" if v.get("skipped") else "")
                          for g, v in sorted(r.get("gates", {}).items())) or "not run"
        rows.append(
            f"| {cfg['model']['model']} | {cfg['readout']} | {cfg['serving']} | {_classes(root)} "
            f"| {root['follow_anti_p']:.3g} | {root['prevalence']:.3f} | {_classes(chain)} | {chain['follow_anti_p']:.3g} "
            f"| {txt['menu_accuracy']:.3f} [{txt['menu_accuracy_ci'][0]:.3f}, {txt['menu_accuracy_ci'][1]:.3f}] "
            f"| {shift['mean']:+.4f} [{shift['ci'][0]:+.4f}, {shift['ci'][1]:+.4f}] "
            f"| {shift['positive']}:{shift['negative']} ({shift['sign_p']:.3g}) "
            f"| {ctl['classes']['follow'] + ctl['classes']['anti']}, {ctl['donor_shift']['positive'] + ctl['donor_shift']['negative']} "
            f"| {gates} |"
        )
    return rows


if __name__ == "__main__":
    print("\n".join(discovery_rows([Path(p) for p in sys.argv[1:]])))

"""`matbench audit`: run serving policies over suites and summarize what their kept rows carry."""

from __future__ import annotations

import argparse
from pathlib import Path

AUDIT_EPILOG = """examples:
  matbench audit --model smollm2-135m --suite discovery,access --policy snapkv --policy knorm \\
      --budget 0.25,0.5,0.75,0.875 --source-mode natural,evicted --check --output out/audit
  matbench audit --summarize results/audit

outputs: every eval results file (one per suite x policy x budget x source mode, and the
oracle's, all of a suite served from one prefill per pair), then OUTPUT/audit.csv (one row per
file and governed arm: leak rate, overlap, source retention, donor-visible share, follow rate,
donor shift with its CI, and the shift against the oracle's on the same pairs)
and OUTPUT/audit.md (per model, suite and arm: policy x budget grids of the donor shift,
natural / evicted)."""


def add(sub: argparse._SubParsersAction) -> None:
    from matbench.commands.eval import add_eval_options

    p = sub.add_parser(
        "audit",
        help="run serving policies over suites and summarize the audit",
        description="The eviction audit: every --policy x --budget x --source-mode on every suite of "
        "--suite (a comma list), one model load, one global prefill per pair; then the audit "
        "summary. With --summarize, only summarize existing results folders.",
        epilog=AUDIT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_eval_options(p)
    for action in p._actions:  # --summarize needs neither; a run checks them itself
        if action.dest in ("model", "output"):
            action.required = False
    p.set_defaults(suite="discovery,access")
    p.add_argument("--summarize", nargs="+", metavar="DIR", help="summarize these results folders (no run)")
    p.set_defaults(func=run)


# The grids of an arm of unpaired items (harvest's natural QAs), headed by what they show.
UNPAIRED_LABELS = {"accuracy": "accuracy", "margin": "answer margin, log p(right) - log p(other)"}


def summarize(folders: list[Path], target: Path) -> str:
    """Write TARGET/audit.csv and TARGET/audit.md from the policy runs under `folders`; the markdown."""
    from matbench.errors import MatbenchError
    from matbench.results.audit import audit_grid, audit_table, grid_columns, markdown

    table = audit_table(folders)
    if table.empty:
        raise MatbenchError(
            f"no policy runs under {', '.join(map(str, folders))}: run matbench audit --model ... first"
        )
    target.mkdir(parents=True, exist_ok=True)
    table.to_csv(target / "audit.csv", index=False)
    title = (
        "# Eviction audit: donor margin shift (accuracy and answer margin for unpaired items), natural / "
        "evicted source, by policy and budget (fraction removed)"
    )
    parts = [title]
    for (model, suite, arm), _ in table.groupby(["model", "suite", "arm"], sort=True):
        if "/" in arm:  # per-question breakdowns of an arm stay in the CSV
            continue
        for column in grid_columns(table, model, suite, arm):
            grid = audit_grid(table, model, suite, arm, column)
            grid.index.name = "policy"
            label = "" if column == "shift" else f" ({UNPAIRED_LABELS[column]}: unpaired items)"
            parts += [f"\n## {model}, {suite}, arm {arm}{label}\n", markdown(grid)]
    text = "\n".join(parts) + "\n"
    (target / "audit.md").write_text(text)
    return text


def run(args: argparse.Namespace) -> int:
    if args.summarize:
        print(summarize([Path(d) for d in args.summarize], Path(args.output or args.summarize[0])), end="")
        return 0
    from dataclasses import replace

    from matbench.commands.eval import eval_config
    from matbench.errors import MatbenchError
    from matbench.run.evaluate import load_model_for, run_eval

    if not args.output or not args.model:
        raise MatbenchError("matbench audit needs --model and --output DIR (or --summarize DIR ...)")
    suites = [s for s in args.suite.split(",") if s]
    base = eval_config(argparse.Namespace(**{**vars(args), "suite": suites[0]}))
    if base.policies == ("oracle",):
        raise MatbenchError("an audit runs serving policies: name at least one --policy (matbench policies lists them)")
    if "oracle" not in base.policies:  # the reference every policy is compared with, pair by pair
        base = replace(base, policies=(*base.policies, "oracle"))
    loaded = load_model_for(base)
    for suite in suites:
        run_eval(replace(base, suite=suite), loaded=loaded)
    print(summarize([Path(args.output)], Path(args.output)), end="")
    return 0

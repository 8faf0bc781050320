"""The unit of work: one suite through one model under one readout, serving mode and policy."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class RunSpec:
    """What `matbench eval` runs and writes one results file for. Several specs of one suite and
    model (readouts x serving modes) share one global prefill per pair.

    `serving` is resolved (compact or native, never auto); `policy` is the serving policy's spec
    (`oracle`, the suite's own served events, or e.g. `recent:64`); `limit` None = the suite's
    default size; `dtype` and `attention` None = the device's defaults."""

    model: str
    suite: str
    readout: str
    serving: str
    policy: str = "oracle"
    source: str = "natural"  # under a policy: natural, or evicted (the source's rows are never kept)
    kept_from: str = "a"  # under a policy: whose picks both donor members are served
    revision: str | None = None
    dataset: str | None = None
    dataset_revision: str | None = None
    dtype: str | None = None
    attention: str | None = None
    seed: int = 0
    limit: int | None = None
    chunk_size: int | None = None
    template: str = "orig"  # surface template: orig, or para (kv_frozen's untuned wording)
    rope_yarn: float | None = None  # YaRN factor of the model's RoPE (the position stress); None = as trained
    judge: str | None = None  # the model that graded free answers (--judge); None = no judge

    @property
    def combo(self) -> tuple[str, str, str, str, str]:
        """(readout, serving, policy, source, kept_from): what `PairEngine.score_many` serves."""
        return self.readout, self.serving, self.policy, self.source, self.kept_from

    @property
    def stem(self) -> str:
        """File stem of its results: `<suite>_<readout>_<serving>`, plus the template when it is not
        the original, the YaRN factor when the RoPE is stretched, the judge when one graded the
        answers and the policy when it is not the oracle, with its source mode and kept-from member
        when not the defaults (`discovery_probe_compact_para_yarn4_recent-64`,
        `discovery_probe_compact_snapkv-0.5_evicted_from-b`, `harvest_freeform_short_compact_judge-smollm2-135m`)."""
        base = f"{self.suite}_{self.readout}_{self.serving}" + ("" if self.template == "orig" else f"_{self.template}")
        base += f"_yarn{self.rope_yarn:g}" if self.rope_yarn else ""
        base += f"_judge-{re.sub(r'[^A-Za-z0-9.-]+', '-', self.judge).strip('-')}" if self.judge else ""
        if self.policy == "oracle":
            return base
        base += f"_{re.sub(r'[^A-Za-z0-9.-]+', '-', self.policy).strip('-')}"
        return base + ("_evicted" if self.source == "evicted" else "") + ("_from-b" if self.kept_from == "b" else "")


def split_budget(spec: str) -> tuple[str, str | None]:
    """A policy spec as (its text before `@`, its budget text or None): `snapkv:window=32@0.5` ->
    (`snapkv:window=32`, `0.5`); `recent:30` -> (`recent:30`, None)."""
    head, at, budget = spec.partition("@")
    return head, (budget if at else None)


def budget_order(budget: str | None) -> tuple[int, float]:
    """Sort key of budget texts: ratios (fraction removed) ascending, then token counts, then none."""
    if not budget or not budget.replace(".", "", 1).isdigit():
        return (2, 0.0)
    return (0, float(budget)) if "." in budget else (1, float(budget))

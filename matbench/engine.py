"""PairEngine: donor pairs through global prefill, sparse serving and readouts.

For each pair: one shared-prefix prefill of both members. Then every arm x member of every pair
in a batch is served together, once per serving mode for the probe (which gives the donor margin
shift for every readout) and once more per generating readout (short, trace).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from matbench.cache import EventCache, prefill_pair
from matbench.errors import MatbenchError
from matbench.models import LoadedModel
from matbench.pairs import Arm, DonorPair, PairLayout, layout_pair
from matbench.readouts import READOUTS, ProbeScorer, Readout, donor_shift
from matbench.render import Renderer, event_text
from matbench.runtime import ModelRunner
from matbench.serving import SERVING, ServeRequest, greedy_decode

OUTCOMES = ("follow", "anti", "const", "other")


def outcome(answers: tuple[str | None, str | None], values: tuple[str, str]) -> str:
    """SPEC 2.6: follow / anti / const / other for one donor pair."""
    a, b = answers
    if a is None or b is None:
        return "other"
    if (a, b) == values:
        return "follow"
    if (b, a) == values:
        return "anti"
    if a == b:
        return "const"
    return "other"


@dataclass
class PairEngine:
    """Runs donor pairs for one model; `serving` and `readout` are the defaults of `score`."""

    loaded: LoadedModel
    serving: str = "auto"  # "compact", "native", or "auto" (native where sliding windows exist)
    readout: str = "probe"
    chunk_size: int | None = None
    runner: ModelRunner = field(init=False)
    renderer: Renderer = field(init=False)
    _scorers: dict = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.runner = ModelRunner(self.loaded.model, self.loaded.text_config)
        self.renderer = Renderer(self.loaded.tokenizer)
        self.serving = self.resolve_serving(self.serving)
        READOUTS.get(self.readout)
        self.probe_readout: Readout = READOUTS.get("probe")
        eos = self.loaded.tokenizer.eos_token_id
        self.stop_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        gen_cfg = getattr(self.loaded.model, "generation_config", None)
        gen_eos = getattr(gen_cfg, "eos_token_id", None)
        self.stop_ids |= set(gen_eos if isinstance(gen_eos, list) else [gen_eos]) - {None}

    def scorer(self, menu: tuple[str, ...]) -> ProbeScorer:
        if menu not in self._scorers:
            self._scorers[menu] = ProbeScorer.for_menu(menu, self.renderer.ids)
        return self._scorers[menu]

    def query_ids(self, pair: DonorPair, arm: Arm, readout: Readout) -> tuple[int, ...]:
        # Events appended at query time (a served patch) continue the step numbering.
        patch = "".join(event_text(len(pair.events) + k, body) for k, body in enumerate(arm.appended))
        text = patch + self.renderer.query_text(arm.question, readout.suffix(pair.menu), readout.assistant_prefix)
        ids = self.renderer.ids(text)
        # The query follows an event ending in "\n": assert no BPE merge across that boundary.
        last = event_text(0, pair.events[0])
        self.renderer.check_piecewise([last, text], [self.renderer.ids(last), ids], from_start=False)
        return tuple(ids)

    def prepare(self, pair: DonorPair) -> tuple[PairLayout, tuple[EventCache, EventCache]]:
        layout = layout_pair(pair, self.renderer)
        return layout, prefill_pair(self.runner, layout, self.chunk_size)

    def requests(self, pair: DonorPair, caches, readout: Readout) -> list[ServeRequest]:
        requests = []
        for arm in pair.arms:
            ids = self.query_ids(pair, arm, readout)  # identical for both members
            requests += [ServeRequest(caches[m], arm.served, ids, caches[m].length if arm.query_at_end else None)
                         for m in (0, 1)]
        return requests

    def run_pair(self, pair: DonorPair) -> dict[str, Any]:
        layout, caches = self.prepare(pair)
        return self.score(pair, layout, caches)

    def resolve_serving(self, serving: str) -> str:
        if serving == "auto":
            return "native" if self.loaded.has_sliding_layers else "compact"
        if serving not in SERVING:
            raise MatbenchError(f"unknown serving mode {serving!r}; use compact, native or auto")
        return serving

    def score(self, pair: DonorPair, layout: PairLayout, caches) -> dict[str, Any]:
        """Per-item record for the engine's own readout and serving mode."""
        combo = (self.readout, self.serving)
        return self.score_all(pair, layout, caches, [combo])[combo]

    def score_all(self, pair: DonorPair, layout: PairLayout, caches,
                  combos: list[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        return self.score_many([(pair, layout, caches)], combos)[0]

    def score_many(self, items: list[tuple[DonorPair, PairLayout, Any]],
                   combos: list[tuple[str, str]]) -> list[dict[tuple[str, str], dict[str, Any]]]:
        """One record per item and (readout, serving), serving every arm x member of every item
        in one batch. The probe (and with it the donor shift) runs once per serving mode and is
        shared by every readout; greedy decoding advances all rows together."""
        spans, offset = [], 0
        for pair, _, _ in items:
            spans.append((offset, offset + 2 * len(pair.arms)))
            offset += 2 * len(pair.arms)
        probes: dict[str, list[tuple[torch.Tensor, list[str]]]] = {}
        out: list[dict] = [{} for _ in items]
        for readout_name, serving in combos:
            serve = SERVING[serving]
            if serving not in probes:
                _, logits = serve(self.runner, self._batch_requests(items, self.probe_readout))
                probes[serving] = []
                for (pair, _, _), (lo, hi) in zip(items, spans):
                    cand = self.scorer(pair.menu).log_probs(logits[lo:hi]).cpu()
                    probes[serving].append((cand, self.scorer(pair.menu).answers(cand)))
            readout = READOUTS.get(readout_name)
            texts: list[list[str] | None] = [None] * len(items)
            if readout.max_new_tokens:
                batch, first = serve(self.runner, self._batch_requests(items, readout))
                generated = greedy_decode(self.runner, batch, first, readout.max_new_tokens, self.stop_ids)
                decoded = [self.renderer.decode(g) for g in generated]
                texts = [decoded[lo:hi] for lo, hi in spans]
            for k, (pair, layout, _) in enumerate(items):
                cand, probe_answers = probes[serving][k]
                answers = probe_answers
                if texts[k] is not None:
                    answers = [readout.parse(t, pair.menu, pair.registers) for t in texts[k]]
                out[k][(readout_name, serving)] = self._record(pair, layout, answers, probe_answers, cand, texts[k])
        return out

    def _batch_requests(self, items, readout: Readout) -> list[ServeRequest]:
        return [r for pair, _, caches in items for r in self.requests(pair, caches, readout)]

    @staticmethod
    def _record(pair, layout, answers, probe_answers, cand, texts) -> dict[str, Any]:
        arms = {}
        for k, arm in enumerate(pair.arms):
            a, b = 2 * k, 2 * k + 1
            arms[arm.name] = {
                **({"expected": arm.expected} if arm.expected is not None else {}),
                "answers": [answers[a], answers[b]],
                "class": outcome((answers[a], answers[b]), pair.values),
                "probe_answers": [probe_answers[a], probe_answers[b]],
                "probe_logp": [cand[a].tolist(), cand[b].tolist()],
                "shift": donor_shift(cand[a], cand[b], pair.menu, pair.values),
                **({"texts": [texts[a], texts[b]]} if texts is not None else {}),
            }
        return {
            "item_id": pair.item_id,
            "variant": pair.variant,
            "values": list(pair.values),
            "menu": list(pair.menu),
            "budget": layout.budget,
            "length": layout.length,
            "n_tokens": [len(m.input_ids) for m in layout.members],
            "arms": arms,
        }


def probe_logits(engine: PairEngine, pair: DonorPair, caches, arm: Arm, members=(0, 1),
                 serving: str | None = None, **kw) -> torch.Tensor:
    """Probe logits of `arm` for the given members (used by the gates)."""
    ids = engine.query_ids(pair, arm, engine.probe_readout)
    reqs = [ServeRequest(caches[m], arm.served, ids) for m in members]
    _, logits = SERVING[serving or engine.serving](engine.runner, reqs, **kw)
    return logits

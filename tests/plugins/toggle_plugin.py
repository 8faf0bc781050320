"""An extension from outside the package, as CONTRIBUTING describes: a readout, a suite (generator
and evaluator with its declared metrics) and a serving policy, each registered on import.
`MATBENCH_PLUGINS=tests/plugins/toggle_plugin.py matbench eval --suite toggle ...` uses them."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from matbench.data_gen.base import (
    N_EVENTS,
    REGISTER_POOL,
    STATES,
    SUITES,
    Suite,
    ask_state,
    filler_body,
    register_source_pair,
)
from matbench.engine.policies.base import POLICIES, ServingPolicy
from matbench.evaluators.base import CONTROL_CLEAN, EVALUATORS, Evaluator, control_clean
from matbench.protocol.metrics import Format, Metric, Scale
from matbench.protocol.pairs import Arm, DonorPair
from matbench.protocol.readouts import READOUTS, Readout

# 1. A readout: one registration.
READOUTS.register("brief")(Readout("brief", " Answer {menu} in one word:", max_new_tokens=4, pick="first"))


# 2. A suite: a generator drawing everything from `rng` ...
def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    source_reg, copy, decoy = rng.sample(REGISTER_POOL, 3)
    events = [filler_body(rng, (source_reg, copy, decoy)) for _ in range(N_EVENTS)]
    events[0] = f"register {decoy} set to state {rng.choice(STATES)}"
    source = rng.randrange(4, 8)
    events[source] = f"register {source_reg} set to state <donor>"
    events[20] = f"register {copy} copies register {source_reg}"
    arms = (
        Arm("carrier", (0, 20), ask_state(copy)),
        Arm("txt", tuple(range(N_EVENTS)), ask_state(copy), uses_source=True),
        Arm("control", tuple(range(source)), ask_state(copy)),
    )
    return register_source_pair(item_id, events, source, source_reg, arms, (source_reg, copy, decoy))


SUITES.register("toggle")(Suite("toggle", "1", default_n=8, make_item=make_item))


# ... and its evaluator, declaring the metrics of its scorecard entry once.
@EVALUATORS.register("toggle")
class ToggleEvaluator(Evaluator):
    contract = (
        Metric(
            "carrier_classes",
            "arms.carrier.classes",
            "carrier f:a",
            "carrier arm: follow:anti of the donor",
            Scale.FOLLOW,
            Format.CLASSES,
            overview=True,
        ),
        Metric(
            "carrier_shift",
            "arms.carrier.donor_shift",
            "carrier donor shift",
            "carrier arm donor margin shift",
            Scale.SHIFT,
            Format.SIGNED_CI,
        ),
        CONTROL_CLEAN,
    )

    def summarize(self, records) -> dict[str, Any]:
        metrics = super().summarize(records)
        metrics["headline"] = {"control_clean": control_clean(metrics["arms"]["control"])}
        return metrics


# 3. A serving policy: a dataclass with one method.
@POLICIES.register("latest")
@dataclass(frozen=True)
class LatestEvent(ServingPolicy):
    """The header and the trajectory's last event."""

    name = "latest"

    def keep(self, arm, member, cache, context=None) -> tuple[int, ...]:
        return (*range(*member.header_span), *range(*member.event_spans[-1]))

"""Phantom-erase suite (the paper's kv_phantom.py E2; Discovery): after the event that wrote a
value is deleted, do the rows computed after it still give the value back?

kv_phantom's trajectory (its deployment-tools header, steps verbatim): step 1
`set_config('timeout', OLD)` ("timeout configured to OLD seconds", the source), step 2
`restart_worker()`, step 3 `verify_config()` ("the configured timeout value was checked and
accepted by the validator"), step 4 `run_smoke()`, and in every second item (the conflict variant)
step 5 `set_config('timeout', NEW)`. Serve every row but step 1's from the one global prefill and
ask the configured timeout ("If it is not specified, answer 'not specified'", 24 tokens).

As a donor pair the two members differ in OLD only (two of kv_phantom's values whose first digits
differ, so the probe can tell them apart): an erased answer naming the member's own OLD is the
paper's leak, the other member's OLD its anti. kv_phantom's conflict update is NEW = 2 x OLD; one
update must serve both members, so here NEW = 2 x the larger OLD (the paper's stimulus for that
member; never either OLD) and its first digit differs from both.

Arms: erased (the paper's), oracle (the trajectory without step 1 as fresh text: kv_phantom's
oracle), txt (every step as text: comprehension, matbench's). In the conflict variant every arm
expects NEW: its win rate is the paper's has-new, the old-value leak its leak-old.
"""

from __future__ import annotations

import random

from matbench.data_gen.base import SUITES, Suite
from matbench.protocol.frames import TOOL_SEPARATOR
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
OLDS = (15, 20, 30, 45, 90, 120)  # kv_phantom.py exp_erase's values, verbatim
SOURCE = 0
STEPS = (  # kv_phantom.py exp_erase's steps 2-4 (action, observation), verbatim
    ("restart_worker()", "worker restarted cleanly"),
    ("verify_config()", "the configured timeout value was checked and accepted by the validator"),
    ("run_smoke()", "smoke suite finished, 3 cases, all green"),
)
QUESTION = (
    "What is the configured timeout value in seconds, based only on the trajectory above? If it is not "
    "specified, answer 'not specified'. Answer:"
)
BUDGET = 24  # kv_phantom's ntok for E2


def set_timeout(value: int, verb: str = "configured") -> str:
    return f"set_config('timeout', {value}){TOOL_SEPARATOR}timeout {verb} to {value} seconds"


def build(item_id: str, old_a: int, old_b: int, conflict: bool) -> DonorPair:
    """Member A writes `old_a`, member B `old_b`; a conflict item updates both to 2 x the larger."""
    events = [f"<timeout {old_a} or {old_b}>", *(f"{a}{TOOL_SEPARATOR}{o}" for a, o in STEPS)]
    new = 2 * max(old_a, old_b)
    if conflict:
        events.append(set_timeout(new, "reconfigured"))
    values = (str(old_a), str(old_b))
    menu = (*values, str(new)) if conflict else values
    ask = {"open_question": True, "budget": BUDGET, "expected": str(new) if conflict else None}
    kept = tuple(range(1, len(events)))
    arms = (
        Arm("erased", kept, QUESTION, **ask),
        Arm("oracle", kept, QUESTION, encoding="text", **ask),
        Arm("txt", tuple(range(len(events))), QUESTION, uses_source=True, encoding="text", **ask),
    )
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=SOURCE,
        source_bodies=(set_timeout(old_a), set_timeout(old_b)),
        values=values,
        menu=menu,
        arms=arms,
        leak_patterns=(r"timeout configured to",),
        variant="conflict" if conflict else "noconflict",
        frame="deploy_tools",
    )


def first_digit(value: int) -> str:
    return str(value)[0]


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    """kv_phantom alternates no-conflict and conflict items; each draws OLD from its six values."""
    conflict = index % 2 == 1
    old_a = rng.choice(OLDS)
    while True:
        old_b = rng.choice([o for o in OLDS if first_digit(o) != first_digit(old_a)])
        digits = {first_digit(old_a), first_digit(old_b), first_digit(2 * max(old_a, old_b))}
        if not conflict or len(digits) == 3:
            return build(item_id, old_a, old_b, conflict)


SUITE = SUITES.register("phantom_erase")(
    Suite(
        "phantom_erase",
        VERSION,
        default_n=48,
        make_item=make_item,
        contract=False,
        paraphrase=False,
        summary="after the event that wrote a value is deleted, do later rows give it back (kv_phantom E2)",
    )
)

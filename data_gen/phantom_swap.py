"""Phantom-swap suite (the paper's kv_phantom.py E1; Discovery): does an event's row carry a
conclusion about text the reader never sees?

kv_phantom's item, one per (object, filler note): a two-step prefix (step 1 `check_{obj}()`:
"{obj} {field} = {value}"; step 2 `log_note('{note}')`: "ok") and the same event E (step 3
`record_to_report()`: "the {obj} {field} from the step 1 check was copied into the incident report
for the auditor.") teacher-forced after it. Serve the header and E's rows only; ask "According to
the step 1 check, what was the {obj} {field}? Answer with the single status word only:" (16
tokens). The two values of an object are the donor pair's members (kv_phantom's two flips are the
pair's two members); objects, fields, values and notes are kv_phantom's PAIRS and FILLERS, verbatim.

Arms: swap (E's rows from the global prefill; the paper's), iso (E encoded alone after the header
at its original positions: kv_phantom's `iso`, which must name neither value), txt (every step as
text: comprehension, matbench's). The source is the first step, so no event lies before it: no
control arm. kv_phantom skips objects whose two prefixes tokenize to different lengths; matbench
gives the source slot a position budget instead and keeps all 26.
"""

from __future__ import annotations

import random

from matbench.data_gen.base import SUITES, Suite
from matbench.protocol.frames import TOOL_SEPARATOR
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
# kv_phantom.py PAIRS: (object, field, value A, value B), verbatim.
PAIRS = (
    ("server", "status", "ONLINE", "OFFLINE"),
    ("database", "state", "LOCKED", "OPEN"),
    ("firewall", "mode", "ENABLED", "DISABLED"),
    ("healthcheck", "result", "PASSED", "FAILED"),
    ("api_gateway", "state", "UP", "DOWN"),
    ("license", "check", "VALID", "EXPIRED"),
    ("backup_job", "status", "COMPLETE", "ABORTED"),
    ("build", "verdict", "GREEN", "RED"),
    ("sandbox", "flag", "ACTIVE", "SUSPENDED"),
    ("replica", "sync", "CURRENT", "STALE"),
    ("quota", "check", "GRANTED", "DENIED"),
    ("cluster", "reach", "HEALTHY", "DEGRADED"),
    ("cache", "state", "WARM", "COLD"),
    ("tunnel", "link", "OPEN", "SHUT"),
    ("node", "health", "READY", "FAULT"),
    ("token", "check", "FRESH", "STALE"),
    ("disk", "state", "MOUNTED", "DETACHED"),
    ("session", "state", "AUTHED", "GUESTED"),
    ("pipeline", "verdict", "PASS", "FAIL"),
    ("cert", "check", "TRUSTED", "REVOKED"),
    ("route", "state", "PAIRED", "ORPHAN"),
    ("daemon", "status", "LIVE", "DEAD"),
    ("index", "state", "SYNCED", "FAILED"),
    ("lease", "check", "HELD", "LOST"),
    ("channel", "mode", "SECURE", "EXPOSED"),
    ("volume", "state", "ATTACHED", "RELEASED"),
)
# kv_phantom.py FILLERS: the step-2 note, one per repetition, verbatim.
FILLERS = (
    "routine sweep of the {obj} subsystem finished",
    "periodic audit of the {obj} module completed without incident",
    "the on-call engineer acknowledged the {obj} page and moved on",
    "a scheduled healthcheck touched the {obj} path and returned",
    "the {obj} watchdog logged a heartbeat and reset its timer",
    "maintenance window for the {obj} component opened briefly",
)
SOURCE, NOTE, EVENT = 0, 1, 2


def build(index: int, item_id: str) -> DonorPair:
    """Item `index`: object PAIRS[index % 26] with the note of repetition index // 26."""
    obj, field, a, b = PAIRS[index % len(PAIRS)]
    note = FILLERS[(index // len(PAIRS)) % len(FILLERS)].format(obj=obj)
    events = (
        f"<state of {obj} {field}>",
        f"log_note('{note}'){TOOL_SEPARATOR}ok",
        (
            f"record_to_report(){TOOL_SEPARATOR}the {obj} {field} from the step 1 check was copied into the incident "
            "report for the auditor."
        ),
    )
    question = f"According to the step 1 check, what was the {obj} {field}? Answer with the single status word only:"
    ask = {"open_question": True, "budget": 16}
    arms = (
        Arm("swap", (EVENT,), question, **ask),
        Arm("iso", (EVENT,), question, encoding="isolated", **ask),
        Arm("txt", (SOURCE, NOTE, EVENT), question, uses_source=True, encoding="text", **ask),
    )
    return DonorPair(
        item_id=item_id,
        events=events,
        source=SOURCE,
        source_bodies=tuple(f"check_{obj}(){TOOL_SEPARATOR}{obj} {field} = {v}" for v in (a, b)),  # type: ignore[arg-type]
        values=(a, b),
        menu=(a, b),
        arms=arms,
        leak_patterns=(rf"\b{obj} {field} =",),
        variant=obj,
        frame="deploy_tools",
    )


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    return build(index, item_id)  # kv_phantom's E1 draws nothing: the index walks PAIRS x FILLERS


SUITE = SUITES.register("phantom_swap")(
    Suite(
        "phantom_swap",
        VERSION,
        default_n=2 * len(PAIRS),
        make_item=make_item,
        contract=False,
        paraphrase=False,
        summary="does an event's row carry a conclusion about a prefix the reader never sees (kv_phantom E1)",
    )
)

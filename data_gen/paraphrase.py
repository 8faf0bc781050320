"""Surface templates: the same items under an untuned wording (the paper's kv_frozen.py PARA).

The paper's robustness check reran its core cells under a surface that never took part in any
tuning: events read `<entry i>\\nevent: system_poll()\\nresult: <body>\\n` (the `entry` frame) and
the structural statements are reworded with the same meaning (kv_frozen.py `phr`, "para"):

  register X set to state V                     -> the status of register X was logged as V
  register X refreshed to N                     -> a reading of N was recorded for register X
  register A mirrors register B                 -> register A tracks register B
  register X completed a routine self-test      -> register X passed its scheduled self-check
  sensor S measured G; the alert threshold is T -> sensor S returned a reading of G against an
                                                   alert limit of T
  alert check result for sensor S: threshold V  -> the S alert evaluation concluded: limit V

`with_template(pair, "para")` rewrites every body of a pair (events, both members' source and
donor-dependent bodies, slot alternatives, padded bodies) that is one of these forms and keeps any
other verbatim; leak patterns gain their reworded twins, so the generation checks still refuse a
served event that restates the source. A trace instruction that names the mirror statement
becomes the relevant-statement one, which kv_frozen asks under both of its templates. Suites whose point is their wording (trigger's
constructions) or whose frame is another (update, harvest) declare `paraphrase=False` and are
refused in one line.
"""

from __future__ import annotations

import re
from dataclasses import replace

from matbench.data_gen.checks import check_pair
from matbench.errors import MatbenchError
from matbench.protocol.pairs import DonorPair
from matbench.protocol.readouts import RELEVANT_TRACE

TEMPLATES = ("orig", "para")
PARA_FRAME = "entry"

# (the paper's ORIG statement, its PARA rewording): kv_frozen.py phr, verbatim.
PARA_BODIES = (
    (re.compile(r"register (\w+) set to state (\w+)"), r"the status of register \1 was logged as \2"),
    (re.compile(r"register (\w+) refreshed to (\d+)"), r"a reading of \2 was recorded for register \1"),
    (re.compile(r"register (\w+) mirrors register (\w+)"), r"register \1 tracks register \2"),
    (re.compile(r"register (\w+) completed a routine self-test"), r"register \1 passed its scheduled self-check"),
    (
        re.compile(r"sensor (\w+) measured (\d+); the alert threshold is (\d+)"),
        r"sensor \1 returned a reading of \2 against an alert limit of \3",
    ),
    (
        re.compile(r"alert check result for sensor (\w+): threshold (\w+)"),
        r"the \1 alert evaluation concluded: limit \2",
    ),
    # kv_frozen's three carrier wordings (its binding-gradient cell); no matbench suite serves the
    # first two, and the third is trigger's `accord` construction, which is not reworded.
    (re.compile(r"checkpoint saved for the sensor (\w+) review"), r"a checkpoint of the \1 review was written to disk"),
    (
        re.compile(r"the outcome of the sensor (\w+) alert check was archived for the report"),
        r"the conclusion of the \1 check was filed in the report",
    ),
    (
        re.compile(r"the alert status flag for sensor (\w+) was set according to the check result"),
        r"the alarm flag for \1 was updated in line with the check outcome",
    ),
)
# A suite's leak pattern for a statement, and the same pattern for its rewording.
PARA_LEAKS = (
    (re.compile(r"register (\w+) set to"), r"status of register \1 was logged as"),
    (re.compile(r"register (\w+) refreshed to"), r"was recorded for register \1"),
    (re.compile(r"sensor (\w+) measured"), r"sensor \1 returned a reading"),
    (re.compile(r"alert check result for sensor (\w+)"), r"the \1 alert evaluation"),
)


def paraphrase_body(body: str) -> str:
    """The PARA wording of one event body: a whole-body match of one of kv_frozen's forms, else
    the body unchanged."""
    for pattern, repl in PARA_BODIES:
        if pattern.fullmatch(body):
            return pattern.sub(repl, body)
    return body


def paraphrase_leaks(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """Each leak pattern, then the twin that catches the reworded statement."""
    twins = []
    for p in patterns:
        for pattern, repl in PARA_LEAKS:
            if pattern.search(p):
                twins.append(pattern.sub(repl, p))
    return tuple(dict.fromkeys((*patterns, *twins)))


def check_template(template: str, suite: str, paraphrasable: bool) -> None:
    """One line for a template that does not exist or that the suite cannot take."""
    if template not in TEMPLATES:
        raise MatbenchError(f"unknown --template {template!r}; choose from {', '.join(TEMPLATES)}")
    if template != "orig" and not paraphrasable:
        raise MatbenchError(
            f"--template {template} rewords the synthetic trajectories; suite {suite} cannot take it "
            "(trigger's point is its wording; update, harvest and reference_gradient have their own frames)"
        )


def with_template(pair: DonorPair, template: str, suite: str, paraphrasable: bool) -> DonorPair:
    """`pair` rendered under `template` ("orig": as generated; "para": kv_frozen's untuned surface),
    checked as a generated row is."""
    check_template(template, suite, paraphrasable and pair.frame == "trajectory")
    if template == "orig":
        return pair
    bodies = paraphrase_body
    out = replace(
        pair,
        events=tuple(map(bodies, pair.events)),
        source_bodies=tuple(map(bodies, pair.source_bodies)),  # type: ignore[arg-type]
        donor_events=tuple((i, bodies(a), bodies(b)) for i, a, b in pair.donor_events),
        slot_alternatives=tuple((i, tuple(map(bodies, alts))) for i, alts in pair.slot_alternatives),
        padded=tuple((i, tuple(map(bodies, alts))) for i, alts in pair.padded),
        leak_patterns=paraphrase_leaks(pair.leak_patterns),
        frame=PARA_FRAME,
        # "mirror" names the orig wording; kv_frozen asks "Locate the relevant statement" under both.
        trace=RELEVANT_TRACE if "mirror" in pair.trace else pair.trace,
        arms=tuple(replace(a, trace="") if "mirror" in a.trace else a for a in pair.arms),
    )
    out.validate()
    check_pair(out)
    return out

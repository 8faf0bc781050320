"""Update suite (SPEC 3.7): an out-of-band patch of the dropped SOURCE, served at query time
(the paper's kv_coherence2.py, "co-v2", `--tpl orig`).

The trajectory is the paper's: the header is HDR + SEM (version tags; `mirrors` is a live derived
view; what a `memory_patch()` step means: frame "versioned"); every state and filler observation
carries a version tag "   [X version 1]". decoy "register D set to state dm   [D version 1]"@0,
source "register S set to state v1   [S version 1]"@m (m in [8, 16), dropped), carrier "register
T mirrors register S"@23. The donor pair is the paper's: member A has v1 = ONLINE, member B v1 =
OFFLINE; D, S, T, L, dm, m, the fillers and the update value v2 are drawn once per item, v2
independently of both donors (so one member is changed, v1 != v2, and one is a no-op).

Every KV arm serves {decoy, carrier} from the global prefill; the patched arms append one step
at query time, rendered as the paper's `pstep` ("<step 25>\\naction: memory_patch()\\n..."):

  stale         nothing appended
  upd_bare      register S set to state v2
  upd_ver       register S set to state v2   [S version 2]
  patch_struct  <PATCH> source=S version=2 supersedes=1 new_state=v2 </PATCH>
  patch_der     ... affected=T derived_state=v2 </PATCH>
  noopx         register S was re-checked: state remains v2; ... [S version 1 confirmed]
  ctl_wrong     the versioned update of an unrelated register L (must not move T or D)
  ctl_dummy     the paper's neutral routine note, which mentions nothing

and two text arms re-read the log as plain text: txt_stale (header + decoy + carrier) and
txt_oracle (the whole log + upd_ver). Each arm asks the paper's three questions: cur ("now,
after every step recorded above": gold v2 once the update is delivered, v1 otherwise), hist ("as
of step 24": v1 in every arm) and unrel (the decoy D: dm in every arm). Arms are named
`<arm>__<query>` as the paper's records are; `expected` holds the gold where it is not the donor
value v1 (cur of an update-delivering arm: v2; unrel: dm). matbench adds the before-source
`control` arm (cur, nothing appended): the control gate.

noopx restates v2, not the member's own v1 as the paper's does: an appended text must be the same
in both members (the donor pair's served text), and the paper scores noopx only on the member
where v1 == v2, whose text is then the paper's byte for byte.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from matbench.data_gen.base import N_EVENTS, REGISTER_POOL, STATES, SUITES, Suite
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "2"
MENU = STATES
FRAME = "versioned"
DECOY_AT, CARRIER_AT = 0, 23
SOURCE_SLOTS = (N_EVENTS // 3, (2 * N_EVENTS) // 3)  # randrange bounds of the source slot: [8, 16)
PATCH_ARMS = ("upd_bare", "upd_ver", "patch_struct", "patch_der")  # deliver the update to S
KV_ARMS = ("stale", *PATCH_ARMS, "noopx", "ctl_wrong", "ctl_dummy")
TXT_ARMS = ("txt_stale", "txt_oracle")
QUERIES = ("cur", "hist", "unrel")
# cur gold is v2 where the update was delivered (noopx: the value it restates, v2 = v1 on the
# member the paper scores); v1, the donor, in the others.
CUR_GOLD_V2 = (*PATCH_ARMS, "noopx", "txt_oracle")
DUMMY = "routine note: the scheduled maintenance sweep completed its pass without incident"


def tag(register: str, version: str = "1") -> str:
    return f"   [{register} version {version}]"


def state_body(register: str, value: str, version: str = "1") -> str:
    return f"register {register} set to state {value}{tag(register, version)}"


def questions(target: str, decoy: str) -> dict[str, str]:
    """The paper's three questions (kv_coherence2 `gen_base`), before the readout's menu."""
    return {
        "cur": f"What state is register {target} in now, after every step recorded above?",
        "hist": f"What state was register {target} in as of step {CARRIER_AT + 1}?",
        "unrel": f"What state is register {decoy} in?",
    }


def patch_bodies(source: str, target: str, wrong: str, value: str) -> dict[str, str]:
    """The observation of the appended `memory_patch()` step per arm (kv_coherence2 `patch_texts`)."""
    return {
        "upd_bare": f"register {source} set to state {value}",
        "upd_ver": state_body(source, value, "2"),
        "patch_struct": f"<PATCH> source={source} version=2 supersedes=1 new_state={value} </PATCH>",
        "patch_der": (
            f"<PATCH> source={source} version=2 supersedes=1 new_state={value} "
            f"affected={target} derived_state={value} </PATCH>"
        ),
        "noopx": (
            f"register {source} was re-checked: state remains {value}; this confirms the earlier value"
            f"   [{source} version 1 confirmed]"
        ),
        "ctl_wrong": state_body(wrong, value, "2"),
        "ctl_dummy": DUMMY,
    }


@dataclass(frozen=True)
class UpdateDraws:
    """Every random choice of one item (kv_coherence2 `gen_base`): register names, the decoy's
    value, the update value v2, the source slot and the fillers, (register, number) per filler
    slot in step order (every slot but the decoy's, the source's and the carrier's)."""

    decoy: str
    source: str
    target: str
    wrong: str
    decoy_value: str
    update_value: str
    source_at: int
    fillers: tuple[tuple[str, int], ...]


def draw(rng: random.Random) -> UpdateDraws:
    decoy, source, target, wrong = rng.sample(REGISTER_POOL, 4)
    decoy_value = rng.choice(MENU)
    update_value = rng.choice(MENU)  # one draw per item: independent of both donors
    source_at = rng.randrange(*SOURCE_SLOTS)
    others = [r for r in REGISTER_POOL if r not in (decoy, source, target, wrong)]
    fillers = tuple((rng.choice(others), rng.randint(100, 998)) for _ in range(N_EVENTS - 3))
    return UpdateDraws(decoy, source, target, wrong, decoy_value, update_value, source_at, fillers)


def gold(d: UpdateDraws, arm: str, query: str) -> str | None:
    """The arm's `expected` answer where it is not the donor value v1: the decoy's value for
    unrel, v2 for cur of an arm whose appended text states v2; None (the donor v1) otherwise."""
    if query == "unrel":
        return d.decoy_value
    return d.update_value if query == "cur" and arm in CUR_GOLD_V2 else None


def build_item(item_id: str, d: UpdateDraws) -> DonorPair:
    """The donor pair of one item from explicit draws (`make_item` = `draw` + this)."""
    slots = [i for i in range(N_EVENTS) if i not in (DECOY_AT, d.source_at, CARRIER_AT)]
    events = ["<donor>"] * N_EVENTS
    for i, (register, number) in zip(slots, d.fillers, strict=True):
        events[i] = f"register {register} refreshed to {number}{tag(register)}"
    events[DECOY_AT] = state_body(d.decoy, d.decoy_value)
    events[CARRIER_AT] = f"register {d.target} mirrors register {d.source}"
    asked = questions(d.target, d.decoy)
    patches = patch_bodies(d.source, d.target, d.wrong, d.update_value)
    served = (DECOY_AT, CARRIER_AT)
    arms = []
    for query, question in asked.items():  # query-major, as the paper's records
        for arm in KV_ARMS:
            appended = () if arm == "stale" else (patches[arm],)
            arms.append(Arm(f"{arm}__{query}", served, question, appended=appended, expected=gold(d, arm, query)))
        arms.append(Arm(f"txt_stale__{query}", served, question, expected=gold(d, "txt_stale", query), encoding="text"))
        arms.append(
            Arm(
                f"txt_oracle__{query}",
                tuple(range(N_EVENTS)),
                question,
                uses_source=True,
                appended=(patches["upd_ver"],),
                expected=gold(d, "txt_oracle", query),
                encoding="text",
            )
        )
    arms.append(Arm("control", tuple(range(d.source_at)), asked["cur"]))
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=d.source_at,
        source_bodies=tuple(state_body(d.source, v) for v in MENU),  # type: ignore[arg-type]
        values=MENU,
        menu=MENU,
        arms=tuple(arms),
        leak_patterns=(rf"\bregister {d.source} set to\b",),
        registers=(d.source, d.target, d.decoy, d.wrong),
        decoys=(DECOY_AT,),
        frame=FRAME,
    )


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    return build_item(item_id, draw(rng))


SUITE = SUITES.register("update")(
    Suite(
        "update",
        VERSION,
        default_n=64,
        make_item=make_item,
        paraphrase=False,
        summary=(
            "does an out-of-band patch of the dropped source win over the materialized old value? (kv_coherence2)"
        ),
    )
)

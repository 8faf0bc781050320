"""Scoring policies (kvpress's ScorerPress on matbench's seam): budgets, the source modes, the
selection leak, the gates, and equality with kvpress's own scorers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from matbench.engine.gates import run_gates
from matbench.engine.pair_engine import PairEngine
from matbench.engine.policies import POLICIES, Budget, SelectionContext, parse_policy
from matbench.engine.policies.scored import ScoredPolicy
from matbench.engine.selection import donor_slots, select, unpack_heads
from matbench.errors import MatbenchError

SCORING = sorted(n for n in POLICIES.names() if issubclass(POLICIES.get(n), ScoredPolicy) and n != "kvpress")
# Position-only scores: both donor members keep the same rows outside the source.
POSITIONAL = {"random", "streaming_llm"}


def test_ten_scoring_policies_and_the_merging_control_are_registered():
    assert SCORING == [
        "adakv",
        "expected_attention",
        "h2o",
        "keydiff",
        "knorm",
        "merging",
        "pyramidkv",
        "random",
        "snapkv",
        "streaming_llm",
        "tova",
    ]


def _picks(policy, engine, pair, member=0, source="natural"):
    layout, caches = engine.prepare(pair)
    m = layout.members[member]
    banned = donor_slots(pair, m) if source == "evicted" else frozenset()
    kept = policy.keep(pair.arm("root"), m, caches[member], SelectionContext(engine.runner, banned))
    layers, heads = engine.runner.head_shape
    slots = kept if isinstance(kept, tuple) else kept.slots
    chosen = np.ones((layers, heads, len(slots)), dtype=bool) if isinstance(kept, tuple) else kept.heads
    return m, slots, chosen


@pytest.mark.parametrize("name", SCORING)
def test_each_layer_and_head_keeps_the_budget_and_the_header(tiny, pairs, name):
    policy = parse_policy(f"{name}@0.5")
    engine = PairEngine(tiny, policy=policy)
    member, slots, chosen = _picks(policy, engine, pairs[0])
    total, layers = len(member.input_ids), chosen.shape[0]
    budgets = policy.layer_budgets(total, layers)
    header = member.header_span[1] - member.header_span[0]
    assert slots[:header] == tuple(range(header)) and chosen[:, :, :header].all()
    if name == "adakv":  # the layer's heads share H x n rows, each head at least alpha x n of its own
        assert chosen.sum(axis=(1, 2)).tolist() == [chosen.shape[1] * n for n in budgets]
        assert (chosen.sum(axis=2) >= int(budgets[0] * 0.2)).all()
    else:
        assert chosen.sum(axis=2).tolist() == [[n] * chosen.shape[1] for n in budgets]
    if name == "pyramidkv":
        assert budgets[0] > budgets[-1] and abs(sum(budgets) - layers * Budget(0.5).n_kept(total)) <= layers
    else:
        assert set(budgets) == {total // 2}


@pytest.mark.parametrize("name", SCORING)
def test_source_evicted_mode_never_keeps_a_donor_row_and_every_gate_passes(tiny_llama, pairs, name):
    engine = PairEngine(tiny_llama, policy=parse_policy(f"{name}@0.75"), source="evicted", readout="short")
    for pair in pairs[:2]:
        layout, caches = engine.prepare(pair)
        record = engine.score(pair, layout, caches)
        for arm in ("root", "chain"):
            selection = record.arms[arm].selection
            assert selection.source_kept == (False, False) and not selection.donor_visible
        assert record.arms["control"].shift == 0.0
        gates = run_gates(engine, pair, layout, caches, record)
        assert all(g.passed for g in gates), gates
        assert ("head_mask" in {g.name for g in gates}) == (
            name in ("adakv",) or record.arms["root"].selection.heads is not None
        )


@pytest.mark.parametrize("name", SCORING)
def test_position_only_scores_leak_nothing_and_content_scores_may(tiny_llama, pairs, name):
    engine = PairEngine(tiny_llama, policy=parse_policy(f"{name}@0.5"), source="evicted")
    pair = pairs[0]
    layout, caches = engine.prepare(pair)
    _, _, selection = select(
        engine.policy,
        pair,
        layout,
        caches,
        pair.arm("root"),
        engine.runner.head_shape,
        runner=engine.runner,
        source="evicted",
    )
    assert len(selection.overlap) == engine.runner.head_shape[0]
    if name in POSITIONAL:
        assert not selection.members_differ and selection.overlap == (1.0,) * len(selection.overlap)
    assert selection.members_differ == any(x < 1.0 for x in selection.overlap)


def test_knorm_keys_after_the_source_carry_the_donor_into_the_choice(tiny_llama, pairs):
    """The leak is real: knorm scores rows by their keys, and rows after the source differ between
    the members; at least one pair of the first three shows it."""
    engine = PairEngine(tiny_llama, policy=parse_policy("knorm@0.5"), source="evicted")
    leaks = []
    for pair in pairs[:3]:
        layout, caches = engine.prepare(pair)
        leaks.append(
            select(engine.policy, pair, layout, caches, pair.arm("root"), engine.runner.head_shape, source="evicted")[
                2
            ].members_differ
        )
    assert any(leaks)


def test_a_budget_of_nothing_removed_serves_the_whole_prefill(tiny_llama, pairs):
    """The "keeps everything" gate: at ratio 0.0 every row is kept and the governed arm's probe
    equals serving the header and every event."""
    from matbench.engine.serving import SERVING, ServeRequest

    engine = PairEngine(tiny_llama, policy=parse_policy("snapkv@0.0"))
    pair = pairs[0]
    layout, caches = engine.prepare(pair)
    chosen = engine.selections(pair, layout, caches)
    (slots, _), heads, selection = chosen["root"]
    assert slots == tuple(range(len(layout.members[0].input_ids))) and heads == (None, None)
    assert selection.donor_visible and selection.source_kept == (True, True)
    request = engine.requests(pair, caches, engine.probe_readout, chosen=chosen)
    root = next(i for i, arm in enumerate(pair.arms) if arm.name == "root")
    full = ServeRequest(caches[0], tuple(range(len(pair.events))), request[2 * root].query_ids)
    served = SERVING[engine.serving](engine.runner, [request[2 * root], full])[1]
    assert torch.allclose(served[0], served[1], atol=1e-5)


def test_kept_rows_are_logged_compactly_and_read_back(tiny_llama, pairs):
    engine = PairEngine(tiny_llama, policy=parse_policy("snapkv@0.5"))
    pair = pairs[0]
    layout, caches = engine.prepare(pair)
    (slots, _), heads, selection = engine.selections(pair, layout, caches)["root"]
    positions = [layout.members[0].positions[s] for s in slots]
    expanded = [
        p for part in selection.kept.split(",") for p in (range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1))
    ]
    assert expanded == positions
    layers, kv_heads = engine.runner.head_shape
    assert np.array_equal(unpack_heads(selection.heads, (layers, kv_heads, len(slots))), heads[0])
    assert selection.held_rows == int(heads[0].sum()) < layers * kv_heads * len(slots)
    # Bytes: the served cache holds every served row in every head (dropped ones masked) plus the
    # [L, H_kv, n] bool mask; a per-head cache would hold only the rows each head keeps.
    key = caches[0].keys[0]
    row = 2 * key.shape[-1] * key.element_size()
    assert selection.served_bytes == len(slots) * layers * kv_heads * row + layers * kv_heads * len(slots)
    assert selection.needed_bytes == selection.held_rows * row < selection.served_bytes


@pytest.mark.parametrize("name", ["random", "streaming_llm", "knorm", "snapkv"])
def test_the_count_matched_leak_removes_what_the_ratio_budgets_row_count_explains(tiny_llama, pairs, name):
    """A ratio budget keeps int(T x (1 - r)) rows of each member's T, and the donor values give the
    members different T: a position-only policy's picks then differ through the count alone (the
    second pair: 685 and 686 tokens, 342 and 343 rows kept). Picked again with member A's count,
    with the source's rows banned, they are equal; a content-scored policy's are not."""
    engine = PairEngine(tiny_llama, policy=parse_policy(f"{name}@0.5"), source="evicted")
    rows = []
    for pair in pairs[:3]:
        layout, caches = engine.prepare(pair)
        selection = select(
            engine.policy,
            pair,
            layout,
            caches,
            pair.arm("root"),
            engine.runner.head_shape,
            runner=engine.runner,
            source="evicted",
        )[2]
        counts = tuple(Budget(0.5).n_kept(len(m.input_ids)) for m in layout.members)
        rows.append((selection.picked, counts, selection.members_differ, selection.members_differ_matched))
    for picked, counts, differ, matched in rows:
        assert (picked == counts) == (name == "streaming_llm") and (not matched or differ)  # per-head: the union
        if counts[0] == counts[1] or name in POSITIONAL:
            assert matched == (differ and counts[0] == counts[1])
    if name in POSITIONAL:
        assert [r[2:] for r in rows] == [(r[1][0] != r[1][1], False) for r in rows]
        assert any(r[1][0] != r[1][1] for r in rows)  # the pairs hold the case the measure is for
    else:
        assert all(r[2:] == (True, True) for r in rows)


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            "snapkv",
            "policy 'snapkv' needs a budget: --budget 0.5 (fraction removed) or 256 (tokens kept), or snapkv@0.5",
        ),
        ("snapkv:windw=3@0.5", "policy 'snapkv' takes window=, kernel=, question= (got 'windw=3')"),
        (
            "knorm:question=true@0.5",
            (
                "policy 'knorm' scores keys and values only: a question cannot change its picks; "
                "drop question=true (it applies to snapkv, tova, h2o, ...)"
            ),
        ),
        ("snapkv:window=x@0.5", "policy 'snapkv': window must be int (got 'x')"),
        ("knorm@1.5", "a budget ratio is the fraction removed, in [0, 1) (got 1.5)"),
        ("knorm@lots", "budget 'lots' is neither a removed fraction such as 0.5 nor a token count such as 256"),
        ("recent:64@0.5", "policy 'recent' keeps what it declares and takes no budget (got 0.5)"),
        (
            "adakv:inner=recent@0.5",
            "adakv's inner policy must be a scoring policy other than adakv or merging (got 'recent')",
        ),
    ],
)
def test_bad_policy_specs_are_one_line(tiny_llama, pairs, spec, message):
    with pytest.raises(MatbenchError) as err:
        policy = parse_policy(spec)
        engine = PairEngine(tiny_llama, policy=policy)
        engine.selections(pairs[0], *engine.prepare(pairs[0]))
    assert str(err.value) == message


@pytest.mark.parametrize(
    "spec",
    [
        "snapkv@0.5",
        "snapkv:window=32,kernel=7@256",
        "adakv:inner=knorm,alpha=0.5@0.875",
        "random:seed=3@0.0",
        "expected_attention:use_covariance=False@0.25",
        "snapkv:question=True@0.5",
        "adakv:alpha=0.5,question=True@0.875",
    ],
)
def test_specs_round_trip(spec):
    assert parse_policy(spec).spec == spec and parse_policy(parse_policy(spec).spec) == parse_policy(spec)


def test_the_policies_command_lists_every_policy_with_its_usage(capsys):
    import json

    from matbench.cli import main

    assert main(["policies", "--json"]) == 0
    entries = {e["name"]: e for e in json.loads(capsys.readouterr().out)["policies"]}
    assert sorted(entries) == sorted([*SCORING, "kvpress", "oracle", "recent"])
    assert (
        entries["snapkv"]["usage"] == "snapkv:window=64,kernel=5,question=False@BUDGET" and entries["snapkv"]["budget"]
    )
    assert entries["knorm"]["usage"] == "knorm@BUDGET"  # key-only: no question-aware mode
    assert entries["recent"]["usage"] == "recent:N" and not entries["recent"]["budget"]
    assert entries["kvpress"]["usage"] == "kvpress:PRESS(key=value,...,press=INNER(...),question=False)@BUDGET"
    assert main(["policies"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert len(table) == 2 * len(entries) + 1 and table[0].split() == [
        "adakv",
        "adakv:inner=snapkv,alpha=0.2,question=False@BUDGET",
    ]


def test_one_eval_serves_every_policy_budget_and_mode_from_one_prefill(tiny_dir, tmp_path):
    """16 settings (2 policies x 2 budgets x 2 source modes x 2 kept-from members) from one global
    prefill per pair: one results file each, named and configured by its setting, every gate
    passed; a setting run alone gives the same records; a second run resumes everything."""
    import json

    from matbench.cli import main

    out, alone = tmp_path / "grid", tmp_path / "alone"
    common = ["eval", "--model", str(tiny_dir), "--limit", "2", "--device", "cpu", "--no-progress", "--check"]
    grid = [
        "--policy",
        "snapkv",
        "--policy",
        "knorm",
        "--budget",
        "0.5,0.875",
        "--source-mode",
        "natural,evicted",
        "--kept-from",
        "a,b",
    ]
    assert main([*common, *grid, "--output", str(out)]) == 0
    files = sorted(p.name for p in out.glob("*.json"))
    assert len(files) == 16 and "discovery_probe_compact_knorm-0.875_evicted_from-b.json" in files
    for name in files:
        results = json.loads((out / name).read_text())
        config = results["config"]
        assert config["policy"] in ("snapkv@0.5", "snapkv@0.875", "knorm@0.5", "knorm@0.875")
        assert ("_evicted" in name) == (config.get("source_mode") == "evicted")
        assert ("_from-b" in name) == (config.get("kept_from") == "b")
        assert all(
            g["passed"] == g["checked"] + 0 * g["skipped"] and g["checked"] + g["skipped"] == 2
            for g in results["gates"].values()
        )
        root = results["metrics"]["selection"]["root"]
        if config.get("source_mode") == "evicted":
            assert root["donor_visible"]["rate"] == 0.0 and root["source_kept"]["a"]["rate"] == 0.0
            assert root["materialization"]["donor_hidden"]["n"] == 2
    assert (
        main(
            [*common, "--policy", "knorm@0.875", "--source-mode", "evicted", "--kept-from", "b", "--output", str(alone)]
        )
        == 0
    )
    name = "discovery_probe_compact_knorm-0.875_evicted_from-b"
    logs = [[json.loads(line) for line in (d / f"{name}.items.jsonl").read_text().splitlines()] for d in (out, alone)]
    for a, b in zip(*logs):
        for arm in a["arms"]:
            assert a["arms"][arm]["class"] == b["arms"][arm]["class"]
            # The grid serves 16 settings' rows in one batch, the lone run one setting's: float32
            # products of other batch shapes round otherwise (a CI run measured 2.9e-6 here).
            assert abs(a["arms"][arm]["shift"] - b["arms"][arm]["shift"]) <= 2e-5
            assert a["arms"][arm].get("selection") == b["arms"][arm].get("selection")
    assert main([*common, *grid, "--output", str(out)]) == 0
    assert {json.loads((out / n).read_text())["items"]["n_from_log"] for n in files} == {2}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--policy", "recent:30", "--budget", "0.5"], "--budget applies to scoring policies named without @BUDGET"),
        (["--source-mode", "evicted"], "--source-mode and --kept-from apply to serving policies other than the oracle"),
        (["--policy", "snapkv"], "policy 'snapkv' needs a budget"),
    ],
)
def test_bad_policy_runs_are_refused_in_one_line(tiny_dir, tmp_path, capsys, args, message):
    from matbench.cli import main

    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_dir),
                "--limit",
                "1",
                "--device",
                "cpu",
                "--no-progress",
                "--output",
                str(tmp_path),
                *args,
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_the_selection_block_counts_and_splits_exactly():
    from matbench.protocol.records import ArmRecord, PairRecord, Selection
    from matbench.results.selection import summarize_selection

    def record(i, shift, outcome, visible, differ, kept):
        arm = ArmRecord(
            answers=("A", "B"),
            outcome=outcome,
            probe_answers=("A", "B"),
            probe_logp=((0.0,), (0.0,)),
            shift=shift,
            selection=Selection(
                10 + i,
                differ,
                visible,
                overlap=(1.0, 0.5 if differ else 1.0),
                source_kept=kept,
                held_rows=40 + i,
                picked=(10 + i, 10 + i % 2),
                members_differ_matched=differ and i == 0,
                served_bytes=1000 + i,
                needed_bytes=500 + i,
            ),
        )
        control = ArmRecord(
            answers=("A", "A"), outcome="const", probe_answers=("A", "A"), probe_logp=((0.0,), (0.0,)), shift=0.0
        )
        return PairRecord(
            item_id=f"p{i}",
            variant="v",
            values=("A", "B"),
            menu=("A", "B"),
            budget=0,
            length=0,
            n_tokens=(1, 1),
            arms={"root": arm, "control": control},
        )

    block = summarize_selection(
        [
            record(0, 0.5, "follow", True, True, (True, False)),
            record(1, -0.1, "const", False, False, (False, False)),
            record(2, 0.3, "const", False, True, (False, True)),
            record(3, 0.2, "anti", False, False, (False, False)),
        ]
    )
    assert list(block) == ["root"]  # the control keeps its declared rows: no selection
    root = block["root"]
    assert (root["n_pairs"], root["members_differ"]["rate"], root["donor_visible"]["rate"]) == (4, 0.5, 0.25)
    assert (
        root["overlap_by_layer"] == [1.0, 0.75] and root["kept_tokens_mean"] == 11.5 and root["held_rows_mean"] == 41.5
    )
    assert (root["source_kept"]["a"]["rate"], root["source_kept"]["b"]["rate"]) == (0.25, 0.25)
    assert root["members_differ_matched"]["rate"] == 0.25 and root["picked_mean"]["a"] == 11.5
    assert root["picked_mean"]["b"] == 10.5 and root["picked_mean"]["count_differs"]["rate"] == 0.5
    assert (root["served_bytes_mean"], root["needed_bytes_mean"]) == (1001.5, 501.5)
    hidden = root["materialization"]["donor_hidden"]
    assert hidden["n"] == 3 and hidden["classes"] == {"follow": 0, "anti": 1, "const": 2, "other": 0}
    assert hidden["shift"]["mean"] == pytest.approx(0.4 / 3) and (
        hidden["shift"]["positive"],
        hidden["shift"]["negative"],
    ) == (2, 1)
    assert root["materialization"]["donor_visible"]["follow_rate"]["rate"] == 1.0
    assert summarize_selection([record(0, 0.5, "follow", True, True, (True, False))][:0]) is None
    assert "accuracy" not in root["materialization"]["all"] and "paired" not in root["materialization"]["all"]


def test_an_arm_of_unpaired_items_reports_its_accuracy():
    """Harvest's natural QAs have one input for both members: the block adds the answers' accuracy
    (mean share of members answering their own value) and how many pairs had two values."""
    from matbench.protocol.records import ArmRecord, PairRecord, Selection
    from matbench.results.selection import summarize_selection

    def record(i, answers, values, logp=((-1.0, -2.0), (-1.0, -2.0)), menu=("A", "B")):
        arm = ArmRecord(
            answers=answers,
            outcome="const",
            probe_answers=answers,
            probe_logp=logp,
            shift=0.0,
            selection=Selection(10, False, False, source_kept=(False, False)),
        )
        return PairRecord(
            item_id=f"p{i}",
            variant="",
            values=values,
            menu=menu,
            budget=0,
            length=0,
            n_tokens=(1, 1),
            arms={"harv": arm},
        )

    block = summarize_selection(
        [
            record(0, ("B", "B"), ("B", "B")),
            record(1, ("A", "A"), ("B", "B")),
            record(2, ("A", "A"), ("A", "A")),
            record(3, ("A", "B"), ("A", "B")),
        ]
    )
    every = block["harv"]["materialization"]["all"]
    assert every["accuracy"]["mean"] == 0.75 and every["accuracy"]["n"] == 4 and every["paired"] == 1
    assert every["accuracy"]["ci"][0] <= 0.75 <= every["accuracy"]["ci"][1]
    assert block["harv"]["materialization"]["donor_hidden"]["accuracy"]["mean"] == 0.75
    # the answer margin, log p(own value) - log p(other) per member: +1 when the value is A, -1 when B;
    # pairs: B,B -> -1; B,B -> -1; A,A -> +1; A,B -> 0
    assert every["margin"]["mean"] == -0.25 and every["margin"]["n"] == 4
    assert every["margin"]["ci"][0] <= -0.25 <= every["margin"]["ci"][1]
    # three candidates: the right one against the logsumexp of the two others
    three = summarize_selection([record(0, ("C", "C"), ("C", "C"), ((-2.0, -2.0, -1.0),) * 2, ("A", "B", "C"))])
    assert three["harv"]["materialization"]["all"]["margin"]["mean"] == pytest.approx(-1.0 - (-2.0 + math.log(2)))
    # a free answer's gold alone (one candidate): no margin to report, the accuracy stays
    gold = summarize_selection([record(0, ("A", "A"), ("A", "A"), ((-0.5,), (-0.5,)), ("A",))])
    assert "margin" not in gold["harv"]["materialization"]["all"]
    assert gold["harv"]["materialization"]["all"]["accuracy"]["mean"] == 1.0
    # a value the menu does not offer (an answer read as free text): no margin either
    free = summarize_selection([record(0, ("A", "A"), ("C", "C"))])
    assert "margin" not in free["harv"]["materialization"]["all"]
    assert free["harv"]["materialization"]["all"]["accuracy"]["mean"] == 0.0


def test_the_audit_command_runs_the_grid_over_suites_and_summarizes_it(tiny_dir, tmp_path, capsys):
    import json

    import pandas as pd

    from matbench.cli import main

    out = tmp_path / "audit"
    assert (
        main(
            [
                "audit",
                "--model",
                str(tiny_dir),
                "--suite",
                "discovery,access",
                "--limit",
                "2",
                "--device",
                "cpu",
                "--no-progress",
                "--policy",
                "knorm",
                "--policy",
                "streaming_llm",
                "--policy",
                "recent:30",
                "--budget",
                "0.5,0.875",
                "--source-mode",
                "natural,evicted",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    oracle_files = sorted(out.glob("*_probe_compact.json"))  # the oracle beside the policies, per suite
    files = sorted(set(out.glob("*.json")) - set(oracle_files))
    assert len(oracle_files) == 2 and len(files) == 2 * 2 * 2 * 2 + 2 * 2  # suites x policies x budgets x modes
    table = pd.read_csv(out / "audit.csv")
    arms = sum(len(json.loads(f.read_text())["metrics"]["selection"]) for f in files)
    assert len(table) == arms and set(table.suite) == {"discovery", "access"}
    row = table[
        (table.suite == "discovery")
        & (table.arm == "root")
        & (table.policy == "knorm")
        & (table.budget == 0.875)
        & (table.source == "evicted")
    ].iloc[0]
    source = json.loads((out / "discovery_probe_compact_knorm-0.875_evicted.json").read_text())
    assert row["shift"] == pytest.approx(
        source["metrics"]["selection"]["root"]["materialization"]["all"]["shift"]["mean"]
    )

    # against the oracle, pair by pair: the two per-item logs read here
    def shifts(name: str) -> dict[str, float]:
        lines = (out / name).read_text().splitlines()
        return {r["item_id"]: r["arms"]["root"]["shift"] for r in map(json.loads, lines)}

    ours, oracle = shifts(source["items"]["log"]), shifts("discovery_probe_compact.items.jsonl")
    assert sorted(ours) == sorted(oracle) and len(ours) == 2
    diffs = [ours[i] - oracle[i] for i in ours]
    assert row["oracle_shift"] == pytest.approx(sum(oracle.values()) / 2)
    assert row["vs_oracle"] == pytest.approx(sum(diffs) / 2) and row["vs_oracle"] != 0
    assert row["vs_oracle_lo"] == pytest.approx(min(diffs)) and row["vs_oracle_hi"] == pytest.approx(max(diffs))
    assert 0 < row["vs_oracle_p"] <= 1 and row["vs_oracle_n"] == 2
    # natural mode: only the pairs whose served rows hid the donor are compared
    natural = table[
        (table.suite == "discovery") & (table.arm == "root") & (table.policy == "knorm") & (table.source == "natural")
    ]
    for _, cell in natural.iterrows():
        log = json.loads((out / f"discovery_probe_compact_knorm-{cell['budget']}.json").read_text())["items"]["log"]
        lines = [json.loads(line) for line in (out / log).read_text().splitlines()]
        hidden = [r for r in lines if not r["arms"]["root"]["selection"]["donor_visible"]]
        assert (cell["vs_oracle_n"] if cell["vs_oracle_n"] == cell["vs_oracle_n"] else 0) == len(hidden)
    markdown = (out / "audit.md").read_text()
    assert markdown == capsys.readouterr().out and "## tiny-llama, discovery, arm root" in markdown.replace(
        str(tiny_dir), "tiny-llama"
    )
    assert (
        f"| knorm | {source['metrics']['selection']['root']['materialization']['all']['shift']['mean']:+.3f}"
        not in markdown
    )
    assert f" / {row['shift']:+.3f} |" in markdown  # the evicted 0.875 cell closes knorm's row
    assert main(["audit", "--summarize", str(out)]) == 0 and capsys.readouterr().out == markdown
    recent = table[table.policy == "recent:30"]  # a policy without a budget: an empty budget, a "—" column last
    recent_arms = sum(len(json.loads(f.read_text())["metrics"]["selection"]) for f in files if "_recent-30" in f.name)
    assert len(recent) == recent_arms > 0 and recent.budget.isna().all()
    assert markdown.splitlines()[4].endswith("| 0.5 | 0.875 | — |")
    assert any(line.startswith("| recent:30 | — / — | — / — | ") for line in markdown.splitlines())


def test_the_audit_grid_shows_accuracy_for_an_arm_of_unpaired_items():
    import pandas as pd

    from matbench.results.audit import COLUMNS, audit_grid, grid_columns

    def row(suite, arm, budget, source, shift, accuracy, paired, margin=None):
        return {
            **dict.fromkeys(COLUMNS),
            "model": "m",
            "suite": suite,
            "arm": arm,
            "policy": "knorm",
            "budget": budget,
            "source": source,
            "shift": shift,
            "accuracy": accuracy,
            "paired": paired,
            "margin": margin,
        }

    table = pd.DataFrame(
        [
            row("harvest", "harv", "0.5", "natural", 0.0, 0.625, 0, 0.25),
            row("harvest", "harv", "0.5", "evicted", 0.0, 0.5, 0, -0.125),
            row("discovery", "root", "0.5", "natural", 0.125, None, None),
            row("discovery", "root", "0.5", "evicted", -0.25, None, None),
        ],
        columns=list(COLUMNS),
    )
    assert grid_columns(table, "m", "harvest", "harv") == ("accuracy", "margin")
    assert grid_columns(table, "m", "discovery", "root") == ("shift",)
    assert grid_columns(table.assign(margin=None), "m", "harvest", "harv") == ("accuracy",)  # summarized before margins
    assert audit_grid(table, "m", "harvest", "harv", "accuracy").loc["knorm", "0.5"] == "0.625 / 0.500"
    assert audit_grid(table, "m", "harvest", "harv", "margin").loc["knorm", "0.5"] == "+0.250 / -0.125"
    assert audit_grid(table, "m", "discovery", "root").loc["knorm", "0.5"] == "+0.125 / -0.250"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--summarize", "EMPTY"], "no policy runs under"),
        (["--model", "M", "--output", "OUT"], "an audit runs serving policies: name at least one --policy"),
        (["--policy", "knorm@0.5"], "matbench audit needs --model and --output DIR"),
    ],
)
def test_bad_audits_are_one_line(tmp_path, capsys, args, message):
    from matbench.cli import main

    args = [a.replace("EMPTY", str(tmp_path)).replace("OUT", str(tmp_path / "o")) for a in args]
    assert main(["audit", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_merging_folds_each_dropped_value_into_its_most_similar_kept_row(tiny_llama, pairs):
    """The positive control's arithmetic, checked row by row for one head against a plain loop;
    keys and dropped rows are untouched; nothing dropped (0.0) is the cache itself."""
    policy = parse_policy("merging@0.5")
    engine = PairEngine(tiny_llama, policy=policy)
    _, caches = engine.prepare(pairs[0])
    cache = caches[0]
    layers, heads = engine.runner.head_shape
    total = cache.positions.shape[0]
    kept = np.zeros((layers, heads, total), dtype=bool)
    rng = np.random.default_rng(0)
    kept[...] = rng.random((layers, heads, total)) < 0.5
    merged = policy.merge(cache, kept)
    for layer in range(layers):
        assert torch.equal(merged.keys[layer], cache.keys[layer])
        for head in range(heads):
            keep = kept[layer, head]
            k, v = cache.keys[layer][0, head].double().numpy(), cache.values[layer][0, head].double().numpy()
            unit = k / np.linalg.norm(k, axis=1, keepdims=True)
            expect = v[keep].copy()
            acc, wsum = np.zeros_like(expect), np.zeros(keep.sum())
            unsure = np.zeros(keep.sum(), dtype=bool)  # targets of a near tie (float32 vs float64 argmax)
            for e in np.flatnonzero(~keep):
                sims = unit[keep] @ unit[e]
                t = int(sims.argmax())
                close = np.flatnonzero(sims >= sims[t] - 1e-5)
                if len(close) > 1:
                    unsure[close] = True
                w = max(sims[t], 0) * np.linalg.norm(v[e]) / (np.linalg.norm(v[e]) + np.linalg.norm(v[keep][t]) + 1e-6)
                acc[t] += w * v[e]
                wsum[t] += w
            expect = np.where((wsum > 0)[:, None], (expect + acc) / (1 + wsum)[:, None], expect)
            got = merged.values[layer][0, head].double().numpy()
            assert unsure.mean() < 0.05
            assert np.abs(got[keep][~unsure] - expect[~unsure]).max() <= 1e-5 * max(
                1.0, np.abs(expect).max()
            ) and np.array_equal(got[~keep], v[~keep])
    everything = np.ones((layers, heads, total), dtype=bool)
    assert all(torch.equal(a, b) for a, b in zip(policy.merge(cache, everything).values, cache.values))


def test_a_merging_run_serves_the_merged_rows_and_keeps_the_gates(tiny_llama, pairs):
    """Under source-evicted serving the merging policy keeps knorm's rows but serves values that
    absorbed the dropped ones, the source's included: its probe differs from knorm's; the
    control arm stays exactly 0 and every gate passes."""
    plain = PairEngine(tiny_llama, policy=parse_policy("knorm@0.5"), source="evicted")
    merging = PairEngine(tiny_llama, policy=parse_policy("merging:inner=knorm@0.5"), source="evicted")
    layout, caches = plain.prepare(pairs[0])
    a, b = plain.score(pairs[0], layout, caches), merging.score(pairs[0], layout, caches)
    assert a.arms["root"].selection == b.arms["root"].selection  # the same rows
    assert a.arms["root"].probe_logp != b.arms["root"].probe_logp  # other values in them
    assert b.arms["control"].shift == 0.0 and b.arms["txt"].probe_logp == a.arms["txt"].probe_logp
    assert all(g.passed for g in run_gates(merging, pairs[0], layout, caches, b))


def test_the_question_aware_mode_scores_over_the_questions_own_prefilled_rows(tiny_llama, pairs):
    """`with_question` appends the question's rows as a prefill of context + question would make
    them (positions L, L+1, ...), the member's own rows untouched."""
    from matbench.engine.policies.observe import with_question
    from matbench.engine.runtime import new_cache

    engine = PairEngine(tiny_llama, policy=parse_policy("snapkv:question=true@0.5"))
    pair = pairs[0]
    layout, caches = engine.prepare(pair)
    question = engine.query_ids(pair, pair.arm("root"), engine.probe_readout)
    member, cache = layout.members[0], caches[0]
    extended = with_question(engine.runner, cache, question)
    total, extra = len(member.input_ids), len(question)
    assert extended.positions.tolist() == [*cache.positions.tolist(), *range(cache.length, cache.length + extra)]
    fresh = new_cache()
    where = extended.positions[None]
    engine.runner.forward(
        torch.tensor([[*member.input_ids, *question]]),
        where,
        fresh,
        query_coords=where,
        key_coords=where,
        key_valid=torch.ones(1, total + extra, dtype=torch.bool),
    )
    for layer, (k, v) in enumerate(zip(extended.keys, extended.values)):
        assert torch.equal(k[:, :, :total], cache.keys[layer]) and k.shape[2] == total + extra
        assert torch.allclose(k[:, :, total:], fresh.layers[layer].keys[:, :, total:], atol=1e-4)
        assert torch.allclose(v[:, :, total:], fresh.layers[layer].values[:, :, total:], atol=1e-4)


def test_question_aware_picks_follow_the_question_and_are_recorded(tiny_dir, tiny_llama, pairs, tmp_path):
    """SnapKV's window ends with the question in the question-aware mode: its picks change on
    some pair; the arm's probe question is what it scored with; a run records the mode in its
    policy spec and passes every gate."""
    import json

    from matbench.cli import main

    aware = PairEngine(tiny_llama, policy=parse_policy("snapkv:question=true@0.5"), source="evicted")
    agnostic = PairEngine(tiny_llama, policy=parse_policy("snapkv@0.5"), source="evicted")
    changed = []
    for pair in pairs:
        layout, caches = aware.prepare(pair)
        memo: dict = {}
        picks = [
            e.selections(pair, layout, caches, memo={} if e is agnostic else memo)["root"][0] for e in (aware, agnostic)
        ]
        changed.append(picks[0] != picks[1])
        asked = {k[2] for k in memo if k[0] == "with_question"}
        assert asked == {aware.query_ids(pair, pair.arm(a), aware.probe_readout) for a in ("root", "chain")}
    assert any(changed)
    out = tmp_path / "aware"
    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_dir),
                "--limit",
                "2",
                "--device",
                "cpu",
                "--no-progress",
                "--check",
                "--policy",
                "snapkv:question=true",
                "--budget",
                "0.5",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    results = json.loads((out / "discovery_probe_compact_snapkv-question-True-0.5.json").read_text())
    assert results["config"]["policy"] == "snapkv:question=True@0.5"
    assert all(g["passed"] == 2 for g in results["gates"].values() if g["checked"])


@pytest.mark.parametrize("model", ["tiny_llama", "tiny_gemma"])
def test_per_head_selections_pass_both_per_head_gates_with_sliding_windows_too(model, pairs, request):
    """SnapKV keeps different rows per head: the head-mask gate is exact and native serving of the
    gathered rows equals the literal layout, on a sliding-window model as on full attention."""
    loaded = request.getfixturevalue(model)
    engine = PairEngine(loaded, policy=parse_policy("snapkv@0.5"), serving="native")
    for pair in pairs[:2]:
        layout, caches = engine.prepare(pair)
        gates = {g.name: g for g in run_gates(engine, pair, layout, caches, engine.score(pair, layout, caches))}
        assert gates["head_mask"].max_abs_diff == 0.0 and gates["head_layout"].max_abs_diff <= 1e-4
        assert all(g.passed for g in gates.values()), gates


def test_the_keep_all_gate_runs_with_each_budgeted_policy_and_catches_a_lost_row(tiny_llama, pairs, monkeypatch):
    """With --check, every budgeted policy of the run, at ratio 0.0, must serve exactly what full
    serving serves; a request builder that drops a policy's last row (planted) fails it."""
    from matbench.engine import pair_engine
    from matbench.engine.policies.setting import PolicySetting

    engine = PairEngine(tiny_llama, policy=parse_policy("snapkv@0.5"))
    layout, caches = engine.prepare(pairs[0])
    settings = [PolicySetting(parse_policy(s)) for s in ("snapkv@0.5", "snapkv@0.875", "knorm@0.5", "recent:30")]
    gates = {g.name: g for g in run_gates(engine, pairs[0], layout, caches, settings=settings)}
    assert gates["keep_all"].passed and gates["keep_all"].max_abs_diff == 0.0
    oracle = PairEngine(tiny_llama)
    assert "keep_all" not in {g.name for g in run_gates(oracle, pairs[0], layout, caches)}
    original, fired = pair_engine.ServeRequest, []

    def losing(cache, served, ids, position=None, slots=None, heads=None):
        if slots is not None:  # planted: the policy's last row never reaches the request
            fired.append(1)
            slots = slots[:-1]
            heads = heads[:, :, :-1] if heads is not None else None
        return original(cache, served, ids, position, slots, heads)

    monkeypatch.setattr(pair_engine, "ServeRequest", losing)
    gates = {g.name: g for g in run_gates(engine, pairs[0], layout, caches, settings=settings)}
    assert fired and not gates["keep_all"].passed and gates["keep_all"].max_abs_diff > 0
    assert "rows differ under snapkv@0.0, knorm@0.0" in gates["keep_all"].detail
    assert "two copies of full serving in one batch differ by 0.00e+00" in gates["keep_all"].detail

    monkeypatch.setattr(pair_engine, "ServeRequest", original)
    import matbench.engine.gates as gates_module

    serve = gates_module.SERVING[engine.serving]

    def noisy(runner, requests, **kwargs):  # a GPU rounding the first row of each batch its own way
        batch, logits = serve(runner, requests, **kwargs)
        fired.append(2)
        return batch, logits + torch.tensor([[3e-6]] + [[0.0]] * (len(requests) - 1), device=logits.device)

    monkeypatch.setitem(gates_module.SERVING, engine.serving, noisy)
    gate = next(g for g in run_gates(engine, pairs[0], layout, caches, settings=settings) if g.name == "keep_all")
    # the same rows: rounding noise within the logit tolerance passes, and the copies show its size
    assert 2 in fired and gate.passed and gate.max_abs_diff == pytest.approx(3e-6, abs=2e-7)
    assert f"; the same rows; two copies of full serving in one batch differ by {gate.max_abs_diff:.2e})" in gate.detail

    def loud(runner, requests, **kwargs):  # rounding past the tolerance: a fault, whatever the copies show
        batch, logits = serve(runner, requests, **kwargs)
        return batch, logits + torch.tensor([[2e-3]] + [[0.0]] * (len(requests) - 1), device=logits.device)

    monkeypatch.setitem(gates_module.SERVING, engine.serving, loud)
    gate = next(g for g in run_gates(engine, pairs[0], layout, caches, settings=settings) if g.name == "keep_all")
    assert not gate.passed and gate.max_abs_diff == pytest.approx(2e-3, abs=1e-6)  # past the 1e-3 tolerance


def test_rows_no_policy_governs_are_served_once_for_every_setting(tiny_llama, pairs, monkeypatch):
    """Several settings in one batch: an arm no policy governs is the same request under each, so
    it is served once; every setting's records equal those of scoring it alone (the log-probs to
    float32 rounding: a batch of other rows rounds a row differently)."""
    from matbench.engine import pair_engine
    from matbench.engine.selection import governed

    engine = PairEngine(tiny_llama)
    items = [(p, *engine.prepare(p)) for p in pairs[:2]]
    specs = ["snapkv@0.5", "knorm@0.75", "streaming_llm@0.5"]
    combos = [("probe", "compact")] + [("probe", "compact", s, "natural", "a") for s in specs]
    serve, rows = pair_engine.SERVING["compact"], []

    def counting(runner, requests, **kwargs):
        rows.append(len(requests))
        return serve(runner, requests, **kwargs)

    monkeypatch.setitem(pair_engine.SERVING, "compact", counting)
    together = engine.score_many(items, combos)
    arms = sum(len(p.arms) for p, _, _ in items)
    ruled = sum(governed(p, a) for p, _, _ in items for a in p.arms)
    assert 0 < ruled < arms and rows == [2 * arms] + [2 * ruled] * len(specs)
    monkeypatch.setitem(pair_engine.SERVING, "compact", serve)
    for combo in combos:
        for got, want in zip(together, engine.score_many(items, [combo])):
            for name, arm in got[combo].arms.items():
                other = want[combo].arms[name]
                assert (arm.answers, arm.selection) == (other.answers, other.selection)
                np.testing.assert_allclose(arm.probe_logp, other.probe_logp, atol=1e-4, rtol=0)


def test_a_policy_is_paired_only_with_an_oracle_of_the_same_items_and_model_input():
    """The oracle a policy run is compared with shares its items, readout, serving, template and
    YaRN factor; a run under another RoPE scaling is another model's input, never its reference."""
    from pathlib import Path

    from matbench.results.audit import _oracle_key
    from matbench.results.schema import read_results

    store = Path(__file__).parent / "fixtures" / "store" / "contract" / "smollm2-135m"
    config = read_results(store / "discovery_probe_compact" / "discovery_probe_compact.json").config
    assert _oracle_key(config) == _oracle_key(config.model_copy(update={"policy": "knorm@0.5", "n_items": 8}))
    for change in ({"rope_yarn": 4.0}, {"template": "para"}, {"serving": "native"}, {"seed": 1}):
        assert _oracle_key(config.model_copy(update=change)) != _oracle_key(config)

"""Faithfulness gates (SPEC 2.4): the checks that make a run's numbers trustworthy.

They run in the test suite on tiny models and on the offline models, and at run time with
`matbench eval --check`. Each returns a `GateResult`; `require` turns a failure into an error.
The identity gate runs on every pair unconditionally (`layout_pair`).
"""

from __future__ import annotations

from dataclasses import replace

import torch

from matbench.engine.layout import PairLayout
from matbench.engine.pair_engine import PairEngine, probe_logits, probe_logits_arms
from matbench.engine.serving import SERVING, ServeRequest, serve_native
from matbench.errors import GateFailure
from matbench.protocol.pairs import Arm, DonorPair
from matbench.protocol.records import GateResult, PairRecord

FLOAT32_TOL = 1e-3  # the logit gates' bound (float32, float64) up to TOL_KNEE tokens
TOL_KNEE, TOL_EXPONENT = 1024, 0.65
NEAR_TIE = 0.1  # top-2 logit gap under which a low-precision argmax flip is reported, not failed


def logit_tolerance(length: int) -> float:
    """The float32/float64 bound on max |dlogit| for a pair of `length` tokens: 1e-3 up to 1,024
    tokens, then growing as (L / 1024)^0.65 (2.5e-3 at 4k, 9.5e-3 at 32k, 1.5e-2 at 64k).

    From measurement, not widened after a failure: 2,956 distinct gate-A readings in the committed
    per-item logs (three offline models, 116 to 66k tokens, CPU and H200) are flat in length for
    Gemma 3 and Qwen2.5-Coder (log-log slopes .04 and .01; at most 2.1e-4), while SmolLM2 run past
    its 8,192-token training context grows to 1.4e-3 and 2.7e-3 at 39.7k tokens in float32, which
    float64 shrinks 3-11x on the same dialogs (rounding: transformers keeps RMSNorm and softmax in
    float32). The exponent puts the bound at 4x that worst rounding reading at its length (reruns
    of one pair spread up to 2.9x); every passing reading sits at least 4.7x below it. A fault
    stays far above: a query served one position late reads 0.29-0.44 (SmolLM2, ~690 tokens,
    290x the bound), transformers' CUDA SDPA once read 2.45 on Gemma at 633 tokens."""
    return FLOAT32_TOL * max(1.0, length / TOL_KNEE) ** TOL_EXPONENT


def compare_logits(name: str, got: torch.Tensor, ref: torch.Tensor, exact_dtype: bool, length: int = 0) -> GateResult:
    """A logit gate: within `logit_tolerance(length)` in float32/float64; in lower precision, no
    argmax flip whose top-2 gap exceeds `NEAR_TIE`."""
    diff = float((got - ref).abs().max())
    if exact_dtype:
        tol = logit_tolerance(length)
        at = f" at {length:,} tokens" if length > TOL_KNEE else ""
        return GateResult(name, diff <= tol, diff, f"max |dlogit| {diff:.2e} (tol {tol:.3g}{at})")
    flips = []
    for g, r in zip(got, ref):
        if int(g.argmax()) != int(r.argmax()):
            top = r.topk(2).values
            flips.append(float(top[0] - top[1]))
    hard = [gap for gap in flips if gap > NEAR_TIE]
    detail = f"max |dlogit| {diff:.2e}; argmax flips {len(flips)} (near ties: {len(flips) - len(hard)})"
    return GateResult(name, not hard, diff, detail)


def _compared(result: GateResult) -> float:
    """The worst |dlogit| of a `compare_logits` result (always set: only a gate that does not
    apply has none)."""
    if result.max_abs_diff is None:
        raise ValueError(f"gate {result.name!r} compared no logits")
    return result.max_abs_diff


def _contiguous(positions: tuple[int, ...]) -> bool:
    return positions[-1] - positions[0] + 1 == len(positions)


def _length(layout: PairLayout) -> int:
    """The tokens a pair's gates compare over: its longer member."""
    return max(len(m.input_ids) for m in layout.members)


def _exact(engine: PairEngine) -> bool:
    return engine.runner.dtype in (torch.float32, torch.float64)


def gate_a(engine: PairEngine, pair: DonorPair, layout: PairLayout, caches) -> GateResult:
    """Compact serving of every row equals a plain forward over the same ids and positions."""
    everything = Arm("all", tuple(range(len(pair.events))), pair.arms[0].question, uses_source=True)
    members: tuple[int, ...] = (0, 1)
    if engine.loaded.has_sliding_layers:
        # transformers measures windows in slots, the global prefill in positions: they agree
        # only on a member without a position gap (the one whose source fills the budget).
        members = tuple(m for m in members if _contiguous(layout.members[m].positions))
        if not members:  # e.g. trigger's bank-wide budgets leave gaps in both members
            return GateResult("A", True, None, "n/a: sliding windows and no member without a position gap")
    served = probe_logits(engine, pair, caches, everything, members=members, serving="compact")
    query = engine.query_ids(pair, everything, engine.probe_readout)
    # One reference per distinct member: an unpaired item's (harvest's natural questions) are
    # the same ids at the same positions, and its reference is a forward over a whole dialog.
    refs: dict[tuple, torch.Tensor] = {}
    keys = []
    for member in (layout.members[m] for m in members):
        start = member.positions[-1] + 1
        key = (member.input_ids + query, member.positions + tuple(range(start, start + len(query))))
        if key not in refs:
            refs[key] = engine.runner.plain_forward(torch.tensor([key[0]]), torch.tensor([key[1]]), engine.chunk_size)[
                0
            ]
        keys.append(key)
    return compare_logits(
        "A", served.cpu(), torch.stack([refs[k] for k in keys]).cpu(), _exact(engine), _length(layout)
    )


def gate_b(engine: PairEngine, pair: DonorPair, layout: PairLayout, caches) -> GateResult:
    """Full attention: compact serving of a subset equals native serving at the same query position."""
    if engine.loaded.has_sliding_layers:
        return GateResult("B", True, None, "skipped: sliding-window layers make compact and native differ by design")
    arms = list(pair.arms)
    compact = probe_logits_arms(engine, pair, caches, arms, serving="compact", query_position=layout.length)
    native = probe_logits_arms(engine, pair, caches, arms, serving="native")
    diffs = [compare_logits("B", c.cpu(), n.cpu(), _exact(engine), _length(layout)) for c, n in zip(compact, native)]
    worst = max(diffs, key=_compared)
    return GateResult("B", all(r.passed for r in diffs), worst.max_abs_diff, worst.detail)


def mask_gate(
    engine: PairEngine, pair: DonorPair, layout: PairLayout, caches, literal: dict[str, torch.Tensor] | None = None
) -> GateResult:
    """Native serving in its literal layout (all L positions, dropped rows masked) is unchanged
    when the dropped rows hold noise: the mask hides them. `literal`: `literal_probes`, if made."""
    literal = literal or literal_probes(engine, pair, caches)
    arms = _arms_without_source(pair)

    def noisy(arm: Arm):
        dropped = tuple(i for i in range(len(pair.events)) if i not in arm.served)
        return tuple(c.with_noise(dropped, seed=7) for c in caches)

    # served in the same batches as `literal_probes`, so that only the noise differs
    dirty = probe_logits_arms(engine, pair, caches, arms, serving="native", caches_for=noisy, full_layout=True)
    worst = max(float((literal[arm.name] - d).abs().max()) for arm, d in zip(arms, dirty))
    return GateResult("mask", worst <= 1e-5, worst, f"max |dlogit| {worst:.2e} with noise in dropped rows")


def layout_gate(
    engine: PairEngine, pair: DonorPair, layout: PairLayout, caches, literal: dict[str, torch.Tensor] | None = None
) -> GateResult:
    """The native serving the engine runs (kept rows only, at their position coordinates) equals
    the literal layout of the mask gate: what makes dropping the masked rows a pure saving."""
    literal = literal or literal_probes(engine, pair, caches)
    arms = _arms_without_source(pair)
    gathered = probe_logits_arms(engine, pair, caches, arms, serving="native")
    diffs = [
        compare_logits("layout", g.cpu(), literal[arm.name].cpu(), _exact(engine), _length(layout))
        for arm, g in zip(arms, gathered)
    ]
    worst = max(diffs, key=_compared)
    return GateResult("layout", all(r.passed for r in diffs), worst.max_abs_diff, worst.detail)


def literal_probes(engine: PairEngine, pair: DonorPair, caches) -> dict[str, torch.Tensor]:
    """Per arm without the source, its probe logits from the literal native layout (what the
    mask and layout gates both compare against; made once when they run together)."""
    arms = _arms_without_source(pair)
    return dict(
        zip(
            (arm.name for arm in arms),
            probe_logits_arms(engine, pair, caches, arms, serving="native", full_layout=True),
        )
    )


def _arms_without_source(pair: DonorPair) -> list[Arm]:
    return [arm for arm in pair.arms if not arm.uses_source]


def control_gate(record: PairRecord, arm: str = "control") -> GateResult:
    """Serving only events before the source: no donor-sensitive class, shift exactly 0."""
    entry = record.arms[arm]
    ok = entry.outcome not in ("follow", "anti") and entry.shift == 0.0
    return GateResult("control", ok, abs(entry.shift), f"class {entry.outcome}, shift {entry.shift!r}")


def native_layout_gates(engine: PairEngine, pair: DonorPair, layout: PairLayout, caches) -> list[GateResult]:
    """The mask and layout gates over one set of literal-layout probes (n/a for an item whose every
    arm serves a donor-dependent event, e.g. the decoy audit's opposite decoy)."""
    if not _arms_without_source(pair):
        return [
            GateResult(name, True, None, "n/a: every arm serves a donor-dependent event") for name in ("mask", "layout")
        ]
    literal = literal_probes(engine, pair, caches)
    return [mask_gate(engine, pair, layout, caches, literal), layout_gate(engine, pair, layout, caches, literal)]


def per_head_gates(engine: PairEngine, pair: DonorPair, layout: PairLayout, caches, settings=None) -> list[GateResult]:
    """The gates of a per-layer, per-KV-head selection, under every policy setting of the run
    (default: the engine's own); empty when no setting makes a per-head choice.

    - `head_mask`: each KV head sees none of the rows it dropped: member A's probe logits are
      unchanged when every (layer, head, row) a head dropped holds loud values (exactly: a masked
      key has weight zero in any dtype).
    - `head_layout`: native serving of the kept rows gathered (what runs) equals the literal
      layout, all L positions with every row a head dropped masked for that head, on both members
      (within the logit tolerance: the two layouts reduce in different orders)."""
    worst_mask, layouts, seen = 0.0, [], set()
    memo: dict = {}
    chosen = [
        (name, c)
        for setting in (settings or [engine.setting])
        for name, c in engine.selections(pair, layout, caches, setting, memo).items()
    ]
    for name, (slots, heads, _) in chosen:
        if heads[0] is None or heads[0].all():
            continue
        arm = pair.arm(name)
        ids = engine.query_ids(pair, arm, engine.probe_readout)
        worst_mask = max(worst_mask, _loud_dropped_rows(engine, caches[0], arm, ids, slots[0], heads[0]))
        key = (slots, heads[0].tobytes(), heads[1].tobytes(), ids)
        if key in seen:  # the governed arms of a pair mostly share one choice
            continue
        seen.add(key)
        requests = [
            ServeRequest(caches[m], arm.served, ids, None, slots[m], torch.from_numpy(heads[m])) for m in (0, 1)
        ]
        gathered = serve_native(engine.runner, requests)[1]
        literal = serve_native(engine.runner, requests, full_layout=True)[1]
        layouts.append(compare_logits("head_layout", gathered.cpu(), literal.cpu(), _exact(engine), _length(layout)))
    if not seen:
        return []
    worst = max(layouts, key=lambda r: r.max_abs_diff or 0.0)
    return [
        GateResult(
            "head_mask",
            worst_mask == 0.0,
            worst_mask,
            f"max |dlogit| {worst_mask:.2e} with loud rows each head dropped",
        ),
        GateResult("head_layout", all(r.passed for r in layouts), worst.max_abs_diff, worst.detail),
    ]


def _loud_dropped_rows(engine: PairEngine, cache, arm: Arm, ids, slots, heads) -> float:
    """Max |dlogit| of member A's probe when the rows each head dropped hold 1e6."""
    dropped = torch.from_numpy(~heads)  # [L, H_kv, len(slots)]
    index = torch.tensor(slots)
    values = []
    for layer, tensor in enumerate(cache.values):
        noisy = tensor.clone()
        rows = noisy[0][:, index]  # [H_kv, n, D]
        rows[dropped[layer].to(rows.device)] = 1e6
        noisy[0][:, index] = rows
        values.append(noisy)
    loud = replace(cache, values=tuple(values))
    clean, dirty = (
        SERVING[engine.serving](
            engine.runner,
            [ServeRequest(c, arm.served, ids, c.length if arm.query_at_end else None, slots, torch.from_numpy(heads))],
        )[1]
        for c in (cache, loud)
    )
    return float((clean - dirty).abs().max())


def keep_all_gate(engine: PairEngine, pair: DonorPair, layout: PairLayout, caches, settings=None) -> GateResult | None:
    """Each budgeted policy of the run, at a budget that removes nothing (ratio 0.0, natural
    mode), serves every row: member A's request for the first governed arm gathers the same rows
    as full serving (the header and every event), every head keeping each, exactly, and its probe
    logits match full serving's within the logit tolerance of gates A and B (exactly equal on a
    CPU). The rows decide: the request is then full serving itself, and a GPU may round two
    copies of one row of a batch differently (the eighth device session read 1.1e-5 in float64
    at 47k tokens on SmolLM2, the first time this gate ran on a GPU), so two copies of full
    serving in one batch are served too and their difference reported beside. This checks the
    policy path itself (selection, donor discipline, per-head replay, request building) against
    the protocol's. None when no setting has a budget."""
    from matbench.engine.policies.budget import Budget
    from matbench.engine.policies.setting import PolicySetting
    from matbench.engine.selection import governed

    policies = list(
        dict.fromkeys(
            s.policy.with_budget(Budget(ratio=0.0)) for s in (settings or [engine.setting]) if s.policy.budgeted
        )
    )
    arm = next((a for a in pair.arms if governed(pair, a)), None)
    if not policies or arm is None:
        return None
    index = 2 * [a.name for a in pair.arms].index(arm.name)  # member A's request of the arm
    serve = SERVING[engine.serving]
    memo: dict = {}
    worst, worst_policy, differ, logits = 0.0, policies[0].spec, [], []
    for policy in policies:
        chosen = engine.selections(pair, layout, caches, PolicySetting(policy), memo)
        request = engine.requests(pair, caches, engine.probe_readout, chosen=chosen)[index]
        full = replace(request, served=tuple(range(len(pair.events))), slots=None, head_valid=None)
        if not (
            torch.equal(request.kept_slots(), full.kept_slots())
            and (request.head_valid is None or bool(request.head_valid.all()))
        ):
            differ.append(policy.spec)
        got, want = serve(engine.runner, [request, full])[1]
        logits.append(compare_logits("keep_all", got[None].cpu(), want[None].cpu(), _exact(engine), _length(layout)))
        if _compared(logits[-1]) > worst:
            worst, worst_policy = _compared(logits[-1]), policy.spec
    twins = serve(engine.runner, [full, full])[1]
    floor = float((twins[0] - twins[1]).abs().max())
    rows = f"rows differ under {', '.join(differ)}" if differ else "the same rows"
    return GateResult(
        "keep_all",
        not differ and all(r.passed for r in logits),
        worst,
        f"max |dlogit| {worst:.2e} ({worst_policy}; {rows}; two copies of full serving in one batch "
        f"differ by {floor:.2e}): every policy keeping every row vs full serving",
    )


def encodings_gate(engine: PairEngine, pair: DonorPair, layout: PairLayout, caches) -> GateResult | None:
    """The batched re-encodings (`PairEngine.batch_encodings`, compact caches of the served rows)
    serve what the caches built one arm at a time serve: the probe logits of every re-encoded arm,
    both members, within the gate A/B tolerance. None where the engine builds them one at a time
    or the pair re-encodes nothing."""
    arms = [arm for arm in pair.arms if arm.encoding != "joint" and not arm.swapped]
    if not engine.batch_encodings or not arms:
        return None
    batched = engine.derived_many([(pair, layout, caches)], batched=True)[0]
    one_at_a_time = engine.derived_many([(pair, layout, caches)], batched=False)[0]
    got = probe_logits_arms(engine, pair, caches, arms, caches_for=lambda arm: batched[arm.name])
    want = probe_logits_arms(engine, pair, caches, arms, caches_for=lambda arm: one_at_a_time[arm.name])
    diffs = [compare_logits("encodings", g.cpu(), w.cpu(), _exact(engine), _length(layout)) for g, w in zip(got, want)]
    worst = max(diffs, key=_compared)
    return GateResult("encodings", all(r.passed for r in diffs), worst.max_abs_diff, worst.detail)


def run_gates(
    engine: PairEngine, pair: DonorPair, layout: PairLayout, caches, record: PairRecord | None = None, settings=None
) -> list[GateResult]:
    """Every gate on one pair; `settings`: the run's policy settings (the per-head gates check
    each per-head choice; default: the engine's own setting)."""
    results = [
        gate_a(engine, pair, layout, caches),
        gate_b(engine, pair, layout, caches),
        *native_layout_gates(engine, pair, layout, caches),
    ]
    results += per_head_gates(engine, pair, layout, caches, settings)
    for optional in (
        keep_all_gate(engine, pair, layout, caches, settings),
        encodings_gate(engine, pair, layout, caches),
    ):
        if optional is not None:
            results.append(optional)
    if record is not None and "control" in record.arms:
        results.append(control_gate(record))
    return results


def require(results: list[GateResult], item_id: str, attn_implementation: str, dtype: str) -> None:
    """Raise on the first failed gate. A logit gate failing in bfloat16 or float16 offers float32:
    there rounding moves real-weight logits by up to ~1 and flips near-tied answers under every
    kernel (benchmarks/gpu-default-attention-smollm2-bf16.json), and the gates' tolerances are
    float32's. Failing under a fused attention kernel it may be the kernel's rounding, so the error
    offers eager attention; failing under eager attention in float32, it offers float64 (README,
    Faithfulness gates): rounding shrinks with the precision (1.42e-3 -> 1.31e-4 at 40k tokens on
    SmolLM2), a fault keeps its size."""
    for r in results:
        if not r.passed:
            hint = ""
            if r.name in ("A", "B", "layout") and dtype not in ("float32", "float64"):
                hint = "; rerun with --dtype float32 (the gates' tolerances are float32's)"
            elif r.name in ("A", "B") and attn_implementation != "eager":
                hint = "; try --attn-implementation eager"
            elif r.name in ("A", "B") and dtype == "float32":
                hint = "; rerun with --dtype float64 to tell rounding from a fault"
            raise GateFailure(f"faithfulness gate {r.name} failed on {item_id}: {r.detail}{hint}")

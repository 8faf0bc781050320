"""integrate.py RES.txz.00 RES.txz.01 ... [--target results/experiments] (here, in the repo root):
take the results a device call handed back (call.sh's `res/`, as xz pieces, or one res.tgz) into
the repository.

For every finished results file (`res/<model>/<name>.json` beside its log): print its wall time,
item count and gates, refuse it if a gate failed, compare the items it shares with the contract's
file of the same name (same row hashes: class per arm equal, donor shifts within --tolerance), then
copy it and its log to TARGET/<model>/, store it as a leaderboard submission (`matbench submit`'s
checks: schema, log sha256, metrics recomputed from the log) and drop its logs from
results/partial. Logs without a results file (unfinished cells) go to results/partial/<model>/ so
that the next session resumes them. Last, the experiments README's tables are regenerated. Written
after several sessions had done these steps by hand (and stop 28's partial logs were lost)."""
from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

from matbench.errors import MatbenchError
from matbench.leaderboard.submit import SUBMISSIONS, store_submission, verify_submission
from matbench.results.report import report_rows

CONTRACT, PARTIAL = Path("results/contract"), Path("results/partial")
PIECE = re.compile(r"\.(\d{2,})$")  # res.txz.00: call.sh's pieces of one tarball


def records(log: Path) -> dict[str, dict]:
    return {r["item_hash"]: r for r in map(json.loads, log.read_text().splitlines()) if r.get("item_hash")}


def compare_with_contract(result: Path, tolerance: float) -> str:
    """One line: how the items shared with results/contract/<model>/<same name> agree."""
    reference = CONTRACT / result.parent.name / result.name
    if not reference.exists():
        return "no contract file of this name"
    ours = records(result.with_suffix(".items.jsonl"))
    theirs = records(reference.with_suffix(".items.jsonl"))
    shared = sorted(set(ours) & set(theirs))
    same = total = 0
    worst = 0.0
    for key in shared:
        for arm, value in theirs[key].get("arms", {}).items():
            mine = ours[key]["arms"].get(arm, {})
            if "class" in value and "class" in mine:
                total += 1
                same += value["class"] == mine["class"]
            if isinstance(value.get("shift"), float) and isinstance(mine.get("shift"), float):
                worst = max(worst, abs(value["shift"] - mine["shift"]))
    verdict = "ok" if same == total and worst <= tolerance else "DIFFERS"
    return f"{len(shared)} items shared with the contract: classes {same}/{total}, max shift diff {worst:.1e} ({verdict})"


def drop_heads(result: Path) -> None:
    """Rewrite a policy run's log without the per-head bits of each selection (`Selection.heads`,
    zlib-packed, incompressible: half of an eviction audit's 84 MB of logs) and the results file's
    log sha256 to match. The served positions (`kept`), overlaps and every metric stay; a rerun of
    the recorded command writes the bits again."""
    from matbench.results.files import file_sha256, write_json

    drop_log_heads(result.with_suffix(".items.jsonl"))
    payload = json.loads(result.read_text())
    payload["items"]["sha256"] = file_sha256(result.with_suffix(".items.jsonl"))
    write_json(result, payload)


def drop_log_heads(log: Path) -> None:
    """The per-item log alone without the per-head bits (an unfinished cell's log: a resumed run
    reads records, never their bits; SmolLM2's 14 unfinished harvest pairs, stop 34: 53 -> 3.4 MB)."""
    lines = []
    for line in log.read_text().splitlines():
        record = json.loads(line)
        for arm in record.get("arms", {}).values():
            (arm.get("selection") or {}).pop("heads", None)
        lines.append(json.dumps(record))
    log.write_text("\n".join(lines) + "\n")


def tarballs(paths: list[Path]) -> list[io.BytesIO]:
    """The bytes of the tarballs named: whole ones (`res.tgz`), and the pieces call.sh cuts one
    into (`res.txz.00`, `res.txz.01`, ..., wherever each call put them) joined in their numbers' order."""
    numbered = {p: int(m[1]) for p in paths if (m := PIECE.search(p.name))}
    pieces = sorted(numbered, key=numbered.__getitem__)
    if [numbered[p] for p in pieces] != list(range(len(pieces))):
        sys.exit(f"integrate.py: pieces {[numbered[p] for p in pieces]} of the results: pass every one, 00 to the last")
    whole = [io.BytesIO(p.read_bytes()) for p in paths if p not in numbered]
    return whole + ([io.BytesIO(b"".join(p.read_bytes() for p in pieces))] if pieces else [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tarball", type=Path)
    parser.add_argument("more", type=Path, nargs="*", help="further tarballs, or the other pieces of one "
                        "(res.txz.01 ...)")
    parser.add_argument("--target", type=Path, default=Path("results/experiments"))
    parser.add_argument("--submissions", type=Path, default=SUBMISSIONS)
    parser.add_argument("--replace", action="store_true", help="overwrite a committed file of the same name")
    parser.add_argument("--tolerance", type=float, default=1e-3, help="largest donor-shift difference to the contract")
    parser.add_argument("--drop-heads", action="store_true", help="strip the per-head selection bits from policy "
                        "runs' logs, unfinished ones too (and fix the results' log sha256) before anything is "
                        "checked or copied")
    parser.add_argument("--no-readme", action="store_true", help="leave TARGET/README.md's tables as they are")
    args = parser.parse_args(argv)
    for path in [args.tarball, *args.more]:
        if not path.is_file():
            sys.exit(f"integrate.py: {path} not found: pass the res.txz.NN pieces (or res.tgz) device calls handed back")
    with tempfile.TemporaryDirectory() as tmp:
        for payload in tarballs([args.tarball, *args.more]):
            with tarfile.open(fileobj=payload) as tar:
                tar.extractall(tmp, filter="data")
        res = Path(tmp) / "res"
        if (res / "times.txt").exists():
            print((res / "times.txt").read_text().rstrip())
        failed = False
        for model in sorted(p for p in res.iterdir() if p.is_dir() and p.name != "live"):
            finished = {p.with_suffix(".items.jsonl").name for p in model.glob("*.json")}
            for result in sorted(model.glob("*.json")):
                if args.drop_heads:
                    drop_heads(result)
                data = json.loads(result.read_text())
                gates = data["gates"]
                bad = [name for name, g in gates.items() if g["passed"] != g["checked"]]
                summary = ", ".join(f"{n} {g['passed']}/{g['checked']}" + (f" max {g['max_abs_diff']:.1e}"
                                    if g["max_abs_diff"] else "") for n, g in gates.items() if g["checked"])
                print(f"{model.name}/{result.name}: {data['items']['n_records']} items, {data['wall_seconds']:.0f} s; "
                      f"gates {summary}")
                if bad:
                    print(f"  REFUSED: gate {', '.join(bad)} failed")
                    failed = True
                    continue
                print("  " + compare_with_contract(result, args.tolerance))
                target = args.target / model.name
                there = target / result.name
                if there.exists() and there.read_bytes() != result.read_bytes() and not args.replace:
                    print(f"  REFUSED: {there} exists with other content (--replace overwrites it)")
                    failed = True
                    continue
                try:  # before anything is copied: a file failing its checks stays out of the repository
                    verified = verify_submission(result)
                except MatbenchError as exc:
                    print(f"  REFUSED: {exc}")
                    failed = True
                    continue
                target.mkdir(parents=True, exist_ok=True)
                for source in (result, result.with_suffix(".items.jsonl")):
                    shutil.copyfile(source, target / source.name)
                stored = store_submission(verified, args.submissions)
                print(f"  -> {there}, submission {stored.address}")
                (PARTIAL / model.name / result.with_suffix(".items.jsonl").name).unlink(missing_ok=True)
            for log in sorted(model.glob("*.items.jsonl")):
                if log.name not in finished:
                    (PARTIAL / model.name).mkdir(parents=True, exist_ok=True)
                    if args.drop_heads:
                        drop_log_heads(log)
                    shutil.copyfile(log, PARTIAL / model.name / log.name)
                    print(f"{model.name}/{log.name}: unfinished, {len(log.read_text().splitlines())} items "
                          f"-> {PARTIAL / model.name}")
    readme = args.target / "README.md"
    if readme.exists() and not args.no_readme:
        text = readme.read_text()
        head = text[:text.index("\n### ")] if "\n### " in text else text.rstrip("\n") + "\n"
        readme.write_text(head + "\n" + "\n".join(report_rows(sorted(args.target.glob("*/*.json")))) + "\n")
        print(f"{readme}: tables regenerated over {len(list(args.target.glob('*/*.json')))} files "
              "(bump the count in tests/test_committed_results.py)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

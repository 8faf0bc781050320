"""`matbench policies`: the registered serving policies, their arguments and what each keeps."""

from __future__ import annotations

import argparse
import dataclasses
import json


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "policies",
        help="list the serving policies --policy can name",
        description="List every registered serving policy (built in or from a plugin): its name, "
        "whether it takes --budget, its arguments with their defaults (NAME:key=value,...) and a "
        "one-line description.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.set_defaults(func=run)


def describe() -> list[dict]:
    """One entry per registered policy, in name order."""
    from matbench.engine.policies import POLICIES
    from matbench.engine.policies.base import argument_fields

    out = []
    for name in POLICIES.names():
        cls = POLICIES.get(name)
        # `question` (the question-aware mode) only where the policy observes queries.
        fields = [f for f in argument_fields(cls) if f.name != "question" or _observes(cls)]
        args = {f.name: (None if f.default is dataclasses.MISSING else f.default) for f in fields}
        doc = " ".join((cls.__doc__ or "").split("\n\n")[0].split())
        budget = any(f.name == "budget" for f in dataclasses.fields(cls))
        params = ",".join(f"{k}={v}" for k, v in args.items())
        usage = cls.usage or (name + (f":{params}" if params else ""))
        out.append(
            {
                "name": name,
                "usage": usage + ("@BUDGET" if budget else ""),
                "budget": budget,
                "arguments": args,
                "description": doc,
            }
        )
    return out


def _observes(cls) -> bool:
    from matbench.errors import MatbenchError

    try:
        return bool(cls().observed_tokens())
    except (MatbenchError, TypeError):  # a policy that cannot be built without arguments lists its own usage
        return False


def run(args: argparse.Namespace) -> int:
    entries = describe()
    if args.json:
        print(json.dumps({"policies": entries}, indent=1, default=str))
        return 0
    width = max(len(e["name"]) for e in entries)
    for e in entries:
        print(f"{e['name']:<{width}}  {e['usage']}\n{'':<{width}}  {e['description']}")
    print(
        "BUDGET: a fraction removed (0.5 keeps half, as kvpress's compression_ratio) or a token count (256); "
        "--budget 0.25,0.5 runs each."
    )
    return 0

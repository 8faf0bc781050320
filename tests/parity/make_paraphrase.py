"""Record the paper's two surface templates (kv_frozen.py `wrap` and `phr`, ORIG and PARA) for
tests/test_paraphrase.py.

    python -m tests.parity.make_paraphrase /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/paraphrase.json: each statement kind of kv_frozen's table rendered
under both templates with fixed fillers, and one event wrapped under both.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

from tests.parity.recorder import notice, paper_on_path

KINDS = {
    "state": {"r": "KAPPA", "v": "ONLINE"},
    "num": {"r": "SIGMA", "v": 417},
    "mirror": {"a": "THETA", "b": "GAMMA"},
    "selftest": {"r": "DELTA"},
    "operand": {"r": "OMEGA", "gv": 731, "thr": 650},
    "verdict": {"r": "OMEGA", "v": "EXCEEDED"},
    "neutral": {"r": "OMEGA"},
    "outcome": {"r": "OMEGA"},
    "flag": {"r": "OMEGA"},
}


def main(paper_root: str) -> None:
    with paper_on_path(Path(paper_root)):
        frozen = importlib.import_module("kvmemory.kv_frozen")
        kinds = {k: {t: frozen.phr(t, k, **kw) for t in ("orig", "para")} for k, kw in KINDS.items()}
        wraps = {t: frozen.wrap(t, 4, "BODY") for t in ("orig", "para")}
    out = Path(__file__).parent / "fixtures" / "paraphrase.json"
    out.write_text(
        json.dumps(
            {"notice": notice("kv_frozen"), "script": "kv_frozen", "kinds": kinds, "wrap_index_4": wraps}, indent=1
        )
        + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1])

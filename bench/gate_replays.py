"""Whether replays of `selfforge bench gate` on the same commits agree, row by row.

Each argument is a replay's ``gate-results.jsonl`` (an output folder of its own per
replay). A row is one (commit, kind, setting): the real commit or one cheat drawn from
it. For every row present in all the replays it prints SAME or DIFF, comparing the
verdict, the reason (durations masked) and the drawn bug with the tests it hid; under a
DIFF, each replay's values. Then the counts of real commits per verdict and own-suite
state, and of cheats drawn and refused per kind, for each replay.

    python bench/gate_replays.py out-1/gate-results.jsonl out-2/gate-results.jsonl ...

Rows only some replays have (a replay with a larger ``--limit``) are named and left out.
Exit code 0 whatever it finds: it reports, it does not judge.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

Key = tuple[str, str, str]


def read(path: Path) -> dict[Key, dict]:
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip().endswith("}"):
            row = json.loads(line)
            rows[(row["commit"][:8], row["kind"], row["setting"])] = row
    return rows


def _shown(row: dict) -> tuple[str, str, str]:
    reason = re.sub(r"\d+(\.\d+)?\s*s\b", "N s", row.get("reason") or "")
    return row.get("verdict") or "", reason, row.get("drawn") or ""


def counts(rows: dict[Key, dict]) -> str:
    real = [r for r in rows.values() if r["kind"] == "real"]
    passing = Counter(r["verdict"] for r in real if r["own_suite"] == "passes")
    failing = Counter(r["verdict"] for r in real if r["own_suite"] != "passes")
    drawn = Counter(
        (r["kind"], r["verdict"])
        for r in rows.values()
        if r["kind"] != "real" and r["verdict"] != "not_drawn"
    )
    cheats = ", ".join(f"{k} {v}: {n}" for (k, v), n in sorted(drawn.items())) or "none"
    return (
        f"real, own suite passes: {dict(passing)}; own suite fails: {dict(failing)}; "
        f"cheats drawn: {cheats}"
    )


def main(paths: list[str]) -> int:
    if len(paths) < 2:
        print("usage: python bench/gate_replays.py GATE_RESULTS.jsonl GATE_RESULTS.jsonl ...")
        return 2
    runs = [read(Path(p)) for p in paths]
    keys = list(dict.fromkeys(k for rows in runs for k in rows))
    some = [k for k in keys if not all(k in rows for rows in runs)]
    if some:
        print(f"{len(some)} row(s) not in every replay, left out:", sorted({k[0] for k in some}))
    same = 0
    for key in (k for k in keys if k not in some):
        values = [_shown(rows[key]) for rows in runs]
        agree = all(v == values[0] for v in values)
        same += agree
        verdicts = " | ".join(v[0] for v in values)
        print("SAME" if agree else "DIFF", *key, verdicts)
        for n, (verdict, reason, drawn) in enumerate(values if not agree else [], 1):
            print(f"    replay {n}: {verdict} | {reason[:200]} | {drawn[:120]}")
    compared = len(keys) - len(some)
    print(f"{same} of {compared} rows identical over {len(runs)} replays")
    for n, rows in enumerate(runs, 1):
        print(f"replay {n}: {counts(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

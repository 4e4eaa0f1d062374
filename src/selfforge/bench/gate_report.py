"""The Markdown report of `bench gate`: per repository, the real commits by verdict (the
reasons of each one not accepted, grouped) and the cheats refused per kind."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import date
from pathlib import Path

from selfforge.bench.gate import GateRecord

SHOWN = {
    "accepted": "accepted",
    "needs_review": "needs review",
    "rejected": "rejected",
    "could_not_judge": "could not judge",
}


def render(records: list[GateRecord]) -> str:
    by_repo: dict[str, list[GateRecord]] = defaultdict(list)
    for r in records:
        by_repo[r.repo].append(r)
    parts = [f"# selfforge bench gate ({date.today().isoformat()})", ""]
    for repo, rows in by_repo.items():
        parts += _repository(repo, rows)
    return "\n".join(parts)


def _repository(repo: str, rows: list[GateRecord]) -> list[str]:
    real = [r for r in rows if r.kind == "real"]
    passing = [r for r in real if r.own_suite == "passes"]
    failing = [r for r in real if r.own_suite != "passes"]
    counts = Counter(r.verdict for r in passing)
    lines = [
        f"## {Path(repo).name}",
        "",
        f"{len(real)} commit(s) judged whole by `selfforge check`.",
        "",
    ]
    lines += ["| real commits (own suite passes) | count |", "|---|---|"]
    lines += [f"| {shown} | {counts.get(v, 0)} |" for v, shown in SHOWN.items()]
    lines += [f"| own suite fails (apart) | {len(failing)} |", ""]
    not_accepted = [r for r in passing if r.verdict != "accepted"]
    if not_accepted:
        lines += ["### Why not accepted", ""]
        lines += _grouped(not_accepted)
    if failing:
        lines += ["### Own suite fails", ""]
        lines += [
            f"- `{r.commit[:10]}` {r.subject[:70]}: {SHOWN.get(r.verdict, r.verdict)}"
            for r in failing
        ]
        lines.append("")
    lines += _cheats([r for r in rows if r.kind != "real"])
    return lines


def _grouped(rows: list[GateRecord]) -> list[str]:
    groups: dict[tuple[str, str], list[GateRecord]] = defaultdict(list)
    for r in rows:
        groups[(r.verdict, _why(r))].append(r)
    lines = []
    for (verdict, why), members in sorted(groups.items(), key=lambda g: (g[0][0], -len(g[1]))):
        shas = ", ".join(f"`{r.commit[:10]}`" for r in members)
        lines.append(f"- {SHOWN.get(verdict, verdict)} ({len(members)}): {why} — {shas}")
    return [*lines, ""]


def _why(r: GateRecord) -> str:
    text = "; ".join(r.review) if r.review else r.reason
    return (text.splitlines() or [""])[0][:160]


def _cheats(rows: list[GateRecord]) -> list[str]:
    if not rows:
        return []
    lines = [
        "| cheat kind | setting | drawn | refused | accepted | not drawn |",
        "|---|---|---|---|---|---|",
    ]
    keys = sorted({(r.kind, r.setting) for r in rows})
    for kind, setting in keys:
        mine = [r for r in rows if (r.kind, r.setting) == (kind, setting)]
        drawn = [r for r in mine if r.verdict != "not_drawn"]
        accepted = [r for r in drawn if r.verdict == "accepted"]
        refused = [r for r in drawn if r.verdict in ("rejected", "needs_review")]
        lines.append(
            f"| {kind} | {setting} | {len(drawn)} | {len(refused)} | {len(accepted)} "
            f"| {len(mine) - len(drawn)} |"
        )
    lines.append("")
    odd = [r for r in rows if r.verdict in ("accepted", "could_not_judge")]
    if odd:
        lines += ["### Cheats not refused", ""]
        lines += [f"- `{r.commit[:10]}` {r.kind}: {r.verdict}: {r.drawn} ({_why(r)})" for r in odd]
        lines.append("")
    reasons = Counter(r.reason.split(" (")[0][:100] for r in rows if r.verdict == "not_drawn")
    if reasons:
        lines += [
            "Cheats not drawn: " + "; ".join(f"{n}× {why}" for why, n in reasons.most_common()),
            "",
        ]
    return lines


def write(records: list[GateRecord], out: Path) -> tuple[Path, str]:
    text = render(records)
    path = out / "gate-report.md"
    path.write_text(text, encoding="utf-8")
    return path, text

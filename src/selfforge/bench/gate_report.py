"""The Markdown report of `bench gate`: per repository, the real commits by verdict (the
reasons of each one not accepted, grouped) and the cheats refused per kind."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import date
from pathlib import Path

from selfforge.bench.gate import GateRecord
from selfforge.judge.outcome import Outcome

VERDICTS = (Outcome.ACCEPTED, Outcome.NEEDS_REVIEW, Outcome.REJECTED, Outcome.COULD_NOT_JUDGE)


def shown(verdict: str) -> str:
    """A verdict as a person reads it (``needs review``); ``not_drawn`` as it is."""
    return Outcome(verdict).shown if verdict in set(Outcome) else verdict


def _rank(verdict: str) -> int:
    return Outcome(verdict).rank if verdict in set(Outcome) else len(Outcome)


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
    lines += [f"| {v.shown} | {counts.get(v, 0)} |" for v in VERDICTS]
    lines += [f"| own suite fails (apart) | {len(failing)} |", ""]
    not_accepted = [r for r in passing if r.verdict != Outcome.ACCEPTED]
    if not_accepted:
        lines += ["### Why not accepted", ""]
        lines += _grouped(not_accepted)
    if failing:
        lines += ["### Own suite fails", ""]
        lines += [f"- `{r.commit[:10]}` {r.subject[:70]}: {shown(r.verdict)}" for r in failing]
        lines.append("")
    lines += _cheats([r for r in rows if r.kind != "real"])
    return lines


def _grouped(rows: list[GateRecord]) -> list[str]:
    groups: dict[tuple[str, str], list[GateRecord]] = defaultdict(list)
    for r in rows:
        groups[(r.verdict, _why(r))].append(r)
    lines = []
    # the one ranking of outcomes (judge/outcome.py): needs review before rejected
    for (verdict, why), members in sorted(
        groups.items(), key=lambda g: (_rank(g[0][0]), -len(g[1]))
    ):
        shas = ", ".join(f"`{r.commit[:10]}`" for r in members)
        lines.append(f"- {shown(verdict)} ({len(members)}): {why} — {shas}")
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
        accepted = [r for r in drawn if r.verdict == Outcome.ACCEPTED]
        refused = [r for r in drawn if r.verdict in (Outcome.REJECTED, Outcome.NEEDS_REVIEW)]
        lines.append(
            f"| {kind} | {setting} | {len(drawn)} | {len(refused)} | {len(accepted)} "
            f"| {len(mine) - len(drawn)} |"
        )
    lines.append("")
    odd = [r for r in rows if r.verdict in (Outcome.ACCEPTED, Outcome.COULD_NOT_JUDGE)]
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

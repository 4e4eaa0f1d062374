"""The Markdown report written after every run to ``.selfforge/reports/``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from selfforge.journal.store import Journal
from selfforge.repo.workspace import Workspace


def write_report(ws: Workspace, journal: Journal, run_id: int) -> Path:
    info = journal.run_info(run_id) or {}
    attempts = journal.attempts(run_id)
    spent_usd, spent_tokens = journal.run_spend(run_id)
    started = dt.datetime.fromtimestamp(info.get("started_at") or 0, tz=dt.UTC)
    lines = [
        f"# selfforge run {run_id}",
        "",
        f"- started: {started:%Y-%m-%d %H:%M:%S} UTC",
        f"- model: `{info.get('model')}`",
        f"- branch: `{info.get('base_branch')}` at `{(info.get('base_commit') or '')[:10]}`",
        f"- status: {info.get('status')} — {info.get('stop_reason')}",
        f"- spend: ${spent_usd:.4f}, {spent_tokens} tokens",
        "",
        "## Goals",
        *[f"{i}. {g}" for i, g in enumerate(info.get("goals") or [], start=1)],
        "",
        "## Attempts",
    ]
    if not attempts:
        lines.append("No attempts were made.")
    for a in attempts:
        where = f"commit `{a.commit[:10]}`" if a.commit else "no commit"
        if a.branch:
            where += f" on branch `{a.branch}`"
        lines += [
            "",
            f"### {a.id}. {a.task}",
            "",
            *([f"- cycle {a.cycle}, candidate {a.candidate} (best of N)"] if a.candidate else []),
            f"- outcome: **{a.outcome}** after {a.repairs} repair round(s); {where}",
            f"- reason: {a.reason}",
            f"- lesson: {a.lesson or '—'}",
        ]
        measured = journal.measurements(a.id)
        lines += [f"- measured: {measurement_line(m)}" for m in measured]
        if a.diff:
            lines += ["", "```diff", a.diff.rstrip()[:20000], "```"]
    path = ws.state / "reports" / f"run-{run_id:04d}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def measurement_line(m: dict[str, Any]) -> str:
    """A journaled measurement in one line: ``work: 12.3 ms → 4.1 ms, -66.7% [-70.1%,
    -63.0%], 6 runs: improved (abc1234567..def8901234)``, or a value at one revision."""
    unit = f" {m['unit']}" if m.get("unit") else ""
    where = (m.get("candidate_commit") or "")[:10]
    if m.get("verdict") is None:
        return f"{m['name']}: {_figure(m['candidate'])}{unit} at {where}"
    change = "n/a" if m.get("change") is None else f"{m['change']:+.1%}"
    low, high = m.get("low"), m.get("high")
    interval = f" [{low:+.1%}, {high:+.1%}]" if low is not None and high is not None else ""
    if low == high:
        interval = ""
    runs = m.get("runs") or 0
    return (
        f"{m['name']}: {_figure(m['base'])}{unit} → {_figure(m['candidate'])}{unit}, {change}"
        f"{interval}, {runs} run{'s' if runs != 1 else ''}: {m['verdict']} "
        f"({(m.get('base_commit') or '')[:10]}..{where}, {m['source']})"
    )


def _figure(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value:.0f}" if value == int(value) and abs(value) < 1e15 else f"{value:.4g}"

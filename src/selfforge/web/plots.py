"""Plots as SVG drawn on the server: no charting library, nothing fetched by the page.
Every label is escaped (task text comes from a model)."""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass

from markupsafe import Markup, escape

from selfforge.judge.outcome import Outcome

WIDTH, HEIGHT, PAD = 640, 200, 48
MAX_POINTS = 300


@dataclass
class Bar:
    label: str
    value: float
    text: str  # shown at the bar's end


def line_chart(points: list[tuple[float, float]], title: str, unit: str) -> Markup:
    """A cumulative series over time; ``points`` are (unix time, value), oldest first."""
    if len(points) < 2:
        return _empty(title)
    step = max(1, len(points) // MAX_POINTS)
    shown = points[::step] + ([points[-1]] if (len(points) - 1) % step else [])
    t0, t1 = shown[0][0], shown[-1][0]
    peak = max(v for _, v in shown)
    top = peak or 1.0
    span = (t1 - t0) or 1.0
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    coords = " ".join(
        f"{PAD + (t - t0) / span * inner_w:.1f},{HEIGHT - PAD - v / top * inner_h:.1f}"
        for t, v in shown
    )
    parts = [
        _open(title),
        f'<text x="{PAD}" y="{PAD - 8}" class="axis">{escape(_number(peak, unit))}</text>',
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" '
        'class="grid"/>',
        f'<polyline points="{coords}" class="series"/>',
        f'<text x="{PAD}" y="{HEIGHT - PAD + 18}" class="axis">{escape(_clock(t0))}</text>',
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - PAD + 18}" class="axis" text-anchor="end">'
        f"{escape(_clock(t1))}</text>",
        "</svg>",
    ]
    return Markup("".join(parts))


def commits_chart(points: list[tuple[str, float]], title: str, unit: str) -> Markup:
    """A measure's values at commits in the order they landed; ``points`` are (commit,
    value), evenly spaced, each a dot whose tooltip names its commit and value."""
    if not points:
        return _empty(title)
    low = min(v for _, v in points)
    high = max(v for _, v in points)
    span = (high - low) or abs(high) or 1.0
    bottom, top = low - span * 0.1, high + span * 0.1
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    step = inner_w / max(1, len(points) - 1)

    def at(i: int, v: float) -> tuple[float, float]:
        x = PAD + (i * step if len(points) > 1 else inner_w / 2)
        return x, HEIGHT - PAD - (v - bottom) / (top - bottom) * inner_h

    coords = [at(i, v) for i, (_, v) in enumerate(points)]
    parts = [
        _open(title),
        f'<text x="{PAD}" y="{PAD - 8}" class="axis">{escape(_measured(high, unit))}</text>',
        f'<text x="{PAD}" y="{HEIGHT - PAD + 32}" class="axis">'
        f"{escape(_measured(low, unit))} (lowest)</text>",
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" '
        'class="grid"/>',
        '<polyline points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in coords) + '" '
        'class="series"/>',
    ]
    for (commit, value), (x, y) in zip(points, coords, strict=True):
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" class="point">'
            f"<title>{escape(commit)}: {escape(_measured(value, unit))}</title></circle>"
        )
    first, last = points[0][0], points[-1][0]
    parts += [
        f'<text x="{PAD}" y="{HEIGHT - PAD + 16}" class="axis">{escape(first)}</text>',
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - PAD + 16}" class="axis" text-anchor="end">'
        f"{escape(last)}</text>",
        "</svg>",
    ]
    return Markup("".join(parts))


def bar_chart(bars: list[Bar], title: str, scale: float | None = None) -> Markup:
    """Horizontal bars, longest first as given; ``scale`` is the full-width value."""
    if not bars:
        return _empty(title)
    full = scale or max(b.value for b in bars) or 1.0
    row, label_w = 22, 180
    height = PAD + row * len(bars)
    parts = [_open(title, height)]
    for i, bar in enumerate(bars):
        y = PAD // 2 + i * row
        width = max(1.0, bar.value / full * (WIDTH - label_w - 200))
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 14}" class="label" text-anchor="end">'
            f"{escape(bar.label[:28])}</text>"
            f'<rect x="{label_w}" y="{y + 3}" width="{width:.1f}" height="{row - 6}" class="bar"/>'
            f'<text x="{label_w + width + 6:.1f}" y="{y + 14}" class="axis">'
            f"{escape(bar.text)}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def cumulative(series: list[tuple[float, float]]) -> list[tuple[float, float]]:
    total, out = 0.0, []
    for t, v in series:
        total += v
        out.append((t, total))
    return out


def task_kind(task: str) -> str:
    """The task's first word, which names the kind of change: fix, add, refactor…"""
    words = re.findall(r"[A-Za-z]+", task)
    return words[0].lower() if words else "other"


def acceptance_bars(outcomes: list[tuple[str, str | None]], most: int = 10) -> list[Bar]:
    tried: Counter[str] = Counter()
    accepted: Counter[str] = Counter()
    for task, outcome in outcomes:
        if outcome is None:
            continue
        kind = task_kind(task)
        tried[kind] += 1
        accepted[kind] += outcome == Outcome.ACCEPTED
    kinds = [k for k, _ in tried.most_common(most)]
    return [
        Bar(k, accepted[k] / tried[k], f"{accepted[k] / tried[k]:.0%} of {tried[k]}") for k in kinds
    ]


def stage_bars(stages: list[tuple[str, float, int]]) -> list[Bar]:
    seconds: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for name, total, count in stages:
        stage = name.split(":")[0]  # review:tests and review:style are one stage
        seconds[stage] += total
        counts[stage] += count
    return [
        Bar(s, total, f"{total:.1f}s in {counts[s]} (mean {total / counts[s]:.2f}s)")
        for s, total in seconds.most_common()
    ]


def _open(title: str, height: int = HEIGHT) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" class="plot">'
        f"<title>{escape(title)}</title>"
    )


def _empty(title: str) -> Markup:
    return Markup(
        _open(title, 60) + '<text x="10" y="30" class="axis">nothing recorded yet</text></svg>'
    )


def _number(value: float, unit: str) -> str:
    return f"${value:.4f}" if unit == "$" else f"{value:,.0f} {unit}"


def _measured(value: float, unit: str) -> str:
    text = f"{value:.0f}" if value == int(value) and abs(value) < 1e15 else f"{value:.4g}"
    return f"{text} {unit}".strip()


def _clock(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))

"""Small server-rendered SVG charts for the dashboard: no script, no library, no CDN,
so the admin works offline and a chart is in the page as soon as the HTML is.

Pure functions of their numbers; every text they write is escaped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 720, 180
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 14, 26
COLOURS = {
    "ok": "#2e7d32",
    "retry": "#b26b00",
    "dead": "#c62828",
    "p50": "#3465a4",
    "p95": "#8e44ad",
}


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]  # None: no data at that point (a gap)
    colour: str


def nice_max(value: float) -> float:
    """The axis' top: 1, 2 or 5 times a power of ten, at least `value` (1 when empty)."""
    if value <= 0:
        return 1.0
    power = 10 ** len(str(int(value))) / 10 if value >= 1 else 1.0
    while power > value:
        power /= 10
    for step in (1, 2, 5, 10):
        if step * power >= value:
            return float(step * power)
    return float(10 * power)


def format_value(value: float, unit: str = "") -> str:
    if unit == "s":
        if value >= 60:
            return f"{value / 60:.3g} min"
        if value < 1:
            return f"{value * 1000:.3g} ms"
        return f"{value:.3g} s"
    return f"{value:.3g}"


def _frame(title: str, top: float, unit: str, labels: Sequence[str]) -> list[str]:
    plot_h = HEIGHT - TOP - BOTTOM
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="100%" role="img" aria-label="{escape(title)}" class="bp-chart">',
        f"<title>{escape(title)}</title>",
        f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" height="{plot_h}" '
        'fill="none" stroke="#ccc"/>',
    ]
    for fraction in (0, 0.5, 1):
        y = TOP + plot_h * (1 - fraction)
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{LEFT - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end" '
            f'fill="#666">{escape(format_value(top * fraction, unit))}</text>'
        )
    if labels:
        step = max(1, len(labels) // 6)
        width = (WIDTH - LEFT - RIGHT) / len(labels)
        for i in range(0, len(labels), step):
            x = LEFT + width * (i + 0.5)
            parts.append(
                f'<text x="{x:.1f}" y="{HEIGHT - 8}" font-size="10" text-anchor="middle" '
                f'fill="#666">{escape(labels[i])}</text>'
            )
    return parts


def _legend(series: Sequence[Series]) -> list[str]:
    parts, x = [], LEFT + 6
    for s in series:
        parts.append(
            f'<rect x="{x}" y="{TOP + 4}" width="10" height="10" fill="{s.colour}"/>'
            f'<text x="{x + 14}" y="{TOP + 13}" font-size="11" fill="#333">{escape(s.name)}</text>'
        )
        x += 24 + 7 * len(s.name)
    return parts


def bar_chart(
    *, title: str, labels: Sequence[str], series: Sequence[Series], unit: str = ""
) -> SafeString:
    """Stacked bars, one per label."""
    count = len(labels)
    sums = [sum((s.values[i] or 0) for s in series) for i in range(count)]
    top = nice_max(max(sums, default=0))
    parts = _frame(title, top, unit, labels)
    plot_h = HEIGHT - TOP - BOTTOM
    width = (WIDTH - LEFT - RIGHT) / max(count, 1)
    for i in range(count):
        base = 0.0
        for s in series:
            value = s.values[i] or 0
            if value <= 0:
                continue
            y0 = TOP + plot_h * (1 - base / top)
            y1 = TOP + plot_h * (1 - (base + value) / top)
            parts.append(
                f'<rect x="{LEFT + width * i + 1:.1f}" y="{y1:.1f}" '
                f'width="{max(width - 2, 1):.1f}" height="{y0 - y1:.1f}" fill="{s.colour}">'
                f"<title>{escape(labels[i])} {escape(s.name)}: "
                f"{escape(format_value(value, unit))}</title></rect>"
            )
            base += value
    if len(series) > 1:
        parts += _legend(series)
    parts.append("</svg>")
    return mark_safe("".join(parts))  # numbers, and escaped texts


def line_chart(
    *, title: str, labels: Sequence[str], series: Sequence[Series], unit: str = ""
) -> SafeString:
    """Lines with a dot per point; a None value breaks the line."""
    values = [v for s in series for v in s.values if v is not None]
    top = nice_max(max(values, default=0))
    parts = _frame(title, top, unit, labels)
    plot_h = HEIGHT - TOP - BOTTOM
    width = (WIDTH - LEFT - RIGHT) / max(len(labels), 1)
    for s in series:
        runs: list[list[str]] = [[]]
        for i, value in enumerate(s.values):
            if value is None:
                runs.append([])
                continue
            x, y = LEFT + width * (i + 0.5), TOP + plot_h * (1 - min(value, top) / top)
            runs[-1].append(f"{x:.1f},{y:.1f}")
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{s.colour}">'
                f"<title>{escape(labels[i])} {escape(s.name)}: "
                f"{escape(format_value(value, unit))}</title></circle>"
            )
        for run in runs:
            if len(run) > 1:
                parts.append(
                    f'<polyline points="{" ".join(run)}" fill="none" stroke="{s.colour}" '
                    'stroke-width="1.5"/>'
                )
    parts += _legend(series)
    parts.append("</svg>")
    return mark_safe("".join(parts))  # numbers, and escaped texts

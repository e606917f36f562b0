"""Chart geometry for server-rendered inline SVG: line charts, bar charts and sparklines.

Charts are drawn on the server rather than by a JavaScript library: they appear in the first
paint on a phone, need no script (so the pages' Content-Security-Policy stays strict and
nothing is downloaded), print and screenshot as they look, and every chart carries its
numbers as a table for screen readers. The functions here are pure: numbers in, coordinates
out; the templates turn them into ``<svg>`` elements (attributes only, no inline styles).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# A chart's SVG is scaled to its column, and its labels with it: drawn 360 units wide, a
# phone's 340 px column keeps the 12-unit labels (sprig.css) above 11 px, where a wider
# drawing would shrink them below legibility.
WIDTH = 360
HEIGHT = 210
LEFT, RIGHT, TOP, BOTTOM = 40, 20, 12, 28


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class Line:
    name: str
    css_class: str
    points: str  # "x,y x,y …" for <polyline>
    dots: list[tuple[float, float, str]] = field(default_factory=list)  # x, y, label


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    value: float


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    lines: list[Line] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    baseline: float = HEIGHT - BOTTOM
    left: float = LEFT
    right: float = WIDTH - RIGHT


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^k at or above ``value`` (an axis top people can read)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return float(step * power)
    return float(10 * power)


def axis_top(highest: float) -> float:
    """An axis top whose four gridline steps are each a readable number (0, 2, 4, 6, 8)."""
    return 4 * nice_ceiling(highest / 4) if highest > 0 else 4.0


def _format(value: float, percent: bool) -> str:
    if percent:
        return f"{value * 100:.0f}%"
    if value >= 1000:
        return f"{value / 1000:.1f}k".replace(".0k", "k")
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def _y_ticks(top: float, percent: bool) -> list[Tick]:
    span = HEIGHT - TOP - BOTTOM
    return [
        Tick(round(HEIGHT - BOTTOM - span * i / 4, 1), _format(top * i / 4, percent))
        for i in range(5)
    ]


def _x_ticks(labels: list[str], xs: list[float], most: int = 6) -> list[Tick]:
    if not labels:
        return []
    step = max(1, math.ceil(len(labels) / most))
    return [Tick(round(xs[i], 1), labels[i]) for i in range(0, len(labels), step)]


def line_chart(
    labels: list[str],
    series: list[tuple[str, str, list[float | None]]],
    *,
    percent: bool = False,
    top: float | None = None,
) -> Chart:
    """One polyline per (name, css class, values); ``None`` values are gaps (not zeros)."""
    count = max(len(labels), 1)
    inner = WIDTH - LEFT - RIGHT
    xs = [LEFT + (inner * i / (count - 1) if count > 1 else inner / 2) for i in range(count)]
    highest = max((v for _, _, values in series for v in values if v is not None), default=0)
    top = top if top is not None else axis_top(highest)
    span = HEIGHT - TOP - BOTTOM
    lines = []
    for name, css_class, values in series:
        coordinates = [
            (round(xs[i], 1), round(HEIGHT - BOTTOM - span * min(v, top) / top, 1), v)
            for i, v in enumerate(values)
            if v is not None
        ]
        lines.append(
            Line(
                name=name,
                css_class=css_class,
                points=" ".join(f"{x},{y}" for x, y, _ in coordinates),
                dots=[(x, y, _format(v, percent)) for x, y, v in coordinates]
                if len(coordinates) <= 12
                else [],
            )
        )
    return Chart(WIDTH, HEIGHT, _y_ticks(top, percent), _x_ticks(labels, xs), lines=lines)


def bar_chart(labels: list[str], values: list[float], *, most_ticks: int = 6) -> Chart:
    count = max(len(values), 1)
    inner = WIDTH - LEFT - RIGHT
    slot = inner / count
    width = max(1.0, slot * 0.75)
    top = axis_top(max(values, default=0))
    span = HEIGHT - TOP - BOTTOM
    bars = []
    centres = []
    for i, value in enumerate(values):
        height = span * value / top
        x = LEFT + slot * i + (slot - width) / 2
        centres.append(x + width / 2)
        bars.append(
            Bar(
                x=round(x, 1),
                y=round(HEIGHT - BOTTOM - height, 1),
                width=round(width, 1),
                height=round(height, 1),
                label=labels[i],
                value=value,
            )
        )
    return Chart(
        WIDTH,
        HEIGHT,
        _y_ticks(top, False),
        _x_ticks(labels, centres, most_ticks),
        bars=bars,
    )


def sparkline(values: list[float], width: int = 120, height: int = 28) -> str:
    """Points of a small polyline; flat at the bottom when everything is zero."""
    if not values:
        return ""
    top = max(values) or 1
    step = width / (len(values) - 1) if len(values) > 1 else 0
    return " ".join(
        f"{round(i * step, 1)},{round(height - 2 - (height - 4) * v / top, 1)}"
        for i, v in enumerate(values)
    )

"""Chart geometry: series of numbers per time slot in, a frozen SVG view model out.

Pure arithmetic: the template only writes the coordinates and paths into an inline `<svg>`
(no script, no inline style). A missing slot breaks a line rather than join across the gap,
a lone point is a dot, and every chart carries its own text summary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

WIDTH = 720
HEIGHT = 240
LEFT, RIGHT, TOP, BOTTOM = 108, 16, 14, 36
# Nice steps for a duration axis (seconds) and for a count axis (times a power of ten).
_DURATION_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600)
_COUNT_STEPS = (1, 2, 2.5, 5)
MAX_Y_TICKS = 5


@dataclass(frozen=True)
class AxisTick:
    position: float  # x or y in the viewBox
    label: str
    minor: bool = False  # left out where the chart is narrow (a phone), so labels never touch


@dataclass(frozen=True)
class Line:
    name: str
    css: str
    d: str  # the SVG path of its runs of two points or more; "" when there are none
    dots: tuple[tuple[float, float], ...] = ()  # points with no neighbour, drawn as dots


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    width: float
    height: float
    css: str


@dataclass(frozen=True)
class Rule:
    """A horizontal reference line, e.g. the lateness cap."""

    y: float
    label: str


@dataclass(frozen=True)
class LegendItem:
    label: str
    css: str
    shape: str  # "line", "box" or "mark"


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    summary: str
    x_ticks: tuple[AxisTick, ...]
    y_ticks: tuple[AxisTick, ...]
    lines: tuple[Line, ...]
    rects: tuple[Rect, ...]
    markers: tuple[float, ...]  # x of each slot with a failed invocation
    gaps: tuple[Rect, ...]  # slots in which the cron did not run every minute
    rule: Rule | None
    legend: tuple[LegendItem, ...]
    width: int = WIDTH
    height: int = HEIGHT
    plot_left: float = LEFT
    plot_top: float = TOP
    plot_right: float = WIDTH - RIGHT
    plot_bottom: float = HEIGHT - BOTTOM


@dataclass(frozen=True)
class Series:
    name: str
    css: str
    values: tuple[float | None, ...]  # one per slot; None: nothing recorded


@dataclass(frozen=True)
class Frame:
    """What every chart of a window shares: its slots, their labels, failures and gaps."""

    slots: int
    x_labels: tuple[tuple[int, str], ...]  # (slot index where a label goes, label); every
    # second one is minor
    failed: tuple[int, ...]  # slot indexes with a failed invocation
    gaps: tuple[int, ...]  # slot indexes in which minutes had no tick

    @property
    def slot_width(self) -> float:
        return (WIDTH - LEFT - RIGHT) / self.slots

    def x(self, index: float) -> float:
        return round(LEFT + index * self.slot_width, 2)

    def centre(self, index: int) -> float:
        return self.x(index + 0.5)


@dataclass(frozen=True)
class Scale:
    top: float  # the value at the top of the plot
    step: float
    duration: bool

    def y(self, value: float) -> float:
        span = HEIGHT - TOP - BOTTOM
        return round(HEIGHT - BOTTOM - span * min(value, self.top) / self.top, 2)

    def label(self, value: float) -> str:
        return axis_duration(value, self.top) if self.duration else count_label(value)

    def ticks(self) -> tuple[AxisTick, ...]:
        count = round(self.top / self.step)
        return tuple(
            AxisTick(self.y(i * self.step), self.label(i * self.step)) for i in range(count + 1)
        )


def duration_label(seconds: float) -> str:
    """`0 s`, `45 s`, `2 min`, `1 min 15 s`, `1 h 15 min`, to the second."""
    whole = round(seconds)
    if whole < 60:
        return f"{seconds:g} s" if seconds < 10 else f"{whole} s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h"] if hours else []
    if minutes:
        parts.append(f"{minutes} min")
    if secs:
        parts.append(f"{secs} s")
    return " ".join(parts)


def axis_duration(seconds: float, top: float) -> str:
    """An axis label, short and in one unit for the whole axis (the one its top reads best
    in): `90 s`, `15 min`, `2.5 h`."""
    if top <= 120:
        return f"{seconds:g} s"
    if top < 7200:
        return f"{seconds / 60:g} min"
    return f"{seconds / 3600:g} h"


def count_label(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,g}"


def duration_scale(largest_seconds: float) -> Scale:
    """A duration axis from 0 to at least `largest_seconds`, in at most MAX_Y_TICKS steps."""
    for step in _DURATION_STEPS:
        if largest_seconds <= step * MAX_Y_TICKS:
            return Scale(max(step, step * math.ceil(largest_seconds / step)), step, True)
    step = _DURATION_STEPS[-1] * math.ceil(largest_seconds / (_DURATION_STEPS[-1] * MAX_Y_TICKS))
    return Scale(step * math.ceil(largest_seconds / step), step, True)


def count_scale(largest: float) -> Scale:
    """A count axis from 0 to at least `largest` (and at least 1), whole numbers only."""
    largest = max(largest, 1)
    power = 10 ** max(
        0, math.floor(math.log10(largest / MAX_Y_TICKS)) if largest >= MAX_Y_TICKS else 0
    )
    while True:
        for factor in _COUNT_STEPS:
            step = float(factor * power)
            if step >= 1 and step.is_integer() and largest <= step * MAX_Y_TICKS:
                return Scale(step * math.ceil(largest / step), step, False)
        power *= 10


def line_path(
    frame: Frame, scale: Scale, values: Sequence[float | None]
) -> tuple[str, tuple[tuple[float, float], ...]]:
    """Points at slot centres: the path of every run of two or more, and the lone points (a
    missing value on both sides), which a line cannot show."""
    parts: list[str] = []
    dots: list[tuple[float, float]] = []
    run: list[tuple[float, float]] = []

    def close() -> None:
        if len(run) == 1:
            dots.append(run[0])
        elif run:
            parts.append("M" + "L".join(f"{x} {y}" for x, y in run))
        run.clear()

    for index, value in enumerate(values):
        if value is None:
            close()
        else:
            run.append((frame.centre(index), scale.y(value)))
    close()
    return "".join(parts), tuple(dots)


def _chart(
    chart_id: str,
    title: str,
    summary: str,
    frame: Frame,
    scale: Scale,
    lines: tuple[Line, ...],
    rects: tuple[Rect, ...],
    rule: Rule | None,
    legend: list[LegendItem],
) -> Chart:
    """The chart, with what every chart of `frame` shares: its x axis, failures and gaps."""
    x_ticks = tuple(
        AxisTick(frame.x(index), label, minor=bool(n % 2))
        for n, (index, label) in enumerate(frame.x_labels)
    )
    markers = tuple(frame.centre(index) for index in frame.failed)
    gaps = tuple(
        Rect(frame.x(index), TOP, round(frame.slot_width, 2), HEIGHT - TOP - BOTTOM, "gap")
        for index in frame.gaps
    )
    if frame.failed:
        legend.append(LegendItem("failed tick", "failed", "mark"))
    if frame.gaps:
        legend.append(LegendItem("minutes without a tick", "gap", "box"))
    return Chart(
        chart_id, title, summary, x_ticks, scale.ticks(), lines, rects, markers, gaps, rule,
        tuple(legend),
    )  # fmt: skip


def line_chart(
    chart_id: str,
    title: str,
    summary: str,
    frame: Frame,
    series: Sequence[Series],
    *,
    duration: bool,
    rule: tuple[float, str] | None = None,
) -> Chart:
    """Lines over the slots; `rule` is a reference value (drawn only when it fits the data's
    range, or the data is no more than ten times smaller than it)."""
    largest = max((v for s in series for v in s.values if v is not None), default=0.0)
    shown_rule = rule if rule is not None and largest * 10 >= rule[0] else None
    if shown_rule is not None:
        largest = max(largest, shown_rule[0])
    scale = duration_scale(largest) if duration else count_scale(largest)
    lines = tuple(Line(s.name, s.css, *line_path(frame, scale, s.values)) for s in series)
    legend = [LegendItem(s.name, s.css, "line") for s in series]
    drawn_rule = None
    if shown_rule is not None:
        drawn_rule = Rule(scale.y(shown_rule[0]), shown_rule[1])
        legend.append(LegendItem(shown_rule[1], "rule", "line"))
    return _chart(chart_id, title, summary, frame, scale, lines, (), drawn_rule, legend)


def stacked_bars(
    chart_id: str, title: str, summary: str, frame: Frame, series: Sequence[Series]
) -> Chart:
    """One bar per slot, its parts stacked in the order of `series` from the bottom."""
    totals = [sum(s.values[i] or 0 for s in series) for i in range(frame.slots)]
    scale = count_scale(max(totals, default=0))
    width = max(1.0, round(frame.slot_width * 0.8, 2))
    rects: list[Rect] = []
    for index in range(frame.slots):
        base = 0.0
        for s in series:
            value = s.values[index] or 0
            if value <= 0:
                continue
            top = scale.y(base + value)
            rects.append(
                Rect(
                    round(frame.x(index) + frame.slot_width * 0.1, 2),
                    top,
                    width,
                    round(scale.y(base) - top, 2),
                    s.css,
                )
            )
            base += value
    legend = [LegendItem(s.name, s.css, "box") for s in series]
    return _chart(chart_id, title, summary, frame, scale, (), tuple(rects), None, legend)

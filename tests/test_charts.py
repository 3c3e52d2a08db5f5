"""The operator page's chart geometry (pages/charts.py), without a browser: data in, the
coordinates of an SVG out."""

from __future__ import annotations

import itertools
import re

import pytest

from scheduling.pages.charts import (
    BOTTOM,
    HEIGHT,
    LEFT,
    RIGHT,
    TOP,
    WIDTH,
    Frame,
    Rect,
    Series,
    count_scale,
    duration_label,
    duration_scale,
    line_chart,
    line_path,
    stacked_bars,
)

PLOT_BOTTOM = HEIGHT - BOTTOM


def frame(slots: int = 6, failed: tuple[int, ...] = (), gaps: tuple[int, ...] = ()) -> Frame:
    return Frame(slots, ((0, "10:00"), (3, "10:30")), failed, gaps)


@pytest.mark.parametrize(
    ("largest", "top", "labels"),
    [
        (0, 1, ["0 s", "1 s"]),
        (3, 3, ["0 s", "1 s", "2 s", "3 s"]),
        (61, 75, ["0 s", "15 s", "30 s", "45 s", "60 s", "75 s"]),
        (299, 300, ["0 min", "1 min", "2 min", "3 min", "4 min", "5 min"]),
        (900, 900, ["0 min", "5 min", "10 min", "15 min"]),
        (4000, 4500, ["0 min", "15 min", "30 min", "45 min", "60 min", "75 min"]),
        (20000, 21600, ["0 h", "2 h", "4 h", "6 h"]),
    ],
)
def test_a_duration_axis_has_at_most_five_steps_of_a_clock_friendly_size_in_short_labels(
    largest: float, top: float, labels: list[str]
) -> None:
    scale = duration_scale(largest)
    assert scale.top == top >= largest
    assert [tick.label for tick in scale.ticks()] == labels


@pytest.mark.parametrize(
    ("largest", "top", "step"),
    [(0, 1, 1), (5, 5, 1), (6, 6, 2), (12, 15, 5), (120, 125, 25), (1234, 1250, 250)],
)
def test_a_count_axis_steps_in_whole_numbers(largest: float, top: float, step: float) -> None:
    scale = count_scale(largest)
    assert (scale.top, scale.step) == (top, step)
    ticks = scale.ticks()
    assert ticks[0].position == PLOT_BOTTOM
    assert ticks[-1].position == TOP
    assert all(float(tick.label.replace(",", "")).is_integer() for tick in ticks)


def test_durations_read_as_a_person_says_them() -> None:
    assert [duration_label(s) for s in (0, 0.25, 2.5, 45, 60, 75, 3600, 5400, 90061)] == [
        "0 s",
        "0.25 s",
        "2.5 s",
        "45 s",
        "1 min",
        "1 min 15 s",
        "1 h",
        "1 h 30 min",
        "25 h 1 min 1 s",
    ]


def test_a_line_breaks_at_a_missing_slot_and_a_lone_point_is_a_dot() -> None:
    f = frame()
    scale = count_scale(10)
    path, dots = line_path(f, scale, [2, 4, None, 6, None, 0])
    runs = path.split("M")[1:]
    assert len(runs) == 1  # slots 0-1 joined; 3 and 5 stand alone
    points = [tuple(map(float, p.split())) for p in runs[0].split("L")]
    assert points == [(f.centre(0), scale.y(2)), (f.centre(1), scale.y(4))]
    assert dots == ((f.centre(3), scale.y(6)), (f.centre(5), scale.y(0)))
    assert scale.y(0) == PLOT_BOTTOM
    assert scale.y(10) == TOP
    assert line_path(f, scale, [None] * 6) == ("", ())


def test_points_sit_at_slot_centres_inside_the_plot() -> None:
    f = frame(slots=144)
    assert f.centre(0) == round(LEFT + (WIDTH - LEFT - RIGHT) / 288, 2)
    assert f.centre(143) < WIDTH - RIGHT
    assert f.x(144) == WIDTH - RIGHT


def test_a_line_chart_shows_the_cap_only_when_the_data_comes_near_it() -> None:
    f = frame(failed=(2,), gaps=(4,))
    series = [Series("worst", "max", (1.0, 80.0, None, 30.0, None, 2.0))]
    near = line_chart("c", "Lateness", "text", f, series, duration=True, rule=(300, "cap"))
    assert near.rule is not None
    assert near.rule.y == TOP  # the cap is the axis's top: 300 s
    assert [t.label for t in near.y_ticks][-1] == "5 min"
    assert [item.label for item in near.legend] == [
        "worst",
        "cap",
        "failed tick",
        "minutes without a tick",
    ]
    assert near.markers == (f.centre(2),)
    assert [(g.x, g.width) for g in near.gaps] == [(f.x(4), round(f.slot_width, 2))]
    far = line_chart(
        "c",
        "Lateness",
        "text",
        f,
        [Series("w", "max", (1.0,) * 6)],
        duration=True,
        rule=(900, "cap"),
    )
    assert far.rule is None  # 1 s against a 15 min cap: the cap would flatten the data
    assert far.y_ticks[-1].label == "1 s"


def test_stacked_bars_add_up_to_the_slot_total_from_the_axis() -> None:
    f = frame()
    series = [
        Series("completed", "completed", (3.0, 0.0, None, 5.0, 1.0, 0.0)),
        Series("retrying", "retrying", (1.0, 2.0, None, 0.0, 1.0, 0.0)),
        Series("refused", "refused", (1.0, 0.0, None, 0.0, 0.0, 0.0)),
    ]
    chart = stacked_bars("s", "Sends", "text", f, series)
    scale = count_scale(5)
    by_slot: dict[float, list[Rect]] = {}
    for rect in chart.rects:
        by_slot.setdefault(rect.x, []).append(rect)
    assert len(by_slot) == 4  # slots with nothing sent draw no bar
    first = by_slot[min(by_slot)]
    assert [r.css for r in first] == ["completed", "retrying", "refused"]
    assert first[0].y + first[0].height == PLOT_BOTTOM  # stacked from the axis up
    assert all(a.y == pytest.approx(b.y + b.height, abs=0.02) for a, b in itertools.pairwise(first))
    assert first[-1].y == scale.y(5) == TOP  # 3 + 1 + 1: the tallest bar fills the plot
    for rect in chart.rects:
        assert rect.x >= LEFT
        assert rect.x + rect.width <= WIDTH - RIGHT
        assert rect.y >= TOP
        assert rect.y + rect.height <= PLOT_BOTTOM + 0.01


def test_every_coordinate_is_a_plain_number_for_the_svg() -> None:
    f = frame(slots=168, failed=(5,), gaps=(7, 8))
    values = tuple(float(i % 13) if i % 17 else None for i in range(168))
    chart = line_chart("w", "T", "s", f, [Series("a", "p50", values)], duration=False)
    numbers = re.findall(r"[-\d.]+", chart.lines[0].d)
    assert numbers
    assert all(re.fullmatch(r"\d+(\.\d+)?", n) for n in numbers)
    assert all(LEFT <= x <= WIDTH - RIGHT for x, _ in chart.lines[0].dots)

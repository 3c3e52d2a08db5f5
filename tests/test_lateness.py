"""Send lateness on known inputs: nearest-rank percentiles, the histogram's buckets and their
names, and what a tick's report keeps of its sends (issue 32's first gap: the history test
computed its expected p50/p99 with `percentile` itself)."""

from __future__ import annotations

import pytest

from scheduling.domain.times import (
    BOUNDS_MS,
    BUCKET_COLUMNS,
    bound_name,
    cumulative_buckets,
    percentile,
)
from scheduling.runner.engine import TickReport

TEN = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]


@pytest.mark.parametrize(
    ("ordered", "fraction", "expected"),
    [
        ([], 0.5, 0),
        ([], 0.99, 0),
        ([7], 0.0, 7),
        ([7], 0.5, 7),
        ([7], 0.99, 7),
        ([7], 1.0, 7),
        ([3, 9], 0.5, 3),  # an even count: the lower middle value
        ([3, 9], 0.51, 9),
        ([1, 2, 3, 4], 0.25, 1),
        ([1, 2, 3, 4], 0.26, 2),
        ([1, 2, 3, 4], 0.5, 2),
        ([1, 2, 3, 4], 0.75, 3),
        ([1, 2, 3, 4], 0.99, 4),
        (TEN, 0.0, 10),  # never below the first value
        (TEN, 0.05, 10),
        (TEN, 0.1, 10),
        (TEN, 0.11, 20),
        (TEN, 0.5, 50),
        (TEN, 0.9, 90),
        (TEN, 0.91, 100),
        (TEN, 0.99, 100),
        (TEN, 1.0, 100),
    ],
)
def test_nearest_rank_on_known_lists(ordered: list[int], fraction: float, expected: int) -> None:
    assert percentile(ordered, fraction) == expected


@pytest.mark.parametrize(
    ("fraction", "expected"),
    [
        (0.01, 1),
        (0.07, 7),  # 0.07 · 100 is 7.000000000000001 in floating point: still rank 7
        (0.29, 29),  # and 0.29 · 100 is 28.999999999999996: rank 29
        (0.5, 50),
        (0.57, 57),
        (0.99, 99),
        (0.991, 100),
        (1.0, 100),
    ],
)
def test_whole_percent_ranks_of_a_hundred_values_are_exact(fraction: float, expected: int) -> None:
    assert percentile(range(1, 101), fraction) == expected


def test_ranks_stay_exact_over_millions_of_values() -> None:
    """A range stands in for a list: the rank is computed in integers, so a fraction of a
    count in the millions lands on the value itself, not one beside it."""
    values = range(1, 4_000_001)
    assert percentile(values, 0.5) == 2_000_000
    assert percentile(values, 0.99) == 3_960_000
    assert percentile(values, 0.000001) == 4
    assert percentile(values, 0.0000001) == 1


@pytest.mark.parametrize(
    ("bound", "name"),
    [
        (250, "250ms"),
        (999, "999ms"),
        (1_000, "1s"),
        (1_001, "1001ms"),
        (2_500, "2500ms"),
        (60_000, "60s"),
        (900_000, "900s"),
    ],
)
def test_bound_names(bound: int, name: str) -> None:
    assert bound_name(bound) == name


def test_the_bucket_columns_are_named_after_the_bounds() -> None:
    assert BUCKET_COLUMNS == (
        "lateness_le_250ms",
        "lateness_le_500ms",
        "lateness_le_1s",
        "lateness_le_2500ms",
        "lateness_le_5s",
        "lateness_le_10s",
        "lateness_le_30s",
        "lateness_le_60s",
        "lateness_le_120s",
        "lateness_le_300s",
        "lateness_le_600s",
        "lateness_le_900s",
    )


def test_buckets_count_the_values_at_most_each_bound() -> None:
    late = [0, 250, 251, 500, 999, 1_000, 1_001, 59_999, 900_000, 900_001, 5_000_000]
    assert dict(zip(BOUNDS_MS, cumulative_buckets(late), strict=True)) == {
        250: 2,
        500: 4,
        1_000: 6,
        2_500: 7,
        5_000: 7,
        10_000: 7,
        30_000: 7,
        60_000: 8,
        120_000: 8,
        300_000: 8,
        600_000: 8,
        900_000: 9,
    }
    assert cumulative_buckets([]) == (0,) * len(BOUNDS_MS)


def test_a_ticks_report_keeps_p50_p99_and_max_of_its_sends() -> None:
    report = TickReport()
    for late in (400, -5, 100, 300, 200):  # sent early counts as on time
        report.sent(late)
    assert report.sends == 5
    assert (report.lateness_p50_ms, report.lateness_p99_ms, report.lateness_max_ms) == (
        200,
        400,
        400,
    )
    assert report.lateness_sum_ms() == 1_000
    report.withdrawn(400)  # refused by the platform before it left
    assert report.sends == 4
    assert (report.lateness_p50_ms, report.lateness_p99_ms, report.lateness_max_ms) == (
        100,
        300,
        300,
    )
    for late in (300, 200, 100, 0):
        report.withdrawn(late)
    assert (report.sends, report.lateness_p50_ms, report.lateness_max_ms) == (0, 0, 0)

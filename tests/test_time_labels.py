"""The arithmetic the pages do for editors: suggestions, deadlines, the real next try."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scheduling.http.pages import time_labels


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("now", "zone", "suggested"),
    [
        ("2026-07-01T10:00:00", "Europe/Paris", "2026-07-01T13:00"),  # 12:00 CEST + 30 min → 13:00
        ("2026-07-01T10:31:00", "Europe/Paris", "2026-07-01T14:00"),
        ("2026-07-01T10:00:00", "Asia/Kolkata", "2026-07-01T16:00"),  # a whole hour on that clock
        # 00:10 UTC on the fall-back day in Berlin: 03:00 is the first hour that happens once.
        ("2026-10-25T00:10:00", "Europe/Berlin", "2026-10-25T03:00"),
        # 00:40 UTC on the spring-forward day: 02:00 does not exist, 03:00 does.
        ("2026-03-29T00:10:00", "Europe/Berlin", "2026-03-29T03:00"),
        ("2026-07-01T10:00:00", "Mars/Base", ""),
    ],
)
def test_the_suggested_time_exists_happens_once_and_is_ahead(
    now: str, zone: str, suggested: str
) -> None:
    assert time_labels.suggested_local_time(zone, ms(now)) == suggested


def test_the_deadline_names_its_date_only_when_the_day_changes() -> None:
    assert time_labels.deadline(ms("2026-07-01T10:00:00"), 900_000) == "10:15 UTC"
    assert time_labels.deadline(ms("2026-07-01T23:50:00"), 900_000) == "2026-07-02 00:05 UTC"


def test_the_next_try_is_a_tick_and_never_in_the_past() -> None:
    now = ms("2026-07-01T10:00:30")
    assert time_labels.planned_try(ms("2026-07-01T10:00:40"), now) == ms("2026-07-01T10:01:00")
    assert time_labels.planned_try(ms("2026-07-01T10:02:00"), now) == ms("2026-07-01T10:02:00")
    assert time_labels.planned_try(ms("2026-07-01T09:58:10"), now) == ms("2026-07-01T10:01:00")
    assert time_labels.planned_try(ms("2026-07-01T10:00:00"), ms("2026-07-01T10:00:00")) == ms(
        "2026-07-01T10:01:00"
    )


def test_both_clocks_repeat_the_utc_date_only_when_it_differs() -> None:
    assert time_labels.both(ms("2026-07-01T10:00:20"), "Europe/Paris", seconds=True) == (
        "2026-07-01 12:00:20 CEST (10:00:20 UTC)"
    )
    assert time_labels.both(ms("2026-07-01T23:30:00"), "Asia/Tokyo") == (
        "2026-07-02 08:30 JST (2026-07-01 23:30 UTC)"
    )
    assert time_labels.both(ms("2026-07-01T10:00:00"), "UTC") == "2026-07-01 10:00 UTC"
    assert time_labels.day_label(ms("2026-07-01T23:30:00"), "Asia/Tokyo") == "Thursday 2 July 2026"

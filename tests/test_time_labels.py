"""The arithmetic the pages do for editors (suggestions, deadlines, lateness, the real next
try), and the one way an instant is written (`instant_text`)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scheduling.domain.times import (
    YEAR_MS,
    duration_text,
    instant_text,
    wall_text,
    years_ahead,
    years_text,
)
from scheduling.http.html.render import (
    day_label,
    deadline_ms,
    lateness_ms,
    planned_try,
    suggested_local_time,
)


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
    assert suggested_local_time(zone, ms(now)) == suggested


def test_the_deadline_is_the_due_time_plus_the_lateness_cap() -> None:
    assert deadline_ms(ms("2026-07-01T10:00:00"), 900_000) == ms("2026-07-01T10:15:00")


def test_a_send_is_late_when_it_left_more_than_a_minute_after_its_time() -> None:
    due = ms("2026-07-01T10:00:00")
    assert lateness_ms(due, due + 59_000) is None
    assert lateness_ms(due, due + 60_000) is None
    assert lateness_ms(due, due + 130_000) == 130_000
    assert duration_text(130_000) == "2 min"
    assert duration_text(3_900_000) == "1 h 5 min"
    assert duration_text(7_200_000) == "2 h"


def test_the_next_try_is_a_tick_and_never_in_the_past() -> None:
    now = ms("2026-07-01T10:00:30")
    assert planned_try(ms("2026-07-01T10:00:40"), now) == ms("2026-07-01T10:01:00")
    assert planned_try(ms("2026-07-01T10:02:00"), now) == ms("2026-07-01T10:02:00")
    assert planned_try(ms("2026-07-01T09:58:10"), now) == ms("2026-07-01T10:01:00")
    assert planned_try(ms("2026-07-01T10:00:00"), ms("2026-07-01T10:00:00")) == ms(
        "2026-07-01T10:01:00"
    )


def test_one_way_of_writing_an_instant_repeats_the_utc_date_only_when_it_differs() -> None:
    assert instant_text(ms("2026-07-01T10:00:20"), "Europe/Paris", seconds=True) == (
        "Wed 1 Jul 2026, 12:00:20 CEST (Europe/Paris; 10:00:20 UTC)"
    )
    # 00:40 CET on 1 December is still 30 November in UTC: both dates are said.
    assert instant_text(ms("2026-11-30T23:40:00"), "Europe/Paris") == (
        "Tue 1 Dec 2026, 00:40 CET (Europe/Paris; Mon 30 Nov 2026, 23:40 UTC)"
    )
    assert instant_text(ms("2026-07-01T23:30:00"), "Asia/Tokyo", utc=False) == (
        "Thu 2 Jul 2026, 08:30 JST (Asia/Tokyo)"
    )
    assert instant_text(ms("2026-07-01T10:00:00"), "UTC") == "Wed 1 Jul 2026, 10:00 UTC"
    assert instant_text(ms("2026-07-01T10:00:00"), "Mars/Base") == "Wed 1 Jul 2026, 10:00 UTC"
    assert wall_text("2026-03-29T02:30") == "Sun 29 Mar 2026, 02:30"
    assert day_label(ms("2026-07-01T23:30:00"), "Asia/Tokyo") == "Thursday 2 July 2026"


def test_years_ahead_are_whole_years() -> None:
    now = ms("2026-07-01T10:00:00")
    assert years_ahead(ms("2027-06-30T10:00:00") - now) == 0
    assert years_ahead(ms("2027-07-02T10:00:00") - now) == 1
    assert years_ahead(ms("2031-07-01T12:00:00") - now) == 5
    assert years_ahead(ms("2031-02-01T12:00:00") - now) == 5  # about 4.6 years
    assert years_ahead(ms("2030-12-01T12:00:00") - now) == 4
    assert (years_ahead(YEAR_MS - 1), years_ahead(YEAR_MS)) == (0, 1)
    assert years_text(years_ahead(5 * YEAR_MS)) == "5 years"  # a whole number, never 5.0

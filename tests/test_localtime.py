"""`resolve_local_time` and its helpers on known inputs, every refusal word for word: the edges
issue 32's mutation run found untried (an impossible date, a bogus or empty fold, the stored
fold, exactly now, the years' bounds, gaps at other minutes than :30, of half an hour, into
and out of UTC+0, and across midnight), and instants written in UTC whatever the host's zone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scheduling.domain.times import (
    ResolvedTime,
    Retry,
    TimeRefusal,
    canonical_zone,
    duration_text,
    duration_words,
    first_minute_after_gap,
    get_zone,
    next_minute_wall,
    occurrence_labels,
    occurrences,
    parse_wall,
    quoted,
    resolve_local_time,
    rfc3339,
    years_text,
    zone_suggestions,
    zoned_clock_text,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)  # 1_767_225_600_000 ms
BERLIN = get_zone("Europe/Berlin")


def resolve(
    local: object, zone: object = "Europe/Berlin", fold: object = None
) -> ResolvedTime | TimeRefusal:
    """As a form posts them: any value may come in any field."""
    return resolve_local_time(local, zone, fold, now=NOW)  # type: ignore[arg-type]


def field_of(result: ResolvedTime | TimeRefusal) -> str:
    assert isinstance(result, TimeRefusal)
    return result.field


def refusal(code: str, message: str, *retries: Retry) -> TimeRefusal:
    return TimeRefusal(code, message, retries)


def test_a_time_resolves_to_its_instant_in_the_zone() -> None:
    at_11_utc = ResolvedTime(1_782_903_600_000, "2026-07-01T13:00", "Europe/Berlin", None)
    assert resolve("2026-07-01T13:00") == resolve("2026-07-01T13:00", "europe/berlin") == at_11_utc


NOT_A_TIME = "Choose a date and a time: the day, then the hour and minute."
NOT_ON_THE_CALENDAR = "That date or time does not exist on the calendar."
YEARS = "Enter a year from 1970 to 2199."


@pytest.mark.parametrize(
    ("local", "message"),
    [
        (None, NOT_A_TIME),
        (202607011300, NOT_A_TIME),
        ("", NOT_A_TIME),
        ("2026-07-01 13:00", NOT_A_TIME),
        ("2026-07-01T13:00:00", NOT_A_TIME),
        ("2026-02-30T10:00", NOT_ON_THE_CALENDAR),
        ("2027-02-29T10:00", NOT_ON_THE_CALENDAR),
        ("2026-13-01T10:00", NOT_ON_THE_CALENDAR),
        ("2026-02-28T24:00", NOT_ON_THE_CALENDAR),
        ("2026-02-28T10:60", NOT_ON_THE_CALENDAR),
        ("1969-12-31T23:59", YEARS),
        ("2200-01-01T00:00", YEARS),
        ("0000-01-01T00:00", YEARS),
    ],
)
def test_what_is_not_a_wall_time_is_refused_with_why(local: object, message: str) -> None:
    refused = resolve(local)
    assert refused == refusal("invalid_local_time", message)
    assert field_of(refused) == "local_time"


def assert_passed(refused: object, said: str, soonest: str) -> None:
    """A past time is refused with the next whole minute in its zone offered (issue 38)."""
    assert isinstance(refused, TimeRefusal)
    assert refused.code == "past_time"
    assert refused.message.startswith(f"{said} The next minute you can choose is ")
    assert [(r.field, r.value) for r in refused.retries] == [("local_time", soonest)]


def test_the_years_bounds_are_inclusive() -> None:
    assert resolve("2199-12-31T23:59", "UTC") == ResolvedTime(
        7_258_118_340_000, "2199-12-31T23:59", "UTC", None
    )
    # 1970 is a year a schedule may name; its instants are all past.
    assert_passed(
        resolve("1970-01-01T00:00", "UTC"),
        "Thu 1 Jan 1970, 00:00 UTC has already passed.",
        "2026-01-01T00:01",
    )


def test_exactly_now_has_passed_and_a_minute_later_has_not() -> None:
    assert_passed(
        resolve("2026-01-01T00:00", "UTC"),
        "Thu 1 Jan 2026, 00:00 UTC has already passed.",
        "2026-01-01T00:01",
    )
    assert resolve("2026-01-01T00:01", "UTC") == ResolvedTime(
        1_767_225_660_000, "2026-01-01T00:01", "UTC", None
    )
    # Now as another zone writes it: 10:30 in Adelaide (UTC+10:30 in January) is this instant.
    assert_passed(
        resolve("2026-01-01T10:30", "Australia/Adelaide"),
        "Thu 1 Jan 2026, 10:30 ACDT (Australia/Adelaide; 00:00 UTC) has already passed.",
        "2026-01-01T10:31",
    )
    assert resolve("2026-01-01T10:31", "Australia/Adelaide") == ResolvedTime(
        1_767_225_660_000, "2026-01-01T10:31", "Australia/Adelaide", None
    )


def test_now_may_be_given_in_any_zone() -> None:
    now = datetime(2026, 1, 1, 1, 0, tzinfo=BERLIN)  # the same instant as NOW
    assert_passed(
        resolve_local_time("2026-01-01T01:00", "Europe/Berlin", None, now=now),
        "Thu 1 Jan 2026, 01:00 CET (Europe/Berlin; 00:00 UTC) has already passed.",
        "2026-01-01T01:01",
    )
    assert resolve_local_time("2026-01-01T01:01", "Europe/Berlin", None, now=now) == (
        ResolvedTime(1_767_225_660_000, "2026-01-01T01:01", "Europe/Berlin", None)
    )


TWICE = (
    "Sun 25 Oct 2026, 02:30 happens twice in Europe/Berlin: "
    "Sun 25 Oct 2026, 02:30 CEST (Europe/Berlin; 00:30 UTC), or "
    "Sun 25 Oct 2026, 02:30 CET (Europe/Berlin; 01:30 UTC). Choose the earlier or the later one."
)


@pytest.mark.parametrize("fold", [None, ""])
def test_a_time_that_happens_twice_needs_a_fold(fold: str | None) -> None:
    refused = resolve("2026-10-25T02:30", fold=fold)
    assert refused == refusal(
        "ambiguous_local_time",
        TWICE,
        # One click on either instant, as for a time the clocks skip.
        Retry("fold", "earlier", "Sun 25 Oct 2026, 02:30 CEST (the earlier one)"),
        Retry("fold", "later", "Sun 25 Oct 2026, 02:30 CET (the later one)"),
    )
    assert field_of(refused) == "fold"


@pytest.mark.parametrize(
    ("fold", "due_at_ms"),
    [("earlier", 1_792_888_200_000), ("later", 1_792_891_800_000)],  # 00:30 and 01:30 UTC
)
def test_the_chosen_fold_is_the_instant_and_is_kept(fold: str, due_at_ms: int) -> None:
    assert resolve("2026-10-25T02:30", fold=fold) == ResolvedTime(
        due_at_ms,
        "2026-10-25T02:30",
        "Europe/Berlin",
        fold,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("fold", ["earlier", "later", ""])
def test_a_fold_for_a_time_that_happens_once_is_not_kept(fold: str) -> None:
    assert resolve("2026-07-01T13:00", fold=fold) == ResolvedTime(
        1_782_903_600_000, "2026-07-01T13:00", "Europe/Berlin", None
    )


@pytest.mark.parametrize("fold", ["sideways", "Earlier", "LATER", "1", " later"])
def test_a_bogus_fold_is_refused_even_for_a_time_that_happens_once(fold: str) -> None:
    refused = resolve("2026-07-01T13:00", fold=fold)
    assert refused == refusal("invalid_fold", "Choose the earlier or the later occurrence.")
    assert field_of(refused) == "fold"


def gap(wall: str, zone: str, jump: str, first: str, value: str, label: str) -> TimeRefusal:
    return refusal(
        "nonexistent_local_time",
        f"{wall} does not happen in {zone}: {jump}. The first minute after the jump is {first}.",
        Retry("local_time", value, label),
    )


BERLIN_JUMP = "the clocks jump from 02:00 to 03:00"
BERLIN_FIRST = "Sun 29 Mar 2026, 03:00 CEST (Europe/Berlin; 01:00 UTC)"


@pytest.mark.parametrize(
    "local", ["2026-03-29T02:00", "2026-03-29T02:30", "2026-03-29T02:31", "2026-03-29T02:59"]
)
def test_every_minute_of_a_gap_offers_the_first_minute_after_it(local: str) -> None:
    refused = resolve(local)
    assert refused == gap(
        f"Sun 29 Mar 2026, {local[-5:]}",
        "Europe/Berlin",
        BERLIN_JUMP,
        BERLIN_FIRST,
        "2026-03-29T03:00",
        "Sun 29 Mar 2026, 03:00 CEST",
    )
    assert field_of(refused) == "local_time"


@pytest.mark.parametrize(
    ("local", "wall", "zone", "jump", "first", "value", "label"),
    [
        # Out of UTC+0: the offset before the jump is zero.
        (
            "2026-03-29T01:30",
            "Sun 29 Mar 2026, 01:30",
            "Europe/London",
            "the clocks jump from 01:00 to 02:00",
            "Sun 29 Mar 2026, 02:00 BST (Europe/London; 01:00 UTC)",
            "2026-03-29T02:00",
            "Sun 29 Mar 2026, 02:00 BST",
        ),
        # Into UTC+0, at midnight: the offset after the jump is zero.
        (
            "2026-03-29T00:30",
            "Sun 29 Mar 2026, 00:30",
            "Atlantic/Azores",
            "the clocks jump from 00:00 to 01:00",
            "Sun 29 Mar 2026, 01:00 +00 (Atlantic/Azores; 01:00 UTC)",
            "2026-03-29T01:00",
            "Sun 29 Mar 2026, 01:00 +00",
        ),
        # A jump of half an hour.
        (
            "2026-10-04T02:15",
            "Sun 4 Oct 2026, 02:15",
            "Australia/Lord_Howe",
            "the clocks jump from 02:00 to 02:30",
            "Sun 4 Oct 2026, 02:30 +11 (Australia/Lord_Howe; Sat 3 Oct 2026, 15:30 UTC)",
            "2026-10-04T02:30",
            "Sun 4 Oct 2026, 02:30 +11",
        ),
        # A whole day skipped (Samoa crossed the date line): the jump spans midnight.
        (
            "2011-12-30T12:00",
            "Fri 30 Dec 2011, 12:00",
            "Pacific/Apia",
            "the clocks skip over it",
            "Sat 31 Dec 2011, 00:00 +14 (Pacific/Apia; Fri 30 Dec 2011, 10:00 UTC)",
            "2011-12-31T00:00",
            "Sat 31 Dec 2011, 00:00 +14",
        ),
    ],
)
def test_gaps_of_other_zones(
    local: str, wall: str, zone: str, jump: str, first: str, value: str, label: str
) -> None:
    assert resolve(local, zone) == gap(wall, zone, jump, first, value, label)


def test_the_first_minute_after_a_gap_is_the_zones_clock_at_the_jump() -> None:
    for minute in ("00", "01", "30", "31", "59"):
        wall = datetime(2026, 3, 29, 2, int(minute))
        earlier, later = wall.replace(tzinfo=BERLIN, fold=0), wall.replace(tzinfo=BERLIN, fold=1)
        first = first_minute_after_gap(earlier, later)
        assert first == datetime(2026, 3, 29, 3, 0, tzinfo=BERLIN)
        assert (str(first.tzinfo), first.second, first.microsecond) == ("Europe/Berlin", 0, 0)
        assert first.astimezone(UTC) == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("typed", "message", "names"),
    [
        (None, "Enter a time zone, such as Europe/Paris.", ()),
        ("", "Enter a time zone, such as Europe/Paris.", ()),
        (
            "Europe/Pari",
            "“Europe/Pari” is not a time zone name this plugin knows. Did you mean Europe/Paris?",
            ("Europe/Paris",),
        ),
        (
            "Asia/Tokio",
            "“Asia/Tokio” is not a time zone name this plugin knows. "
            "Did you mean Asia/Tokyo or Asia/Tomsk?",
            ("Asia/Tokyo", "Asia/Tomsk"),
        ),
        (
            "America/New",
            "“America/New” is not a time zone name this plugin knows. "
            "Did you mean America/Nome, America/New_York or America/Juneau?",
            ("America/Nome", "America/New_York", "America/Juneau"),
        ),
        (
            "Nowhere/Land",
            "“Nowhere/Land” is not a time zone name this plugin knows. "
            "Type a name such as Europe/Paris; the field suggests names as you type.",
            (),
        ),
    ],
)
def test_an_unknown_zone_is_said_back_with_names_one_click_away(
    typed: object, message: str, names: tuple[str, ...]
) -> None:
    refused = resolve("2026-07-01T13:00", typed)
    assert refused == refusal(
        "unknown_timezone", message, *(Retry("timezone", name, name) for name in names)
    )
    assert field_of(refused) == "timezone"


def test_both_readings_of_a_time_that_happens_twice() -> None:
    found = occurrences("2026-10-25T02:30", "europe/berlin")
    assert found is not None
    earlier, later = found
    assert (str(earlier.tzinfo), str(later.tzinfo)) == ("Europe/Berlin", "Europe/Berlin")
    assert (earlier.fold, later.fold) == (0, 1)
    assert (earlier.astimezone(UTC), later.astimezone(UTC)) == (
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
        datetime(2026, 10, 25, 1, 30, tzinfo=UTC),
    )
    assert occurrence_labels(earlier, later) == [
        "Sun 25 Oct 2026, 02:30 CEST (Europe/Berlin; 00:30 UTC)",
        "Sun 25 Oct 2026, 02:30 CET (Europe/Berlin; 01:30 UTC)",
    ]


@pytest.mark.parametrize(
    ("local", "zone"),
    [
        ("2026-07-01T13:00", "Europe/Berlin"),  # happens once
        ("2026-03-29T02:30", "Europe/Berlin"),  # never happens
        ("2026-10-25 02:30", "Europe/Berlin"),
        ("2026-10-25T02:30", "Nowhere/Land"),
        ("2026-10-25T02:30", None),
        (None, "Europe/Berlin"),
    ],
)
def test_anything_else_has_no_two_readings(local: object, zone: object) -> None:
    assert occurrences(local, zone) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("ms", "rfc"),
    [
        (1_782_910_800_000, "2026-07-01T13:00:00Z"),
        (1_782_910_859_999, "2026-07-01T13:00:59Z"),
        (1_767_225_599_999, "2025-12-31T23:59:59Z"),
        (0, "1970-01-01T00:00:00Z"),
    ],
)
def test_instants_for_machines_are_written_in_utc_whatever_the_hosts_zone(
    ms: int, rfc: str
) -> None:
    assert rfc3339(ms) == rfc


def utc_ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


@pytest.mark.parametrize(
    ("now", "zone", "wall"),
    [
        # Exactly on a minute: the next one; a millisecond before it: that one.
        ("2026-07-01T10:04:00+00:00", "Asia/Kolkata", ("2026-07-01T15:35", None)),
        ("2026-07-01T10:03:59.999+00:00", "Asia/Kolkata", ("2026-07-01T15:34", None)),
        # Paris falls back at 03:00 CEST on 25 October: 02:30 happens twice.
        ("2026-10-25T00:29:00+00:00", "Europe/Paris", ("2026-10-25T02:30", "earlier")),
        ("2026-10-25T01:29:30+00:00", "europe/paris", ("2026-10-25T02:30", "later")),
        # Into a gap's far side: 02:00 does not exist on 29 March, 03:00 is the next minute.
        ("2026-03-29T00:59:00+00:00", "Europe/Paris", ("2026-03-29T03:00", None)),
        # A zone no one knows reads in UTC.
        ("2026-07-01T10:04:00.001+00:00", "Mars/Olympus", ("2026-07-01T10:05", None)),
    ],
)
def test_the_next_minute_on_the_zones_clock_with_its_occurrence(
    now: str, zone: str, wall: tuple[str, str | None]
) -> None:
    assert next_minute_wall(utc_ms(now), zone) == wall


def test_a_past_time_offers_the_next_minute_in_its_own_zone_word_for_word() -> None:
    """The button is the zone's next minute, labelled in that zone (not the host's, not UTC)."""
    refused = resolve_local_time(
        "2026-07-01T10:00", "Europe/Paris", None, now=datetime(2026, 7, 1, 8, 30, 20, tzinfo=UTC)
    )
    assert refused == TimeRefusal(
        "past_time",
        "Wed 1 Jul 2026, 10:00 CEST (Europe/Paris; 08:00 UTC) has already passed. The next"
        " minute you can choose is Wed 1 Jul 2026, 10:31 CEST (Europe/Paris; 08:31 UTC).",
        (Retry("local_time", "2026-07-01T10:31", "Wed 1 Jul 2026, 10:31 CEST"),),
    )


def test_a_past_time_offers_no_button_when_the_next_minute_happens_twice() -> None:
    """At 02:30 CEST on the night the clocks go back, the next minute is in the repeated hour:
    a button would keep the form's occurrence, so the refusal says only that it passed."""
    refused = resolve_local_time(
        "2026-10-24T10:00", "Europe/Paris", None, now=datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    )
    assert refused == TimeRefusal(
        "past_time", "Sat 24 Oct 2026, 10:00 CEST (Europe/Paris; 08:00 UTC) has already passed."
    )


def test_a_duration_is_said_in_whole_minutes_rounded_down() -> None:
    said = {
        -1: ("0 min", "0 minutes"),
        119_999: ("1 min", "1 minute"),
        3_600_000: ("1 h", "1 hour"),
        5_400_000: ("1 h 30 min", "1 h 30 min"),
        7_259_999: ("2 h", "2 hours"),
    }
    assert {ms: (duration_text(ms), duration_words(ms)) for ms in said} == said


@pytest.mark.parametrize(
    ("zone", "hours", "moving", "keeping"),
    [
        ("EST", "UTC-05:00", "America/New_York", "America/Panama"),
        ("mst", "UTC-07:00", "America/Denver", "America/Phoenix"),
    ],
)
def test_a_fixed_offset_is_refused_offering_the_place_that_changes_and_the_one_that_keeps(
    zone: str, hours: str, moving: str, keeping: str
) -> None:
    name = zone.upper()
    refused = resolve("2026-07-01T13:00", zone)
    assert refused == refusal(
        "fixed_offset_zone",
        f"{name} is a fixed offset, {hours} all year, with no daylight saving, so it is not the"
        f" clock of a place that changes it in summer. Choose the place: {moving} (which"
        f" changes it), or {keeping} (which keeps {name} all year).",
        Retry("timezone", moving, moving),
        Retry("timezone", keeping, keeping),
    )
    assert field_of(refused) == "timezone"


def test_a_zone_name_up_to_64_characters_with_its_spaces_is_read() -> None:
    padded = "Europe/Paris".center(64)
    assert canonical_zone(padded) == "Europe/Paris"
    assert canonical_zone(padded + " ") is None
    assert canonical_zone(None) is None  # type: ignore[arg-type]


def test_suggestions_at_the_edges() -> None:
    assert zone_suggestions(None) == ()  # type: ignore[arg-type]
    # Exactly as close as a suggestion may be (difflib's ratio 0.7): both offered.
    assert zone_suggestions("asia/toqqq") == ("Asia/Tokyo", "Asia/Tomsk")
    # By the last part alone, however deep the name.
    assert zone_suggestions("Buenos_Aire")[0] == "America/Argentina/Buenos_Aires"
    # `Etc/GMT+2` is two hours behind UTC: never offered, whichever sign was typed.
    for typed in ("etc/gmt+22", "etc/gmt-22"):
        offered = zone_suggestions(typed)
        assert offered
        assert not any(name.startswith(("Etc/GMT+", "Etc/GMT-")) for name in offered)


def test_what_was_typed_is_said_back_up_to_64_characters() -> None:
    assert quoted("  Mars/Base ") == "Mars/Base"
    assert quoted("x" * 64) == "x" * 64
    assert quoted("x" * 65) == "x" * 63 + "…"


def test_a_wall_time_with_one_digit_is_read_as_strptime_reads_it() -> None:
    assert parse_wall("2026-3-9T2:05") == datetime(2026, 3, 9, 2, 5)
    with pytest.raises(ValueError, match="day is out of range"):
        parse_wall("2026-02-30T10:00")


def test_a_chat_line_gives_the_zones_clock_and_abbreviation() -> None:
    ms = int(NOW.timestamp() * 1000)
    assert zoned_clock_text(ms, "Europe/Paris") == "01:00 CET"
    assert zoned_clock_text(ms + 61_000, "Asia/Kolkata") == "05:31 IST"
    assert zoned_clock_text(ms, "Mars/Base") == "00:00 UTC"


def test_years_are_counted_in_words() -> None:
    assert years_text(1) == "1 year"
    assert (years_text(2), years_text(0)) == ("2 years", "0 years")

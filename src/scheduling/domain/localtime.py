"""Turn an editor's local wall time in an IANA zone into one UTC instant.

The Time table (docs/reference/time.md) is the contract; tests drive every row of it through
`resolve_local_time`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from scheduling.domain.time_words import clock_text, instant_text, parse_wall, wall_text
from scheduling.domain.timezones import (
    UnknownTimezone,
    canonical_zone,
    get_zone,
    quoted,
    zone_suggestions,
)

Fold = Literal["earlier", "later"]
FOLDS: tuple[Fold, ...] = ("earlier", "later")

# ASCII digits only: `\d` would also take full-width or Arabic-Indic digits.
_LOCAL = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}")
# Years a schedule may name. The bounds keep every zone's arithmetic inside
# `datetime`'s range (year 1 or 9999 overflows there) and the instant a
# positive epoch millisecond count.
FIRST_YEAR, LAST_YEAR = 1970, 2199


@dataclass(frozen=True)
class ResolvedTime:
    """A wall time resolved in its zone: the instant it is due, and how it was read."""

    due_at_ms: int
    local_time: str  # as entered, YYYY-MM-DDTHH:MM
    timezone: str  # the canonical IANA name, whatever case it was typed in
    fold: Fold | None  # kept only when the wall time was ambiguous


@dataclass(frozen=True)
class Retry:
    """A one-click way out of a refusal: the same form with `field` set to `value`."""

    field: str  # local_time | timezone
    value: str
    label: str


@dataclass(frozen=True)
class TimeRefusal:
    """Why a wall time cannot be scheduled, and the times that could be instead."""

    code: str  # e.g. nonexistent_local_time, ambiguous_local_time, unknown_timezone, past_time
    message: str
    retries: tuple[Retry, ...] = ()

    @property
    def field(self) -> str:
        """Which input it is about: `local_time`, `timezone` or `fold`."""
        return _FIELDS.get(self.code, "local_time")


_FIELDS = {
    "ambiguous_local_time": "fold",
    "invalid_fold": "fold",
    "unknown_timezone": "timezone",
    "fixed_offset_zone": "timezone",
}
# tzdata's names of a fixed offset that read as a place's clock: `EST` is UTC-05:00 all year,
# never New York's summer time. Refused, offering the places that keep it and that do not.
FIXED_OFFSET_PLACES = {
    "EST": ("America/New_York", "America/Panama"),
    "MST": ("America/Denver", "America/Phoenix"),
}


def resolve_local_time(
    local: str, zone: str, fold: str | None, *, now: datetime
) -> ResolvedTime | TimeRefusal:
    """Resolve `local` (YYYY-MM-DDTHH:MM) in `zone`; refuse gaps, unchosen overlaps and the past."""
    if not isinstance(local, str) or not _LOCAL.fullmatch(local):
        return TimeRefusal(
            "invalid_local_time", "Choose a date and a time: the day, then the hour and minute."
        )
    if not FIRST_YEAR <= int(local[:4]) <= LAST_YEAR:
        return TimeRefusal("invalid_local_time", f"Enter a year from {FIRST_YEAR} to {LAST_YEAR}.")
    try:
        wall = parse_wall(local)
    except ValueError:
        return TimeRefusal(
            "invalid_local_time", "That date or time does not exist on the calendar."
        )
    if fold not in (None, "", *FOLDS):
        return TimeRefusal("invalid_fold", "Choose the earlier or the later occurrence.")
    name = canonical_zone(zone)
    if name is None:
        return _unknown_zone(zone)
    if name in FIXED_OFFSET_PLACES:
        return _fixed_offset(name, wall)
    tz = get_zone(name)

    shown = wall_text(local)
    earlier = wall.replace(tzinfo=tz, fold=0)
    later = wall.replace(tzinfo=tz, fold=1)
    if not _exists(earlier):
        return _skipped(local, name, earlier, later)
    chosen = earlier
    kept_fold: Fold | None = None
    if earlier.utcoffset() != later.utcoffset():
        if fold not in FOLDS:
            first, second = occurrence_labels(earlier, later)
            return TimeRefusal(
                "ambiguous_local_time",
                f"{shown} happens twice in {name}: {first}, or {second}. "
                "Choose the earlier or the later one.",
                (
                    Retry("fold", "earlier", f"{_short(earlier)} (the earlier one)"),
                    Retry("fold", "later", f"{_short(later)} (the later one)"),
                ),
            )
        chosen = earlier if fold == "earlier" else later
        kept_fold = "earlier" if fold == "earlier" else "later"

    instant = chosen.astimezone(UTC)
    if instant <= now.astimezone(UTC):
        return _passed(chosen, name, now)
    return ResolvedTime(
        due_at_ms=int(instant.timestamp() * 1000),
        local_time=local,
        timezone=name,
        fold=kept_fold,
    )


def _passed(chosen: datetime, zone: str, now: datetime) -> TimeRefusal:
    """A time already past: say so, and offer the next whole minute in the same zone (issue
    38), as a gap offers its first minute. Not where that minute happens twice (the hour the
    clocks go back): the button keeps the form's occurrence, which may not be that one."""
    wall, fold = next_minute_wall(int(now.timestamp() * 1000), zone)
    soonest = parse_wall(wall).replace(tzinfo=get_zone(zone))
    if fold is not None:
        return TimeRefusal("past_time", f"{_text(chosen)} has already passed.")
    return TimeRefusal(
        "past_time",
        f"{_text(chosen)} has already passed. The next minute you can choose is {_text(soonest)}.",
        (Retry("local_time", wall, _short(soonest)),),
    )


def _unknown_zone(typed: str) -> TimeRefusal:
    """What was typed, said back, with the closest known names to choose from."""
    said = quoted(typed) if isinstance(typed, str) else ""
    if not said:
        return TimeRefusal("unknown_timezone", "Enter a time zone, such as Europe/Paris.")
    close = zone_suggestions(typed)
    if close:
        names = close[0] if len(close) == 1 else ", ".join(close[:-1]) + " or " + close[-1]
        hint = f" Did you mean {names}?"
    else:
        hint = " Type a name such as Europe/Paris; the field suggests names as you type."
    return TimeRefusal(
        "unknown_timezone",
        f"“{said}” is not a time zone name this plugin knows.{hint}",
        tuple(Retry("timezone", name, name) for name in close),
    )


def _fixed_offset(name: str, wall: datetime) -> TimeRefusal:
    """`EST`: a fixed offset, not the clock of the place it reads as; both places offered."""
    moving, keeping = FIXED_OFFSET_PLACES[name]
    offset = wall.replace(tzinfo=get_zone(name)).strftime("%z")
    hours = f"UTC{offset[0]}{offset[1:3]}:{offset[3:]}"
    return TimeRefusal(
        "fixed_offset_zone",
        f"{name} is a fixed offset, {hours} all year, with no daylight saving, so it is not"
        f" the clock of a place that changes it in summer. Choose the place: {moving}"
        f" (which changes it), or {keeping} (which keeps {name} all year).",
        (Retry("timezone", moving, moving), Retry("timezone", keeping, keeping)),
    )


def _skipped(local: str, zone: str, earlier: datetime, later: datetime) -> TimeRefusal:
    """A wall time in a gap: say which jump skips it, and offer the first minute after it."""
    first = first_minute_after_gap(earlier, later)
    # The jump starts where the old offset's clock would have shown the new first minute.
    jumped = (later.utcoffset() or timedelta(0)) - (earlier.utcoffset() or timedelta(0))
    start = first.replace(tzinfo=None) - jumped
    jump = (
        f"the clocks jump from {clock_text(start)} to {clock_text(first)}"
        if start.date() == first.date()
        else "the clocks skip over it"
    )
    return TimeRefusal(
        "nonexistent_local_time",
        f"{wall_text(local)} does not happen in {zone}: {jump}. "
        f"The first minute after the jump is {_text(first)}.",
        (Retry("local_time", f"{first:%Y-%m-%dT%H:%M}", _short(first)),),
    )


def next_minute_wall(now_ms: int, zone: str) -> tuple[str, Fold | None]:
    """The next whole minute after `now_ms` as the clock in `zone` shows it (YYYY-MM-DDTHH:MM),
    and which occurrence it is when that wall time happens twice: what a Try again asks for,
    so that it resolves to exactly that instant. An unknown zone reads in UTC."""
    minute = (now_ms // 60_000 + 1) * 60_000
    try:
        tz = get_zone(canonical_zone(zone) or "")
    except UnknownTimezone:
        tz = get_zone("UTC")
    local = datetime.fromtimestamp(minute / 1000, UTC).astimezone(tz)
    wall = f"{local:%Y-%m-%dT%H:%M}"
    fold: Fold | None = None
    if occurrences(wall, str(tz)) is not None:
        fold = "later" if local.fold else "earlier"
    return wall, fold


def first_minute_after_gap(earlier: datetime, later: datetime) -> datetime:
    """The first wall minute that exists after the gap holding `earlier`/`later` (the two
    readings of one skipped wall time, fold 0 and 1): the zone's clock at the jump."""
    tz = earlier.tzinfo
    wall = earlier.replace(tzinfo=None)
    # In a gap, fold=1 reads with the offset from after the jump, so it is an instant before
    # the jump, and fold=0 one after it: the jump lies between, a minute at a time.
    moment = later.astimezone(UTC).replace(second=0, microsecond=0)
    end = earlier.astimezone(UTC)
    while moment < end:
        local = moment.astimezone(tz)
        if local.replace(tzinfo=None) > wall:
            return local
        moment += timedelta(minutes=1)
    return end.astimezone(tz)


def _text(moment: datetime) -> str:
    return instant_text(int(moment.timestamp() * 1000), str(moment.tzinfo))


def _short(moment: datetime) -> str:
    """`Sun 29 Mar 2026, 03:00 CEST`: a button's label, the zone being beside it."""
    return f"{wall_text(f'{moment:%Y-%m-%dT%H:%M}')} {moment:%Z}"


def occurrences(local: str, zone: str) -> tuple[datetime, datetime] | None:
    """Both readings of a wall time that happens twice in `zone`; None for any other input."""
    name = canonical_zone(zone)
    try:
        wall = parse_wall(local)
        tz = get_zone(name or "")
    except (ValueError, TypeError, UnknownTimezone):
        return None
    earlier, later = wall.replace(tzinfo=tz, fold=0), wall.replace(tzinfo=tz, fold=1)
    if earlier.utcoffset() == later.utcoffset() or not _exists(earlier):
        return None
    return earlier, later


def occurrence_labels(*readings: datetime) -> list[str]:
    """Each reading in the one way of writing an instant, so the two can be told apart:
    `Sun 25 Oct 2026, 02:30 CEST (Europe/Berlin; 00:30 UTC)`."""
    return [_text(r) for r in readings]


def _exists(aware: datetime) -> bool:
    """A wall time in a gap does not survive the round trip through UTC."""
    tz = aware.tzinfo
    round_trip = aware.astimezone(UTC).astimezone(tz)
    return round_trip.replace(tzinfo=None) == aware.replace(tzinfo=None)


def format_utc(ms: int) -> str:
    """`2026-07-01 13:00 UTC`: the Time table's form, for machines and logs; pages use
    `time_words.instant_text`."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def rfc3339(ms: int) -> str:
    return datetime.fromtimestamp(ms // 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

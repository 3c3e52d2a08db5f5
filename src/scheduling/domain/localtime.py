"""Turn an editor's local wall time in an IANA zone into one UTC instant.

The README's Time table is the contract; tests drive every row of it through
`resolve_local_time`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from scheduling.domain.timezones import UnknownTimezone, get_zone

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
    due_at_ms: int
    local_time: str  # as entered, YYYY-MM-DDTHH:MM
    timezone: str
    fold: Fold | None  # kept only when the wall time was ambiguous


@dataclass(frozen=True)
class TimeRefusal:
    code: str  # e.g. nonexistent_local_time, ambiguous_local_time, unknown_timezone, past_time
    message: str

    @property
    def field(self) -> str:
        """Which input it is about: `local_time`, `timezone` or `fold`."""
        return _FIELDS.get(self.code, "local_time")


_FIELDS = {
    "ambiguous_local_time": "fold",
    "invalid_fold": "fold",
    "unknown_timezone": "timezone",
}


def resolve_local_time(
    local: str, zone: str, fold: str | None, *, now: datetime
) -> ResolvedTime | TimeRefusal:
    """Resolve `local` (YYYY-MM-DDTHH:MM) in `zone`; refuse gaps, unchosen overlaps and the past."""
    if not isinstance(local, str) or not _LOCAL.fullmatch(local):
        return TimeRefusal("invalid_local_time", "Enter a date and time as YYYY-MM-DDTHH:MM.")
    if not FIRST_YEAR <= int(local[:4]) <= LAST_YEAR:
        return TimeRefusal("invalid_local_time", f"Enter a year from {FIRST_YEAR} to {LAST_YEAR}.")
    try:
        wall = datetime.strptime(local, "%Y-%m-%dT%H:%M")
    except ValueError:
        return TimeRefusal(
            "invalid_local_time", "That date or time does not exist on the calendar."
        )
    if fold not in (None, "", *FOLDS):
        return TimeRefusal("invalid_fold", "Choose the earlier or the later occurrence.")
    try:
        tz = get_zone(zone)
    except UnknownTimezone:
        return TimeRefusal("unknown_timezone", "That is not a known IANA time zone name.")

    shown = local.replace("T", " ")
    earlier = wall.replace(tzinfo=tz, fold=0)
    later = wall.replace(tzinfo=tz, fold=1)
    if not _exists(earlier):
        return TimeRefusal(
            "nonexistent_local_time",
            f"{shown} does not happen in {zone}: the clocks skip over it.",
        )
    chosen = earlier
    kept_fold: Fold | None = None
    if earlier.utcoffset() != later.utcoffset():
        if fold not in FOLDS:
            first, second = occurrence_labels(earlier, later)
            return TimeRefusal(
                "ambiguous_local_time",
                f"{shown} happens twice in {zone}: {first}, or {second}. "
                "Choose the earlier or the later one.",
            )
        chosen = earlier if fold == "earlier" else later
        kept_fold = "earlier" if fold == "earlier" else "later"

    instant = chosen.astimezone(UTC)
    if instant <= now.astimezone(UTC):
        return TimeRefusal("past_time", f"{shown} in {zone} is already in the past.")
    return ResolvedTime(
        due_at_ms=int(instant.timestamp() * 1000),
        local_time=local,
        timezone=zone,
        fold=kept_fold,
    )


def occurrences(local: str, zone: str) -> tuple[datetime, datetime] | None:
    """Both readings of a wall time that happens twice in `zone`; None for any other input."""
    try:
        wall = datetime.strptime(local, "%Y-%m-%dT%H:%M")
        tz = get_zone(zone)
    except (ValueError, TypeError, UnknownTimezone):
        return None
    earlier, later = wall.replace(tzinfo=tz, fold=0), wall.replace(tzinfo=tz, fold=1)
    if earlier.utcoffset() == later.utcoffset() or not _exists(earlier):
        return None
    return earlier, later


def occurrence_labels(*readings: datetime) -> list[str]:
    """Each reading as `02:30 CEST = 00:30 UTC`, so the two instants can be told apart."""
    return [f"{r:%H:%M %Z} = {r.astimezone(UTC):%H:%M} UTC" for r in readings]


def _exists(aware: datetime) -> bool:
    """A wall time in a gap does not survive the round trip through UTC."""
    tz = aware.tzinfo
    round_trip = aware.astimezone(UTC).astimezone(tz)
    return round_trip.replace(tzinfo=None) == aware.replace(tzinfo=None)


def format_utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def rfc3339(ms: int) -> str:
    return datetime.fromtimestamp(ms // 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def local_wall(ms: int, zone: str) -> str:
    """An instant shown in `zone`, with its abbreviation, e.g. 2026-07-01 09:00 EDT."""
    try:
        tz = get_zone(zone)
    except UnknownTimezone:
        return format_utc(ms)
    return datetime.fromtimestamp(ms / 1000, tz).strftime("%Y-%m-%d %H:%M %Z")

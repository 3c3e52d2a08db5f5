"""The one way an instant is written for people, on every page, receipt, refusal and card.

    Tue 1 Dec 2026, 00:40 CET (Europe/Paris; Mon 30 Nov 2026, 23:40 UTC)
    Wed 2 Jul 2026, 09:00 CEST (Europe/Paris; 07:00 UTC)      the same day in UTC
    Wed 2 Jul 2026, 07:00 UTC                                 a schedule in UTC
    Wed 2 Jul 2026, 09:00:20 CEST (Europe/Paris; 07:00:20 UTC)  seconds=True (attempts)

The local reading comes first, with the zone's abbreviation and its IANA name;
UTC follows inside the same parentheses, with its own date only when the date
differs. Names of days and months are English and fixed (not the host's
locale), so CPython and Pyodide write the same text. A wall time that has no
instant (a time the clocks skip) is written by `wall_text` the same way, without
the abbreviation. Machine values stay machine values: `datetime-local`'s
`2026-12-01T00:40` only in an input's value, RFC 3339 only in `data-*` attributes.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from scheduling.domain.timezones import UnknownTimezone, get_zone

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MINUTE_MS = 60_000
DAY_MS = 24 * 60 * MINUTE_MS
# A date N calendar years on is always at least N times 365 days away.
YEAR_MS = 365 * DAY_MS
_WALL = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})")


def parse_wall(local: str) -> datetime:
    """`2026-03-29T02:30` as a naive datetime, as `datetime.strptime(local, "%Y-%m-%dT%H:%M")`
    reads it: ValueError for a day or a time that does not exist. That shape is read without
    strptime, whose first call imports `_strptime` and `calendar` (about 45 ms of CPU under
    Pyodide, in an isolate's first page or its snapshot); other text still goes through it."""
    found = _WALL.fullmatch(local)
    if found is None:
        return datetime.strptime(local, "%Y-%m-%dT%H:%M")
    year, month, day, hour, minute = map(int, found.groups())
    return datetime(year, month, day, hour, minute)


def _date(moment: datetime) -> str:
    """`Tue 1 Dec 2026`."""
    return f"{DAYS[moment.weekday()]} {moment.day} {MONTHS[moment.month - 1]} {moment.year}"


def _clock(moment: datetime, seconds: bool) -> str:
    return f"{moment:%H:%M:%S}" if seconds else f"{moment:%H:%M}"


def instant_text(ms: int, zone: str, *, seconds: bool = False, utc: bool = True) -> str:
    """An instant as people read it: local date and time, abbreviation and zone, then UTC.

    `utc=False` leaves the UTC part out, where the same sentence already gives it (a
    button's label, "entered as"). A zone this plugin does not know (an old row) is
    shown in UTC alone."""
    in_utc = datetime.fromtimestamp(ms / 1000, UTC)
    utc_part = f"{_clock(in_utc, seconds)} UTC"
    try:
        tz = get_zone(zone)
    except UnknownTimezone:
        tz = None
    if tz is None or zone == "UTC":
        return f"{_date(in_utc)}, {utc_part}"
    local = in_utc.astimezone(tz)
    said = f"{_date(local)}, {_clock(local, seconds)} {local:%Z}"
    if not utc:
        return f"{said} ({zone})"
    if local.date() != in_utc.date():
        utc_part = f"{_date(in_utc)}, {utc_part}"
    return f"{said} ({zone}; {utc_part})"


def wall_text(local: str) -> str:
    """A wall time as entered (`2026-03-29T02:30`) written the same way: `Sun 29 Mar 2026, 02:30`.
    Text that is not such a value is returned as it is."""
    try:
        moment = parse_wall(local)
    except (TypeError, ValueError):
        return local
    return f"{_date(moment)}, {_clock(moment, False)}"


def clock_text(moment: datetime) -> str:
    """The time of day alone, `02:00`, for sentences that already name the day."""
    return _clock(moment, False)


def zoned_clock_text(ms: int, zone: str) -> str:
    """The time of day in `zone` with its abbreviation, `09:00 CET`, for a line that is read
    within hours of it (a chat message); an unknown zone is written in UTC."""
    in_utc = datetime.fromtimestamp(ms / 1000, UTC)
    try:
        local = in_utc.astimezone(get_zone(zone))
    except UnknownTimezone:
        local = in_utc
    return f"{_clock(local, False)} {local:%Z}"


def duration_text(ms: int) -> str:
    """`2 min`, `1 h 5 min`, `3 h` (whole minutes, rounded down)."""
    minutes = max(0, ms) // MINUTE_MS
    hours, minutes = divmod(minutes, 60)
    if hours and minutes:
        return f"{hours} h {minutes} min"
    if hours:
        return f"{hours} h"
    return f"{minutes} min"


def duration_words(ms: int) -> str:
    """`15 minutes`, `1 hour`, `1 h 30 min`: a limit, in a sentence."""
    minutes = max(0, ms) // MINUTE_MS
    if minutes < 60:
        return f"{minutes} minute{'' if minutes == 1 else 's'}"
    if minutes % 60 == 0:
        hours = minutes // 60
        return f"{hours} hour{'' if hours == 1 else 's'}"
    return duration_text(ms)


def years_ahead(ms: int) -> int:
    """Years from now to an instant `ms` ahead, to the nearest (0 when less than a year)."""
    if ms < YEAR_MS:
        return 0
    return (ms + YEAR_MS // 2) // YEAR_MS


def years_text(years: int) -> str:
    return "1 year" if years == 1 else f"{years} years"

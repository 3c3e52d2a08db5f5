"""The time arithmetic the pages do for editors; the writing is `domain/time_words.py`'s.

What an editor would otherwise work out by hand lives here: what time it is now
in a zone, until when the plugin keeps trying, how late a send was, when the next
try really happens, and which calendar day an instant falls on in a chosen zone.
Every instant a page shows is written by `time_words.instant_text`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scheduling.domain.time_words import instant_text
from scheduling.domain.timezones import UnknownTimezone, canonical_zone, get_zone

MINUTE_MS = 60_000
# "Done" says how late it was when the command left more than this after its time: the
# cron runs once a minute, so up to a minute is on time.
LATE_AFTER_MS = MINUTE_MS
# A suggested time is a whole hour at least this far ahead, so there is time to read the form.
SUGGESTION_LEAD_MS = 30 * MINUTE_MS


def _utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def _in(ms: int, zone: str) -> datetime:
    try:
        return _utc(ms).astimezone(get_zone(zone))
    except UnknownTimezone:
        return _utc(ms)


def now_in(zone: str, now_ms: int) -> str | None:
    """What time it is in `zone` (`instant_text`), or None when it is not a known IANA name."""
    name = canonical_zone(zone)
    return instant_text(now_ms, name) if name is not None else None


def deadline_ms(due_at: int, max_lateness_ms: int) -> int:
    """The last instant anything is sent."""
    return due_at + max_lateness_ms


def lateness_ms(due_at: int, sent_at: int) -> int | None:
    """How late a send left, when it left more than `LATE_AFTER_MS` after its time."""
    late = sent_at - due_at
    return late if late > LATE_AFTER_MS else None


def planned_try(next_attempt_at: int, now_ms: int) -> int:
    """When the runner really sends next: the first minute's tick at or after the planned
    instant, and never a time already passed (an overdue row goes at the next tick)."""
    minute = -(-next_attempt_at // MINUTE_MS) * MINUTE_MS
    if minute <= now_ms:
        minute = (now_ms // MINUTE_MS + 1) * MINUTE_MS
    return minute


def suggested_local_time(zone: str, now_ms: int) -> str:
    """The next whole hour on the zone's clock at least half an hour ahead; never a wall
    time the clocks skip or show twice, so the suggestion needs no fold."""
    try:
        tz = get_zone(zone)
    except UnknownTimezone:
        return ""
    ahead = _utc(now_ms + SUGGESTION_LEAD_MS).astimezone(tz).replace(tzinfo=None)
    hour = ahead.replace(minute=0, second=0, microsecond=0)
    if hour < ahead:
        hour += timedelta(hours=1)
    for _ in range(4):
        first, second = hour.replace(tzinfo=tz, fold=0), hour.replace(tzinfo=tz, fold=1)
        round_trip = first.astimezone(UTC).astimezone(tz).replace(tzinfo=None)
        if first.utcoffset() == second.utcoffset() and round_trip == hour:
            return f"{hour:%Y-%m-%dT%H:%M}"
        hour += timedelta(hours=1)
    return ""


def day_key(ms: int, zone: str) -> str:
    return f"{_in(ms, zone):%Y-%m-%d}"


def day_label(ms: int, zone: str) -> str:
    """`Thursday 2 July 2026`: a day's heading in the agenda."""
    moment = _in(ms, zone)
    return f"{_DAYS[moment.weekday()]} {moment.day} {_MONTHS[moment.month - 1]} {moment.year}"


_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip

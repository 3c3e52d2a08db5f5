"""Instants as editors read them: in a zone and in UTC, to the second where seconds matter.

The arithmetic an editor would otherwise do by hand lives here: what time it
is now in a zone, until when the plugin keeps trying, when the next try
really happens, and which calendar day an instant falls on in a chosen zone.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scheduling.domain.timezones import UnknownTimezone, get_zone, known_zone

MINUTE_MS = 60_000
# A suggested time is a whole hour at least this far ahead, so there is time to read the form.
SUGGESTION_LEAD_MS = 30 * MINUTE_MS


def _utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def _in(ms: int, zone: str) -> datetime:
    try:
        return _utc(ms).astimezone(get_zone(zone))
    except UnknownTimezone:
        return _utc(ms)


def wall(ms: int, zone: str) -> str:
    """`2026-07-01 10:00 CEST`."""
    return f"{_in(ms, zone):%Y-%m-%d %H:%M %Z}"


def now_in(zone: str, now_ms: int) -> str | None:
    """`2026-11-30 16:20 CET`, or None when `zone` is not a known IANA name."""
    return wall(now_ms, zone) if known_zone(zone) else None


def deadline(due_at: int, max_lateness_ms: int) -> str:
    """The last instant anything is sent, as `10:15 UTC` (with its date when the day differs)."""
    last = due_at + max_lateness_ms
    if _utc(last).date() == _utc(due_at).date():
        return f"{_utc(last):%H:%M} UTC"
    return f"{_utc(last):%Y-%m-%d %H:%M} UTC"


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
    """`Thursday 2 July 2026`."""
    moment = _in(ms, zone)
    return f"{moment:%A} {moment.day} {moment:%B %Y}"


def both(ms: int, zone: str, *, seconds: bool = False) -> str:
    """`2026-07-01 10:00:20 CEST (08:00:20 UTC)`; the UTC date is repeated only when it differs,
    and a UTC zone is shown once."""
    local, in_utc = _in(ms, zone), _utc(ms)
    clock = "%H:%M:%S" if seconds else "%H:%M"
    if not known_zone(zone) or zone == "UTC":
        return f"{in_utc:%Y-%m-%d {clock}} UTC"
    utc_part = (
        f"{in_utc:{clock}}" if local.date() == in_utc.date() else f"{in_utc:%Y-%m-%d {clock}}"
    )
    return f"{local:%Y-%m-%d {clock} %Z} ({utc_part} UTC)"

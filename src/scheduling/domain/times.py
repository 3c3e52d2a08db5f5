"""Time for people: IANA zones, the instants an editor's wall times name, and the one way an
instant is written.

Zones come from the pinned `tzdata` package only, never the host's database, so CPython and
Pyodide resolve every wall time alike. `resolve_local_time` turns a wall time in a zone into
one UTC instant (the Time table of docs/reference/time.md is its contract), and
`instant_text` writes an instant the way every page, receipt, refusal and card shows it:

    Tue 1 Dec 2026, 00:40 CET (Europe/Paris; Mon 30 Nov 2026, 23:40 UTC)

Send lateness, as the operator reads it, is here too: nearest-rank percentiles, and
histogram buckets with fixed bounds, whose counts add up over any window of the history.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo

import tzdata

# -- zones -----------------------------------------------------------------------------------------

# tzdata's files read as files: `importlib.resources` would import its own eight modules into
# the Worker's top level, and each zone's directory as a package on the first page to use it.
_TZDATA = Path(tzdata.__file__).parent

# No IANA name is longer than 32 characters; text much longer than that gets no suggestions
# (their cost grows with its length) and is quoted back shortened.
LONGEST_NAME = 64
SUGGESTIONS = 3
# A name is offered when it is this close to what was typed (difflib's ratio), and not much
# further than the closest: `Berln` gets `Europe/Berlin`, not `Europe/Dublin` as well.
_CLOSE_ENOUGH = 0.7
_NEAR_THE_CLOSEST = 0.1


class UnknownTimezone(Exception):
    pass


@functools.cache
def zone_names() -> frozenset[str]:
    listing = (_TZDATA / "zones").read_text("utf-8")
    return frozenset(line.strip() for line in listing.splitlines() if line.strip())


@functools.cache
def offered_zones() -> tuple[str, ...]:
    """The names a zone field suggests: the zones of tzdata's own (its `Z` lines)
    and every country's (zone.tab), and UTC; not `Factory` nor the old aliases tzdata keeps
    for compatibility (`Asia/Calcutta` is offered as `Asia/Kolkata`). Any name of
    `zone_names` is still accepted when typed."""
    data = _TZDATA / "zoneinfo"
    own = {
        line.split()[1]
        for line in data.joinpath("tzdata.zi").read_text("utf-8").splitlines()
        if line.startswith("Z ")
    }
    countries = {
        line.split("\t")[2]
        for line in data.joinpath("zone.tab").read_text("utf-8").splitlines()
        if line and not line.startswith("#")
    }
    offered = (own | countries | {"UTC"}) - {"Factory"}
    return tuple(sorted(offered & zone_names()))


@functools.cache
def get_zone(name: str) -> ZoneInfo:
    if name not in zone_names():
        raise UnknownTimezone(name)
    with _TZDATA.joinpath("zoneinfo", *name.split("/")).open("rb") as data:
        return ZoneInfo.from_file(data, key=name)


@functools.cache
def _by_lower_name() -> dict[str, str]:
    return {name.lower(): name for name in zone_names()}


def canonical_zone(typed: str) -> str | None:
    """The IANA name `typed` means, whatever its case (`europe/berlin` is `Europe/Berlin`);
    None when it names no zone. Schedules store the canonical name."""
    if not isinstance(typed, str) or len(typed) > LONGEST_NAME:
        return None
    return _by_lower_name().get(typed.strip().lower())


def zone_suggestions(typed: str) -> tuple[str, ...]:
    """Up to three known names close to `typed`, the closest first: by the whole name, or by
    its last part alone (`Berln` finds `Europe/Berlin`). Never the name `typed` is itself
    (`Europe/Kiev` gets `Europe/Kyiv`, not itself again). None for long text."""
    wanted = typed.strip().lower() if isinstance(typed, str) else ""
    if not wanted or len(wanted) > LONGEST_NAME:
        return ()
    import difflib  # only for a misspelt zone: kept out of the Worker's startup

    scores: dict[str, float] = {}
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(wanted)
    for lower, name in _by_lower_name().items():
        if lower.startswith(("etc/gmt+", "etc/gmt-")):
            continue  # `Etc/GMT+2` is two hours behind UTC: never offered for "UTC+2"
        if lower == wanted:
            continue
        best = 0.0
        for candidate in (lower, lower.rsplit("/", 1)[-1]):
            matcher.set_seq1(candidate)
            quick = min(matcher.real_quick_ratio(), matcher.quick_ratio())
            if quick >= _CLOSE_ENOUGH:
                best = max(best, matcher.ratio())
        if best >= _CLOSE_ENOUGH:
            scores[name] = best
    ranked = sorted(scores, key=lambda name: (-scores[name], name))
    near = [name for name in ranked if scores[name] >= scores[ranked[0]] - _NEAR_THE_CLOSEST]
    return tuple(near[:SUGGESTIONS])


def quoted(typed: str) -> str:
    """What was typed, for a sentence: stripped, and shortened when it is long."""
    text = typed.strip()
    return text if len(text) <= LONGEST_NAME else text[: LONGEST_NAME - 1] + "…"


# Read once at import: the memory snapshot of a Worker holds the lists, so no invocation of an
# isolate reads tzdata's listings again (the zone fields' list on its first page included).
_by_lower_name()
offered_zones()


# -- wall times and the instants they name ---------------------------------------------------------

Fold = Literal["earlier", "later"]
FOLDS: tuple[Fold, ...] = ("earlier", "later")

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
    if not isinstance(local, str) or not _WALL.fullmatch(local):
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
    """A time already past: say so, and offer the next whole minute in the same zone, as a
    gap offers its first minute. Not where that minute happens twice (the hour the
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
        f"the clocks jump from {_clock(start, False)} to {_clock(first, False)}"
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


def rfc3339(ms: int) -> str:
    return datetime.fromtimestamp(ms // 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- instants written for people -------------------------------------------------------------------

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MINUTE_MS = 60_000
DAY_MS = 24 * 60 * MINUTE_MS
# A date N calendar years on is always at least N times 365 days away.
YEAR_MS = 365 * DAY_MS
# ASCII digits only: `\d` would also take full-width or Arabic-Indic digits.
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


# -- send lateness ---------------------------------------------------------------------------------

# Upper bounds (ms) and the names their counts are stored under; the last bucket (+Inf) is
# every send. From a quarter second to the default lateness cap (15 minutes).
BOUNDS_MS: tuple[int, ...] = (
    250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000,
)  # fmt: skip


def bound_name(bound_ms: int) -> str:
    """`250ms`, `1s`, `2500ms`: whole seconds in seconds, anything else in milliseconds."""
    return f"{bound_ms // 1000}s" if bound_ms % 1000 == 0 else f"{bound_ms}ms"


BUCKET_COLUMNS: tuple[str, ...] = tuple(f"lateness_le_{bound_name(b)}" for b in BOUNDS_MS)


def percentile(ordered: Sequence[int], fraction: float) -> int:
    """Nearest rank: the smallest value with at least `fraction` of the values at or below it
    (0 for none). The median of an even count is its lower middle value."""
    if not ordered:
        return 0
    rank = max(1, -(-round(fraction * 1_000_000) * len(ordered) // 1_000_000))
    return ordered[rank - 1]


def cumulative_buckets(ordered: Sequence[int]) -> tuple[int, ...]:
    """How many values are at most each bound, for sorted `ordered` (Prometheus's `le`)."""
    return tuple(bisect_left(ordered, bound + 1) for bound in BOUNDS_MS)

"""IANA zones from the pinned `tzdata` package only, never the OS database.

CPython on a server and Pyodide in a Worker then resolve every wall time the
same way, whatever the host has installed.
"""

from __future__ import annotations

import functools
from pathlib import Path
from zoneinfo import ZoneInfo

import tzdata

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
    """The names a zone field suggests (issue 38): the zones of tzdata's own (its `Z` lines)
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


def known_zone(name: str) -> bool:
    try:
        get_zone(name)
    except UnknownTimezone:
        return False
    return True


def tzdata_version() -> str:
    return str(tzdata.IANA_VERSION)


# Read once at import: the memory snapshot of a Worker holds the lists, so no invocation of an
# isolate reads tzdata's listings again (the zone fields' list on its first page included).
_by_lower_name()
offered_zones()

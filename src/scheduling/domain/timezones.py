"""IANA zones from the pinned `tzdata` package only, never the OS database.

CPython on a server and Pyodide in a Worker then resolve every wall time the
same way, whatever the host has installed.
"""

from __future__ import annotations

import functools
import importlib.resources
from zoneinfo import ZoneInfo


class UnknownTimezone(Exception):
    pass


@functools.cache
def zone_names() -> frozenset[str]:
    listing = importlib.resources.files("tzdata").joinpath("zones").read_text("utf-8")
    return frozenset(line.strip() for line in listing.splitlines() if line.strip())


@functools.cache
def get_zone(name: str) -> ZoneInfo:
    if name not in zone_names():
        raise UnknownTimezone(name)
    resource = importlib.resources.files("tzdata.zoneinfo").joinpath(*name.split("/"))
    with resource.open("rb") as data:
        return ZoneInfo.from_file(data, key=name)


def known_zone(name: str) -> bool:
    try:
        get_zone(name)
    except UnknownTimezone:
        return False
    return True


def tzdata_version() -> str:
    import tzdata

    return str(tzdata.IANA_VERSION)

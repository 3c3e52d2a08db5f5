"""The one way of writing time, checked on every page a test renders.

Editors read instants in one format (`scheduling.domain.times.instant_text`), never
`YYYY-MM-DDTHH:MM` nor `2026-12-01 00:40`. Machine values may carry those shapes only where
no one reads them as text: an input's `value` (the `datetime-local` picker's format is the
HTML standard's), `data-*` attributes and `<time datetime>` (RFC 3339).
"""

from __future__ import annotations

import html
import re

# Attributes whose values are machine values, not shown text.
_MACHINE_ATTRIBUTES = re.compile(r'\s(?:value|datetime|data-[a-z-]+)="[^"]*"')
_RAW = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T| |&nbsp;)[0-9]{2}:[0-9]{2}|YYYY|HH:MM")


def raw_times(page: str) -> list[str]:
    """Every raw date-time (or format mask) a page shows outside machine attributes."""
    readable = html.unescape(_MACHINE_ATTRIBUTES.sub("", page))
    return _RAW.findall(readable)


def assert_one_time_format(page: str, where: str = "page") -> None:
    found = raw_times(page)
    assert not found, f"{where} writes time in a raw format: {found[:5]}"

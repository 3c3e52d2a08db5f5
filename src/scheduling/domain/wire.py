"""What every answer from Dee Wan is read as: strict shapes, extra fields ignored, frozen.

The Dee Wan client validates each §4–§5 answer against one of these models
before any of it is used; anything else is an untrusted answer.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints


class WireModel(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


_INSTANT = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z")


def _instant(value: str) -> datetime:
    """As `datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")` reads an instant, UTC, without
    importing `_strptime` (its first call costs about 45 ms under Pyodide): ValueError for a
    day or time that does not exist."""
    found = _INSTANT.fullmatch(value)
    if found is None:
        raise ValueError(f"not an instant: {value!r}")
    year, month, day, hour, minute, second = map(int, found.groups())
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def _existing_instant(value: str) -> str:
    _instant(value)  # raises for a day that does not exist
    return value


# An instant on the wire: RFC 3339 UTC to the second, e.g. 2026-07-01T13:00:00Z.
Instant = Annotated[
    str,
    StringConstraints(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"),
    AfterValidator(_existing_instant),
]


def instant_ms(value: str) -> int:
    """Epoch ms of an `Instant` (already validated)."""
    return int(_instant(value).timestamp() * 1000)

"""What every answer from Dee Wan is read as: strict shapes, extra fields ignored, frozen.

The Dee Wan client validates each §4–§5 answer against one of these models
before any of it is used; anything else is an untrusted answer.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints


class WireModel(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


def _existing_instant(value: str) -> str:
    datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")  # raises for a day that does not exist
    return value


# An instant on the wire: RFC 3339 UTC to the second, e.g. 2026-07-01T13:00:00Z.
Instant = Annotated[
    str,
    StringConstraints(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"),
    AfterValidator(_existing_instant),
]


def instant_ms(value: str) -> int:
    """Epoch ms of an `Instant` (already validated)."""
    moment = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


# strptime imports `_strptime` (and `calendar`) and compiles a pattern for each format on its
# first call: done at import, on a fixed day (no clock read), that is in a Worker's memory
# snapshot rather than in an isolate's first request (time_words.py does its format too).
_existing_instant("2000-01-01T00:00:00Z")

"""A `Retry-After` header read the one way, for Dee Wan's answers and endpoints' alike:
delta-seconds or an HTTP date, as the milliseconds to wait."""

from __future__ import annotations

import re
from datetime import UTC
from email.utils import parsedate_to_datetime

_DELTA_SECONDS = re.compile(r"[0-9]{1,10}")
_HTTP_DATE_MAX = 64


def parse_retry_after(value: str | None, *, now_ms: int) -> int | None:
    """Milliseconds to wait: delta-seconds (ASCII, at most 10 digits) or an HTTP date.

    None when absent or unusable; the runner then backs off as for a 5xx.
    """
    if value is None:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):
        return int(value) * 1000
    if len(value) > _HTTP_DATE_MAX or not value.isascii():
        return None
    try:
        when = parsedate_to_datetime(value)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0, int(when.timestamp() * 1000) - now_ms)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None

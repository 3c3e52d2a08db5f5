"""Time for the fake core: an adjustable epoch-ms clock and the wire time format.

Tests inject their own `Callable[[], int]`; the server wraps real time in an
`AdjustableClock` so the control API can move it without touching the OS.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import format_datetime

_RFC3339_Z = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


def real_ms() -> int:
    return int(time.time() * 1000)


class AdjustableClock:
    """Wraps a base clock with an offset that `advance`/`set` change."""

    def __init__(self, base: Callable[[], int] = real_ms) -> None:
        self._base = base
        self.offset_ms = 0

    def __call__(self) -> int:
        return self._base() + self.offset_ms

    def advance(self, ms: int) -> int:
        self.offset_ms += ms
        return self()

    def set(self, epoch_ms: int) -> int:
        self.offset_ms = epoch_ms - self._base()
        return self()

    def reset(self) -> None:
        self.offset_ms = 0


def readable(ms: int) -> str:
    """An instant for the home page's tables, in words a person reads (their column says UTC):
    the page writes time one way, as the plugin's pages do."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return f"{moment.day} {moment:%b %Y}, {moment:%H:%M:%S}"


def rfc3339(epoch_ms: int) -> str:
    """Whole seconds, UTC, `Z` suffix — the only time shape on the wire."""
    return datetime.fromtimestamp(epoch_ms // 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(value: object) -> int | None:
    """Epoch ms of a wire time, or None when it is not exactly the wire shape."""
    if not isinstance(value, str) or _RFC3339_Z.fullmatch(value) is None:
        return None
    try:
        parsed = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:  # e.g. month 13
        return None
    return int(parsed.timestamp()) * 1000


def http_date(epoch_ms: int) -> str:
    """An IMF-fixdate, as used by `Retry-After: <HTTP-date>`."""
    return format_datetime(datetime.fromtimestamp(epoch_ms // 1000, UTC), usegmt=True)

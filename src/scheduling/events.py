"""Structured log lines: one JSON object per line, for log search in Workers Logs or locally.

Fields are counts, ids and instants only; callers never pass a secret.
"""

from __future__ import annotations

import json
import logging
from typing import Any

events = logging.getLogger("scheduling.events")


def emit(event: str, **fields: Any) -> None:
    events.info(json.dumps({"event": event, **fields}, separators=(",", ":")))


def configure(stream: Any) -> None:
    """Print event lines bare (no level or logger prefix) so each line parses as JSON."""
    if events.handlers:
        return
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    events.addHandler(handler)
    events.setLevel(logging.INFO)
    events.propagate = False

"""What one attempt at a transition came to: the runner's decisions are made on these values."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class OutcomeKind(enum.Enum):
    COMPLETED = "completed"
    REFUSED = "refused"
    RETRY = "retry"


@dataclass(frozen=True)
class Outcome:
    kind: OutcomeKind
    code: str  # what the attempt row records
    http_status: int | None = None
    retry_after_ms: int | None = None  # only for 429 with a usable Retry-After


UNTRUSTED = "untrusted_response"

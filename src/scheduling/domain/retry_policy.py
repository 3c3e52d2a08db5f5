"""Whether a schedule may be attempted, and what happens to it after an attempt.

The caps are absolute: nothing is sent past `due_at + MAX_LATENESS_MS` or past
`MAX_ATTEMPTS`, and no retry is planned for a time that would break either.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from scheduling.config import Configuration
from scheduling.domain.outcomes import Outcome, OutcomeKind
from scheduling.domain.statuses import Status

BACKOFF_BASE_MS = 15_000
BACKOFF_CAP_MS = 300_000
RETRY_EXHAUSTED = "retry_exhausted"


@dataclass(frozen=True)
class Limits:
    max_attempts: int
    max_lateness_ms: int
    max_retry_after_ms: int
    lease_ms: int

    @classmethod
    def from_config(cls, config: Configuration) -> Limits:
        return cls(
            max_attempts=config.max_attempts,
            max_lateness_ms=config.max_lateness_ms,
            max_retry_after_ms=config.max_retry_after_ms,
            lease_ms=config.lease_ms,
        )


@dataclass(frozen=True)
class Settlement:
    status: Status  # completed, refused or retrying
    result_code: str
    next_attempt_at: int | None = None


REFUSED_LATE = Settlement(Status.REFUSED, RETRY_EXHAUSTED)


def too_late(*, due_at: int, now: int, limits: Limits) -> bool:
    """Past the lateness cap: checked before a claim and again right before the request leaves."""
    return now > due_at + limits.max_lateness_ms


def may_send(*, attempts_so_far: int, due_at: int, now: int, limits: Limits) -> bool:
    """Before a claim: is one more send allowed?"""
    return attempts_so_far < limits.max_attempts and not too_late(
        due_at=due_at, now=now, limits=limits
    )


def backoff_ms(attempt: int, rng: random.Random) -> int:
    """15 s·2^(attempt-1), capped at 5 min, then 50–100 % jitter."""
    base = min(BACKOFF_BASE_MS * 2 ** (max(attempt, 1) - 1), BACKOFF_CAP_MS)
    return int(base * rng.uniform(0.5, 1.0))


def after_attempt(
    outcome: Outcome, *, attempt: int, due_at: int, now: int, limits: Limits, rng: random.Random
) -> Settlement:
    """Where the schedule goes after attempt number `attempt` ended at `now` with `outcome`."""
    if outcome.kind is OutcomeKind.COMPLETED:
        return Settlement(Status.COMPLETED, outcome.code)
    if outcome.kind is OutcomeKind.REFUSED:
        return Settlement(Status.REFUSED, outcome.code)
    if attempt >= limits.max_attempts:
        return Settlement(Status.REFUSED, RETRY_EXHAUSTED)
    if outcome.retry_after_ms is not None:
        if outcome.retry_after_ms > limits.max_retry_after_ms:
            return Settlement(Status.REFUSED, RETRY_EXHAUSTED)
        next_at = now + outcome.retry_after_ms
    else:
        next_at = now + backoff_ms(attempt, rng)
    if too_late(due_at=due_at, now=next_at, limits=limits):
        return Settlement(Status.REFUSED, RETRY_EXHAUSTED)
    return Settlement(Status.RETRYING, outcome.code, next_at)

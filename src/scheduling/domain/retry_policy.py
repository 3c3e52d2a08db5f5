"""Whether a schedule may be attempted, and what happens to it after an attempt.

The caps are absolute: nothing is sent past `due_at + MAX_LATENESS_MS` or past
`MAX_ATTEMPTS`, and no retry is planned for a time that would break either.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from scheduling.domain.outcomes import RETRY_EXHAUSTED, EndedBy, Outcome, OutcomeKind
from scheduling.domain.statuses import Status

# The Runner table's backoff: 15 s·2^(n-1), capped at 5 min, then 50–100 % jitter.
BACKOFF_BASE_MS = 15_000
BACKOFF_CAP_MS = 300_000
JITTER = (0.5, 1.0)


@dataclass(frozen=True)
class Caps:
    """The limits a schedule's attempts live within."""

    max_attempts: int
    max_lateness_ms: int
    max_retry_after_ms: int
    lease_ms: int


@dataclass(frozen=True)
class Settlement:
    """Where a schedule stands after an attempt: its status and next attempt."""

    status: Status  # completed, refused or retrying; pending or retrying when handed back
    result_code: str | None  # None: the row keeps the code it had
    next_attempt_at: int | None = None
    ended_by: EndedBy | None = None  # which cap, when one ended it (`retry_exhausted`)


def exhausted(by: EndedBy) -> Settlement:
    return Settlement(Status.REFUSED, RETRY_EXHAUSTED, ended_by=by)


REFUSED_LATE = exhausted(EndedBy.LATENESS)


def handed_back(observed: Status, now: int) -> Settlement:
    """A claim that was never sent because the invocation reached a platform limit goes back
    to waiting as it was, due at once (its attempt is given back): pending stays pending, a
    retry or an expired lease waits as retrying, and its last code stays."""
    status = Status.PENDING if observed == Status.PENDING else Status.RETRYING
    return Settlement(status, None, now)


def too_late(*, due_at: int, now: int, caps: Caps) -> bool:
    """Past the lateness cap: checked before a claim and again right before the request leaves."""
    return now > due_at + caps.max_lateness_ms


def cap_reached(*, attempts_so_far: int, due_at: int, now: int, caps: Caps) -> EndedBy | None:
    """Before a claim: the cap that allows no more sends, or None while one more is allowed."""
    if attempts_so_far >= caps.max_attempts:
        return EndedBy.ATTEMPTS
    if too_late(due_at=due_at, now=now, caps=caps):
        return EndedBy.LATENESS
    return None


def may_send(*, attempts_so_far: int, due_at: int, now: int, caps: Caps) -> bool:
    """Before a claim: is one more send allowed?"""
    return cap_reached(attempts_so_far=attempts_so_far, due_at=due_at, now=now, caps=caps) is None


def backoff_ms(attempt: int, rng: random.Random) -> int:
    """15 s·2^(attempt-1), capped at 5 min, then 50–100 % jitter."""
    base = min(BACKOFF_BASE_MS * 2 ** (max(attempt, 1) - 1), BACKOFF_CAP_MS)
    return int(base * rng.uniform(*JITTER))


def after_attempt(
    outcome: Outcome, *, attempt: int, due_at: int, now: int, caps: Caps, rng: random.Random
) -> Settlement:
    """Where the schedule goes after attempt number `attempt` ended at `now` with `outcome`."""
    if outcome.kind is OutcomeKind.COMPLETED:
        return Settlement(Status.COMPLETED, outcome.code)
    if outcome.kind is OutcomeKind.REFUSED:
        return Settlement(Status.REFUSED, outcome.code)
    if attempt >= caps.max_attempts:
        return exhausted(EndedBy.ATTEMPTS)
    if outcome.retry_after_ms is not None:
        if outcome.retry_after_ms > caps.max_retry_after_ms:
            return exhausted(EndedBy.RETRY_AFTER)
        next_at = now + outcome.retry_after_ms
    else:
        next_at = now + backoff_ms(attempt, rng)
    if too_late(due_at=due_at, now=next_at, caps=caps):
        return exhausted(EndedBy.LATENESS)
    return Settlement(Status.RETRYING, outcome.code, next_at)

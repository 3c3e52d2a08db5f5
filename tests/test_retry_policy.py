"""The retry policy on known inputs: each cap at its exact edge (a Retry-After of exactly
MAX_RETRY_AFTER_MS is honoured, one millisecond more is not: issue 32's fourth gap), the
backoff for each attempt with the jitter drawn by a stand-in, and where every outcome sends
the schedule next."""

from __future__ import annotations

import random

import pytest

from scheduling.domain.outcomes import (
    DUE,
    REFUSED_LATE,
    RETRY_EXHAUSTED,
    Caps,
    EndedBy,
    Outcome,
    OutcomeKind,
    Settlement,
    Status,
    after_attempt,
    backoff_ms,
    cap_reached,
    handed_back,
    parse_retry_after,
    sql_list,
    too_late,
)

NOW = 1_782_900_000_000
CAPS = Caps(max_attempts=5, max_lateness_ms=900_000, max_retry_after_ms=300_000, lease_ms=60_000)
BUSY = Outcome(OutcomeKind.RETRY, "server_error", 503)
# Refused past a cap, and which cap ended it.
BY_ATTEMPTS = Settlement(Status.REFUSED, RETRY_EXHAUSTED, ended_by=EndedBy.ATTEMPTS)
BY_LATENESS = Settlement(Status.REFUSED, RETRY_EXHAUSTED, ended_by=EndedBy.LATENESS)
BY_RETRY_AFTER = Settlement(Status.REFUSED, RETRY_EXHAUSTED, ended_by=EndedBy.RETRY_AFTER)


class Jitter(random.Random):
    """Draws `factor` for the jitter, and remembers the range it was asked for."""

    def __init__(self, factor: float) -> None:
        super().__init__(0)
        self.factor = factor
        self.asked: list[tuple[float, float]] = []

    def uniform(self, a: float, b: float) -> float:
        self.asked.append((a, b))
        return self.factor


def test_too_late_is_strictly_past_the_lateness_cap() -> None:
    assert not too_late(due_at=NOW, now=NOW, caps=CAPS)
    assert not too_late(due_at=NOW, now=NOW + 900_000, caps=CAPS)
    assert too_late(due_at=NOW, now=NOW + 900_001, caps=CAPS)


@pytest.mark.parametrize(
    ("attempt", "base"),
    [
        (-3, 15_000),  # never below the first step
        (0, 15_000),
        (1, 15_000),
        (2, 30_000),
        (3, 60_000),
        (4, 120_000),
        (5, 240_000),
        (6, 300_000),  # capped at five minutes
        (30, 300_000),
    ],
)
def test_backoff_doubles_from_15_s_to_a_cap_of_5_min_then_jitters(attempt: int, base: int) -> None:
    for factor, expected in ((1.0, base), (0.5, base // 2), (0.75, base * 3 // 4)):
        rng = Jitter(factor)
        assert backoff_ms(attempt, rng) == expected
        assert rng.asked == [(0.5, 1.0)]


@pytest.mark.parametrize("attempt", [1, 5, 6])
def test_an_answer_that_ends_it_ends_it_whatever_the_attempt(attempt: int) -> None:
    done = Outcome(OutcomeKind.COMPLETED, "transition_applied", 200)
    refused = Outcome(OutcomeKind.REFUSED, "workflow_conflict", 409)
    for outcome, status in ((done, Status.COMPLETED), (refused, Status.REFUSED)):
        plan = after_attempt(
            outcome, attempt=attempt, due_at=NOW, now=NOW, caps=CAPS, rng=Jitter(1)
        )
        assert plan == Settlement(status, outcome.code)


def plan(outcome: Outcome, *, attempt: int = 1, now: int = NOW, factor: float = 1.0) -> Settlement:
    return after_attempt(
        outcome, attempt=attempt, due_at=NOW, now=now, caps=CAPS, rng=Jitter(factor)
    )


def test_a_retry_waits_its_backoff_until_the_last_attempt() -> None:
    assert plan(BUSY) == Settlement(Status.RETRYING, "server_error", NOW + 15_000)
    assert plan(BUSY, attempt=4, factor=0.5) == Settlement(
        Status.RETRYING, "server_error", NOW + 60_000
    )
    assert plan(BUSY, attempt=5) == BY_ATTEMPTS
    assert plan(BUSY, attempt=6) == BY_ATTEMPTS


def retry_after(ms: int) -> Outcome:
    return Outcome(OutcomeKind.RETRY, "rate_limited", 429, ms)


def test_retry_after_is_honoured_up_to_and_including_its_cap() -> None:
    assert plan(retry_after(0)) == Settlement(Status.RETRYING, "rate_limited", NOW)
    assert plan(retry_after(1)) == Settlement(Status.RETRYING, "rate_limited", NOW + 1)
    assert plan(retry_after(300_000)) == Settlement(Status.RETRYING, "rate_limited", NOW + 300_000)
    assert plan(retry_after(300_001)) == BY_RETRY_AFTER
    assert plan(retry_after(120_000), attempt=5) == BY_ATTEMPTS


def test_no_retry_is_planned_past_the_lateness_cap() -> None:
    # The next try may land exactly on the cap, not a millisecond after it.
    assert plan(BUSY, now=NOW + 885_000) == Settlement(
        Status.RETRYING, "server_error", NOW + 900_000
    )
    assert plan(BUSY, now=NOW + 885_001) == BY_LATENESS
    assert plan(retry_after(300_000), now=NOW + 600_000) == Settlement(
        Status.RETRYING, "rate_limited", NOW + 900_000
    )
    assert plan(retry_after(300_000), now=NOW + 600_001) == BY_LATENESS


@pytest.mark.parametrize(
    ("observed", "waits_as"),
    [
        (Status.PENDING, Status.PENDING),
        (Status.RETRYING, Status.RETRYING),
        (Status.RUNNING, Status.RETRYING),  # an expired lease it took over
    ],
)
def test_a_claim_never_sent_waits_again_due_at_once(observed: Status, waits_as: Status) -> None:
    assert handed_back(observed, NOW + 5) == Settlement(waits_as, None, NOW + 5)


def test_the_cap_that_allows_no_more_sends_is_named() -> None:
    def cap(attempts: int, now: int) -> EndedBy | None:
        return cap_reached(attempts_so_far=attempts, due_at=NOW, now=now, caps=CAPS)

    assert cap(0, NOW) is None
    assert cap(4, NOW + 900_000) is None
    assert cap(5, NOW) == EndedBy.ATTEMPTS
    assert cap(5, NOW + 900_001) == EndedBy.ATTEMPTS  # the tries are said first
    assert cap(0, NOW + 900_001) == EndedBy.LATENESS
    assert REFUSED_LATE == BY_LATENESS


def test_retry_after_is_delta_seconds_or_an_http_date() -> None:
    at = "Wed, 01 Jul 2026 10:01:30"  # 90 s after NOW; without a zone, read as UTC
    waits = {
        " 120 ": 120_000,
        f"{at} GMT": 90_000,
        at: 90_000,
        at.replace(" ", " " * 40, 1): 90_000,  # 64 characters: the longest read
        at.replace(" ", " " * 41, 1): None,
        at.replace(" ", "\u00a0"): None,  # not ASCII
        "Wed, 01 Jul 2026 09:00:00 GMT": 0,  # already past
        "soon": None,
    }
    assert {value: parse_retry_after(value, now_ms=NOW) for value in waits} == waits


def test_a_group_is_sql_text_of_its_stored_statuses() -> None:
    assert sql_list(DUE) == "('pending', 'retrying')"

"""The tick's retention purge: finished schedules (with their attempts, and the proposals
they came from) and delivered or failed deliveries that ended more than `RETENTION_DAYS` ago
are deleted, and what agents made that ended more than `ENDED_KEPT_MS` ago (keys, proposals
never confirmed), a bounded step at a time, after the tick's sends and deliveries and before
its record.

Each step is one round trip of a few statements over at most `STEP_ROWS` rows of each
kind; a tick takes at most `MAX_STEPS`, starts none after `MAX_PURGE_MS` of purging, and
only while its budget (time, D1 statements, the record's kept aside) allows one more. A
backlog (the first purge of a long-lived database) is worked off over many ticks;
afterwards a tick finds what ended a minute's worth ago, usually nothing, for one
statement-light round trip. The runner's own reads go through the partial indexes of live
rows, which the purge never touches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scheduling.events import emit
from scheduling.ports import LimitReached
from scheduling.repository import retention
from scheduling.repository.agent_keys import ENDED_KEPT_MS
from scheduling.repository.round_trips import RoundTrips
from scheduling.runner.budget import Budget
from scheduling.services import Services

DAY_MS = 86_400_000
# Rows of each kind one step deletes, the steps one tick takes at most, and the time after
# which it starts no more: up to 5,000 schedules a tick (7 million a day). Rows go in the
# order of their index, not their keys, so each costs a few random pages of writes: a step
# of 100 holds D1's one writer for a fraction of a second (bench/retention_bench.py), and
# the purge leaves most of every minute to the rest.
STEP_ROWS = 100
MAX_STEPS = 50
MAX_PURGE_MS = 5_000


@dataclass
class PurgeReport:
    """What one retention purge removed."""

    steps: int = 0
    schedules: int = 0
    attempts: int = 0
    deliveries: int = 0
    proposals: int = 0
    agent_keys: int = 0


async def purge(
    services: Services,
    trips: RoundTrips,
    budget: Budget,
    *,
    now: int,
    elapsed_ms: Callable[[], int],
) -> PurgeReport:
    """Steps while there is more to purge, the budget allows one more and `MAX_STEPS` are
    not taken; logs one `retention_purged` line when anything went. Each step is a round
    trip of the invocation's (`trips`, which counts it)."""
    cutoff = now - services.config.retention_days * DAY_MS
    agents_cutoff = max(cutoff, now - ENDED_KEPT_MS)  # the sooner of the two
    report = PurgeReport()
    started = elapsed_ms()
    while (
        report.steps < MAX_STEPS
        and elapsed_ms() - started < MAX_PURGE_MS
        and budget.allows(
            elapsed_ms=elapsed_ms(), statements=trips.statements + retention.STEP_STATEMENTS
        )
    ):
        try:
            results = await trips.send(retention.step(trips.db, cutoff, STEP_ROWS, agents_cutoff))
        except LimitReached:
            break  # the invocation may send D1 nothing more; the rest waits for a tick
        step = retention.purged(results)
        report.steps += 1
        report.schedules += step.schedules
        report.attempts += step.attempts
        report.deliveries += step.deliveries
        report.proposals += step.proposals
        report.agent_keys += step.agent_keys
        if max(step.schedules, step.deliveries, step.proposals, step.agent_keys) < STEP_ROWS:
            break  # nothing more past the window
    if report.schedules or report.deliveries or report.proposals or report.agent_keys:
        emit(
            "retention_purged",
            retention_days=services.config.retention_days,
            steps=report.steps,
            schedules=report.schedules,
            attempts=report.attempts,
            deliveries=report.deliveries,
            proposals=report.proposals,
            agent_keys=report.agent_keys,
        )
    return report

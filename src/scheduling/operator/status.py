"""Is the runner alive, and what the operator page shows: the last tick and the work waiting,
the one rule that says the runner has stalled (for /admin/status, /healthz and
/admin/metrics), and the tick history of the last 24 hours and 7 days, grouped into slots and
read in one round trip.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from scheduling.domain.outcomes import FINISHED, LIVE
from scheduling.domain.times import BUCKET_COLUMNS, rfc3339
from scheduling.ports import Database, Result, Row, Statement
from scheduling.repository import history, releases
from scheduling.repository.history import (
    Backlog,
    InstallationLine,
    LastTick,
    RecentRefusal,
    Retrying,
)
from scheduling.repository.releases import HeldRelease
from scheduling.runner.engine import TickReport

# -- the runner's health ---------------------------------------------------------------------------

# Three missed minutes: one late cron firing is normal, three in a row is not.
STALL_AFTER_MS = 3 * 60_000
FINISHED_WINDOW_MS = 24 * 60 * 60_000
CODE_BEHIND_DATABASE = "code_behind_database"


async def read_status(db: Database, now: int) -> dict[str, Any]:
    """The operator's status at `now`, read in one D1 round trip."""
    return _status(
        now, *await db.batch([*_status_reads(db, now), history.read_unknown_migrations(db)])
    )


def _status_reads(db: Database, now: int) -> list[Statement]:
    return [
        history.read_last(db),
        history.read_backlog(db, now),
        history.read_counts(db, now - FINISHED_WINDOW_MS),
    ]


def _status(
    now: int, last: Result, waiting: Result, counts: Result, unknown: Result
) -> dict[str, Any]:
    return status_json(
        now,
        history.last_from(last.results),
        history.backlog_from(waiting.results),
        history.counts_from(counts.results),
        history.unknown_migrations_from(unknown.results),
    )


def is_stalled(now: int, last_tick_at: int | None, work_due: bool) -> bool:
    """Work is due and no tick has run to its end for over STALL_AFTER_MS (a failed tick
    does not count: ticks that keep failing leave the work waiting all the same)."""
    return work_due and (last_tick_at is None or now - last_tick_at > STALL_AFTER_MS)


async def read_health(db: Database, now: int) -> str:
    """/healthz's status: `ok`, `stalled`, or `code_behind_database` (the database has
    migrations this code does not know, so its runner does not run); one statement that
    reads only indexes."""
    [result] = await db.batch([history.read_health(db, now)])
    health = history.health_from(result.results)
    if health.code_behind:
        return CODE_BEHIND_DATABASE
    return "stalled" if is_stalled(now, health.last_at, health.work_due) else "ok"


def status_json(
    now: int,
    last: LastTick | None,
    backlog: Backlog,
    counts: dict[str, int],
    unknown_migrations: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "code": "runner_status",
        "now": rfc3339(now),
        # The migrations the database has and this code does not know: its runner refuses.
        "code_behind_database": unknown_migrations or [],
        "stalled": is_stalled(now, None if last is None else last.at, backlog.size > 0),
        "stalled_after_ms": STALL_AFTER_MS,
        "last_tick": None if last is None else _tick_json(now, last),
        "due_backlog": backlog.size,
        "oldest_overdue": _oldest_json(now, backlog),
        "schedules": {status: counts.get(status, 0) for status in LIVE},
        "finished_last_24h": {status: counts.get(status, 0) for status in FINISHED},
    }


def _tick_json(now: int, last: LastTick) -> dict[str, Any]:
    report = TickReport.from_record(last.report)
    deliveries = {  # notifications of every channel kind
        "events": report.delivery_events,
        "sends": report.delivery_sends,
        "delivered": report.deliveries_delivered,
        "retrying": report.deliveries_retrying,
        "failed": report.deliveries_failed,
        "lost_lease": report.delivery_lost_lease,
        "delay_max_ms": report.delivery_delay_max_ms,
    }
    return {
        "at": rfc3339(last.at),
        "age_ms": max(0, now - last.at),
        "cron_delay_ms": report.cron_delay_ms,
        "duration_ms": last.duration_ms,
        "due": report.due,
        "claimed": report.claimed,
        "batches": report.batches,
        "sends": report.sends,
        "outcomes": report.outcomes(),
        "refused_unsent": report.refused_unsent,
        "refused_unsent_late": report.refused_unsent_late,
        "lost_claim": report.lost_claim,
        "lost_lease": report.lost_lease,
        "lateness_ms": {"p50": report.lateness_p50_ms, "max": report.lateness_max_ms},
        "d1": {"statements": report.d1_statements, "round_trips": report.d1_round_trips},
        "deliveries": deliveries,
        "webhooks": deliveries,  # deprecated: its name before every channel kind, one release
    }


def _oldest_json(now: int, backlog: Backlog) -> dict[str, Any] | None:
    if backlog.oldest_id is None or backlog.oldest_due_at is None:
        return None
    return {
        "schedule_id": backlog.oldest_id,
        "installation_id": backlog.oldest_installation_id,
        "due_at": rfc3339(backlog.oldest_due_at),
        "age_ms": max(0, now - backlog.oldest_due_at),
    }


# -- the operator page's read ----------------------------------------------------------------------

MINUTE_MS = 60_000


@dataclass(frozen=True)
class WindowShape:
    name: str
    label: str
    span_ms: int
    slot_ms: int

    def bounds(self, now: int) -> tuple[int, int]:
        """[since, until): ends at the end of the slot `now` is in, so slots fall on the clock."""
        until = (now // self.slot_ms + 1) * self.slot_ms
        return until - self.span_ms, until

    @property
    def slots(self) -> int:
        return self.span_ms // self.slot_ms


DAY = WindowShape("day", "Last 24 hours", 24 * 60 * MINUTE_MS, 10 * MINUTE_MS)
WEEK = WindowShape("week", "Last 7 days", 7 * 24 * 60 * MINUTE_MS, 60 * MINUTE_MS)


@dataclass(frozen=True)
class Slot:
    """The invocations recorded in one slot of a window: the worst of each gauge, the sum of
    each count."""

    start: int
    invocations: int
    ticks: int  # the cron's (the others are clocks' alarms)
    failed: int
    backlog: int
    cron_delay_ms: int
    lateness_p50_ms: int
    lateness_max_ms: int
    sends: int
    completed: int
    refused: int
    retrying: int
    refused_unsent: int
    lateness_sum_ms: int
    lateness_buckets: tuple[int, ...]  # cumulative, at `times.BOUNDS_MS`
    # With an alarm clock per installation: its wake-ups, the latest send they made, and
    # what the watchdog ticks caught (schedules no clock took, clocks asleep past them).
    alarms: int = 0
    alarm_lateness_max_ms: int = 0
    caught: int = 0
    clocks_rearmed: int = 0
    backstops: int = 0  # ticks a request ran because the cron had stopped


@dataclass(frozen=True)
class Window:
    shape: WindowShape
    since: int
    until: int
    slots: tuple[Slot | None, ...]  # None: no invocation recorded in that slot


@dataclass(frozen=True)
class OperatorView:
    now: int
    status: dict[str, Any]  # what /admin/status answers
    max_lateness_ms: int
    windows: tuple[Window, ...]
    refusals: tuple[RecentRefusal, ...]
    installations: tuple[InstallationLine, ...]
    releases: dict[str, int] = field(default_factory=dict)  # by stored status
    held: tuple[HeldRelease, ...] = ()  # the longest held first
    retrying: tuple[Retrying, ...] = ()


async def read_operator_view(db: Database, now: int, max_lateness_ms: int) -> OperatorView:
    shapes = (DAY, WEEK)
    bounds = [shape.bounds(now) for shape in shapes]
    results = await db.batch(
        [
            *_status_reads(db, now),
            *(
                history.read_series(db, since, until, shape.slot_ms)
                for shape, (since, until) in zip(shapes, bounds, strict=True)
            ),
            history.read_recent_refusals(db),
            history.read_installations(db, now - FINISHED_WINDOW_MS),
            history.read_unknown_migrations(db),
            releases.read_counts(db),
            releases.read_held(db),
            history.read_retrying(db),
        ]
    )
    *head, refusals, installations, unknown, by_status, held, retrying = results
    last, waiting, counts, *series = head
    return OperatorView(
        now=now,
        status=_status(now, last, waiting, counts, unknown),
        max_lateness_ms=max_lateness_ms,
        windows=tuple(
            _window(shape, since, until, result.results)
            for shape, (since, until), result in zip(shapes, bounds, series, strict=True)
        ),
        refusals=history.refusals_from(refusals.results),
        installations=history.installations_from(installations.results),
        releases=releases.counts_from(by_status.results),
        held=releases.held_from(held.results),
        retrying=history.retrying_from(retrying.results),
    )


def _window(shape: WindowShape, since: int, until: int, rows: list[Row]) -> Window:
    slots: list[Slot | None] = [None] * shape.slots
    for row in rows:
        index = int(row["slot"])
        if 0 <= index < shape.slots:
            slots[index] = _slot(since + index * shape.slot_ms, row)
    return Window(shape, since, until, tuple(slots))


def _slot(start: int, row: Row) -> Slot:
    """The slot's row: each of its columns a whole number (SQL's sum of no rows is NULL)."""
    counts = {name: int(row[name] or 0) for name in _SLOT_COUNTS}
    buckets = tuple(int(row[column] or 0) for column in BUCKET_COLUMNS)
    return Slot(start=start, lateness_buckets=buckets, **counts)


_SLOT_COUNTS = tuple(f.name for f in fields(Slot) if f.name not in ("start", "lateness_buckets"))

"""What the operator page shows, read in one D1 round trip: the runner's status now, the tick
history of the last 24 hours and the last 7 days in slots, the schedules that will try again,
the latest refusals, the installations that need a look, and the releases by status with the
held ones.

A window of the history comes back already grouped into slots (10 minutes for a day, an
hour for a week): the worst of each gauge and the sum of each count per slot, so 10,080
ticks are read as 168 rows, and a failed tick or a gap in the cron stays visible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduling.domain.lateness import BUCKET_COLUMNS
from scheduling.operator.health import FINISHED_WINDOW_MS, status_json
from scheduling.ports import Database, Row
from scheduling.repository import backlog, operator_queries, releases, tick_history
from scheduling.repository.operator_queries import InstallationLine, RecentRefusal, Retrying
from scheduling.repository.releases import HeldRelease

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
    lateness_buckets: tuple[int, ...]  # cumulative, at `lateness.BOUNDS_MS`
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
            tick_history.read_last(db),
            backlog.read_backlog(db, now),
            backlog.read_counts(db, now - FINISHED_WINDOW_MS),
            *(
                tick_history.read_series(db, since, until, shape.slot_ms)
                for shape, (since, until) in zip(shapes, bounds, strict=True)
            ),
            operator_queries.read_recent_refusals(db),
            operator_queries.read_installations(db, now - FINISHED_WINDOW_MS),
            tick_history.read_unknown_migrations(db),
            releases.read_counts(db),
            releases.read_held(db),
            operator_queries.read_retrying(db),
        ]
    )
    *head, refusals, installations, unknown, by_status, held, retrying = results
    last, waiting, counts, *series = head
    return OperatorView(
        now=now,
        status=status_json(
            now,
            tick_history.last_from(last.results),
            backlog.backlog_from(waiting.results),
            backlog.counts_from(counts.results),
            tick_history.unknown_migrations_from(unknown.results),
        ),
        max_lateness_ms=max_lateness_ms,
        windows=tuple(
            _window(shape, since, until, result.results)
            for shape, (since, until), result in zip(shapes, bounds, series, strict=True)
        ),
        refusals=operator_queries.refusals_from(refusals.results),
        installations=operator_queries.installations_from(installations.results),
        releases=releases.counts_from(by_status.results),
        held=releases.held_from(held.results),
        retrying=operator_queries.retrying_from(retrying.results),
    )


def _window(shape: WindowShape, since: int, until: int, rows: list[Row]) -> Window:
    slots: list[Slot | None] = [None] * shape.slots
    for row in rows:
        index = int(row["slot"])
        if 0 <= index < shape.slots:
            slots[index] = _slot(since + index * shape.slot_ms, row)
    return Window(shape, since, until, tuple(slots))


def _slot(start: int, row: Row) -> Slot:
    def n(name: str) -> int:
        return int(row[name] or 0)

    return Slot(
        start=start,
        invocations=n("invocations"),
        ticks=n("ticks"),
        failed=n("failed"),
        backlog=n("backlog"),
        cron_delay_ms=n("cron_delay_ms"),
        lateness_p50_ms=n("lateness_p50_ms"),
        lateness_max_ms=n("lateness_max_ms"),
        sends=n("sends"),
        completed=n("completed"),
        refused=n("refused"),
        retrying=n("retrying"),
        refused_unsent=n("refused_unsent"),
        lateness_sum_ms=n("lateness_sum_ms"),
        lateness_buckets=tuple(n(column) for column in BUCKET_COLUMNS),
        alarms=n("alarms"),
        alarm_lateness_max_ms=n("alarm_lateness_max_ms"),
        caught=n("caught"),
        clocks_rearmed=n("clocks_rearmed"),
        backstops=n("backstops"),
    )

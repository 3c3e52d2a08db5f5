"""One invocation of the runner, a cron tick or a clock's alarm: its instant and clock, its
engine over one budget, its stores, and its record written last (its row of the tick history
and the totals it adds to, in one round trip) with its log line. A failed invocation records
its row too, with the exception's type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from scheduling.domain.times import BOUNDS_MS, BUCKET_COLUMNS, rfc3339
from scheduling.limits import RECORD_STATEMENTS
from scheduling.ports import Clock, Database, LimitReached, Statement, emit
from scheduling.repository.history import (
    read_unknown_migrations,
    unknown_migrations_from,
    write_record,
)
from scheduling.repository.leases import Leases
from scheduling.repository.outbox import Outbox
from scheduling.repository.round_trips import RoundTrips
from scheduling.runner.deliveries import DeliveryWork
from scheduling.runner.engine import Budget, Engine, TickReport
from scheduling.runner.sends import RowSource, SendWork
from scheduling.services import Services, log

# -- the record ------------------------------------------------------------------------------------

# The running totals' series names (runner_totals.name); /admin/metrics reads them back.
SENDS = "sends:"  # + completed | refused | retrying
REFUSALS = "refusals:"  # + result code
REFUSED_UNSENT_LATE = "refused_unsent:late"
REFUSED_UNSENT_OTHER = "refused_unsent:other"
LOST_CLAIMS = "lost_claims"
LOST_LEASES = "lost_leases"
LIMIT_REACHED = "limit_reached"
LATENESS_LE = "lateness_le:"  # + bound in ms
LATENESS_COUNT = "lateness_count"
LATENESS_SUM_MS = "lateness_sum_ms"
# Notifications of every channel kind (migration 0018 renamed the `webhook_` series).
DELIVERY_EVENTS = "delivery_events"  # outbox rows written with settles
DELIVERIES = "deliveries:"  # + delivered | retrying | failed
DELIVERY_LOST_LEASES = "delivery_lost_leases"
# With an alarm clock per installation: the ticks that ran as its watchdog, and what they
# caught ("schedules" no clock took, "clocks" asleep past what they had due).
WATCHDOG_TICKS = "watchdog_ticks"
WATCHDOG_CAUGHT = "watchdog_caught:"  # + schedules | clocks


def invocations(kind: str) -> str:
    return f"ticks:{kind}"


def failed_invocations(kind: str) -> str:
    return f"ticks_failed:{kind}"


def columns(report: TickReport) -> dict[str, int]:
    """The history row's counts: the report's fields and its lateness histogram."""
    row = report.as_record()
    row["lateness_sum_ms"] = report.lateness_sum_ms()
    row.update(zip(BUCKET_COLUMNS, report.lateness_buckets(), strict=True))
    return row


def totals(kind: str, report: TickReport, *, failed: bool) -> dict[str, int]:
    """What this invocation adds to each counter series (never negative)."""
    added = {
        invocations(kind): 1,
        failed_invocations(kind): int(failed),
        SENDS + "completed": report.completed,
        SENDS + "refused": report.refused,
        SENDS + "retrying": report.retrying,
        REFUSED_UNSENT_LATE: report.refused_unsent_late,
        REFUSED_UNSENT_OTHER: report.refused_unsent,
        LOST_CLAIMS: report.lost_claim,
        LOST_LEASES: report.lost_lease,
        LIMIT_REACHED: report.limit_reached,
        LATENESS_COUNT: report.sends,
        LATENESS_SUM_MS: report.lateness_sum_ms(),
        DELIVERY_EVENTS: report.delivery_events,
        DELIVERIES + "delivered": report.deliveries_delivered,
        DELIVERIES + "retrying": report.deliveries_retrying,
        DELIVERIES + "failed": report.deliveries_failed,
        DELIVERY_LOST_LEASES: report.delivery_lost_lease,
        WATCHDOG_TICKS: report.watchdog,
        WATCHDOG_CAUGHT + "schedules": report.caught,
        WATCHDOG_CAUGHT + "clocks": report.clocks_rearmed,
    }
    added.update(
        (LATENESS_LE + str(bound), n)
        for bound, n in zip(BOUNDS_MS, report.lateness_buckets(), strict=True)
    )
    added.update((REFUSALS + code, n) for code, n in report.refusals().items())
    return added


def record(
    db: Database,
    *,
    kind: str,
    at: int,
    duration_ms: int,
    ended_at: int,
    report: TickReport,
    error: BaseException | None = None,
) -> list[Statement]:
    """The statements that record one invocation (`limits.RECORD_STATEMENTS` of them), for
    the invocation's last round trip. `error`: the exception a failed one ended with; only
    its type is kept (a message could quote a row)."""
    return write_record(
        db,
        at=at,
        kind=kind,
        error=None if error is None else type(error).__name__,
        duration_ms=duration_ms,
        ended_at=ended_at,
        counts=columns(report),
        totals=totals(kind, report, failed=error is not None),
    )


# -- the invocation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Invocation:
    """A cron invocation: the minute it stands for, and the wall clock when it began.

    Workers bounds neither how late an invocation is delivered nor how far its
    `scheduledTime` then lies behind the real time, so the tick's instant is the later
    of the two: a late delivery can never make a late send look on time.
    """

    scheduled_time: int
    started: int

    @classmethod
    def begin(cls, clock: Clock, scheduled_time: int) -> Invocation:
        return cls(scheduled_time, clock.now_ms())

    @property
    def at(self) -> int:
        """The tick's instant (epoch ms)."""
        return max(self.scheduled_time, self.started)

    @property
    def cron_delay_ms(self) -> int:
        """How late the invocation was delivered (0 when on time or early)."""
        return max(0, self.started - self.scheduled_time)


# How long an isolate trusts that its code knows every migration of its database.
SCHEMA_RECHECK_MS = 5 * 60_000


class CodeBehindDatabase(Exception):
    """The database has migrations this code does not know: newer code migrated it (or a
    deploy migrated it, then failed to upload the code). The runner does not run on it, so
    no row is written that the newer schema reads differently."""


async def refuse_if_code_behind(services: Services, now: int) -> bool:
    """Raise `CodeBehindDatabase`, saying so in the log, when the database lists a migration
    this code does not know. Read once in five minutes per process or isolate; True when it
    read (one D1 statement of the invocation's). With no D1 query left it reads nothing, and
    the invocation writes nothing either."""
    known_at = services.schema_known_at
    if known_at is not None and 0 <= now - known_at < SCHEMA_RECHECK_MS:
        return False
    try:
        [result] = await services.db.batch([read_unknown_migrations(services.db)])
    except LimitReached:
        return False
    unknown = unknown_migrations_from(result.results)
    if unknown:
        services.schema_known_at = None
        emit("runner_refused_code_behind_database", unknown_migrations=unknown)
        raise CodeBehindDatabase(f"the database has migrations this code does not know: {unknown}")
    services.schema_known_at = now
    return True


class RunnerInvocation:
    """What a tick and an alarm share; each says what its work is."""

    kind: ClassVar[str]  # its rows in the tick history: "tick" or "alarm"
    log_event: ClassVar[str]  # its log line

    def __init__(
        self,
        services: Services,
        invocation: Invocation,
        report: TickReport,
        *,
        cap: int | None = None,
    ) -> None:
        self.services = services
        self.now = invocation.at
        self.started = invocation.started
        self.cap = cap
        self.trips = RoundTrips(services.db)
        self.outbox = Outbox(self.trips)
        self.leases = Leases(self.trips, self.outbox)
        self.report = report
        self.engine = Engine(
            services,
            self.trips,
            report,
            self.clock,
            now=self.now,
            budget=Budget.of(services, reserved_queries=RECORD_STATEMENTS),
        )

    def clock(self) -> int:
        """The invocation's instant advanced by the real time spent since it began.

        Every decision within it reads this: lateness, leases, retries.
        """
        return self.now + max(0, self.services.clock.now_ms() - self.started)

    def elapsed_ms(self) -> int:
        return self.clock() - self.now

    async def run(self) -> TickReport:
        if await refuse_if_code_behind(self.services, self.started):
            # Its read is the invocation's too: the work has one D1 query less (the report
            # counts the work's own).
            self.engine.budget.reserved_queries += 1
        try:
            await self._work()
            await self._write_record()
        except Exception as error:
            await self._record_failure(error)
            raise
        at, took = rfc3339(self.now), self.elapsed_ms()
        emit(self.log_event, at=at, duration_ms=took, **self._log_fields(), **self._counts())
        return self.report

    async def _work(self) -> None:
        raise NotImplementedError

    def _log_fields(self) -> dict[str, Any]:
        """What its log line says besides its counts."""
        return {}

    async def _send(self, source: RowSource, *, last_sent_later: bool = False) -> None:
        """The schedules `source` gives, claimed, sent and settled; then the installations'
        latest sends its settles left to note (`SendWork.latest`), noted."""
        work = SendWork(
            self.engine, self.leases, source, cap=self.cap, last_sent_later=last_sent_later
        )
        await self.engine.run(work)
        try:
            await self.leases.note_last_sent(work.latest)
        except LimitReached as limit:
            self.engine.reached(limit)

    async def _deliver(self, named: Sequence[str] | None = None) -> DeliveryWork | None:
        """The notifications due (only `named`, when given), after every send of the
        invocation (transitions first), through the same slots; none once a platform limit
        has stopped it."""
        if self.engine.limit is not None:
            return None
        if named is None and not self.outbox.due(self.clock()):
            return None
        work = DeliveryWork(self.engine, self.outbox, named)
        await self.engine.run(work)
        return work

    async def _write_record(self) -> None:
        try:
            await self.trips.record(self._record, RECORD_STATEMENTS)
        except LimitReached as limit:  # its work is settled; only its row is lost
            self.engine.reached(limit)

    def _counts(self) -> dict[str, int]:
        self.report.delivery_events = self.outbox.events_written
        self.report.d1_statements = self.trips.statements
        self.report.d1_round_trips = self.trips.round_trips
        return self.report.as_record()

    def _record(self, error: BaseException | None = None) -> list[Statement]:
        """The invocation's record, built last so it counts the round trip that carries it."""
        self._counts()
        return record(
            self.trips.db,
            kind=self.kind,
            at=self.now,
            duration_ms=self.elapsed_ms(),
            ended_at=self.clock(),
            report=self.report,
            error=error,
        )

    async def _record_failure(self, error: BaseException) -> None:
        """A failed invocation's row: what it counted before it failed, and the exception's
        type. When the database is what failed, this fails too: the log line says so."""
        try:
            await self.trips.record(lambda: self._record(error), RECORD_STATEMENTS)
        except Exception as also:
            log.warning("the failed %s could not be recorded: %s", self.kind, type(also).__name__)

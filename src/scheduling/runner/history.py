"""Recording an invocation of the runner: its row of the tick history and what it adds to the
running totals, in the write it sends last.

Any invocation calls this with its report: the cron's tick (`kind` "tick") and each alarm of an
installation's clock ("alarm"). A failed invocation records its row too, with the exception's
type and what it had counted before it failed.
"""

from __future__ import annotations

from scheduling.domain.lateness import BOUNDS_MS, BUCKET_COLUMNS
from scheduling.ports import Database, Statement
from scheduling.repository import tick_history
from scheduling.runner.report import TickReport

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
    return tick_history.write(
        db,
        at=at,
        kind=kind,
        error=None if error is None else type(error).__name__,
        duration_ms=duration_ms,
        ended_at=ended_at,
        counts=columns(report),
        totals=totals(kind, report, failed=error is not None),
    )

"""Is the runner alive? The operator's view of the last tick and the work waiting for it, and
the one rule that says it has stalled (for /admin/status, /healthz and /admin/metrics)."""

from __future__ import annotations

from typing import Any

from scheduling.domain.localtime import rfc3339
from scheduling.domain.statuses import FINISHED, LIVE
from scheduling.ports import Database
from scheduling.repository import backlog, tick_history
from scheduling.repository.backlog import Backlog
from scheduling.repository.tick_history import LastTick
from scheduling.runner.report import TickReport

# Three missed minutes: one late cron firing is normal, three in a row is not.
STALL_AFTER_MS = 3 * 60_000
FINISHED_WINDOW_MS = 24 * 60 * 60_000
CODE_BEHIND_DATABASE = "code_behind_database"


async def read_status(db: Database, now: int) -> dict[str, Any]:
    """The operator's status at `now`, read in one D1 round trip."""
    last, waiting, counts, unknown = await db.batch(
        [
            tick_history.read_last(db),
            backlog.read_backlog(db, now),
            backlog.read_counts(db, now - FINISHED_WINDOW_MS),
            tick_history.read_unknown_migrations(db),
        ]
    )
    return status_json(
        now,
        tick_history.last_from(last.results),
        backlog.backlog_from(waiting.results),
        backlog.counts_from(counts.results),
        tick_history.unknown_migrations_from(unknown.results),
    )


def is_stalled(now: int, last_tick_at: int | None, work_due: bool) -> bool:
    """Work is due and no tick has run to its end for over STALL_AFTER_MS (a failed tick
    does not count: ticks that keep failing leave the work waiting all the same)."""
    return work_due and (last_tick_at is None or now - last_tick_at > STALL_AFTER_MS)


async def read_health(db: Database, now: int) -> str:
    """/healthz's status: `ok`, `stalled`, or `code_behind_database` (the database has
    migrations this code does not know, so its runner does not run); one statement that
    reads only indexes."""
    [result] = await db.batch([tick_history.read_health(db, now)])
    health = tick_history.health_from(result.results)
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

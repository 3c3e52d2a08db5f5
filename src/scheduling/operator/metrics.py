"""What /admin/metrics exposes, as data: every metric family with its help text and samples,
read in one D1 round trip.

Gauges are read now (the backlog, live rows, the last tick). Counters and the lateness
histogram come from the running totals (`runner_totals`), which only ever grow: each
invocation adds to them in the same write as its history row, and pruning the history
never lowers them, so no counter decreases between two scrapes. Label values come from
fixed sets (statuses, outcomes, the plugin's result codes), never from what a stranger
sent, so the series stay few.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduling.domain.outcomes import LIVE, REFUSAL_CODES, RETRY_EXHAUSTED, UNTRUSTED
from scheduling.domain.secrets import TOKEN_UNREADABLE
from scheduling.domain.times import BOUNDS_MS
from scheduling.operator.status import is_stalled
from scheduling.ports import Database
from scheduling.repository import releases
from scheduling.repository.history import (
    Backlog,
    LastTick,
    backlog_from,
    counts_from,
    last_from,
    read_backlog,
    read_last,
    read_live_counts,
    read_totals,
    totals_from,
)
from scheduling.runner.invocation import (
    DELIVERIES,
    DELIVERY_EVENTS,
    DELIVERY_LOST_LEASES,
    LATENESS_COUNT,
    LATENESS_LE,
    LATENESS_SUM_MS,
    LIMIT_REACHED,
    LOST_CLAIMS,
    LOST_LEASES,
    REFUSALS,
    REFUSED_UNSENT_LATE,
    REFUSED_UNSENT_OTHER,
    SENDS,
    WATCHDOG_CAUGHT,
    WATCHDOG_TICKS,
    failed_invocations,
    invocations,
)

# Every code a schedule can be refused with: Dee Wan's refusals, and the plugin's own.
REFUSAL_RESULT_CODES: tuple[str, ...] = (
    *REFUSAL_CODES,
    UNTRUSTED,
    RETRY_EXHAUSTED,
    TOKEN_UNREADABLE,
)
OUTCOMES = ("completed", "refused", "retrying")
# Invocations that record history: the cron's ticks (and clocks' alarms, where they run).
KINDS = ("tick",)


@dataclass(frozen=True)
class Sample:
    """One sample of a metric family."""

    suffix: str  # appended to the family's name: "", "_total", "_bucket", "_sum", "_count"
    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass(frozen=True)
class Family:
    """One metric, its help and its samples."""

    name: str
    kind: str  # gauge, counter or histogram
    help: str
    samples: tuple[Sample, ...]


def _one(value: float, suffix: str = "", **labels: str) -> Sample:
    return Sample(suffix, tuple(labels.items()), value)


def _seconds(ms: int) -> float:
    return ms / 1000


async def read_metrics(db: Database, now: int) -> list[Family]:
    last, waiting, live, totals, by_status = await db.batch(
        [
            read_last(db),
            read_backlog(db, now),
            read_live_counts(db),
            read_totals(db),
            releases.read_counts(db),
        ]
    )
    return families(
        now,
        last_from(last.results),
        backlog_from(waiting.results),
        counts_from(live.results),
        totals_from(totals.results),
        releases.counts_from(by_status.results),
    )


def families(
    now: int,
    last: LastTick | None,
    waiting: Backlog,
    live: Mapping[str, int],
    totals: Mapping[str, int],
    by_status: Mapping[str, int] | None = None,
) -> list[Family]:
    return [
        *_gauges(now, last, waiting, live),
        *_counters(totals),
        *_watchdog(totals),
        _lateness(totals),
        *_releases(by_status or {}, totals),
    ]


def _releases(by_status: Mapping[str, int], totals: Mapping[str, int]) -> list[Family]:
    """Releases by stored status now, and how many were held, completed or cancelled (counted
    by migration 0021's trigger as each happened: a resumed release is held again anew)."""
    return [
        Family(
            "scheduling_releases",
            "gauge",
            "Releases by status: waiting (for its time, or being sent), held (an item was not"
            " done; the rest waits for a person), completed, cancelled.",
            tuple(_one(n, status=status) for status, n in by_status.items()),
        ),
        _counter(
            "scheduling_release_outcomes",
            "Releases held (an item not done), completed (every item applied) or cancelled.",
            [
                ({"outcome": o}, totals.get(f"releases:{o}", 0))
                for o in ("completed", "held", "cancelled")
            ],
        ),
    ]


def _gauges(
    now: int, last: LastTick | None, waiting: Backlog, live: Mapping[str, int]
) -> list[Family]:
    oldest = 0 if waiting.oldest_due_at is None else max(0, now - waiting.oldest_due_at)
    stalled = is_stalled(now, None if last is None else last.at, waiting.size > 0)
    last_tick = () if last is None else (_one(_seconds(max(0, now - last.at))),)
    delay = () if last is None else (_one(_seconds(last.report.get("cron_delay_ms", 0))),)
    return [
        Family(
            "scheduling_due_backlog",
            "gauge",
            "Schedules due now and not yet claimed: pending or retrying whose time has come, "
            "and running ones whose lease expired.",
            (_one(waiting.size),),
        ),
        Family(
            "scheduling_oldest_overdue_age_seconds",
            "gauge",
            "How long ago the oldest due schedule was due (0 when nothing is due).",
            (_one(_seconds(oldest)),),
        ),
        Family(
            "scheduling_live_schedules",
            "gauge",
            "Schedules that are not finished, by status.",
            tuple(_one(live.get(status, 0), status=status) for status in LIVE),
        ),
        Family(
            "scheduling_stalled",
            "gauge",
            "1 when work is due and no tick has run to its end for over three minutes.",
            (_one(int(stalled)),),
        ),
        Family(
            "scheduling_last_tick_age_seconds",
            "gauge",
            "Time since the instant of the last tick that ran to its end (absent before "
            "the first).",
            last_tick,
        ),
        Family(
            "scheduling_last_tick_cron_delay_seconds",
            "gauge",
            "How late the cron delivered that tick's invocation (absent before the first).",
            delay,
        ),
    ]


def _counter(name: str, help_text: str, samples: list[tuple[dict[str, str], int]]) -> Family:
    return Family(
        name,
        "counter",
        help_text,
        tuple(Sample("_total", tuple(labels.items()), value) for labels, value in samples),
    )


def _watchdog(totals: Mapping[str, int]) -> list[Family]:
    """What the clocks' watchdog caught; there only once a tick has run as the watchdog (the
    SCHEDULE_CLOCK binding is there)."""
    if WATCHDOG_TICKS not in totals:
        return []
    return [
        _counter(
            "scheduling_watchdog_caught",
            "What the cron's watchdog caught that the installations' alarm clocks did not "
            "(should stay 0): schedules it sent (or ended unsent) overdue past the grace, "
            "and clocks it found asleep past what they had due, or unset.",
            [
                ({"what": what}, totals.get(WATCHDOG_CAUGHT + what, 0))
                for what in ("schedules", "clocks")
            ],
        )
    ]


def _counters(totals: Mapping[str, int]) -> list[Family]:
    return [
        *_invocations(totals),
        *_schedules(totals),
        *_deliveries(totals),
        _counter(
            "scheduling_limit_reached",
            "Invocations that stopped at a budget (time, D1 queries, sends) rather than when "
            "nothing was left.",
            [({}, totals.get(LIMIT_REACHED, 0))],
        ),
    ]


def _invocations(totals: Mapping[str, int]) -> list[Family]:
    """The runner's invocations, by kind: each kind recorded, the usual ones even at 0."""
    kinds = (*KINDS, *sorted(_seen(totals, "ticks:") - set(KINDS)))
    return [
        _counter(
            "scheduling_ticks",
            "Runner invocations recorded, by kind (tick: the cron's; alarm: an "
            "installation's alarm clock waking; backstop: a request's, the cron having "
            "stopped).",
            [({"kind": k}, totals.get(invocations(k), 0)) for k in kinds],
        ),
        _counter(
            "scheduling_ticks_failed",
            "Runner invocations that failed (each also counts in scheduling_ticks_total).",
            [({"kind": k}, totals.get(failed_invocations(k), 0)) for k in kinds],
        ),
    ]


def _schedules(totals: Mapping[str, int]) -> list[Family]:
    """The schedules' sends and how they ended; every refusal code, the known ones at 0."""
    codes = (
        *REFUSAL_RESULT_CODES,
        *sorted(_seen(totals, REFUSALS) - {*REFUSAL_RESULT_CODES}),
    )
    return [
        _counter(
            "scheduling_sends",
            "Commands sent to Dee Wan, by how the schedule settled after the answer.",
            [({"outcome": o}, totals.get(SENDS + o, 0)) for o in OUTCOMES],
        ),
        _counter(
            "scheduling_refusals",
            "Schedules the runner ended refused, sent or not, by result code.",
            [({"code": c}, totals.get(REFUSALS + c, 0)) for c in codes],
        ),
        _counter(
            "scheduling_refused_unsent",
            "Schedules ended refused without a send: late (past the lateness cap when their "
            "connection slot came) or other (caps reached before the claim, token unreadable).",
            [
                ({"reason": "late"}, totals.get(REFUSED_UNSENT_LATE, 0)),
                ({"reason": "other"}, totals.get(REFUSED_UNSENT_OTHER, 0)),
            ],
        ),
        _counter(
            "scheduling_lost_claims",
            "Due rows another runner changed between the read and the claim.",
            [({}, totals.get(LOST_CLAIMS, 0))],
        ),
        _counter(
            "scheduling_lost_leases",
            "Settles that found their lease taken over (the row was left to its new runner).",
            [({}, totals.get(LOST_LEASES, 0))],
        ),
    ]


def _deliveries(totals: Mapping[str, int]) -> list[Family]:
    """The notifications' counters, every channel kind; each also under the name it had
    before kinds other than webhooks (`scheduling_webhook_*`), deprecated, for one release."""
    outcomes = ("delivered", "retrying", "failed")
    families: list[tuple[str, str, list[tuple[dict[str, str], int]]]] = [
        (
            "delivery_events",
            "Notification events written to the outbox, one per subscribed endpoint, with the "
            "settle that raised them.",
            [({}, totals.get(DELIVERY_EVENTS, 0))],
        ),
        (
            "deliveries",
            "Notification delivery attempts, by how they ended: delivered (2xx), retrying (will "
            "be tried again) or failed (410, or past the retry horizon).",
            [({"outcome": o}, totals.get(DELIVERIES + o, 0)) for o in outcomes],
        ),
        (
            "delivery_lost_leases",
            "Notification delivery settles that found their lease taken over.",
            [({}, totals.get(DELIVERY_LOST_LEASES, 0))],
        ),
    ]
    current = [_counter(f"scheduling_{name}", text, samples) for name, text, samples in families]
    deprecated = [
        _counter(
            f"scheduling_{DEPRECATED_NAMES[name]}",
            f"Deprecated: scheduling_{name}, under its old name until the next release.",
            samples,
        )
        for name, text, samples in families
    ]
    return current + deprecated


# The notification counters' earlier names, exposed beside the current ones for a release.
DEPRECATED_NAMES = {
    "delivery_events": "webhook_events",
    "deliveries": "webhook_deliveries",
    "delivery_lost_leases": "webhook_lost_leases",
}


def _lateness(totals: Mapping[str, int]) -> Family:
    count = totals.get(LATENESS_COUNT, 0)
    buckets = [
        Sample("_bucket", (("le", _le(bound)),), totals.get(LATENESS_LE + str(bound), 0))
        for bound in BOUNDS_MS
    ]
    return Family(
        "scheduling_send_lateness_seconds",
        "histogram",
        "How long after its due time each command left for Dee Wan.",
        (
            *buckets,
            Sample("_bucket", (("le", "+Inf"),), count),
            Sample("_sum", (), _seconds(totals.get(LATENESS_SUM_MS, 0))),
            Sample("_count", (), count),
        ),
    )


def _le(bound_ms: int) -> str:
    """`0.25`, `1.0`, `900.0`: Prometheus's canonical float text for a bucket bound."""
    return repr(bound_ms / 1000)


def _seen(totals: Mapping[str, int], prefix: str) -> set[str]:
    return {name.removeprefix(prefix) for name in totals if name.startswith(prefix)}

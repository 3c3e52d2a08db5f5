"""Issue 21: a day of ticks on a fake clock, and what the operator sees of it.

One in-process world (the plugin on SQLite, the fake Dee Wan) ticks every minute for 24
hours: a burst of 120 schedules at 11:00 that one tick cannot send within its budget, a Dee
Wan that is down for three minutes (its schedule retried until it answers), a stale pin
refused, a tick that fails, a 10-minute gap in the cron (with work due in it), and a last
tick delivered 20 s late. Then the tick history's rows, `/healthz` through the gap, and the
value of every series of `/admin/metrics` (parsed with the official `prometheus_client`
parser), whose counters never decrease from one tick to the next.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduling.domain.times import BOUNDS_MS
from scheduling.mcp.tools import TOOLS
from scheduling.operator.metrics import REFUSAL_RESULT_CODES
from scheduling.operator.status import STALL_AFTER_MS
from scheduling.ports import Database
from scheduling.repository.agents import OUTCOMES
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import START_MS, FakeClock, body, call, runner_status
from tests.support.day import (
    BURST,
    DAY_MINUTES,
    DOWN,
    FAILED,
    GAP,
    LATE_LAST_TICK_MS,
    SECOND,
    STALE,
    day_world,
    minute,
    play_day,
)
from tests.support.metrics import Samples, counters, scrape, value
from tests.support.world import MINUTE, World, bulk_due, tick_at


async def history(db: Database) -> list[dict[str, Any]]:
    return (await db.prepare("SELECT * FROM tick_history ORDER BY at").all()).results


async def healthz(world: World) -> tuple[int, Any]:
    response = await call(world.app, "GET", "/healthz")
    assert response.header("cache-control") == "no-store"
    return response.status, body(response)


async def sent_attempts(db: Database) -> list[dict[str, Any]]:
    """Every request that left, with how late it left."""
    return (
        await db.prepare(
            "SELECT a.started_at - s.due_at AS late, a.started_at, a.code, s.content_id"
            " FROM schedule_attempts a JOIN schedules s ON s.id = a.schedule_id"
            " ORDER BY a.started_at"
        ).all()
    ).results


def never_decreased(before: Samples, after: Samples) -> None:
    for key, old in before.items():
        assert key in after, f"{key} disappeared"
        assert after[key] >= old, f"{key} went from {old} to {after[key]}"


async def test_a_day_of_ticks_in_history_healthz_and_metrics(db: SqliteDatabase) -> None:
    world = day_world(db)
    before: dict[str, Samples] = {"counters": {}}

    async def ahead(m: int) -> None:
        if m == GAP[1]:
            await the_gap(world)

    async def checked(m: int) -> None:
        types, samples = await scrape(world.app)
        now = counters(types, samples)
        never_decreased(before["counters"], now)
        before["counters"] = now
        if m == GAP[1]:  # the runner is back
            assert await healthz(world) == (200, {"status": "ok"})

    ticks = await play_day(world, before=ahead, after=checked)
    await the_history(world, ticks)
    await every_metric(world, ticks)


async def the_gap(world: World) -> None:
    """No tick from 300 to 309: /healthz says ok until work has waited three minutes past the
    last tick, then 503 until the runner is back."""
    last_tick = minute(GAP[0] - 1)
    world.clock.now = minute(301)
    assert await healthz(world) == (200, {"status": "ok"})  # nothing due yet
    world.clock.now = last_tick + STALL_AFTER_MS  # due since 302:00, exactly three minutes
    assert await healthz(world) == (200, {"status": "ok"})
    world.clock.now += 1
    assert await healthz(world) == (503, {"status": "stalled"})
    assert (await runner_status(world.app))["stalled"] is True  # the same rule
    _, samples = await scrape(world.app)
    assert value(samples, "scheduling_stalled") == 1
    assert value(samples, "scheduling_due_backlog") == 1
    assert value(samples, "scheduling_oldest_overdue_age_seconds") == 0.001
    assert value(samples, "scheduling_last_tick_age_seconds") == 180.001
    world.clock.now = minute(GAP[1]) - 1
    assert await healthz(world) == (503, {"status": "stalled"})
    _, samples = await scrape(world.app)
    assert value(samples, "scheduling_due_backlog") == 2  # 307's is due too by now


def the_burst(by_minute: dict[int, Any], attempts: list[dict[str, Any]]) -> None:
    """More than one tick can send within its 45 s budget at 0.5 s a send."""

    def left_in(m: int) -> list[int]:
        """How late each request of the tick of minute `m` left."""
        return sorted(a["late"] for a in attempts if minute(m) <= a["started_at"] < minute(m + 1))

    first, second = by_minute[60], by_minute[61]
    assert first["limit_reached"] == 1
    assert second["limit_reached"] == 0
    assert first["sends"] + second["sends"] == BURST
    assert first["backlog"] == BURST - first["sends"] > 0
    assert second["backlog"] == 0
    for row, m in ((first, 60), (second, 61)):
        late = left_in(m)
        assert row["sends"] == row["completed"] == len(late)
        # Nearest rank, counted here: the ⌈n·p⌉-th value (tests/test_lateness.py has known lists).
        assert (row["lateness_p50_ms"], row["lateness_p99_ms"], row["lateness_max_ms"]) == (
            late[(len(late) + 1) // 2 - 1],
            late[(99 * len(late) + 99) // 100 - 1],
            late[-1],
        )
        assert row["lateness_sum_ms"] == sum(late)
        assert row["lateness_le_30s"] == sum(1 for ms in late if ms <= 30 * SECOND)
    assert second["lateness_p50_ms"] > 45 * SECOND  # the tail waited for the next minute


async def the_history(world: World, ticks: int) -> None:
    rows = await history(world.db)
    assert len(rows) == ticks == DAY_MINUTES - (GAP[1] - GAP[0])
    assert {row["kind"] for row in rows} == {"tick"}
    by_minute = {(row["at"] - START_MS) // MINUTE: row for row in rows}
    assert not any(GAP[0] <= m < GAP[1] for m in by_minute)
    attempts = await sent_attempts(world.db)

    the_burst(by_minute, attempts)

    # The Dee Wan that was down: three network failures, then the change is applied.
    assert [by_minute[m]["retrying"] for m in range(*DOWN)] == [1, 1, 1]
    assert (by_minute[DOWN[1]]["completed"], by_minute[DOWN[1]]["lateness_max_ms"]) == (
        1,
        3 * MINUTE,
    )
    assert by_minute[STALE]["refused"] == 1  # the stale pin, refused by Dee Wan

    failed = [row for row in rows if row["error"] is not None]
    assert failed == [by_minute[FAILED]]
    # The due query that failed, then the row's own write (as a tick's record counts itself).
    assert (failed[0]["error"], failed[0]["sends"], failed[0]["d1_round_trips"]) == (
        "DatabaseError",
        0,
        2,
    )
    back = by_minute[GAP[1]]
    assert (back["refused_unsent"], back["sends"], back["lateness_max_ms"]) == (
        1,
        1,
        3 * MINUTE,
    )
    assert back["cron_delay_ms"] == 0
    last = rows[-1]
    assert (last["at"], last["cron_delay_ms"]) == (
        minute(DAY_MINUTES - 1) + LATE_LAST_TICK_MS,
        LATE_LAST_TICK_MS,
    )
    # Every row adds up to what the attempts say.
    assert sum(row["sends"] for row in rows) == len(attempts)
    assert sum(row["lateness_sum_ms"] for row in rows) == sum(a["late"] for a in attempts)


METRIC_TYPES = {
    "scheduling_due_backlog": "gauge",
    "scheduling_oldest_overdue_age_seconds": "gauge",
    "scheduling_live_schedules": "gauge",
    "scheduling_stalled": "gauge",
    "scheduling_last_tick_age_seconds": "gauge",
    "scheduling_last_tick_cron_delay_seconds": "gauge",
    "scheduling_ticks": "counter",
    "scheduling_ticks_failed": "counter",
    "scheduling_sends": "counter",
    "scheduling_refusals": "counter",
    "scheduling_refused_unsent": "counter",
    "scheduling_lost_claims": "counter",
    "scheduling_lost_leases": "counter",
    "scheduling_limit_reached": "counter",
    "scheduling_delivery_events": "counter",
    "scheduling_deliveries": "counter",
    "scheduling_delivery_lost_leases": "counter",
    "scheduling_webhook_events": "counter",
    "scheduling_webhook_deliveries": "counter",
    "scheduling_webhook_lost_leases": "counter",
    "scheduling_agent_calls": "counter",
    "scheduling_send_lateness_seconds": "histogram",
    "scheduling_releases": "gauge",
    "scheduling_release_outcomes": "counter",
}


async def the_totals_behind_them(world: World) -> None:
    """One row per series that moved, from a fixed catalogue."""
    names = {
        str(r["name"])
        for r in (await world.db.prepare("SELECT name FROM runner_totals").all()).results
    }
    catalogue = {
        "ticks:tick",
        "ticks_failed:tick",
        *(f"sends:{o}" for o in ("completed", "refused", "retrying")),
        *(f"refusals:{code}" for code in REFUSAL_RESULT_CODES),
        "refused_unsent:late",
        "refused_unsent:other",
        "delivery_events",
        *(f"deliveries:{o}" for o in ("delivered", "retrying", "failed")),
        "delivery_lost_leases",
        "lost_claims",
        "lost_leases",
        "limit_reached",
        *(f"lateness_le:{bound}" for bound in BOUNDS_MS),
        "lateness_count",
        "lateness_sum_ms",
    }
    assert names <= catalogue
    assert len(catalogue) == 43


def expect_the_idle_counters(expect: Callable[..., None]) -> None:
    """No notification endpoint and no agent in this story: their counters are there, at
    zero (the deliveries' under their deprecated `webhook` names too, for one release)."""
    for name in ("delivery", "webhook"):
        expect(f"scheduling_{name}_events_total", 0)
        expect(f"scheduling_{name}_lost_leases_total", 0)
    for outcome in ("delivered", "retrying", "failed"):
        expect("scheduling_deliveries_total", 0, outcome=outcome)
        expect("scheduling_webhook_deliveries_total", 0, outcome=outcome)
    for tool in TOOLS:
        for outcome in OUTCOMES:
            expect("scheduling_agent_calls_total", 0, tool=tool, outcome=outcome)
    for status in ("waiting", "held", "completed", "cancelled"):  # no release in this story
        expect("scheduling_releases", 0, status=status)
    for outcome in ("completed", "held", "cancelled"):
        expect("scheduling_release_outcomes_total", 0, outcome=outcome)


async def every_metric(world: World, ticks: int) -> None:
    world.clock.now = minute(DAY_MINUTES - 1) + LATE_LAST_TICK_MS + 5 * SECOND
    types, samples = await scrape(world.app)
    attempts = await sent_attempts(world.db)
    late = [a["late"] for a in attempts]
    codes = [a["code"] for a in attempts]
    expected: Samples = {}

    def expect(name: str, number: float, **labels: str) -> None:
        expected[(name, tuple(sorted(labels.items())))] = number

    expect("scheduling_due_backlog", 0)
    expect("scheduling_oldest_overdue_age_seconds", 0)
    expect("scheduling_live_schedules", 1, status="pending")  # tomorrow's
    expect("scheduling_live_schedules", 0, status="retrying")
    expect("scheduling_live_schedules", 0, status="running")
    expect("scheduling_live_schedules", 0, status="queued")  # a release's items behind its head
    expect("scheduling_stalled", 0)
    expect("scheduling_last_tick_age_seconds", 5.0)
    expect("scheduling_last_tick_cron_delay_seconds", 20.0)
    expect("scheduling_ticks_total", ticks, kind="tick")
    expect("scheduling_ticks_failed_total", 1, kind="tick")
    completed = codes.count("transition_applied")
    assert completed == BURST + 2  # the burst, the recovered Dee Wan's, the gap's second
    expect("scheduling_sends_total", completed, outcome="completed")
    expect("scheduling_sends_total", 3, outcome="retrying")
    expect("scheduling_sends_total", 1, outcome="refused")
    assert codes.count("network_error") == 3
    assert len(codes) == completed + 4
    for code in REFUSAL_RESULT_CODES:
        refused = {"scheduled_target_stale": 1, "retry_exhausted": 1}.get(code, 0)
        expect("scheduling_refusals_total", refused, code=code)
    expect("scheduling_refused_unsent_total", 0, reason="late")
    expect("scheduling_refused_unsent_total", 1, reason="other")
    expect("scheduling_lost_claims_total", 0)
    expect("scheduling_lost_leases_total", 0)
    expect("scheduling_limit_reached_total", 1)
    expect_the_idle_counters(expect)
    for bound in BOUNDS_MS:
        expect(
            "scheduling_send_lateness_seconds_bucket",
            sum(1 for ms in late if ms <= bound),
            le=str(bound / 1000),
        )
    expect("scheduling_send_lateness_seconds_bucket", len(late), le="+Inf")
    expect("scheduling_send_lateness_seconds_count", len(late))
    expect("scheduling_send_lateness_seconds_sum", sum(late) / 1000)
    assert samples == expected
    await the_totals_behind_them(world)
    assert types == METRIC_TYPES


async def test_counters_never_decrease_as_the_history_is_pruned(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    """Nine days of hourly ticks, each sending one schedule. The history keeps 7 days, so
    from the eighth day each tick's write prunes the row a week old, and a sum over the
    history (what a window would report) goes down; the counters do not."""
    world = World(db, clock)
    shop = await world.install()
    hours = 9 * 24
    for h in range(hours):
        await bulk_due(world, shop, 1, START_MS + h * 60 * MINUTE, f"h{h}_")
    before: Samples = {}
    window_sums = []
    for h in range(hours):
        now = START_MS + h * 60 * MINUTE
        await tick_at(world, now)
        types, samples = await scrape(world.app)
        after = counters(types, samples)
        never_decreased(before, after)
        before = after
        assert value(samples, "scheduling_sends_total", outcome="completed") == h + 1
        assert value(samples, "scheduling_ticks_total", kind="tick") == h + 1
        rows = await history(world.db)
        assert rows[0]["at"] >= now - 7 * 24 * 60 * MINUTE
        assert len(rows) <= 7 * 24 + 1
        window_sums.append(sum(row["sends"] for row in rows))
    assert len(await history(world.db)) == 7 * 24 + 1
    # Sent one a tick, all along: a sum over the history stops growing at a week's rows.
    assert (
        window_sums[-1]
        == 7 * 24 + 1
        < hours
        == before[("scheduling_sends_total", (("outcome", "completed"),))]
    )


async def test_pruning_takes_at_most_ten_rows_per_write(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    """A history far past its week (the cron stopped, then came back) shrinks by ten rows a
    tick: each write stays small, and the backlog of old rows still goes."""
    world = World(db, clock)
    for m in range(30):
        await tick_at(world, START_MS + m * MINUTE)
    week_later = START_MS + 7 * 24 * 60 * MINUTE + 30 * MINUTE
    sizes = []
    for k in range(4):
        await tick_at(world, week_later + k * MINUTE)
        sizes.append(len(await history(world.db)))
    assert sizes == [30 + 1 - 10, 30 + 2 - 20, 30 + 3 - 30, 4]  # then only the new rows

"""The runner under the platform's limits: connection slots, the lateness cap when a request
leaves, draining a backlog in batches within the tick's budget."""

from __future__ import annotations

import asyncio
import json

import pytest

from fake_core.transport import answered
from scheduling.ports import OutboundRequest, OutboundResponse
from scheduling.runtimes.cpython.adapters import HttpxClient, SystemClock
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.activation import install
from tests.support.app import START_MS, FakeClock, LoopClock, base_env, make_app, runner_status
from tests.support.d1_rows import schedule_row
from tests.support.loopback_core import loopback_core
from tests.support.runtimes import Runtime
from tests.support.world import MINUTE, World, bulk_due, insert_due, local, tick_at

SECOND = 1_000


class SlowCore:
    """fake_core answering after `seconds` of loop time; notes when each request left."""

    def __init__(self, world: World, seconds: float, clock: LoopClock) -> None:
        self.world, self.seconds, self.clock = world, seconds, clock
        self.core = world.http.handler
        self.started: list[int] = []
        self.leases: list[tuple[int, int]] = []  # (request start, the row's lease_until then)
        self.in_flight = self.max_in_flight = 0

    async def __call__(self, request: OutboundRequest) -> OutboundResponse:
        now = self.clock.now_ms()
        self.started.append(now)
        key = request.headers["idempotency-key"]
        lease = (
            await self.world.db.prepare(
                "SELECT lease_until FROM schedules WHERE idempotency_key = ?"
            )
            .bind(key)
            .first()
        )
        assert lease is not None
        self.leases.append((now, lease["lease_until"]))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.seconds)
            return await answered(self.core, request)
        finally:
            self.in_flight -= 1


def loop_world(
    db: SqliteDatabase, start_ms: int, core_seconds: float, **env: str
) -> tuple[World, SlowCore]:
    clock = LoopClock(start_ms)
    world = World(db, clock, env=base_env(**env))
    slow = SlowCore(world, core_seconds, clock)
    world.http.handler = slow
    # Its migrations found known a moment ago: the downgrade guard's read (once in five
    # minutes, tests/test_schema_guard.py) is in none of these counts.
    world.app.services.schema_known_at = start_ms
    return world, slow


@pytest.mark.looptime
async def test_sends_leave_only_before_the_lateness_cap_the_rest_are_refused_unsent(
    db: SqliteDatabase,
) -> None:
    due = START_MS
    world, core = loop_world(db, due + 50 * SECOND, 4.0, MAX_LATENESS_MS="60000")
    await bulk_due(world, await world.install(), 30, due, "late")
    report = await world.app.tick(due + 50 * SECOND)  # a cron delivery 50 s late

    # Waves of six leave at +50 s, +54 s, +58 s; the fourth wave's slot comes at +62 s.
    assert all(started <= due + 60 * SECOND for started in core.started)
    assert (report["sends"], report["completed"]) == (18, 18)
    assert report["refused_unsent_late"] == 2  # claimed, past the cap when their slot came
    assert report["refused_unsent"] == 10  # the second batch, past the cap at its claim
    unsent = await db.prepare(
        "SELECT status, result_code, attempt_count FROM schedules WHERE status != 'completed'"
    ).all()
    assert {(r["status"], r["result_code"], r["attempt_count"]) for r in unsent.results} == {
        ("refused", "retry_exhausted", 0)
    }
    attempts = await db.prepare("SELECT count(*) AS n FROM schedule_attempts").first()
    assert attempts == {"n": 18}  # one per request that left, none for the unsent
    assert report["lateness_max_ms"] <= 60 * SECOND


async def test_a_cron_invocation_delivered_75_s_late_sends_nothing_past_a_60_s_cap(
    runtime: Runtime,
) -> None:
    """The tick stands for the minute T and reaches the plugin 75 s after it: the row due at T
    is past its 60 s cap and refused unsent, while one due 45 s after T is sent."""
    installation_id = await runtime.install()
    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    fields = {**editor.shown, "csrf_token": editor.csrf, "transition": "publish:published",
              "local_time": local(runtime.minute_ahead(30)), "timezone": "UTC"}  # fmt: skip
    made = await editor.post_form(f"/installations/{installation_id}/schedules", fields)
    assert made.status_code == 303, made.text
    in_time = made.headers["location"].split("created=", 1)[1]
    minute = runtime.now_ms() - 75_000  # rows in the past, which no form takes
    await runtime.execute(
        "UPDATE schedules SET due_at = ?, next_attempt_at = ? WHERE id = ?",
        *(minute + 45_000, minute + 45_000, in_time),
    )
    late, values = schedule_row(f"sch_{installation_id}_late", installation_id, "cnt_late",
                                due_at=minute)  # fmt: skip
    await runtime.execute(late, *values)
    with runtime.vars(MAX_LATENESS_MS="60000"):
        await runtime.tick(minute)
    after = runtime.now_ms()
    sql = "SELECT content_id, status, result_code, attempt_count FROM schedules"
    sql += " WHERE installation_id = ?"
    rows = {row.pop("content_id"): row for row in await runtime.rows(sql, installation_id)}
    assert rows == {
        runtime.content: {"status": "completed", "result_code": "transition_applied",
                          "attempt_count": 1},
        "cnt_late": {"status": "refused", "result_code": "retry_exhausted", "attempt_count": 0},
    }  # fmt: skip
    # The tick's line (the status's last tick is the latest minute, which another may hold).
    lines = [line for line in runtime.log_text().splitlines() if '"event":"runner_tick"' in line]
    last = json.loads(lines[-1][lines[-1].index("{") :])
    assert 75_000 <= last["cron_delay_ms"] <= after - minute
    assert (last["refused_unsent"], last["sends"]) == (1, 1)
    assert last["lateness_max_ms"] >= 30_000  # judged from the clock, not the minute


@pytest.mark.looptime
async def test_the_tick_drains_in_batches_until_its_budget_is_spent(db: SqliteDatabase) -> None:
    due = START_MS
    world, core = loop_world(db, due, 1.0, TICK_BUDGET_MS="10000")
    for name in ("a", "b", "c", "d"):
        await bulk_due(world, await world.install(), 25, due, name)
    report = await world.app.tick(due)

    # Six sends a second, batches rolling: the fourth batch is claimed at 9 s, when the
    # third's last claim takes a slot; after it, 13 s have passed.
    assert (report["batches"], report["claimed"], report["completed"]) == (4, 80, 80)
    assert core.max_in_flight == 6
    left = await db.prepare("SELECT count(*) AS n FROM schedules WHERE status = 'pending'").first()
    assert left == {"n": 20}
    # Each batch's lease starts at its own claim (a lease from the tick's start would
    # have 47 s left when the last batch's last request leaves).
    assert all(lease_until - started >= 54 * SECOND for started, lease_until in core.leases)
    # due; per batch: the claim (which opens its attempts), the next due (not after the
    # last), settle (2) + finish (2) + the installations' last sends; the record (history
    # row, totals, pruning). No retention purge step: 13 s of a 10 s budget are spent.
    assert (report["d1_round_trips"], report["d1_statements"]) == (
        13,
        1 + 4 * 1 + 3 + 4 * 5 + 3,
    )


async def test_twenty_rows_against_a_four_second_core_complete_in_one_tick_six_at_a_time(
    db: SqliteDatabase,
) -> None:
    """Real HTTP, real time: the CPython runtime keeps to six connections like workerd."""
    with loopback_core(delay_s=4.0) as core:
        env = base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core.base_url)
        app = make_app(db, SystemClock(), http=HttpxClient(), env=env)
        await install(app, "ins_slow", base_url=core.base_url)
        now = SystemClock().now_ms()
        for i in range(20):
            await insert_due(db, "ins_slow", f"cnt_{i}", now - SECOND)
        report = await app.tick(now)
    assert (report["completed"], report["sends"], report["batches"]) == (20, 20, 1)
    assert core.max_in_flight == 6
    attempts = await db.prepare("SELECT code FROM schedule_attempts").all()
    assert [a["code"] for a in attempts.results] == ["transition_applied"] * 20  # no timeout


async def test_on_workers_free_a_tick_stays_within_50_queries_and_50_subrequests(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    world = World(db, clock, env=base_env(MAX_D1_QUERIES_PER_TICK="50", MAX_SENDS_PER_TICK="50"))
    installation = await world.install()
    due = clock.now_ms() + MINUTE
    await bulk_due(world, installation, 100, due, "free")
    trips = db.round_trips
    report = await tick_at(world, due)
    assert (report["batches"], report["sends"], report["completed"]) == (2, 40, 40)
    # The downgrade guard's read (this process's first tick's) is one of the 50 too.
    assert report["d1_statements"] + 1 <= 50
    assert report["sends"] <= 50
    assert db.round_trips - trips == report["d1_round_trips"] + 1
    # What is left stays due, visibly: the next tick takes it.
    assert (await runner_status(world.app))["due_backlog"] == 60
    assert (await tick_at(world, due + MINUTE))["sends"] == 40


async def test_the_query_budget_alone_stops_the_drain_before_d1_would_refuse(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    world = World(db, clock, env=base_env(MAX_D1_QUERIES_PER_TICK="50"))
    due = clock.now_ms() + MINUTE
    await bulk_due(world, await world.install(), 200, due, "q")
    report = await tick_at(world, due)
    # Each claim opens its attempts by itself (migration 0021); the purge's step is six.
    assert report["batches"] == 4
    assert report["d1_statements"] <= 50
    assert report["completed"] == 80
    assert report["limit_reached"] == 1


class TenantCores:
    """fake_core answering each installation after its own delay (seconds of loop time, by
    the Idempotency-Key's installation); notes when each installation's requests left."""

    def __init__(self, world: World, clock: LoopClock, seconds: dict[str, float]) -> None:
        self.core = world.http.handler
        self.clock, self.seconds = clock, seconds
        self.started: dict[str, list[int]] = {}
        self.in_flight: dict[str, int] = {}
        self.peak: dict[str, int] = {}

    async def __call__(self, request: OutboundRequest) -> OutboundResponse:
        installation = request.headers["idempotency-key"].split(":")[1]
        self.started.setdefault(installation, []).append(self.clock.now_ms())
        self.in_flight[installation] = self.in_flight.get(installation, 0) + 1
        self.peak[installation] = max(self.peak.get(installation, 0), self.in_flight[installation])
        try:
            await asyncio.sleep(self.seconds.get(installation, 0.2))
            return await answered(self.core, request)
        finally:
            self.in_flight[installation] -= 1


async def tenants(
    db: SqliteDatabase, slow_rows: int, honest_rows: int, **env: str
) -> tuple[World, TenantCores, str, str]:
    """A slow installation (its Dee Wan answers in 9.5 s) with `slow_rows` due, installed and
    written first, then an honest one (0.2 s) with `honest_rows`, all due at START_MS."""
    clock = LoopClock(START_MS)
    world = World(db, clock, env=base_env(**env))
    slow, honest = await world.install(), await world.install()
    core = TenantCores(world, clock, {slow.id: 9.5, honest.id: 0.2})
    world.http.handler = core
    await bulk_due(world, slow, slow_rows, START_MS, "slow")
    await bulk_due(world, honest, honest_rows, START_MS, "honest")
    return world, core, slow.id, honest.id


@pytest.mark.looptime
async def test_a_slow_installation_does_not_delay_another_installations_sends(
    db: SqliteDatabase,
) -> None:
    """Issue 45 item 9's case: 40 rows of a Dee Wan answering in 9.5 s, written before an
    honest installation's row due at the same minute. The batch keeps the due query's
    round-robin, so the honest row leaves at once, even with no share of the slots to keep
    (it waited 28.5 s when the batch took `RETURNING`'s order)."""
    world, core, _, honest = await tenants(db, 40, 1, MAX_SLOTS_PER_INSTALLATION="6")
    await world.app.tick(START_MS)
    [left] = core.started[honest]
    assert left - START_MS < SECOND
    done = db.prepare("SELECT status FROM schedules WHERE installation_id = ?").bind(honest)
    assert (await done.all()).results == [{"status": "completed"}]


@pytest.mark.looptime
async def test_an_installation_holds_at_most_its_share_of_the_slots(db: SqliteDatabase) -> None:
    """With 20 honest rows beside the slow 40, the slow Dee Wan holds at most its share of the
    six slots (MAX_SLOTS_PER_INSTALLATION: half, 3) while the honest one has rows: the honest rows
    all leave within 3 s (they waited 29 s), and the slow ones take every slot once alone."""
    world, core, slow, honest = await tenants(db, 40, 20)
    report = await world.app.tick(START_MS)
    assert max(core.started[honest]) - START_MS < 3 * SECOND
    honest_done = max(core.started[honest]) + 200
    assert core.peak[slow] == 6
    while_honest = [t for t in core.started[slow] if t < honest_done]
    assert len(while_honest) == 3
    assert report["completed"] >= 20 + 3

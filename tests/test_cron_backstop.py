"""Issue 45, item 18: the cron's backstop. With the alarm clocks off (the default) a stopped
cron meant nothing was sent, silently, until someone looked. Now any request the Worker
serves (a page, /healthz polled by an uptime monitor) notices a last tick over two minutes
old and runs one bounded tick after answering (`ctx.waitUntil` on Workers, the request's
task locally), one at a time, recorded as the kind `backstop`.

On both runtimes where the test takes `runtime`; in-process (the App, its `after_request`,
a clock moved by hand) otherwise.
"""

from __future__ import annotations

import asyncio
import base64
import json

import pytest

from fake_core.transport import answered
from scheduling.ports import OutboundRequest, OutboundResponse
from scheduling.runner.tick import BACKSTOP_TIME_MS
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import ADMIN_SECRET, START_MS, FakeClock, LoopClock, call
from tests.support.runtimes import Runtime
from tests.support.world import MINUTE, World, bulk_due, cron_tick_row, schedule, tick_at

BASIC = {"authorization": "Basic " + base64.b64encode(f"op:{ADMIN_SECRET}".encode()).decode()}
BEARER = {"authorization": f"Bearer {ADMIN_SECRET}"}
HISTORY = "SELECT kind, error, completed FROM tick_history ORDER BY at"


async def test_a_request_after_the_cron_stopped_runs_one_backstop_tick(runtime: Runtime) -> None:
    now = runtime.now_ms()
    # The cron's last tick was ten minutes ago; nothing since (on the shared harness, the
    # recent ticks of earlier tests go, so that this one is the last).
    await runtime.execute(
        "DELETE FROM tick_history WHERE kind IN ('tick', 'backstop') AND at > ?", now - MINUTE * 9
    )
    await runtime.execute(*cron_tick_row(now - 10 * MINUTE))
    before = await runtime.rows("SELECT count(*) AS n FROM tick_history WHERE kind = 'backstop'")
    with runtime.vars(MAX_ATTEMPTS="8"):  # variables of its own: a fresh isolate
        async with runtime.http() as http:
            assert (await http.get("/healthz")).status_code == 200  # answered, then the tick
            assert (await http.get("/healthz")).status_code == 200  # within 2 min: no other
    after = await runtime.rows(
        "SELECT error FROM tick_history WHERE kind = 'backstop' ORDER BY at DESC"
    )
    assert len(after) == before[0]["n"] + 1
    assert after[0]["error"] is None
    said = runtime.log_text()
    assert '"event":"runner_cron_stopped"' in said
    assert '"event":"runner_backstop"' in said


async def test_the_backstop_sends_what_is_due_and_the_operator_sees_it(
    world: World, clock: FakeClock
) -> None:
    installation = await world.install()
    await tick_at(world, clock.now_ms())  # the cron ran once, then stopped
    due = await schedule(world, installation, "cnt_en", in_minutes=3)
    clock.now = due["due_at"] + 30_000
    assert json.loads((await call(world.app, "GET", "/healthz")).body) == {"status": "stalled"}
    later = world.app.after_request()
    assert later is not None
    await later
    sql = "SELECT status FROM schedules WHERE id = ?"
    assert await world.db.prepare(sql).bind(due["id"]).first() == {"status": "completed"}
    rows = (await world.db.prepare(HISTORY).all()).results
    assert [(r["kind"], r["error"], r["completed"]) for r in rows][-1] == ("backstop", None, 1)
    page = (await call(world.app, "GET", "/admin", headers=BASIC)).body.decode()
    assert "1 tick in the last 24 hours ran from a request" in page
    metrics = (await call(world.app, "GET", "/admin/metrics", headers=BEARER)).body.decode()
    assert 'scheduling_ticks_total{kind="backstop"} 1' in metrics
    assert (await call(world.app, "GET", "/healthz")).status == 200  # nothing left waiting
    status = json.loads((await call(world.app, "GET", "/admin/status", headers=BEARER)).body)
    assert status["last_tick"] is not None  # the cron's: the backstop is not the cron


async def test_one_at_a_time_and_never_beside_the_cron_or_right_after_a_tick(
    world: World, clock: FakeClock
) -> None:
    await world.install()
    await tick_at(world, clock.now_ms())
    assert world.app.after_request() is None  # this process saw the cron tick just now
    clock.advance(3 * MINUTE)
    first = world.app.after_request()
    assert first is not None
    assert world.app.after_request() is None  # one at a time
    await first
    assert world.app.after_request() is None  # it ran: two quiet minutes
    clock.advance(3 * MINUTE)
    cron = asyncio.ensure_future(world.app.tick(clock.now_ms()))
    await asyncio.sleep(0)  # the cron's tick under way in this process
    assert world.app.after_request() is None
    await cron
    kinds = [r["kind"] for r in (await world.db.prepare(HISTORY).all()).results]
    assert kinds == ["tick", "backstop", "tick"]


async def test_no_backstop_before_the_cron_ever_ticked(world: World) -> None:
    await world.install()
    later = world.app.after_request()
    assert later is not None
    await later
    assert (await world.db.prepare(HISTORY).all()).results == []


def slow_core(world: World) -> list[OutboundRequest]:
    """fake_core answering each request after a second of loop time; what it answered."""
    core, answered_requests = world.http.handler, []

    async def slowly(request: OutboundRequest) -> OutboundResponse:
        await asyncio.sleep(1.0)
        answered_requests.append(request)
        return await answered(core, request)

    world.http.handler = slowly
    return answered_requests


@pytest.mark.looptime
async def test_a_backstop_tick_starts_no_work_past_its_own_budget(db: SqliteDatabase) -> None:
    """The cron's tick may take TICK_BUDGET_MS (45 s); a request's `waitUntil` lasts 30 s."""
    start = START_MS
    world = World(db, LoopClock(start))
    sent = slow_core(world)
    await world.app.tick(start)  # the cron's last tick
    for name in ("a", "b", "c", "d"):
        await bulk_due(world, await world.install(), 50, start + MINUTE, name)
    await asyncio.sleep(5 * 60)  # five minutes without the cron
    later = world.app.after_request()
    assert later is not None
    await later
    [row] = (
        await db.prepare(
            "SELECT duration_ms, completed FROM tick_history WHERE kind = 'backstop'"
        ).all()
    ).results
    # Six sends a second: the cron's 45 s would have sent all 200.
    assert 0 < row["completed"] < 200
    assert row["duration_ms"] < BACKSTOP_TIME_MS + 10_000
    assert len(sent) == row["completed"]

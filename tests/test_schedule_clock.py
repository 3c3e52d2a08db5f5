"""An alarm clock per installation (issue 30), on the local runtime's clocks, in loop time:
with the cron silent, a schedule is sent at its due second by its installation's clock,
never before; create, supersede, cancel and retries tell or re-arm it; a restart re-arms
every clock from D1; the cron's tick is the watchdog."""

from __future__ import annotations

import base64
import html
import re
from collections import Counter
from typing import Any

import pytest

from fake_core import Fault
from scheduling.runtimes.cpython.server import LocalClocks
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import ADMIN_SECRET, START_MS, LoopClock, base_env, call
from tests.support.in_flight import FaultyClocks, InFlight, until
from tests.support.metrics import scrape, value
from tests.support.webhooks import HOOK_URL, Receiver, add_endpoint, with_receivers
from tests.support.world import MINUTE, World, attempts, bulk_due, row, schedule, sends

SECOND = 1_000
LEAD_MS = 1_500


def clock_world(db: SqliteDatabase, **env: str) -> tuple[World, LocalClocks]:
    world = World(db, LoopClock(START_MS), env=base_env(SCHEDULE_CLOCK="1", **env))
    clocks = LocalClocks(world.app, http=lambda: world.app.services.http)
    world.app.services.clocks = clocks
    return world, clocks


async def clock_fact(world: World) -> str | None:
    """What the operator page says of the alarm clocks (None: nothing)."""
    secret = base64.b64encode(f"operator:{ADMIN_SECRET}".encode()).decode()
    headers = {"authorization": f"Basic {secret}", "accept": "text/html"}
    page = (await call(world.app, "GET", "/admin", headers=headers)).body.decode()
    found = re.search(r"<dt>Alarm clocks</dt><dd>([^<]*)</dd>", page)
    return None if found is None else html.unescape(found.group(1))


async def history(world: World) -> list[dict[str, Any]]:
    rows = await world.db.prepare(
        "SELECT kind, error, sends, claimed, caught, clocks_rearmed, waited_ms, cron_delay_ms"
        " FROM tick_history ORDER BY rowid"
    ).all()
    return rows.results


@pytest.mark.looptime
async def test_a_created_schedule_is_sent_at_its_due_second_by_its_clock_alone(
    db: SqliteDatabase,
) -> None:
    world, clocks = clock_world(db)
    installation = await world.install()
    made = await schedule(world, installation, in_minutes=3)
    due = made["due_at"]
    assert clocks.next_wake_ups() == {installation.id: due - LEAD_MS}

    await until(world.clock, due + 5 * SECOND)
    await clocks.idle()

    [attempt] = await attempts(world, made["id"])
    assert attempt["started_at"] == due  # on the second, not a millisecond before
    assert len(sends(world, made)) == 1
    assert [(h["kind"], h["sends"], h["waited_ms"]) for h in await history(world)] == [
        ("alarm", 1, LEAD_MS)
    ]
    assert clocks.next_wake_ups() == {}  # nothing live: the clock sleeps until told
    types, samples = await scrape(world.app)
    assert value(samples, "scheduling_ticks_total", kind="alarm") == 1
    assert "scheduling_watchdog_caught" not in types  # no watchdog has run yet
    assert await clock_fact(world) == (
        "1 wake-up in the last 24 hours; their sends left at most 0 s after the due second;"
        " the watchdog caught nothing."
    )
    await clocks.stop()


@pytest.mark.looptime
async def test_a_clock_is_moved_earlier_when_told_and_never_later(db: SqliteDatabase) -> None:
    world, clocks = clock_world(db)
    installation = await world.install()
    world.core.state.add_content("cnt_two", "Two")
    later = await schedule(world, installation, in_minutes=10)
    sooner = await schedule(world, installation, "cnt_two", in_minutes=3)
    assert clocks.next_wake_ups() == {installation.id: sooner["due_at"] - LEAD_MS}
    # A supersede due later and a cancel leave the clock where it was: it wakes for nothing
    # once, reads D1, and sleeps until what is next.
    replaced = await schedule(world, installation, "cnt_two", in_minutes=5)
    browser = await world.open_page(installation)
    await browser.cancel(installation.id, later["id"])
    assert clocks.next_wake_ups() == {installation.id: sooner["due_at"] - LEAD_MS}

    await until(world.clock, sooner["due_at"] + SECOND)
    await clocks.idle()
    assert clocks.next_wake_ups() == {installation.id: replaced["due_at"] - LEAD_MS}
    await until(world.clock, later["due_at"] + MINUTE)
    await clocks.idle()

    [attempt] = await attempts(world, replaced["id"])
    assert attempt["started_at"] == replaced["due_at"]
    assert not sends(world, sooner)
    assert not sends(world, later)
    assert [(h["kind"], h["sends"]) for h in await history(world)] == [
        ("alarm", 0),
        ("alarm", 1),
    ]
    assert clocks.next_wake_ups() == {}
    await clocks.stop()


@pytest.mark.looptime
async def test_a_retry_is_sent_at_its_next_attempt_by_the_clock(db: SqliteDatabase) -> None:
    world, clocks = clock_world(db)
    installation = await world.install()
    world.core.faults.push(Fault.respond(503, "busy", retry_after=7), endpoint="transitions")
    made = await schedule(world, installation, in_minutes=2)

    await until(world.clock, made["due_at"] + SECOND)
    retrying = await row(world, made["id"])
    assert retrying["status"] == "retrying"
    assert retrying["next_attempt_at"] >= made["due_at"] + 7 * SECOND  # its Retry-After
    assert clocks.next_wake_ups() == {installation.id: retrying["next_attempt_at"] - LEAD_MS}
    await until(world.clock, made["due_at"] + MINUTE)
    await clocks.idle()

    first, second = await attempts(world, made["id"])
    assert first["started_at"] == made["due_at"]
    assert second["started_at"] == retrying["next_attempt_at"]
    assert (await row(world, made["id"]))["status"] == "completed"
    await clocks.stop()


@pytest.mark.looptime
async def test_a_restart_arms_every_clock_from_d1(db: SqliteDatabase) -> None:
    world, clocks = clock_world(db)
    first, second = await world.install(), await world.install()
    one = await schedule(world, first, in_minutes=2)
    two = await schedule(world, second, in_minutes=4)
    await clocks.stop()  # the process ends: its timers with it

    restarted = LocalClocks(world.app, http=lambda: world.app.services.http)
    world.app.services.clocks = restarted
    assert await restarted.start() == 2
    assert restarted.next_wake_ups() == {
        first.id: one["due_at"] - LEAD_MS,
        second.id: two["due_at"] - LEAD_MS,
    }
    await until(world.clock, two["due_at"] + SECOND)
    await restarted.idle()
    for made in (one, two):
        [attempt] = await attempts(world, made["id"])
        assert attempt["started_at"] == made["due_at"]
    await restarted.stop()


@pytest.mark.looptime
async def test_a_burst_is_sent_on_its_second_six_at_a_time_per_installation(
    db: SqliteDatabase,
) -> None:
    world, clocks = clock_world(db)
    world.core.faults.set_latency(0.2)
    watched = world.http.handler = InFlight(world.http.handler)
    due = START_MS + 3 * MINUTE
    installations = [await world.install() for _ in range(3)]
    for n, installation in enumerate(installations):
        await bulk_due(world, installation, 20, due, f"b{n}_")
    assert await clocks.start() == 3

    await until(world.clock, due + MINUTE)
    await clocks.idle()

    late = await world.db.prepare(
        "SELECT min(a.started_at - s.due_at) AS early, max(a.started_at - s.due_at) AS late,"
        " count(*) AS n FROM schedule_attempts a JOIN schedules s ON s.id = a.schedule_id"
    ).first()
    # 20 rows at six at a time and 200 ms each: four waves, the last leaving at +600 ms.
    assert late == {"early": 0, "late": 600, "n": 60}
    assert max(watched.peak.values()) == 6
    assert watched.peak_total == 18  # each installation's clock with its own six
    alarms = [h for h in await history(world) if h["kind"] == "alarm"]
    assert [h["sends"] for h in alarms] == [20, 20, 20]
    await clocks.stop()


@pytest.mark.looptime
async def test_an_alarm_still_sending_tells_its_refusals_within_seconds_then_sends_on(
    db: SqliteDatabase,
) -> None:
    """60 refusals due at one second, six at a time and 500 ms each: five seconds of sends.
    The alarm does not keep their events for its end: once it has sent for two seconds, it
    delivers what its settles wrote, then sends the rest, all in the same invocation."""
    world, clocks = clock_world(db)
    world.core.faults.set_latency(0.5)
    receiver = Receiver(HOOK_URL, clock=world.clock.now_ms)
    with_receivers(world, receiver)
    installation = await world.install()
    await add_endpoint(await world.browser_for(installation, content_id=None), installation.id)
    due = START_MS + 3 * MINUTE
    await bulk_due(world, installation, 60, due, "r_")
    refused = Fault.respond(409, "workflow_conflict")
    world.core.faults.push(refused, endpoint="transitions", times=60)
    assert await clocks.start() == 1

    await until(world.clock, due + MINUTE)
    await clocks.idle()

    told = await world.db.prepare(
        "SELECT status, last_attempt_at - created_at AS waited FROM webhook_deliveries"
    ).all()
    assert len(told.results) == len(receiver.received) == 60
    assert {r["status"] for r in told.results} == {"delivered"}
    # Sent alone, the first wave's events would wait the five seconds of the rest.
    assert max(r["waited"] for r in told.results) < 3 * SECOND
    [alarm] = [h for h in await history(world) if h["kind"] == "alarm"]
    assert alarm["sends"] == 60
    await clocks.stop()


async def none_early_the_clocks_on_time(
    world: World, dropped: str, doubled: str, untold: str
) -> None:
    """None before its second; the clocks' own on time."""
    late = await world.db.prepare(
        "SELECT s.installation_id AS i, min(a.started_at - s.due_at) AS early,"
        " max(a.started_at - s.due_at) AS late FROM schedule_attempts a"
        " JOIN schedules s ON s.id = a.schedule_id GROUP BY 1"
    ).all()
    by = {r["i"]: r for r in late.results}
    assert min(r["early"] for r in by.values()) >= 0
    assert by[doubled]["late"] < 2 * SECOND
    assert by[untold]["late"] < 2 * SECOND
    # What the dropped alarm and the killed one left, the watchdog caught once it was overdue
    # past the grace (the first cron tick, below): it sent some itself and woke both clocks,
    # which sent the rest.
    assert by[dropped]["early"] >= 30 * SECOND


async def the_operator_sees_the_clocks(world: World, reports: list[dict[str, int]]) -> None:
    """The operator sees the clocks' alarms and what the watchdog caught."""
    _, samples = await scrape(world.app)
    alarms = [h for h in await history(world) if h["kind"] == "alarm"]
    assert value(samples, "scheduling_ticks_total", kind="alarm") == len(alarms) > 3
    caught = sum(r["caught"] for r in reports)
    assert value(samples, "scheduling_watchdog_caught_total", what="schedules") == caught
    assert value(samples, "scheduling_watchdog_caught_total", what="clocks") == 1 + sum(
        r["clocks_rearmed"] for r in reports
    )
    fact = await clock_fact(world)
    assert fact is not None
    assert f"the watchdog sent {caught} schedules no clock took and woke 3 clocks" in fact


@pytest.mark.looptime
async def test_chaos_every_schedule_is_sent_once_and_the_watchdog_catches_what_clocks_miss(
    db: SqliteDatabase,
) -> None:
    world = World(db, LoopClock(START_MS), env=base_env(SCHEDULE_CLOCK="1"))
    clocks = FaultyClocks(world)
    world.app.services.clocks = clocks
    world.core.faults.set_latency(0.5)
    watched = world.http.handler = InFlight(world.http.handler)
    due = START_MS + 5 * MINUTE
    dropped, doubled, untold, killed = [await world.install() for _ in range(4)]
    for n, installation in enumerate((dropped, doubled, untold, killed)):
        await bulk_due(world, installation, 15, due, f"c{n}_")
    for installation in (dropped, doubled, killed):  # the untold one's clock never hears
        await clocks.arm(installation.id, due - LEAD_MS)
    clocks.drop.add(dropped.id)
    clocks.twice.add(doubled.id)

    # The watchdog a minute before: the untold clock is told (it had to move), the rest not.
    await until(world.clock, due - MINUTE)
    before = await world.app.tick(due - MINUTE)
    assert (before["watchdog"], before["clocks_rearmed"], before["caught"]) == (1, 1, 0)

    await until(world.clock, due + 200)
    assert watched.now.get(killed.id)  # its alarm has requests out
    clocks.kill(killed.id)
    # Then the cron, a minute at a time, until nothing is live.
    reports = []
    for minute in range(1, 6):
        await until(world.clock, due + minute * MINUTE)
        reports.append(await world.app.tick(due + minute * MINUTE))
        await clocks.idle()
        if not await live(world):
            break

    assert await live(world) == 0
    ended = await world.db.prepare("SELECT status, count(*) AS n FROM schedules GROUP BY 1").all()
    assert ended.results == [{"status": "completed", "n": 60}]
    # Each applied once by Dee Wan (a killed claim's resend was replayed by its key).
    applied = Counter(entry.idempotency_key for entry in world.core.state.log)
    assert len(applied) == 60
    assert set(applied.values()) == {1}
    await none_early_the_clocks_on_time(world, dropped.id, doubled.id, untold.id)
    assert reports[0]["clocks_rearmed"] == 2
    assert reports[0]["caught"] > 0
    # Never past the cap, though clocks and the watchdog sent to one installation at once.
    assert max(watched.peak.values()) <= 6
    assert watched.peak_per_schedule == 1
    assert watched.sent_after_completed == []
    await the_operator_sees_the_clocks(world, reports)
    await clocks.stop()


async def live(world: World) -> int:
    found = await world.db.prepare(
        "SELECT count(*) AS n FROM schedules WHERE status IN ('pending', 'retrying', 'running')"
    ).first()
    return int((found or {})["n"])


@pytest.mark.looptime
async def test_the_watchdog_tells_the_earliest_clocks_first_within_its_subrequests(
    db: SqliteDatabase,
) -> None:
    # 25 subrequests a tick, less a batch of its own sends (20): five clocks told a minute.
    world, clocks = clock_world(db, MAX_SENDS_PER_TICK="25")
    installations = [await world.install() for _ in range(8)]
    for n, installation in enumerate(installations):
        await bulk_due(world, installation, 1, START_MS + (8 - n) * 5 * SECOND, f"w{n}_")

    report = await world.app.tick(START_MS)

    assert (report["clocks_rearmed"], report["limit_reached"]) == (5, 1)
    assert set(clocks.next_wake_ups()) == {i.id for i in installations[3:]}
    await clocks.stop()

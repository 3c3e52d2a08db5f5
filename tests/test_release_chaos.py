"""Order under faults (issue 47): releases sent by alarm clocks that are dropped, delivered
twice, never told or killed mid-release, by two ticks at once and by a tick killed mid-release,
beside a Dee Wan that answers slowly and sometimes 503. Every item is applied exactly once
(resends carry its key), and never before every earlier item of its release was applied."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections import Counter

import pytest

from fake_core import Fault
from scheduling.domain.schedules import NewSchedule, new_release
from scheduling.domain.times import ResolvedTime
from scheduling.repository import releases, schedules
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import START_MS, LoopClock, base_env
from tests.support.in_flight import FaultyClocks, InFlight, Yielding, until
from tests.support.world import MINUTE, World

ITEMS = 6
LEAD_MS = 1_500


async def crashing_tick(world: World, now: int) -> None:
    """A runner killed once its first command has left: what it claimed stays running."""
    sent_before = len(world.core.calls.of("transitions"))
    task = asyncio.create_task(world.app.tick(now))
    while len(world.core.calls.of("transitions")) == sent_before and not task.done():  # noqa: ASYNC110
        await asyncio.sleep(0)
    while not task.done():  # a kill runs no cleanup
        task.cancel()
        await asyncio.sleep(0)
    await asyncio.gather(task, return_exceptions=True)


async def a_release(world: World, installation_id: str, due: int, tag: str) -> list[str]:
    """A waiting release of ITEMS publishes, each of its own content, made through the
    schedules' one create (the release written first in its batch)."""
    when = ResolvedTime(due, "2026-07-01T10:05", "UTC", None)
    person = ("usr_editor", "Ada")
    made = new_release(f"rel_{tag}", installation_id, person, f"R {tag}", when, START_MS)
    rows = []
    for n in range(ITEMS):
        content_id = f"cnt_{tag}_{n}"
        world.core.state.add_content(content_id, f"Item {tag} {n}")
        group = world.core.state.group_of(content_id)
        rows.append(
            NewSchedule(
                id=f"sch_{tag}_{n}",
                installation_id=installation_id,
                content_id=content_id,
                kind="publish",
                to_state="published",
                version_id=group.current_version_id,
                workflow_revision=group.revision,
                due_at=due,
                timezone="UTC",
                local_time="2026-07-01T10:05",
                fold=None,
                requested_by="usr_editor",
                requested_by_name="Ada",
                release_id=made.id,
                release_position=n + 1,
            )
        )
    await schedules.create_all(world.db, rows, START_MS, first=[releases.insert(world.db, made)])
    return [row.id for row in rows]


async def attempts_of(world: World, schedule_id: str) -> list[dict[str, object]]:
    found = (
        await world.db.prepare(
            "SELECT started_at, finished_at, code FROM schedule_attempts WHERE schedule_id = ?"
            " ORDER BY attempt"
        )
        .bind(schedule_id)
        .all()
    )
    return found.results


async def sent_in_order_once(world: World, lines: list[list[str]]) -> None:
    """Every item applied once (a resend carries its key: Dee Wan replays it); and no item's
    first try left before the answer that applied the item before it had come back."""
    keys = {
        str(r["id"]): str(r["idempotency_key"])
        for r in (await world.db.prepare("SELECT id, idempotency_key FROM schedules").all()).results
    }
    applied = Counter(entry.idempotency_key for entry in world.core.state.log)
    for line in lines:
        assert [applied[keys[sid]] for sid in line] == [1] * len(line)
        for before, after in itertools.pairwise(line):
            done = [
                int(str(a["finished_at"]))
                for a in await attempts_of(world, before)
                if a["code"] in ("transition_applied", "idempotent_replay")
            ]
            first = min(int(str(a["started_at"])) for a in await attempts_of(world, after))
            assert first >= min(done), f"{after} left before {before} was applied"
    ended = await world.db.prepare("SELECT status, count(*) AS n FROM schedules GROUP BY 1").all()
    assert ended.results == [{"status": "completed", "n": sum(len(line) for line in lines)}]
    done_releases = await world.db.prepare("SELECT DISTINCT status FROM releases").all()
    assert done_releases.results == [{"status": "completed"}]


async def live(world: World) -> int:
    found = await world.db.prepare(
        "SELECT count(*) AS n FROM schedules"
        " WHERE status IN ('pending', 'retrying', 'queued', 'running')"
    ).first()
    return int((found or {})["n"])


@pytest.mark.looptime
async def test_clocks_dropped_doubled_untold_and_killed_keep_each_release_in_order(
    db: SqliteDatabase,
) -> None:
    world = World(db, LoopClock(START_MS), env=base_env(SCHEDULE_CLOCK="1"))
    clocks = FaultyClocks(world)
    world.app.services.clocks = clocks
    world.core.faults.set_latency(0.3)
    world.core.faults.push(Fault.respond(503, "unavailable"), times=4)  # retried with its key
    watched = InFlight(world.http.handler)
    world.http.handler = watched
    due = START_MS + 5 * MINUTE
    dropped, doubled, untold, killed = [await world.install() for _ in range(4)]
    lines = []
    for n, installation in enumerate((dropped, doubled, untold, killed)):
        lines.append(await a_release(world, installation.id, due, f"c{n}"))
    for installation in (dropped, doubled, killed):  # the untold one's clock never hears
        await clocks.arm(installation.id, due - LEAD_MS)
    clocks.drop.add(dropped.id)
    clocks.twice.add(doubled.id)
    await until(world.clock, due - MINUTE)
    await world.app.tick(due - MINUTE)  # the watchdog tells the untold clock

    await until(world.clock, due + 200)
    assert watched.now.get(killed.id)  # its alarm has an item out
    clocks.kill(killed.id)
    for minute in range(1, 10):
        await until(world.clock, due + minute * MINUTE)
        await world.app.tick(due + minute * MINUTE)
        await clocks.idle()
        if not await live(world):
            break
    assert await live(world) == 0
    await sent_in_order_once(world, lines)
    assert watched.peak_per_schedule == 1
    assert watched.sent_after_completed == []
    await clocks.stop()


@pytest.mark.looptime
async def test_two_ticks_at_once_and_a_tick_killed_mid_release_keep_it_in_order(
    db: SqliteDatabase,
) -> None:
    world = World(db, LoopClock(START_MS))
    world.db = Yielding(db)  # type: ignore[assignment]  # the runners really interleave
    world.app.services.db = world.db
    world.core.faults.set_latency(0.2)
    watched = InFlight(world.http.handler)
    world.http.handler = watched
    due = START_MS + 5 * MINUTE
    lines = [await a_release(world, (await world.install()).id, due, f"t{n}") for n in range(3)]
    world.core.faults.policy = None
    rng = random.Random(47)
    world.clock.now = due
    await asyncio.gather(world.app.tick(due), world.app.tick(due))  # two at once
    # Killed once its first command has left: its claim stays running until the lease ends.
    world.core.faults.push(Fault.respond(503, "unavailable"), times=rng.randrange(1, 4))
    for minute in range(1, 12):
        at = due + minute * MINUTE
        world.clock.now = at
        if minute == 1:
            await crashing_tick(world, at)
        else:
            await asyncio.gather(world.app.tick(at), world.app.tick(at))
        if not await live(world):
            break
    assert await live(world) == 0
    await sent_in_order_once(world, lines)
    assert watched.peak_per_schedule == 1
    assert watched.sent_after_completed == []

"""Fault-injection soak: thousands of schedules, a hostile core, crashing runners, tick by tick.
No transition is applied twice or lost, none sent past its cap; attempt rows match core's log.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter, defaultdict
from typing import Any

import pytest

from fake_core import RandomFaults
from scheduling.domain.schedules import NewSchedule
from scheduling.repository import schedules
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock, base_env, runner_status
from tests.support.world import World

INSTALLATIONS = 20
PER_INSTALLATION = 100
SPREAD_MINUTES = 60
MINUTE = 60_000
MAX_LATENESS_MS = 900_000
MAX_ATTEMPTS = 5


async def seed(world: World, rng: random.Random) -> dict[str, NewSchedule]:
    """Schedules through the repository the create handler uses, spread over an hour."""
    created: dict[str, NewSchedule] = {}
    start = world.clock.now_ms()
    for i in range(INSTALLATIONS):
        installation = await world.install()
        for j in range(PER_INSTALLATION):
            content_id = f"cnt_{i}_{j}"
            world.core.state.add_content(content_id, f"Item {i}.{j}")
            group = world.core.state.group_of(content_id)
            due = start + rng.randrange(1, SPREAD_MINUTES) * MINUTE + rng.randrange(0, 59) * 1000
            new = NewSchedule(
                id=f"sch_{i}_{j}",
                installation_id=installation.id,
                content_id=content_id,
                kind="publish",
                to_state="published",
                version_id=group.current_version_id,
                workflow_revision=group.revision,
                due_at=due,
                timezone="UTC",
                local_time="x",
                fold=None,
                requested_by="usr_editor",
                requested_by_name="Ada",
            )
            await schedules.create(world.db, new, start)
            created[new.id] = new
    return created


async def crashing_tick(world: World, now: int) -> None:
    """A runner that dies once its first command has left: claimed rows stay running."""
    sent_before = len(world.core.calls.of("transitions"))
    task = asyncio.create_task(world.app.tick(now))
    while len(world.core.calls.of("transitions")) == sent_before and not task.done():  # noqa: ASYNC110
        await asyncio.sleep(0)
    # A kill runs no cleanup: cancel again whenever the runner tries to finish its work.
    while not task.done():
        task.cancel()
        await asyncio.sleep(0)
    await asyncio.gather(task, return_exceptions=True)


async def tick_until_drained(world: World, rng: random.Random) -> tuple[int, int]:
    """A tick a minute, one in twelve or so crashing, until no schedule is live; how many
    ticks, and how many crashed."""
    ticks = crashes = 0
    while True:
        world.clock.advance(MINUTE)
        live = await world.db.prepare(
            "SELECT count(*) AS n FROM schedules WHERE status IN ('pending', 'retrying', 'running')"
        ).first()
        if not live or live["n"] == 0:
            return ticks, crashes
        if rng.random() < 0.08:
            await crashing_tick(world, world.clock.now_ms())
            crashes += 1
        else:
            await world.app.tick(world.clock.now_ms())
        ticks += 1
        assert ticks < 500, "the soak did not drain"


def sends_within_their_caps(
    calls: list[Any], key_to_id: dict[str, str], created: dict[str, NewSchedule]
) -> Counter[str]:
    """Nothing sent past its cap, nor more often than MAX_ATTEMPTS; the sends per schedule."""
    sends_per_schedule: Counter[str] = Counter()
    for call in calls:
        sid = key_to_id[call.header("Idempotency-Key") or ""]
        sends_per_schedule[sid] += 1
        assert call.at_ms <= created[sid].due_at + MAX_LATENESS_MS, sid
    assert max(sends_per_schedule.values()) <= MAX_ATTEMPTS
    return sends_per_schedule


async def the_operator_sees_it_drained(world: World, ended: Counter[str]) -> None:
    """Nothing waiting, nothing stalled, every row counted once."""
    status = await runner_status(world.app)
    assert (status["due_backlog"], status["stalled"]) == (0, False)
    assert set(status["schedules"].values()) == {0}
    assert {k: v for k, v in status["finished_last_24h"].items() if v} == dict(ended)


@pytest.mark.soak
async def test_soak_no_double_apply_no_loss_no_late_send(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    world = World(
        db,
        clock,
        env=base_env(
            MAX_ROWS_PER_BATCH="100",
            SEND_CONCURRENCY="50",
            MAX_ATTEMPTS=str(MAX_ATTEMPTS),
            MAX_LATENESS_MS=str(MAX_LATENESS_MS),
        ),
    )
    rng = random.Random(20261130)
    created = await seed(world, rng)
    assert len(created) >= 2000
    world.core.faults.policy = RandomFaults(seed=7, rate=0.3)

    ticks, crashes = await tick_until_drained(world, rng)

    rows = {r["id"]: r for r in (await db.prepare("SELECT * FROM schedules").all()).results}
    attempt_rows = (await db.prepare("SELECT * FROM schedule_attempts").all()).results
    calls = world.core.calls.of("transitions")
    key_to_id = {f"sched:{n.installation_id}:{n.id}:r1": n.id for n in created.values()}

    # None lost: every schedule ended, with a reason.
    assert Counter(r["status"] for r in rows.values()).keys() <= {"completed", "refused"}
    assert all(r["result_code"] for r in rows.values())

    # No transition applied twice, and every completed one was applied exactly once.
    applied = Counter(entry.idempotency_key for entry in world.core.state.log)
    assert applied
    assert max(applied.values()) == 1
    for key, sid in key_to_id.items():
        if rows[sid]["status"] == "completed":
            assert applied[key] == 1, sid

    sends_per_schedule = sends_within_their_caps(calls, key_to_id, created)

    # The attempt rows are the sends core recorded, one for one.
    attempts_per_schedule = Counter(a["schedule_id"] for a in attempt_rows)
    assert attempts_per_schedule == sends_per_schedule
    for sid, r in rows.items():
        assert r["attempt_count"] == attempts_per_schedule[sid]

    # Crashed attempts stay visible as "outcome unknown".
    unknown = [a for a in attempt_rows if a["finished_at"] is None]
    assert crashes > 0
    assert unknown

    await the_operator_sees_it_drained(world, Counter(r["status"] for r in rows.values()))

    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows.values():
        outcomes[r["status"]][r["result_code"]] += 1
    print(
        f"\nsoak: {len(rows)} schedules, {ticks} ticks ({crashes} crashed), {len(calls)} sends, "
        f"{len(unknown)} unknown outcomes; {dict(outcomes)}"
    )
    assert (
        outcomes["completed"]["transition_applied"] + outcomes["completed"]["idempotent_replay"]
        > 1500
    )

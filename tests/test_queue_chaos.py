"""Chaos with queue consumers: duplicated and redelivered messages, a consumer killed
mid-batch, two ticks at once, 5xx and dropped answers. Nothing is applied twice, nothing is
lost, nothing is sent past its lateness cap, every message is acknowledged only after what
it claimed is settled, and no installation ever has more than its cap in flight."""

from __future__ import annotations

import asyncio
import contextvars
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

from fake_core import Fault
from scheduling.ports import QueueMessage
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock, base_env
from tests.support.queue import Consumers, InFlight, Yielding
from tests.support.world import MINUTE, World, bulk_due, until_sent

INSTALLATIONS = 5
ROWS = 40  # each
CAP = 6
LATENESS_MS = 15 * MINUTE

# The lease tokens each consumer invocation took (a claim's token comes from the crypto port).
tokens: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("tokens", default=None)


class Chaos(Consumers):
    """Consumers whose queue misbehaves as at-least-once delivery allows, and whose acks are
    checked against D1 at the moment they are made."""

    def __init__(self, world: World, **options: Any) -> None:
        super().__init__(world.app, **options)
        self.world = world
        self.deliveries = 0
        self.early_acks: list[tuple[str, list[str]]] = []
        self.acks = 0

    async def _record(self, bodies: Any) -> None:
        await super()._record(bodies)
        await self._send(bodies)  # every message sent twice: a duplicate of each

    async def _consume(self, messages: Sequence[QueueMessage]) -> None:
        self.deliveries += 1
        mine: list[str] = []
        tokens.set(mine)
        for message in messages:
            message.ack = self._checked(message, mine)  # type: ignore[method-assign]
        await super()._consume(messages)
        if self.deliveries % 5 == 0:
            # As if the consumer died after its work, before the queue heard the acks: every
            # message of the batch comes back.
            for message in messages:
                message.outcome = None  # type: ignore[attr-defined]
            raise RuntimeError("lost the acks")

    def _checked(self, message: QueueMessage, mine: list[str]) -> Any:
        ack = message.ack
        named = [sid for ids in message.body["ids"].values() for sid in ids]

        def checked_ack() -> None:
            # Acknowledged only after its settle: none of its rows is still running under a
            # lease this invocation took.
            marks = ",".join("?" * len(named))
            held = self.world.db.connection.execute(
                f"SELECT id, lease_token FROM schedules WHERE id IN ({marks})"
                " AND status = 'running'",
                named,
            ).fetchall()
            unsettled = [row[0] for row in held if row[1] in mine]
            if unsettled:
                self.early_acks.append((message.id, unsettled))
            self.acks += 1
            ack()

        return checked_ack


async def test_chaos_with_consumers_applies_everything_once_and_loses_nothing(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    world = World(db, clock, env=base_env(MAX_IN_FLIGHT_PER_INSTALLATION=str(CAP)))
    installations = [await world.install() for _ in range(INSTALLATIONS)]
    due = clock.now + MINUTE
    for n, installation in enumerate(installations):
        await bulk_due(world, installation, ROWS, due, f"c{n}_")
    rng = random.Random(20)
    contents = [f"c{n}_{i}" for n in range(INSTALLATIONS) for i in range(ROWS)]
    for content in rng.sample(contents, 40):
        world.core.faults.push(Fault.respond(503, "busy"), content_id=content)
    for content in rng.sample(contents, 40):
        world.core.faults.push(Fault.apply_then_drop(), content_id=content)  # applied, no answer
    world.core.faults.set_latency(0.003)
    watched = InFlight(world.app.services.http)
    world.app.services.http = watched
    world.app.services.db = Yielding(world.db)
    crypto = world.app.services.crypto
    real_token = crypto.random_token

    def noted_token() -> str:
        token = real_token()
        taken = tokens.get()
        if taken is not None:
            taken.append(token)
        return token

    crypto.random_token = noted_token  # type: ignore[method-assign]

    async with Chaos(world, consumers=4, max_batch_size=3, delay_scale=0.01) as chaos:
        # Two ticks at once, and a consumer killed mid-batch with its requests out.
        clock.now = due
        ticks = asyncio.gather(world.app.tick(due), world.app.tick(due))
        await until_sent(world)
        chaos.queue.deliveries()[0].cancel()
        first, second = await ticks
        assert first["dispatched"] + second["dispatched"] == INSTALLATIONS * ROWS
        await asyncio.wait_for(chaos.queue.idle(), 60)
        # Then a tick a minute until nothing is live: retries, and the killed claims once
        # their lease ran out.
        for minute in range(1, 15):
            if not await live(world):
                break
            await chaos.tick(due + minute * MINUTE)

    assert chaos.queue.stats.failed_deliveries >= 2  # the killed one, and the lost acks
    # Nothing lost: every schedule completed.
    assert await live(world) == 0
    ended = Counter(
        r["status"] for r in (await world.db.prepare("SELECT status FROM schedules").all()).results
    )
    assert ended == {"completed": INSTALLATIONS * ROWS}
    # Nothing applied twice: Dee Wan applied each key once (a resend was replayed).
    applied = Counter(entry.idempotency_key for entry in world.core.state.log)
    assert len(applied) == INSTALLATIONS * ROWS
    assert set(applied.values()) == {1}
    # Nothing sent before its time or past its cap.
    late = await world.db.prepare(
        "SELECT min(a.started_at - s.due_at) AS early, max(a.started_at - s.due_at) AS late"
        " FROM schedule_attempts a JOIN schedules s ON s.id = a.schedule_id"
    ).first()
    assert late is not None
    assert late["early"] >= 0
    assert late["late"] <= LATENESS_MS
    # Every message acknowledged only after its settle, none dead-lettered.
    assert chaos.acks > 0
    assert chaos.early_acks == []
    assert chaos.queue.stats.dead_letters == []
    # No installation's Dee Wan had more than its cap in flight, though four consumers with
    # six slots each ran at once.
    assert max(watched.peak.values()) <= CAP
    assert watched.peak_total > CAP
    # One schedule never had two requests out at once, and none left once one had
    # answered that it was applied.
    assert watched.peak_per_schedule == 1
    assert watched.sent_after_completed == []
    # The duplicates and redeliveries found their rows claimed or settled: at most one
    # request left per claim (each claim opens one attempt row).
    calls = Counter(c.header("Idempotency-Key") for c in world.core.calls.of("transitions"))
    claims = (
        await world.db.prepare(
            "SELECT s.idempotency_key AS k, count(*) AS n FROM schedule_attempts a"
            " JOIN schedules s ON s.id = a.schedule_id GROUP BY k"
        ).all()
    ).results
    assert all(calls[r["k"]] <= r["n"] for r in claims)
    assert sum(calls.values()) > INSTALLATIONS * ROWS  # the faults made some go twice


async def live(world: World) -> int:
    found = await world.db.prepare(
        "SELECT count(*) AS n FROM schedules WHERE status IN ('pending', 'retrying', 'running')"
    ).first()
    return int((found or {})["n"])

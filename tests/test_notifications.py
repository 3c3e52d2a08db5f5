"""Signed webhooks from a transactional outbox (issue 19), through the public surface: the
manage page's form, real ticks against the fake Dee Wan, and receivers that answer what the
test scripts. Every signature is checked with the official `standardwebhooks` library."""

from __future__ import annotations

import asyncio
import base64
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fake_core import Fault
from fake_core.transport import answered
from scheduling.channels.webhook import secret_context
from scheduling.domain.notifications import RETRY_DELAYS_MS
from scheduling.ports import OutboundRequest, OutboundResponse
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.app import OTHER_TOKEN_KEY, FakeClock, base_env
from tests.support.runtimes import Runtime, added_endpoint
from tests.support.waiting import until
from tests.support.webhooks import (
    DEE_WAN_REFUSALS,
    HOOK_URL,
    Receiver,
    add_endpoint,
    signed_by,
    with_receivers,
)
from tests.support.world import (
    MINUTE,
    World,
    crash_during_send,
    local,
    row,
    schedule,
    schedules_on,
    tick_at,
    tick_until_sent,
)

OTHER_URL = "https://relay.example.org/hooks/sched?team=7"
QUIET_URL = "https://quiet.example.net/in"


class Endpoints:
    """Three endpoints on one installation: two hear of refusals, one of completions only."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.loud, self.other, self.quiet = (
            Receiver(HOOK_URL),
            Receiver(OTHER_URL),
            Receiver(QUIET_URL),
        )
        self.network = with_receivers(world, self.loud, self.other, self.quiet)
        self.secrets: dict[str, str] = {}

    async def set_up(self, events: tuple[str, ...] = ("schedule.refused",)) -> Any:
        installation = await self.world.install()
        self.manage = await self.world.browser_for(installation, content_id=None)
        self.secrets[HOOK_URL] = await add_endpoint(self.manage, installation.id, HOOK_URL, events)
        self.secrets[OTHER_URL] = await add_endpoint(
            self.manage, installation.id, OTHER_URL, events
        )
        self.secrets[QUIET_URL] = await add_endpoint(
            self.manage, installation.id, QUIET_URL, ("schedule.completed",)
        )
        return installation

    async def one_due(self, fault: Fault | None = None, **push: Any) -> tuple[Any, dict[str, Any]]:
        """`set_up`, then a publish due in 5 minutes that Dee Wan answers with `fault`."""
        installation = await self.set_up()
        made = await schedule(self.world, installation)
        if fault is not None:
            self.world.core.faults.push(fault, endpoint="transitions", **push)
        return installation, made


@pytest.fixture
def hooks(world: World) -> Endpoints:
    return Endpoints(world)


def refused_events(receiver: Receiver) -> list[dict[str, Any]]:
    return [d.event for d in receiver.received if d.event["type"] == "schedule.refused"]


async def deliveries(world: World, where: str = "1 = 1") -> list[dict[str, Any]]:
    result = await world.db.prepare(f"SELECT * FROM webhook_deliveries WHERE {where}").all()
    return result.results


# -- every way a schedule ends refused ----------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "code"),
    DEE_WAN_REFUSALS,
    ids=[f"{code}-{i}" for i, (_, code) in enumerate(DEE_WAN_REFUSALS)],
)
async def test_each_refusal_by_dee_wan_is_told_once_to_each_subscribed_endpoint_in_its_tick(
    world: World, hooks: Endpoints, fault: Fault, code: str
) -> None:
    _, s = await hooks.one_due(fault)
    report = await tick_at(world, s["due_at"])
    assert (await row(world, s["id"]))["result_code"] == code
    assert report["delivery_events"] == 2
    assert report["deliveries_delivered"] == 2
    for receiver in (hooks.loud, hooks.other):
        [event] = refused_events(receiver)
        [delivery] = receiver.received
        assert signed_by(hooks.secrets[receiver.url], delivery)
        assert not signed_by(hooks.secrets[QUIET_URL], delivery)
        assert event["data"]["schedule_id"] == s["id"]
        assert event["data"]["status"] == "refused"
        assert event["data"]["result_code"] == code
    assert hooks.quiet.received == []  # it hears of completions only
    assert hooks.loud.received[0].id != hooks.other.received[0].id
    # Nothing more, ever: the next ticks send nothing again.
    await tick_at(world, s["due_at"] + MINUTE)
    await tick_at(world, s["due_at"] + 60 * MINUTE)
    assert (len(hooks.loud.received), len(hooks.other.received)) == (1, 1)


async def test_a_refusal_is_told_once_signed_with_the_secret_sealed_in_the_database(
    runtime: Runtime,
) -> None:
    """On both runtimes (the Worker's: the secret made and sealed by WebCrypto, the event
    written in D1 with the settle, signed with WebCrypto's HMAC and sent by its fetch)."""
    installation_id = await runtime.install()
    with runtime.receiver() as receiver:
        endpoint_id, secret = await added_endpoint(runtime, installation_id, receiver.url)
        assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
        [row] = await runtime.rows(
            "SELECT secret_sealed FROM notification_endpoints WHERE id = ?", endpoint_id
        )
        assert secret not in row["secret_sealed"]
        context = secret_context(installation_id, endpoint_id)
        assert await runtime.unsealed(row["secret_sealed"], context) == secret
        editor = await runtime.open_page(installation_id, content_id=runtime.content)
        due = runtime.minute_ahead(2)
        await editor.create(installation_id, local(due), timezone="UTC")
        runtime.fault(Fault.respond(409, "workflow_conflict"))
        await runtime.tick(due)
        [delivery] = receiver.received
        assert signed_by(secret, delivery)
        assert delivery.headers["content-type"] == "application/json"
        event = delivery.event
        assert (event["type"], event["data"]["installation_id"]) == (
            "schedule.refused",
            installation_id,
        )
        assert event["data"]["result_code"] == "workflow_conflict"
        sql = "SELECT id, status, attempt_count, last_http_status, last_error"
        [told] = await runtime.rows(f"{sql} FROM webhook_deliveries WHERE installation_id = ?",
                                    installation_id)  # fmt: skip
        assert told == {"id": delivery.id, "status": "delivered", "attempt_count": 1,
                        "last_http_status": 204, "last_error": None}  # fmt: skip
        await runtime.tick(due + MINUTE)
        assert len(receiver.received) == 1  # told once


async def test_retry_exhausted_by_attempts(db: SqliteDatabase, clock: FakeClock) -> None:
    world = World(db, clock, env=base_env(MAX_ATTEMPTS="2"))
    hooks = Endpoints(world)
    installation, s = await hooks.one_due(Fault.timeout(), times=2)
    await tick_at(world, s["due_at"])
    assert hooks.loud.received == []  # retrying: not subscribed
    retry_at = (await row(world, s["id"]))["next_attempt_at"]
    await tick_at(world, retry_at)
    [event] = refused_events(hooks.loud)
    assert (event["data"]["result_code"], event["data"]["attempts"]) == ("retry_exhausted", 2)
    assert event["data"]["ended_by"] == "attempts"
    assert event["data"]["outcome_unknown"] is True  # the last attempt timed out
    assert event["data"]["message"] == (
        "Dee Wan did not accept it in 2 tries, so the plugin stopped trying. Its last try got"
        " no answer, so whether Dee Wan applied it is unknown: check the content in Dee Wan."
    )
    # The card says the same sentence, and which limit ended it.
    page = (await hooks.manage.get(f"/installations/{installation.id}")).body.decode()
    assert event["data"]["message"] in page
    assert schedules_on(page)[0]["ended-by"] == "attempts"


async def test_retry_exhausted_by_the_lateness_cap_at_settle(
    world: World, hooks: Endpoints
) -> None:
    _, s = await hooks.one_due(Fault.respond(503, "busy"))
    await tick_at(world, s["due_at"] + 895_000)  # a 15 s backoff cannot fit before the cap
    [event] = refused_events(hooks.loud)
    assert event["data"]["result_code"] == "retry_exhausted"
    assert event["data"]["ended_by"] == "lateness"
    assert event["data"]["outcome_unknown"] is False  # Dee Wan answered 503: not applied
    assert event["data"]["message"] == (
        "It was still not sent 15 minutes after its time had passed, so the plugin stopped"
        " trying: nothing is sent later than that."
    )


async def test_retry_exhausted_by_a_retry_after_past_the_limit(
    world: World, hooks: Endpoints
) -> None:
    _, s = await hooks.one_due(Fault.respond(429, "slow_down", retry_after=7200))
    await tick_at(world, s["due_at"])
    [event] = refused_events(hooks.loud)
    assert (event["data"]["result_code"], event["data"]["ended_by"]) == (
        "retry_exhausted",
        "retry_after",
    )
    assert event["data"]["message"].startswith("Dee Wan asked to wait past the limit")
    assert (await row(world, s["id"]))["ended_by"] == "retry_after"


async def test_refused_unsent_past_the_cap(world: World, hooks: Endpoints) -> None:
    _, s = await hooks.one_due()
    report = await tick_at(world, s["due_at"] + 900_001)  # the cron was down for 15 minutes
    assert report["refused_unsent"] == 1
    [event] = refused_events(hooks.loud)
    assert (event["data"]["result_code"], event["data"]["attempts"]) == ("retry_exhausted", 0)
    assert (event["data"]["ended_by"], (await row(world, s["id"]))["ended_by"]) == (
        "lateness",
        "lateness",
    )
    assert event["data"]["outcome_unknown"] is False
    assert len(refused_events(hooks.other)) == 1


async def test_a_reclaimed_lease_past_the_cap_is_told_with_its_outcome_unknown(
    world: World, hooks: Endpoints
) -> None:
    _, s = await hooks.one_due(Fault.delay(5))
    await crash_during_send(world, s["due_at"])
    await tick_at(world, s["due_at"] + 900_001)
    [event] = refused_events(hooks.loud)
    assert (event["data"]["result_code"], event["data"]["attempts"]) == ("retry_exhausted", 1)
    assert event["data"]["ended_by"] == "lateness"
    assert event["data"]["outcome_unknown"] is True  # its one attempt never finished


async def test_claimed_but_past_the_cap_when_its_slot_came(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    env = base_env(
        SEND_CONCURRENCY="1", MAX_LATENESS_MS="60000", LEASE_MS="215000", TICK_BUDGET_MS="100000"
    )
    world = World(db, clock, env=env)
    hooks = Endpoints(world)
    installation = await hooks.set_up()
    first = await schedule(world, installation, "cnt_en")
    second = await schedule(world, installation, "cnt_page")
    world.core.faults.push(Fault.delay(0.05), endpoint="transitions")
    tick = await tick_until_sent(world, first["due_at"])
    world.clock.advance(61_000)  # the one slot comes back to the second claim past its cap
    report = await tick
    assert report["refused_unsent_late"] == 1
    sent_key = world.core.calls.of("transitions")[0].header("Idempotency-Key")
    late = next(r for r in (first, second) if r["idempotency_key"] != sent_key)
    assert (await row(world, late["id"]))["result_code"] == "retry_exhausted"
    assert (await row(world, late["id"]))["ended_by"] == "lateness"
    [event] = refused_events(hooks.loud)
    assert (event["data"]["schedule_id"], event["data"]["attempts"]) == (late["id"], 0)
    assert event["data"]["ended_by"] == "lateness"


async def test_token_unreadable(db: SqliteDatabase, clock: FakeClock) -> None:
    world = World(db, clock)
    hooks = Endpoints(world)
    _, s = await hooks.one_due()
    key = OTHER_TOKEN_KEY
    other = World(db, clock, env=base_env(TOKEN_KEY=key))
    other.core = world.core
    other_hooks = with_receivers(other, hooks.loud, hooks.other, hooks.quiet)
    await tick_at(other, s["due_at"])
    assert (await row(world, s["id"]))["result_code"] == "token_unreadable"
    # The event is in the outbox, but its secrets do not open under this key either: it
    # waits (visibly) and goes out once the key is back.
    assert other_hooks.sent == []
    [waiting, _] = await deliveries(world)
    assert (waiting["status"], waiting["last_error"]) == ("waiting", "secret_unreadable")
    await tick_at(world, waiting["next_attempt_at"])
    [event] = refused_events(hooks.loud)
    assert event["data"]["result_code"] == "token_unreadable"
    assert "rotate it in Dee Wan" in event["data"]["message"]


# -- completed and retrying: only when subscribed --------------------------------------


async def test_completed_and_retrying_go_only_where_subscribed(
    world: World, hooks: Endpoints
) -> None:
    installation = await hooks.set_up(("schedule.refused", "schedule.retrying"))
    s = await schedule(world, installation)
    world.core.faults.push(Fault.respond(503, "busy"), endpoint="transitions")
    await tick_at(world, s["due_at"])
    [retrying] = [d.event for d in hooks.loud.received]
    assert retrying["type"] == "schedule.retrying"
    assert retrying["data"]["next_attempt_at"] is not None
    assert (
        retrying["data"]["message"] == "Dee Wan had a temporary problem; the plugin will try again."
    )
    assert hooks.quiet.received == []
    await tick_at(world, (await row(world, s["id"]))["next_attempt_at"])
    assert [d.event["type"] for d in hooks.quiet.received] == ["schedule.completed"]
    assert [d.event["type"] for d in hooks.loud.received] == ["schedule.retrying"]
    assert signed_by(hooks.secrets[QUIET_URL], hooks.quiet.received[0])


async def test_the_body_says_what_happened_and_nothing_secret(
    world: World, hooks: Endpoints
) -> None:
    installation, s = await hooks.one_due()
    world.core.state.edit("cnt_en")  # stale pin
    await tick_at(world, s["due_at"])
    [delivery] = hooks.loud.received
    event = delivery.event
    assert set(event) == {"type", "timestamp", "data"}
    assert event["data"] == {
        "installation_id": installation.id,
        "schedule_id": s["id"],
        "content_id": "cnt_en",
        "kind": "publish",
        "to": "published",
        "version_id": s["version_id"],
        "due_at": "2026-07-01T10:05:00Z",
        "local_time": "2026-07-01T10:05",
        "timezone": "UTC",
        "status": "refused",
        "result_code": "scheduled_target_stale",
        "ended_by": None,
        "message": (
            "The content changed after it was scheduled (a newer version or workflow change), "
            "so the pinned version was not used. Schedule it again to pin the current version."
        ),
        "attempts": 1,
        "outcome_unknown": False,
        "next_attempt_at": None,
        "page_url": f"https://scheduling.example/installations/{installation.id}",
    }
    # The card says the same sentence.
    page = (await hooks.manage.get(f"/installations/{installation.id}")).body.decode()
    assert event["data"]["message"] in page
    body = delivery.body.decode()
    for secret in (installation.token, *world.core.state.delegations, *hooks.secrets.values()):
        assert secret not in body
    assert "Spring launch" not in body  # no title


# -- retries, crashes, leases ---------------------------------------------------------


async def test_a_failing_receiver_gets_the_same_id_on_the_backoff_until_it_answers_2xx(
    world: World, hooks: Endpoints
) -> None:
    _, s = await hooks.one_due(Fault.respond(409, "workflow_conflict"))
    hooks.loud.answer_next(500, 500, "timeout", "drop", 503)
    now = s["due_at"]
    await tick_at(world, now)
    for delay in RETRY_DELAYS_MS[:5]:
        [waiting] = await deliveries(
            world,
            f"endpoint_id IN (SELECT id FROM notification_endpoints WHERE url = '{HOOK_URL}')",
        )
        assert waiting["status"] == "waiting"
        # 30 s, 2 min, 10 min, 1 h, 3 h, each 80–100 % of that (jitter)
        assert 0.8 * delay <= waiting["next_attempt_at"] - now <= delay
        now = waiting["next_attempt_at"]
        assert (await tick_at(world, now - 1))["delivery_sends"] == 0  # not before its time
        await tick_at(world, now)
    ids = {d.id for d in hooks.loud.received}
    bodies = {d.body for d in hooks.loud.received}
    stamps = [d.headers["webhook-timestamp"] for d in hooks.loud.received]
    assert len(hooks.loud.received) == 6
    assert len(ids) == 1
    assert len(bodies) == 1
    assert len(set(stamps)) == 6  # each attempt signed at its own time
    assert all(signed_by(hooks.secrets[HOOK_URL], d) for d in hooks.loud.received)
    [done] = await deliveries(world, f"id = '{hooks.loud.received[0].id}'")
    assert (done["status"], done["attempt_count"], done["last_http_status"]) == (
        "delivered",
        6,
        204,
    )
    for later in (1, 60, 24 * 60):
        await tick_at(world, now + later * MINUTE)
    assert len(hooks.loud.received) == 6  # a receiver that answered 2xx never gets it again
    assert len(hooks.other.received) == 1


async def test_a_410_disables_the_endpoint_and_what_it_had_waiting(
    world: World, hooks: Endpoints
) -> None:
    installation = await hooks.set_up()
    mine = f"endpoint_id IN (SELECT id FROM notification_endpoints WHERE url = '{HOOK_URL}')"
    hooks.loud.answer_next(500, 500, 500, 410)
    first = await schedule(world, installation, "cnt_en")
    world.core.faults.push(Fault.respond(409, "workflow_conflict"), endpoint="transitions")
    start = first["due_at"]
    await tick_at(world, start)  # A: 500, again at +30 s
    await tick_at(world, start + 30_000)  # A: 500, again at +2.5 min
    second = await schedule(world, installation, "cnt_page", in_minutes=1)
    world.core.faults.push(Fault.respond(409, "workflow_conflict"), endpoint="transitions")
    await tick_at(world, second["due_at"])  # B: 500, again 30 s later
    await tick_at(world, second["due_at"] + 30_000)  # B: 410 Gone
    assert Counter(d["last_error"] for d in await deliveries(world, mine)) == Counter(
        {"endpoint_gone": 2}
    )
    assert {d["status"] for d in await deliveries(world, mine)} == {"failed"}
    endpoint = (
        await world.db.prepare("SELECT disabled_at FROM notification_endpoints WHERE url = ?")
        .bind(HOOK_URL)
        .first()
    )
    assert endpoint is not None
    assert endpoint["disabled_at"] is not None
    page = (await hooks.manage.get(f"/installations/{installation.id}/notifications")).body.decode()
    assert 'data-disabled="true"' in page
    third = await schedule(world, installation, "cnt_en", in_minutes=5)
    world.core.faults.push(Fault.respond(409, "workflow_conflict"), endpoint="transitions")
    await tick_at(world, third["due_at"] + 10 * MINUTE)
    assert len(hooks.loud.received) == 4  # disabled: nothing more, not even A's last try
    assert len(refused_events(hooks.other)) == 3


async def test_killed_between_the_settle_and_the_delivery_delivers_after_restart(
    tmp_path: Path, clock: FakeClock
) -> None:
    """The crash is injected at the store boundary: the settle's batch commits (with its
    event), then the process dies before the delivery is claimed. A new process on the same
    database file delivers it."""
    database = SqliteDatabase(tmp_path / "plugin.sqlite3")
    apply_migrations(database.connection)
    world = World(database, clock)
    hooks = Endpoints(world)
    _, s = await hooks.one_due(Fault.respond(409, "workflow_conflict"))

    class Killed(BaseException):
        pass

    real_batch = database.batch

    async def dies_before_claiming_a_delivery(statements: Any) -> Any:
        if any("UPDATE webhook_deliveries" in s.sql for s in statements):
            raise Killed
        return await real_batch(statements)

    database.batch = dies_before_claiming_a_delivery  # type: ignore[method-assign]
    with pytest.raises(Killed):
        await tick_at(world, s["due_at"])
    assert (await row(world, s["id"]))["status"] == "refused"  # the settle committed
    assert hooks.loud.received == []
    database.close()

    restarted_db = SqliteDatabase(tmp_path / "plugin.sqlite3")
    restarted = World(restarted_db, clock)
    restarted.core = world.core
    with_receivers(restarted, hooks.loud, hooks.other, hooks.quiet)
    await tick_at(restarted, s["due_at"] + MINUTE)
    [event] = refused_events(hooks.loud)
    assert event["data"]["schedule_id"] == s["id"]
    assert signed_by(hooks.secrets[HOOK_URL], hooks.loud.received[0])
    await tick_at(restarted, s["due_at"] + 2 * MINUTE)
    assert len(hooks.loud.received) == 1
    restarted_db.close()


async def test_a_runner_killed_mid_delivery_leaves_it_to_be_resent_with_the_same_id(
    world: World, hooks: Endpoints
) -> None:
    _, s = await hooks.one_due(Fault.respond(409, "workflow_conflict"))
    arrived = asyncio.Event()
    network = world.http.handler

    async def hangs(request: OutboundRequest) -> OutboundResponse:
        """The loud endpoint's delivery arrives, and its answer never does."""
        answer = await answered(network, request)
        if request.url == hooks.loud.url:
            arrived.set()
            await asyncio.sleep(3600)
        return answer

    world.http.handler = hangs
    world.clock.now = s["due_at"]
    tick = asyncio.create_task(world.app.tick(s["due_at"]))
    await until(arrived.is_set, "the delivery arriving", before=tick)
    tick.cancel()
    with pytest.raises(asyncio.CancelledError):
        await tick
    world.http.handler = network
    [sent] = hooks.loud.received
    # Not sent again while its lease holds; once it expired, the same id again.
    assert (await tick_at(world, s["due_at"] + 59_000))["delivery_sends"] == 0
    # (the other endpoint's delivery was in the same killed batch)
    assert (await tick_at(world, s["due_at"] + 60_000))["deliveries_delivered"] == 2
    assert [d.id for d in hooks.loud.received] == [sent.id, sent.id]


async def test_two_runners_at_once_never_send_the_same_delivery_twice(
    world: World, hooks: Endpoints
) -> None:
    installation = await hooks.set_up()
    for i in range(12):
        content = f"bulk{i}"
        world.core.state.add_content(content, f"Item {i}")
    made = [await schedule(world, installation, f"bulk{i}") for i in range(12)]
    world.core.faults.push(
        Fault.respond(409, "workflow_conflict"), endpoint="transitions", times=12
    )
    hooks.loud.default = 500  # everything waits in the outbox
    await tick_at(world, made[0]["due_at"])
    hooks.loud.default = 204
    retry = made[0]["due_at"] + 31_000
    world.clock.now = retry
    await asyncio.gather(world.app.tick(retry), world.app.tick(retry))
    per_id = Counter(d.id for d in hooks.loud.received)
    assert len(per_id) == 12
    assert set(per_id.values()) == {2}  # the failed first try, then exactly one more


async def test_a_settle_that_lost_its_lease_writes_no_event(world: World, hooks: Endpoints) -> None:
    _, s = await hooks.one_due(Fault.respond(409, "workflow_conflict", delay_s=0.05))
    slow = await tick_until_sent(world, s["due_at"])
    await (
        world.db.prepare("UPDATE schedules SET lease_token = 'someone-else' WHERE id = ?")
        .bind(s["id"])
        .run()
    )
    report = await slow
    assert report["lost_lease"] == 1
    assert report["delivery_events"] == 0
    assert await deliveries(world) == []
    assert hooks.loud.received == []


async def test_a_tick_with_no_endpoint_costs_what_it_did(world: World) -> None:
    installation = await world.install()
    s = await schedule(world, installation)
    world.core.faults.push(Fault.respond(409, "workflow_conflict"), endpoint="transitions")
    report = await tick_at(world, s["due_at"])
    # due; the claim (it opens its attempt); next due; settle + finish attempt + last send;
    # the retention purge's step (6); the record (3)
    assert (report["d1_statements"], report["d1_round_trips"]) == (15, 6)
    assert report["delivery_events"] == 0

"""The engine's notification deliveries on known inputs (`runner/deliveries.py`): an
outbox whose claims the test scripts and whose settles it records, channels that answer as
told, and a clock the test moves, driven through `DeliveryWork` on one `Engine`. Each
decision at its edge: a claim of exactly a batch (more may be due) or one fewer (the last);
one message a webhook delivery, one digest a chat endpoint's, oldest first; an endpoint
disabled, deleted or whose secret does not open is not sent to; a chat's next message a
minute on at least; a send fetch refuses handed back, its count undone; a settle D1 refuses
left to the lease; each endpoint opened once.

The mutation map points `runner/deliveries.py` here first (issue 40)."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from fake_core.transport import MockTransport
from scheduling.channels import kinds
from scheduling.channels.port import Event, OpenTarget
from scheduling.domain.notifications import (
    ENDPOINT_GONE,
    GIVE_UP_AFTER_MS,
    HTTP_STATUS,
    MESSAGE_INTERVAL_MS,
    SECRET_UNREADABLE,
    AttemptResult,
    DeliveryStatus,
)
from scheduling.domain.records import (
    ClaimedDelivery,
    DeliveryTarget,
    Message,
    Pacing,
    SettledMessage,
)
from scheduling.limits import delivery_batch_cost
from scheduling.ports import LimitReached, OutboundRequest, OutboundResponse
from scheduling.repository.round_trips import RoundTrips
from scheduling.runner.deliveries import DeliveryWork, deliver_now
from scheduling.runner.engine import Budget, Engine, TickReport
from tests.support.app import FakeClock, base_env, make_app, memory_db
from tests.support.unit_store import store

NOW = 1_780_000_000_000


def delivery(
    id: str, endpoint: str, created_at: int = NOW - 1_000, attempt: int = 1, tried_from: int = 0
) -> ClaimedDelivery:
    return ClaimedDelivery(
        id, endpoint, "ins_1", b"{}", created_at, attempt, tried_from=tried_from or created_at
    )


def target(id: str, kind: str = "webhook", *, disabled: bool = False) -> DeliveryTarget:
    return DeliveryTarget(id, "ins_1", f"https://{id}.example", f"sealed-{id}", disabled, kind)


@dataclass
class Outbox:
    """Claims as scripted (each a list of deliveries and their targets); settles recorded."""

    claims: list[tuple[list[ClaimedDelivery], dict[str, DeliveryTarget]]]
    asked: list[tuple[Any, ...]] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)  # the lease token of each claim
    settled: list[tuple[str, int, list[SettledMessage], int]] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    refuse_settle: bool = False

    async def claim(
        self,
        lease_token: str,
        now: int,
        lease_ms: int,
        limit: int,
        pacing: Pacing,
        named: Sequence[str] | None,
    ) -> tuple[list[ClaimedDelivery], dict[str, DeliveryTarget]]:
        assert pacing == kinds.pacing()  # the registry's, bound into the claim's SQL
        self.asked.append((now, lease_ms, limit, named))
        self.tokens.append(lease_token)
        return self.claims.pop(0) if self.claims else ([], {})

    async def settle(
        self, lease_token: str, lease_until: int, done: list[SettledMessage], now: int
    ) -> list[str]:
        if self.refuse_settle:
            raise LimitReached("d1")
        self.settled.append((lease_token, lease_until, done, now))
        return self.lost


@dataclass
class Channel:
    """Answers as told by endpoint id (delivered unless told), `step` ms after it was asked."""

    clock: FakeClock
    answers: dict[str, AttemptResult] = field(default_factory=dict)
    unreadable: set[str] = field(default_factory=set)
    refuse: set[str] = field(default_factory=set)
    step: int = 0
    opened: list[str] = field(default_factory=list)
    sent: list[tuple[str, tuple[str, str], int]] = field(default_factory=list)

    async def event(self, target: DeliveryTarget, deliveries: Sequence[ClaimedDelivery]) -> Event:
        return Event(",".join(d.id for d in deliveries), target.id.encode())

    async def open(self, target: DeliveryTarget) -> OpenTarget | None:
        self.opened.append(target.id)
        return None if target.id in self.unreadable else target  # type: ignore[return-value]

    async def deliver(self, opened: Any, event: Any, now_ms: int) -> AttemptResult:
        if opened.id in self.refuse:
            raise LimitReached("subrequests")
        self.sent.append((opened.id, (event.id, event.body.decode()), now_ms))
        self.clock.now += self.step
        return self.answers.get(opened.id, AttemptResult(200, None))


@dataclass
class Setup:
    engine: Engine
    outbox: Outbox
    webhook: Channel
    chat: Channel
    clock: FakeClock

    def work(self, named: Sequence[str] | None = None) -> DeliveryWork:
        work = DeliveryWork(self.engine, self.outbox, named)  # type: ignore[arg-type]
        work.channels = {"webhook": self.webhook, "chat": self.chat}  # type: ignore[dict-item]
        return work

    async def run(self, named: Sequence[str] | None = None) -> DeliveryWork:
        work = self.work(named)
        await self.engine.run(work)
        return work


def setup(*claims: tuple[list[ClaimedDelivery], dict[str, DeliveryTarget]], **env: str) -> Setup:
    clock = FakeClock(NOW)
    services = make_app(memory_db(), clock, env=base_env(**env)).services
    services.rng = random.Random(3)
    engine = Engine(
        services,
        RoundTrips(services.db),
        TickReport(),
        clock.now_ms,
        now=NOW,
        budget=Budget(ms=60_000, queries=1_000, sends=1_000),
    )
    return Setup(engine, Outbox(list(claims)), Channel(clock), Channel(clock), clock)


def ends(s: Setup) -> list[tuple[str, DeliveryStatus, int | None, str | None, bool]]:
    return [
        (m.message.id, m.status, m.next_attempt_at, m.error, m.sent)
        for _, _, done, _ in s.outbox.settled
        for m in done
    ]


# -- claims ----------------------------------------------------------------------------------


async def test_a_delivery_is_claimed_sent_and_settled_under_its_lease() -> None:
    s = setup(([delivery("d1", "e1")], {"e1": target("e1")}), MAX_ROWS_PER_TICK="3")
    s.webhook.step = 25
    work = await s.run(named=["d1"])
    assert s.outbox.asked == [(NOW, 60_000, 3, ["d1"])]  # fewer than asked: the last
    [(token, lease_until, [done], settled_at)] = s.outbox.settled
    assert (lease_until, settled_at) == (NOW + 60_000, NOW + 25)
    assert token
    assert s.outbox.tokens == [token]  # claimed and settled under the same lease
    assert s.webhook.sent == [("e1", ("d1", "e1"), NOW)]
    assert (done.status, done.attempted_at, done.finished_at, done.http_status) == (
        DeliveryStatus.DELIVERED,
        NOW,
        NOW + 25,
        200,
    )
    assert (done.sent, done.error, done.next_attempt_at) == (True, None, None)
    report = s.engine.report
    assert (report.delivery_sends, report.deliveries_delivered, report.delivery_delay_max_ms) == (
        1,
        1,
        1_025,
    )
    assert work.cost() == delivery_batch_cost(3)
    assert work.batch_size == 3


@pytest.mark.parametrize(
    ("first", "claims"),
    [(["d1", "d2"], 2), (["d1"], 1)],
    ids=["a whole batch claims again", "one fewer than a batch is the last"],
)
async def test_a_whole_batch_claims_again_one_fewer_is_the_last(
    first: list[str], claims: int
) -> None:
    s = setup(
        ([delivery(d, "e1") for d in first], {"e1": target("e1")}),
        ([delivery("d3", "e1")], {}),
        MAX_ROWS_PER_TICK="2",
    )
    await s.run()
    assert len(s.outbox.asked) == claims
    assert [m[0] for m in ends(s)] == first + ["d3"] * (claims - 1)


async def test_nothing_claimed_ends_the_work() -> None:
    s = setup()
    await s.run()
    assert len(s.outbox.asked) == 1
    assert s.outbox.settled == []


@dataclass
class Thinking(Channel):
    """Answers in a later turn of the loop, as an endpoint across a network does."""

    async def deliver(self, opened: Any, event: Any, now_ms: int) -> AttemptResult:
        for _ in range(10):
            await asyncio.sleep(0)
        return await super().deliver(opened, event, now_ms)


async def test_nothing_left_to_claim_ends_the_work_while_a_batch_still_sends() -> None:
    """A delivery's settle makes nothing more due: the claim that finds nothing ends the work
    at once, without waiting for the batch in flight to claim again after its settle."""
    s = setup(
        ([delivery("d1", "e1"), delivery("d2", "e1")], {"e1": target("e1")}),
        MAX_ROWS_PER_TICK="2",
    )
    s.webhook = Thinking(s.clock)
    work = await s.run()
    assert not work.follows()
    assert len(s.outbox.asked) == 2  # the whole batch, then nothing: no third claim
    assert [m[0] for m in ends(s)] == ["d1", "d2"]


# -- messages --------------------------------------------------------------------------------


async def test_one_message_a_webhook_delivery_one_digest_a_chat_endpoint_oldest_first() -> None:
    claimed = [
        delivery("w2", "hook", created_at=NOW - 500),
        delivery("c1", "chat", created_at=NOW - 900, attempt=2, tried_from=NOW - 9_000),
        delivery("w1", "hook", created_at=NOW - 500),
        delivery("c2", "chat", created_at=NOW - 100, attempt=1, tried_from=NOW - 100),
        delivery("x1", "unknown", created_at=NOW - 2_000),
    ]
    targets = {"hook": target("hook"), "chat": target("chat", "chat")}
    s = setup((claimed, targets))
    work = s.work()
    work._targets.update(targets)
    messages = work._messages(claimed)
    assert [(m.endpoint_id, [d.id for d in m.deliveries], m.digest) for m in messages] == [
        ("unknown", ["x1"], False),
        ("chat", ["c1", "c2"], True),
        ("hook", ["w1"], False),  # the same instant: by id
        ("hook", ["w2"], False),
    ]


async def test_a_chat_digest_waits_a_minute_at_least_a_webhook_its_backoff() -> None:
    claimed = [
        delivery("c1", "chat", attempt=1),
        delivery("c2", "chat", attempt=1),
        delivery("w1", "hook", attempt=1),
    ]
    s = setup((claimed, {"hook": target("hook"), "chat": target("chat", "chat")}))
    s.chat.answers["chat"] = AttemptResult(500, HTTP_STATUS)
    s.webhook.answers["hook"] = AttemptResult(500, HTTP_STATUS)
    s.chat.step = 7
    await s.run()
    by_id = {m[0]: m for m in ends(s)}
    # The backoff's first step is 24-30 s: a chat's next message is a minute after it left.
    assert by_id["c1"][2] == NOW + MESSAGE_INTERVAL_MS
    assert by_id["c1"][1] == DeliveryStatus.WAITING
    assert NOW + 24_000 <= (by_id["w1"][2] or 0) <= NOW + 7 + 30_000
    report = s.engine.report
    assert (report.deliveries_retrying, report.delivery_sends) == (3, 2)


async def test_a_chat_digests_later_retry_is_kept() -> None:
    s = setup(([delivery("c1", "chat", attempt=3)], {"chat": target("chat", "chat")}))
    s.chat.answers["chat"] = AttemptResult(500, HTTP_STATUS)
    await s.run()
    [(_, status, next_at, error, sent)] = ends(s)
    assert NOW + 480_000 <= (next_at or 0) <= NOW + 600_000  # the third step, 10 min
    assert (status, error, sent) == (DeliveryStatus.WAITING, HTTP_STATUS, True)


async def test_a_delivery_past_its_72_hours_fails() -> None:
    s = setup(
        (
            [delivery("d1", "e1", tried_from=NOW - GIVE_UP_AFTER_MS)],
            {"e1": target("e1")},
        )
    )
    s.webhook.answers["e1"] = AttemptResult(503, HTTP_STATUS)
    await s.run()
    assert ends(s) == [("d1", DeliveryStatus.FAILED, None, HTTP_STATUS, True)]
    assert s.engine.report.deliveries_failed == 1


# -- endpoints not sent to -------------------------------------------------------------------


async def test_an_endpoint_disabled_deleted_or_unreadable_is_not_sent_to() -> None:
    claimed = [
        delivery("d1", "off"),
        delivery("d2", "deleted"),
        delivery("d3", "sealed"),
        delivery("d4", "off_sealed"),
    ]
    targets = {
        "off": target("off", disabled=True),
        "sealed": target("sealed"),
        "off_sealed": target("off_sealed", disabled=True),
    }
    s = setup((claimed, targets), SEND_CONCURRENCY="1", LEASE_MS="300000")
    s.webhook.unreadable = {"sealed", "off_sealed"}
    await s.run()
    got = {m[0]: m[1:] for m in ends(s)}
    for gone in ("d1", "d2", "d4"):
        assert got[gone] == (DeliveryStatus.FAILED, None, ENDPOINT_GONE, False), gone
    assert got["d3"][2:] == (SECRET_UNREADABLE, False)
    assert got["d3"][0] == DeliveryStatus.WAITING  # it waits for the secret to open again
    assert NOW + 24_000 <= (got["d3"][1] or 0) <= NOW + 30_000
    assert s.webhook.sent == []
    assert s.engine.report.delivery_sends == 0


async def test_each_endpoint_is_opened_once() -> None:
    s = setup(
        ([delivery("d1", "e1"), delivery("d2", "e1")], {"e1": target("e1")}),
        MAX_ROWS_PER_TICK="5",
    )
    await s.run()
    assert s.webhook.opened == ["e1"]
    assert len(s.webhook.sent) == 2


# -- platform limits and lost leases ---------------------------------------------------------


async def test_a_send_fetch_refuses_is_handed_back_its_count_undone() -> None:
    claimed = [delivery("d1", "e1"), delivery("d2", "e2"), delivery("d3", "e3")]
    targets = {"e1": target("e1"), "e2": target("e2"), "e3": target("e3")}
    s = setup((claimed, targets), SEND_CONCURRENCY="1", LEASE_MS="300000")
    s.webhook.refuse = {"e2"}
    s.webhook.step = 5
    await s.run()
    got = {m.message.id: m for _, _, done, _ in s.outbox.settled for m in done}
    assert got["d2"].handed_back
    assert got["d3"].handed_back
    assert (got["d2"].next_attempt_at, got["d2"].status) == (NOW + 5, DeliveryStatus.WAITING)
    report = s.engine.report
    assert (report.delivery_sends, report.deliveries_handed_back) == (1, 2)
    assert s.engine.limit is not None


async def test_a_digest_handed_back_counts_each_delivery() -> None:
    s = setup(([delivery("c1", "chat"), delivery("c2", "chat")], {"chat": target("chat", "chat")}))
    s.chat.refuse = {"chat"}
    await s.run()
    assert s.engine.report.deliveries_handed_back == 2
    assert s.engine.report.delivery_sends == 0


async def test_a_settle_refused_by_d1s_limit_is_left_to_the_lease(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = setup(([delivery("d1", "e1"), delivery("d2", "e1")], {"e1": target("e1")}))
    s.outbox.refuse_settle = True
    with caplog.at_level(logging.WARNING, logger="scheduling"):
        await s.run()
    assert s.engine.limit is not None
    assert s.engine.limit.kind == "d1"
    assert "2 messages left to their lease: the settle was refused" in [
        r.getMessage() for r in caplog.records
    ]


async def test_a_lease_lost_before_the_settle(caplog: pytest.LogCaptureFixture) -> None:
    s = setup(([delivery("d1", "e1"), delivery("d2", "e1")], {"e1": target("e1")}))
    s.outbox.lost = ["d2"]
    with caplog.at_level(logging.WARNING, logger="scheduling"):
        await s.run()
    assert s.engine.report.delivery_lost_lease == 1
    assert "delivery d2: lease lost before settle; left to its new runner" in [
        r.getMessage() for r in caplog.records
    ]


async def test_nothing_ends_at_ready() -> None:
    s = setup()
    assert s.work().ready(Message("e1", (delivery("d1", "e1"),)), NOW) is None


def test_each_kind_has_its_channel() -> None:
    s = setup()
    work = DeliveryWork(s.engine, s.outbox)  # type: ignore[arg-type]
    assert set(work.channels) == {kind.name for kind in kinds.kinds()} == {"webhook", "chat"}
    assert {kind.name: kind.digest for kind in kinds.kinds()} == {"webhook": False, "chat": True}


async def test_an_endpoint_not_sent_to_ends_when_it_was_found_so() -> None:
    s = setup(([delivery("d1", "gone")], {}))
    s.clock.now = NOW + 42
    await s.run()
    [(_, _, [done], _)] = s.outbox.settled
    assert (done.attempted_at, done.finished_at, done.sent) == (NOW + 42, NOW + 42, False)


async def test_leases_lost_add_up_over_batches() -> None:
    s = setup(
        ([delivery("d1", "e1")], {"e1": target("e1")}),
        ([delivery("d2", "e1")], {}),
        MAX_ROWS_PER_TICK="1",
    )
    s.outbox.lost = ["dX"]
    await s.run()
    assert s.engine.report.delivery_lost_lease == 2


async def test_a_person_sends_named_deliveries_now_and_only_those() -> None:
    """Send again's path: the outbox's own claim of the ids named, through an engine of its
    own, on the store's D1; the webhook goes out at once and the report counts it."""
    s = await store()
    await s.subscribe("schedule.completed")
    await s.rows("one", "two")
    await s.run(s.engine())
    ids = [r["id"] for r in (await s.db.prepare("SELECT id FROM webhook_deliveries").all()).results]
    s.clock.now += 5_000
    report = await deliver_now(s.services(), ids[:1])
    assert len(s.dee.hooks) == 1
    assert (report.deliveries_delivered, report.deliveries_retrying) == (1, 0)
    assert report.delivery_delay_max_ms == 5_000  # from its event to its send
    states = (
        await s.db.prepare(
            "SELECT id, status, attempt_count FROM webhook_deliveries ORDER BY id = ? DESC"
        )
        .bind(ids[0])
        .all()
    )
    assert [(r["status"], r["attempt_count"]) for r in states.results] == [
        ("delivered", 1),
        ("waiting", 0),
    ]


async def test_a_persons_send_refused_by_a_platform_limit_is_handed_back() -> None:
    s = await store()
    await s.subscribe("schedule.completed")
    await s.rows("one")
    await s.run(s.engine())
    [delivery] = (await s.db.prepare("SELECT id FROM webhook_deliveries").all()).results

    async def refused(request: OutboundRequest) -> OutboundResponse:
        raise LimitReached("subrequests")

    services = s.services()
    services.http = MockTransport(refused)
    report = await deliver_now(services, [delivery["id"]])
    assert (report.platform_limit, report.deliveries_delivered) == (1, 0)
    assert services.limits_met == {"subrequests": 0}  # nothing had left before it
    row = await s.db.prepare("SELECT status, attempt_count FROM webhook_deliveries").first()
    assert row == {"status": "waiting", "attempt_count": 0}

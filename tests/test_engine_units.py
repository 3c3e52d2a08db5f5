"""The runner's engine on known inputs: a scripted kind of work (`Script`) on an engine with a
clock the test moves, each decision at its edge: the budget checked before every claim but
the first, spent by exactly one statement, one send or one millisecond; the next batch claimed
once every item holds a slot and not before; a platform limit met in a claim, a send or a
settle; a batch that fails before or after its items are admitted; a cancelled run.

The mutation map points `runner/engine.py` here first (issue 40): it runs in well under a
second, so each mutant costs milliseconds."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field

import pytest

from scheduling.domain.notifications import DeliveryStatus
from scheduling.domain.outcomes import Status
from scheduling.domain.times import percentile
from scheduling.ports import LimitReached
from scheduling.repository.round_trips import RoundTrips
from scheduling.runner.engine import Batch, Budget, Engine, Slots, TickReport
from tests.support.app import FakeClock, base_env, make_app, memory_db

NOW = 1_000_000


@dataclass
class Script:
    """A kind of work whose claims, sends and settles are scripted. Items are strings:
    `u…` ends unslotted, `r…` ends at `ready`, `L…` is refused by a platform limit as it
    leaves, `g…` waits for `gate` before it answers; the rest are sent at once."""

    engine: Engine
    batches: list[Batch[str] | Exception | None]
    batch_size: int = 2
    batch_cost: int = 5
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    gates: dict[str, asyncio.Event] = field(default_factory=dict)  # by share, for `g…:` items
    log: list[str] = field(default_factory=list)
    settled: list[tuple[str, list[str]]] = field(default_factory=list)
    sending: int = 0
    peak: int = 0
    clock_step: int = 0  # ms the clock moves during each send
    settle_error: Exception | None = None

    def cost(self) -> int:
        return self.batch_cost

    def follows(self) -> bool:
        return False  # tests/test_release_runner_units.py scripts a work that follows

    async def claim(self, engine: Engine) -> Batch[str] | None:
        assert engine is self.engine
        self.log.append("claim")
        if not self.batches:
            return None
        batch = self.batches.pop(0)
        if isinstance(batch, Exception):
            raise batch
        return batch

    def share_of(self, item: str) -> str | None:
        return item.partition(":")[2] or None  # `g1:ins_a`: a send of ins_a's share

    async def unslotted(self, item: str) -> str | None:
        if item.startswith("!"):
            raise RuntimeError(f"unslotted {item}")
        return f"unslotted {item}" if item.startswith("u") else None

    def ready(self, item: str, at: int) -> str | None:
        return f"late {item}@{at}" if item.startswith("r") else None

    async def send(self, item: str, at: int) -> str:
        self.log.append(f"send {item}")
        self.sending += 1
        self.peak = max(self.peak, self.sending)
        try:
            if item.startswith("g"):
                await self.gates.get(self.share_of(item) or "", self.gate).wait()
            await asyncio.sleep(0)
            clock.now += self.clock_step
            if item.startswith("L"):
                raise LimitReached("subrequests")
            self.engine.report.sends += 1
            return f"sent {item}@{at}"
        finally:
            self.sending -= 1

    def handed_back(self, item: str, at: int) -> str:
        return f"back {item}@{at}"

    async def settle(self, batch: Batch[str], done: list[str]) -> None:
        self.log.append(f"settle {batch.lease_token}")
        self.settled.append((batch.lease_token, done))
        if self.settle_error is not None:
            raise self.settle_error


clock = FakeClock(NOW)


def engine(
    *, concurrency: int = 2, ms: int = 10_000, queries: int = 100, sends: int = 100, share: int = 3
) -> Engine:
    clock.now = NOW
    env = base_env(SEND_CONCURRENCY=str(concurrency), MAX_SLOTS_PER_INSTALLATION=str(share))
    services = make_app(memory_db(), clock, env=env).services
    return Engine(
        services,
        RoundTrips(services.db),
        TickReport(),
        clock.now_ms,
        now=NOW,
        budget=Budget(ms=ms, queries=queries, sends=sends, reserved_queries=1),
    )


def batch(token: str, *items: str, last: bool = False) -> Batch[str]:
    return Batch(list(items), token, last=last)


# -- what the engine counts ----------------------------------------------------------------


def test_subrequests_are_sends_delivery_sends_and_clock_calls() -> None:
    e = engine()
    assert (e.subrequests(), e.clock_calls) == (0, 0)
    e.report.sends, e.report.delivery_sends, e.clock_calls = 3, 5, 7
    assert e.subrequests() == 15
    assert e.slots.free == 2  # SEND_CONCURRENCY's slots
    assert (e.limit, e.claims, e.clock_calls, e.unsettled()) == (None, 0, 7, [])


def test_a_limit_notes_what_was_used_and_stops_the_invocation_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    e = engine()
    e.report.sends, e.report.delivery_sends, e.clock_calls = 4, 2, 1
    e.trips.statements = 30
    with caplog.at_level(logging.WARNING, logger="scheduling"):
        first = LimitReached("subrequests")
        e.reached(first)
        e.report.sends = 2  # sends withdrawn meanwhile: the next refusal notes fewer
        e.reached(LimitReached("subrequests"))
        e.report.sends = 9
        e.reached(LimitReached("subrequests"))  # never raised by a later refusal
        e.reached(LimitReached("d1"))
    assert e.limit is first
    assert e.services.limits_met == {"subrequests": 5, "d1": 30}
    assert (e.report.limit_reached, e.report.platform_limit) == (1, 1)
    assert [r.getMessage() for r in caplog.records] == [
        "the invocation's subrequests limit was reached: it stops claiming, hands back what it"
        " has not sent, and leaves the rest for the next invocation (later invocations here"
        " stay below it)"
    ]


def test_a_limit_met_by_an_earlier_invocation_is_kept_when_lower() -> None:
    e = engine()
    e.services.limits_met["d1"] = 12
    e.trips.statements = 20
    e.reached(LimitReached("d1"))
    assert e.services.limits_met == {"d1": 12}


# -- room for one more batch: each bound at its edge ---------------------------------------


def test_room_for_a_batch_at_the_edge_of_time() -> None:
    e = engine(ms=1_000)
    work = Script(e, [])
    clock.now = NOW + 999
    assert e.room(work)
    clock.now = NOW + 1_000
    assert not e.room(work)


def test_room_for_a_batch_at_the_edge_of_statements() -> None:
    e = engine(queries=26)
    work = Script(e, [], batch_cost=5)
    e.trips.statements = 20  # + 5 for the batch + 1 reserved = 26
    assert e.room(work)
    e.trips.statements = 21
    assert not e.room(work)


async def test_room_counts_each_unsettled_batch_at_its_most_expensive() -> None:
    e = engine(queries=16)
    work = Script(e, [], batch_cost=5)
    pending = asyncio.get_running_loop().create_future()
    e._in_flight = [asyncio.ensure_future(pending), asyncio.ensure_future(asyncio.sleep(0))]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert len(e.unsettled()) == 1
    e.trips.statements = 5  # 5 + (1 unsettled + 1) * 5 + 1 = 16
    assert e.room(work)
    e.trips.statements = 6
    assert not e.room(work)
    pending.set_result(None)
    await asyncio.gather(*e._in_flight)
    assert e.unsettled() == []


def test_room_at_the_edge_of_subrequests() -> None:
    e = engine(sends=10)
    work = Script(e, [], batch_size=4)
    e.report.sends, e.report.delivery_sends, e.clock_calls = 3, 2, 1  # 6 + 4 = 10
    assert e.room(work)
    e.clock_calls = 2
    assert not e.room(work)


def test_no_room_once_a_limit_is_reached() -> None:
    e = engine()
    work = Script(e, [])
    assert e.room(work)
    e.reached(LimitReached("d1"))
    assert not e.room(work)


# -- the loop --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("batches", "settled", "claims"),
    [
        ([("a", ("x1", "x2"), False), ("b", ("x3",), False)], {"a": ["x1", "x2"], "b": ["x3"]}, 3),
        ([("a", ("x1",), True), ("b", ("x2",), False)], {"a": ["x1"]}, 1),
        ([("a", (), False), ("b", ("x1",), False)], {"b": ["x1"]}, 3),
        ([("a", (), True), ("b", ("x1",), False)], {}, 1),
    ],
    ids=["until the work has none", "a last batch", "an empty batch", "an empty last batch"],
)
async def test_claims_go_on_until_the_work_has_none_or_a_batch_is_the_last(
    batches: list[tuple[str, tuple[str, ...], bool]], settled: dict[str, list[str]], claims: int
) -> None:
    """A batch with items is settled, an empty one is not and the claims go on after it."""
    e = engine()
    work = Script(e, [batch(token, *items, last=last) for token, items, last in batches])
    await e.run(work)
    assert work.settled == [(t, [f"sent {i}@{NOW}" for i in done]) for t, done in settled.items()]
    assert (e.claims, work.log.count("claim"), e.report.limit_reached) == (claims, claims, 0)


async def test_the_first_claim_needs_no_room_the_second_does() -> None:
    e = engine(ms=0)  # no time at all: one batch still goes
    work = Script(e, [batch("a", "x1"), batch("b", "x2")])
    await e.run(work)
    assert work.settled == [("a", [f"sent x1@{NOW}"])]
    assert (e.claims, e.report.limit_reached) == (1, 1)
    # A second work of the same invocation is not its first claim: it needs room.
    other = Script(e, [batch("c", "x3")])
    await e.run(other)
    assert (other.log, e.claims) == ([], 1)


async def test_the_next_batch_is_claimed_once_every_item_holds_a_slot() -> None:
    e = engine(concurrency=2)
    work = Script(e, [batch("a", "g1", "g2"), batch("b", "g3")])
    running = asyncio.create_task(e.run(work))
    for _ in range(10):
        await asyncio.sleep(0)
    # Both of a's items hold a slot and wait: b is claimed already, its item waits for one.
    assert work.log == ["claim", "send g1", "send g2", "claim"]
    assert e.claims == 2
    assert len(e.unsettled()) == 2
    work.gate.set()
    await running
    assert work.settled == [("a", [f"sent g1@{NOW}", f"sent g2@{NOW}"]), ("b", [f"sent g3@{NOW}"])]
    assert work.log.count("claim") == 3
    assert work.peak == 2


async def test_no_claim_while_an_item_waits_for_its_slot() -> None:
    e = engine(concurrency=2)
    work = Script(e, [batch("a", "g1", "g2", "g3"), batch("b", "x4")])
    running = asyncio.create_task(e.run(work))
    for _ in range(10):
        await asyncio.sleep(0)
    assert work.log == ["claim", "send g1", "send g2"]
    work.gate.set()
    await running
    assert work.log.index("send g3") < work.log.index("claim", 1)
    assert work.peak == 2


async def test_an_unslotted_item_needs_no_slot() -> None:
    e = engine(concurrency=1)
    work = Script(e, [batch("a", "g1", "u2"), batch("b", "u3", last=True)])
    running = asyncio.create_task(e.run(work))
    for _ in range(10):
        await asyncio.sleep(0)
    # g1 holds the only slot; u2 ended without one, so b was claimed, and u3 too.
    assert work.settled == [("b", ["unslotted u3"])]
    work.gate.set()
    await running
    assert work.settled[-1] == ("a", [f"sent g1@{NOW}", "unslotted u2"])


async def test_an_item_ready_ends_without_a_send() -> None:
    e = engine()
    clock.now = NOW + 7
    work = Script(e, [batch("a", "r1", "x2")])
    await e.run(work)
    assert work.settled == [("a", [f"late r1@{NOW + 7}", f"sent x2@{NOW + 7}"])]
    assert work.log.count("send r1") == 0


# -- platform limits -----------------------------------------------------------------------


async def test_a_send_refused_by_a_limit_is_handed_back_and_the_rest_too() -> None:
    e = engine(concurrency=1)
    work = Script(e, [batch("a", "L1", "x2", "r3"), batch("b", "x4")], clock_step=250)
    await e.run(work)
    # L1 was refused as it left, 250 ms in: handed back at that time, not the slot's.
    # x2 then never leaves; r3 still ends at ready (its end comes before any send).
    assert work.settled == [
        ("a", [f"back L1@{NOW + 250}", f"back x2@{NOW + 250}", f"late r3@{NOW + 250}"])
    ]
    assert isinstance(e.limit, LimitReached)
    assert e.limit.kind == "subrequests"
    assert e.claims == 1
    assert "send x2" not in work.log


async def test_a_claim_refused_by_a_limit_ends_the_loop_and_settles_what_was_sent() -> None:
    e = engine(concurrency=2)
    work = Script(e, [batch("a", "g1", "g2"), LimitReached("d1"), batch("c", "x3")])
    running = asyncio.create_task(e.run(work))
    for _ in range(10):
        await asyncio.sleep(0)
    assert not running.done()  # a's sends are still out: the run waits for its settle
    work.gate.set()
    await running
    assert work.settled == [("a", [f"sent g1@{NOW}", f"sent g2@{NOW}"])]
    assert e.limit is not None
    assert e.limit.kind == "d1"
    assert e.report.platform_limit == 1
    assert e.claims == 2


async def test_a_limit_met_in_a_batch_stops_the_next_claim() -> None:
    e = engine(concurrency=2)
    work = Script(e, [batch("a", "L1"), batch("b", "x2")])
    await e.run(work)
    assert e.claims == 1
    assert work.settled == [("a", [f"back L1@{NOW}"])]


async def test_a_limit_met_before_the_run_hands_back_every_item() -> None:
    e = engine()
    e.reached(LimitReached("d1"))
    work = Script(e, [batch("a", "x1", "u2")])
    await e.run(work)
    assert work.settled == [("a", [f"back x1@{NOW}", "unslotted u2"])]
    assert work.log == ["claim", "settle a"]


# -- failures --------------------------------------------------------------------------------


async def test_a_batch_that_fails_before_its_admission_fails_the_run_at_once() -> None:
    e = engine()
    work = Script(e, [batch("a", "!1", "x2"), batch("b", "x3")])
    with pytest.raises(RuntimeError, match="unslotted !1"):
        await e.run(work)
    assert work.log.count("claim") == 1
    assert work.settled == []


async def test_a_failed_settle_fails_the_run_after_every_batch_ends() -> None:
    e = engine()
    work = Script(e, [batch("a", "x1"), batch("b", "x2")], settle_error=ValueError("settle"))
    with pytest.raises(ValueError, match="settle"):
        await e.run(work)
    assert [token for token, _ in work.settled] == ["a", "b"]


async def test_a_failed_claim_still_waits_for_the_batches_out() -> None:
    e = engine()
    work = Script(e, [batch("a", "g1"), KeyError("claim")])
    running = asyncio.create_task(e.run(work))
    for _ in range(10):
        await asyncio.sleep(0)
    assert not running.done()
    work.gate.set()
    with pytest.raises(KeyError):
        await running
    assert work.settled == [("a", [f"sent g1@{NOW}"])]
    assert e.limit is None


async def test_a_cancelled_run_cancels_its_sends() -> None:
    e = engine()
    work = Script(e, [batch("a", "g1", "g2"), batch("b", "g3")])
    running = asyncio.create_task(e.run(work))
    for _ in range(10):
        await asyncio.sleep(0)
    sends = list(e._in_flight)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert all(task.cancelled() for task in sends)
    assert work.settled == []


async def test_a_run_starts_with_none_of_the_last_runs_batches() -> None:
    e = engine()
    first = Script(e, [batch("a", "x1")])
    await e.run(first)
    old = e._in_flight
    second = Script(e, [batch("b", "x2")])
    await e.run(second)
    assert len(old) == 1
    assert len(e._in_flight) == 1
    assert e._in_flight[0] is not old[0]


async def test_a_failed_settle_of_the_last_batch_fails_the_run() -> None:
    e = engine()
    work = Script(e, [batch("a", "x1", last=True)], settle_error=ValueError("settle"))
    with pytest.raises(ValueError, match="settle"):
        await e.run(work)


async def test_a_failed_settle_fails_the_run_when_the_budget_ends_it() -> None:
    e = engine(ms=0)
    work = Script(e, [batch("a", "x1"), batch("b", "x2")], settle_error=ValueError("settle"))
    with pytest.raises(ValueError, match="settle"):
        await e.run(work)
    assert e.report.limit_reached == 1


async def test_a_failed_batch_fails_the_run_only_once_every_other_batch_has_settled() -> None:
    e = engine()
    work = Script(e, [batch("a", "x1"), batch("b", "g2")])
    settle = work.settle

    async def failing_a(batch: Batch[str], done: list[str]) -> None:
        await settle(batch, done)
        if batch.lease_token == "a":
            raise ValueError("settle a")

    work.settle = failing_a  # type: ignore[method-assign]
    running = asyncio.create_task(e.run(work))
    for _ in range(20):
        await asyncio.sleep(0)
    assert work.log[:3] == ["claim", "send x1", "claim"]
    assert not running.done()  # b's send is still out
    work.gate.set()
    with pytest.raises(ValueError, match="settle a"):
        await running
    assert [token for token, _ in work.settled] == ["a", "b"]


# -- the continuation: a release's next item (issue 47) ------------------------------------
# With nothing to claim while a batch in flight will make more due as it settles, the engine
# waits for that settle and claims again, within the budget; otherwise it ends as before.


@dataclass
class Line(Script):
    """A scripted work whose batches named in `leads` make more due once they settle: it
    follows while one of them is in flight."""

    leads: set[str] = field(default_factory=set)

    def follows(self) -> bool:
        self.log.append("follows?")
        return bool(self.leads - {token for token, _ in self.settled})


async def test_the_next_item_is_claimed_once_the_one_in_flight_settles() -> None:
    e = engine()
    work = Line(e, [batch("a", "g1"), None, batch("b", "x2")], leads={"a"})
    running = asyncio.create_task(e.run(work))
    for _ in range(10):
        await asyncio.sleep(0)
    # Nothing to claim while a's item is out, but a follows: the engine waits for its settle.
    assert work.log == ["claim", "send g1", "claim", "follows?"]
    assert not running.done()
    work.gate.set()
    await running
    assert work.log == [
        "claim", "send g1", "claim", "follows?", "settle a",
        "claim", "send x2", "claim", "follows?", "settle b",
    ]  # fmt: skip
    assert work.settled == [("a", [f"sent g1@{NOW}"]), ("b", [f"sent x2@{NOW}"])]
    assert (e.claims, e.report.limit_reached) == (4, 0)


async def test_without_a_batch_that_follows_nothing_to_claim_ends_the_run() -> None:
    e = engine()
    work = Line(e, [batch("a", "g1"), None, batch("b", "x2")])
    running = asyncio.create_task(e.run(work))
    for _ in range(10):
        await asyncio.sleep(0)
    assert work.log == ["claim", "send g1", "claim", "follows?"]
    work.gate.set()
    await running
    assert work.settled == [("a", [f"sent g1@{NOW}"])]  # b is left for another invocation
    assert e.claims == 2


async def test_nothing_in_flight_ends_the_run_even_when_the_work_follows() -> None:
    e = engine()
    work = Line(e, [None, batch("b", "x2")], leads={"z"})
    await e.run(work)
    assert work.log == ["claim"]  # nothing unsettled: it does not even ask
    assert work.settled == []


async def test_a_settle_that_fails_while_the_engine_waits_fails_the_run() -> None:
    e = engine()
    work = Line(e, [batch("a", "g1"), None, batch("b", "x2")], leads={"a"})
    work.settle_error = RuntimeError("D1 went away")
    running = asyncio.create_task(e.run(work))
    for _ in range(10):
        await asyncio.sleep(0)
    work.gate.set()
    with pytest.raises(RuntimeError, match="D1 went away"):
        await running
    assert "send x2" not in work.log
    assert work.log.count("claim") == 2


async def test_the_next_claim_after_a_settle_still_needs_room() -> None:
    e = engine(ms=100)
    work = Line(e, [batch("a", "g1"), None, batch("b", "x2")], leads={"a"}, clock_step=100)
    running = asyncio.create_task(e.run(work))
    for _ in range(10):
        await asyncio.sleep(0)
    work.gate.set()
    await running
    # a's send took the invocation's whole time: after its settle, no room for b.
    assert work.settled == [("a", [f"sent g1@{NOW}"])]
    assert (e.claims, e.report.limit_reached) == (2, 1)
    assert clock.now == NOW + 100


async def test_the_engine_waits_for_the_first_settle_not_every_one() -> None:
    e = engine(concurrency=2)
    slow = asyncio.Event()

    @dataclass
    class TwoLines(Line):
        async def send(self, item: str, at: int) -> str:
            if item == "s1":
                await slow.wait()
            return await super().send(item, at)

    work = TwoLines(e, [batch("a", "s1"), batch("b", "x2"), None, batch("c", "x3")], leads={"b"})
    running = asyncio.create_task(e.run(work))
    for _ in range(20):
        await asyncio.sleep(0)
    # b settled first (a is still out): the engine claimed again without waiting for a.
    assert [token for token, _ in work.settled] == ["b", "c"]
    assert not running.done()
    slow.set()
    await running
    assert [token for token, _ in work.settled] == ["b", "c", "a"]


# -- each installation's share of the slots ------------------------------------------------


async def settle_down() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_an_installation_holds_its_share_of_the_slots_while_another_sends() -> None:
    e = engine(concurrency=4, share=2)
    gates = {"A": asyncio.Event(), "B": asyncio.Event()}
    work = Script(e, [batch("a", "g1:A", "g2:A", "g3:A", "g4:B"), batch("b", "g5:B")], gates=gates)
    running = asyncio.create_task(e.run(work))
    await settle_down()
    # A holds its share: g3 waits although a slot is free, and lets g4 pass. It counts as
    # admitted, so b was claimed, and its g5 took the last slot.
    assert work.log == [
        "claim",
        "send g1:A",
        "send g2:A",
        "send g4:B",
        "claim",
        "send g5:B",
        "claim",
    ]
    assert (e.slots.free, dict(e.slots.held_back), dict(e.slots.holding)) == (
        0,
        {"A": 1},
        {"A": 2, "B": 2},
    )
    gates["B"].set()
    await settle_down()
    # B is done: A alone takes every slot, g3 included.
    assert work.log[-2:] == ["send g3:A", "settle b"]
    assert (+e.slots.held_back, e.slots.free) == (Counter(), 1)
    gates["A"].set()
    await running
    assert work.peak == 4
    assert (e.slots.free, +e.slots.holding) == (4, Counter())


async def test_a_held_back_send_takes_its_installations_next_free_slot_in_turn() -> None:
    e = engine(concurrency=3, share=1)
    gates = {"A": asyncio.Event(), "B": asyncio.Event()}
    work = Script(e, [batch("a", "g1:A", "g2:A", "x3:B", "g4:B", "x5:A")], gates=gates)
    running = asyncio.create_task(e.run(work))
    await settle_down()
    # Share 1: g1 and x3 go; g2 waits for A's slot, g4 for B's once x3 gave it back; x5 waits
    # for A's too, behind g2.
    assert work.log == ["claim", "send g1:A", "send x3:B", "send g4:B", "claim"]
    assert dict(e.slots.held_back) == {"A": 2, "B": 0}
    gates["A"].set()
    await settle_down()
    assert work.log[5:] == ["send g2:A", "send x5:A"]
    gates["B"].set()
    await running
    assert work.peak == 2


async def test_alone_an_installation_takes_every_slot_and_no_share_counts_no_one() -> None:
    e = engine(concurrency=4, share=1)
    work = Script(e, [batch("a", "g1:A", "g2:A", "g3", "g4:A")])
    running = asyncio.create_task(e.run(work))
    await settle_down()
    assert work.log == ["claim", "send g1:A", "send g2:A", "send g3", "send g4:A", "claim"]
    assert +e.slots.held_back == Counter()
    work.gate.set()
    await running


async def test_the_claims_wait_until_an_installation_left_out_has_none_held_back() -> None:
    slots = Slots(2, 1)
    slots.arrive(["A", "B", "A", "B", None])
    blocked: list[str] = []
    await slots.take("A", lambda: blocked.append("a1"))
    await slots.take("B", lambda: blocked.append("b1"))
    a2 = asyncio.ensure_future(slots.take("A", lambda: blocked.append("a2")))
    b2 = asyncio.ensure_future(slots.take("B", lambda: blocked.append("b2")))
    await settle_down()
    assert (blocked, dict(slots.held_back)) == (["a2", "b2"], {"A": 1, "B": 1})
    passed = asyncio.ensure_future(slots.until_one_passes(["A", "B"]))
    await settle_down()
    assert not passed.done()
    slots.give_back("B")
    await settle_down()
    assert b2.done()
    assert not a2.done()
    assert passed.done()
    await slots.until_one_passes(["B"])  # B has none held back: at once
    a2.cancel()
    await settle_down()
    assert (+slots.held_back, slots.free, dict(slots.holding)) == (Counter(), 0, {"A": 1, "B": 1})


async def test_a_send_cancelled_once_handed_a_slot_gives_it_back() -> None:
    slots = Slots(1, 1)
    slots.arrive(["A", "A"])
    await slots.take("A", lambda: None)
    waiting = asyncio.ensure_future(slots.take("A", lambda: None))
    await settle_down()
    slots.give_back("A")  # handed to `waiting`, which is cancelled before it runs
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert (slots.free, +slots.holding) == (1, Counter())


async def test_a_send_behind_one_waiting_for_a_free_slot_is_held_back_at_once() -> None:
    """No slot free: B's send waits for one, and A's behind it, A holding its share while B
    has sends, counts as held back at once (its batch may roll on)."""
    slots = Slots(1, 1)
    slots.arrive(["A", "B", "A"])
    blocked: list[str] = []
    await slots.take("A", lambda: blocked.append("a1"))
    b1 = asyncio.ensure_future(slots.take("B", lambda: blocked.append("b1")))
    a2 = asyncio.ensure_future(slots.take("A", lambda: blocked.append("a2")))
    await settle_down()
    assert (blocked, dict(+slots.held_back)) == (["a2"], {"A": 1})
    slots.give_back("A")
    await settle_down()
    assert b1.done()
    assert not a2.done()
    b1.cancel()
    a2.cancel()


async def test_a_cancelled_send_still_in_the_queue_lets_the_next_one_have_the_slot() -> None:
    slots = Slots(1, 3)
    slots.arrive(["A", "B", "C"])
    await slots.take("A", lambda: None)
    b = asyncio.ensure_future(slots.take("B", lambda: None))
    c = asyncio.ensure_future(slots.take("C", lambda: None))
    await settle_down()
    b.cancel()  # its future is cancelled now; its sender leaves the queue once it runs
    slots.give_back("A")
    await settle_down()
    assert c.done()
    assert b.cancelled()
    assert (slots.free, dict(+slots.holding)) == (0, {"C": 1})


def test_a_tick_report_counts_each_ending_and_its_sends_lateness() -> None:
    report = TickReport()
    for status in (Status.COMPLETED, Status.RETRYING, Status.RETRYING, Status.REFUSED) * 2:
        report.ended(status)
    assert report.outcomes() == {Status.COMPLETED: 2, Status.REFUSED: 2, Status.RETRYING: 4}
    for lateness in (300, -5, 100, 200):  # early counts as on time
        report.sent(lateness)
    assert (report.sends, report.lateness_sum_ms()) == (4, 600)
    assert (report.lateness_p50_ms, report.lateness_p99_ms, report.lateness_max_ms) == (
        percentile([0, 100, 200, 300], 0.5), percentile([0, 100, 200, 300], 0.99), 300
    )  # fmt: skip
    for lateness in (300, 100, 200, -5):
        report.withdrawn(lateness)
    assert (report.sends, report.lateness_p50_ms, report.lateness_p99_ms) == (0, 0, 0)
    assert report.lateness_max_ms == 0
    for code in ("scheduled_target_stale", "timeout", "scheduled_target_stale"):
        report.refused_with(code)
    assert report.refusals() == {"scheduled_target_stale": 2, "timeout": 1}


def test_a_tick_report_counts_deliveries_and_keeps_the_longest_delay() -> None:
    report = TickReport()
    report.delivery_ended(DeliveryStatus.DELIVERED, 40)
    report.delivery_ended(DeliveryStatus.DELIVERED, 90)
    report.delivery_ended(DeliveryStatus.DELIVERED, 10)
    for status in ("waiting", "failed", "waiting", "failed", "failed"):
        report.delivery_ended(DeliveryStatus(status), 800)
    counts = (report.deliveries_delivered, report.deliveries_retrying, report.deliveries_failed)
    assert counts == (3, 2, 3)  # each count added to, never set, and never the other's
    assert report.delivery_delay_max_ms == 90  # only what was delivered


def test_a_tick_report_is_stored_and_read_back_field_by_field() -> None:
    report = TickReport(due=3, claimed=2, watchdog=1, waited_ms=7)
    report.sent(50)
    record = report.as_record()
    assert not any(name.startswith("_") for name in record)
    assert (record["sends"], record["lateness_max_ms"]) == (1, 50)
    again = TickReport.from_record({**record, "written_by_a_newer_plugin": 4, "note": "x"})
    assert again.as_record() == record
    # An older plugin's record lacks fields: they count zero; a value not a number is left out.
    older = TickReport.from_record({"due": 5, "claimed": "2", "_lateness": 9})
    assert (older.due, older.claimed, older.completed) == (5, 0, 0)

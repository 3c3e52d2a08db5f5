"""An installation's alarm clock on known inputs (`runner/alarm.py`): its one alarm in
memory, as Durable Objects' storage keeps it, and a clock the test moves. Told a time it
moves earlier, never later, on the millisecond; rung, it sets the alarm's next wake-up, or a
retry 2 s after a failure doubling to a minute; a time told while it rings is kept.

The mutation map points `runner/alarm.py` here first (issue 40)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from scheduling.domain.schedules import HELD_BACK_RETRY_MS
from scheduling.limits import batch_cost
from scheduling.ports import Database, LimitReached, Result, Statement
from scheduling.runner.alarm import Alarm, AlarmClock, InstallationRows, alarm
from scheduling.runner.engine import TickReport
from scheduling.runner.sends import Claimed
from tests.support.app import FakeClock, LoopClock
from tests.support.unit_store import DUE, Store, refused, store, theirs

LEAD = 1_500  # CLOCK_LEAD_MS's default

NOW = 1_780_000_000_000


class Storage:
    """One alarm, as a Durable Object keeps it: setting it replaces it."""

    def __init__(self, at: int | None = None) -> None:
        self.at = at
        self.sets: list[int] = []
        self.hold: asyncio.Event | None = None  # a read that waits for it

    def clear(self) -> None:
        """As after its alarm rang: nothing set."""
        self.at = None

    async def get_alarm(self) -> int | None:
        if self.hold is not None:
            await self.hold.wait()
        return self.at

    async def set_alarm(self, at: int) -> None:
        self.at = at
        self.sets.append(at)


def clock_with(at: int | None = None) -> tuple[AlarmClock, Storage, FakeClock]:
    storage, time = Storage(at), FakeClock(NOW)
    return AlarmClock(storage, time.now_ms), storage, time


async def test_an_unset_clock_is_set() -> None:
    clock, storage, _ = clock_with()
    assert await clock.arm(NOW + 5_000) is True
    assert (storage.at, storage.sets) == (NOW + 5_000, [NOW + 5_000])


async def test_earlier_moves_it_on_the_millisecond_and_later_or_the_same_never() -> None:
    clock, storage, _ = clock_with(NOW + 5_000)
    assert await clock.arm(NOW + 5_001) is False
    assert await clock.arm(NOW + 5_000) is False
    assert storage.sets == []
    assert await clock.arm(NOW + 4_999) is True
    assert storage.at == NOW + 4_999


@pytest.mark.parametrize("next_wake", [NOW + 60_000, None])
async def test_ringing_sets_the_alarms_next_wake_up_and_nothing_live_none(
    next_wake: int | None,
) -> None:
    clock, storage, _ = clock_with()

    async def alarm() -> int | None:
        assert clock.ringing is True
        return next_wake

    assert await clock.ring(alarm) == next_wake
    sets = [] if next_wake is None else [next_wake]
    assert (storage.sets, clock.ringing, clock.failures) == (sets, False, 0)


async def test_a_time_told_while_it_rings_is_set_but_needs_no_wake_up() -> None:
    clock, storage, _ = clock_with()
    told: list[bool] = []

    async def alarm() -> int | None:
        told.append(await clock.arm(NOW + 2_000))  # the running alarm reads D1 as it ends
        return NOW + 9_000  # later than the time told meanwhile: kept

    assert await clock.ring(alarm) == NOW + 9_000
    assert told == [False]
    assert storage.at == NOW + 2_000
    assert await clock.arm(NOW + 1_000) is True  # rung out: a time told wakes it again


async def test_a_failed_alarm_sets_a_retry_doubling_to_a_minute_and_raises() -> None:
    clock, storage, time = clock_with()

    async def failing() -> int | None:
        raise RuntimeError("D1 down")

    waits = []
    for _ in range(7):
        storage.clear()
        with pytest.raises(RuntimeError, match="D1 down"):
            await clock.ring(failing)
        assert clock.ringing is False
        assert storage.at is not None
        waits.append(storage.at - time.now)
        time.advance(1)
    assert waits == [2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]
    assert clock.failures == 7

    async def working() -> int | None:
        return None

    await clock.ring(working)
    assert clock.failures == 0
    storage.clear()
    with pytest.raises(RuntimeError):
        await clock.ring(failing)
    assert storage.at == time.now + 2_000  # the first failure again


async def test_a_time_told_as_the_alarm_fails_is_a_wake_up_it_needs() -> None:
    clock, storage, _ = clock_with()
    failing_now = asyncio.Event()

    async def failing() -> int | None:
        await failing_now.wait()
        raise RuntimeError("D1 down")

    async def turns() -> None:
        for _ in range(10):
            await asyncio.sleep(0)

    ringing = asyncio.ensure_future(clock.ring(failing))
    await turns()
    storage.hold = asyncio.Event()
    told = asyncio.ensure_future(clock.arm(NOW + 1_000))  # reading the alarm as it fails
    await turns()
    failing_now.set()
    await turns()
    storage.hold.set()
    assert await told is True  # the failed alarm reads no next wake-up: this one is needed
    with pytest.raises(RuntimeError):
        await ringing
    assert storage.at == NOW + 1_000  # earlier than the retry: kept


async def test_a_retry_never_moves_an_earlier_alarm_later() -> None:
    clock, storage, _ = clock_with()

    async def failing() -> int | None:
        await clock.arm(NOW + 500)  # told meanwhile of a row due sooner than the retry
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await clock.ring(failing)
    assert storage.at == NOW + 500


# -- an alarm (`runner/alarm.py`): its installation's due rows, and its next wake-up -----------


class D1Limit:
    """D1 refusing a batch past `statements` in all (the platform's limit, met mid-alarm)."""

    def __init__(self, inner: Database, statements: int, refusing: str = "") -> None:
        self.inner = inner
        self.statements = statements
        self.refusing = refusing  # or refusing the first batch whose SQL has this

    def prepare(self, sql: str) -> Statement:
        return self.inner.prepare(sql)

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        sql = " ".join(getattr(s, "sql", "") for s in statements)
        if len(statements) > self.statements or (self.refusing and self.refusing in sql):
            raise LimitReached("d1")
        self.statements -= len(statements)
        return await self.inner.batch(statements)


async def ring(s: Store, set_for: int | None = None, **met: int) -> tuple[int | None, TickReport]:
    services = s.services()
    services.limits_met.update(met)
    alarm = Alarm(services, "ins_1", set_for)
    await alarm.run()
    return alarm.next_wake, alarm.report


async def test_nothing_live_needs_no_wake_up() -> None:
    s = await store()
    next_wake, report = await ring(s)
    assert (next_wake, report.due, report.claimed, report.waited_ms) == (None, 0, 0, 0)


async def test_a_row_due_after_the_lead_is_its_next_wake_up_on_the_millisecond() -> None:
    s = await store()
    await s.rows("c1", due_at=DUE + LEAD + 1)
    next_wake, report = await ring(s)
    assert next_wake == DUE + 1
    assert (report.claimed, s.dee.asked) == (0, [])


@pytest.mark.looptime
async def test_a_row_due_within_the_lead_is_waited_for_then_sent() -> None:
    s = await store()
    s.clock = s.dee.clock = LoopClock(DUE)
    await s.rows("c1", due_at=DUE + LEAD)
    await s.rows("c2", due_at=DUE + 400_000)  # its next: a retry, or a row due later
    next_wake, report = await ring(s)
    assert (await s.row("c1"))["status"] == "completed"
    assert len(s.dee.asked) == 1
    assert (report.waited_ms, report.claimed, report.completed) == (LEAD, 1, 1)
    assert next_wake == DUE + 400_000 - LEAD


@pytest.mark.looptime
async def test_a_wait_the_budget_has_no_room_for_is_left_to_the_next_alarm() -> None:
    s = await store(TICK_BUDGET_MS="1000")
    s.clock = s.dee.clock = LoopClock(DUE)
    await s.rows("c1", due_at=DUE + 1_000)
    assert (await ring(s))[0] == DUE + 1_000 - LEAD
    assert s.dee.asked == []
    s2 = await store(TICK_BUDGET_MS="1000")
    s2.clock = s2.dee.clock = LoopClock(DUE)
    await s2.rows("c1", due_at=DUE + 999)
    next_wake, report = await ring(s2)
    assert (next_wake, report.completed, report.waited_ms) == (None, 1, 999)


async def test_a_batch_of_its_cap_it_has_no_statements_for_is_left_to_the_next_alarm() -> None:
    s = await store(MAX_IN_FLIGHT_PER_INSTALLATION="2")
    await s.rows("c1", due_at=DUE)
    need = batch_cost(2, capped=True) + 1 + 1  # the read, a batch of the cap, the next read
    _, report = await ring(s, d1=need + 3 - 1)  # 3 reserved for the record
    assert report.claimed == 0
    _, report = await ring(s, d1=need + 3)
    assert report.claimed == 1


async def test_subrequests_for_a_batch_of_its_cap() -> None:
    s = await store(MAX_IN_FLIGHT_PER_INSTALLATION="3")
    await s.rows("c1", due_at=DUE)
    _, report = await ring(s, subrequests=2)
    assert report.claimed == 0
    _, report = await ring(s, subrequests=3)
    assert report.claimed == 1


async def test_its_delay_is_from_the_time_it_was_set_for() -> None:
    s = await store()
    assert (await ring(s, set_for=DUE - 700))[1].cron_delay_ms == 700
    assert (await ring(s, set_for=DUE + 700))[1].cron_delay_ms == 0
    assert (await ring(s, set_for=None))[1].cron_delay_ms == 0


async def test_rows_another_runner_holds_the_cap_for_are_tried_again_in_a_second() -> None:
    s = await store(MAX_IN_FLIGHT_PER_INSTALLATION="1")
    await s.rows("theirs", "mine", due_at=DUE)
    await theirs(s.db, "sch_theirs", DUE + 60_000)
    next_wake, report = await ring(s)
    assert next_wake == DUE + HELD_BACK_RETRY_MS
    assert (report.claimed, report.held_back) == (0, 1)


@pytest.mark.parametrize(
    ("statements", "refusing", "status"),
    [(0, "", "pending"), (1_000, "last_sent_at", "completed")],
    ids=["reading its next due", "noting the latest send, keeping what was sent"],
)
async def test_a_limit_in_d1_hands_over_to_a_fresh_alarm_at_once(
    statements: int, refusing: str, status: str
) -> None:
    s = await store()
    await s.rows("c1", due_at=DUE)
    services = s.services()
    services.db = D1Limit(services.db, statements, refusing)
    alarm = Alarm(services, "ins_1", None)
    await alarm.run()
    assert (await s.row("c1"))["status"] == status
    assert alarm.next_wake == DUE
    assert alarm.engine.limit is not None


async def test_a_limit_met_by_a_send_hands_over_to_a_fresh_alarm_at_once() -> None:
    s = await store()
    await s.rows("c1", "c2", due_at=DUE)
    s.dee.refuse = {"c2"}
    s.dee.step = 30
    next_wake, report = await ring(s)
    assert next_wake == DUE + 30
    assert (report.completed, report.handed_back) == (1, 1)


async def test_refusals_are_told_after_two_seconds_of_sends_and_the_sends_go_on() -> None:
    s = await store(MAX_IN_FLIGHT_PER_INSTALLATION="1")
    await s.subscribe("schedule.refused")
    await s.rows("c1", "c2", "c3", "c4", due_at=DUE)
    for content in ("c1", "c2", "c3", "c4"):
        s.dee.answers[content] = refused()
    s.dee.step = 1_000  # two sends, then exactly TELL_AFTER_MS
    next_wake, _ = await ring(s)
    assert s.dee.order == ["c1", "c2", "hook", "hook", "c3", "c4", "hook", "hook"]
    assert next_wake is None


async def test_refusals_before_a_claim_are_told_in_the_same_alarm() -> None:
    s = await store()
    await s.subscribe("schedule.refused")
    await s.rows("late", due_at=DUE - 900_001)
    next_wake, report = await ring(s)
    assert (report.refused_unsent, len(s.dee.hooks)) == (1, 1)
    assert next_wake is None


async def test_nothing_to_tell_sends_no_event() -> None:
    s = await store()
    await s.subscribe("schedule.refused")
    await s.rows("c1", due_at=DUE)
    await ring(s)
    assert s.dee.order == ["c1"]


async def test_its_log_line_names_its_installation_and_delay(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = await store()
    with caplog.at_level(logging.INFO):
        await alarm(s.services(), "ins_1", DUE - 700)
        await alarm(s.services(), "ins_1", DUE - 300)
    lines = [json.loads(r.getMessage()) for r in caplog.records if "runner_alarm" in r.getMessage()]
    assert [(line["installation_id"], line["cron_delay_ms"]) for line in lines] == [
        ("ins_1", 700),
        ("ins_1", 300),
    ]


@pytest.mark.looptime
async def test_each_wait_of_an_alarm_adds_to_its_waited_time() -> None:
    s = await store()
    s.clock = s.dee.clock = LoopClock(DUE)
    await s.rows("c1", due_at=DUE + 1_000)
    await s.rows("c2", due_at=DUE + 2_500)
    next_wake, report = await ring(s)
    assert (report.completed, report.waited_ms, next_wake) == (2, 2_500, None)


class SlowD1:
    """D1 answering each round trip a millisecond after it was asked."""

    def __init__(self, inner: Database, clock: FakeClock) -> None:
        self.inner = inner
        self.clock = clock

    def prepare(self, sql: str) -> Statement:
        return self.inner.prepare(sql)

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        self.clock.now += 1
        return await self.inner.batch(statements)


async def test_a_row_due_as_the_budget_has_a_millisecond_left_is_sent() -> None:
    s = await store(TICK_BUDGET_MS="1000")
    await s.rows("c1", due_at=DUE)
    await s.rows("c2", due_at=DUE + 999)
    s.dee.step = 992  # c1's pass ends, its round trips included, as c2 falls due: 999 ms in
    services = s.services()
    services.db = SlowD1(services.db, s.clock)
    alarm = Alarm(services, "ins_1", None)
    await alarm.run()
    assert (alarm.report.completed, alarm.next_wake) == (2, None)


async def test_an_alarm_tells_only_its_own_events() -> None:
    s = await store()
    await s.subscribe("schedule.refused")
    await s.db.prepare(
        "INSERT INTO webhook_deliveries (id, endpoint_id, installation_id, schedule_id,"
        " event_type, payload, created_at, status, next_attempt_at)"
        " VALUES ('old', 'end_ins_1', 'ins_1', 'sch_x', 'schedule.refused', '{}', 0, 'waiting', 0)"
    ).run()
    await s.rows("late", due_at=DUE - 900_001)
    await ring(s)
    # The old delivery (another invocation's, due) waits for the cron's tick.
    assert [hook.headers["webhook-id"] for hook in s.dee.hooks] != ["old"]
    assert len(s.dee.hooks) == 1


async def test_a_cap_another_runner_fills_again_ends_the_pass_for_a_second() -> None:
    s = await store(MAX_IN_FLIGHT_PER_INSTALLATION="2")
    await s.rows("t1", "a", "b", "c", due_at=DUE)
    await theirs(s.db, "sch_t1", DUE + 60_000)

    async def another_runner(request: Any) -> None:  # takes c while a is sent
        await theirs(s.db, "sch_c", DUE + 60_000)

    s.dee.during = another_runner
    next_wake, report = await ring(s)
    # a won beside their t1, b held back; with none of its own in flight then, the pass ends
    # and the alarm tries again in a second, rather than claiming b again at once.
    assert (report.claimed, report.held_back, report.batches) == (1, 1, 1)
    assert next_wake == DUE + HELD_BACK_RETRY_MS


async def test_an_alarm_that_fails_says_so_and_raises(caplog: pytest.LogCaptureFixture) -> None:
    s = await store()
    services = s.services()

    class Broken:
        def prepare(self, sql: str) -> Statement:
            raise RuntimeError("D1 gone")

        async def batch(self, statements: Sequence[Statement]) -> list[Result]:
            raise RuntimeError("D1 gone")

    services.db = Broken()
    with caplog.at_level(logging.INFO), pytest.raises(RuntimeError, match="D1 gone"):
        await alarm(services, "ins_1", None)
    lines = [r.getMessage() for r in caplog.records if "runner_alarm_failed" in r.getMessage()]
    assert lines == [
        '{"event":"runner_alarm_failed","installation_id":"ins_1","error":"RuntimeError"}'
    ]


async def test_an_alarm_answers_its_next_wake_up() -> None:
    s = await store()
    await s.rows("c1", due_at=DUE + 60_000)
    assert await alarm(s.services(), "ins_1", None) == DUE + 60_000 - LEAD


# -- an alarm's source: its installation's rows, within the cap ------------------------------


class Rows:
    """An installation's due rows as `Leases.due_for` reads them (ids only matter here)."""

    def __init__(self, count: int) -> None:
        self.rows = [f"r{n}" for n in range(count)]
        self.reads: list[tuple[str, int, int]] = []

    async def due_for(self, installation_id: str, now: int, limit: int) -> list[str]:
        self.reads.append((installation_id, now, limit))
        return self.rows[:limit]


class Work:
    """What the source asks of the work it feeds: the engine's unsettled batches, the clock."""

    def __init__(self, now: int) -> None:
        self.now = now
        self.batches: list[asyncio.Future[None]] = []
        self.engine = self

    def unsettled(self) -> list[asyncio.Future[None]]:
        return [b for b in self.batches if not b.done()]

    def clock(self) -> int:
        return self.now


def fake_work(now: int) -> Any:
    return Work(now)


def source(rows: Rows, cap: int = 6, pause: bool = False) -> InstallationRows:
    return InstallationRows(rows, "ins_1", cap, lambda: pause)  # type: ignore[arg-type]


def claimed(won: int, refused: int = 0, held: int = 0) -> Claimed:
    return Claimed([object()] * won, ["x"] * refused, ["h"] * held)  # type: ignore[list-item]


async def test_it_reads_a_hundred_at_once_and_hands_out_a_caps_worth() -> None:
    rows, work = Rows(150), fake_work(NOW)
    s = source(rows, cap=6)
    assert await s.next(NOW, 20, work) == ["r0", "r1", "r2", "r3", "r4", "r5"]  # type: ignore[comparison-overlap]
    assert rows.reads == [("ins_1", NOW, 100)]
    s.claimed([], claimed(won=2, refused=4))
    assert (s.live, s.taken, s.held) == (2, 6, False)
    assert await s.next(NOW, 3, work) == ["r6", "r7", "r8"]  # type: ignore[comparison-overlap]
    assert len(rows.reads) == 1  # claimed as read while every claim wins
    s.claimed([], claimed(won=3))
    assert (s.live, s.taken) == (5, 9)
    s.settled([object()] * 2)  # type: ignore[list-item]
    assert s.live == 3


async def test_with_the_cap_full_it_waits_for_one_of_its_batches_then_reads_on() -> None:
    rows, work = Rows(10), fake_work(NOW)
    s = source(rows, cap=2)
    await s.next(NOW, 20, work)
    s.claimed([], claimed(won=2))
    batch = asyncio.get_running_loop().create_future()
    never = asyncio.get_running_loop().create_future()
    work.batches = [batch, never]  # the first of them to settle is enough
    waiting = asyncio.ensure_future(s.next(NOW, 20, work))
    await asyncio.sleep(0)
    assert not waiting.done()
    s.settled([object()])  # type: ignore[list-item]
    work.now = NOW + 70
    batch.set_result(None)
    assert await waiting == ["r2"]  # type: ignore[comparison-overlap]
    assert not s.blocked


async def test_held_back_it_reads_again_once_a_batch_of_its_settles() -> None:
    rows, work = Rows(10), fake_work(NOW)
    s = source(rows, cap=3)
    await s.next(NOW, 20, work)
    s.claimed([], claimed(won=1, held=2))
    assert (s.held, s.ahead, s.taken) == (True, [], 1)
    batch = asyncio.get_running_loop().create_future()
    work.batches = [batch]
    waiting = asyncio.ensure_future(s.next(NOW, 20, work))
    await asyncio.sleep(0)
    work.now = NOW + 40
    batch.set_result(None)
    assert await waiting == ["r0", "r1"]  # type: ignore[comparison-overlap]
    assert rows.reads[-1] == ("ins_1", NOW + 40, 100)
    assert s.held is False


async def test_held_back_with_none_of_its_own_in_flight_it_is_blocked() -> None:
    rows, work = Rows(10), fake_work(NOW)
    s = source(rows, cap=3)
    await s.next(NOW, 20, work)
    s.claimed([], claimed(won=0, held=3))
    assert await s.next(NOW, 20, work) is None  # the work ends
    assert s.blocked


async def test_a_pause_hands_out_nothing() -> None:
    rows, work = Rows(10), fake_work(NOW)
    s = source(rows, pause=True)
    assert await s.next(NOW, 20, work) is None
    assert rows.reads == []
    assert not s.blocked

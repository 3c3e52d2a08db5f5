"""An installation's alarm clock on known inputs (`runner/alarm_clock.py`): its one alarm in
memory, as Durable Objects' storage keeps it, and a clock the test moves. Told a time it
moves earlier, never later, on the millisecond; rung, it sets the alarm's next wake-up, or a
retry 2 s after a failure doubling to a minute; a time told while it rings is kept.

The mutation map points `runner/alarm_clock.py` here first (issue 40)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from scheduling.domain.wake_ups import HELD_BACK_RETRY_MS
from scheduling.limits import batch_cost
from scheduling.ports import Database, LimitReached, Result, Statement
from scheduling.runner.alarm import Alarm, alarm, run_alarm
from scheduling.runner.alarm_clock import AlarmClock
from scheduling.runner.report import TickReport
from tests.support.app import FakeClock, LoopClock
from tests.support.unit_store import DUE, Store, store

LEAD = 1_500  # CLOCK_LEAD_MS's default

NOW = 1_780_000_000_000


class Storage:
    """One alarm, as a Durable Object keeps it: setting it replaces it."""

    def __init__(self, at: int | None = None) -> None:
        self.at = at
        self.sets: list[int] = []

    def clear(self) -> None:
        """As after its alarm rang: nothing set."""
        self.at = None

    async def get_alarm(self) -> int | None:
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


async def test_ringing_sets_the_alarms_next_wake_up() -> None:
    clock, storage, _ = clock_with()

    async def alarm() -> int | None:
        assert clock.ringing is True
        return NOW + 60_000

    assert await clock.ring(alarm) == NOW + 60_000
    assert (storage.at, clock.ringing, clock.failures) == (NOW + 60_000, False, 0)


async def test_nothing_live_leaves_the_alarm_unset() -> None:
    clock, storage, _ = clock_with()

    async def alarm() -> int | None:
        return None

    assert await clock.ring(alarm) is None
    assert storage.sets == []


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
    await (
        s.db.prepare(
            "UPDATE schedules SET status = 'running', next_attempt_at = NULL,"
            " lease_token = 'theirs', lease_until = ? WHERE id = 'sch_theirs'"
        )
        .bind(DUE + 60_000)
        .run()
    )
    next_wake, report = await ring(s)
    assert next_wake == DUE + HELD_BACK_RETRY_MS
    assert (report.claimed, report.held_back) == (0, 1)


async def test_a_limit_reading_its_next_due_hands_over_to_a_fresh_alarm_at_once() -> None:
    s = await store()
    await s.rows("c1", due_at=DUE)
    services = s.services()
    services.db = D1Limit(services.db, 0)
    alarm = Alarm(services, "ins_1", None)
    await alarm.run()
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


async def test_a_limit_noting_the_latest_send_keeps_what_was_sent() -> None:
    s = await store()
    await s.rows("c1", due_at=DUE)
    services = s.services()
    services.db = D1Limit(services.db, 1_000, "last_sent_at")
    alarm = Alarm(services, "ins_1", None)
    await alarm.run()
    assert (await s.row("c1"))["status"] == "completed"
    assert alarm.next_wake == DUE
    assert alarm.engine.limit is not None


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


async def test_run_alarm_answers_the_next_wake_up() -> None:
    s = await store()
    await s.rows("c1", due_at=DUE + 60_000)
    assert await run_alarm(s.services(), "ins_1", None) == DUE + 60_000 - LEAD
    assert await alarm(s.services(), "ins_1", None) == DUE + 60_000 - LEAD

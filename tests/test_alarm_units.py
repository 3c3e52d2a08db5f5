"""An installation's alarm clock on known inputs (`runner/alarm_clock.py`): its one alarm in
memory, as Durable Objects' storage keeps it, and a clock the test moves. Told a time it
moves earlier, never later, on the millisecond; rung, it sets the alarm's next wake-up, or a
retry 2 s after a failure doubling to a minute; a time told while it rings is kept.

The mutation map points `runner/alarm_clock.py` here first (issue 40)."""

from __future__ import annotations

import pytest

from scheduling.runner.alarm_clock import AlarmClock
from tests.support.app import FakeClock

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

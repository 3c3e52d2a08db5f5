"""The clocks' watchdog on known inputs (`runner/tick.py`): a cron tick over an in-memory
D1 with rows written straight into it, installations' clocks that answer as the test says,
and a fixed clock. Each decision at its edge: a clock told of what is due within the horizon
on its millisecond, a lead before it; as many told as the subrequest budget leaves beside a
batch; a clock that moved counted, one unreachable logged, one refused by fetch's limit not
counted and ending the sends; what is overdue by the grace and not a millisecond less sent by
the watchdog itself, and counted as caught.

The mutation map points `runner/tick.py` here first (issue 40)."""

from __future__ import annotations

import logging

import pytest

from scheduling.domain.schedules import WATCHDOG_GRACE_MS, WATCHDOG_HORIZON_MS
from scheduling.ports import ClockUnavailable, LimitReached
from scheduling.runner.engine import TickReport
from scheduling.runner.invocation import Invocation
from scheduling.runner.tick import Tick, Watchdog
from tests.support.unit_store import DUE, Store, store

LEAD = 1_500  # CLOCK_LEAD_MS's default


class Clocks:
    """Each installation's clock: set to what it is told when earlier (True), or kept."""

    def __init__(self, **set_at: int) -> None:
        self.at: dict[str, int] = dict(set_at)
        self.told: list[tuple[str, int]] = []
        self.unreachable: set[str] = set()
        self.refuse: set[str] = set()

    async def arm(self, installation_id: str, wake_at: int) -> bool:
        if installation_id in self.refuse:
            raise LimitReached("subrequests")
        if installation_id in self.unreachable:
            raise ClockUnavailable(installation_id)
        self.told.append((installation_id, wake_at))
        current = self.at.get(installation_id)
        if current is not None and current <= wake_at:
            return False
        self.at[installation_id] = wake_at
        return True


async def watch(s: Store, clocks: Clocks, **met: int) -> Tick:
    services = s.services()
    services.clocks = clocks
    services.limits_met.update(met)  # met by an earlier invocation of this isolate
    tick = Tick(services, Invocation(DUE, DUE))
    await tick.run()
    return tick


def report(tick: Tick) -> TickReport:
    return tick.report


async def test_each_clock_is_told_a_lead_before_what_is_due_within_the_horizon() -> None:
    s = await store("ins_1", "ins_2", "ins_3")
    await s.rows("a", installation="ins_1", due_at=DUE + 10_000)
    await s.rows("a2", installation="ins_1", due_at=DUE + 20_000)
    await s.rows("b", installation="ins_2", due_at=DUE + WATCHDOG_HORIZON_MS)
    await s.rows("c", installation="ins_3", due_at=DUE + WATCHDOG_HORIZON_MS + 1)
    clocks = Clocks(ins_2=DUE + WATCHDOG_HORIZON_MS - LEAD)  # set on time already
    tick = await watch(s, clocks)
    assert clocks.told == [
        ("ins_1", DUE + 10_000 - LEAD),
        ("ins_2", DUE + WATCHDOG_HORIZON_MS - LEAD),
    ]
    r = report(tick)
    assert (r.watchdog, r.clocks_rearmed, r.caught, r.limit_reached) == (1, 1, 0, 0)
    assert tick.engine.clock_calls == 2
    assert s.dee.asked == []  # not yet due: left to the clocks


async def test_as_many_clocks_as_the_subrequests_leave_beside_a_batch() -> None:
    s = await store("ins_1", "ins_2", "ins_3", MAX_SENDS_PER_TICK="22")  # 22 - 20 rows = 2
    for n, installation in enumerate(("ins_1", "ins_2", "ins_3")):
        await s.rows(f"r{n}", installation=installation, due_at=DUE + 1_000 * (n + 1))
    clocks = Clocks()
    tick = await watch(s, clocks)
    assert [i for i, _ in clocks.told] == ["ins_1", "ins_2"]  # the earliest first
    r = report(tick)
    assert (r.limit_reached, r.clocks_rearmed) == (1, 2)
    assert tick.engine.clock_calls == 2


async def test_exactly_as_many_clocks_as_there_is_room_for() -> None:
    s = await store("ins_1", "ins_2", MAX_SENDS_PER_TICK="22")
    for n, installation in enumerate(("ins_1", "ins_2")):
        await s.rows(f"r{n}", installation=installation, due_at=DUE + 1_000)
    clocks = Clocks()
    tick = await watch(s, clocks)
    assert len(clocks.told) == 2
    assert report(tick).limit_reached == 0


async def test_no_room_tells_no_clock() -> None:
    s = await store("ins_1")
    await s.rows("r", due_at=DUE + 1_000)
    clocks = Clocks()
    tick = await watch(s, clocks, subrequests=19)  # fewer than a batch: room 0, not -1
    assert clocks.told == []
    assert report(tick).limit_reached == 1
    assert tick.engine.clock_calls == 0


async def test_a_clock_unreachable_is_logged_and_one_refused_stops_the_sends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = await store("ins_1", "ins_2", "ins_3")
    await s.rows("a", installation="ins_1", due_at=DUE - WATCHDOG_GRACE_MS)  # overdue
    await s.rows("b", installation="ins_2", due_at=DUE + 1_000)
    await s.rows("c", installation="ins_3", due_at=DUE + 2_000)
    clocks = Clocks()
    clocks.unreachable = {"ins_2"}
    clocks.refuse = {"ins_3"}
    with caplog.at_level(logging.WARNING, logger="scheduling"):
        tick = await watch(s, clocks)
    r = report(tick)
    assert (r.clocks_rearmed, r.platform_limit, r.caught) == (1, 1, 0)
    assert tick.engine.clock_calls == 2  # the refused call was never made
    assert tick.engine.limit is not None
    assert s.dee.asked == []  # the limit ends the invocation before its own sends
    assert (await s.row("a"))["status"] == "pending"
    assert (
        "1 installations' clocks could not be told: the watchdog sends what they leave overdue"
        in [record.getMessage() for record in caplog.records]
    )


async def test_every_clock_reached_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    s = await store()
    await s.rows("a", due_at=DUE + 1_000)
    with caplog.at_level(logging.WARNING, logger="scheduling"):
        await watch(s, Clocks())
    assert not [r for r in caplog.records if "could not be told" in r.getMessage()]


async def test_what_is_overdue_by_the_grace_is_sent_and_counted_as_caught() -> None:
    s = await store("ins_1", "ins_2", MAX_ATTEMPTS="1")
    await s.rows("overdue", installation="ins_1", due_at=DUE - WATCHDOG_GRACE_MS)
    await s.rows("recent", installation="ins_1", due_at=DUE - WATCHDOG_GRACE_MS + 1)
    await s.rows("spent", installation="ins_2", due_at=DUE - WATCHDOG_GRACE_MS - 5)
    await s.db.prepare(
        "UPDATE schedules SET attempt_count = 1, status = 'retrying' WHERE id = 'sch_spent'"
    ).run()
    clocks = Clocks()
    tick = await watch(s, clocks)
    assert (await s.row("overdue"))["status"] == "completed"
    assert (await s.row("recent"))["status"] == "pending"  # still its clock's
    assert (await s.row("spent"))["status"] == "refused"
    r = report(tick)
    assert (r.claimed, r.refused_unsent, r.caught) == (1, 1, 2)
    # The clocks were told before: each wakes for what it has due.
    assert sorted(clocks.told) == [
        ("ins_1", DUE - WATCHDOG_GRACE_MS - LEAD),
        ("ins_2", DUE - WATCHDOG_GRACE_MS - 5 - LEAD),
    ]


async def test_what_the_invocation_used_before_counts_against_the_clocks_room() -> None:
    s = await store("ins_1", "ins_2", "ins_3", MAX_SENDS_PER_TICK="25")
    for n, installation in enumerate(("ins_1", "ins_2", "ins_3")):
        await s.rows(f"r{n}", installation=installation, due_at=DUE + 1_000 * (n + 1))
    services = s.services()
    clocks = Clocks()
    services.clocks = clocks
    tick = Tick(services, Invocation(DUE, DUE))
    # Two subrequests and one clock already counted: 25 - 3 - 20 rows leaves room for two.
    tick.report.sends, tick.engine.clock_calls, tick.report.clocks_rearmed = 2, 1, 4
    await Watchdog(tick, clocks).run()
    assert [i for i, _ in clocks.told] == ["ins_1", "ins_2"]
    assert (tick.engine.clock_calls, tick.report.clocks_rearmed) == (3, 6)

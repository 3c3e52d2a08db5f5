"""The tick's own decisions on known inputs (`runner/tick.py`, beside the watchdog's units):
the window a tick's time must lie in, word for word, what a refused and a failed tick log,
the claim cap with and without alarm clocks, and when a request looks for a stopped cron
and runs the backstop, on an in-memory D1 with a clock the test moves."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from scheduling.ports import DatabaseError, LimitReached, Meta, Result
from scheduling.runner.invocation import Invocation
from scheduling.runner.tick import (
    CRON_STOPPED_AFTER_MS,
    DAY_MS,
    MAX_PURGE_MS,
    MAX_TICK_AHEAD_MS,
    MAX_TICK_BEHIND_MS,
    STEP_ROWS,
    Tick,
    Ticks,
    TickTimeRefused,
    purge,
    tick,
    window_problem,
)
from tests.support.app import event_lines
from tests.support.unit_store import DUE, store
from tests.support.world import cron_tick_row

WORDS = "time must be epoch milliseconds at most {} s after now and at most 24 h before it"


def running(ticks: Ticks) -> bool:
    return ticks.running


def answers(changes: tuple[int, ...], steps: list[int] | None = None, limit_at: int = 0) -> Any:
    """A purge step's round trip, answered with what each statement changed; D1's limit
    refuses the `limit_at`th."""
    asked = [] if steps is None else steps

    async def send(statements: list[Any]) -> list[Result]:
        asked.append(len(statements))
        if len(asked) == limit_at:
            raise LimitReached("subrequests")
        return [Result([], Meta(n)) for n in changes]

    return send


@pytest.mark.parametrize(
    ("offset", "lateness", "problem"),
    [
        (-MAX_TICK_BEHIND_MS, 900_000, None),
        (-MAX_TICK_BEHIND_MS - 1, 900_000, WORDS.format(900)),
        (MAX_TICK_AHEAD_MS, 3_600_000, None),
        (MAX_TICK_AHEAD_MS + 1, 3_600_000, WORDS.format(900)),
        (60_500, 60_500, None),  # the lateness cap bounds it when it is shorter
        (60_501, 60_500, WORDS.format(60)),
    ],
)
def test_the_window_a_ticks_time_must_lie_in(offset: int, lateness: int, problem: str) -> None:
    assert window_problem(DUE + offset, DUE, lateness) == problem


async def test_a_tick_outside_the_window_runs_nothing_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = await store()
    caplog.set_level("INFO")
    ahead = DUE + MAX_TICK_AHEAD_MS + 1
    with pytest.raises(TickTimeRefused, match=f"^{WORDS.format(900)}$"):
        await tick(s.services(), ahead)
    assert event_lines(caplog.records) == [
        {"event": "runner_tick_refused", "scheduled_time": ahead, "now": DUE}
    ]
    history = await s.db.prepare("SELECT count(*) AS n FROM tick_history").first()
    assert history == {"n": 0}


async def test_a_failed_tick_logs_its_error_type_only_and_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = await store()
    await s.db.prepare("DROP TABLE tick_history").run()  # its record cannot be written
    caplog.set_level("INFO")
    with pytest.raises(DatabaseError):
        await tick(s.services(), DUE - 3_000)
    [line] = [e for e in event_lines(caplog.records) if e["event"] == "runner_tick_failed"]
    assert line == {
        "event": "runner_tick_failed",
        "at": "2026-05-28T20:26:40Z",  # delivered late, it ran at the wall clock
        "cron_delay_ms": 3_000,
        "error": "DatabaseError",
    }


async def test_only_a_watchdog_claims_under_each_installations_cap() -> None:
    s = await store(MAX_IN_FLIGHT_PER_INSTALLATION="7")
    services = s.services()
    invocation = Invocation.begin(services.clock, DUE)
    assert Tick(services, invocation).cap is None
    assert Tick(replace(services, clocks=object()), invocation).cap == 7  # type: ignore[arg-type]


async def test_a_request_looks_for_a_stopped_cron_at_most_every_two_minutes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = await store()
    services = s.services()
    ticks = Ticks(services)
    caplog.set_level("INFO")
    # No tick recorded yet: the cron has not started; nothing runs, and a look waits 2 min.
    look = ticks.after_request()
    assert look is not None
    assert running(ticks) is True
    assert ticks.after_request() is None  # one at a time
    await look
    assert running(ticks) is False
    assert ticks.after_request() is None
    s.clock.now += CRON_STOPPED_AFTER_MS - 1
    assert ticks.after_request() is None
    # A tick exactly two minutes old is a cron that still runs: quiet until it is older.
    s.clock.now += 1
    sql, at = cron_tick_row(s.clock.now - CRON_STOPPED_AFTER_MS)
    await s.db.prepare(sql).bind(at).run()
    look = ticks.after_request()
    assert look is not None
    await look
    assert ticks.quiet_until == s.clock.now
    assert event_lines(caplog.records) == []
    # A millisecond on, it has stopped: the backstop runs and is recorded.
    s.clock.now += 1
    look = ticks.after_request()
    assert look is not None
    await look
    assert [e["event"] for e in event_lines(caplog.records)] == [
        "runner_cron_stopped",
        "runner_backstop",
    ]
    assert event_lines(caplog.records)[0]["last_tick_at"] == "2026-05-28T20:26:40Z"
    kinds = await s.db.prepare("SELECT kind FROM tick_history ORDER BY at").all()
    assert [r["kind"] for r in kinds.results] == ["tick", "backstop"]
    assert running(ticks) is False


async def test_a_backstop_that_fails_says_so_and_lets_the_next_request_try(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = await store()
    await s.db.prepare("DROP TABLE tick_history").run()
    ticks = Ticks(s.services())
    caplog.set_level("INFO")
    look = ticks.after_request()
    assert look is not None
    await look
    assert event_lines(caplog.records) == [
        {"event": "runner_backstop_failed", "error": "DatabaseError"}
    ]
    assert not ticks.running


async def test_the_crons_tick_keeps_requests_from_looking_for_two_minutes() -> None:
    s = await store()
    ticks = Ticks(s.services())
    assert (ticks.running, ticks.quiet_until) == (False, 0)
    await s.rows("c1")
    looks: list[object] = []

    async def meanwhile(request: object) -> None:  # a request answered while the tick sends
        looks.append(ticks.after_request())

    s.dee.during = meanwhile
    counts = await ticks.cron(DUE)
    assert (counts["due"], looks) == (1, [None])
    assert (ticks.running, ticks.quiet_until) == (False, DUE + CRON_STOPPED_AFTER_MS)


async def test_keys_go_a_month_after_they_expire_and_the_purge_says_what_went(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = await store()
    for key, expired_days_ago in (("key_old", 31), ("key_recent", 29), ("key_live", -1)):
        await (
            s.db.prepare(
                "INSERT INTO agent_keys (id, installation_id, key_hash, name, person_id,"
                " person_name, offered_transitions, created_at, expires_at)"
                " VALUES (?, 'ins_1', ?, 'bot', 'usr_1', 'Ada', '*', 0, ?)"
            )
            .bind(key, "hash_" + key, DUE - expired_days_ago * DAY_MS)
            .run()
        )
    caplog.set_level("INFO")
    engine = s.engine()
    await purge(s.services(), engine.trips, engine.budget, now=DUE, elapsed_ms=lambda: 0)
    kept = await s.db.prepare("SELECT id FROM agent_keys ORDER BY id").all()
    assert [r["id"] for r in kept.results] == ["key_live", "key_recent"]
    assert event_lines(caplog.records) == [
        {
            "event": "retention_purged",
            "retention_days": 400,
            "steps": 1,
            "schedules": 0,
            "attempts": 0,
            "deliveries": 0,
            "proposals": 0,
            "agent_keys": 1,
        }
    ]


async def test_a_purge_stops_at_its_time_or_at_d1s_limit_and_says_what_went_before(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = await store()
    engine = s.engine()
    steps: list[int] = []
    engine.trips.send = answers((7, 0, 0, 0, 0, STEP_ROWS), steps, limit_at=2)  # type: ignore[method-assign]
    caplog.set_level("INFO")
    await purge(s.services(), engine.trips, engine.budget, now=DUE, elapsed_ms=lambda: 0)
    assert steps == [6, 6]
    assert (
        event_lines(caplog.records)[0]["agent_keys"] == STEP_ROWS
    )  # what went before the limit is said
    # Exactly MAX_PURGE_MS spent: no step starts.
    clock = iter([0, MAX_PURGE_MS, MAX_PURGE_MS])
    steps.clear()
    await purge(s.services(), engine.trips, engine.budget, now=DUE, elapsed_ms=lambda: next(clock))
    assert steps == []
    # The tick's own time spent (a minute): none either.
    await purge(s.services(), engine.trips, engine.budget, now=DUE, elapsed_ms=lambda: 60_001)
    assert steps == []


async def test_a_step_that_deleted_only_attempts_is_not_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = await store()
    engine = s.engine()
    engine.trips.send = answers((5, 0, 0, 0, 0, 0))  # type: ignore[method-assign]
    caplog.set_level("INFO")
    await purge(s.services(), engine.trips, engine.budget, now=DUE, elapsed_ms=lambda: 0)
    assert event_lines(caplog.records) == []

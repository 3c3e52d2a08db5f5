"""`GET /admin/status` and the tick's JSON log line: is the runner alive, and what is waiting?"""

from __future__ import annotations

import logging

import pytest

from fake_core import Fault
from fake_core.transport import answered
from scheduling.ports import DatabaseError, OutboundRequest, OutboundResponse
from scheduling.runner.engine import TickReport
from tests.support.app import ADMIN_SECRET, body, call, event_lines, runner_status
from tests.support.world import MINUTE, World, crash_during_send, schedule, tick_at

STALL = 3 * MINUTE


async def test_status_is_for_the_operator_only(world: World) -> None:
    for headers in (
        {},
        {"authorization": "Bearer not-the-secret-at-all"},
        {"authorization": ADMIN_SECRET},
    ):
        response = await call(world.app, "GET", "/admin/status", headers=headers)
        assert response.status == 401
        assert body(response)["code"] == "unauthorized"
    refused = await call(
        world.app, "POST", "/admin/status", headers={"authorization": f"Bearer {ADMIN_SECRET}"}
    )
    assert refused.status == 405


async def test_a_new_plugin_reports_no_tick_nothing_due_and_is_not_stalled(world: World) -> None:
    status = await runner_status(world.app)
    assert status["last_tick"] is None
    assert (status["due_backlog"], status["oldest_overdue"], status["stalled"]) == (0, None, False)
    assert status["schedules"] == {"pending": 0, "retrying": 0, "queued": 0, "running": 0}
    assert status["finished_last_24h"] == {
        "completed": 0,
        "refused": 0,
        "cancelled": 0,
        "superseded": 0,
        "held": 0,
    }


async def test_status_reports_the_last_tick_and_counts(world: World) -> None:
    core = world.http.handler

    async def slow(request: OutboundRequest) -> OutboundResponse:
        world.clock.advance(1_500)  # each send: a tick's duration is known
        return await answered(core, request)

    world.http.handler = slow
    installation = await world.install()
    s = await schedule(world, installation)
    await schedule(world, installation, "cnt_page", in_minutes=60)
    due = s["due_at"]
    await tick_at(world, due)

    status = await runner_status(world.app)
    last = status["last_tick"]
    assert last["at"] == "2026-07-01T10:05:00Z"
    assert last["duration_ms"] == 1500
    assert (last["due"], last["claimed"]) == (1, 1)
    assert last["outcomes"]["completed"] == 1
    assert last["age_ms"] == 1500  # the test clock moved on by the send
    assert status["finished_last_24h"]["completed"] == 1
    assert status["schedules"] == {"pending": 1, "retrying": 0, "queued": 0, "running": 0}
    assert (status["due_backlog"], status["stalled"]) == (0, False)


async def test_a_retrying_and_a_refused_outcome_are_counted(world: World) -> None:
    installation = await world.install()
    retried = await schedule(world, installation)
    refused = await schedule(world, installation, "cnt_page")
    world.core.faults.push(
        Fault.respond(503, "unavailable"), endpoint="transitions", content_id="cnt_en"
    )
    world.core.state.edit("cnt_page")  # the pin is stale now
    await tick_at(world, max(retried["due_at"], refused["due_at"]))
    status = await runner_status(world.app)
    last = status["last_tick"]
    assert last["outcomes"] == {"completed": 0, "retrying": 1, "refused": 1}
    assert (last["batches"], last["sends"], last["lost_claim"], last["refused_unsent"]) == (
        1,
        2,
        0,
        0,
    )
    assert (status["schedules"]["retrying"], status["finished_last_24h"]["refused"]) == (1, 1)
    assert status["due_backlog"] == 0  # the retry waits for its backoff


async def test_stalled_when_no_tick_for_over_three_minutes_while_work_is_due(world: World) -> None:
    installation = await world.install()
    s = await schedule(world, installation)
    due = s["due_at"]
    await tick_at(world, due - MINUTE)  # the last tick the runner ran; nothing was due yet

    world.clock.now = due - MINUTE + STALL
    status = await runner_status(world.app)
    assert status["due_backlog"] == 1
    assert status["oldest_overdue"] == {
        "schedule_id": s["id"],
        "installation_id": installation.id,
        "due_at": "2026-07-01T10:05:00Z",
        "age_ms": 2 * MINUTE,
    }
    assert status["stalled"] is False  # exactly three minutes: not yet

    world.clock.now += 1
    assert (await runner_status(world.app))["stalled"] is True

    await tick_at(world, world.clock.now)  # the runner is back
    status = await runner_status(world.app)
    assert (status["stalled"], status["due_backlog"], status["oldest_overdue"]) == (False, 0, None)
    assert status["finished_last_24h"]["completed"] == 1


async def test_no_work_due_is_never_stalled_and_no_tick_ever_with_work_due_is(world: World) -> None:
    world.clock.now += 60 * MINUTE
    assert (await runner_status(world.app))["stalled"] is False
    installation = await world.install()
    s = await schedule(world, installation)
    world.clock.now = s["due_at"] + 1
    status = await runner_status(world.app)
    assert (status["last_tick"], status["due_backlog"], status["stalled"]) == (None, 1, True)


async def test_finished_rows_are_counted_over_the_last_24_hours(world: World) -> None:
    installation = await world.install()
    created = world.clock.now_ms()
    s = await schedule(world, installation)
    await schedule(world, installation, "cnt_page", in_minutes=60)
    await schedule(world, installation, "cnt_page", in_minutes=60)  # supersedes the one before
    await tick_at(world, s["due_at"])  # completes `s`
    day = 24 * 60 * MINUTE

    def finished(completed: int, superseded: int) -> dict[str, int]:
        return {
            "completed": completed,
            "refused": 0,
            "cancelled": 0,
            "superseded": superseded,
            "held": 0,
        }

    world.clock.now = created + day
    assert (await runner_status(world.app))["finished_last_24h"] == finished(1, 1)
    world.clock.now += 1
    assert (await runner_status(world.app))["finished_last_24h"] == finished(1, 0)
    world.clock.now = s["due_at"] + day + 1
    status = await runner_status(world.app)
    assert status["finished_last_24h"] == finished(0, 0)
    assert status["schedules"]["pending"] == 1  # live rows count whatever their age


async def test_a_running_row_counts_as_due_once_its_lease_expired(world: World) -> None:
    installation = await world.install()
    s = await schedule(world, installation)
    world.core.faults.push(Fault.delay(5), endpoint="transitions")
    await crash_during_send(world, s["due_at"])  # claimed, sent, never settled
    world.clock.now = s["due_at"] + MINUTE - 1
    status = await runner_status(world.app)
    assert (status["schedules"]["running"], status["due_backlog"]) == (1, 0)
    world.clock.now += 1
    assert (await runner_status(world.app))["due_backlog"] == 1


async def test_each_tick_logs_one_json_line_without_secrets(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="scheduling.events")
    installation = await world.install()
    s = await schedule(world, installation)
    await tick_at(world, s["due_at"] - MINUTE)
    await tick_at(world, s["due_at"])
    empty, busy = event_lines(caplog.records)
    assert empty == {
        "event": "runner_tick",
        "at": "2026-07-01T10:04:00Z",
        "duration_ms": 0,
        **{name: 0 for name in TickReport().as_record()},
        # The due query, the retention purge's step (finding nothing), and the tick's
        # record: its history row, totals and pruning.
        "d1_statements": 10,
        "d1_round_trips": 3,
    }
    assert busy["at"] == "2026-07-01T10:05:00Z"
    assert (busy["due"], busy["claimed"], busy["completed"]) == (1, 1, 1)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert installation.token not in text
    assert s["idempotency_key"] not in text  # ids of rows stay in the database


async def test_a_failed_tick_logs_its_error_type_and_leaves_the_last_record(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="scheduling.events")
    installation = await world.install()
    s = await schedule(world, installation)
    await tick_at(world, s["due_at"] - MINUTE)
    world.db.connection.execute("DROP INDEX schedules_leased")
    world.db.connection.execute("ALTER TABLE schedules RENAME TO schedules_gone")
    with pytest.raises(DatabaseError) as raised:
        await tick_at(world, s["due_at"])
    assert event_lines(caplog.records)[-1] == {
        "event": "runner_tick_failed",
        "at": "2026-07-01T10:05:00Z",
        "cron_delay_ms": 0,
        "error": type(raised.value).__name__,
    }
    world.db.connection.execute("ALTER TABLE schedules_gone RENAME TO schedules")
    status = await runner_status(world.app)
    assert status["last_tick"]["at"] == "2026-07-01T10:04:00Z"  # the last one that ran through


async def test_an_invocation_on_time_or_ahead_of_the_clock_runs_at_its_minute(
    world: World,
) -> None:
    installation = await world.install()
    s = await schedule(world, installation)
    world.clock.now = s["due_at"] - 2 * MINUTE  # a chosen instant ahead of the wall clock
    report = await world.app.tick(s["due_at"])
    assert (report["cron_delay_ms"], report["completed"]) == (0, 1)
    last = (await runner_status(world.app))["last_tick"]
    assert (last["at"], last["cron_delay_ms"]) == ("2026-07-01T10:05:00Z", 0)

"""The runner against fake_core: claims, sends, classifies and settles, tick by tick."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from fake_core import Fault
from scheduling.domain import outcomes
from scheduling.domain.outcomes import AnswerRule, Retry, Status
from scheduling.domain.secrets import installation_token
from scheduling.runner.tick import TickTimeRefused
from tests.pyodide_harness.harness import free_port
from tests.support.app import runner_status
from tests.support.d1_rows import rfc3339, schedule_row
from tests.support.in_flight import Yielding
from tests.support.runtimes import Runtime
from tests.support.world import (
    MINUTE,
    World,
    attempts,
    bulk_due,
    crash_during_send,
    local,
    row,
    schedule,
    sends,
    tick_at,
    tick_until_sent,
)

# -- the happy path and what is sent ------------------------------------------------------


async def test_a_tick_sends_what_is_due_once_per_spec_and_settles_each(runtime: Runtime) -> None:
    """The cron's tick through each runtime's adapters (the Worker's: `scheduled()`, its fetch,
    Miniflare's D1): the due publish sent as protocol §6 says and completed; Dee Wan busy
    (503) retried, a stale pin refused, a redirect never followed, an unreachable Dee Wan
    retried, a token that does not open refused unsent, and a row due later left alone."""
    installation_id, down, lost = [await runtime.install() for _ in range(3)]
    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    due = runtime.minute_ahead()
    fields = {**editor.shown, "csrf_token": editor.csrf, "transition": "publish:published",
              "local_time": local(due), "timezone": "UTC"}  # fmt: skip
    made = await editor.post_form(f"/installations/{installation_id}/schedules", fields)
    assert made.status_code == 303, made.text
    sid = made.headers["location"].split("created=", 1)[1]
    for owner, content, due_at in (
        *((installation_id, name, due) for name in ("cnt_busy", "cnt_stale", "cnt_moved")),
        (installation_id, "cnt_later", due + 60 * MINUTE),
        (down, "cnt_down", due),
        (lost, "cnt_lost", due),
    ):
        insert, values = schedule_row(f"sch_{owner}_{content}", owner, content, due_at=due_at)
        await runtime.execute(insert, *values)
    runtime.fault(Fault.respond(503, "unavailable"), content_id="cnt_busy")
    runtime.fault(Fault.respond(409, "scheduled_target_stale"), content_id="cnt_stale")
    followed = f"{runtime.dee_wan_url}/api/plugins/v1/followed"
    runtime.fault(Fault.redirect(302, location=followed), content_id="cnt_moved")
    await runtime.execute(
        "UPDATE installations SET base_url = ? WHERE id = ?",
        f"http://127.0.0.1:{free_port()}",
        down,
    )
    sealed = "SELECT token_sealed FROM installations WHERE id = ?"
    [token] = [row["token_sealed"] for row in await runtime.rows(sealed, installation_id)]
    await runtime.execute("UPDATE installations SET token_sealed = ? WHERE id = ?", token, lost)

    await runtime.tick(due - MINUTE)  # nothing is sent before it is due
    assert runtime.calls("transitions") == []
    await runtime.tick(due)
    at = rfc3339(due)
    calls = runtime.calls("transitions")
    sent = {call["body"]["content_id"]: call for call in calls}
    assert sorted(sent) == sorted([runtime.content, "cnt_busy", "cnt_moved", "cnt_stale"])
    assert [call for call in runtime.calls() if call["endpoint"] == "other"] == []  # not followed
    [done] = await runtime.rows("SELECT * FROM schedules WHERE id = ?", sid)
    ok = sent[runtime.content]
    assert (ok["path"], ok["applied"]) == ("/api/plugins/v1/transitions", True)
    raw = await runtime.unsealed(token, installation_token(installation_id))
    assert ok["headers"]["authorization"] == f"Bearer {raw}"
    assert ok["headers"]["idempotency-key"] == f"sched:{installation_id}:{sid}:r1"
    assert ok["headers"]["content-type"] == "application/json"
    assert ok["body"] == {
        "content_id": runtime.content,
        "kind": "publish",
        "to": "published",
        "version_id": done["version_id"],
        "workflow_revision": done["workflow_revision"],
        "requested_by": "usr_editor",
        "due_at": at,
    }
    sql = "SELECT s.content_id, s.status, s.result_code, s.attempt_count, s.next_attempt_at,"
    sql += " s.lease_token, a.code, a.http_status, a.finished_at FROM schedules s"
    sql += " LEFT JOIN schedule_attempts a ON a.schedule_id = s.id WHERE s.installation_id IN"
    sql += " (?, ?, ?)"
    settled = {r.pop("content_id"): r for r in await runtime.rows(sql, installation_id, down, lost)}
    for content, status, code, http_status in (
        (runtime.content, "completed", "transition_applied", 200),
        ("cnt_busy", "retrying", "unavailable", 503),
        ("cnt_stale", "refused", "scheduled_target_stale", 409),
        ("cnt_moved", "refused", "untrusted_response", 302),
        ("cnt_down", "retrying", "network_error", None),
    ):
        row = settled[content]
        assert (row["status"], row["result_code"], row["attempt_count"]) == (status, code, 1)
        assert (row["code"], row["http_status"], row["lease_token"]) == (code, http_status, None)
        assert row["finished_at"] >= due
        if status == "retrying":
            assert row["next_attempt_at"] > due
        else:
            assert row["next_attempt_at"] is None
    assert settled["cnt_lost"]["result_code"] == "token_unreadable"
    assert (settled["cnt_lost"]["attempt_count"], settled["cnt_lost"]["code"]) == (0, None)
    assert (settled["cnt_later"]["status"], settled["cnt_later"]["attempt_count"]) == ("pending", 0)
    lines = [line for line in runtime.log_text().splitlines() if '"event":"runner_tick"' in line]
    # The last tick of that minute: the Worker's log holds the earlier tests' lines too.
    *_, tick = [t for t in (json.loads(line[line.index("{") :]) for line in lines) if t["at"] == at]
    counts = ("due", "claimed", "completed", "refused", "retrying", "refused_unsent")
    assert [tick[name] for name in counts] == [6, 5, 1, 2, 2, 1]
    # due; claim (refusal, claim, open attempts); due again; settle, finish attempts and the
    # installations' last sends; the retention purge's step; the record
    assert (tick["d1_statements"], tick["d1_round_trips"]) == (16, 6)

    await runtime.tick(due)  # again: every claim was settled, nothing is due
    assert len(runtime.calls("transitions")) == len(calls)
    log = runtime.log_text()
    assert f"installation {lost}: token does not open" in log
    assert raw not in log


@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [
        (Fault.respond(400, "invalid_request"), "refused", "invalid_request"),
        (Fault.respond(403, "capability_refused"), "refused", "capability_refused"),
        (Fault.respond(409, "workflow_conflict"), "refused", "workflow_conflict"),
        (Fault.respond(409, "dependent_content"), "refused", "dependent_content"),
        (Fault.respond(422, "transition_refused"), "refused", "transition_refused"),
        (Fault.respond(200, "content_not_found"), "refused", "untrusted_response"),
        (Fault.bad_json(200), "refused", "untrusted_response"),
        (Fault.redirect(302), "refused", "untrusted_response"),
        (Fault.respond(418, "teapot"), "refused", "untrusted_response"),
        (Fault.respond(503, "unavailable"), "retrying", "unavailable"),
        (Fault.html_5xx(502), "retrying", "server_error"),
        (Fault.timeout(), "retrying", "timeout"),
        (Fault.apply_then_drop(), "retrying", "network_error"),
        (Fault.respond(429, "slow_down"), "retrying", "slow_down"),
    ],
)
async def test_every_outcome_class(world: World, fault: Fault, status: str, code: str) -> None:
    installation = await world.install()
    s = await schedule(world, installation)
    world.core.faults.push(fault, endpoint="transitions")
    await tick_at(world, s["due_at"])
    settled = await row(world, s["id"])
    assert (settled["status"], settled["result_code"]) == (status, code)
    [attempt] = await attempts(world, s["id"])
    assert attempt["code"] == code
    assert attempt["finished_at"] is not None
    if status == "retrying":
        assert settled["next_attempt_at"] > s["due_at"]
    else:
        assert settled["next_attempt_at"] is None


async def test_core_refusals_from_real_checks(world: World) -> None:
    installation = await world.install()
    stale = await schedule(world, installation, "cnt_en")
    world.core.state.edit("cnt_en")  # a newer version in core: the pin is stale
    gone = await schedule(world, installation, "cnt_page")
    del world.core.state.contents["cnt_page"]
    await tick_at(world, stale["due_at"])
    assert (await row(world, stale["id"]))["result_code"] == "scheduled_target_stale"
    assert (await row(world, gone["id"]))["result_code"] == "content_not_found"
    assert world.core.state.log == []


async def test_retries_carry_the_same_key_and_back_off_then_complete(world: World) -> None:
    installation = await world.install()
    s = await schedule(world, installation)
    world.core.faults.push(Fault.respond(503, "busy"), endpoint="transitions", times=2)
    now = s["due_at"]
    await tick_at(world, now)
    first = await row(world, s["id"])
    assert 7_500 <= first["next_attempt_at"] - now <= 15_000  # 15 s, jitter 50–100 %
    assert (await tick_at(world, first["next_attempt_at"] - 1))["due"] == 0
    await tick_at(world, first["next_attempt_at"])
    second = await row(world, s["id"])
    assert 15_000 <= second["next_attempt_at"] - first["next_attempt_at"] <= 30_000
    await tick_at(world, second["next_attempt_at"])
    done = await row(world, s["id"])
    assert (done["status"], done["attempt_count"]) == ("completed", 3)
    calls = sends(world, s)
    assert len(calls) == 3
    assert len({c.header("Idempotency-Key") for c in calls}) == 1
    assert len({c.raw_body for c in calls}) == 1
    assert [a["code"] for a in await attempts(world, s["id"])] == [
        "busy",
        "busy",
        "transition_applied",
    ]


async def test_a_code_added_to_the_runner_table_alone_is_retried(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dee Wan's 423 `content_locked` is not in the table: it cannot be trusted. One row, and
    nothing else, makes the runner retry it with the backoff and then complete."""
    installation = await world.install()
    untrusted = await schedule(world, installation, "cnt_en")
    locked = await schedule(world, installation, "cnt_page", in_minutes=7)
    world.core.faults.push(Fault.respond(423, "content_locked"), endpoint="transitions")
    await tick_at(world, untrusted["due_at"])
    assert (await row(world, untrusted["id"]))["result_code"] == "untrusted_response"
    rule = AnswerRule("423", (423,), ("content_locked",), Status.RETRYING, Retry.BACKOFF)
    monkeypatch.setattr(outcomes, "RUNNER_TABLE", (*outcomes.RUNNER_TABLE, rule))
    world.core.faults.push(Fault.respond(423, "content_locked"), endpoint="transitions")
    await tick_at(world, locked["due_at"])
    waiting = await row(world, locked["id"])
    assert (waiting["status"], waiting["result_code"]) == ("retrying", "content_locked")
    assert 7_500 <= waiting["next_attempt_at"] - locked["due_at"] <= 15_000
    await tick_at(world, waiting["next_attempt_at"])
    done = await row(world, locked["id"])
    assert (done["status"], done["attempt_count"]) == ("completed", 2)


@pytest.mark.parametrize("form", ["seconds", "date"])
async def test_429_waits_for_retry_after(world: World, form: str) -> None:
    installation = await world.install()
    s = await schedule(world, installation)
    now = s["due_at"]
    value = (
        "120"
        if form == "seconds"
        else format_datetime(datetime.fromtimestamp((now + 120_000) / 1000, UTC), usegmt=True)
    )
    world.core.faults.push(
        Fault.respond(429, "slow_down", retry_after=value), endpoint="transitions"
    )
    await tick_at(world, now)
    waiting = await row(world, s["id"])
    assert waiting["status"] == "retrying"
    assert abs(waiting["next_attempt_at"] - (now + 120_000)) <= 1_000
    assert (await tick_at(world, now + 100_000))["due"] == 0
    await tick_at(world, now + 121_000)
    assert (await row(world, s["id"]))["status"] == "completed"


async def test_after_uninstall_core_refuses_plugin_unauthorized(world: World) -> None:
    installation = await world.install()
    s = await schedule(world, installation)
    world.core.uninstall(installation.id)
    await tick_at(world, s["due_at"])
    settled = await row(world, s["id"])
    assert (settled["status"], settled["result_code"]) == ("refused", "plugin_unauthorized")
    assert len(sends(world, s)) == 1


# -- fairness, concurrency, crashes ----------------------------------------------------------


async def test_round_robin_one_busy_installation_cannot_starve_another(world: World) -> None:
    busy = await world.install()
    quiet = await world.install()
    third = await world.install()
    due = world.clock.now_ms() + MINUTE
    await bulk_due(world, busy, 1000, due - 5_000, "busy")  # older and many
    await bulk_due(world, quiet, 1, due, "quiet")
    await bulk_due(world, third, 2, due, "third")
    report = await tick_at(world, due)
    # The tick drains its backlog up to MAX_SENDS_PER_TICK (1,000): the first batch takes a
    # wave (SEND_CONCURRENCY, 6) of the busy installation's rows beside the others', the 49
    # after it 20 of the busy one's, alone, as long as a batch of 20 fits the budget.
    assert (report["claimed"], report["batches"]) == (9 + 49 * 20, 50)
    first_batch = world.core.calls.of("transitions")[:9]
    per_installation = Counter(c.header("Authorization") for c in first_batch)
    assert per_installation[f"Bearer {quiet.token}"] == 1
    assert per_installation[f"Bearer {third.token}"] == 2
    assert per_installation[f"Bearer {busy.token}"] == 6


async def test_a_twenty_row_tick_costs_seventeen_statements_in_six_round_trips(
    world: World,
) -> None:
    installation = await world.install()
    due = world.clock.now_ms() + MINUTE
    await tick_at(world, due - MINUTE)  # the downgrade guard's read: once in five minutes
    await bulk_due(world, installation, 20, due, "rt")
    trips = world.db.round_trips
    report = await tick_at(world, due)
    assert report["completed"] == 20
    # due; the claim (which opens its attempts: migration 0021's trigger); the next due
    # (none); settle (2 chunks) + finish (2) + the installation's last send; the retention
    # purge's step; the record (history row, totals, pruning)
    assert world.db.round_trips - trips == report["d1_round_trips"] == 6
    assert report["d1_statements"] == 17


async def test_two_ticks_at_once_never_send_a_row_twice(world: World) -> None:
    installation = await world.install()
    due = world.clock.now_ms() + MINUTE
    await bulk_due(world, installation, 15, due, "twin")
    world.app.services.db = Yielding(world.db)
    world.core.faults.set_latency(0.01)
    world.clock.now = due
    first, second = await asyncio.gather(world.app.tick(due), world.app.tick(due))
    assert first["due"] == second["due"] == 15  # both saw every row...
    assert first.get("claimed", 0) + second.get("claimed", 0) == 15  # ...each was claimed once
    keys = Counter(c.header("Idempotency-Key") for c in world.core.calls.of("transitions"))
    assert len(keys) == 15
    assert set(keys.values()) == {1}
    assert len(world.core.state.log) == 15


async def test_crash_between_claim_and_settle_is_reclaimed_with_the_same_key(world: World) -> None:
    installation = await world.install()
    s = await schedule(world, installation)
    # Core applies, then the runner dies while waiting for the answer.
    world.core.faults.push(Fault.delay(5), endpoint="transitions")
    await crash_during_send(world, s["due_at"])
    crashed = await row(world, s["id"])
    assert crashed["status"] == "running"
    [attempt] = await attempts(world, s["id"])
    assert attempt["finished_at"] is None  # outcome unknown, visible as such
    assert len(world.core.state.log) == 1
    # Not reclaimed while the lease holds...
    assert (await tick_at(world, s["due_at"] + 59_000))["due"] == 0
    # ...reclaimed once it expired, resent with the same key, and core replays.
    report = await tick_at(world, s["due_at"] + 60_000)
    assert report["completed"] == 1
    done = await row(world, s["id"])
    assert (done["status"], done["result_code"], done["attempt_count"]) == (
        "completed",
        "idempotent_replay",
        2,
    )
    calls = sends(world, s)
    assert len(calls) == 2
    assert calls[0].header("Idempotency-Key") == calls[1].header("Idempotency-Key")
    assert calls[0].raw_body == calls[1].raw_body
    assert len(world.core.state.log) == 1
    assert [a["finished_at"] is None for a in await attempts(world, s["id"])] == [True, False]


async def test_a_reclaimed_lease_past_the_cap_sends_nothing(world: World) -> None:
    installation = await world.install()
    s = await schedule(world, installation)
    world.core.faults.push(Fault.delay(5), endpoint="transitions")
    await crash_during_send(world, s["due_at"])
    report = await tick_at(world, s["due_at"] + 900_001)
    assert report["refused_unsent"] == 1
    final = await row(world, s["id"])
    assert (final["status"], final["result_code"]) == ("refused", "retry_exhausted")
    assert len(sends(world, s)) == 1


async def test_a_settle_after_the_lease_was_lost_changes_nothing(world: World) -> None:
    installation = await world.install()
    s = await schedule(world, installation)
    world.core.faults.push(Fault.delay(0.05), endpoint="transitions")
    slow = await tick_until_sent(world, s["due_at"])
    # Another runner took the row over meanwhile (as after a lease expiry).
    await (
        world.db.prepare("UPDATE schedules SET lease_token = 'someone-else' WHERE id = ?")
        .bind(s["id"])
        .run()
    )
    report = await slow
    assert report["lost_lease"] == 1
    assert (await runner_status(world.app))["last_tick"]["lost_lease"] == 1
    assert (await row(world, s["id"]))["status"] == "running"


async def test_a_zone_rule_change_never_moves_a_stored_due_at(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scheduling.domain import times

    installation = await world.install()
    browser = await world.browser_for(installation)
    await browser.get(f"/installations/{installation.id}")
    response = await browser.post(
        f"/installations/{installation.id}/schedules",
        {
            "csrf_token": browser.csrf(),
            **browser.shown(),
            "transition": "publish:published",
            "local_time": "2026-07-01T14:00",
            "timezone": "Europe/Berlin",
        },
    )
    assert response.status == 303
    stored = (await world.db.prepare("SELECT id, due_at FROM schedules").first()) or {}
    assert stored["due_at"] == 1_782_907_200_000  # 12:00 UTC under today's rules

    # Berlin's rules change after scheduling (simulated: it now behaves like Tokyo).
    real = times.get_zone
    monkeypatch.setattr(
        times,
        "get_zone",
        lambda name: real("Asia/Tokyo") if name == "Europe/Berlin" else real(name),
    )
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    assert "(Europe/Berlin; 12:00 UTC)" in html  # the instant, unchanged
    assert (await tick_at(world, stored["due_at"] - 1))["due"] == 0
    assert (await tick_at(world, stored["due_at"]))["completed"] == 1
    assert (await row(world, stored["id"]))["due_at"] == stored["due_at"]


async def test_a_batch_that_fails_before_its_sends_fails_the_tick_at_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine waits for a batch's claims to hold their slots before it claims the next;
    a batch that raised before that (report code failing, say) must fail the tick, not leave
    it waiting for an admission that never comes (issue 32)."""
    from scheduling.runner.sends import SendWork

    installation = await world.install()
    due = world.clock.now + MINUTE
    await bulk_due(world, installation, 3, due, "x")

    async def fails(*args: object) -> object:
        raise RuntimeError("report code raised")

    monkeypatch.setattr(SendWork, "unslotted", fails)
    world.clock.now = due
    with pytest.raises(RuntimeError, match="report code raised"):
        await asyncio.wait_for(world.app.tick(due), 10)
    assert world.core.calls.of("transitions") == []


async def test_a_tick_far_from_the_wall_clock_is_refused_whoever_asks(runtime: Runtime) -> None:
    """Issue 37, item 5: the window the local trigger kept (+15 min, -1 day) is the tick's
    own, so the Worker's `scheduled()` (under `wrangler dev --test-scheduled`, whose
    `/__scheduled?time=` any page can ask for) cannot run a tick 300 days ahead and end
    every pending schedule unsent."""
    installation_id = await runtime.install()
    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    fields = {**editor.shown, "csrf_token": editor.csrf, "transition": "publish:published",
              "local_time": local(runtime.minute_ahead(30)), "timezone": "UTC"}  # fmt: skip
    made = await editor.post_form(f"/installations/{installation_id}/schedules", fields)
    assert made.status_code == 303, made.text
    ticks = "SELECT count(*) AS n FROM tick_history"
    [before] = await runtime.rows(ticks)
    now, slack, day = runtime.now_ms(), runtime.slack_ms, 24 * 60 * MINUTE
    for far in (now + 300 * day, now + 15 * MINUTE + 1 + slack, now - day - 1):
        with pytest.raises((TickTimeRefused, AssertionError)):  # the harness's answer is 500
            await runtime.tick(far, asked_now=True)
    sql = "SELECT status, attempt_count FROM schedules WHERE installation_id = ?"
    assert await runtime.rows(sql, installation_id) == [{"status": "pending", "attempt_count": 0}]
    assert await runtime.rows(ticks) == [before]
    lines = [line for line in runtime.log_text().splitlines() if '"event":"runner_tick' in line]
    assert all('"event":"runner_tick_refused"' in line for line in lines[-3:]), lines[-3:]
    # Within the window's edges the tick runs.
    await runtime.tick(now + 15 * MINUTE - slack, asked_now=True)
    await runtime.tick(now - day + slack, asked_now=True)
    assert await runtime.rows(ticks) == [{"n": before["n"] + 2}]

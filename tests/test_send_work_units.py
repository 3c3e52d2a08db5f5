"""The engine's schedule sends on known inputs: rows written straight into an in-memory D1
(the CPython SQLite one, every migration applied), a Dee Wan whose answers the test chooses
and a clock the test moves, driven through `SendWork` on one `Engine`. Each decision at its
edge: the lateness cap on its millisecond before the claim and as the request leaves, the
attempts cap at its last attempt, a token that does not open, a claim lost between the read
and the claim, a lease lost before the settle, a settle D1 refuses, a send fetch refuses, the
per-installation cap, and what the report counts of each.

The mutation map points `runner/sends.py` here first (issue 40)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from scheduling.domain.records import DueRow, SettledClaim
from scheduling.limits import batch_cost
from scheduling.ports import LimitReached, OutboundRequest, OutboundResponse
from scheduling.repository.leases import Leases
from scheduling.repository.outbox import Outbox
from scheduling.runner.engine import TickReport
from scheduling.runner.sends import Claimed, DueRows, SendWork
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import LoopClock
from tests.support.unit_store import (
    BASE,
    DUE,
    LATENESS,
    refused,
    store,
    theirs,
    unavailable,
)


def counts(report: TickReport, *names: str) -> dict[str, int]:
    return {name: getattr(report, name) for name in names}


# -- a batch through: claim, send, settle ---------------------------------------------------


async def test_a_due_row_is_claimed_sent_and_completed() -> None:
    s = await store()
    await s.rows("c1")
    s.dee.step = 40
    engine = s.engine()
    work = await s.run(engine)
    row = await s.row("c1")
    assert (row["status"], row["result_code"], row["attempt_count"]) == (
        "completed",
        "transition_applied",
        1,
    )
    [request] = s.dee.asked
    assert request.headers["authorization"] == "Bearer dwi_ins_1"
    assert request.url == f"{BASE}/api/plugins/v1/transitions"
    report = engine.report
    assert counts(report, "batches", "due", "claimed", "sends", "completed", "lost_claim") == {
        "batches": 1,
        "due": 1,
        "claimed": 1,
        "sends": 1,
        "completed": 1,
        "lost_claim": 0,
    }
    assert report.lateness_max_ms == 0
    assert work.cost() == batch_cost(20, capped=False)
    assert work.batch_size == 20
    attempt = await s.db.prepare("SELECT * FROM schedule_attempts").all()
    [a] = attempt.results
    assert (a["started_at"], a["finished_at"], a["http_status"]) == (DUE, DUE + 40, 200)


async def test_nothing_due_claims_nothing() -> None:
    s = await store()
    await s.rows("c1", due_at=DUE + 1)
    engine = s.engine()
    await s.run(engine)
    assert counts(engine.report, "batches", "due", "claimed") == {
        "batches": 0,
        "due": 0,
        "claimed": 0,
    }
    assert s.dee.asked == []


async def test_a_refusal_is_counted_by_its_code() -> None:
    s = await store()
    await s.rows("c1", "c2")
    s.dee.answers["c1"] = refused()
    engine = s.engine()
    await s.run(engine)
    assert (await s.row("c1"))["status"] == "refused"
    assert engine.report.refusals() == {"workflow_conflict": 1}
    assert counts(engine.report, "refused", "completed") == {"refused": 1, "completed": 1}


async def test_a_retry_is_planned_from_when_the_answer_came() -> None:
    s = await store()
    await s.rows("c1")
    s.dee.answers["c1"] = unavailable()
    s.dee.step = 1_234
    engine = s.engine()
    await s.run(engine)
    row = await s.row("c1")
    assert row["status"] == "retrying"
    assert row["result_code"] == "server_error"
    # Backoff from the answer's time (DUE + 1234), never from the request's.
    assert DUE + 1_234 + 1_000 <= row["next_attempt_at"] <= DUE + 1_234 + 60_000
    assert engine.report.retrying == 1
    assert engine.report.refusals() == {}


async def test_batches_of_max_rows_per_tick() -> None:
    s = await store(MAX_ROWS_PER_TICK="2")
    await s.rows("c1", "c2", "c3")
    engine = s.engine()
    await s.run(engine)
    assert counts(engine.report, "batches", "due", "claimed", "completed") == {
        "batches": 2,
        "due": 3,
        "claimed": 3,
        "completed": 3,
    }


# -- the caps, before the claim and as the request leaves ----------------------------------


async def test_the_lateness_cap_on_its_millisecond_before_the_claim() -> None:
    s = await store()
    await s.rows("on_time", due_at=DUE - LATENESS)
    await s.rows("late", due_at=DUE - LATENESS - 1)
    engine = s.engine()
    await s.run(engine)
    assert (await s.row("on_time"))["status"] == "completed"
    late = await s.row("late")
    assert (late["status"], late["result_code"], late["ended_by"]) == (
        "refused",
        "retry_exhausted",
        "lateness",
    )
    assert engine.report.refused_unsent == 1
    assert engine.report.refusals() == {"retry_exhausted": 1}
    assert [json.loads(r.body or b"")["content_id"] for r in s.dee.asked] == ["on_time"]


async def test_the_attempts_cap_at_its_last_attempt() -> None:
    s = await store(MAX_ATTEMPTS="3")
    await s.rows("last", "over")
    await s.db.prepare(
        "UPDATE schedules SET attempt_count = CASE id WHEN 'sch_last' THEN 2 ELSE 3 END,"
        " status = 'retrying'"
    ).run()
    s.dee.answers["last"] = unavailable()
    engine = s.engine()
    await s.run(engine)
    last, over = await s.row("last"), await s.row("over")
    assert (last["status"], last["attempt_count"], last["ended_by"]) == ("refused", 3, "attempts")
    assert (over["status"], over["attempt_count"], over["ended_by"]) == ("refused", 3, "attempts")
    assert engine.report.refused_unsent == 1
    assert len(s.dee.asked) == 1


async def test_claimed_on_time_but_past_the_cap_when_its_slot_comes() -> None:
    s = await store(SEND_CONCURRENCY="1", LEASE_MS="300000")
    await s.rows("first", due_at=DUE - LATENESS + 100)
    await s.rows("second", due_at=DUE - LATENESS + 100)
    s.dee.step = 100  # the first answers as the second reaches its cap: still sent
    engine = s.engine()
    await s.run(engine)
    assert (await s.row("second"))["status"] == "completed"
    s2 = await store(SEND_CONCURRENCY="1", LEASE_MS="300000")
    await s2.rows("first", due_at=DUE - LATENESS + 100)
    await s2.rows("second", due_at=DUE - LATENESS + 100)
    s2.dee.step = 101  # one millisecond more: past it, never sent
    engine = s2.engine()
    await s2.run(engine)
    second = await s2.row("second")
    assert (second["status"], second["result_code"], second["ended_by"]) == (
        "refused",
        "retry_exhausted",
        "lateness",
    )
    assert second["attempt_count"] == 0  # its attempt given back: nothing was sent
    assert engine.report.refused_unsent_late == 1
    assert engine.report.refusals() == {"retry_exhausted": 1}
    assert len(s2.dee.asked) == 1


async def test_a_token_that_does_not_open_refuses_its_installations_rows_unsent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = await store("ins_1", "ins_2")
    await s.rows("c1", installation="ins_1")
    await s.rows("c2", "c3", installation="ins_2")
    await s.db.prepare("UPDATE installations SET token_sealed = 'garbage' WHERE id = 'ins_2'").run()
    engine = s.engine()
    with caplog.at_level(logging.WARNING):
        work = await s.run(engine)
    c2 = await s.row("c2")
    assert (c2["status"], c2["result_code"]) == ("refused", "token_unreadable")
    assert engine.report.refusals() == {"token_unreadable": 2}
    assert engine.report.refused_unsent == 2
    assert (await s.row("c1"))["status"] == "completed"
    assert work._tokens == {"ins_1": "dwi_ins_1", "ins_2": None}


async def test_each_installations_token_is_opened_once() -> None:
    s = await store()
    await s.rows("c1", "c2", "c3")
    engine = s.engine()
    opened: list[str] = []
    crypto = engine.services.crypto
    real = crypto.open

    async def counting(sealed: str, context: str) -> str:
        opened.append(sealed)
        return await real(sealed, context)

    crypto.open = counting  # type: ignore[method-assign]
    await s.run(engine)
    assert len(opened) == 1


# -- claims and leases lost to another runner ----------------------------------------------


class Racing(DueRows):
    """Another runner changes `taken` between our read and our claim."""

    def __init__(self, leases: Leases, db: SqliteDatabase, taken: Sequence[str]) -> None:
        super().__init__(leases)
        self.db = db
        self.taken = taken
        self.heard: list[Claimed] = []

    async def next(self, now: int, limit: int, work: SendWork) -> list[DueRow] | None:
        rows = await super().next(now, limit, work)
        for content in self.taken:
            claimed = "attempt_count = attempt_count + 1,"
            await theirs(self.db, f"sch_{content}", now + 60_000, claimed)
        self.taken = []
        return rows

    def claimed(self, rows: Sequence[DueRow], claimed: Claimed) -> None:
        self.heard.append(claimed)


async def test_a_claim_lost_between_the_read_and_the_claim() -> None:
    s = await store()
    await s.rows("c1", "c2")
    engine = s.engine()
    leases = Leases(engine.trips, Outbox(engine.trips))
    source = Racing(leases, s.db, ["c1"])
    await s.run(engine, source=source)
    assert engine.report.lost_claim == 1
    assert engine.report.claimed == 1
    assert [len(c.won) for c in source.heard] == [1]
    assert (await s.row("c1"))["lease_token"] == "theirs"


async def test_every_claim_lost_ends_the_work() -> None:
    s = await store()
    await s.rows("c1", "c2")
    engine = s.engine()
    leases = Leases(engine.trips, Outbox(engine.trips))
    source = Racing(leases, s.db, ["c1", "c2"])
    await s.run(engine, source=source)
    assert engine.report.lost_claim == 2
    assert engine.claims == 1  # nothing won: the rest is left to the other runner
    assert s.dee.asked == []


async def test_a_lease_lost_before_the_settle(caplog: pytest.LogCaptureFixture) -> None:
    s = await store()
    await s.rows("c1", "c2")
    s.dee.answers["c1"] = refused()
    s.dee.answers["c2"] = refused()

    async def reclaim(request: OutboundRequest) -> None:
        if json.loads(request.body or b"")["content_id"] == "c1":
            await s.db.prepare(
                "UPDATE schedules SET lease_token = 'theirs' WHERE id = 'sch_c1'"
            ).run()

    s.dee.during = reclaim
    engine = s.engine()
    with caplog.at_level(logging.WARNING, logger="scheduling"):
        await s.run(engine)
    assert engine.report.lost_lease == 1
    # Only the settle that applied counts its refusal.
    assert engine.report.refusals() == {"workflow_conflict": 1}
    assert (await s.row("c1"))["status"] == "running"
    assert "schedule sch_c1: lease lost before settle; left to its new runner" in [
        r.getMessage() for r in caplog.records
    ]


# -- platform limits -----------------------------------------------------------------------


async def test_a_send_fetch_refuses_is_handed_back_unsent() -> None:
    s = await store(SEND_CONCURRENCY="1", LEASE_MS="300000")
    await s.rows("c1", "c2", "c3")
    s.dee.refuse = {"c2"}
    engine = s.engine()
    await s.run(engine)
    assert counts(engine.report, "sends", "completed", "handed_back", "platform_limit") == {
        "sends": 1,
        "completed": 1,
        "handed_back": 2,
        "platform_limit": 1,
    }
    assert engine.report.lateness_max_ms == 0
    c2, c3 = await s.row("c2"), await s.row("c3")
    assert (c2["status"], c2["attempt_count"], c2["next_attempt_at"]) == ("pending", 0, DUE)
    assert (c3["status"], c3["attempt_count"]) == ("pending", 0)


async def test_a_retry_handed_back_stays_retrying() -> None:
    s = await store()
    await s.rows("c1")
    await s.db.prepare(
        "UPDATE schedules SET status = 'retrying', attempt_count = 1, result_code = 'timeout'"
    ).run()
    s.dee.refuse = {"c1"}
    engine = s.engine()
    await s.run(engine)
    row = await s.row("c1")
    assert (row["status"], row["attempt_count"], row["result_code"]) == ("retrying", 1, "timeout")


class RefusingSettle(DueRows):
    def __init__(self, leases: Leases) -> None:
        super().__init__(leases)
        self.heard: list[Sequence[SettledClaim]] = []

    def settled(self, claims: Sequence[SettledClaim]) -> None:
        self.heard.append(claims)


async def test_a_settle_refused_by_d1s_limit_leaves_the_claims_to_their_lease(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = await store()
    await s.rows("c1", "c2")
    engine = s.engine()
    leases = Leases(engine.trips, Outbox(engine.trips))

    async def refuse(*args: Any, **kwargs: Any) -> list[str]:
        raise LimitReached("d1")

    leases.settle = refuse  # type: ignore[method-assign]
    source = RefusingSettle(leases)
    work = SendWork(engine, leases, source)
    with caplog.at_level(logging.WARNING, logger="scheduling"):
        await engine.run(work)
    assert engine.report.unsettled == 2
    assert engine.limit is not None
    assert engine.limit.kind == "d1"
    [heard] = source.heard
    assert len(heard) == 2
    assert (await s.row("c1"))["status"] == "running"
    assert (
        "2 claims could not be settled (D1 refused): their lease runs out and they are claimed"
        " again, with the same idempotency key"
    ) in [r.getMessage() for r in caplog.records]


async def test_the_source_hears_each_settle() -> None:
    s = await store()
    await s.rows("c1")
    engine = s.engine()
    leases = Leases(engine.trips, Outbox(engine.trips))
    source = RefusingSettle(leases)
    await engine.run(SendWork(engine, leases, source))
    [heard] = source.heard
    assert len(heard) == 1


# -- a capped claim and the latest send ----------------------------------------------------


async def test_a_capped_claim_holds_back_what_the_cap_has_no_room_for() -> None:
    s = await store()
    await s.rows("c1", "c2", "c3")
    await theirs(s.db, "sch_c1", DUE + 60_000)
    await s.db.prepare("UPDATE schedules SET due_at = due_at - 1 WHERE id = 'sch_c3'").run()
    engine = s.engine()
    work = await s.run(engine, cap=2)
    assert work.cost() == batch_cost(20, capped=True)
    # c3 (due first) is won beside their one claim, c2 held back; once c3 settled, c2 is won.
    assert counts(engine.report, "batches", "claimed", "held_back", "lost_claim") == {
        "batches": 2,
        "claimed": 2,
        "held_back": 1,
        "lost_claim": 0,
    }


async def test_the_latest_send_noted_later_is_each_installations_latest() -> None:
    s = await store("ins_1", "ins_2", MAX_ROWS_PER_TICK="1", SEND_CONCURRENCY="1")
    await s.rows("a1", "a2", installation="ins_1")
    await s.rows("b1", installation="ins_2")
    s.dee.step = 10  # one at a time, each 10 ms after the last
    engine = s.engine()
    work = await s.run(engine, last_sent_later=True)
    assert [json.loads(r.body or b"")["content_id"] for r in s.dee.asked] == ["a1", "a2", "b1"]
    assert work.latest == {"ins_1": DUE + 10, "ins_2": DUE + 20}
    sent_at = await s.db.prepare("SELECT last_sent_at FROM installations").all()
    assert {r["last_sent_at"] for r in sent_at.results} == {None}


async def test_the_latest_send_written_with_each_settle_by_default() -> None:
    s = await store()
    await s.rows("c1")
    engine = s.engine()
    leases = Leases(engine.trips, Outbox(engine.trips))
    work = SendWork(engine, leases, DueRows(leases))
    await engine.run(work)
    assert work.latest == {}
    sent_at = await s.db.prepare("SELECT last_sent_at FROM installations").all()
    assert [r["last_sent_at"] for r in sent_at.results] == [DUE]


async def test_due_rows_with_a_lag_leave_the_recent_ones() -> None:
    s = await store()
    await s.rows("old", due_at=DUE - 30_000)
    await s.rows("recent", due_at=DUE - 29_999)
    engine = s.engine()
    leases = Leases(engine.trips, Outbox(engine.trips))
    await engine.run(SendWork(engine, leases, DueRows(leases, lag_ms=30_000)))
    assert (await s.row("old"))["status"] == "completed"
    assert (await s.row("recent"))["status"] == "pending"


# -- the events each end raises, for an installation whose endpoint hears of them -----------

EVENTS = ("schedule.refused", "schedule.completed", "schedule.retrying")


def said(event: dict[str, Any]) -> tuple[Any, ...]:
    data = event["data"]
    return (
        event["type"],
        event["timestamp"],
        data["schedule_id"],
        data["result_code"],
        data["ended_by"],
        data["attempts"],
    )


def whole(schedule: str, **data: Any) -> dict[str, Any]:
    """An event's data for a row `store.rows` wrote, with what its end changed."""
    return {
        "installation_id": "ins_1",
        "schedule_id": schedule,
        "content_id": schedule.removeprefix("sch_"),
        "kind": "publish",
        "to": "published",
        "version_id": "ver_1",
        "due_at": "2026-05-28T20:26:40Z",
        "local_time": "2026-07-01T10:05",
        "timezone": "UTC",
        "ended_by": None,
        "attempts": 1,
        "outcome_unknown": False,
        "next_attempt_at": None,
        **data,
        "page_url": "https://scheduling.example/installations/ins_1",
    }


async def test_each_answer_raises_its_whole_event() -> None:
    s = await store()
    await s.subscribe(*EVENTS)
    await s.rows("ok", "no", "later")
    s.dee.answers["no"] = refused()
    s.dee.answers["later"] = unavailable()
    s.dee.step = 1_000
    await s.run(s.engine())
    assert {e["data"]["schedule_id"]: e["data"] for e in await s.events()} == {
        "sch_ok": whole(
            "sch_ok",
            status="completed",
            result_code="transition_applied",
            message="Dee Wan applied the change.",
        ),
        "sch_no": whole(
            "sch_no",
            status="refused",
            result_code="workflow_conflict",
            message="Dee Wan's workflow does not allow this change from the content's current"
            " state (for example while it is in review), so it was not applied. Check the"
            " content in Dee Wan, then try again.",
        ),
        "sch_later": whole(
            "sch_later",
            status="retrying",
            result_code="server_error",
            message="Dee Wan had a temporary problem; the plugin will try again.",
            next_attempt_at="2026-05-28T20:26:50Z",
        ),
    }
    outbox = await s.db.prepare("SELECT id FROM webhook_deliveries").all()
    # One message id an event, and a delivery of it an endpoint.
    assert all(re.fullmatch(r"msg_[\w-]{22}_end_ins_1", r["id"]) for r in outbox.results)


async def test_each_cap_raises_its_whole_event_from_the_last_try() -> None:
    s = await store(MAX_ATTEMPTS="3", MAX_RETRY_AFTER_MS="300000")
    await s.subscribe(*EVENTS)
    await s.rows("tired", "spent", "never")
    await s.rows("lost", due_at=DUE - LATENESS - 1)
    await s.db.prepare(
        "UPDATE schedules SET attempt_count = 3, status = 'retrying', timezone = 'Europe/Paris',"
        " result_code = CASE id WHEN 'sch_tired' THEN 'timeout' ELSE 'server_error' END"
        " WHERE id IN ('sch_tired', 'sch_spent')"
    ).run()
    await s.db.prepare("UPDATE schedules SET attempt_count = 1 WHERE id = 'sch_lost'").run()
    await theirs(s.db, "sch_lost", DUE - 1)  # its runner died mid-send
    s.dee.answers["never"] = OutboundResponse(429, {"retry-after": "301"}, b"{}")
    await s.run(s.engine())
    unknown = (
        " Its last try got no answer, so whether Dee Wan applied it is unknown: check the"
        " content in Dee Wan."
    )
    refused_as = {"status": "refused", "result_code": "retry_exhausted"}
    assert {e["data"]["schedule_id"]: e["data"] for e in await s.events()} == {
        "sch_tired": whole(
            "sch_tired",
            **refused_as,
            timezone="Europe/Paris",
            ended_by="attempts",
            attempts=3,
            outcome_unknown=True,
            message="Dee Wan did not accept it in 3 tries, so the plugin stopped trying." + unknown,
        ),
        "sch_spent": whole(
            "sch_spent",
            **refused_as,
            timezone="Europe/Paris",
            ended_by="attempts",
            attempts=3,
            message="Dee Wan did not accept it in 3 tries, so the plugin stopped trying.",
        ),
        "sch_lost": whole(
            "sch_lost",
            **refused_as,
            due_at="2026-05-28T20:11:39Z",
            ended_by="lateness",
            outcome_unknown=True,
            message="It was still not sent 15 minutes after its time had passed, so the"
            " plugin stopped trying: nothing is sent later than that." + unknown,
        ),
        "sch_never": whole(
            "sch_never",
            **refused_as,
            ended_by="retry_after",
            message="Dee Wan asked to wait past the limit before the next try, so the plugin"
            " stopped trying.",
        ),
    }


async def test_a_refusal_before_the_claim_raises_its_event() -> None:
    s = await store()
    await s.subscribe(*EVENTS)
    await s.rows("late", due_at=DUE - LATENESS - 1)
    s.clock.now += 1_000  # the claim's instant, a second on
    await s.run(s.engine())
    assert [said(e) for e in await s.events()] == [
        ("schedule.refused", "2026-05-28T20:26:41Z", "sch_late", "retry_exhausted", "lateness", 0)
    ]


async def test_a_refusal_when_its_slot_comes_raises_its_event() -> None:
    s = await store(SEND_CONCURRENCY="1", LEASE_MS="300000")
    await s.subscribe(*EVENTS)
    await s.rows("first", "second", due_at=DUE - LATENESS + 100)
    s.dee.step = 1_500  # the second's slot comes 1.5 s on, past its cap
    await s.run(s.engine())
    at = "2026-05-28T20:26:41Z"
    assert [said(e) for e in await s.events()] == [
        ("schedule.completed", at, "sch_first", "transition_applied", None, 1),
        ("schedule.refused", at, "sch_second", "retry_exhausted", "lateness", 0),
    ]


async def test_a_sent_refusal_and_retry_raise_theirs_from_when_the_answer_came() -> None:
    s = await store()
    await s.subscribe(*EVENTS)
    await s.rows("no", "later")
    s.dee.answers["no"] = refused()
    s.dee.answers["later"] = unavailable()
    s.dee.step = 1_000
    await s.run(s.engine())
    events = {e["data"]["schedule_id"]: e for e in await s.events()}
    assert said(events["sch_no"])[0] == "schedule.refused"
    assert said(events["sch_no"])[3:] == ("workflow_conflict", None, 1)
    assert events["sch_later"]["type"] == "schedule.retrying"
    assert events["sch_later"]["data"]["next_attempt_at"] is not None
    attempts = await s.db.prepare("SELECT code, http_status FROM schedule_attempts").all()
    assert sorted((r["code"], r["http_status"]) for r in attempts.results) == [
        ("server_error", 503),
        ("workflow_conflict", 409),
    ]


async def test_a_retry_after_past_its_cap_ends_the_schedule() -> None:
    s = await store(MAX_RETRY_AFTER_MS="300000")
    await s.rows("soon", "never")
    s.dee.answers["soon"] = OutboundResponse(429, {"retry-after": "300"}, b"{}")
    s.dee.answers["never"] = OutboundResponse(429, {"retry-after": "301"}, b"{}")
    await s.run(s.engine())
    soon, never = await s.row("soon"), await s.row("never")
    assert (soon["status"], soon["next_attempt_at"]) == ("retrying", DUE + 300_000)
    assert (never["status"], never["ended_by"]) == ("refused", "retry_after")


# -- what a source hears, and counts over more than one batch --------------------------------


class Listening(DueRows):
    """Hears every claim, and checks it is asked by the work it feeds."""

    def __init__(self, leases: Leases) -> None:
        super().__init__(leases)
        self.heard: list[tuple[list[str], Claimed]] = []
        self.works: list[SendWork] = []

    async def next(self, now: int, limit: int, work: SendWork) -> list[DueRow] | None:
        self.works.append(work)
        return await super().next(now, limit, work)

    def claimed(self, rows: Sequence[DueRow], claimed: Claimed) -> None:
        self.heard.append(([row.id for row in rows], claimed))


async def test_the_source_hears_the_rows_won_refused_and_held_back() -> None:
    s = await store()
    await s.rows("theirs", "late_one", "mine", "held")
    await (
        s.db.prepare(
            "UPDATE schedules SET due_at = ?, next_attempt_at = ? WHERE id = 'sch_late_one'"
        )
        .bind(DUE - LATENESS - 1, DUE - LATENESS - 1)
        .run()
    )
    await theirs(s.db, "sch_theirs", DUE + 60_000)
    engine = s.engine()
    leases = Leases(engine.trips, Outbox(engine.trips))
    source = Listening(leases)
    work = SendWork(engine, leases, source, cap=2)
    await engine.run(work)
    assert source.works
    assert all(w is work for w in source.works)
    rows, first = source.heard[0]
    assert sorted(rows) == ["sch_held", "sch_late_one", "sch_mine"]
    assert first.refused == ["sch_late_one"]
    assert len(first.won) == 1
    assert len(first.held) == 1


async def test_refusals_before_the_claim_add_up_over_batches() -> None:
    s = await store(MAX_ROWS_PER_TICK="1", SEND_CONCURRENCY="1", LEASE_MS="300000")
    await s.rows("late1", "late2", due_at=DUE - LATENESS - 1)
    await s.rows("ok1", "ok2", "ok3")
    engine = s.engine()
    await s.run(engine)
    assert engine.report.refused_unsent == 2
    assert engine.report.completed == 3


class TakingTheFirst(DueRows):
    """Another runner takes the first row of every read, before our claim."""

    def __init__(self, leases: Leases, db: SqliteDatabase) -> None:
        super().__init__(leases)
        self.db = db

    async def next(self, now: int, limit: int, work: SendWork) -> list[DueRow] | None:
        rows = await super().next(now, limit, work)
        if rows:
            await theirs(self.db, rows[0].id, now + 60_000)
        return rows


async def test_claims_lost_add_up_over_batches() -> None:
    s = await store(MAX_ROWS_PER_TICK="2")
    await s.rows("c1", "c2", "c3", "c4")
    engine = s.engine()
    leases = Leases(engine.trips, Outbox(engine.trips))
    await s.run(engine, source=TakingTheFirst(leases, s.db))
    assert engine.report.lost_claim == 2
    assert engine.report.claimed == 2


async def test_refusals_at_the_slot_add_up_over_batches() -> None:
    s = await store(MAX_ROWS_PER_TICK="2", SEND_CONCURRENCY="1", LEASE_MS="300000")
    await s.rows("a", "b", due_at=DUE - LATENESS + 100)
    await s.rows("c", "d", due_at=DUE - LATENESS + 250)
    # a answers 151 ms on, past b's cap; c and d are claimed then, c answers at 302 ms,
    # past d's.
    s.dee.step = 151
    engine = s.engine()
    await s.run(engine)
    assert engine.report.refused_unsent_late == 2


async def test_leases_lost_add_up_over_batches() -> None:
    s = await store(MAX_ROWS_PER_TICK="1")
    await s.rows("c1", "c2")

    async def reclaim(request: OutboundRequest) -> None:
        content = json.loads(request.body or b"")["content_id"]
        await (
            s.db.prepare("UPDATE schedules SET lease_token = 'theirs' WHERE id = ?")
            .bind(f"sch_{content}")
            .run()
        )

    s.dee.during = reclaim
    engine = s.engine()
    await s.run(engine)
    assert engine.report.lost_lease == 2


async def test_settles_refused_add_up_over_batches() -> None:
    s = await store(MAX_ROWS_PER_TICK="1")
    await s.rows("c1", "c2")
    engine = s.engine()
    leases = Leases(engine.trips, Outbox(engine.trips))

    async def refuse(*args: Any, **kwargs: Any) -> list[str]:
        raise LimitReached("d1")

    leases.settle = refuse  # type: ignore[method-assign]
    gate = asyncio.Event()

    async def held(request: OutboundRequest) -> None:
        await gate.wait()

    s.dee.during = held
    running = asyncio.create_task(engine.run(SendWork(engine, leases, DueRows(leases))))
    for _ in range(20):
        await asyncio.sleep(0)
    gate.set()
    await running
    assert engine.report.unsettled == 2


async def test_an_earlier_send_settled_later_keeps_the_latest() -> None:
    s = await store(MAX_ROWS_PER_TICK="1")
    await s.rows("a1", "a2")
    gate = asyncio.Event()

    async def slow_first(request: OutboundRequest) -> None:
        if json.loads(request.body or b"")["content_id"] == "a1":
            s.clock.now += 10  # a2 is claimed and sent 10 ms later
            await gate.wait()
        else:
            gate.set()

    s.dee.during = slow_first
    engine = s.engine()
    work = await s.run(engine, last_sent_later=True)
    assert work.latest == {"ins_1": DUE + 10}


async def test_a_capped_claim_writes_the_events_of_its_refusals() -> None:
    s = await store()
    await s.subscribe(*EVENTS)
    await s.rows("late", due_at=DUE - LATENESS - 1)
    await s.run(s.engine(), cap=2)
    assert [said(e)[2:4] for e in await s.events()] == [("sch_late", "retry_exhausted")]


class Apart(TakingTheFirst):
    """A capped source that tells the rows the cap held back apart from those another runner
    took (`apart`), or one that does not."""

    def __init__(self, leases: Leases, db: SqliteDatabase, apart: bool) -> None:
        super().__init__(leases, db)
        self.apart = apart


@pytest.mark.parametrize(("apart", "lost", "held"), [(True, 1, 0), (False, 0, 1)])
async def test_a_row_another_runner_took_under_a_cap(apart: bool, lost: int, held: int) -> None:
    s = await store(MAX_ROWS_PER_TICK="2")
    await s.rows("c1", "c2")
    engine = s.engine()
    leases = Leases(engine.trips, Outbox(engine.trips))
    await s.run(engine, cap=6, source=Apart(leases, s.db, apart))
    assert (engine.report.lost_claim, engine.report.held_back) == (lost, held)
    assert engine.report.claimed == 1


async def test_a_lease_that_ends_on_the_millisecond_is_claimed_again_under_a_new_one() -> None:
    s = await store()
    await s.rows("ended", "running")
    lease = (
        "UPDATE schedules SET status = 'running', next_attempt_at = NULL, attempt_count = 1,"
        " lease_token = 'dead', lease_until = ? WHERE id = ?"
    )
    await s.db.prepare(lease).bind(DUE, "sch_ended").run()  # its runner died; it ends now
    await s.db.prepare(lease).bind(DUE + 1, "sch_running").run()  # a millisecond left
    leases: list[tuple[str, int]] = []

    async def seen(request: OutboundRequest) -> None:
        row = await s.row("ended")
        leases.append((row["lease_token"], row["lease_until"]))

    s.dee.during = seen
    engine = s.engine()
    await s.run(engine)
    [(token, until)] = leases
    assert token != "dead"
    assert until == DUE + 60_000  # LEASE_MS from the claim
    ended, running = await s.row("ended"), await s.row("running")
    assert (ended["status"], ended["attempt_count"]) == ("completed", 2)
    assert (running["status"], running["lease_token"]) == ("running", "dead")
    assert engine.report.claimed == 1


@pytest.mark.parametrize("hears", ["schedule.refused", "schedule.completed"])
async def test_a_completion_tells_at_once_of_the_other_kind_it_made_stale(hears: str) -> None:
    """Issue 38: a publish completed puts the waiting unpublish of its content out of date;
    the endpoints that hear of refusals hear of it in the same settle, stamped when it ended."""
    s = await store()
    await s.subscribe(hears)
    await s.rows("c1")
    await (
        s.db.prepare(
            "INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,"
            " workflow_revision, revision, idempotency_key, due_at, timezone, local_time, status,"
            " next_attempt_at, requested_by, requested_by_name, created_at, updated_at)"
            " VALUES ('sch_off', 'ins_1', 'c1', 'unpublish', 'draft', 'ver_1', 1, 1,"
            " 'sched:ins_1:sch_off:r1', ?, 'Europe/Paris', '2026-07-01T10:15', 'pending', ?,"
            " 'usr_editor',"
            " 'Ada', 0, 0)"
        )
        .bind(DUE + 600_000, DUE + 600_000)
        .run()
    )
    s.dee.step = 1_000
    await s.run(s.engine())
    assert (await s.row("off"))["made_stale_by"] == "sch_c1"
    if hears != "schedule.refused":  # only the completion: the stale one is a refusal's notice
        assert [e["data"]["schedule_id"] for e in await s.events()] == ["sch_c1"]
        return
    [event] = await s.events()
    assert (event["type"], event["data"]["schedule_id"], event["data"]["status"]) == (
        "schedule.stale",
        "sch_off",
        "pending",
    )
    assert event["timestamp"] == "2026-05-28T20:26:41Z"  # the answer's instant, a second on
    assert event["data"] == whole(
        "sch_off",
        content_id="c1",
        kind="unpublish",
        to="draft",
        due_at="2026-05-28T20:36:40Z",
        local_time="2026-07-01T10:15",
        timezone="Europe/Paris",
        status="pending",
        result_code=None,
        attempts=0,
        message="Needs a new pin: a publish of this content was done at Thu 28 May 2026, 22:26"
        " CEST (Europe/Paris; 20:26 UTC), so Dee Wan would refuse this unpublish at its time."
        " Open the content from Dee Wan and pin it again in one step, at the same time; or"
        " cancel it.",
    )


# -- a claim's lease, and each installation's share of the slots ----------------------------


@pytest.mark.parametrize(("answer_ms", "second"), [(200_000, "sent"), (200_001, "handed back")])
async def test_a_send_leaves_only_while_its_lease_outlives_an_answer_and_the_settle(
    answer_ms: int, second: str
) -> None:
    """One slot, a lease of 215 s: the second claim's slot comes when the first answers. With
    the timeout (10 s) and the settle's margin (5 s) still inside its lease it is sent under
    it; a millisecond later it is handed back unsent, and sent under a claim of its own."""
    s = await store(SEND_CONCURRENCY="1", LEASE_MS="215000")
    await s.rows("c1", "c2")
    s.dee.step = answer_ms
    engine = s.engine(ms=1_000_000)
    await s.run(engine)
    c2 = await s.row("c2")
    assert (len(s.dee.asked), c2["status"], c2["attempt_count"]) == (2, "completed", 1)
    assert (engine.report.handed_back, engine.report.batches) == (
        (0, 1) if second == "sent" else (1, 2)
    )
    attempt = await s.db.prepare(
        "SELECT started_at FROM schedule_attempts WHERE schedule_id = 'sch_c2'"
    ).first()
    assert attempt == {"started_at": DUE + answer_ms}


def answering(slow_s: float, fast_s: float) -> Any:
    """Dee Wan's answer after `slow_s` for contents `s…`, `fast_s` for the others."""

    async def answer(request: OutboundRequest) -> None:
        slow = json.loads(request.body or b"")["content_id"].startswith("s")
        await asyncio.sleep(slow_s if slow else fast_s)

    return answer


async def two_installations(slow: int, fast: int) -> Any:
    """Two slots, a share of one, batches of six: `slow` rows of ins_slow (5 s), `fast` of
    ins_fast (0.1 s)."""
    s = await store(
        "ins_slow",
        "ins_fast",
        SEND_CONCURRENCY="2",
        MAX_SLOTS_PER_INSTALLATION="1",
        MAX_ROWS_PER_BATCH="6",
    )
    s.clock = s.dee.clock = LoopClock(DUE)
    await s.rows(*(f"s{n}" for n in range(1, slow + 1)), installation="ins_slow")
    await s.rows(*(f"f{n}" for n in range(1, fast + 1)), installation="ins_fast")
    s.dee.during = answering(5, 0.1)
    return s


@pytest.mark.looptime
async def test_due_rows_take_a_wave_of_each_and_leave_out_one_held_back_by_its_share() -> None:
    """ins_slow's first send holds its share of the two slots: its next waits, held back, and
    ins_slow is left out of the claims until it has a slot, while ins_fast's rows go one after
    another in the other slot. A batch takes at most a wave (two) of each installation's rows
    while the other has some due; with only held-back rows due the source waits for one to
    pass, and reads again."""
    s = await two_installations(3, 3)
    engine = s.engine(ms=1_000_000)
    leases = Leases(engine.trips, Outbox(engine.trips))
    source = Listening(leases)
    await s.run(engine, source=source)
    assert [rows for rows, _ in source.heard] == [
        ["sch_f1", "sch_s1", "sch_f2", "sch_s2"],
        ["sch_f3"],
        ["sch_s3"],
    ]
    assert s.dee.order == ["f1", "s1", "f2", "f3", "s2", "s3"]
    assert engine.report.completed == 6
    assert +engine.slots.held_back == Counter()


@pytest.mark.looptime
async def test_with_nothing_else_due_a_held_back_installation_ends_the_claims() -> None:
    """ins_slow's second row is held back and nothing else is due: the claims end at once
    (that row is sent when its share frees, in the batch it came in), no read more."""
    s = await two_installations(2, 1)
    engine = s.engine(ms=1_000_000)
    await s.run(engine)
    assert (engine.claims, engine.report.completed) == (2, 3)
    assert s.dee.order == ["f1", "s1", "s2"]

"""The engine's schedule sends for a release's items, on known inputs (the unit store: an
in-memory D1, a Dee Wan whose answers the test chooses, a clock it moves): a row known stale is
held at claim and sent nothing; a release's next item is claimed in the same run once the one
before it settled; the release's notices come with the settle that ends the line.

The mutation map points `runner/sends.py` here too."""

from __future__ import annotations

import asyncio
import json

from scheduling.domain.times import rfc3339
from scheduling.ports import OutboundRequest
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.unit_store import DUE, LATENESS, refused, store, unavailable


async def a_line(db: SqliteDatabase, *ids: str, release: str = "rel_1") -> None:
    """The rows `sch_<id>` (written due) made a waiting release's items, in that order."""
    await (
        db.prepare(
            "INSERT INTO releases (id, installation_id, name, due_at, timezone, local_time, status,"
            " created_by, created_by_name, created_at, updated_at)"
            " VALUES (?, 'ins_1', 'Spring', ?, 'UTC', '2026-07-01T10:05', 'waiting', 'u', 'Ada',"
            " 0, 0)"
        )
        .bind(release, DUE)
        .run()
    )
    for n, sid in enumerate(ids, start=1):
        first = n == 1
        await (
            db.prepare(
                "UPDATE schedules SET release_id = ?, release_position = ?, status = ?,"
                " next_attempt_at = ? WHERE id = ?"
            )
            .bind(
                release, n, "pending" if first else "queued", DUE if first else None, f"sch_{sid}"
            )
            .run()
        )


def line(**data: object) -> dict[str, object]:
    """A notice's data for `a_line`'s release, with what ended it."""
    return {
        "installation_id": "ins_1",
        "release_id": "rel_1",
        "name": "Spring",
        "due_at": rfc3339(DUE),
        "timezone": "UTC",
        **data,
        "page_url": "https://scheduling.example/installations/ins_1",
    }


async def test_a_row_known_stale_is_held_at_claim_and_nothing_is_sent() -> None:
    s = await store()
    await s.rows("stale", "checked", "fine")
    await s.db.prepare("UPDATE schedules SET made_stale_by = 'sch_x' WHERE id = 'sch_stale'").run()
    await s.db.prepare(
        "UPDATE schedules SET conflict = 'version_moved' WHERE id = 'sch_checked'"
    ).run()
    engine = s.engine()
    await s.run(engine)
    found = [(await s.row(c))["status"] for c in ("stale", "checked", "fine")]
    assert found == ["held", "held", "completed"]
    codes = [(await s.row(c))["result_code"] for c in ("stale", "checked")]
    assert codes == ["held_stale", "held_conflict"]
    assert s.dee.order == ["fine"]  # only the fine one was sent
    assert engine.report.batches == 1  # the holds and the claim in one round
    assert (engine.report.refused_unsent, engine.report.claimed) == (2, 1)
    assert engine.report.refusals() == {"held_stale": 1, "held_conflict": 1}


async def test_a_releases_items_go_one_after_another_in_one_run() -> None:
    s = await store()
    await s.rows("a", "b", "c")
    await a_line(s.db, "a", "b", "c")
    s.dee.step = 200

    async def answering(request: object) -> None:  # the engine goes on while Dee Wan thinks
        for _ in range(10):
            await asyncio.sleep(0)

    s.dee.during = answering
    engine = s.engine()
    work = await s.run(engine)
    assert s.dee.order == ["a", "b", "c"]
    assert [(await s.row(c))["status"] for c in "abc"] == ["completed"] * 3
    assert not work.follows()  # nothing in flight any more
    assert (engine.report.batches, engine.report.claimed) == (3, 3)
    # Each item: its read (the next ones in the settle of the one before), its claim (which
    # opens its attempt), its settle and its attempt's finish: two round trips an item. While
    # one is in flight and the source had nothing else, nothing is read for nothing (a last
    # read finds the line ended); the last send is noted once, by the caller.
    assert (engine.trips.statements, engine.trips.round_trips) == (13, 8)
    assert work.latest == {"ins_1": DUE + 400}
    # Each left when the one before had answered: 200 ms apart.
    starts = await s.db.prepare(
        "SELECT started_at FROM schedule_attempts ORDER BY started_at"
    ).all()
    assert [r["started_at"] - DUE for r in starts.results] == [0, 200, 400]


async def test_an_item_not_done_holds_the_rest_and_says_so_once() -> None:
    s = await store()
    await s.subscribe("release.held", "release.completed")
    await s.rows("a", "b", "c")
    await a_line(s.db, "a", "b", "c")
    s.dee.answers["b"] = refused()
    engine = s.engine()
    await s.run(engine)
    assert s.dee.order[:2] == ["a", "b"]
    assert "c" not in s.dee.order
    assert [(await s.row(c))["status"] for c in "abc"] == ["completed", "refused", "held"]
    [held] = [e for e in await s.events() if e["type"] == "release.held"]
    assert held["data"] == line(
        status="held",
        schedule_id="sch_b",
        result_code="workflow_conflict",
        applied=["sch_a"],
        held=["sch_c"],
        message="Held at Thu 28 May 2026, 20:26 UTC: item sch_b was not done (Dee Wan's workflow"
        " does not allow this change from the content's current state (for example while it is"
        " in review), so it was not applied. Check the content in Dee Wan, then try again)."
        " The item applied before it stays applied: Scheduling cannot undo it. 1 item after it"
        " was not sent. Resume the rest, or cancel it, on the release's page.",
    )


async def test_the_last_item_applied_completes_the_release_and_says_so() -> None:
    s = await store()
    await s.subscribe("release.completed", "release.held")
    await s.rows("a", "b")
    await a_line(s.db, "a", "b")
    engine = s.engine()
    await s.run(engine)
    events = [e for e in await s.events() if e["type"].startswith("release.")]
    assert [e["type"] for e in events] == ["release.completed"]
    assert events[0]["data"] == line(
        status="completed",
        schedule_id="sch_b",
        result_code=None,
        applied=["sch_a", "sch_b"],
        held=[],
        message="Completed at Thu 28 May 2026, 20:26 UTC: every item of “Spring” was applied,"
        " in order.",
    )


async def test_an_item_too_late_when_its_slot_came_holds_the_rest() -> None:
    s = await store()
    await s.subscribe("release.held")
    await s.rows("a", "b")
    await a_line(s.db, "a", "b")
    s.clock.now = DUE + LATENESS + 1  # past the cap: nothing is sent
    engine = s.engine()
    await s.run(engine)
    assert s.dee.asked == []
    assert [(await s.row(c))["status"] for c in "ab"] == ["refused", "held"]
    [held] = [e for e in await s.events() if e["type"] == "release.held"]
    assert held["data"]["result_code"] == "retry_exhausted"


async def test_a_hold_at_claim_holds_the_rest_and_says_so() -> None:
    s = await store()
    await s.subscribe("release.held", "schedule.refused")
    await s.rows("a", "b")
    await a_line(s.db, "a", "b")
    await s.db.prepare("UPDATE schedules SET conflict = 'revision_moved' WHERE id = 'sch_a'").run()
    engine = s.engine()
    await s.run(engine)
    assert s.dee.asked == []
    assert [(await s.row(c))["result_code"] for c in "ab"] == ["held_conflict", "release_held"]
    types = [e["type"] for e in await s.events()]
    assert types == ["release.held"]  # a hold raises no schedule.refused of its own


async def test_a_retry_of_an_item_keeps_the_rest_waiting_behind_it() -> None:
    s = await store()
    await s.rows("a", "b")
    await a_line(s.db, "a", "b")
    s.dee.answers["a"] = unavailable()
    engine = s.engine()
    work = await s.run(engine)
    assert s.dee.order == ["a"]  # b never left: it waits for a
    assert [(await s.row(c))["status"] for c in "ab"] == ["retrying", "queued"]
    assert not work.follows()


async def yielding(request: object) -> None:
    """Dee Wan thinks: the engine goes on meanwhile."""
    for _ in range(10):
        await asyncio.sleep(0)


async def test_other_due_rows_are_not_held_up_by_a_release_head_in_flight() -> None:
    s = await store(MAX_ROWS_PER_BATCH="2")
    await s.rows("a", "x1", "b", "x2")
    await a_line(s.db, "a", "b")
    s.dee.during = yielding
    await s.run(s.engine())
    assert s.dee.order == ["a", "x1", "x2", "b"]  # x2 read at once, b once a had answered


async def test_as_many_heads_as_a_batch_leave_the_source_to_be_read_again() -> None:
    s = await store(MAX_ROWS_PER_BATCH="2")
    await s.rows("a1", "a2", "a3", "b1", "b2")
    await a_line(s.db, "a1", "b1", release="rel_1")
    await a_line(s.db, "a2", "b2", release="rel_2")
    await a_line(s.db, "a3", release="rel_3")
    s.dee.during = yielding
    await s.run(s.engine())
    assert s.dee.order == ["a1", "a2", "a3", "b1", "b2"]


async def test_a_head_beside_a_plain_row_reads_the_source_once_more() -> None:
    s = await store(MAX_ROWS_PER_BATCH="3")
    await s.rows("a", "x", "b")
    await a_line(s.db, "a", "b")
    s.dee.during = yielding
    engine = s.engine()
    await s.run(engine)
    assert s.dee.order == ["a", "x", "b"]
    # read a+x, claim; read again (a plain row came with a: there may be more), nothing, so
    # wait; settle a and x (+ their last send, + b read); claim b; settle b; read, nothing.
    assert engine.trips.statements == 11


async def test_two_releases_in_flight_at_once_both_go_on_to_the_end() -> None:
    s = await store(MAX_ROWS_PER_BATCH="1", SEND_CONCURRENCY="2")
    await s.rows("a1", "a2", "b1", "b2")
    await a_line(s.db, "a1", "b1", release="rel_1")
    await a_line(s.db, "a2", "b2", release="rel_2")
    s.dee.during = yielding
    await s.run(s.engine())
    assert sorted(s.dee.order) == ["a1", "a2", "b1", "b2"]  # all in one run
    assert s.dee.order.index("b1") > s.dee.order.index("a1")
    assert s.dee.order.index("b2") > s.dee.order.index("a2")


async def test_a_head_too_late_when_its_slot_came_holds_its_release_and_says_so() -> None:
    s = await store(SEND_CONCURRENCY="1", MAX_ROWS_PER_BATCH="3")
    await s.subscribe("release.held")
    await s.rows("x", "a", "b", due_at=DUE - LATENESS + 100)
    await a_line(s.db, "a", "b")
    s.dee.step = 500  # x's answer takes a's time past the cap while a waits for the slot
    engine = s.engine()
    await s.run(engine)
    assert s.dee.order == ["x"]
    assert engine.report.refused_unsent_late == 1
    assert [(await s.row(c))["status"] for c in "ab"] == ["refused", "held"]
    [held] = [e for e in await s.events() if e["type"] == "release.held"]
    data = held["data"]
    assert (data["schedule_id"], data["result_code"], data["held"]) == (
        "sch_a",
        "retry_exhausted",
        ["sch_b"],
    )
    assert held["timestamp"] == rfc3339(DUE + 500)  # when its slot came


async def test_a_next_item_waits_for_its_installations_share_of_the_slots_to_be_claimed() -> None:
    """While another installation sends, one holds at most its share of the slots: a release's
    next item, read by the settle of the item before it, is not claimed while its
    installation's sends wait for their share (its lease would run meanwhile); the due query
    claims it once none of them waits."""
    s = await store("ins_1", "ins_2", MAX_ROWS_PER_BATCH="2", SEND_CONCURRENCY="2")
    await s.rows("a", "b", "r1", "r2")
    await s.rows("q1", "q2", installation="ins_2")
    await a_line(s.db, "a", "b")
    gates = {c: asyncio.Event() for c in ("a", "b", "q1", "q2", "r1", "r2")}
    sent: dict[str, int] = {}
    claimed: dict[str, int] = {}  # when each was claimed: its lease as it left, less a lease
    lease_ms = s.services().config.lease_ms

    async def answering(request: OutboundRequest) -> None:
        content = json.loads(request.body or b"{}")["content_id"]
        sent[content] = s.clock.now
        claimed[content] = (await s.row(content))["lease_until"] - lease_ms
        await gates[content].wait()

    s.dee.during = answering
    running = asyncio.create_task(s.run(s.engine()))
    # a and q1 hold the two slots; q2 and r1 wait for their installation's share, then r2.
    for step, content in enumerate(("a", "q1", "r1", "q2", "r2", "b"), start=1):
        for _ in range(50):
            await asyncio.sleep(0)
        s.clock.now = DUE + step * 1_000
        gates[content].set()
    await running
    # b was read by the settle of a's batch (at 2 s, with r2 waiting for ins_1's share), and
    # claimed only once r2 had its slot (at 3 s).
    assert (sent["r2"], claimed["r2"]) == (DUE + 3_000, DUE + 1_000)
    assert sent["r2"] <= claimed["b"] <= sent["b"]
    assert [(await s.row(c))["status"] for c in ("a", "b", "r1", "r2")] == ["completed"] * 4

"""The store's contract, written once and run on both databases the plugin runs on.

`any_db` (tests/conftest.py) gives every test an empty, migrated database twice: `[sqlite]`
(the CPython runtime's `SqliteDatabase`) and `[d1]` (Miniflare's D1 through the Workers
adapter, marked `pyodide`). First the Database port itself, then each module of
`scheduling.repository`: what it writes reads back the same, its compare-and-sets win once,
its batches are all or nothing, and its queries answer the same for nothing, NULLs, the
largest stored integer and text beyond ASCII.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from scheduling.domain.claims import DueRow, SettledClaim
from scheduling.domain.deliveries import OutboxEvent
from scheduling.domain.outcomes import EndedBy
from scheduling.domain.retry_policy import Settlement, handed_back
from scheduling.domain.schedule import Attempt, NewSchedule
from scheduling.domain.statuses import Status
from scheduling.limits import MAX_STORED_INTEGER
from scheduling.ports import Database, DatabaseError, Statement
from scheduling.repository import (
    notification_endpoints,
    schedules,
)
from scheduling.repository.leases import Leases
from scheduling.repository.outbox import Outbox
from scheduling.repository.round_trips import RoundTrips
from tests.pyodide_harness.remote_d1 import RemoteD1Database

NOW = 1_780_000_000_000
MINUTE = 60_000
LEASE_MS = 60_000
ADA = "Ada Lovelace-Ünal 🗓"  # a name beyond ASCII, as Dee Wan may send one


def on_d1(db: Database) -> bool:
    return isinstance(db, RemoteD1Database)


async def rows(db: Database, sql: str, *params: Any) -> list[dict[str, Any]]:
    return (await db.prepare(sql).bind(*params).all()).results


async def one(db: Database, sql: str, *params: Any) -> dict[str, Any]:
    found = await db.prepare(sql).bind(*params).first()
    assert found is not None, sql
    return found


async def installation(db: Database, ins: str = "ins_1", **columns: Any) -> str:
    values = {
        "id": ins,
        "site_id": "site",
        "base_url": "https://cms.example",
        "token_sealed": "sealed",
        "created_at": 0,
        "token_rotated_at": 0,
        **columns,
    }
    names = ", ".join(values)
    await (
        db.prepare(f"INSERT INTO installations ({names}) VALUES ({', '.join('?' * len(values))})")
        .bind(*values.values())
        .run()
    )
    return ins


def schedule_row(
    db: Database,
    sid: str,
    ins: str = "ins_1",
    *,
    content: str | None = None,
    kind: str = "publish",
    status: str = "pending",
    ready_at: int = NOW,
    lease_until: int | None = None,
    attempts: int = 0,
    revision: int = 1,
    updated_at: int = 0,
    result_code: str | None = None,
) -> Statement:
    """A schedule written straight in: waiting ones ready at `ready_at`, running ones leased
    until `lease_until`, ended ones last changed at `updated_at`."""
    waiting, running = status in ("pending", "retrying"), status == "running"
    return db.prepare(
        "INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,"
        " workflow_revision, revision, idempotency_key, due_at, timezone, local_time, status,"
        " result_code, attempt_count, next_attempt_at, lease_token, lease_until, requested_by,"
        " requested_by_name, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, 'published', 'ver_1', 1, ?, ?, ?, 'UTC', '2026-06-01T09:00', ?,"
        " ?, ?, ?, ?, ?, 'usr', 'Ada', ?, ?)"
    ).bind(
        sid,
        ins,
        content or f"cnt_{sid}",
        kind,
        revision,
        f"key:{sid}",
        ready_at,
        status,
        result_code,
        attempts,
        ready_at if waiting else None,
        "old-lease" if running else None,
        lease_until if running else None,
        updated_at,
        updated_at,
    )


async def schedule(db: Database, sid: str, ins: str = "ins_1", **options: Any) -> str:
    await schedule_row(db, sid, ins, **options).run()
    return sid


async def endpoint(
    db: Database,
    eid: str = "whe_1",
    ins: str = "ins_1",
    *,
    kind: str = "webhook",
    events: tuple[str, ...] = ("schedule.refused", "schedule.completed"),
    now: int = NOW,
) -> str:
    made = await notification_endpoints.create(
        db,
        endpoint_id=eid,
        installation_id=ins,
        kind=kind,
        url=f"https://hooks.example/{eid}",
        events=events,
        secret_sealed=f"secret-{eid}",
        now=now,
    )
    assert made
    return eid


async def delivery(
    db: Database,
    did: str,
    eid: str = "whe_1",
    *,
    status: str = "waiting",
    at: int = NOW,
    created_at: int = NOW,
    schedule_id: str = "sch_x",
) -> str:
    """A delivery written straight in: waiting until `at`, or ended (delivered/failed) at it."""
    ended = status in ("delivered", "failed")
    await (
        db.prepare(
            "INSERT INTO webhook_deliveries (id, endpoint_id, installation_id, schedule_id,"
            " event_type, payload, created_at, status, attempt_count, next_attempt_at,"
            " finished_at) SELECT ?, id, installation_id, ?, 'schedule.refused', '{\"n\":\"é\"}',"
            " ?, ?, ?, ?, ? FROM notification_endpoints WHERE id = ?"
        )
        .bind(
            did,
            schedule_id,
            created_at,
            status,
            1 if ended else 0,
            None if ended else at,
            at if ended else None,
            eid,
        )
        .run()
    )
    return did


# -- the Database port: what the adapters promise over both databases ----------------------

# The largest |int| both keep exact: Pyodide hands a bigger one to JS as a BigInt (remote_d1).
LARGEST = MAX_STORED_INTEGER
TABLE = "port_check"


@pytest.fixture
async def table(any_db: Database) -> str:
    await any_db.prepare(
        f"CREATE TABLE IF NOT EXISTS {TABLE} (id INTEGER PRIMARY KEY, label TEXT NOT NULL UNIQUE,"
        " n INTEGER, note TEXT) STRICT"
    ).run()
    return TABLE


async def test_the_contract_d1_has_the_workers_schema(any_db: Database) -> None:
    """The D1 these tests migrate through the adapter holds what wrangler made of the
    Worker's own: the same tables, indexes and trigger, each the same SQL (wrangler drops
    the comments)."""
    schema = "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE '\\_%' ESCAPE '\\'"
    schema += " AND name NOT LIKE 'sqlite_%' AND name NOT IN ('d1_migrations', ?) ORDER BY name"

    async def read(db: Database) -> list[tuple[str, str, str]]:
        found = await rows(db, schema, TABLE)
        return [
            (r["type"], r["name"], " ".join(re.sub(r"--.*", "", r["sql"]).split())) for r in found
        ]

    ours = await read(any_db)
    assert {"schedules", "schedule_attempts", "schedules_made_stale"} <= {r[1] for r in ours}
    if isinstance(any_db, RemoteD1Database):
        assert ours == await read(RemoteD1Database(any_db.control_url))


async def test_insert_returning_gives_the_row_none_as_null_and_meta(
    any_db: Database, table: str
) -> None:
    result = (
        await any_db.prepare(
            f"INSERT INTO {table} (label, n, note) VALUES (?, ?, ?) RETURNING id, label, n, note,"
            " typeof(note) AS note_type"
        )
        .bind("a", 7, None)
        .run()
    )
    [row] = result.results
    assert row == {"id": row["id"], "label": "a", "n": 7, "note": None, "note_type": "null"}
    assert (result.meta.changes, result.meta.last_row_id) == (1, row["id"])
    assert await any_db.prepare(f"SELECT id FROM {table} WHERE label = ?").bind("b").first() is None


@pytest.mark.parametrize("value", [0, -1, 2**31, NOW, LARGEST, -LARGEST])
async def test_ints_up_to_the_largest_stored_stay_exact_ints(
    any_db: Database, table: str, value: int
) -> None:
    await any_db.prepare(f"INSERT INTO {table} (label, n) VALUES ('x', ?)").bind(value).run()
    row = await one(any_db, f"SELECT n, typeof(n) AS type FROM {table}")
    assert row == {"n": value, "type": "integer"}
    assert type(row["n"]) is int


async def test_an_int_past_the_largest_stored_is_refused_by_d1_at_bind(
    any_db: Database, table: str
) -> None:
    statement = any_db.prepare(f"INSERT INTO {table} (label, n) VALUES ('x', ?)")
    if not on_d1(any_db):
        await statement.bind(LARGEST + 1).run()  # SQLite takes any int64
        return
    # The Workers adapter maps D1's refusal at bind() to the port's DatabaseError.
    with pytest.raises(DatabaseError, match="D1_TYPE_ERROR") as raised:
        await statement.bind(LARGEST + 1).run()
    assert not raised.value.constraint


async def test_update_from_values_returning_reports_the_rows_it_changed(
    any_db: Database, table: str
) -> None:
    insert = f"INSERT INTO {table} (label, n) VALUES (?, 0)"
    await any_db.batch([any_db.prepare(insert).bind(label) for label in ("a", "b", "c")])
    result = (
        await any_db.prepare(
            f"UPDATE {table} SET n = v.column2 FROM (VALUES (?, ?), (?, ?)) AS v"
            f" WHERE {table}.label = v.column1 RETURNING {table}.label, {table}.n"
        )
        .bind("a", 10, "c", 30)
        .run()
    )
    assert sorted(result.results, key=lambda row: row["label"]) == [
        {"label": "a", "n": 10},
        {"label": "c", "n": 30},
    ]
    assert result.meta.changes == 2


async def test_batch_items_carry_their_own_returning_rows_and_changes(
    any_db: Database, table: str
) -> None:
    insert = f"INSERT INTO {table} (label) VALUES (?) RETURNING label"
    first, second, update = await any_db.batch(
        [
            any_db.prepare(insert).bind("a"),
            any_db.prepare(insert).bind("b"),
            any_db.prepare(f"UPDATE {table} SET n = 1 RETURNING label").bind(),
        ]
    )
    assert (first.results, first.meta.changes) == ([{"label": "a"}], 1)
    assert (second.results, second.meta.changes) == ([{"label": "b"}], 1)
    assert (sorted(row["label"] for row in update.results), update.meta.changes) == (["a", "b"], 2)


async def test_a_constraint_error_rolls_the_whole_batch_back_and_says_where(
    any_db: Database, table: str
) -> None:
    await any_db.prepare(f"INSERT INTO {table} (label, n) VALUES ('a', 1)").run()
    first = f"INSERT INTO {table} (label, n) VALUES ('b', 2)"
    failing = f"INSERT INTO {table} (label, n) VALUES ('a', 3)"  # UNIQUE
    with pytest.raises(DatabaseError) as raised:
        await any_db.batch(
            [
                any_db.prepare(first),
                any_db.prepare(f"UPDATE {table} SET n = 100"),
                any_db.prepare(failing),
            ]
        )
    assert raised.value.constraint is True
    assert "UNIQUE" in str(raised.value)
    if on_d1(any_db):
        # D1 answers SQLite's message alone, without the failing statement's index.
        assert f"in a batch of 3 statements, starting: {first}" in str(raised.value)
    else:
        assert f"in: {failing}" in str(raised.value)
    assert await rows(any_db, f"SELECT label, n FROM {table}") == [{"label": "a", "n": 1}]
    with pytest.raises(DatabaseError) as alone:
        await any_db.batch([any_db.prepare(failing)])
    assert f"in: {failing}" in str(alone.value)


async def test_a_syntax_error_is_a_database_error_but_no_constraint(any_db: Database) -> None:
    with pytest.raises(DatabaseError) as raised:
        await any_db.prepare("SELEC 1").all()
    assert raised.value.constraint is False


# -- the schema's own rules ----------------------------------------------------------------


async def test_foreign_keys_are_enforced(any_db: Database) -> None:
    with pytest.raises(DatabaseError) as raised:
        await any_db.prepare(
            "INSERT INTO sessions (id_hash, installation_id, csrf_token, person_id, person_name,"
            " context_kind, delegation_sealed, delegation_expires_at, created_at, expires_at)"
            " VALUES ('h', 'ins_missing', 'c', 'p', 'n', 'manage', 's', 0, 0, 0)"
        ).run()
    assert raised.value.constraint


async def test_one_live_schedule_per_content_and_kind_and_only_a_cancelled_one_names_who(
    any_db: Database,
) -> None:
    await installation(any_db)
    await schedule(any_db, "s1", content="cnt_1")
    for n, status in enumerate(("pending", "retrying", "running")):
        with pytest.raises(DatabaseError) as raised:
            await schedule(any_db, f"s-{status}", content="cnt_1", status=status, revision=2 + n)
        assert raised.value.constraint
    await schedule(any_db, "s2", content="cnt_1", status="completed", revision=5)
    await schedule(any_db, "s3", content="cnt_1", kind="unpublish")
    naming = "UPDATE schedules SET cancelled_by = 'usr_1', cancelled_by_name = 'Ada',"
    with pytest.raises(DatabaseError) as raised:
        await any_db.prepare(f"{naming} cancelled_at = 5 WHERE id = 's1'").run()
    assert raised.value.constraint
    await any_db.prepare(
        f"{naming} cancelled_at = 5, status = 'cancelled', next_attempt_at = NULL WHERE id = 's1'"
    ).run()


# -- schedules: create, supersede, read back, cancel, dismiss, list -------------------------


def new_schedule(sid: str, **changes: Any) -> NewSchedule:
    made = NewSchedule(
        id=sid,
        installation_id="ins_1",
        content_id="cnt_1",
        kind="publish",
        to_state="published",
        version_id="ver_13",
        workflow_revision=4,
        due_at=MAX_STORED_INTEGER,
        timezone="Europe/Paris",
        local_time="2026-10-25T02:30",
        fold="later",
        requested_by="usr_1",
        requested_by_name=ADA,
        title_sealed=None,
    )
    return replace(made, **changes)


async def test_a_created_schedule_reads_back_as_written_and_the_next_supersedes_it(
    any_db: Database,
) -> None:
    await installation(any_db)
    assert await schedules.create(any_db, new_schedule("sch_1"), NOW) == 0
    made = await schedules.get(any_db, "ins_1", "sch_1")
    assert made is not None
    assert (made.status, made.revision, made.idempotency_key) == (
        Status.PENDING,
        1,
        "sched:ins_1:sch_1:r1",
    )
    assert (made.due_at, made.next_attempt_at, made.fold, made.requested_by_name) == (
        MAX_STORED_INTEGER,
        MAX_STORED_INTEGER,
        "later",
        ADA,
    )
    assert (made.result_code, made.cancelled_at, made.resolved_by, made.attempts) == (
        None,
        None,
        None,
        (),
    )
    assert await schedules.get(any_db, "ins_other", "sch_1") is None
    assert await schedules.replaced_by(any_db, made) is None
    later = new_schedule("sch_2", fold=None, title_sealed="sealed-title")
    assert await schedules.create(any_db, later, NOW + 1) == 1
    second = await schedules.get(any_db, "ins_1", "sch_2")
    assert second is not None
    assert (second.revision, second.fold) == (2, None)
    replaced = await schedules.replaced_by(any_db, second)
    assert replaced is not None
    assert (replaced.id, replaced.status, replaced.updated_at) == ("sch_1", "superseded", NOW + 1)
    # The revision counter outlives the rows (retention), and starts after those kept.
    await any_db.prepare("DELETE FROM schedules").run()
    await schedules.create(any_db, new_schedule("sch_3"), NOW + 2)
    third = await schedules.get(any_db, "ins_1", "sch_3")
    assert third is not None
    assert third.revision == 3


async def test_a_create_while_one_runs_is_a_running_conflict_and_changes_nothing(
    any_db: Database,
) -> None:
    await installation(any_db)
    await schedule(any_db, "sch_run", content="cnt_1", status="running", lease_until=NOW)
    assert await schedules.running_exists(any_db, "ins_1", "cnt_1", "publish")
    assert not await schedules.running_exists(any_db, "ins_1", "cnt_1", "unpublish")
    with pytest.raises(schedules.RunningConflict):
        await schedules.create(any_db, new_schedule("sch_new"), NOW)
    assert await rows(any_db, "SELECT id FROM schedules") == [{"id": "sch_run"}]
    assert await rows(any_db, "SELECT * FROM schedule_revisions") == []


async def test_cancel_and_dismiss_are_compare_and_sets_on_the_status(any_db: Database) -> None:
    await installation(any_db)
    await schedule(any_db, "waits")
    await schedule(any_db, "refused", status="refused", result_code="workflow_conflict")
    person = {"person_id": "usr_2", "person_name": ADA}
    assert not await schedules.cancel(any_db, "ins_other", "waits", NOW, **person)
    assert await schedules.cancel(any_db, "ins_1", "waits", NOW, **person)
    assert not await schedules.cancel(any_db, "ins_1", "waits", NOW + 1, **person)
    assert not await schedules.cancel(any_db, "ins_1", "refused", NOW, **person)
    cancelled = await schedules.get(any_db, "ins_1", "waits")
    assert cancelled is not None
    assert (cancelled.status, cancelled.cancelled_by_name, cancelled.cancelled_at) == (
        "cancelled",
        ADA,
        NOW,
    )
    assert cancelled.next_attempt_at is None
    assert not await schedules.dismiss(any_db, "ins_1", "waits", NOW, **person)
    assert await schedules.dismiss(any_db, "ins_1", "refused", NOW, **person)
    assert not await schedules.dismiss(any_db, "ins_1", "refused", NOW + 1, **person)
    dismissed = await schedules.get(any_db, "ins_1", "refused")
    assert dismissed is not None
    assert (dismissed.status, dismissed.dismissed_by_name, dismissed.dismissed_at) == (
        "refused",
        ADA,
        NOW,
    )


async def test_a_contents_listing_leads_with_the_live_and_latest_ended_then_pages(
    any_db: Database,
) -> None:
    await installation(any_db)
    ended = [
        schedule_row(
            any_db, f"old_{n:02}", content="cnt_1", status="completed", updated_at=n, revision=n + 1
        )
        for n in range(52)
    ]
    await any_db.batch(
        [*ended, schedule_row(any_db, "live", content="cnt_1", revision=99, updated_at=100)]
    )
    await any_db.prepare(
        "INSERT INTO schedule_attempts (schedule_id, attempt, started_at, finished_at, code,"
        " http_status) VALUES ('old_51', 1, 5, 6, 'transition_applied', 200)"
    ).run()
    first = await schedules.list_for(any_db, "ins_1", "cnt_1", 1)
    assert [s.id for s in first.schedules[:4]] == ["live", "old_51", "old_50", "old_49"]
    assert (len(first.schedules), first.has_next, first.total, first.in_view) == (50, True, 53, 4)
    assert first.counts == {"pending": 1, "completed": 52}
    assert [s.id for s in first.live] == ["live"]
    assert first.schedules[1].attempts == (Attempt(1, 5, 6, "transition_applied", 200),)
    second = await schedules.list_for(any_db, "ins_1", "cnt_1", 2)
    assert (len(second.schedules), second.has_next, [s.id for s in second.live]) == (
        3,
        False,
        ["live"],
    )
    empty = await schedules.list_for(any_db, "ins_1", "cnt_none", 1)
    assert (empty.schedules, empty.has_next, empty.counts, empty.live) == ((), False, {}, ())


# -- leases: due rows, claims, settles (the runner's compare-and-sets) ----------------------

LONG_AGO = 10_000_000


@pytest.fixture
async def leases(any_db: Database) -> Leases:
    for n in range(3):
        await installation(any_db, f"ins{n}")
    return Leases(RoundTrips(any_db), Outbox(RoundTrips(any_db)))


async def leased(db: Database, installation_n: int, n: int, **options: Any) -> str:
    options.setdefault("ready_at", LONG_AGO)
    return await schedule(db, f"s{installation_n}_{n}", f"ins{installation_n}", **options)


async def attempts_of(db: Database, sid: str) -> list[dict[str, Any]]:
    return await rows(
        db,
        "SELECT attempt, started_at, finished_at, code, http_status FROM schedule_attempts"
        " WHERE schedule_id = ? ORDER BY attempt",
        sid,
    )


def ids(due: list[DueRow]) -> list[str]:
    return [row.id for row in due]


async def test_due_is_waiting_whose_time_came_and_running_whose_lease_expired(
    any_db: Database, leases: Leases
) -> None:
    assert (await leases.due(LONG_AGO, 20), leases.outbox.next_at) == ([], None)
    ready = await leased(any_db, 0, 1)
    await leased(any_db, 0, 2, ready_at=LONG_AGO + 1)
    crashed = await leased(
        any_db, 0, 3, status="running", lease_until=LONG_AGO - 1, attempts=1, content="c3"
    )
    await leased(any_db, 0, 4, status="running", lease_until=LONG_AGO + 1, attempts=1)
    assert set(ids(await leases.due(LONG_AGO, 20))) == {ready, crashed}
    assert ids(await leases.due_for("ins0", LONG_AGO, 20)) == ids(await leases.due(LONG_AGO, 20))
    assert await leases.due_for("ins1", LONG_AGO, 20) == []


async def test_due_takes_installations_round_robin_oldest_first_within_each(
    any_db: Database, leases: Leases
) -> None:
    busy = [await leased(any_db, 0, n, ready_at=LONG_AGO - 100 + n) for n in range(5)]
    quiet = await leased(any_db, 1, 0)
    third = [await leased(any_db, 2, n, ready_at=LONG_AGO - 50 + n) for n in range(2)]
    # Every installation's first row, then every second one, each turn by readiness.
    assert ids(await leases.due(LONG_AGO, 5)) == [busy[0], third[0], quiet, busy[1], third[1]]


async def test_a_claim_wins_once_sets_the_lease_and_opens_the_attempt(
    any_db: Database, leases: Leases
) -> None:
    sid = await leased(any_db, 0, 1)
    seen = await leases.due(LONG_AGO, 20)
    won, refused = await leases.claim(seen, [], "lease-a", LONG_AGO, LEASE_MS)
    assert ([c.row.id for c in won], [c.attempt for c in won], refused) == ([sid], [1], [])
    again, _ = await leases.claim(seen, [], "lease-b", LONG_AGO, LEASE_MS)  # same observation
    assert again == []
    row = await one(any_db, "SELECT * FROM schedules WHERE id = ?", sid)
    assert (row["status"], row["lease_token"], row["lease_until"], row["attempt_count"]) == (
        "running",
        "lease-a",
        LONG_AGO + LEASE_MS,
        1,
    )
    assert row["next_attempt_at"] is None
    assert await attempts_of(any_db, sid) == [
        {"attempt": 1, "started_at": LONG_AGO, "finished_at": None, "code": None}
        | {"http_status": None}
    ]


async def test_a_crashed_claim_is_reclaimed_on_its_expired_lease(
    any_db: Database, leases: Leases
) -> None:
    sid = await leased(any_db, 0, 1, status="running", lease_until=LONG_AGO - 1, attempts=1)
    await (
        any_db.prepare(
            "INSERT INTO schedule_attempts (schedule_id, attempt, started_at) VALUES (?, 1, 0)"
        )
        .bind(sid)
        .run()
    )
    won, _ = await leases.claim(await leases.due(LONG_AGO, 20), [], "new", LONG_AGO, LEASE_MS)
    assert [c.attempt for c in won] == [2]
    assert [a["attempt"] for a in await attempts_of(any_db, sid)] == [1, 2]


async def test_refusing_unsent_ends_the_row_on_what_was_observed_and_writes_its_events(
    any_db: Database, leases: Leases
) -> None:
    await endpoint(any_db, "whe_1", "ins0")
    first, changed = await leased(any_db, 0, 1), await leased(any_db, 0, 2)
    seen = {row.id: row for row in await leases.due(LONG_AGO, 20)}
    await any_db.prepare("UPDATE schedules SET attempt_count = 3 WHERE id = ?").bind(changed).run()
    events = [OutboxEvent(f"msg_{s}", s, "schedule.refused", b'{"a":"\xc3\xa9"}') for s in seen]
    won, refused = await leases.claim(
        [],
        [(seen[first], "token_unreadable", None), (seen[changed], "token_unreadable", None)],
        "lease",
        LONG_AGO,
        LEASE_MS,
        events,
    )
    assert (won, refused) == ([], [first])
    row = await one(any_db, "SELECT status, result_code FROM schedules WHERE id = ?", first)
    assert row == {"status": "refused", "result_code": "token_unreadable"}
    assert (await one(any_db, "SELECT status FROM schedules WHERE id = ?", changed)) == {
        "status": "pending"
    }  # someone else's change wins
    assert await attempts_of(any_db, first) == []
    # Only the refusal that applied wrote its event.
    assert await rows(any_db, "SELECT id, payload, status FROM webhook_deliveries") == [
        {"id": f"msg_{first}_whe_1", "payload": '{"a":"é"}', "status": "waiting"}
    ]
    assert (leases.outbox.events_written, leases.outbox.take_fresh()) == (1, [f"msg_{first}_whe_1"])


def done(claim: Any, code: str = "transition_applied", at: int = LONG_AGO) -> SettledClaim:
    return SettledClaim(
        claim,
        Settlement(Status.COMPLETED, code, None),
        Attempt(claim.attempt, at + 5, at + 9, code, 200),
        event=OutboxEvent(f"msg_{claim.row.id}", claim.row.id, "schedule.completed", b"{}"),
    )


async def test_a_settle_applies_only_under_its_own_lease_with_its_events_and_last_send(
    any_db: Database, leases: Leases
) -> None:
    await endpoint(any_db, "whe_1", "ins0")
    kept, taken = await leased(any_db, 0, 1), await leased(any_db, 0, 2)
    won, _ = await leases.claim(await leases.due(LONG_AGO, 20), [], "a", LONG_AGO, LEASE_MS)
    await any_db.prepare("UPDATE schedules SET lease_token = 'z' WHERE id = ?").bind(taken).run()
    assert await leases.settle("a", [done(c) for c in won], LONG_AGO + 10) == [taken]
    row = await one(any_db, "SELECT * FROM schedules WHERE id = ?", kept)
    assert (row["status"], row["lease_token"], row["lease_until"]) == ("completed", None, None)
    assert (await one(any_db, "SELECT lease_token FROM schedules WHERE id = ?", taken)) == {
        "lease_token": "z"
    }  # the new runner's row, untouched
    assert await attempts_of(any_db, kept) == [
        {"attempt": 1, "started_at": LONG_AGO + 5, "finished_at": LONG_AGO + 9}
        | {"code": "transition_applied", "http_status": 200}
    ]
    assert await rows(any_db, "SELECT id FROM webhook_deliveries") == [{"id": f"msg_{kept}_whe_1"}]
    sent = await one(any_db, "SELECT last_sent_at FROM installations WHERE id = 'ins0'")
    assert sent == {"last_sent_at": LONG_AGO + 5}
    await leases.note_last_sent({"ins0": LONG_AGO, "ins1": MAX_STORED_INTEGER})  # only later
    assert await rows(any_db, "SELECT id, last_sent_at FROM installations ORDER BY id") == [
        {"id": "ins0", "last_sent_at": LONG_AGO + 5},
        {"id": "ins1", "last_sent_at": MAX_STORED_INTEGER},
        {"id": "ins2", "last_sent_at": None},
    ]


async def test_an_unsent_settle_drops_the_attempt_and_gives_it_back(
    any_db: Database, leases: Leases
) -> None:
    sid = await leased(any_db, 0, 1)
    [claim], _ = await leases.claim(await leases.due(LONG_AGO, 20), [], "l", LONG_AGO, LEASE_MS)
    refusal = Settlement(Status.REFUSED, "retry_exhausted", None, EndedBy.ATTEMPTS)
    await leases.settle("l", [SettledClaim(claim, refusal, None)], LONG_AGO + 1)
    row = await one(any_db, "SELECT * FROM schedules WHERE id = ?", sid)
    assert (row["status"], row["result_code"], row["attempt_count"], row["ended_by"]) == (
        "refused",
        "retry_exhausted",
        0,
        "attempts",
    )
    assert await attempts_of(any_db, sid) == []


async def test_fifty_rows_claim_and_settle_in_one_round_trip_each_under_the_parameter_limit(
    any_db: Database, leases: Leases
) -> None:
    made = [schedule_row(any_db, f"s{n}", f"ins{n % 3}", ready_at=LONG_AGO) for n in range(50)]
    await any_db.batch(made)
    seen = await leases.due(LONG_AGO, 50)
    trips = leases.trips
    before = (trips.round_trips, trips.statements)
    won, _ = await leases.claim(seen, [], "lease", LONG_AGO, LEASE_MS)
    assert len(won) == 50
    retry = Settlement(Status.RETRYING, "timeout", LONG_AGO + 30_000)
    settles = [
        SettledClaim(c, retry, Attempt(c.attempt, LONG_AGO, LONG_AGO + 1, "timeout", None))
        for c in won
    ]
    assert await leases.settle("lease", settles, LONG_AGO + 2) == []
    assert await leases.due(LONG_AGO + 2, 50) == []  # retries wait for their backoff
    assert trips.round_trips - before[0] == 3
    assert trips.statements - before[1] > 4  # chunked: D1 refuses over 100 parameters
    retrying = await one(
        any_db,
        "SELECT count(*) AS n FROM schedules WHERE status = 'retrying' AND next_attempt_at = ?",
        LONG_AGO + 30_000,
    )
    assert retrying == {"n": 50}


async def test_a_capped_claim_never_takes_an_installation_past_its_cap(
    any_db: Database, leases: Leases
) -> None:
    for n in range(2):  # two live claims of installation 0 already, by another runner
        await leased(any_db, 0, 100 + n, status="running", lease_until=LONG_AGO + LEASE_MS)
    await leased(any_db, 0, 200, status="running", lease_until=LONG_AGO)  # expired: not live
    mine = [await leased(any_db, 0, n) for n in range(10)]
    other = await leased(any_db, 1, 1)
    seen = await leases.due(LONG_AGO, 20)
    assert len(seen) == 12  # the expired lease is due again
    won, _, held = await leases.claim_within(seen, [], "a", LONG_AGO, LEASE_MS, 4)
    # Room for two of installation 0 (four minus the two live), and the other's one.
    assert sorted(c.row.installation_id for c in won) == ["ins0", "ins0", "ins1"]
    assert (len(held), other in held) == (9, False)
    rest = [row for row in seen if row.id in held]
    again, _, held_again = await leases.claim_within(rest, [], "b", LONG_AGO, LEASE_MS, 4)
    assert (again, sorted(held_again)) == ([], sorted(held))
    live = await one(
        any_db,
        "SELECT count(*) AS n FROM schedules WHERE installation_id = 'ins0'"
        " AND status = 'running' AND lease_until > ?",
        LONG_AGO,
    )
    assert live == {"n": 4}
    # Settling frees the room: the held rows are claimed next.
    completed = Settlement(Status.COMPLETED, "transition_applied", None)
    await leases.settle("a", [SettledClaim(c, completed, None) for c in won], LONG_AGO)
    freed, _, _ = await leases.claim_within(rest, [], "c", LONG_AGO, LEASE_MS, 4)
    assert len(freed) == 2
    assert all(c.row.id in mine or c.row.id.endswith("_200") for c in freed)


async def test_the_cap_holds_across_the_statements_of_one_claim(
    any_db: Database, leases: Leases
) -> None:
    """Thirty candidates of one installation take two claim statements (D1's 100 bound
    parameters): the second counts what the first claimed."""
    await any_db.batch(
        [schedule_row(any_db, f"s{n}", "ins0", ready_at=LONG_AGO) for n in range(30)]
    )
    seen = await leases.due(LONG_AGO, 30)
    statements = leases.trips.statements
    won, _, held = await leases.claim_within(seen, [], "lease", LONG_AGO, LEASE_MS, 25)
    assert leases.trips.statements - statements == 4  # live claims, two claims, attempts
    assert (len(won), len(held)) == (25, 5)


async def test_a_handed_back_claim_waits_again_as_it_was(any_db: Database, leases: Leases) -> None:
    pending = await leased(any_db, 0, 1)
    retrying = await leased(any_db, 0, 2, status="retrying", attempts=1, result_code="busy")
    won, _ = await leases.claim(await leases.due(LONG_AGO, 20), [], "l", LONG_AGO, LEASE_MS)
    settles = [SettledClaim(c, handed_back(c.row.status, LONG_AGO + 5), None) for c in won]
    assert all(s.handed_back for s in settles)
    await leases.settle("l", settles, LONG_AGO + 5)
    assert await rows(
        any_db,
        "SELECT status, result_code, attempt_count, next_attempt_at FROM schedules ORDER BY id",
    ) == [
        {"status": "pending", "result_code": None, "attempt_count": 0}
        | {"next_attempt_at": LONG_AGO + 5},
        {"status": "retrying", "result_code": "busy", "attempt_count": 1}
        | {"next_attempt_at": LONG_AGO + 5},
    ]
    assert await attempts_of(any_db, pending) == await attempts_of(any_db, retrying) == []

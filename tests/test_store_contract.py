"""The store's contract, run on `any_db`'s two databases: `[sqlite]` (CPython's SqliteDatabase)
and `[d1]` (Miniflare's D1 through the Workers adapter, marked `pyodide`). The Database port,
then each module of `scheduling.repository`: writes read back the same, compare-and-sets win
once, batches are all or nothing, for nothing, NULLs, the largest integer and text beyond ASCII.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import pytest

from scheduling.domain.notifications import DISABLE_AFTER_FAILING_MS, ENDPOINT_GONE, MAX_ENDPOINTS
from scheduling.domain.notifications import DeliveryStatus as D
from scheduling.domain.outcomes import Attempt, EndedBy, Settlement, Status, handed_back
from scheduling.domain.records import (
    DueRow,
    Message,
    OutboxEvent,
    Pacing,
    SettledClaim,
    SettledMessage,
)
from scheduling.domain.schedules import NewSchedule, Release, ReleaseStatus
from scheduling.limits import MAX_STORED_INTEGER, WINDOW_MS, CallLimit
from scheduling.ports import Database, DatabaseError, Statement
from scheduling.repository import agents as agents_module
from scheduling.repository import (
    history,
    installations,
    notification_endpoints,
    people,
    releases,
    schedules,
)
from scheduling.repository.history import BACKLOG_SQL, COUNTS_SQL, LIVE_COUNTS_SQL
from scheduling.repository.leases import (
    BUSY_SQL,
    CLAIM_SQL,
    CLAIM_WITHIN_SQL,
    DROP_ATTEMPTS_SQL,
    DUE_SQL,
    FINISH_ATTEMPTS_SQL,
    LAST_SENT_SQL,
    NEXT_DUE_SQL,
    REFUSE_UNSENT_SQL,
    SETTLE_SQL,
    WAKE_UPS_SQL,
    Leases,
    next_due,
    read_wake_ups,
    wake_ups_from,
)
from scheduling.repository.outbox import (
    CLAIM_DELIVERIES_SQL,
    CLAIM_NAMED_SQL,
    CLAIMED_ENDPOINTS_SQL,
    CLAIMED_TITLES_SQL,
    NEXT_MESSAGE_SQL,
    SETTLE_DIGESTS_SQL,
    Outbox,
    enable,
    replay_failures,
    send_again,
)
from scheduling.repository.round_trips import RoundTrips
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.pyodide_harness.remote_d1 import RemoteD1Database

T = TypeVar("T")
NOW = 1_780_000_000_000
MINUTE = 60_000
LEASE_MS = 60_000
DONE: dict[str, Any] = {"status": "completed"}
ADA = "Ada Lovelace-Ünal 🗓"  # a name beyond ASCII, as Dee Wan may send one


async def present(read: Awaitable[T | None]) -> T:
    """What a read found: it must find something."""
    value = await read
    assert value is not None
    return value


def pick(found: Any, names: str) -> tuple[Any, ...]:
    """The fields (or a row's columns) `names` lists, in that order."""
    if isinstance(found, dict):
        return tuple(found[name] for name in names.split())
    return tuple(getattr(found, name) for name in names.split())


def on_d1(db: Database) -> bool:
    return isinstance(db, RemoteD1Database)


async def rows(db: Database, sql: str, *params: Any) -> list[dict[str, Any]]:
    return (await db.prepare(sql).bind(*params).all()).results


async def values(db: Database, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """The rows' values, in the order the statement names them."""
    return [tuple(row.values()) for row in await rows(db, sql, *params)]


async def column(db: Database, sql: str, *params: Any) -> list[Any]:
    """The first column of every row."""
    return [row[0] for row in await values(db, sql, *params)]


async def one(db: Database, sql: str, *params: Any) -> dict[str, Any]:
    found = await db.prepare(sql).bind(*params).first()
    assert found is not None, sql
    return found


def insert(db: Database, table: str, **columns: Any) -> Statement:
    """One row written straight into `table`, its columns named."""
    marks = ", ".join("?" * len(columns))
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
    return db.prepare(sql).bind(*columns.values())


def attempt_row(db: Database, sid: str, n: int = 1, *at: Any) -> Statement:
    """Attempt `n` of `sid` written straight in: started at 0, or `at` is started, finished..."""
    at_ = dict(zip(("started_at", "finished_at", "code", "http_status"), at or (0,), strict=False))
    return insert(db, "schedule_attempts", schedule_id=sid, attempt=n, **at_)


async def installation(db: Database, ins: str = "ins_1", **columns: Any) -> str:
    made = {"site_id": "site", "base_url": "https://cms.example", "token_sealed": "sealed"}
    made |= {"created_at": 0, "token_rotated_at": 0} | columns
    await insert(db, "installations", id=ins, **made).run()
    return ins


def schedule_row(
    db: Database,
    sid: str,
    ins: str = "ins_1",
    *,
    status: str = "pending",
    ready_at: int = NOW,
    lease_until: int | None = None,
    attempts: int = 0,
    updated_at: int = 0,
    **columns: Any,
) -> Statement:
    """A schedule of `usr_1` written straight in: ready at `ready_at`, leased until
    `lease_until`, its other columns as given over these."""
    waiting, running = status in ("pending", "retrying"), status == "running"
    made: dict[str, Any] = {
        "installation_id": ins, "content_id": f"cnt_{sid}", "kind": "publish",
        "to_state": "published", "version_id": "ver_1", "workflow_revision": 1, "revision": 1,
        "idempotency_key": f"key:{sid}", "due_at": ready_at, "timezone": "UTC",
        "local_time": "2026-06-01T09:00", "status": status, "attempt_count": attempts,
        "next_attempt_at": ready_at if waiting else None,
        "lease_token": "old-lease" if running else None,
        "lease_until": lease_until if running else None, "requested_by": "usr_1",
        "requested_by_name": "Ada", "created_at": updated_at, "updated_at": updated_at,
    }  # fmt: skip
    return insert(db, "schedules", id=sid, **(made | columns))


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
        db, endpoint_id=eid, installation_id=ins, kind=kind, url=f"https://hooks.example/{eid}",
        events=events, secret_sealed=f"secret-{eid}", now=now,
    )  # fmt: skip
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
    waiting_or_ended = (1, None, at) if ended else (0, at, None)
    await (
        db.prepare(
            "INSERT INTO webhook_deliveries (id, endpoint_id, installation_id, schedule_id,"
            " event_type, payload, created_at, status, attempt_count, next_attempt_at,"
            " finished_at) SELECT ?, id, installation_id, ?, 'schedule.refused', '{\"n\":\"é\"}',"
            " ?, ?, ?, ?, ? FROM notification_endpoints WHERE id = ?"
        )
        .bind(did, schedule_id, created_at, status, *waiting_or_ended, eid)
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
    """The D1 migrated through the adapter holds wrangler's schema: the same SQL, sans comments."""
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
        workers = RemoteD1Database(any_db.control_url)
        assert ours == await read(workers)
        await workers.aclose()


async def test_insert_returning_gives_the_row_none_as_null_and_meta(
    any_db: Database, table: str
) -> None:
    sql = f"INSERT INTO {table} (label, n, note) VALUES (?, ?, ?) RETURNING id, label, n, note"
    result = await any_db.prepare(sql + ", typeof(note) AS note_type").bind("a", 7, None).run()
    [row] = result.results
    assert row == {"id": row["id"], "label": "a", "n": 7, "note": None, "note_type": "null"}
    assert (result.meta.changes, result.meta.last_row_id) == (1, row["id"])
    assert (await any_db.prepare(f"SELECT label FROM {table}").all()).meta.changes == 0
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
    sql = f"UPDATE {table} SET n = v.column2 FROM (VALUES (?, ?), (?, ?)) AS v"
    sql += f" WHERE {table}.label = v.column1 RETURNING {table}.label, {table}.n"
    result = await any_db.prepare(sql).bind("a", 10, "c", 30).run()
    changed = sorted(result.results, key=lambda row: row["label"])
    assert (changed, result.meta.changes) == ([{"label": "a", "n": 10}, {"label": "c", "n": 30}], 2)


async def test_batch_items_carry_their_own_returning_rows_and_changes(
    any_db: Database, table: str
) -> None:
    insert = f"INSERT INTO {table} (label) VALUES (?) RETURNING label"
    made = [any_db.prepare(insert).bind(x) for x in "ab"]
    made.append(any_db.prepare(f"UPDATE {table} SET n = 1 RETURNING label").bind())
    first, second, update = await any_db.batch(made)
    assert (first.results, first.meta.changes) == ([{"label": "a"}], 1)
    assert (second.results, second.meta.changes) == ([{"label": "b"}], 1)
    assert (sorted(row["label"] for row in update.results), update.meta.changes) == (["a", "b"], 2)


async def test_a_constraint_error_rolls_the_whole_batch_back_and_says_where(
    any_db: Database, table: str
) -> None:
    await any_db.prepare(f"INSERT INTO {table} (label, n) VALUES ('a', 1)").run()
    first = f"INSERT INTO {table} (label, n) VALUES ('b', 2)"
    failing = f"INSERT INTO {table} (label, n) VALUES ('a', 3)"  # UNIQUE
    three = [any_db.prepare(sql) for sql in (first, f"UPDATE {table} SET n = 100", failing)]
    with pytest.raises(DatabaseError) as raised:
        await any_db.batch(three)
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


async def test_a_batch_refuses_another_databases_statements_and_bad_sql_is_no_constraint(
    any_db: Database,
) -> None:
    """A statement of another kind of database (each adapter checks the kind) is refused."""
    other = SqliteDatabase(":memory:") if on_d1(any_db) else RemoteD1Database("http://unused")
    with pytest.raises(TypeError, match=r"batch\(\) takes statements prepared on this database"):
        await any_db.batch([any_db.prepare("SELECT 1"), other.prepare("SELECT 1")])
    with pytest.raises(DatabaseError) as raised:  # a syntax error: no constraint
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
    assert "INSERT INTO sessions" in str(raised.value)  # the log says which statement


async def test_an_endpoints_address_is_at_most_2_kib_counted_in_bytes(any_db: Database) -> None:
    await installation(any_db)
    made: dict[str, Any] = {"installation_id": "ins_1", "kind": "webhook", "now": NOW}
    made |= {"events": ["schedule.refused"], "secret_sealed": "s"}
    fits = "https://h.example/" + "é" * ((2048 - 18) // 2)  # 2,048 bytes, 1,033 characters
    assert await notification_endpoints.create(any_db, endpoint_id="whe_1", url=fits, **made)
    with pytest.raises(DatabaseError) as raised:
        await notification_endpoints.create(any_db, endpoint_id="whe_2", url=fits + "x", **made)
    assert raised.value.constraint
    assert [e.url for e in await notification_endpoints.list_for(any_db, "ins_1")] == [fits]


async def test_one_live_schedule_per_content_and_kind_and_only_a_cancelled_one_names_who(
    any_db: Database,
) -> None:
    await installation(any_db)
    await schedule(any_db, "s1", content_id="cnt_1")
    for n, status in enumerate(("pending", "retrying", "running")):
        with pytest.raises(DatabaseError) as raised:
            await schedule(any_db, f"s-{status}", content_id="cnt_1", status=status, revision=2 + n)
        assert raised.value.constraint
    await schedule(any_db, "s2", content_id="cnt_1", status="completed", revision=5)
    await schedule(any_db, "s3", content_id="cnt_1", kind="unpublish")
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
        id=sid, installation_id="ins_1", content_id="cnt_1", kind="publish", to_state="published",
        version_id="ver_13", workflow_revision=4, due_at=MAX_STORED_INTEGER,
        timezone="Europe/Paris", local_time="2026-10-25T02:30", fold="later",
        requested_by="usr_1", requested_by_name=ADA, title_sealed=None,
    )  # fmt: skip
    return replace(made, **changes)


async def test_a_created_schedule_reads_back_as_written_and_the_next_supersedes_it(
    any_db: Database,
) -> None:
    await installation(any_db)
    assert await schedules.create(any_db, new_schedule("sch_1"), NOW) == 0
    made = await present(schedules.get(any_db, "ins_1", "sch_1"))
    key, fields = "sched:ins_1:sch_1:r1", "status revision idempotency_key due_at next_attempt_at"
    written = (Status.PENDING, 1, key, MAX_STORED_INTEGER, MAX_STORED_INTEGER, "later", ADA)
    assert pick(made, f"{fields} fold requested_by_name") == written
    assert pick(made, "result_code cancelled_at resolved_by attempts") == (None, None, None, ())
    assert await schedules.get(any_db, "ins_other", "sch_1") is None
    assert await schedules.replaced_by(any_db, made) is None
    later = new_schedule("sch_2", fold=None, title_sealed="sealed-title")
    assert await schedules.create(any_db, later, NOW + 1) == 1
    second = await present(schedules.get(any_db, "ins_1", "sch_2"))
    assert (second.revision, second.fold) == (2, None)
    replaced = await present(schedules.replaced_by(any_db, second))
    assert (replaced.id, replaced.status, replaced.updated_at) == ("sch_1", "superseded", NOW + 1)
    # The revision counter outlives the rows (retention), and starts after those kept.
    await any_db.prepare("DELETE FROM schedules").run()
    await schedules.create(any_db, new_schedule("sch_3"), NOW + 2)
    assert (await present(schedules.get(any_db, "ins_1", "sch_3"))).revision == 3


async def test_a_create_while_one_runs_is_a_running_conflict_and_changes_nothing(
    any_db: Database,
) -> None:
    await installation(any_db)
    await schedule(any_db, "sch_run", content_id="cnt_1", status="running", lease_until=NOW)
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
    cancelled = await present(schedules.get(any_db, "ins_1", "waits"))
    assert pick(cancelled, "status cancelled_by_name cancelled_at") == ("cancelled", ADA, NOW)
    assert cancelled.next_attempt_at is None
    assert not await schedules.dismiss(any_db, "ins_1", "waits", NOW, **person)
    assert await schedules.dismiss(any_db, "ins_1", "refused", NOW, **person)
    assert not await schedules.dismiss(any_db, "ins_1", "refused", NOW + 1, **person)
    dismissed = await present(schedules.get(any_db, "ins_1", "refused"))
    assert pick(dismissed, "status dismissed_by_name dismissed_at") == ("refused", ADA, NOW)


async def test_a_contents_listing_leads_with_the_live_and_latest_ended_then_pages(
    any_db: Database,
) -> None:
    await installation(any_db)
    await any_db.batch([
        *(schedule_row(any_db, f"old_{n:02}", content_id="cnt_1", **DONE, updated_at=n,
                       revision=n + 1) for n in range(52)),
        schedule_row(any_db, "live", content_id="cnt_1", revision=99, updated_at=100),
    ])  # fmt: skip
    await attempt_row(any_db, "old_51", 1, 5, 6, "transition_applied", 200).run()
    first = await schedules.list_for(any_db, "ins_1", "cnt_1", 1)
    assert [s.id for s in first.schedules[:4]] == ["live", "old_51", "old_50", "old_49"]
    assert (len(first.schedules), first.has_next, first.total, first.in_view) == (50, True, 53, 4)
    assert first.counts == {"pending": 1, "completed": 52}
    assert [s.id for s in first.live] == ["live"]
    assert first.schedules[1].attempts == (Attempt(1, 5, 6, "transition_applied", 200),)
    second = await schedules.list_for(any_db, "ins_1", "cnt_1", 2)
    live = [s.id for s in second.live]
    assert (len(second.schedules), second.has_next, live) == (3, False, ["live"])
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


async def attempts_of(db: Database, sid: str) -> list[tuple[Any, ...]]:
    sql = "SELECT attempt, started_at, finished_at, code, http_status FROM schedule_attempts"
    return await values(db, f"{sql} WHERE schedule_id = ? ORDER BY attempt", sid)


def ids(due: list[DueRow]) -> list[str]:
    return [row.id for row in due]


async def test_due_is_waiting_whose_time_came_and_running_whose_lease_expired(
    any_db: Database, leases: Leases
) -> None:
    assert (await leases.due(LONG_AGO, 20), leases.outbox.next_at) == ([], None)
    ready = await leased(any_db, 0, 1)
    await leased(any_db, 0, 2, ready_at=LONG_AGO + 1)
    crashed = await leased(
        any_db, 0, 3, status="running", lease_until=LONG_AGO - 1, attempts=1, content_id="c3"
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


async def test_due_leaves_out_installations_and_takes_at_most_each_of_the_others(
    any_db: Database, leases: Leases
) -> None:
    busy = [await leased(any_db, 0, n, ready_at=LONG_AGO - 100 + n) for n in range(5)]
    quiet = await leased(any_db, 1, 0)
    third = [await leased(any_db, 2, n, ready_at=LONG_AGO - 50 + n) for n in range(2)]
    assert ids(await leases.due(LONG_AGO, 20, each=1)) == [busy[0], third[0], quiet]
    assert leases.due_now == 8
    taken = await leases.due(LONG_AGO, 20, left_out=["ins1", "ins2"], each=2)
    assert (ids(taken), leases.due_now) == (busy[:2], 8)  # not alone: the others are due
    assert await leases.due(LONG_AGO, 20, left_out=["ins0", "ins1", "ins2"]) == []
    assert leases.due_now == 8
    assert await leases.due(LONG_AGO - 101, 20, each=1) == []
    assert leases.due_now == 0
    # Alone with rows due, an installation takes up to the limit.
    assert ids(await leases.due(LONG_AGO - 60, 20, each=1)) == busy


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
    leased_a = ("running", "lease-a", LONG_AGO + LEASE_MS, 1)
    assert pick(row, "status lease_token lease_until attempt_count") == leased_a
    assert row["next_attempt_at"] is None
    assert await attempts_of(any_db, sid) == [(1, LONG_AGO, None, None, None)]


async def test_a_crashed_claim_is_reclaimed_on_its_expired_lease(
    any_db: Database, leases: Leases
) -> None:
    sid = await leased(any_db, 0, 1, status="running", lease_until=LONG_AGO - 1, attempts=1)
    await attempt_row(any_db, sid).run()
    won, _ = await leases.claim(await leases.due(LONG_AGO, 20), [], "new", LONG_AGO, LEASE_MS)
    assert [c.attempt for c in won] == [2]
    assert [a[0] for a in await attempts_of(any_db, sid)] == [1, 2]


async def test_refusing_unsent_ends_the_row_on_what_was_observed_and_writes_its_events(
    any_db: Database, leases: Leases
) -> None:
    await endpoint(any_db, "whe_1", "ins0")
    first, changed = await leased(any_db, 0, 1), await leased(any_db, 0, 2)
    seen = {row.id: row for row in await leases.due(LONG_AGO, 20)}
    await any_db.prepare("UPDATE schedules SET attempt_count = 3 WHERE id = ?").bind(changed).run()
    events = [OutboxEvent(f"msg_{s}", s, "schedule.refused", b'{"a":"\xc3\xa9"}') for s in seen]
    unsent = [(seen[sid], "token_unreadable", None) for sid in (first, changed)]
    won, refused = await leases.claim([], unsent, "lease", LONG_AGO, LEASE_MS, events)
    assert (won, refused) == ([], [first])
    row = await one(any_db, "SELECT status, result_code FROM schedules WHERE id = ?", first)
    assert row == {"status": "refused", "result_code": "token_unreadable"}
    status = "SELECT status FROM schedules WHERE id = ?"
    assert await column(any_db, status, changed) == ["pending"]  # someone else's change wins
    assert await attempts_of(any_db, first) == []
    # Only the refusal that applied wrote its event.
    written = await values(any_db, "SELECT id, payload, status FROM webhook_deliveries")
    assert written == [(f"msg_{first}_whe_1", '{"a":"é"}', "waiting")]
    assert (leases.outbox.events_written, leases.outbox.take_fresh()) == (1, [f"msg_{first}_whe_1"])
    assert leases.outbox.due(0)  # its events are to be delivered by this invocation


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
    token = "SELECT lease_token FROM schedules WHERE id = ?"
    assert await column(any_db, token, taken) == ["z"]  # the new runner's row, untouched
    attempt = (1, LONG_AGO + 5, LONG_AGO + 9, "transition_applied", 200)
    assert await attempts_of(any_db, kept) == [attempt]
    assert await rows(any_db, "SELECT id FROM webhook_deliveries") == [{"id": f"msg_{kept}_whe_1"}]
    sent = await one(any_db, "SELECT last_sent_at FROM installations WHERE id = 'ins0'")
    assert sent == {"last_sent_at": LONG_AGO + 5}
    await leases.note_last_sent({"ins0": LONG_AGO, "ins1": MAX_STORED_INTEGER})  # only later
    sent_at = await column(any_db, "SELECT last_sent_at FROM installations ORDER BY id")
    assert sent_at == [LONG_AGO + 5, MAX_STORED_INTEGER, None]


async def test_an_unsent_settle_drops_the_attempt_and_gives_it_back(
    any_db: Database, leases: Leases
) -> None:
    sid = await leased(any_db, 0, 1)
    [claim], _ = await leases.claim(await leases.due(LONG_AGO, 20), [], "l", LONG_AGO, LEASE_MS)
    refusal = Settlement(Status.REFUSED, "retry_exhausted", None, EndedBy.ATTEMPTS)
    await leases.settle("l", [SettledClaim(claim, refusal, None)], LONG_AGO + 1)
    row = await one(any_db, "SELECT * FROM schedules WHERE id = ?", sid)
    ended = ("refused", "retry_exhausted", 0, "attempts")
    assert pick(row, "status result_code attempt_count ended_by") == ended
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
    timed_out = (LONG_AGO, LONG_AGO + 1, "timeout", None)
    settles = [SettledClaim(c, retry, Attempt(c.attempt, *timed_out)) for c in won]
    assert await leases.settle("lease", settles, LONG_AGO + 2) == []
    assert await leases.due(LONG_AGO + 2, 50) == []  # retries wait for their backoff
    assert trips.round_trips - before[0] == 3
    assert trips.statements - before[1] > 4  # chunked: D1 refuses over 100 parameters
    retrying = "SELECT count(*) FROM schedules WHERE status = 'retrying' AND next_attempt_at = ?"
    assert await column(any_db, retrying, LONG_AGO + 30_000) == [50]


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
    live = "SELECT count(*) FROM schedules WHERE installation_id = 'ins0' AND status = 'running'"
    assert await column(any_db, f"{live} AND lease_until > ?", LONG_AGO) == [4]
    # Settling frees the room: the held rows are claimed next.
    completed = Settlement(Status.COMPLETED, "transition_applied", None)
    await leases.settle("a", [SettledClaim(c, completed, None) for c in won], LONG_AGO)
    freed, _, _ = await leases.claim_within(rest, [], "c", LONG_AGO, LEASE_MS, 4)
    assert len(freed) == 2
    assert all(c.row.id in mine or c.row.id.endswith("_200") for c in freed)


async def test_the_cap_holds_across_the_statements_of_one_claim(
    any_db: Database, leases: Leases
) -> None:
    """Thirty candidates need two claim statements; the second counts what the first claimed."""
    thirty = [schedule_row(any_db, f"s{n}", "ins0", ready_at=LONG_AGO) for n in range(30)]
    await any_db.batch(thirty)
    seen = await leases.due(LONG_AGO, 30)
    statements = leases.trips.statements
    won, _, held = await leases.claim_within(seen, [], "lease", LONG_AGO, LEASE_MS, 25)
    assert leases.trips.statements - statements == 3  # live claims, two claims
    assert (len(won), len(held)) == (25, 5)
    # Without `apart`, every row not won is held back, and no live claims are counted.
    rest = [row for row in seen if row.id in held]
    won, _, held = await leases.claim_within(rest, [], "b", LONG_AGO, LEASE_MS, 25, apart=False)
    assert (won, sorted(held)) == ([], sorted(row.id for row in rest))
    assert await leases.claim([], [], "c", LONG_AGO, LEASE_MS) == ([], [])


async def test_a_handed_back_claim_waits_again_as_it_was(any_db: Database, leases: Leases) -> None:
    pending = await leased(any_db, 0, 1)
    retrying = await leased(any_db, 0, 2, status="retrying", attempts=1, result_code="busy")
    won, _ = await leases.claim(await leases.due(LONG_AGO, 20), [], "l", LONG_AGO, LEASE_MS)
    settles = [SettledClaim(c, handed_back(c.row.status, LONG_AGO + 5), None) for c in won]
    assert all(s.handed_back for s in settles)
    await leases.settle("l", settles, LONG_AGO + 5)
    back = "SELECT status, result_code, attempt_count, next_attempt_at FROM schedules ORDER BY id"
    waiting_again = [("pending", None, 0, LONG_AGO + 5), ("retrying", "busy", 1, LONG_AGO + 5)]
    assert await values(any_db, back) == waiting_again
    assert await attempts_of(any_db, pending) == await attempts_of(any_db, retrying) == []


# -- the outbox: deliveries claimed under a lease, settled, endpoints marked -----------------

PACING = Pacing(digests=("chat",), intervals={"chat": MINUTE}, titled={"chat": 2})


@pytest.fixture
async def outbox(any_db: Database) -> Outbox:
    await installation(any_db)
    return Outbox(RoundTrips(any_db))


async def deliveries(db: Database) -> list[tuple[Any, ...]]:
    sql = "SELECT id, status, attempt_count, next_attempt_at, last_http_status, last_error,"
    return await values(db, f"{sql} finished_at, lease_token FROM webhook_deliveries ORDER BY id")


def settled(
    claimed: list[Any],
    status: D,
    *,
    at: int = NOW,
    http: int | None = 204,
    error: str | None = None,
) -> SettledMessage:
    """One message of `claimed` (a digest when there are several) ended as `status` at `at`."""
    message = Message(claimed[0].endpoint_id, tuple(claimed), digest=len(claimed) > 1)
    retry = at + MINUTE if status == D.WAITING else None
    finished = at if status in (D.DELIVERED, D.FAILED) else None
    return SettledMessage(message, status, retry, finished, at, http, error, True)


async def test_a_delivery_is_claimed_once_under_its_lease_and_settled_only_under_it(
    any_db: Database, outbox: Outbox
) -> None:
    assert await outbox.claim("a", NOW, LEASE_MS, 10, PACING) == ([], {})
    assert (await outbox.settle("a", NOW, [], NOW), outbox.due(NOW)) == ([], False)
    await endpoint(any_db)
    first = await delivery(any_db, "d1", created_at=NOW - 1)
    await delivery(any_db, "d2", at=NOW + 1)
    await delivery(any_db, "d3", status="failed")
    claimed, targets = await outbox.claim("a", NOW, LEASE_MS, 10, PACING)
    found = [(d.id, d.attempt, d.payload, d.tried_from) for d in claimed]
    assert found == [(first, 1, '{"n":"é"}'.encode(), NOW - 1)]
    url = "https://hooks.example/whe_1"
    assert pick(targets["whe_1"], "url kind disabled") == (url, "webhook", False)
    assert await outbox.claim("b", NOW, LEASE_MS, 10, PACING) == ([], {})  # leased
    # The lease runs out: the next runner claims it again, with the one due since.
    again, _ = await outbox.claim("b", NOW + LEASE_MS, LEASE_MS, 10, PACING)
    assert [(d.id, d.attempt) for d in again] == [("d1", 2), ("d2", 1)]
    assert await outbox.settle("a", NOW + LEASE_MS, [settled(claimed, D.DELIVERED)], NOW) == ["d1"]
    lease_b = NOW + 2 * LEASE_MS
    delivered = settled([again[0]], D.DELIVERED, at=NOW + 5)
    assert await outbox.settle("b", lease_b, [delivered], NOW + 5) == []
    given_back = SettledMessage.given_back(Message("whe_1", (again[1],)), NOW + 7)
    assert await outbox.settle("b", lease_b, [given_back], NOW + 7) == []
    assert await deliveries(any_db) == [
        ("d1", "delivered", 2, None, 204, None, NOW + 5, None),
        ("d2", "waiting", 0, NOW + 7, None, None, None, None),
        ("d3", "failed", 1, None, None, None, NOW, None),
    ]
    named, _ = await outbox.claim("c", NOW + 7, LEASE_MS, 10, PACING, named=["d_other"])
    assert named == []
    named, _ = await outbox.claim("c", NOW + 7, LEASE_MS, 10, PACING, named=["d2"])
    assert [d.id for d in named] == ["d2"]


async def test_failures_mark_the_endpoint_and_disable_it_when_gone_or_failing_for_days(
    any_db: Database, outbox: Outbox
) -> None:
    for eid in ("whe_slow", "whe_gone"):
        await endpoint(any_db, eid)
        await delivery(any_db, f"{eid}_1", eid)
        await delivery(any_db, f"{eid}_2", eid, at=NOW + 10 * DISABLE_AFTER_FAILING_MS)
    claimed, _ = await outbox.claim("a", NOW, LEASE_MS, 10, PACING)
    slow, gone = sorted(claimed, key=lambda d: d.endpoint_id, reverse=True)
    failed = [settled([slow], D.WAITING, http=500, error=None)]
    failed.append(settled([gone], D.FAILED, http=410, error=ENDPOINT_GONE))
    await outbox.settle("a", NOW + LEASE_MS, failed, NOW)
    marks = "SELECT id, failing_since, disabled_at, disabled_reason FROM notification_endpoints"
    marked = [("whe_gone", NOW, NOW, "gone"), ("whe_slow", None, None, None)]
    assert await values(any_db, f"{marks} ORDER BY id") == marked
    error = "SELECT last_error FROM webhook_deliveries WHERE id = 'whe_gone_2'"
    assert await column(any_db, error) == ["endpoint_gone"]
    later = NOW + MINUTE
    [again], _ = await outbox.claim("b", later, LEASE_MS, 10, PACING)
    timeout: dict[str, Any] = {"at": later, "error": "timeout"}
    await outbox.settle("b", later + LEASE_MS, [settled([again], D.WAITING, **timeout)], later)
    assert (await one(any_db, f"{marks} WHERE id = 'whe_slow'"))["failing_since"] == later
    days = later + DISABLE_AFTER_FAILING_MS
    [third], _ = await outbox.claim("c", days, LEASE_MS, 10, PACING)
    timeout["at"] = days
    await outbox.settle("c", days + LEASE_MS, [settled([third], D.WAITING, **timeout)], days)
    disabled = [("whe_slow", later, days, "failing")]
    assert await values(any_db, f"{marks} WHERE id = 'whe_slow'") == disabled
    left = "SELECT status, last_error FROM webhook_deliveries WHERE endpoint_id = 'whe_slow'"
    assert await values(any_db, left) == [("failed", "endpoint_disabled")] * 2


async def test_a_digest_kinds_endpoint_is_claimed_whole_paced_and_named_by_its_titles(
    any_db: Database, outbox: Outbox
) -> None:
    await endpoint(any_db, "whe_chat", kind="chat")
    title = "UPDATE schedules SET title_sealed = ? WHERE id = ?"
    for n in range(3):
        sid = await schedule(any_db, f"sch_{n}")
        await any_db.prepare(title).bind(f"title-{n}-ü", sid).run()
        await delivery(any_db, f"d{n}", "whe_chat", created_at=NOW + n, schedule_id=sid)
    claimed, targets = await outbox.claim("a", NOW, LEASE_MS, 1, PACING)
    titled = [("d0", "title-0-ü"), ("d1", "title-1-ü"), ("d2", None)]  # d2: past the kind's 2
    assert [(d.id, d.title_sealed) for d in claimed] == titled
    assert targets["whe_chat"].kind == "chat"
    paced = await column(any_db, "SELECT next_message_at FROM notification_endpoints")
    assert paced == [NOW + MINUTE]
    # Written now, it waits for the endpoint's next message.
    outbox_event = OutboxEvent("msg_new", "sch_0", "schedule.refused", b"{}")
    await any_db.prepare("UPDATE schedules SET settled_by = 'lease-x' WHERE id = 'sch_0'").run()
    await any_db.batch(outbox.event_statements("lease-x", NOW + 1, [outbox_event]))
    waits = "SELECT next_attempt_at FROM webhook_deliveries WHERE id = 'msg_new_whe_chat'"
    assert await column(any_db, waits) == [NOW + MINUTE]
    assert await outbox.claim("b", NOW + LEASE_MS - 1, LEASE_MS, 10, PACING) == ([], {})
    await outbox.settle("a", NOW + LEASE_MS, [settled(claimed, D.DELIVERED)], NOW)
    assert [r[1] for r in await deliveries(any_db)] == ["delivered"] * 3 + ["waiting"]


# -- redelivery: sent again, replayed, an endpoint enabled again -----------------------------


async def test_send_again_and_replay_put_ended_deliveries_back_with_their_ids(
    any_db: Database,
) -> None:
    await installation(any_db)
    await endpoint(any_db)
    await delivery(any_db, "ok", status="delivered", created_at=NOW - 10)
    await delivery(any_db, "old", status="failed", created_at=NOW - 10)
    await delivery(any_db, "new", status="failed", created_at=NOW)
    await delivery(any_db, "waits")
    assert not await send_again(any_db, "ins_1", "whe_1", "waits", NOW)
    assert not await send_again(any_db, "ins_other", "whe_1", "ok", NOW)
    assert await send_again(any_db, "ins_1", "whe_1", "ok", NOW + 1)
    assert await replay_failures(any_db, "ins_1", "whe_1", NOW, NOW + 2) == ["new"]
    assert await replay_failures(any_db, "ins_1", "whe_1", NOW, NOW + 2) == []
    again = "SELECT id, status, attempt_count, retries_from, next_attempt_at, finished_at"
    again += " FROM webhook_deliveries WHERE id IN ('ok', 'new') ORDER BY id"
    assert await values(any_db, again) == [
        ("new", "waiting", 0, NOW + 2, NOW + 2, None),
        ("ok", "waiting", 0, NOW + 1, NOW + 1, None),
    ]
    assert not await enable(any_db, "ins_1", "whe_1")  # not disabled
    marks = "disabled_at, disabled_reason, failing_since FROM notification_endpoints"
    await any_db.prepare("UPDATE notification_endpoints SET disabled_at = 1,"
                         " disabled_reason = 'failing', failing_since = 0").run()  # fmt: skip
    assert not await send_again(any_db, "ins_1", "whe_1", "old", NOW)
    assert not await enable(any_db, "ins_other", "whe_1")
    assert await enable(any_db, "ins_1", "whe_1")
    assert await values(any_db, f"SELECT {marks}") == [(None, None, None)]


# -- notification endpoints: at most five, listed with their latest deliveries --------------


async def test_an_installation_has_at_most_five_endpoints_each_listed_with_its_deliveries(
    any_db: Database,
) -> None:
    await installation(any_db)
    await installation(any_db, "ins_2")
    assert await notification_endpoints.list_for(any_db, "ins_1") == []
    assert await notification_endpoints.count(any_db, "ins_1") == 0
    assert await notification_endpoints.get(any_db, "ins_1", "whe_0") is None
    events = ("proposal.created", "schedule.refused")
    for n in range(MAX_ENDPOINTS):
        await endpoint(any_db, f"whe_{n}", events=events, now=NOW + n)
    sixth = await notification_endpoints.create(
        any_db, endpoint_id="whe_6", installation_id="ins_1", kind="webhook", url="u",
        events=["schedule.refused"], secret_sealed="s", now=NOW,
    )  # fmt: skip
    assert not sixth
    sixths = "SELECT * FROM notification_subscriptions WHERE endpoint_id = 'whe_6'"
    assert await rows(any_db, sixths) == []
    await schedule(any_db, "sch_1")
    for n in range(12):
        about_n = "sch_1" if n else "test"
        await delivery(any_db, f"d{n:02}", "whe_0", created_at=NOW + n, schedule_id=about_n)
    listed = await notification_endpoints.list_for(any_db, "ins_1")
    assert [e.id for e in listed] == [f"whe_{n}" for n in range(MAX_ENDPOINTS)]
    first = listed[0]
    listed_first = (("schedule.refused", "proposal.created"), 12, "webhook", None)
    assert pick(first, "events delivery_count kind disabled_reason") == listed_first
    assert [d.id for d in first.deliveries] == [f"d{n:02}" for n in range(11, 1, -1)]
    assert first.deliveries[0].status == D.WAITING
    about = first.deliveries[0].schedule
    assert about is not None
    assert (about.id, about.due_at, about.timezone) == ("sch_1", NOW, "UTC")
    assert first.target().secret_sealed == "secret-whe_0"
    assert listed[1].deliveries == ()
    assert await notification_endpoints.list_for(any_db, "ins_2") == []


async def test_an_endpoint_is_rotated_tested_and_deleted_with_its_deliveries_by_its_own(
    any_db: Database,
) -> None:
    await installation(any_db)
    await installation(any_db, "ins_2")
    await endpoint(any_db, "whe_0")
    await endpoint(any_db, "whe_1")
    await delivery(any_db, "d1", "whe_0")
    assert await notification_endpoints.rotate(any_db, "ins_1", "whe_0", "new-secret", NOW + 9)
    assert not await notification_endpoints.rotate(any_db, "ins_2", "whe_0", "x", NOW)
    await notification_endpoints.record_test(any_db, "ins_1", "whe_0", NOW + 10, "204 ✓")
    got = await present(notification_endpoints.get(any_db, "ins_1", "whe_0"))
    changed = ("new-secret", NOW + 9, NOW + 10, "204 ✓")
    assert pick(got, "secret_sealed secret_rotated_at tested_at test_result") == changed
    assert not await notification_endpoints.delete(any_db, "ins_2", "whe_0")
    assert await notification_endpoints.delete(any_db, "ins_1", "whe_0")
    assert await notification_endpoints.get(any_db, "ins_1", "whe_0") is None
    assert await rows(any_db, "SELECT count(*) AS n FROM webhook_deliveries") == [{"n": 0}]
    assert await notification_endpoints.count(any_db, "ins_1") == 1


# -- sessions: opened, found while live, the installation gone, read once -------------------


MANAGE: dict[str, Any] = {"context_kind": "manage", "content_id": None}


async def open_session(
    db: Database, id_hash: str, *, now: int = NOW, forget_before: int = 0, **changes: Any
) -> installations.Session:
    """A launch's session of `usr_1` (of a content, unless `changes` say), as it reads back."""
    made = installations.Session(
        id_hash=id_hash, installation_id="ins_1", csrf_token=f"csrf-{id_hash}", person_id="usr_1",
        person_name=ADA, context_kind="content", content_id="cnt_en", content_primary_id=None,
        delegation_sealed="sealed", expires_at=now + 10 * MINUTE, offered=None, tab=f"t_{id_hash}",
    )  # fmt: skip
    opened = replace(made, **changes)
    await installations.create(
        db, opened, delegation_expires_at=now + MINUTE, now=now, forget_before=forget_before
    )
    return await present(installations.find_live_session(db, id_hash, now))


async def test_a_session_reads_back_while_live_and_expired_ones_go_with_the_next(
    any_db: Database,
) -> None:
    await installation(any_db, token_rotated_at=NOW - 5)
    await open_session(any_db, "old", now=NOW - 10 * MINUTE)
    assert await installations.find_live_session(any_db, "old", NOW - 1) is not None
    assert await installations.find_live_session(any_db, "old", NOW) is None  # expired at NOW
    assert await installations.installation_of(any_db, "old") == "ins_1"
    await open_session(any_db, "h1")
    assert await installations.installation_of(any_db, "old") is None  # gone with the create
    assert await installations.installation_of(any_db, "nobody") is None
    assert await column(any_db, "SELECT token_accepted_at FROM installations") == [NOW]
    found = await present(installations.find_live_session(any_db, "h1", NOW))
    fields = "person_name content_id content_primary_id offered reveal_endpoint_id notice"
    assert pick(found, f"{fields} installation_gone") == (ADA, "cnt_en", *[None] * 4, False)
    offered = {("publish", "published"), ("unpublish", "draft")}
    await installations.remember_read(any_db, found, "cnt_1", offered, NOW)
    read = await present(installations.find_live_session(any_db, "h1", NOW))
    assert (read.content_primary_id, read.offered) == ("cnt_1", frozenset(offered))
    await installations.remember_read(any_db, read, "cnt_other", set(), NOW)  # the primary id stays
    again = await present(installations.find_live_session(any_db, "h1", NOW))
    assert (again.content_primary_id, again.offered) == ("cnt_1", frozenset())


NOTICE = "L'adresse a été supprimée ✓"


async def test_a_secret_to_reveal_and_a_notice_are_taken_once(any_db: Database) -> None:
    await installation(any_db)
    await open_session(any_db, "h1", **MANAGE)
    await installations.reveal_next(any_db, "h1", "whe_1")
    await installations.say_next(any_db, "h1", NOTICE)
    found = await present(installations.find_live_session(any_db, "h1", NOW))
    assert (found.reveal_endpoint_id, found.notice) == ("whe_1", NOTICE)
    assert await installations.take_reveal(any_db, found) == "whe_1"
    assert await installations.take_reveal(any_db, found) is None  # a second page loaded at once
    assert await installations.take_notice(any_db, found) == NOTICE
    assert await installations.take_notice(any_db, found) is None
    taken = await present(installations.find_live_session(any_db, "h1", NOW))
    assert (taken.reveal_endpoint_id, taken.notice) == (None, None)
    assert await installations.take_notice(any_db, taken) is None


async def test_an_installation_is_gone_once_dee_wan_refuses_its_token_until_it_accepts_it(
    any_db: Database,
) -> None:
    await installation(any_db, token_rotated_at=NOW - 5)

    async def gone() -> bool:
        found = await present(installations.find_live_session(any_db, "h1", NOW + 100))
        return found.installation_gone

    await open_session(any_db, "h1", now=NOW - 1)
    await installations.mark_unauthorized(any_db, "ins_1", NOW)
    assert await gone()
    await installations.mark_unauthorized(any_db, "ins_1", NOW + 50)  # written once
    assert await column(any_db, "SELECT unauthorized_at FROM installations") == [NOW]
    await open_session(any_db, "h2", now=NOW + 1)  # a launch exchange succeeded since
    assert not await gone()
    refused: dict[str, Any] = {"status": "refused", "result_code": "plugin_unauthorized"}
    await schedule(any_db, "s1", **refused, updated_at=NOW + 2)
    assert await gone()  # the runner's send was refused so
    await any_db.prepare("UPDATE installations SET token_rotated_at = ?").bind(NOW + 3).run()
    assert not await gone()


# -- installations: codes, activation, rotation, deleting all their data ---------------------


async def test_a_code_activates_or_rotates_once_and_expired_codes_go(any_db: Database) -> None:
    await installations.insert_code(any_db, "old", "activate", None, NOW - MINUTE, MINUTE)
    await installations.insert_code(any_db, "c1", "activate", None, NOW, MINUTE)
    assert await installations.find_code(any_db, "old") is None
    code = await installations.find_code(any_db, "c1")
    assert code == installations.ActivationCode("activate", None, NOW + MINUTE, None)
    assert code.usable_for("activate", "ins_1", NOW)
    assert await installations.get(any_db, "ins_1") is None
    made: dict[str, Any] = {"installation_id": "ins_1", "site_id": "site", "code_hash": "c1"}
    made |= {"base_url": "https://cms.example", "now": NOW}
    assert await installations.activate(any_db, marker="m1", token_sealed="t1", **made)
    assert not await installations.activate(any_db, marker="m2", token_sealed="t2", **made)
    activated = installations.Installation("ins_1", "site", "https://cms.example", "t1")
    assert await installations.get(any_db, "ins_1") == activated
    used = await present(installations.find_code(any_db, "c1"))
    assert (used.used_at, used.usable_for("activate", "ins_1", NOW)) == (NOW, False)
    await installations.insert_code(any_db, "c2", "activate", None, NOW, MINUTE)
    made["code_hash"] = "c2"
    with pytest.raises(installations.AlreadyExists):
        await installations.activate(any_db, marker="m3", token_sealed="t3", **made)
    assert await installations.find_code(any_db, "c2") == code  # rolled back: still unused
    await installations.insert_code(any_db, "r1", "rotate", "ins_1", NOW, MINUTE)
    rotation = {"installation_id": "ins_1", "token_sealed": "t4", "code_hash": "r1"}
    assert not await installations.rotate(any_db, marker="x", now=NOW + MINUTE, **rotation)
    assert await installations.rotate(any_db, marker="x", now=NOW + 1, **rotation)
    assert not await installations.rotate(any_db, marker="y", now=NOW + 2, **rotation)
    rotated = await values(any_db, "SELECT token_sealed, token_rotated_at FROM installations")
    assert rotated == [("t4", NOW + 1)]


async def test_all_of_an_installations_data_goes_in_one_batch_unless_one_is_running(
    any_db: Database,
) -> None:
    await installation(any_db)
    await installation(any_db, "ins_2")
    await schedule(any_db, "s1", status="running", lease_until=NOW)
    await schedule(any_db, "s2", status="completed")
    await attempt_row(any_db, "s2").run()
    await endpoint(any_db)
    await delivery(any_db, "d1")
    await open_session(any_db, "h1")
    await installations.insert_code(any_db, "r1", "rotate", "ins_1", NOW, MINUTE)
    await installations.insert_key(any_db, agent_key("key_1"), "hash_1")
    await agents_module.insert_proposal(any_db, proposal("prop_1"), b"{}")
    await schedule(any_db, "other", "ins_2")
    assert await installations.has_running_schedule(any_db, "ins_1")
    assert not await installations.has_running_schedule(any_db, "ins_2")
    assert not await installations.delete_all_data(any_db, "ins_1")
    assert await installations.get(any_db, "ins_1") is not None
    assert await column(any_db, "SELECT count(*) FROM webhook_deliveries") == [1]
    ended = "status = 'completed', lease_token = NULL, lease_until = NULL"
    await any_db.prepare(f"UPDATE schedules SET {ended} WHERE id = 's1'").run()
    assert await installations.delete_all_data(any_db, "ins_1")
    tables = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'"
    tables += " AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT IN ('d1_migrations', ?)"
    names = await column(any_db, tables, TABLE)
    left = {t: (await column(any_db, f"SELECT count(*) FROM {t}"))[0] for t in names}
    assert {name: n for name, n in left.items() if n} == {"installations": 1, "schedules": 1}
    assert not await installations.delete_all_data(any_db, "ins_1")


# -- agent keys and proposals ---------------------------------------------------------------


def agent_key(kid: str, **changes: Any) -> installations.AgentKey:
    made = installations.AgentKey(
        id=kid, installation_id="ins_1", name="Mon agent ✨", person_id="usr_1", person_name=ADA,
        content_id="cnt_1", offered=frozenset({("publish", "published")}), created_at=NOW,
        expires_at=NOW + 10 * MINUTE, revoked_at=None, last_used_at=None, checked_at=NOW,
    )  # fmt: skip
    return replace(made, **changes)


async def test_an_agent_key_is_found_while_live_its_use_noted_once_a_minute(
    any_db: Database,
) -> None:
    await installation(any_db)
    key = agent_key("key_1")
    await installations.insert_key(any_db, key, "hash_1")
    every_content = agent_key("key_all", content_id=None, offered=None, created_at=NOW - 1)
    await installations.insert_key(any_db, every_content, "hash_2")
    assert await installations.find_live_key(any_db, "hash_1", NOW) == key
    assert (await installations.find_live_key(any_db, "hash_1", NOW + 1)) == replace(
        key, last_used_at=NOW
    )
    used = "SELECT last_used_at FROM agent_keys WHERE id = 'key_1'"
    assert await column(any_db, used) == [NOW]  # not moved within the minute
    manage = await present(installations.find_live_key(any_db, "hash_2", NOW))
    assert (manage.offered, manage.reaches("cnt_any")) == (None, True)
    assert await installations.find_live_key(any_db, "hash_1", NOW + 10 * MINUTE) is None  # expired
    assert await installations.find_live_key(any_db, "nope", NOW) is None
    listed = await installations.list_for(any_db, "ins_1", NOW)
    assert [k.id for k in listed] == ["key_1", "key_all"]
    assert not await installations.revoke(any_db, "ins_other", "key_1", NOW)
    assert await installations.revoke(any_db, "ins_1", "key_1", NOW)
    assert not await installations.revoke(any_db, "ins_1", "key_1", NOW + 1)
    assert await installations.find_live_key(any_db, "hash_1", NOW) is None
    assert [k.id for k in await installations.list_for(any_db, "ins_1", NOW)] == ["key_all"]
    await installations.mark_unauthorized(any_db, "ins_1", NOW)  # uninstalled
    assert await installations.find_live_key(any_db, "hash_2", NOW) is None
    # A revoked key ended when it was revoked.
    assert await column(any_db, "SELECT expires_at FROM agent_keys WHERE id = 'key_1'") == [NOW]


async def test_an_agent_key_lasts_a_day_past_its_persons_rights_last_confirmed(
    any_db: Database,
) -> None:
    """A manage launch of its person renews a manage key; a read of its content by its person
    renews a content key, with the changes Dee Wan offered them then. Nothing else does."""
    await installation(any_db)
    day = installations.CHECKED_FOR_MS
    content_key = agent_key("key_1", expires_at=NOW + 30 * day)
    manage_key = agent_key("key_all", content_id=None, offered=None, expires_at=NOW + 30 * day)
    others = agent_key("key_other", person_id="usr_2", expires_at=NOW + 30 * day)
    for key, key_hash in ((content_key, "h1"), (manage_key, "h2"), (others, "h3")):
        await installations.insert_key(any_db, key, key_hash)
    assert await installations.find_live_key(any_db, "h1", NOW + day - 1) is not None
    assert await installations.find_live_key(any_db, "h1", NOW + day) is None
    assert await installations.find_live_key(any_db, "h2", NOW + day) is None
    later = NOW + day + MINUTE
    await open_session(any_db, "c1", now=later)  # a content launch: no key renewed yet
    assert await installations.find_live_key(any_db, "h2", later) is None
    await open_session(any_db, "m1", now=later, **MANAGE)
    assert await present(installations.find_live_key(any_db, "h2", later))
    assert await installations.find_live_key(any_db, "h1", later) is None
    offered = {("unpublish", "draft")}
    read = await present(installations.find_live_session(any_db, "c1", later))
    await installations.remember_read(any_db, read, "cnt_other", offered, later)  # another content
    assert await installations.find_live_key(any_db, "h1", later) is None
    await open_session(any_db, "c2", now=later, content_id="cnt_1_fr")
    read = await present(installations.find_live_session(any_db, "c2", later))
    await installations.remember_read(any_db, read, "cnt_1", offered, later)  # its primary id
    renewed = await present(installations.find_live_key(any_db, "h1", later))
    assert (renewed.checked_at, renewed.offered) == (later, frozenset(offered))
    assert await installations.find_live_key(any_db, "h3", later) is None  # another person's


def proposal(pid: str, **changes: Any) -> agents_module.Proposal:
    made = agents_module.Proposal(
        id=pid, installation_id="ins_1", key_id="key_1", key_name="Mon agent ✨", person_name=ADA,
        content_id="cnt_1", kind="publish", to_state=None, local_time="2026-06-01T09:00",
        timezone="Europe/Paris", fold=None, due_at=NOW + MINUTE,
        note="Après relecture — merci !", status=agents_module.PENDING, schedule_id=None,
        decided_by_name=None, created_at=NOW,
    )  # fmt: skip
    return replace(made, **changes)


async def test_a_proposal_tells_its_endpoints_and_is_decided_once_before_its_time(
    any_db: Database,
) -> None:
    await installation(any_db)
    await endpoint(any_db, "whe_hears", events=("proposal.created",))
    await endpoint(any_db, "whe_not", events=("schedule.refused",))
    first = proposal("prop_1")
    await agents_module.insert_proposal(any_db, first, '{"note":"é"}'.encode())
    await agents_module.insert_proposal(
        any_db, proposal("prop_2", content_id="cnt_2", due_at=NOW + 2), b"{}"
    )
    await agents_module.insert_proposal(any_db, proposal("prop_past", due_at=NOW), b"{}")
    told = "SELECT id, event_type, payload, next_attempt_at FROM webhook_deliveries"
    heard = [("prop_1_whe_hears", "proposal.created", '{"note":"é"}', NOW)]
    assert await values(any_db, f"{told} WHERE schedule_id = 'prop_1'") == heard
    assert await agents_module.get(any_db, "ins_1", "prop_1") == first
    assert await agents_module.get(any_db, "ins_other", "prop_1") is None
    pending = [p.id for p in await agents_module.pending(any_db, "ins_1", None, NOW)]
    assert pending == ["prop_2", "prop_1"]
    assert [p.id for p in await agents_module.pending(any_db, "ins_1", "cnt_1", NOW)] == ["prop_1"]
    assert await agents_module.pending(any_db, "ins_1", "cnt_1", NOW + MINUTE) == []
    assert first.status_at(NOW + MINUTE) == agents_module.EXPIRED
    assert not await agents_module.decide(any_db, "ins_1", "prop_past", agents_module.DECLINED, NOW)
    other, by = {"key_id": "key_other"}, {"by_name": ADA, "schedule_id": "sch_9"}
    assert not await agents_module.decide(
        any_db, "ins_1", "prop_1", agents_module.WITHDRAWN, NOW, **other
    )
    assert await agents_module.decide(any_db, "ins_1", "prop_1", agents_module.CONFIRMED, NOW, **by)
    assert not await agents_module.decide(any_db, "ins_1", "prop_1", agents_module.DECLINED, NOW)
    decided = await agents_module.of_schedule(any_db, "ins_1", "sch_9")
    confirmed: dict[str, Any] = {"status": agents_module.CONFIRMED, "decided_by_name": ADA}
    assert decided == replace(first, **confirmed, schedule_id="sch_9")
    assert await agents_module.of_schedule(any_db, "ins_1", "sch_none") is None


async def test_agent_calls_are_counted_by_tool_and_outcome(any_db: Database) -> None:
    assert await agents_module.totals(any_db) == {}
    for outcome in ("ok", "ok", "refused"):
        await agents_module.count_agent_call(any_db, "list_schedules", outcome)
    await agents_module.count_agent_call(any_db, "cancel_schedule", "invalid")
    counted = {("list_schedules", "ok"): 2, ("list_schedules", "refused"): 1}
    assert await agents_module.totals(any_db) == counted | {("cancel_schedule", "invalid"): 1}


# -- tick history: the invocation's row, totals and pruning in one write; the operator's reads


def report(**counts: int) -> dict[str, int]:
    return {column: counts.get(column, 0) for column in history.REPORT_COLUMNS}


async def record(db: Database, at: int, kind: str = "tick", **options: Any) -> None:
    """The invocation's record as the engine sends it: its last round trip, counted."""
    trips = RoundTrips(db)
    counts = options.get("counts", report())
    await trips.record(
        lambda: history.write_record(
            db, at=at, kind=kind, error=options.get("error"), ended_at=at, counts=counts,
            duration_ms=options.get("duration_ms", 5), totals=options.get("totals", {}),
        ),
        3,
    )  # fmt: skip
    assert (trips.round_trips, trips.statements) == (1, 3)


async def reads(db: Database, now: int) -> tuple[Any, ...]:
    found = await db.batch([
        history.read_last(db), history.read_health(db, now), history.read_totals(db)
    ])  # fmt: skip
    parse = (history.last_from, history.health_from, history.totals_from)
    return tuple(read(result.results) for read, result in zip(parse, found, strict=True))


async def test_the_history_records_each_invocation_and_its_totals_and_reads_them_back(
    any_db: Database,
) -> None:
    assert await reads(any_db, NOW) == (None, history.Health(None, False), {})
    await installation(any_db)
    await schedule(any_db, "due", ready_at=NOW - 1)
    await schedule(any_db, "later", ready_at=NOW + MINUTE)
    big = report(sends=3, cron_delay_ms=1_000, lateness_sum_ms=MAX_STORED_INTEGER)
    totals = {"ticks:tick": 1, "sends": 3, "idle": 0}
    await record(any_db, NOW, counts=big, totals=totals, duration_ms=42)
    await record(any_db, NOW + MINUTE, error="d1 refused ✗", totals={"ticks:tick": 1})
    await record(any_db, NOW + MINUTE + 1, "alarm", counts=report(caught=2), totals={"sends": 1})
    with pytest.raises(ValueError, match="tick"):
        history.write_record(
            any_db, at=NOW, kind="consumer", error=None, duration_ms=0, ended_at=NOW,
            counts=big, totals={},
        )  # fmt: skip
    last, health, added = await reads(any_db, NOW)
    assert (last.at, last.duration_ms) == (NOW, 42)  # the last tick that ended well
    counted = {"sends": 3, "cron_delay_ms": 1_000, "lateness_sum_ms": MAX_STORED_INTEGER}
    assert {k: v for k, v in last.report.items() if v} == counted
    assert health == history.Health(NOW, True)
    assert added == {"ticks:tick": 2, "sends": 4}
    stored = "SELECT at, kind, backlog FROM tick_history ORDER BY at"
    # `later` is due by the second.
    three = [(NOW, "tick", 1), (NOW + MINUTE, "tick", 2), (NOW + MINUTE + 1, "alarm", 2)]
    assert await values(any_db, stored) == three
    assert (await reads(any_db, NOW - 2))[1] == history.Health(NOW, False)
    # Slots of ten minutes: a tick counts in the minute it stands for (less its cron delay).
    window = (NOW - 10 * MINUTE, NOW + 10 * MINUTE, 10 * MINUTE)
    series = (await history.read_series(any_db, *window).all()).results
    names = "slot invocations ticks failed alarms sends caught"
    assert [pick(r, names) for r in series] == [(0, 1, 1, 0, 0, 3, 0), (1, 2, 1, 1, 1, 0, 2)]


async def test_a_write_prunes_at_most_ten_rows_past_the_retention(any_db: Database) -> None:
    for n in range(12):
        await record(any_db, n)
    await record(any_db, history.RETENTION_MS + 100)
    kept = await values(any_db, "SELECT at FROM tick_history ORDER BY at")
    assert kept == [(10,), (11,), (history.RETENTION_MS + 100,)]


# -- what is due: the backlog, the counts, the clocks' wake-ups ------------------------------


async def test_the_backlog_counts_and_wake_ups_read_what_is_due(any_db: Database) -> None:
    async def read(now: int) -> tuple[Any, ...]:
        found = await any_db.batch([
            history.read_backlog(any_db, now), history.read_counts(any_db, NOW - MINUTE),
            history.read_live_counts(any_db), read_wake_ups(any_db, now),
        ])  # fmt: skip
        by_status = history.counts_from
        parse = (history.backlog_from, by_status, by_status, wake_ups_from)
        return tuple(parsed(result.results) for parsed, result in zip(parse, found, strict=True))

    none = {"running": 0, "queued": 0}
    assert await read(NOW) == (history.Backlog(0), none, none, {})
    await installation(any_db)
    await installation(any_db, "ins_2")
    assert await next_due(any_db, "ins_1") is None
    await any_db.batch([
        schedule_row(any_db, "a_wait", ready_at=NOW - 5),
        schedule_row(any_db, "a_retry", status="retrying", ready_at=NOW + 5, attempts=1),
        schedule_row(any_db, "a_run", status="running", lease_until=NOW - 1),
        schedule_row(any_db, "b_run", "ins_2", status="running", lease_until=NOW - 9),
        schedule_row(any_db, "b_late", "ins_2", ready_at=MAX_STORED_INTEGER),
        schedule_row(any_db, "done_now", status="completed", updated_at=NOW),
        schedule_row(any_db, "done_long_ago", status="refused", updated_at=0),
    ])  # fmt: skip
    assert await read(NOW) == (
        history.Backlog(3, "a_wait", "ins_1", NOW - 5),
        {"pending": 2, "retrying": 1, "running": 2, "queued": 0, "completed": 1},
        {"pending": 2, "retrying": 1, "running": 2, "queued": 0},
        {"ins_2": NOW - 9, "ins_1": NOW - 5},
    )
    assert await next_due(any_db, "ins_1") == NOW - 5
    assert await next_due(any_db, "ins_2") == NOW - 9
    late = await read(MAX_STORED_INTEGER)
    assert (late[0].size, late[3]) == (5, {"ins_2": NOW - 9, "ins_1": NOW - 5})


async def test_the_operator_reads_the_latest_refusals_and_the_installations_to_watch(
    any_db: Database,
) -> None:
    async def read() -> tuple[Any, ...]:
        refusals, lines = await any_db.batch([
            history.read_recent_refusals(any_db),
            history.read_installations(any_db, NOW - MINUTE),
        ])  # fmt: skip
        return (
            history.refusals_from(refusals.results),
            history.installations_from(lines.results),
        )

    assert await read() == ((), ())
    await installation(any_db, "ins_quiet")
    await installation(any_db, "ins_busy", last_sent_at=NOW)
    await installation(any_db, "ins_bad")
    refused: dict[str, Any] = {"status": "refused"}
    await any_db.batch([
        schedule_row(any_db, "r1", "ins_bad", **refused, result_code="no", updated_at=NOW),
        schedule_row(any_db, "r2", "ins_bad", **refused, updated_at=NOW + 1),
        schedule_row(any_db, "r_old", "ins_busy", **refused, updated_at=0),
        schedule_row(any_db, "ok", "ins_busy", status="completed", updated_at=NOW),
        schedule_row(any_db, "live", "ins_busy"),
    ])  # fmt: skip
    refusals, lines = await read()
    latest = [("r2", "", NOW + 1), ("r1", "no", NOW), ("r_old", "", 0)]
    assert [pick(r, "schedule_id code at") for r in refusals] == latest
    watch = [("ins_bad", 0, 2, None), ("ins_busy", 1, 0, NOW), ("ins_quiet", 0, 0, None)]
    assert [pick(i, "id live refused_recently last_sent_at") for i in lines] == watch


async def test_the_operator_reads_the_schedules_that_will_try_again_with_their_tries(
    any_db: Database,
) -> None:
    assert history.retrying_from((await history.read_retrying(any_db).all()).results) == ()
    await installation(any_db, "ins_down", site_id="site_down")
    await installation(any_db, "ins_ok")
    retrying: dict[str, Any] = {"status": "retrying", "result_code": "unavailable"}
    await any_db.batch([
        schedule_row(any_db, "r_late", "ins_down", **retrying, attempts=2, ready_at=NOW + 9),
        schedule_row(any_db, "r_soon", "ins_down", **retrying, attempts=1, ready_at=NOW + 1),
        schedule_row(any_db, "r_ok", "ins_ok", status="retrying", attempts=1, ready_at=NOW),
        schedule_row(any_db, "waiting", "ins_ok"),
        schedule_row(any_db, "done", "ins_ok", status="refused", attempts=1),
        attempt_row(any_db, "r_late", 1, 100, 101, "timeout", None),
        attempt_row(any_db, "r_late", 2, 200, 201, "unavailable", 503),
        attempt_row(any_db, "r_soon", 1, 150, 151, "unavailable", 503),
        attempt_row(any_db, "done", 1, 5, 6, "content_not_found", 404),
    ])  # fmt: skip
    found = history.retrying_from((await history.read_retrying(any_db).all()).results)
    assert [
        pick(r, "schedule_id installation_id site_id next_attempt_at first_try") for r in found
    ] == [
        ("r_soon", "ins_down", "site_down", NOW + 1, 150),
        ("r_late", "ins_down", "site_down", NOW + 9, 100),
        ("r_ok", "ins_ok", "site", NOW, None),
    ]
    assert found[1].last == Attempt(2, 200, 201, "unavailable", 503)
    assert found[2].last is None
    [refused] = history.refusals_from((await history.read_recent_refusals(any_db).all()).results)
    assert refused.last == Attempt(1, 5, 6, "content_not_found", 404)


# -- the manage view's and the agents' reads -------------------------------------------------


async def agenda(db: Database) -> dict[str, list[str]]:
    """Schedules of every kind, and the manage view's groups of them in order: a refused one
    dismissed or done later is finished; a pending one made stale needs attention."""
    await installation(db)
    dismiss = "dismissed_by = 'u', dismissed_by_name = 'Ada', dismissed_at = 1"
    stale = "made_stale_by = 'x', made_stale_at = 1"
    await db.batch(
        [
            schedule_row(db, "retry", status="retrying", ready_at=NOW + 2, attempts=1),
            schedule_row(db, "refused", status="refused", updated_at=NOW),
            schedule_row(db, "dismissed", status="refused", updated_at=NOW + 1),
            schedule_row(db, "redone_1", content_id="c_redo", status="refused", updated_at=5),
            schedule_row(db, "redone_2", content_id="c_redo", **DONE, revision=2, updated_at=6),
            schedule_row(db, "stale", ready_at=NOW + 1),
            schedule_row(db, "soon", ready_at=NOW),
            schedule_row(db, "running", status="running", ready_at=NOW + 3, lease_until=NOW),
            schedule_row(db, "replaced", status="superseded", updated_at=NOW + 5),
            db.prepare(f"UPDATE schedules SET {dismiss} WHERE id = 'dismissed'"),
            db.prepare(f"UPDATE schedules SET {stale} WHERE id = 'stale'"),
        ]
    )
    return {
        "attention": ["retry", "refused", "stale"],
        "upcoming": ["soon", "running"],
        "finished": ["dismissed", "redone_2", "redone_1", "replaced"],
    }


async def test_the_manage_view_pages_by_group_with_settled_refusals_among_the_finished(
    any_db: Database,
) -> None:
    groups = await agenda(any_db)
    every = await schedules.manage_page(any_db, "ins_1", None, 1)
    assert [s.id for s in every.schedules] == [sid for listed in groups.values() for sid in listed]
    assert (every.settled, every.stale, schedules.group_count(every, None)) == (2, 1, 9)
    for group, expected in groups.items():
        assert schedules.group_count(every, group) == len(expected)
        page = await schedules.manage_page(any_db, "ins_1", group, 1)
        assert [s.id for s in page.schedules] == expected
    only = await schedules.manage_page(any_db, "ins_1", "finished", 1, only="redone_1")
    assert [(s.id, s.resolved_by) for s in only.schedules] == [("redone_1", "redone_2")]
    assert (await schedules.manage_page(any_db, "ins_other", None, 1)).schedules == ()


async def test_an_agent_lists_what_its_key_reaches_filtered_and_reads_one(
    any_db: Database,
) -> None:
    await installation(any_db)
    await any_db.batch([
        *(schedule_row(any_db, f"s{n}", content_id="cnt_1", ready_at=NOW + n, **DONE, revision=n)
          for n in range(1, 4)),
        schedule_row(any_db, "other", content_id="cnt_2", ready_at=NOW - 1, status="retrying"),
        schedule_row(any_db, "refused", content_id="cnt_3", status="refused", ready_at=NOW + 9),
        attempt_row(any_db, "other", 1, 1, 2, "timeout", None),
    ])  # fmt: skip
    every, more = await agents_module.listing(any_db, "ins_1", agents_module.Filters())
    assert ([s.id for s in every], more) == (["other", "s1", "s2", "s3", "refused"], False)
    assert every[0].attempts == (Attempt(1, 1, 2, "timeout", None),)
    two, more = await agents_module.listing(any_db, "ins_1", agents_module.Filters(), limit=2)
    assert ([s.id for s in two], more) == (["other", "s1"], True)
    for filters, expected in [
        (agents_module.Filters(content_id="cnt_1", due_from=NOW + 1, due_to=NOW + 2), ["s1"]),
        (agents_module.Filters(needs_attention=True), ["other", "refused"]),
        (agents_module.Filters(status="refused"), ["refused"]),
    ]:
        found, _ = await agents_module.listing(any_db, "ins_1", filters)
        assert [s.id for s in found] == expected
    assert await agents_module.listing(any_db, "ins_2", agents_module.Filters()) == ([], False)
    read = await present(agents_module.one(any_db, "ins_1", "other"))
    assert (read.status, read.attempts) == ("retrying", (Attempt(1, 1, 2, "timeout", None),))
    assert await agents_module.one(any_db, "ins_2", "other") is None


# -- throttles: calls counted by key for a minute --------------------------------------------


async def test_a_throttle_takes_calls_within_its_minute_and_at_once_and_says_the_wait(
    any_db: Database,
) -> None:
    limit = CallLimit(per_minute=2, at_once=1, hold_ms=10_000)
    first = await installations.take(any_db, "test:usr_1 ✓", limit, "t1", NOW)
    assert first == installations.Taken("test:usr_1 ✓", "t1")
    assert await installations.take(any_db, "test:usr_1 ✓", limit, "t2", NOW + 1) == 9_999  # busy
    assert isinstance(
        await installations.take(any_db, "test:other", limit, "t9", NOW), installations.Taken
    )
    await installations.release(any_db, first, NOW + 2)
    second = await installations.take(any_db, "test:usr_1 ✓", limit, "t2", NOW + 3)
    assert isinstance(second, installations.Taken)
    await installations.release(any_db, second, NOW + 4)
    assert await installations.take(any_db, "test:usr_1 ✓", limit, "t3", NOW + 5) == WINDOW_MS - 5
    await installations.give_back(any_db, second)  # not made after all: it does not count
    third = await installations.take(any_db, "test:usr_1 ✓", limit, "t3", NOW + 6)
    assert isinstance(third, installations.Taken)
    # A minute on, the calls of the minute before are gone, every key's.
    later = await installations.take(any_db, "test:usr_1 ✓", limit, "t4", NOW + 6 + WINDOW_MS)
    assert isinstance(later, installations.Taken)
    assert await values(any_db, "SELECT key, token FROM throttle_slots") == [("test:usr_1 ✓", "t4")]


# -- retention: what ended before the cutoff, in bounded steps -------------------------------


async def test_retention_purges_what_ended_before_the_cutoff_in_bounded_steps(
    any_db: Database,
) -> None:
    async def step(cutoff: int, bound: int) -> history.Purged:
        return history.purged(await any_db.batch(history.step(any_db, cutoff, bound)))

    assert await step(NOW, 10) == history.Purged(0, 0, 0)
    await installation(any_db)
    await endpoint(any_db)
    ended = ("completed", "refused", "cancelled", "superseded")
    await any_db.batch([
        *(schedule_row(any_db, f"old_{s}", status=s, updated_at=NOW - 1) for s in ended),
        schedule_row(any_db, "kept", status="completed", updated_at=NOW),
        schedule_row(any_db, "live", updated_at=0),
        *(attempt_row(any_db, s, n) for s in ("old_completed", "kept", "live") for n in (1, 2)),
    ])  # fmt: skip
    for n in range(3):
        await delivery(any_db, f"gone_{n}", status="delivered", at=NOW - 1)
    await delivery(any_db, "kept", status="failed", at=NOW)
    await delivery(any_db, "waits", at=0)
    first = await step(NOW, 2)
    assert (first.deliveries, first.attempts + first.schedules <= 4) == (2, True)
    while (purged := await step(NOW, 2)) != history.Purged(0, 0, 0):
        assert max(purged.attempts, purged.schedules, purged.deliveries) <= 2
    assert await values(any_db, "SELECT id FROM schedules ORDER BY id") == [("kept",), ("live",)]
    attempts = "SELECT schedule_id, count(*) FROM schedule_attempts GROUP BY 1 ORDER BY 1"
    assert await values(any_db, attempts) == [("kept", 2), ("live", 2)]
    kept = await values(any_db, "SELECT id FROM webhook_deliveries ORDER BY id")
    assert kept == [("kept",), ("waits",)]


async def test_retention_purges_what_agents_made_once_ended(any_db: Database) -> None:
    """Keys ended (expired, revoked) and proposals ended unconfirmed (declined, withdrawn,
    past their time) before the agents' cutoff go; a confirmed proposal goes with its
    schedule, before the retention's cutoff; what is live stays."""
    await installation(any_db)
    for kid, expires in (("key_expired", NOW - 2), ("key_revoked", NOW + MINUTE), ("key", NOW + 1)):
        await installations.insert_key(any_db, agent_key(kid, expires_at=expires), f"h_{kid}")
    await installations.revoke(any_db, "ins_1", "key_revoked", NOW - 1)
    for pid, due in (("declined", NOW + 9), ("withdrawn", NOW + 9), ("expired", NOW - 1)):
        await agents_module.insert_proposal(any_db, proposal(pid, due_at=due), b"{}")
    await agents_module.insert_proposal(
        any_db, proposal("waiting", due_at=NOW - 1 + 10 * MINUTE), b"{}"
    )
    await agents_module.insert_proposal(any_db, proposal("confirmed", due_at=NOW + 9), b"{}")
    await agents_module.insert_proposal(any_db, proposal("recent", due_at=NOW + 9), b"{}")
    await agents_module.decide(any_db, "ins_1", "declined", agents_module.DECLINED, NOW - 5)
    await agents_module.decide(any_db, "ins_1", "withdrawn", agents_module.WITHDRAWN, NOW - 5)
    await agents_module.decide(any_db, "ins_1", "recent", agents_module.WITHDRAWN, NOW)
    by = {"schedule_id": "s_done", "by_name": ADA}
    await agents_module.decide(any_db, "ins_1", "confirmed", agents_module.CONFIRMED, NOW - 5, **by)
    await schedule(any_db, "s_done", status="completed", updated_at=NOW + 5)

    async def step(cutoff: int, agents: int) -> history.Purged:
        return history.purged(await any_db.batch(history.step(any_db, cutoff, 2, agents)))

    first = await step(NOW - 60 * MINUTE, NOW)  # the schedule is within the retention: kept
    assert (first.proposals, first.agent_keys) == (2, 2)  # two of each kind at most
    while (purged := await step(NOW - 60 * MINUTE, NOW)) != history.Purged(0, 0, 0):
        assert max(purged.proposals, purged.agent_keys) <= 2
    left = "SELECT id FROM proposals ORDER BY id"
    assert await values(any_db, left) == [("confirmed",), ("recent",), ("waiting",)]
    assert await values(any_db, "SELECT id FROM agent_keys") == [("key",)]
    assert (await step(NOW + 60 * MINUTE, NOW)).proposals == 1  # with its schedule, at last
    assert await values(any_db, left) == [("recent",), ("waiting",)]
    assert await values(any_db, "SELECT id FROM schedules") == []


# -- plans: every read by index, on CPython's SQLite and on D1's (a newer one) ----------------
#
# A fresh, never-analysed database, as a new D1 is, and one analysed while it holds mostly
# history: the planner must still pick the partial indexes, so that the cost (and D1's
# rows-read bill) follows live rows, the day's activity and 7 days of history, never the
# tables' size. The statements take the most rows D1 binds (100 parameters).


async def plan(db: Database, sql: str, params: Sequence[object]) -> list[str]:
    found = await db.prepare("EXPLAIN QUERY PLAN " + sql).bind(*params).all()
    return [str(row["detail"]) for row in found.results]


def listed(width: int, fixed: int = 0, rows: int = 20) -> tuple[str, list[int]]:
    """A `{values}` list of `width`-wide rows after `fixed` parameters (100 at most), bound."""
    rows = min(rows, (100 - fixed) // width) if width else rows
    values = ", ".join(
        "(" + ", ".join(f"?{fixed + i * width + j + 1}" for j in range(width)) + ")"
        for i in range(rows)
    )
    return values, [0] * (fixed + rows * width)


def table_reads(steps: list[str]) -> list[str]:
    """The steps that read a table: not the VALUES lists the batch statements are given."""
    lists = ("SCAN seen", "SCAN done", "SCAN sent", "SCAN unsent")
    reads = [s for s in steps if s.startswith(("SCAN", "SEARCH")) and not s.startswith(lists)]
    return [s for s in reads if "CONSTANT ROW" not in s and "VALUES CLAUSE" not in s]


@pytest.mark.parametrize(
    ("sql", "params"),
    [(DUE_SQL, (0, 20, '["ins_x"]', 6)), (BACKLOG_SQL, (0,)), (COUNTS_SQL, (0,))],
    ids=["runner due rows", "status backlog", "status counts"],
)
async def test_runner_and_status_queries_read_only_the_partial_indexes(
    any_db: Database, sql: str, params: tuple[int, ...]
) -> None:
    steps = await plan(any_db, sql, params)
    reads = [step for step in steps if step.startswith(("SCAN schedules", "SEARCH schedules"))]
    assert reads, steps
    # A release's queued items are counted through the live rows' own index.
    partial = ("schedules_waiting", "schedules_leased", "schedules_finished", "schedules_one_live")
    assert all(any(f"INDEX {name}" in step for name in partial) for step in reads), steps


@pytest.mark.parametrize(
    ("sql", "width", "fixed"),
    [
        (CLAIM_SQL, 4, 4),
        (REFUSE_UNSENT_SQL, 7, 2),
        (SETTLE_SQL, 6, 3),
        (FINISH_ATTEMPTS_SQL, 6, 0),
        (DROP_ATTEMPTS_SQL, 2, 0),
    ],
    ids=["claim", "refuse unsent", "settle", "finish attempts", "drop attempts"],
)
async def test_batch_statements_find_each_row_by_key_never_by_scan(
    any_db: Database, sql: str, width: int, fixed: int
) -> None:
    values, params = listed(width, fixed)
    steps = await plan(any_db, sql.format(values=values), params)
    assert table_reads(steps), steps
    assert all(step.startswith("SEARCH") for step in table_reads(steps)), steps


async def test_a_capped_claim_counts_live_claims_by_index_before_it_changes_a_row(
    any_db: Database,
) -> None:
    """Candidates and live claims are materialised first; each count reads running rows by index."""
    values, params = listed(4, 5)
    steps = await plan(any_db, CLAIM_WITHIN_SQL.format(values=values), params)
    assert "MATERIALIZE pick" in steps, steps
    by_installation = "INDEX schedules_running_by_installation"
    assert any(s.startswith("SEARCH busy USING") and by_installation in s for s in steps), steps
    busy = await plan(any_db, BUSY_SQL, [0, '["ins_a"]'])
    assert any(by_installation in s for s in busy), busy


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        (CLAIM_DELIVERIES_SQL, ["t", 1, 0, 20, '["chat"]']),
        (CLAIM_NAMED_SQL, ["t", 1, 0, 20, '["chat"]', '["msg_a_whe_b"]']),
        (NEXT_MESSAGE_SQL, ["t", 1, 0, '{"chat":60000}']),
        (CLAIMED_ENDPOINTS_SQL, ["t", 1]),
        (CLAIMED_TITLES_SQL, ["t", 1, '{"chat":10}']),
        (
            SETTLE_DIGESTS_SQL.format(values="(?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
            ["t", 1, "whe_b", "delivered", None, 1, 1, 204, None, 0],
        ),
    ],
    ids=["claim", "claim named", "chat minute", "endpoints", "titles", "settle a digest"],
)
async def test_the_outbox_reads_only_its_partial_indexes_and_keys(
    any_db: Database, sql: str, params: list[object]
) -> None:
    """Claims read the partial indexes; what is read back is found by lease, not by endpoint."""
    steps = await plan(any_db, sql, params)
    deliveries = ("SCAN webhook_deliveries", "SEARCH webhook_deliveries", "SCAN d", "SEARCH d")
    assert [s for s in steps if s.startswith(deliveries)], steps
    assert not any(s.startswith(("SCAN webhook_deliveries", "SCAN d ")) for s in steps), steps
    assert not any("webhook_deliveries_by_endpoint" in s for s in steps), steps


HISTORY_HEAVY = (
    """WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < 30)
    INSERT INTO installations (id, site_id, base_url, token_sealed, created_at,
        token_rotated_at, last_sent_at)
    SELECT 'ins_' || i, 's', 'https://cms.example', 'x', 0, 0, i FROM n""",
    """WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < 3000)
    INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,
        workflow_revision, revision, idempotency_key, due_at, timezone, local_time, status,
        result_code, next_attempt_at, requested_by, requested_by_name, created_at,
        updated_at)
    SELECT 'sch_' || i, 'ins_' || (i % 30), 'cnt_' || i, 'publish', 'published', 'v', 1, 1,
           'k' || i, i, 'UTC', 'x',
           CASE WHEN i % 100 = 0 THEN 'pending' WHEN i % 10 = 1 THEN 'refused'
                ELSE 'completed' END,
           CASE WHEN i % 100 = 0 THEN NULL ELSE 'transition_applied' END,
           CASE WHEN i % 100 = 0 THEN i END, 'usr', 'Ada', i, i
      FROM n""",
    "ANALYZE",
)  # 3,000 schedules of 30 installations, 1 in 100 live, then ANALYZE
TABLES = frozenset(
    {"schedules", "schedule_attempts", "installations", "tick_history", "runner_totals"}
    | {"webhook_deliveries", "sessions", "s", "i", "proposals", "agent_keys"}
)


OPERATOR_READS: dict[str, tuple[str, Sequence[object]]] = {
    "healthz": (history.HEALTH_SQL, (0, history.NEWEST_MIGRATION)),
    "the backstop's last tick": (history.LATEST_TICK_SQL, ()),
    "last tick": (history.LAST_TICK_SQL, ()),
    "live counts": (LIVE_COUNTS_SQL, ()),
    "history window": (history.SERIES_SQL, (0, 1, 600_000)),
    "latest refusals": (history.RECENT_REFUSALS_SQL, ()),
    "installations": (history.INSTALLATIONS_SQL, (0,)),
    "will try again": (history.RETRYING_SQL, ()),
    "history row": (history.INSERT_SQL, (0,) * (5 + len(history.REPORT_COLUMNS))),
    "totals": (history.ADD_TOTALS_SQL, ('{"ticks:tick": 1}',)),
    "pruning": (history.PRUNE_SQL, (0,)),
    "last send": (LAST_SENT_SQL.format(values=listed(2)[0]), listed(2)[1]),
    "retention: attempts": (history.EXPIRED_ATTEMPTS_SQL, (0, 500)),
    "retention: schedules": (history.EXPIRED_SCHEDULES_SQL, (0, 500)),
    "retention: deliveries": (history.EXPIRED_DELIVERIES_SQL, (0, 500)),
    "retention: confirmed proposals": (history.EXPIRED_PROPOSALS_SQL, (0, 500)),
    "retention: ended proposals": (history.ENDED_PROPOSALS_SQL, (0, 500)),
    "retention: ended agent keys": (history.ENDED_KEYS_SQL, (0, 500)),
    "proposals agents made": (agents_module.MADE_SQL, ("ins_1", 0, 0, "usr_1")),
    "a session, its installation gone or not": (installations.FIND_LIVE_SQL, ("h", 0)),
    "a clock's next due": (NEXT_DUE_SQL, ("ins_1",)),
    "the clocks' wake-ups": (WAKE_UPS_SQL, (0,)),
}


@pytest.mark.parametrize(("sql", "params"), OPERATOR_READS.values(), ids=OPERATOR_READS)
@pytest.mark.parametrize("analysed", [False, True], ids=["never analysed", "analysed"])
async def test_the_operator_reads_and_the_tick_record_find_rows_by_index_never_by_scan(
    any_db: Database, sql: str, params: tuple[object, ...], analysed: bool
) -> None:
    """/healthz, /admin/metrics, /admin, the tick's write and the clocks' wake-ups: every read
    of a table goes through an index (a partial one of live rows for schedules). The totals
    table is read whole: one row per counter series (a fixed set,
    tests/test_operator_history.py counts them), never more."""
    if analysed:
        # Statistics of a table that is mostly history: the planner then prefers whole-index
        # scans that avoid a sort, unless a statement pins its partial index.
        await any_db.batch([any_db.prepare(sql) for sql in HISTORY_HEAVY])
    steps = await plan(any_db, sql, params)
    reads = [s for s in table_reads(steps) if s.split()[1] in TABLES]
    live_indexes = ["schedules_one_live", "schedules_waiting", "schedules_leased"]
    live_indexes += ["schedules_waiting_by_installation", "schedules_running_by_installation"]
    for step in reads:
        if step == "SCAN runner_totals":
            continue
        if step.startswith("SCAN schedules"):  # only a partial index of live rows, whole
            assert any(step.endswith(f"INDEX {name}") for name in live_indexes), steps
        assert " USING " in step, steps
        assert any(used in step for used in ("INDEX", "INTEGER PRIMARY KEY", "PRIMARY KEY")), steps
    if sql is history.HEALTH_SQL:
        assert "SEARCH tick_history USING COVERING INDEX tick_history_ok (kind=?)" in steps
        assert all("schedules_waiting" in s or "schedules_leased" in s for s in reads[1:]), steps


# -- what is kept about a person: a launch's handle and news, the calendar, the feed ----------

DAY = 86_400_000


async def test_a_launch_keeps_its_handle_and_the_previous_launch_for_its_first_page_once(
    any_db: Database,
) -> None:
    await installation(any_db)
    first = await open_session(any_db, "h1", now=NOW, **MANAGE)
    assert (first.tab, first.news_since) == ("t_h1", None)  # never launched before
    assert first.href("/calendar", [("zone", "Europe/Paris")]) == (
        "/installations/ins_1/calendar?tab=t_h1&zone=Europe%2FParis"
    )
    second = await open_session(any_db, "h2", now=NOW + 5, **MANAGE)
    assert second.news_since == NOW
    assert await column(any_db, "SELECT launched_at FROM people") == [NOW + 5]
    assert await installations.take_news_since(any_db, second) == NOW
    assert await installations.take_news_since(any_db, second) is None  # a second page at once
    assert (
        await present(installations.find_live_session(any_db, "h2", NOW + 5))
    ).news_since is None
    other = await open_session(any_db, "h3", now=NOW + 6, person_id="usr_2", **MANAGE)
    assert other.news_since is None  # each person their own


async def test_the_news_is_the_persons_schedules_that_ended_or_went_stale_since(
    any_db: Database,
) -> None:
    await installation(any_db)
    ended: dict[str, Any] = {"status": "completed", "updated_at": NOW + 1}
    await schedule_row(any_db, "s_done", **ended, title_sealed="sealed-title").run()
    refused: dict[str, Any] = {"status": "refused", "kind": "unpublish"}
    await schedule_row(any_db, "s_refused", **refused, updated_at=NOW + 3).run()
    await schedule_row(any_db, "s_before", status="completed", updated_at=NOW - 1).run()
    await schedule_row(any_db, "s_other", **ended, requested_by="usr_2").run()
    stale: dict[str, Any] = {"made_stale_by": "s_done", "made_stale_at": NOW + 2}
    await schedule_row(any_db, "s_stale", **stale).run()
    await schedule_row(any_db, "s_waiting").run()
    found = await people.news(any_db, "ins_1", "usr_1", NOW, 10)
    assert [x.schedule.id for x in found] == ["s_refused", "s_stale", "s_done"]
    assert found[2].title_sealed == "sealed-title"
    latest = await people.news(any_db, "ins_1", "usr_1", NOW, 1)
    assert [x.schedule.id for x in latest] == ["s_refused"]


async def test_the_calendar_reads_live_changes_in_a_span_in_time_order_by_index(
    any_db: Database,
) -> None:
    await installation(any_db)
    for n, status in enumerate(("pending", "retrying", "running", "completed", "cancelled")):
        due = NOW + (5 - n) * DAY
        await schedule_row(any_db, f"s{n}", status=status, ready_at=due, lease_until=NOW).run()
    await schedule_row(any_db, "s_late", ready_at=NOW + 30 * DAY).run()
    found = await people.waiting(any_db, "ins_1", NOW, NOW + 10 * DAY, 10)
    assert [x.schedule.id for x in found] == ["s2", "s1", "s0"]
    first_two = await people.waiting(any_db, "ins_1", NOW, MAX_STORED_INTEGER, 2)
    assert [x.schedule.id for x in first_two] == ["s2", "s1"]
    reads = table_reads(await plan(any_db, people.WAITING_SQL, ("ins_1", 0, 1, 1)))
    assert reads[0] == "SEARCH schedules USING INDEX schedules_one_live (installation_id=?)"
    assert all("INDEX" in read for read in reads), reads


async def test_a_feed_is_found_by_its_hash_while_its_person_keeps_launching(
    any_db: Database,
) -> None:
    await installation(any_db, token_rotated_at=NOW - 5)
    await open_session(any_db, "h1", now=NOW, **MANAGE)
    assert await people.feed_made_at(any_db, "ins_1", "usr_1") is None
    await people.set_feed(any_db, "ins_1", "usr_1", "hash-1", NOW + 1, whole=True)
    assert await people.feed_made_at(any_db, "ins_1", "usr_1") == NOW + 1
    found = await present(people.find_feed(any_db, "hash-1", NOW + 2))
    assert pick(found, "installation_id person_id whole live") == ("ins_1", "usr_1", True, True)
    limit = NOW + people.FEED_DAYS * DAY
    assert (await present(people.find_feed(any_db, "hash-1", limit - 1))).live
    assert not (await present(people.find_feed(any_db, "hash-1", limit))).live  # 30 days on
    await open_session(any_db, "h2", now=NOW + DAY, **MANAGE)  # a launch renews it
    assert (await present(people.find_feed(any_db, "hash-1", limit))).live
    await people.set_feed(any_db, "ins_1", "usr_1", "hash-2", NOW + 3)  # a new address
    assert await people.find_feed(any_db, "hash-1", NOW + 4) is None
    assert not (await present(people.find_feed(any_db, "hash-2", NOW + 4))).whole
    # A person without a launch recorded (a session from before) gets their row made.
    await people.set_feed(any_db, "ins_1", "usr_9", "hash-9", NOW + 7)
    assert (await present(people.find_feed(any_db, "hash-9", NOW + 8))).live
    await installations.mark_unauthorized(any_db, "ins_1", NOW + DAY + 1)  # uninstalled
    assert not (await present(people.find_feed(any_db, "hash-2", NOW + DAY + 2))).live
    await people.set_feed(any_db, "ins_1", "usr_1", None, NOW + 5)  # revoked
    assert await people.find_feed(any_db, "hash-2", NOW + 6) is None
    assert await people.feed_made_at(any_db, "ins_1", "usr_1") is None


async def test_a_launch_forgets_people_past_the_window_and_delete_data_takes_them_all(
    any_db: Database,
) -> None:
    await installation(any_db)
    await installation(any_db, "ins_2")
    for n in range(101):  # of any installation, a hundred at a time
        made = {"installation_id": "ins_2", "person_id": f"old{n}", "launched_at": n}
        await insert(any_db, "people", **made).run()
    await insert(any_db, "people", installation_id="ins_2", person_id="kept", launched_at=NOW).run()
    await open_session(any_db, "h1", forget_before=NOW - DAY, **MANAGE)
    left = ["kept", "old100", "usr_1"]  # a hundred forgotten at once
    assert sorted(await column(any_db, "SELECT person_id FROM people")) == left
    reads = table_reads(await plan(any_db, installations.FORGET_PEOPLE_SQL, (0,)))
    assert "SEARCH people USING COVERING INDEX people_by_launch (launched_at<?)" in reads
    assert all(" USING " in read for read in reads), reads
    await open_session(any_db, "h2", now=NOW, **MANAGE)  # forget_before 0: nobody
    assert await column(any_db, "SELECT count(*) FROM people") == [3]
    assert await installations.delete_all_data(any_db, "ins_1")
    assert await column(any_db, "SELECT installation_id FROM people") == ["ins_2", "ins_2"]


# -- releases: their items written through the schedules' create, their line kept by the
# database (migration 0021's triggers), the pages' changes, the events of a settle ----------


async def a_release(db: Database, rid: str = "rel_1", items: int = 3, **release: Any) -> list[str]:
    """A waiting release due at NOW of `items` publishes, each of its own content, written
    as the content page's form writes them (the release first, in the batch of its first)."""
    made = Release(rid, "ins_1", "Launch ✨", NOW, "UTC", "2026-06-01T09:00", None,
                   ReleaseStatus.WAITING, "usr_1", ADA, 0, 0)  # fmt: skip
    made = replace(made, **release)
    rows = [
        new_schedule(f"{rid}_i{n}", content_id=f"cnt_{rid}_{n}", due_at=NOW, release_id=rid)
        for n in range(items)
    ]
    await schedules.create_all(db, rows[:1], 0, first=[releases.insert(db, made)])
    for n, row in enumerate(rows[1:], start=1):
        await schedules.create_all(db, [row], n)  # appended, each at the end
    return [row.id for row in rows]


async def line(db: Database, rid: str = "rel_1") -> list[tuple[Any, ...]]:
    return await values(
        db,
        "SELECT id, status, release_position, next_attempt_at, result_code FROM schedules"
        " WHERE release_id = ? ORDER BY release_position, created_at, rowid",
        rid,
    )


async def ended(db: Database, sid: str, status: str, code: str, at: int) -> None:
    """The head ends as a settle ends it (a runner's claim first, as the runner does)."""
    claim = db.prepare(
        "UPDATE schedules SET status = 'running', next_attempt_at = NULL, lease_token = 'l',"
        " lease_until = ?2 WHERE id = ?1"
    ).bind(sid, at + LEASE_MS)
    settle = db.prepare(
        "UPDATE schedules SET status = ?2, result_code = ?3, lease_token = NULL,"
        " lease_until = NULL, updated_at = ?4 WHERE id = ?1"
    ).bind(sid, status, code, at)
    await db.batch([claim, settle])


async def test_a_release_sends_its_items_one_at_a_time_and_completes_with_its_last(
    any_db: Database,
) -> None:
    await installation(any_db)
    a, b, c = await a_release(any_db)
    assert await line(any_db) == [
        (a, "pending", 1, NOW, None), (b, "queued", 2, None, None), (c, "queued", 3, None, None),
    ]  # fmt: skip
    found = await present(releases.get(any_db, "ins_1", "rel_1"))
    assert pick(found, "name status items live stale") == ("Launch ✨", "waiting", 3, 3, 0)
    assert found.shown(NOW - 1) == "waiting"
    assert found.shown(NOW) == "running"
    await ended(any_db, a, "completed", "transition_applied", NOW + 7)
    # Due at once (its time has passed), keeping its due_at for the lateness cap.
    assert (await line(any_db))[1] == (b, "pending", 2, NOW + 7, None)
    await ended(any_db, b, "completed", "transition_applied", NOW + 9)
    await ended(any_db, c, "completed", "idempotent_replay", NOW + 11)
    done = await one(any_db, "SELECT status, ended_at, held_by FROM releases")
    assert done == {"status": "completed", "ended_at": NOW + 11, "held_by": None}


async def test_an_item_not_done_holds_the_rest_and_the_release(any_db: Database) -> None:
    await installation(any_db)
    a, b, c = await a_release(any_db)
    await ended(any_db, a, "refused", "scheduled_target_stale", NOW + 3)
    assert [r[1:] for r in await line(any_db)] == [
        ("refused", 1, None, "scheduled_target_stale"),
        ("held", 2, None, "release_held"), ("held", 3, None, "release_held"),
    ]  # fmt: skip
    held = await one(any_db, "SELECT status, held_by, held_code, held_at FROM releases")
    assert held == {"status": "held", "held_by": a, "held_code": "scheduled_target_stale",
                    "held_at": NOW + 3}  # fmt: skip
    assert (await present(releases.get(any_db, "ins_1", "rel_1"))).live == 0
    # Resumed: the rest made again now, in order, the first of them due.
    made = await present(releases.get(any_db, "ins_1", "rel_1"))
    again = [
        new_schedule(f"{sid}x", content_id=f"cnt_rel_1_{n}", due_at=NOW + 20, release_id="rel_1",
                     release_position=n + 1, replaces=sid, replaced_as="resumed")
        for n, sid in enumerate((a, b, c))
    ]  # fmt: skip
    await schedules.create_all(
        any_db, again, NOW + 20, first=[releases.resumed(any_db, made, NOW + 20)]
    )
    fresh = [r for r in await line(any_db) if r[0].endswith("x")]
    assert [r[1] for r in fresh] == ["pending", "queued", "queued"]
    state = await one(any_db, "SELECT status, held_by FROM releases")
    assert state == {"status": "waiting", "held_by": None}
    page = await releases.items(any_db, "ins_1", "rel_1")
    assert [s.id for s in page.schedules] == [f"{a}x", f"{b}x", f"{c}x"]  # each place's latest


async def test_a_hold_at_claim_ends_the_head_held_and_holds_the_rest(
    any_db: Database, leases: Leases
) -> None:
    await installation(any_db)
    a, b, c = await a_release(any_db)
    [row] = await leases.due(NOW, 20)
    assert (row.id, row.leads) == (a, True)
    assert row.release is not None
    assert (row.release.name, row.release.applied, row.release.behind) == ("Launch ✨", (), (b, c))
    unsent = [(row, "held_conflict", None)]
    assert await leases.claim([], unsent, "lease", NOW, LEASE_MS) == ([], [a])
    assert [r[1] for r in await line(any_db)] == ["held", "held", "held"]
    found = await one(any_db, "SELECT status, held_by, held_code FROM releases")
    assert found == {"status": "held", "held_by": a, "held_code": "held_conflict"}


async def test_a_release_takes_no_item_once_it_ended_or_is_full_and_changes_nothing(
    any_db: Database,
) -> None:
    await installation(any_db)
    a, *_ = await a_release(any_db, items=2)
    extra = new_schedule("more", content_id="cnt_more", release_id="rel_1")
    with pytest.raises(schedules.ReleaseClosed):
        await schedules.create_all(any_db, [extra], NOW, max_items=2)
    # A change already waiting outside it is not replaced by the refused one.
    await schedules.create(any_db, new_schedule("alone", content_id="cnt_more"), NOW)
    with pytest.raises(schedules.ReleaseClosed):
        await schedules.create_all(any_db, [replace(extra, id="more2")], NOW, max_items=2)
    assert await column(any_db, "SELECT status FROM schedules WHERE id = 'alone'") == ["pending"]
    made = await present(releases.get(any_db, "ins_1", "rel_1"))
    assert await releases.cancel(any_db, made, [a], whole=True, person=("u", ADA), now=NOW) == [a]
    assert [r[1] for r in await line(any_db)] == ["cancelled", "queued"]  # none moved meanwhile
    with pytest.raises(schedules.ReleaseClosed):
        await schedules.create_all(any_db, [replace(extra, id="more3")], NOW)


async def test_a_repinned_head_comes_back_at_its_place_and_a_reorder_moves_the_head(
    any_db: Database,
) -> None:
    await installation(any_db)
    a, b, c = await a_release(any_db, due_at=MAX_STORED_INTEGER)
    repinned = new_schedule("a2", content_id="cnt_rel_1_0", release_id="rel_1",
                            release_position=1, replaces=a, replaced_as="repinned")  # fmt: skip
    assert await schedules.create_all(any_db, [repinned], NOW) == [a]
    assert [r[:3] for r in await line(any_db)] == [
        (a, "superseded", 1), ("a2", "pending", 1), (b, "queued", 2), (c, "queued", 3),
    ]  # fmt: skip
    made = await present(releases.get(any_db, "ins_1", "rel_1"))
    assert await releases.reorder(any_db, made, [b, "a2", c], NOW)
    assert [r[:3] for r in await line(any_db) if r[0] != a] == [
        (b, "pending", 1), ("a2", "queued", 2), (c, "queued", 3),
    ]  # fmt: skip
    await releases.record_check(any_db, made, {b: "version_moved", c: None}, ADA, NOW)
    checked = await present(releases.get(any_db, "ins_1", "rel_1"))
    assert pick(checked, "stale checked_at checked_by_name") == (1, NOW, ADA)
    assert checked.shown(NOW) == "conflict"
    assert await releases.rename(any_db, made, "Later", NOW)
    listed = await releases.of_installation(any_db, "ins_1")
    assert [(r.id, r.name) for r in listed] == [("rel_1", "Later")]


async def test_a_settle_writes_a_releases_notice_only_when_its_line_moved_so(
    any_db: Database, leases: Leases
) -> None:
    await installation(any_db)
    await endpoint(any_db, events=("release.held", "release.completed"))
    a, b, _ = await a_release(any_db)
    won, _ = await leases.claim(await leases.due(NOW, 20), [], "l", NOW, LEASE_MS)
    [claim] = won
    completed = OutboxEvent("msg_c", a, "release.completed", b"{}")  # a guess: it was not
    await leases.settle("l", [replace(done(claim, at=NOW), release_event=completed)], NOW + 1)
    assert await rows(any_db, "SELECT id FROM webhook_deliveries") == []
    won, _ = await leases.claim(await leases.due(NOW + 1, 20), [], "m", NOW + 1, LEASE_MS)
    held = OutboxEvent("msg_h", b, "release.held", b"{}")
    ending = Settlement(Status.REFUSED, "workflow_conflict", None)
    refused = SettledClaim(won[0], ending, None, release_event=held)
    await leases.settle("m", [refused], NOW + 2)
    assert await column(any_db, "SELECT id FROM webhook_deliveries") == ["msg_h_whe_1"]


async def test_the_purge_takes_an_ended_release_with_its_items_never_a_waiting_ones(
    any_db: Database,
) -> None:
    await installation(any_db)
    a, b = await a_release(any_db, "rel_1", items=2)
    c, _ = await a_release(any_db, "rel_2", items=2)
    for sid in (a, b, c):
        await ended(any_db, sid, "completed", "transition_applied", 5)
    results = await any_db.batch(history.step(any_db, 100, 100))
    assert history.purged(results).schedules == 2  # rel_1's; rel_2 still waits (its 2nd)
    assert await column(any_db, "SELECT id FROM releases") == ["rel_2"]
    assert await column(any_db, "SELECT id FROM schedules ORDER BY id") == [c, "rel_2_i1"]
    await installations.delete_all_data(any_db, "ins_1")
    assert await rows(any_db, "SELECT id FROM releases") == []

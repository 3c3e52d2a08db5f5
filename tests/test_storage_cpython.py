"""The CPython adapters keep D1's and WebCrypto's contracts: migrations as wrangler applies
them, WebCrypto's sealing, and the plans SQLite makes of the store's statements (what the
store's statements do, on SQLite and on D1 alike, is tests/test_store_contract.py's)."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from scheduling.domain.statuses import FINISHED, LIVE, WAITING, Status, sql_list
from scheduling.ports import UnreadableSecret
from scheduling.repository import (
    lease_sql,
    operator_queries,
    outbox_sql,
    retention,
    sessions,
    tick_history,
)
from scheduling.repository.backlog import BACKLOG_SQL, COUNTS_SQL, LIVE_COUNTS_SQL
from scheduling.repository.lease_sql import DUE_SQL
from scheduling.runtimes.cpython.crypto import CpythonCrypto
from scheduling.runtimes.cpython.migrations import (
    MIGRATIONS_DIR,
    MigrationsMissing,
    apply_migrations,
)
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase


def test_migrations_apply_once_and_are_recorded_like_wrangler(tmp_path: Path) -> None:
    # A database made before 0002 existed: only the new files are applied on upgrade.
    first = tmp_path / "first"
    first.mkdir()
    shutil.copy(MIGRATIONS_DIR / "0001_initial.sql", first)
    database = SqliteDatabase(tmp_path / "plugin.sqlite3")
    assert apply_migrations(database.connection, first) == ["0001_initial.sql"]
    later = sorted(path.name for path in MIGRATIONS_DIR.glob("*.sql"))[1:]
    assert {
        "0002_runner_status.sql",
        "0005_notifications.sql",
        "0006_queue_fanout.sql",
        "0007_tick_history.sql",
    } <= set(later)
    assert apply_migrations(database.connection) == later
    assert apply_migrations(database.connection) == []
    names = [r[0] for r in database.connection.execute("SELECT name FROM d1_migrations")]
    assert names == ["0001_initial.sql", *later]
    database.close()


def test_0018_lets_any_registered_kind_in_and_renames_the_delivery_counters(
    tmp_path: Path,
) -> None:
    """A database migrated to 0017 with a chat endpoint, its subscription and a delivery,
    and the `webhook_` totals: 0018 keeps every row and the index, the keys still hold, the
    table no longer lists the kinds, and the counters continue under their new names."""
    before = tmp_path / "before"
    before.mkdir()
    for path in MIGRATIONS_DIR.glob("*.sql"):
        if path.name < "0018":
            shutil.copy(path, before)
    database = SqliteDatabase(tmp_path / "plugin.sqlite3")
    connection = database.connection
    apply_migrations(connection, before)
    connection.executescript(
        """INSERT INTO installations (id, site_id, base_url, token_sealed, created_at,
               token_rotated_at) VALUES ('ins_1', 'site', 'https://cms.example', 's', 0, 0);
           INSERT INTO notification_endpoints (id, installation_id, url, secret_sealed,
               created_at, secret_rotated_at, kind, next_message_at)
               VALUES ('whe_1', 'ins_1', 'chat.example …Zq9X', 'sealed', 1, 1, 'chat', 60000);
           INSERT INTO notification_subscriptions VALUES ('whe_1', 'schedule.refused');
           INSERT INTO webhook_deliveries (id, endpoint_id, installation_id, schedule_id,
               event_type, payload, created_at, status, next_attempt_at)
               VALUES ('msg_1', 'whe_1', 'ins_1', 'sch_1', 'schedule.refused', '{}', 1,
                       'waiting', 2);
           INSERT INTO runner_totals (name, value) VALUES ('webhook_events', 3),
               ('webhook_deliveries:delivered', 2), ('webhook_lost_leases', 1);"""
    )
    assert apply_migrations(connection) == ["0018_channel_kinds.sql"]
    endpoint = connection.execute("SELECT id, kind, next_message_at FROM notification_endpoints")
    assert [tuple(r) for r in endpoint] == [("whe_1", "chat", 60000)]
    assert connection.execute("SELECT count(*) FROM notification_subscriptions").fetchone()[0] == 1
    assert connection.execute("SELECT count(*) FROM webhook_deliveries").fetchone()[0] == 1
    assert list(connection.execute("PRAGMA foreign_key_check")) == []
    indexes = {r[1] for r in connection.execute("PRAGMA index_list(notification_endpoints)")}
    assert "notification_endpoints_by_installation" in indexes
    with pytest.raises(sqlite3.IntegrityError):  # what refers to it still holds it
        connection.execute("DELETE FROM notification_endpoints")
    connection.execute(  # a kind only the registry knows: the table takes it
        "INSERT INTO notification_endpoints (id, installation_id, url, secret_sealed,"
        " created_at, secret_rotated_at, kind) VALUES ('whe_2', 'ins_1', 'u', 's', 1, 1, 'pager')"
    )
    totals = connection.execute("SELECT name, value FROM runner_totals ORDER BY name")
    assert [tuple(r) for r in totals] == [
        ("deliveries:delivered", 2),
        ("delivery_events", 3),
        ("delivery_lost_leases", 1),
    ]
    columns = {r[1] for r in connection.execute("PRAGMA table_info(tick_history)")}
    assert {"delivery_sends", "deliveries_delivered"} <= columns
    assert not {c for c in columns if c.startswith("webhook")}
    database.close()


def test_0014_drops_what_only_the_queue_used_and_keeps_the_rest(tmp_path: Path) -> None:
    """A database migrated to 0013, with a queue consumer's history row and totals: 0014
    drops the column, those rows and totals, and keeps every tick and alarm as it was."""
    before = tmp_path / "before"
    before.mkdir()
    for path in MIGRATIONS_DIR.glob("*.sql"):
        if path.name < "0014":
            shutil.copy(path, before)
    database = SqliteDatabase(tmp_path / "plugin.sqlite3")
    connection = database.connection
    apply_migrations(connection, before)
    columns = [row[1] for row in connection.execute("PRAGMA table_info(tick_history)")]
    row = ", ".join("?" for _ in columns)
    for at, kind in ((1, "tick"), (2, "consumer"), (3, "alarm")):
        values = [at, kind, None, *[7] * (len(columns) - 3)]
        connection.execute(f"INSERT INTO tick_history VALUES ({row})", values)
    connection.executemany(
        "INSERT INTO runner_totals (name, value) VALUES (?, 5)",
        [("ticks:tick",), ("ticks:consumer",), ("ticks_failed:consumer",), ("ticks:alarm",)],
    )
    assert apply_migrations(connection)[0] == "0014_drop_queue_fanout.sql"
    history = connection.execute("SELECT at, kind, backlog FROM tick_history ORDER BY at")
    assert [tuple(r) for r in history] == [(1, "tick", 7), (3, "alarm", 7)]
    totals = connection.execute("SELECT name FROM runner_totals ORDER BY name")
    assert [name for (name,) in totals] == ["ticks:alarm", "ticks:tick"]
    assert "dispatched_at" not in {r[1] for r in connection.execute("PRAGMA table_info(schedules)")}
    with pytest.raises(sqlite3.IntegrityError):
        connection.execute(f"INSERT INTO tick_history VALUES ({row})", [4, "consumer", *values[2:]])
    indexes = {r[1] for r in connection.execute("PRAGMA index_list(tick_history)")}
    assert indexes == {"tick_history_at", "tick_history_ok"}
    database.close()


@pytest.mark.parametrize("made", ["nothing", "an empty folder", "a folder without .sql files"])
def test_missing_migrations_are_a_loud_error_never_none_applied(tmp_path: Path, made: str) -> None:
    directory = tmp_path / "migrations"
    if made != "nothing":
        directory.mkdir()
    if made == "a folder without .sql files":
        (directory / "README.md").write_text("not a migration")
    database = SqliteDatabase(tmp_path / "plugin.sqlite3")
    with pytest.raises(MigrationsMissing, match="no migrations in"):
        apply_migrations(database.connection, directory)
    tables = database.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    assert tables.fetchall() == []  # nothing touched, not even the bookkeeping table
    database.close()


def test_the_migrations_are_the_packages_and_wrangler_reads_the_same_folder() -> None:
    import scheduling.runtimes.cpython.migrations as module

    package = Path(module.__file__).resolve().parents[2]  # scheduling/
    assert package.name == "scheduling"
    assert package / "migrations" == MIGRATIONS_DIR
    config = (Path(__file__).resolve().parents[1] / "wrangler.example.jsonc").read_text("utf-8")
    assert '"migrations_dir": "src/scheduling/migrations"' in config
    # One copy: no .sql file anywhere else in the project's own folders.
    root = Path(__file__).resolve().parents[1]
    elsewhere = [
        path
        for folder in ("src", "fake_core", "tests", "bench", "scripts", "migrations")
        for path in (root / folder).rglob("*.sql")
        if path.parent != MIGRATIONS_DIR and "node_modules" not in path.parts
    ]
    assert elsewhere == []


async def test_crypto_seals_with_a_fresh_iv_and_binds_the_context() -> None:
    crypto = CpythonCrypto(bytes(32))
    first = await crypto.seal("dwp_secret", "installation-token:ins_1")
    second = await crypto.seal("dwp_secret", "installation-token:ins_1")
    assert first != second
    assert "dwp_secret" not in first
    assert await crypto.open(first, "installation-token:ins_1") == "dwp_secret"
    with pytest.raises(UnreadableSecret):
        await crypto.open(first, "installation-token:ins_2")
    with pytest.raises(UnreadableSecret):
        await CpythonCrypto(bytes([1]) * 32).open(first, "installation-token:ins_1")
    with pytest.raises(UnreadableSecret):
        await crypto.open("v1.AAAA", "installation-token:ins_1")


async def test_crypto_tokens_and_hashes() -> None:
    crypto = CpythonCrypto(bytes(32))
    token = crypto.random_token()
    assert len(token) == 43
    assert token != crypto.random_token()
    assert await crypto.sha256_hex("abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


@pytest.mark.parametrize(
    ("sql", "params"),
    [(DUE_SQL, (0, 20)), (BACKLOG_SQL, (0,)), (COUNTS_SQL, (0,))],
    ids=["runner due rows", "status backlog", "status counts"],
)
def test_runner_and_status_queries_read_only_the_partial_indexes(
    sql: str, params: tuple[int, ...]
) -> None:
    # A fresh, never-analysed database, as a new D1 is: the planner must still pick them.
    database = SqliteDatabase(":memory:")
    apply_migrations(database.connection)
    steps = [row[3] for row in database.connection.execute("EXPLAIN QUERY PLAN " + sql, params)]
    reads = [step for step in steps if step.startswith(("SCAN schedules", "SEARCH schedules"))]
    assert reads, steps
    partial = ("schedules_waiting", "schedules_leased", "schedules_finished")
    assert all(any(f"INDEX {name}" in step for name in partial) for step in reads), steps
    database.close()


@pytest.mark.parametrize(
    ("sql", "width", "fixed"),
    [
        (lease_sql.CLAIM_SQL, 4, 4),
        (lease_sql.REFUSE_UNSENT_SQL, 6, 2),
        (lease_sql.SETTLE_SQL, 6, 3),
        (lease_sql.FINISH_ATTEMPTS_SQL, 6, 0),
        (lease_sql.DROP_ATTEMPTS_SQL, 2, 0),
        (lease_sql.OPEN_ATTEMPTS_SQL, 0, 3),
    ],
    ids=["claim", "refuse unsent", "settle", "finish attempts", "drop attempts", "open attempts"],
)
def test_batch_statements_find_each_row_by_key_never_by_scan(
    sql: str, width: int, fixed: int
) -> None:
    database = SqliteDatabase(":memory:")
    apply_migrations(database.connection)
    rows = 20
    values = ", ".join(
        "(" + ", ".join(f"?{fixed + i * width + j + 1}" for j in range(width)) + ")"
        for i in range(rows)
    )
    params = [0] * (fixed + rows * width)
    steps = [
        row[3]
        for row in database.connection.execute(
            "EXPLAIN QUERY PLAN " + sql.format(values=values), params
        )
    ]
    table_reads = [
        s
        for s in steps
        if s.startswith(("SCAN", "SEARCH"))
        and "CONSTANT ROW" not in s
        and not s.startswith(("SCAN seen", "SCAN done", "SCAN sent", "SCAN unsent"))
    ]
    assert table_reads, steps
    assert all(step.startswith("SEARCH") for step in table_reads), steps
    database.close()


def _status_groups_in(sql: str) -> list[tuple[str, ...]]:
    """Every `status IN ('a', 'b')` and `status = 'a'` written as literal text in `sql`."""
    groups = [
        tuple(re.findall(r"'([a-z]+)'", listed))
        for listed in re.findall(r"status IN \(([^)?]*)\)", sql)
    ]
    return groups + [(one,) for one in re.findall(r"status = '([a-z]+)'", sql)]


@pytest.mark.parametrize(
    ("sql", "groups"),
    [
        # and the other kind's waiting schedule a completion would make stale (issue 38)
        (DUE_SQL, [WAITING, WAITING, (Status.RUNNING,)]),
        (BACKLOG_SQL, [WAITING, (Status.RUNNING,)]),
        (COUNTS_SQL, [WAITING, FINISHED, (Status.RUNNING,)]),
        (lease_sql.OPEN_ATTEMPTS_SQL, [(Status.RUNNING,)]),
        (tick_history.HEALTH_SQL, [WAITING, (Status.RUNNING,)]),
        (tick_history.INSERT_SQL, [WAITING, (Status.RUNNING,)]),
        (LIVE_COUNTS_SQL, [WAITING, (Status.RUNNING,)]),
        (operator_queries.RECENT_REFUSALS_SQL, [FINISHED, (Status.REFUSED,)]),
        (operator_queries.INSTALLATIONS_SQL, [LIVE, FINISHED, (Status.REFUSED,)]),
        (retention.EXPIRED_ATTEMPTS_SQL, [FINISHED]),
        (retention.EXPIRED_SCHEDULES_SQL, [FINISHED]),
    ],
    ids=[
        "runner due rows",
        "status backlog",
        "status counts",
        "open attempts",
        "healthz",
        "history row's backlog",
        "live counts",
        "latest refusals",
        "installations",
        "retention: attempts",
        "retention: schedules",
    ],
)
def test_statuses_written_for_the_partial_indexes_are_the_enums_groups(
    sql: str, groups: list[tuple[Status, ...]]
) -> None:
    # These statements keep their statuses as literal text so that the planner matches
    # the partial indexes; the text must still say exactly what `statuses` says.
    assert _status_groups_in(sql) == groups


def test_the_partial_indexes_and_the_table_check_use_the_enums_groups() -> None:
    schema = "".join(path.read_text("utf-8") for path in sorted(MIGRATIONS_DIR.glob("*.sql")))
    indexes = re.findall(
        r"CREATE (?:UNIQUE )?INDEX (\w+) ON schedules \([^)]*\)\s+WHERE ([^;]*);", schema
    )
    where = {name: _status_groups_in(condition) for name, condition in indexes}
    assert where == {
        "schedules_one_live": [LIVE],
        "schedules_waiting": [WAITING],
        "schedules_leased": [(Status.RUNNING,)],
        "schedules_finished": [FINISHED],
        "schedules_running_by_installation": [(Status.RUNNING,)],
        "schedules_unauthorized": [],  # by result code: refused `plugin_unauthorized`
        "schedules_waiting_by_installation": [WAITING],
    }
    [checked] = re.findall(r"status\s+TEXT\s+NOT NULL CHECK \(status IN\s*\(([^)]*)\)\)", schema)
    assert set(re.findall(r"'([a-z]+)'", checked)) == set(Status) == {*LIVE, *FINISHED}
    assert sql_list(WAITING) == "('pending', 'retrying')"


def _plan(sql: str, params: list[object]) -> list[str]:
    database = SqliteDatabase(":memory:")
    apply_migrations(database.connection)
    steps = [row[3] for row in database.connection.execute("EXPLAIN QUERY PLAN " + sql, params)]
    database.close()
    return steps


def test_a_capped_claim_counts_live_claims_by_index_before_it_changes_a_row() -> None:
    """The candidates and their installation's live claims are materialised first (no row
    changed yet when they are counted), and each count reads one installation's running rows
    by index."""
    rows, fixed, width = 20, 5, 4
    values = ", ".join(
        "(" + ", ".join(f"?{fixed + i * width + j + 1}" for j in range(width)) + ")"
        for i in range(rows)
    )
    steps = _plan(lease_sql.CLAIM_WITHIN_SQL.format(values=values), [0] * (fixed + rows * width))
    assert "MATERIALIZE pick" in steps, steps
    assert any("SEARCH busy USING INDEX schedules_running_by_installation" in s for s in steps), (
        steps
    )
    busy = _plan(lease_sql.BUSY_SQL, [0, '["ins_a"]'])
    assert any("INDEX schedules_running_by_installation" in s for s in busy), busy


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        (outbox_sql.CLAIM_DELIVERIES_SQL, ["t", 1, 0, 20, '["chat"]']),
        (outbox_sql.CLAIM_NAMED_SQL, ["t", 1, 0, 20, '["chat"]', '["msg_a_whe_b"]']),
        (outbox_sql.NEXT_MESSAGE_SQL, ["t", 1, 0, '{"chat":60000}']),
        (outbox_sql.CLAIMED_ENDPOINTS_SQL, ["t", 1]),
        (outbox_sql.CLAIMED_TITLES_SQL, ["t", 1, '{"chat":10}']),
        (
            outbox_sql.SETTLE_DIGESTS_SQL.format(values="(?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
            ["t", 1, "whe_b", "delivered", None, 1, 1, 204, None, 0],
        ),
    ],
    ids=["claim", "claim named", "chat minute", "endpoints", "titles", "settle a digest"],
)
def test_the_outbox_reads_only_its_partial_indexes_and_keys(sql: str, params: list[object]) -> None:
    """Claims read the waiting and leased indexes; what a claim or a settle reads back finds
    its rows by the lease (a digest's too, not by its endpoint's whole history)."""
    steps = _plan(sql, params)
    reads = [
        s
        for s in steps
        if s.startswith(
            ("SCAN webhook_deliveries", "SEARCH webhook_deliveries", "SCAN d", "SEARCH d")
        )
    ]
    assert reads, steps
    assert not any(s.startswith(("SCAN webhook_deliveries", "SCAN d ")) for s in steps), steps
    assert not any("webhook_deliveries_by_endpoint" in s for s in steps), steps


@pytest.mark.parametrize(
    ("sql", "groups"),
    [
        (lease_sql.DUE_FOR_SQL, [WAITING, WAITING, (Status.RUNNING,)]),  # one: issue 38
        (lease_sql.BUSY_SQL, [(Status.RUNNING,)]),
    ],
    ids=["one installation's due rows", "live claims"],
)
def test_the_capped_claims_statements_write_the_enums_groups(
    sql: str, groups: list[tuple[Status, ...]]
) -> None:
    assert _status_groups_in(sql) == groups


# -- issue 21: the operator's reads and the tick's record ------------------------------------

_TABLES = (
    "schedules",
    "schedule_attempts",
    "installations",
    "tick_history",
    "runner_totals",
    "webhook_deliveries",
    "sessions",
)


def _history_heavy(database: SqliteDatabase) -> None:
    """3,000 schedules of 30 installations, 1 in 100 live, then ANALYZE."""
    connection = database.connection
    connection.executescript(
        """
        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < 30)
        INSERT INTO installations (id, site_id, base_url, token_sealed, created_at,
            token_rotated_at, last_sent_at)
        SELECT 'ins_' || i, 's', 'https://cms.example', 'x', 0, 0, i FROM n;
        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < 3000)
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
          FROM n;
        ANALYZE;
        """
    )


def _values(rows: int, width: int) -> str:
    return ", ".join(
        "(" + ", ".join(f"?{i * width + j + 1}" for j in range(width)) + ")" for i in range(rows)
    )


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        (tick_history.HEALTH_SQL, (0,)),
        (tick_history.LAST_TICK_SQL, ()),
        (LIVE_COUNTS_SQL, ()),
        (tick_history.SERIES_SQL, (0, 1, 600_000)),
        (operator_queries.RECENT_REFUSALS_SQL, ()),
        (operator_queries.INSTALLATIONS_SQL, (0,)),
        (tick_history.INSERT_SQL, (0,) * (5 + len(tick_history.REPORT_COLUMNS))),
        (tick_history.ADD_TOTALS_SQL, ('{"ticks:tick": 1}',)),
        (tick_history.PRUNE_SQL, (0,)),
        (lease_sql.LAST_SENT_SQL.format(values=_values(20, 2)), (0,) * 40),
        (retention.EXPIRED_ATTEMPTS_SQL, (0, 500)),
        (retention.EXPIRED_SCHEDULES_SQL, (0, 500)),
        (retention.EXPIRED_DELIVERIES_SQL, (0, 500)),
        (sessions.FIND_LIVE_SQL, ("h", 0)),
    ],
    ids=[
        "healthz",
        "last tick",
        "live counts",
        "history window",
        "latest refusals",
        "installations",
        "history row",
        "totals",
        "pruning",
        "last send",
        "retention: attempts",
        "retention: schedules",
        "retention: deliveries",
        "a session, its installation gone or not",
    ],
)
@pytest.mark.parametrize("analysed", [False, True], ids=["never analysed", "analysed"])
def test_the_operator_reads_and_the_tick_record_find_rows_by_index_never_by_scan(
    sql: str, params: tuple[object, ...], analysed: bool
) -> None:
    """/healthz, /admin/metrics, /admin and the tick's write, on a fresh, never-analysed
    database: every read of a table goes through an index (a partial one for schedules), so
    the cost follows live rows, the day's activity and the 7 days of history, never the
    table's size. The totals table is read whole: one row per counter series (a fixed set,
    tests/test_operator_history.py counts them), never more."""
    database = SqliteDatabase(":memory:")
    apply_migrations(database.connection)
    if analysed:
        # Statistics of a table that is mostly history: the planner then prefers whole-index
        # scans that avoid a sort, unless a statement pins its partial index.
        _history_heavy(database)
    steps = [row[3] for row in database.connection.execute("EXPLAIN QUERY PLAN " + sql, params)]
    reads = [
        step
        for step in steps
        if step.startswith(("SCAN", "SEARCH")) and step.split()[1] in (*_TABLES, "s", "i")
    ]
    live_indexes = ("schedules_one_live", "schedules_waiting", "schedules_leased")
    for step in reads:
        if step == "SCAN runner_totals":
            continue
        if step.startswith("SCAN schedules"):  # only a partial index of live rows, whole
            assert any(step.endswith(f"INDEX {name}") for name in live_indexes), steps
        assert " USING " in step, steps
        assert any(used in step for used in ("INDEX", "INTEGER PRIMARY KEY", "PRIMARY KEY")), steps
    if sql is tick_history.HEALTH_SQL:
        assert "SEARCH tick_history USING COVERING INDEX tick_history_ok (kind=?)" in steps
        assert all("schedules_waiting" in s or "schedules_leased" in s for s in reads[1:]), steps
    database.close()

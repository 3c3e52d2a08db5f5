"""The CPython adapters keep D1's and WebCrypto's contracts: migrations as wrangler applies
them, WebCrypto's sealing, and the plans SQLite makes of the store's statements (what the
store's statements do, on SQLite and on D1 alike, is tests/test_store_contract.py's)."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from scheduling.domain.outcomes import DUE, FINISHED, LIVE, WAITING, Status, sql_list
from scheduling.ports import UnreadableSecret
from scheduling.repository.history import (
    BACKLOG_SQL,
    COUNTS_SQL,
    EXPIRED_ATTEMPTS_SQL,
    EXPIRED_SCHEDULES_SQL,
    HEALTH_SQL,
    INSERT_SQL,
    INSTALLATIONS_SQL,
    LIVE_COUNTS_SQL,
    RECENT_REFUSALS_SQL,
    RETRYING_SQL,
)
from scheduling.repository.leases import BUSY_SQL, DUE_FOR_SQL, DUE_SQL
from scheduling.runtimes.cpython.adapters import CpythonCrypto
from scheduling.runtimes.cpython.sqlite_d1 import (
    MIGRATIONS_DIR,
    MigrationsMissing,
    SqliteDatabase,
    apply_migrations,
)


def test_migrations_apply_once_and_are_recorded_like_wrangler(tmp_path: Path) -> None:
    # A database made before 0002 existed: only the new files are applied on upgrade.
    first = tmp_path / "first"
    first.mkdir()
    shutil.copy(MIGRATIONS_DIR / "0001_initial.sql", first)
    database = SqliteDatabase(tmp_path / "plugin.sqlite3")
    assert apply_migrations(database.connection, first) == ["0001_initial.sql"]
    later = sorted(path.name for path in MIGRATIONS_DIR.glob("*.sql"))[1:]
    named = {"0002_runner_status.sql", "0005_notifications.sql", "0006_queue_fanout.sql"}
    assert named | {"0007_tick_history.sql"} <= set(later)
    assert apply_migrations(database.connection) == later
    assert apply_migrations(database.connection) == []
    names = [r[0] for r in database.connection.execute("SELECT name FROM d1_migrations")]
    assert names == ["0001_initial.sql", *later]
    database.close()


def migrated_before(tmp_path: Path, number: str) -> sqlite3.Connection:
    """A database migrated up to (not including) migration `number`."""
    before = tmp_path / "before"
    before.mkdir()
    for path in MIGRATIONS_DIR.glob("*.sql"):
        if path.name < number:
            shutil.copy(path, before)
    connection = SqliteDatabase(tmp_path / "plugin.sqlite3").connection
    apply_migrations(connection, before)
    return connection


def test_0018_lets_any_registered_kind_in_and_renames_the_delivery_counters(
    tmp_path: Path,
) -> None:
    """0018 keeps a chat endpoint's rows and index, the keys hold, any kind goes in, the
    `webhook_` counters continue under their new names."""
    connection = migrated_before(tmp_path, "0018")
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
    assert apply_migrations(connection)[:1] == ["0018_channel_kinds.sql"]
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
    renamed = [("deliveries:delivered", 2), ("delivery_events", 3), ("delivery_lost_leases", 1)]
    assert [tuple(r) for r in totals] == renamed
    columns = {r[1] for r in connection.execute("PRAGMA table_info(tick_history)")}
    assert {"delivery_sends", "deliveries_delivered"} <= columns
    assert not {c for c in columns if c.startswith("webhook")}
    connection.close()


def test_0020_keeps_the_history_and_takes_backstop_ticks(tmp_path: Path) -> None:
    """Issue 45, item 18: a tick a request runs when the cron has stopped is its own kind."""
    connection = migrated_before(tmp_path, "0020")
    columns = [row[1] for row in connection.execute("PRAGMA table_info(tick_history)")]
    row = ", ".join("?" for _ in columns)
    insert = f"INSERT INTO tick_history VALUES ({row})"
    for at, kind in ((1, "tick"), (2, "alarm")):
        connection.execute(insert, [at, kind, None, *[7] * (len(columns) - 3)])
    with pytest.raises(sqlite3.IntegrityError):
        connection.execute(insert, [3, "backstop", None, *[7] * (len(columns) - 3)])
    assert "0020_backstop_ticks.sql" in apply_migrations(connection)
    assert [row[1] for row in connection.execute("PRAGMA table_info(tick_history)")] == columns
    connection.execute(insert, [3, "backstop", None, *[7] * (len(columns) - 3)])
    with pytest.raises(sqlite3.IntegrityError):
        connection.execute(insert, [4, "consumer", None, *[7] * (len(columns) - 3)])
    kept = connection.execute("SELECT at, kind, due FROM tick_history ORDER BY at")
    assert [tuple(r) for r in kept] == [(1, "tick", 7), (2, "alarm", 7), (3, "backstop", 7)]
    indexes = {r[1] for r in connection.execute("PRAGMA index_list(tick_history)")}
    assert {"tick_history_at", "tick_history_ok"} <= indexes
    connection.close()


def test_0019_starts_each_key_from_its_mint_and_ends_a_revoked_one_when_revoked(
    tmp_path: Path,
) -> None:
    connection = migrated_before(tmp_path, "0019")
    connection.executescript(
        """INSERT INTO installations (id, site_id, base_url, token_sealed, created_at,
               token_rotated_at) VALUES ('ins_1', 'site', 'https://cms.example', 's', 0, 0);
           INSERT INTO agent_keys (id, installation_id, key_hash, name, person_id, person_name,
               content_id, offered_transitions, created_at, expires_at, revoked_at)
               VALUES ('k_live', 'ins_1', 'h1', 'Bot', 'usr', 'Ada', NULL, '*', 10, 500, NULL),
                      ('k_revoked', 'ins_1', 'h2', 'Bot', 'usr', 'Ada', NULL, '*', 20, 500, 30);"""
    )
    assert apply_migrations(connection)[0] == "0019_agents_bounded.sql"
    keys = connection.execute("SELECT id, checked_at, expires_at FROM agent_keys ORDER BY id")
    assert [tuple(r) for r in keys] == [("k_live", 10, 500), ("k_revoked", 20, 30)]
    connection.close()


def test_0014_drops_what_only_the_queue_used_and_keeps_the_rest(tmp_path: Path) -> None:
    """0014 drops the queue consumer's column, rows and totals; every tick and alarm stays."""
    connection = migrated_before(tmp_path, "0014")
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
    connection.close()


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
    import scheduling.runtimes.cpython.sqlite_d1 as module

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


def _status_groups_in(sql: str) -> list[tuple[str, ...]]:
    """Every `status IN ('a', 'b')` and `status = 'a'` written as literal text in `sql`."""
    groups = [
        tuple(re.findall(r"'([a-z]+)'", listed))
        for listed in re.findall(r"status IN \(([^)?]*)\)", sql)
    ]
    return groups + [(one,) for one in re.findall(r"status = '([a-z]+)'", sql)]


# A due row carries its release's line: the items applied and those queued behind it.
LINE = [(Status.COMPLETED,), (Status.QUEUED,)]
STATUS_GROUPS: dict[str, tuple[str, list[tuple[Status, ...]]]] = {
    # and the other kind's waiting schedule a completion would make stale (issue 38)
    "runner due rows": (DUE_SQL, [DUE, WAITING, (Status.RUNNING,), *LINE]),
    "status backlog": (BACKLOG_SQL, [DUE, (Status.RUNNING,)]),
    "status counts": (
        COUNTS_SQL,
        [DUE, LIVE, FINISHED, (Status.RUNNING,), (Status.QUEUED,)],
    ),
    "healthz": (HEALTH_SQL, [DUE, (Status.RUNNING,)]),
    "history row's backlog": (INSERT_SQL, [DUE, (Status.RUNNING,)]),
    "live counts": (LIVE_COUNTS_SQL, [DUE, LIVE, (Status.RUNNING,), (Status.QUEUED,)]),
    "latest refusals": (RECENT_REFUSALS_SQL, [FINISHED, (Status.REFUSED,)]),
    "installations": (INSTALLATIONS_SQL, [LIVE, FINISHED, (Status.REFUSED,)]),
    "will try again": (RETRYING_SQL, [DUE, (Status.RETRYING,)]),
    "retention: attempts": (EXPIRED_ATTEMPTS_SQL, [FINISHED]),
    "retention: schedules": (EXPIRED_SCHEDULES_SQL, [FINISHED]),
    "one installation's due rows": (
        DUE_FOR_SQL,
        [DUE, WAITING, (Status.RUNNING,), *LINE],
    ),
    "live claims": (BUSY_SQL, [(Status.RUNNING,)]),
}


@pytest.mark.parametrize(("sql", "groups"), STATUS_GROUPS.values(), ids=STATUS_GROUPS)
def test_statuses_written_for_the_partial_indexes_are_the_enums_groups(
    sql: str, groups: list[tuple[Status, ...]]
) -> None:
    # These statements keep their statuses as literal text so that the planner matches
    # the partial indexes; the text must still say exactly what the status groups say.
    assert _status_groups_in(sql) == groups


def test_the_partial_indexes_and_the_table_check_use_the_enums_groups() -> None:
    schema = "".join(path.read_text("utf-8") for path in sorted(MIGRATIONS_DIR.glob("*.sql")))
    indexes = re.findall(
        r"CREATE (?:UNIQUE )?INDEX (\w+) ON schedules \([^)]*\)\s+WHERE ([^;]*);", schema
    )
    where = {name: _status_groups_in(condition) for name, condition in indexes}
    assert where == {  # as the last migration that made each says (0021 made them all again)
        "schedules_one_live": [LIVE],
        "schedules_waiting": [DUE],
        "schedules_leased": [(Status.RUNNING,)],
        "schedules_finished": [FINISHED],
        "schedules_running_by_installation": [(Status.RUNNING,)],
        "schedules_unauthorized": [],  # by result code: refused `plugin_unauthorized`
        "schedules_waiting_by_installation": [DUE],
        "schedules_by_release": [],  # a release's items
    }
    *_, checked = re.findall(r"status\s+TEXT\s+NOT NULL CHECK \(status IN\s*\(([^)]*)\)\)", schema)
    assert set(re.findall(r"'([a-z]+)'", checked)) == set(Status) == {*LIVE, *FINISHED}
    assert sql_list(DUE) == "('pending', 'retrying')"

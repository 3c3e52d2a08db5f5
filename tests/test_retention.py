"""Rows are not kept forever (issue 26, item 3): finished schedules with their attempts, and
delivered or failed webhook deliveries, are purged `RETENTION_DAYS` (400) after they ended,
by the tick, in bounded steps within its budgets; live rows and recent ones stay.

Through real ticks (`App.tick`) on SQLite; bench/retention_bench.py measures a million.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from scheduling.config import Configuration
from scheduling.limits import minimum_queries_per_tick
from scheduling.repository.history import STEP_STATEMENTS
from scheduling.runner import tick
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import START_MS, FakeClock, base_env, make_app
from tests.support.world import World, schedule, tick_at

ROOT = Path(__file__).resolve().parents[1]

DAY = 86_400_000
OLD = START_MS - 401 * DAY  # ended before the window
RECENT = START_MS - 399 * DAY  # ended within it


def seed(db: SqliteDatabase, ended_at: int, count: int, *, prefix: str, status: str) -> None:
    """`count` schedules of `status` that ended at `ended_at`, each with two attempts and a
    webhook delivery that ended a minute later."""
    connection = db.connection
    connection.execute(
        "INSERT OR IGNORE INTO installations (id, site_id, base_url, token_sealed, created_at,"
        " token_rotated_at) VALUES ('ins_r', 's', 'https://cms.example', 'x', 0, 0)"
    )
    connection.execute(
        "INSERT OR IGNORE INTO notification_endpoints (id, installation_id, url, secret_sealed,"
        " created_at, secret_rotated_at) VALUES ('whe_r', 'ins_r', 'https://h.example', 'x', 0, 0)"
    )
    live = status in ("pending", "retrying")
    later = START_MS + DAY  # a live row's next try: not due in these ticks
    for n in range(count):
        sid = f"sch_{prefix}{n}"
        connection.execute(
            "INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,"
            " workflow_revision, revision, idempotency_key, due_at, timezone, local_time, status,"
            " next_attempt_at, requested_by, requested_by_name, created_at, updated_at)"
            " VALUES (?, 'ins_r', ?, 'publish', 'published', 'v', 1, 1, ?, ?, 'UTC', 'x', ?,"
            " ?, 'usr', 'Ada', ?, ?)",
            (sid, f"cnt_{prefix}{n}", f"k_{sid}", ended_at, status, later if live else None,
             ended_at, ended_at),
        )  # fmt: skip
        for attempt in (1, 2):
            connection.execute(
                "INSERT INTO schedule_attempts (schedule_id, attempt, started_at, finished_at)"
                " VALUES (?, ?, ?, ?)",
                (sid, attempt, ended_at, ended_at),
            )
        finished = None if live else ended_at + 60_000
        connection.execute(
            "INSERT INTO webhook_deliveries (id, endpoint_id, installation_id, schedule_id,"
            " event_type, payload, created_at, status, next_attempt_at, finished_at)"
            " VALUES (?, 'whe_r', 'ins_r', ?, 'schedule.refused', '{}', ?, ?, ?, ?)",
            (f"msg_{sid}", sid, ended_at, "waiting" if live else "failed",
             later if live else None, finished),
        )  # fmt: skip


def counts(db: SqliteDatabase) -> dict[str, int]:
    connection = db.connection
    return {
        table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        for table in ("schedules", "schedule_attempts", "webhook_deliveries")
    }


def kept_ids(db: SqliteDatabase) -> set[str]:
    return {row[0] for row in db.connection.execute("SELECT id FROM schedules")}


def test_the_window_is_400_days_and_can_be_set() -> None:
    assert Configuration.from_mapping(base_env()).retention_days == 400
    assert Configuration.from_mapping(base_env(RETENTION_DAYS="30")).retention_days == 30
    assert "RETENTION_DAYS" in Configuration.from_mapping(base_env(RETENTION_DAYS="0")).problems


@pytest.mark.parametrize("status", ["completed", "refused", "cancelled", "superseded"])
async def test_a_tick_purges_what_ended_before_the_window_and_keeps_the_rest(
    db: SqliteDatabase, clock: FakeClock, status: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="scheduling.events")
    seed(db, OLD, 3, prefix="old", status=status)
    seed(db, RECENT, 2, prefix="recent", status=status)
    seed(db, OLD, 2, prefix="live", status="pending")  # made 401 days ago, still waiting
    app = make_app(db, clock)
    await app.tick(START_MS)
    assert kept_ids(db) == {"sch_recent0", "sch_recent1", "sch_live0", "sch_live1"}
    assert counts(db) == {"schedules": 4, "schedule_attempts": 8, "webhook_deliveries": 4}
    [line] = [json.loads(r.getMessage()) for r in caplog.records if "retention" in r.getMessage()]
    assert line == {
        "event": "retention_purged",
        "retention_days": 400,
        "steps": 1,
        "schedules": 3,
        "attempts": 6,
        "deliveries": 3,
        "proposals": 0,
        "agent_keys": 0,
    }


async def test_a_shorter_window_purges_sooner(db: SqliteDatabase, clock: FakeClock) -> None:
    seed(db, START_MS - 31 * DAY, 2, prefix="month", status="completed")
    seed(db, START_MS - 29 * DAY, 1, prefix="weeks", status="completed")
    app = make_app(db, clock, env=base_env(RETENTION_DAYS="30"))
    await app.tick(START_MS)
    assert kept_ids(db) == {"sch_weeks0"}


async def test_a_backlog_goes_in_bounded_steps_over_ticks(
    db: SqliteDatabase, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tick, "STEP_ROWS", 10)
    monkeypatch.setattr(tick, "MAX_STEPS", 3)
    seed(db, OLD, 95, prefix="old", status="completed")
    seed(db, RECENT, 5, prefix="recent", status="refused")
    app = make_app(db, clock)
    left, reports = [], []
    for minute in range(5):
        reports.append(await app.tick(START_MS + minute * 60_000))
        left.append(counts(db)["schedules"])
    assert left == [70, 40, 10, 5, 5]  # 30 a tick, then what remains, then nothing
    assert counts(db) == {"schedules": 5, "schedule_attempts": 10, "webhook_deliveries": 5}
    # A tick's due query and its record are four statements; each step six more, in a
    # round trip of its own. A step that finds fewer than STEP_ROWS ends the purge.
    step = STEP_STATEMENTS
    assert [r["d1_statements"] for r in reports] == [4 + 3 * step] * 3 + [4 + step, 4 + step]
    assert [r["d1_round_trips"] for r in reports] == [2 + 3] * 3 + [2 + 1, 2 + 1]


async def test_the_purge_stays_within_the_ticks_d1_budget(
    db: SqliteDatabase, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With as few D1 queries as a tick may have (one batch and its record), the purge takes
    only the steps that fit, and the tick never goes over."""
    monkeypatch.setattr(tick, "STEP_ROWS", 5)
    seed(db, OLD, 200, prefix="old", status="completed")
    config = Configuration.from_mapping(base_env())
    least = minimum_queries_per_tick(config.max_rows_per_batch)
    app = make_app(db, clock, env=base_env(MAX_D1_QUERIES_PER_TICK=str(least)))
    report: dict[str, Any] = await app.tick(START_MS)
    assert report["d1_statements"] <= least
    purged = 200 - counts(db)["schedules"]
    assert 0 < purged < 200
    steps = (report["d1_statements"] - 1 - 3) // STEP_STATEMENTS  # less the due query
    assert purged == 5 * steps  # and the record


async def test_nothing_is_purged_once_the_ticks_time_is_spent(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    """The purge is the tick's last work before its record: a tick whose budget is spent by
    its sends (here, a clock that says so) leaves it to the next one."""
    seed(db, OLD, 5, prefix="old", status="completed")

    class Late(FakeClock):
        def now_ms(self) -> int:
            self.now += 50_000  # every look at the clock: 50 s later
            return self.now

    app = make_app(db, Late(START_MS))
    await app.tick(START_MS)
    assert counts(db)["schedules"] == 5


async def test_a_tick_purges_for_at_most_max_purge_ms(
    db: SqliteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However much is left and however many steps the budget would allow, a tick starts no
    step after `MAX_PURGE_MS` of purging: D1's one writer is left to the rest."""
    monkeypatch.setattr(tick, "STEP_ROWS", 5)
    monkeypatch.setattr(tick, "MAX_PURGE_MS", 2_500)
    seed(db, OLD, 100, prefix="old", status="completed")

    class Slow(FakeClock):
        def now_ms(self) -> int:
            self.now += 1_000  # every look at the clock: a second later
            return self.now

    app = make_app(db, Slow(START_MS), env=base_env(TICK_BUDGET_MS="55000"))
    await app.tick(START_MS)
    purged = 100 - counts(db)["schedules"]
    assert 0 < purged <= 5 * 2


async def test_a_revision_counts_on_after_the_purge_removed_every_schedule_of_its_content(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    """Issue 37: the revision was the largest kept plus one, so once the purge had removed
    every schedule of a content and kind the next started at r1 again; the protocol says +1
    for each later one."""
    world = World(db, clock, env=base_env(RETENTION_DAYS="1"))
    installation = await world.install()
    first = await schedule(world, installation, "cnt_en", in_minutes=30)
    second = await schedule(world, installation, "cnt_en", in_minutes=40)  # supersedes it
    assert (first["revision"], second["revision"]) == (1, 2)
    browser = await world.browser_for(installation, content_id=None)
    assert (await browser.cancel(installation.id, second["id"])).status == 303
    await tick_at(world, clock.now_ms() + 2 * DAY)  # both ended more than a day ago
    assert kept_ids(db) == set()
    third = await schedule(world, installation, "cnt_en", in_minutes=30)
    assert third["revision"] == 3
    assert third["idempotency_key"] == f"sched:{installation.id}:{third['id']}:r3"
    world.core.state.add_content("cnt_b", "Second")
    other = await schedule(world, installation, "cnt_b", in_minutes=30)
    assert other["revision"] == 1  # counted per content and kind


def test_the_data_page_says_what_the_purge_leaves_of_a_revision() -> None:
    """Issue 45, item 17: docs/operators/data.md still said the next schedule starts at 1
    again after the purge, which the test above shows it does not."""
    text = " ".join((ROOT / "docs" / "operators" / "data.md").read_text("utf-8").split())
    assert "starts at 1 again" not in text
    assert "the next one still gets the number after the last, never 1 again" in text

"""The calendar at size (issue 48): 200 waiting changes over four weeks. Prints figures;
asserts nothing.

The issue asks for 200 across 50 contents; the one-live rule (one waiting publish and one
waiting unpublish a content) allows 100 on 50 contents, so the 200 are across 100 contents,
a publish and an unpublish each.

The app runs in-process on CPython with an in-process fake Dee Wan (so a title read costs the
plugin's side of it only) on a SQLite file; the changes are written straight into the table,
each with a sealed title. Timed, each `--runs` times, as server time (`App.handle`, from the
request to the answer's bytes): the week view with its titles read live, the list of all four
weeks, and the calendar feed of the 200 (no Dee Wan read: the titles it opens are sealed).

    python -m bench.calendar_bench [--runs 20]

Run from the repo root with the venv's Python. Say the machine's load when quoting a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import tempfile
import time
from pathlib import Path

from scheduling.domain.secrets import content_title
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.app import FakeClock
from tests.support.world import Browser, World

CONTENTS, CHANGES, DAYS = 100, 200, 28
DAY, HOUR = 86_400_000, 3_600_000


async def seed(world: World, installation_id: str) -> None:
    """100 contents in Dee Wan; 200 pending changes spread over 28 days, a publish and an
    unpublish of each content two weeks apart, with sealed titles."""
    now = world.clock.now_ms()
    rows = []
    for n in range(CHANGES):
        content = f"cnt_cal{n % CONTENTS:02d}"
        if n < CONTENTS:
            world.core.state.add_content(content, f"Calendar item {n:02d}")
        sid = f"sch_cal{n:03d}"
        sealed = await world.app.services.crypto.seal(
            f"Calendar item {n % CONTENTS:02d}", content_title(installation_id, sid)
        )
        due = now + HOUR + (n * DAYS * DAY) // CHANGES
        kind = "publish" if (n // CONTENTS) % 2 == 0 else "unpublish"
        rows.append(
            (sid, installation_id, content, kind, n // CONTENTS + 1, f"k{n}", due, due, sealed)
        )
    await world.db.batch(
        [
            world.db.prepare(
                "INSERT INTO schedules (id, installation_id, content_id, kind, to_state,"
                " version_id, workflow_revision, revision, idempotency_key, due_at, timezone,"
                " local_time, status, attempt_count, next_attempt_at, requested_by,"
                " requested_by_name, created_at, updated_at, title_sealed) VALUES (?1, ?2, ?3, ?4,"
                " 'published', 'ver_1', 1, ?5, ?6, ?7, 'Europe/Paris', '2026-07-01T09:00',"
                " 'pending', 0, ?8, 'usr_editor', 'Ada', 0, 0, ?9)"
            ).bind(*row)
            for row in rows
        ]
    )


async def timed(browser: Browser, path: str, runs: int) -> tuple[list[float], int, int]:
    """Server times in ms, the answer's status and its count of listed changes."""
    times, status, listed = [], 0, 0
    for _ in range(runs):
        started = time.perf_counter()
        answer = await browser.get(path)
        times.append((time.perf_counter() - started) * 1000)
        status = answer.status
        body = answer.body.decode()
        listed = len(re.findall(r'data-schedule-id="sch_cal', body)) or body.count("BEGIN:VEVENT")
    return times, status, listed


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = SqliteDatabase(Path(folder) / "plugin.sqlite3")
        apply_migrations(db.connection)
        world = World(db, FakeClock())
        installation = await world.install()
        await seed(world, installation.id)
        browser = await world.browser_for(installation, content_id=None)
        base = f"/installations/{installation.id}"
        await browser.get(f"{base}/calendar")  # the launch's first page
        made = await browser.post(
            f"{base}/calendar/feed", {"csrf_token": browser.csrf(), "opened_for": "manage"}
        )
        found = re.search(r"data-calendar-feed>[^<]*(/calendar-feeds/[^<]+)<", made.body.decode())
        assert found
        client = Browser(world.app)
        for label, who, path in (
            ("week view (titles read live)", browser, f"{base}/calendar"),
            ("list, all four weeks", browser, f"{base}/calendar?view=list"),
            ("feed of the 200", client, found.group(1)),
        ):
            times, status, listed = await timed(who, path, runs)
            print(
                f"{label:32} status {status}, {listed:3} changes: median"
                f" {statistics.median(times):6.1f} ms, max {max(times):6.1f} ms ({runs} runs)"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    asyncio.run(main(parser.parse_args().runs))

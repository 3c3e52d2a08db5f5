"""Issue 26 under Pyodide, through the real Worker entry: "Send test event" is one at a time and
five a minute per person, counted in D1 across isolates; the tick purges what ended past
`RETENTION_DAYS`. Dee Wan is `python -m fake_core`, the endpoint a receiver on loopback. (Item 2
is tests/test_uninstalled_sessions.py; creates per person tests/test_visitor_calls.py.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.pyodide_harness.harness import FakeCoreProcess, Harness
from tests.support.loopback_core import Loopback, loopback_receiver
from tests.support.worker_browser import Browser, install, launch, remove_installation

pytestmark = pytest.mark.pyodide

MINUTE = 60_000
DAY = 86_400_000


@pytest.fixture
def slow_receiver() -> Iterator[Loopback]:
    with loopback_receiver(delay_s=1.5) as running:
        yield running


def dev_vars(core: FakeCoreProcess, *origins: str) -> dict[str, str]:
    return {
        "ENVIRONMENT": "development",
        "DEE_WAN_DEV_ORIGINS": ",".join((core.base_url, *origins)),
    }


def test_test_events_are_one_at_a_time_and_five_a_minute_per_endpoint(
    harness: Harness, core: FakeCoreProcess, slow_receiver: Loopback
) -> None:
    origin = slow_receiver.base_url
    with harness.vars(**dev_vars(core, origin)), harness.client() as client:
        installation_id = install(core, client)["id"]
        browser = Browser(client, harness.origin)
        try:
            csrf = launch(core, browser, installation_id)
            added = browser.post_form(
                f"/installations/{installation_id}/notifications",
                {"csrf_token": csrf, "opened_for": "manage", "url": slow_receiver.url,
                 "events": ["schedule.refused"]},
            )  # fmt: skip
            assert added.status_code == 303, added.text
            [row] = harness.sql(
                "SELECT id FROM notification_endpoints WHERE installation_id = ?", installation_id
            )
            path = f"/installations/{installation_id}/notifications/{row['id']}/test"
            form = {"csrf_token": csrf, "opened_for": "manage"}

            def send() -> httpx.Response:
                return browser.post_form(path, form)

            with ThreadPoolExecutor(2) as pool:
                first = pool.submit(send)
                time.sleep(0.5)  # the first is at the receiver (it answers after 1.5 s)
                second = pool.submit(send).result()
                assert first.result().status_code == 303
            assert second.status_code == 429
            assert 'data-error-code="too_many_tests"' in second.text
            assert 0 < int(second.headers["retry-after"]) <= 15
            assert len(slow_receiver.received) == 1
            statuses = [send().status_code for _ in range(5)]
            assert statuses == [303, 303, 303, 303, 429]  # five in the minute, then held
            assert len(slow_receiver.received) == 5
        finally:
            remove_installation(harness, installation_id)


def insert_finished(harness: Harness, installation_id: str, prefix: str, ended_at: int) -> None:
    harness.execute(
        (
            "INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,"
            " workflow_revision, revision, idempotency_key, due_at, timezone, local_time,"
            " status, result_code, requested_by, requested_by_name, created_at, updated_at)"
            " VALUES (?, ?, ?, 'publish', 'published', 'v', 1, 1, ?, ?, 'UTC', 'x', 'completed',"
            " 'transition_applied', 'usr', 'Ada', ?, ?)",
            [
                f"sch_{prefix}",
                installation_id,
                f"cnt_{prefix}",
                f"k_{prefix}",
                ended_at,
                ended_at,
                ended_at,
            ],
        ),
        (
            "INSERT INTO schedule_attempts (schedule_id, attempt, started_at, finished_at)"
            " VALUES (?, 1, ?, ?)",
            [f"sch_{prefix}", ended_at, ended_at],
        ),
    )


def test_the_tick_purges_what_ended_past_the_window(
    harness: Harness, core: FakeCoreProcess
) -> None:
    now = int(time.time() * 1000)
    with harness.vars(**dev_vars(core)), harness.client() as client:
        installation_id = install(core, client)["id"]
        try:
            insert_finished(harness, installation_id, f"{installation_id}_old", now - 401 * DAY)
            insert_finished(harness, installation_id, f"{installation_id}_new", now - 399 * DAY)
            purged_before = len(harness.events("retention_purged"))
            harness.scheduled(now)
            left = harness.sql(
                "SELECT id FROM schedules WHERE installation_id = ?", installation_id
            )
            assert left == [{"id": f"sch_{installation_id}_new"}]
            attempts = harness.sql(
                "SELECT schedule_id FROM schedule_attempts WHERE schedule_id LIKE ?",
                f"sch_{installation_id}%",
            )
            assert attempts == [{"schedule_id": f"sch_{installation_id}_new"}]
            [line] = harness.events("retention_purged")[purged_before:]
            assert (line["schedules"], line["attempts"]) == (1, 1)
        finally:
            remove_installation(harness, installation_id)

"""The page after a cancel, under Pyodide (issue 26, item 9; issue 27, item 4): with Dee Wan down
(`python -m fake_core`, its "Be down" switch), the real Worker entry still answers the content
page 200 from D1, the cancel shown done and Dee Wan's state said, with no create form; a create
sent meanwhile comes back 503 with the form as entered."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.pyodide_harness.harness import FakeCoreProcess, Harness
from tests.support.worker_browser import Browser, install, launch, remove_installation

pytestmark = pytest.mark.pyodide

MINUTE = 60_000


@pytest.fixture
def core(harness: Harness) -> Iterator[FakeCoreProcess]:
    process = FakeCoreProcess(harness.origin, Path(harness.workdir) / "fake_core_down.log")
    process.control("POST", "seed", {"demo": True})
    yield process
    process.close()


def be_down(core: FakeCoreProcess, minutes: int) -> None:
    """The local Dee Wan's own switch, as its home page's form posts it."""
    pressed = core.client.post(
        "/ui/fail-down",
        content=f"minutes={minutes}",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert pressed.status_code == 303, pressed.text


def test_the_page_after_a_cancel_is_shown_while_dee_wan_is_down(
    harness: Harness, core: FakeCoreProcess
) -> None:
    dev = {"ENVIRONMENT": "development", "DEE_WAN_DEV_ORIGINS": core.base_url}
    with harness.vars(**dev), httpx.Client(base_url=harness.origin, timeout=60) as client:
        installation_id = install(core, client)["id"]
        browser = Browser(client, harness.origin)
        try:
            csrf = launch(core, browser, installation_id, content_id="cnt_spring")
            due = (int(time.time() * 1000) // MINUTE + 90) * MINUTE
            local = datetime.fromtimestamp(due / 1000, UTC).strftime("%Y-%m-%dT%H:%M")
            fields = {
                **browser.shown,
                "csrf_token": csrf,
                "transition": "publish:published",
                "local_time": local,
                "timezone": "UTC",
            }
            made = browser.post_form(f"/installations/{installation_id}/schedules", fields)
            assert made.status_code == 303, made.text
            schedule_id = made.headers["location"].split("created=", 1)[1]

            be_down(core, 5)
            cancelled = browser.post_form(
                f"/installations/{installation_id}/schedules/{schedule_id}/cancel",
                {"csrf_token": csrf},
            )
            assert cancelled.status_code == 303, cancelled.text
            after = browser.get(cancelled.headers["location"])
            # Was 503 "Nothing was changed", although the cancel was done.
            assert after.status_code == 200, after.text[:2000]
            page = after.text
            assert 'data-unread="dee_wan_unavailable"' in page
            assert "Dee Wan is not answering right now, so this page shows the schedules" in page
            assert f'data-cancelled="{schedule_id}"' in page
            assert re.search(rf'data-schedule-id="{schedule_id}" data-status="cancelled"', page)
            assert 'class="schedule-form"' not in page
            assert f'href="{core.base_url}">Back to Dee Wan</a>' in page
            [row] = harness.sql("SELECT status FROM schedules WHERE id = ?", schedule_id)
            assert row == {"status": "cancelled"}

            # A create sent while it is down keeps what was entered, 503 with Retry-After.
            again = browser.post_form(f"/installations/{installation_id}/schedules", fields)
            assert again.status_code == 503
            assert again.headers["retry-after"] == "60"
            assert 'data-error-code="dee_wan_unavailable"' in again.text
            assert f'value="{local}"' in again.text
            assert "the form keeps what you entered" in again.text
            assert harness.sql(
                "SELECT count(*) AS n FROM schedules WHERE installation_id = ?", installation_id
            ) == [{"n": 1}]
        finally:
            core.control("DELETE", "faults")
            remove_installation(harness, installation_id)

"""The operator page in headless Chromium (issue 21), served by `python -m scheduling serve`
from a day of ticks ending now (tests/support/day.py), at 1280 and 390 px, tables closed and
open, and the sign-in refusal: no script, the strict CSP, no sideways scrolling, 0 axe-core
WCAG 2.2 A/AA violations. Screenshots: pytest's temporary directory or $BROWSER_SCREENSHOTS.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, ViewportSize
from playwright.sync_api import Response as PageResponse

from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.app import ADMIN_SECRET, TOKEN_KEY
from tests.support.browser import (
    axe_violations,
    free_port,
    missing_pieces,
)
from tests.support.day import DAY_MINUTES, day_world, play_day
from tests.support.world import MINUTE, insert_due

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(missing_pieces() is not None, reason=missing_pieces() or ""),
]
ROOT = Path(__file__).resolve().parents[1]
DESKTOP: ViewportSize = {"width": 1280, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}


async def a_day_ending_now(db_path: Path) -> None:
    db = SqliteDatabase(db_path)
    apply_migrations(db.connection)
    start = (time.time_ns() // 1_000_000 // MINUTE) * MINUTE - DAY_MINUTES * MINUTE
    await play_day(day_world(db, start), start)
    await a_dee_wan_failing(db, start + DAY_MINUTES * MINUTE)
    db.close()


async def a_dee_wan_failing(db: SqliteDatabase, now: int) -> None:
    """One installation's schedule that will try again, its Dee Wan down for five minutes."""
    [first] = (await db.prepare("SELECT id FROM installations ORDER BY id LIMIT 1").all()).results
    await insert_due(db, first["id"], "cnt_down", now - 5 * MINUTE)
    await db.batch([
        db.prepare(
            "UPDATE schedules SET status = 'retrying', attempt_count = 2, result_code = 'timeout',"
            " next_attempt_at = ? WHERE content_id = 'cnt_down'"
        ).bind(now + MINUTE),
        *(
            db.prepare(
                "INSERT INTO schedule_attempts (schedule_id, attempt, started_at, finished_at,"
                " code, http_status) VALUES ('sch_cnt_down', ?, ?, ?, ?, ?)"
            ).bind(n, at, at + 10_000, code, status)
            for n, at, code, status in [
                (1, now - 5 * MINUTE, "unavailable", 503),
                (2, now - 2 * MINUTE, "timeout", None),
            ]
        ),
    ])  # fmt: skip


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("operator")
    db_path = folder / "plugin.sqlite3"
    asyncio.run(a_day_ending_now(db_path))
    port = free_port()
    served = f"http://127.0.0.1:{port}"
    variables = folder / "plugin.vars"
    variables.write_text(
        f"PUBLIC_ORIGIN={served}\nENVIRONMENT=development\n"
        f"ADMIN_SECRET={ADMIN_SECRET}\nTOKEN_KEY={TOKEN_KEY}\nMAX_LATENESS_MS=300000\n"
    )
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "scheduling", "serve", "--port", str(port)),
            *("--db", str(db_path), "--vars", str(variables), "--no-cron"),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if k not in ("ADMIN_SECRET", "TOKEN_KEY")},
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{served}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, "serve stopped"
            assert time.monotonic() < deadline, "serve did not answer within 30 s"
            time.sleep(0.2)
        yield served
    finally:
        process.terminate()
        process.wait(timeout=20)


def audit(page: Page, response: PageResponse | None, state: str, shots: Path) -> None:
    """No script and the strict CSP, no sideways scrolling, 0 axe violations; a screenshot of
    the whole page and of its first screenful."""
    assert page.locator("script").count() == 0
    assert response is not None
    csp = response.headers.get("content-security-policy", "")
    assert "default-src 'none'" in csp
    assert "script-src" not in csp
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{state} scrolls sideways by {overflow}px"
    page.screenshot(path=str(shots / f"{state}.png"), full_page=True)
    page.screenshot(path=str(shots / f"{state}-top.png"))
    violations = axe_violations(page)
    assert not violations, f"axe on {state}:\n" + "\n".join(violations)


def test_the_operator_page_at_desktop_and_phone_widths(
    origin: str, browser: Browser, shots: Path
) -> None:
    context = browser.new_context(
        viewport=DESKTOP, http_credentials={"username": "operator", "password": ADMIN_SECRET}
    )
    page = context.new_page()
    try:
        response = page.goto(f"{origin}/admin")
        assert response is not None
        assert response.status == 200
        assert page.get_by_role("heading", name="Scheduling: the runner").is_visible()
        # Eight charts, each an image named by its heading, with its summary beside it.
        charts = page.get_by_role("img")
        assert charts.count() == 8
        assert page.get_by_role("img", name="Send lateness").count() == 2
        lateness = page.locator("[data-chart=day-lateness]")
        assert "1 failed tick, marked in red" in lateness.inner_text()
        assert lateness.locator("svg[role=img] line.failed").count() == 1
        assert page.locator("[data-chart=day-cron] svg[role=img] rect.gap").count() >= 1
        assert page.locator("table[data-table=refusals] tbody tr").count() == 2
        audit(page, response, "operator", shots)

        # The same numbers as tables: opened with the keyboard.
        page.locator("details.numbers summary").first.focus()
        page.keyboard.press("Enter")
        table = page.locator("table[data-table=day-slots]")
        assert table.is_visible()
        assert table.locator("tr.failed-row").count() == 1
        page.locator("details.numbers summary").nth(1).click()
        audit(page, response, "operator-tables", shots)

        page.set_viewport_size(PHONE)
        response = page.reload()
        audit(page, response, "operator-390", shots)
        # A chart fits the phone; its labels grow in its units to stay legible, and every
        # second time label is left out so none touch.
        chart = page.locator("[data-chart=day-lateness] svg[role=img]")
        assert chart.bounding_box()["width"] <= PHONE["width"]  # type: ignore[index]
        label = chart.locator("text.y-label").first.bounding_box()
        assert label is not None
        assert label["height"] >= 11, label
        labels = chart.locator("text.x-label")
        shown = [labels.nth(i).is_visible() for i in range(labels.count())]
        assert shown.count(True) == (len(shown) + 1) // 2
        page.locator("details.numbers summary").first.click()
        audit(page, response, "operator-tables-390", shots)
    finally:
        context.close()


def test_what_needs_attention_comes_first_and_a_refusals_reason_fits_a_phone(
    origin: str, browser: Browser, shots: Path
) -> None:
    """Issue 45 item 16: the installation whose Dee Wan is failing is in the first screenful,
    before the charts; at 390 px each refusal is a block of its cells, its reason on screen."""
    context = browser.new_context(
        viewport=DESKTOP, http_credentials={"username": "operator", "password": ADMIN_SECRET}
    )
    page = context.new_page()
    try:
        response = page.goto(f"{origin}/admin")
        failing = page.locator("[data-failing]")
        assert failing.count() == 1
        box = failing.bounding_box()
        assert box is not None
        first_chart = page.locator("[data-chart]").first.bounding_box()
        assert first_chart is not None
        assert box["y"] + box["height"] <= DESKTOP["height"] < first_chart["y"]
        assert "Last try: Dee Wan did not answer within 10 seconds" in failing.inner_text()
        print("operator page height at 1280 px:", page.evaluate("document.body.scrollHeight"))
        audit(page, response, "operator-attention", shots)
        page.set_viewport_size(PHONE)
        response = page.reload()
        why = page.locator("table[data-table=refusals] td.why").first
        cell = why.bounding_box()
        assert cell is not None
        assert cell["x"] >= 0, cell
        assert cell["x"] + cell["width"] <= PHONE["width"], cell
        assert why.is_visible()
        audit(page, response, "operator-attention-390", shots)
    finally:
        context.close()


def test_without_the_secret_nobody_gets_in(origin: str, browser: Browser, shots: Path) -> None:
    """The real server asks for Basic credentials and refuses wrong ones: Chromium, given a
    wrong password, shows the refusal (and it passes axe too)."""
    asked = httpx.get(f"{origin}/admin", headers={"accept": "text/html"})
    assert asked.status_code == 401
    assert asked.headers["www-authenticate"] == 'Basic realm="Scheduling operator", charset="UTF-8"'
    assert 'data-error-code="unauthorized"' in asked.text
    wrong = httpx.get(f"{origin}/admin", auth=("operator", "not-it-at-all"))
    assert (wrong.status_code, wrong.json()["code"]) == (401, "unauthorized")
    context = browser.new_context(
        viewport=DESKTOP, http_credentials={"username": "operator", "password": "not-it-at-all"}
    )
    try:
        page = context.new_page()
        response = page.goto(f"{origin}/admin")
        assert response is not None
        assert response.status == 401
        assert page.locator("[data-error-code=unauthorized]").count() == 1
        assert page.get_by_role("heading", name="Operator sign-in required").is_visible()
        assert ADMIN_SECRET not in page.content()
        audit(page, response, "operator-401", shots)
    finally:
        context.close()

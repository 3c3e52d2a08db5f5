"""Headless Chromium against the real dev stack: what the browser tests share.

Debian's Chromium (never `playwright install`) and axe-core from
tests/browser/node_modules: `bash tests/browser/setup.sh` installs both.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
from playwright.sync_api import Locator, Page, ViewportSize
from playwright.sync_api import Response as PageResponse

from scripts.devstack import DevStack

CHROMIUM = Path("/usr/bin/chromium")
AXE = Path(__file__).resolve().parents[1] / "browser" / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PERSON = "Ada Lovelace (editor)"  # first in the home page's person menus
ADMIN = "Margaret Hamilton (admin)"  # the demo's site admin: Dee Wan offers Manage to her alone
PHONE: ViewportSize = {"width": 390, "height": 844}
DESKTOP: ViewportSize = {"width": 1280, "height": 900}
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]


def missing_pieces() -> str | None:
    for needed in (CHROMIUM, AXE):
        if not needed.exists():
            return f"{needed} is missing: run `bash tests/browser/setup.sh`"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def installed_stack(state_dir: Path, **options: Any) -> Iterator[DevStack]:
    """The plugin (no cron) and the local Dee Wan on free ports, the plugin installed."""
    dev = DevStack(
        plugin_port=free_port(), core_port=free_port(), state_dir=state_dir, cron=False, **options
    )
    with dev:
        dev.install()
        yield dev


def wall(local: str, zone: str, fold: int = 0) -> datetime:
    return datetime.strptime(local, "%Y-%m-%dT%H:%M").replace(tzinfo=ZoneInfo(zone), fold=fold)


def minutes_ahead(zone: str, minutes: int) -> tuple[str, int]:
    """A wall time `minutes` from now in `zone`, and its UTC instant in epoch ms."""
    instant = (datetime.now(UTC) + timedelta(minutes=minutes)).replace(second=0, microsecond=0)
    local = instant.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%dT%H:%M")
    assert wall(local, zone).astimezone(UTC) == instant, "pick a time that is not ambiguous"
    return local, int(instant.timestamp() * 1000)


def run_tick(plugin_origin: str, at_ms: int) -> None:
    """One runner tick at `at_ms`, through the plugin's development trigger."""
    tick = httpx.get(
        f"{plugin_origin}/__scheduled",
        params={"cron": "* * * * *", "time": str(at_ms)},
        timeout=30,
    )
    assert tick.status_code == 200, tick.text
    assert tick.json()["code"] == "tick_finished"


def schedule_item(page: Page, schedule_id: str) -> Locator:
    return page.locator(f'li.schedule[data-schedule-id="{schedule_id}"]')


def confirmed_id(page: Page) -> str:
    notice = page.locator("[data-confirmation]")
    assert notice.count() == 1, "no confirmation on the page"
    return str(notice.get_attribute("data-confirmation"))


def axe_violations(page: Page) -> list[str]:
    """axe-core's WCAG 2.0/2.1/2.2 A and AA rules on the whole document: each violation as
    `rule (impact): help: where`. Injected over DevTools, which the page's CSP does not govern."""
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.evaluate(AXE.read_text() + "\n;0")
    result: dict[str, Any] = page.evaluate(
        """tags => axe.run(document, {runOnly: {type: "tag", values: tags}}).then(r => ({
             passes: r.passes.length,
             violations: r.violations.map(v => v.id + " (" + v.impact + "): " + v.help + ": "
               + v.nodes.map(n => n.target.join(" ")).join(", "))}))""",
        WCAG_TAGS,
    )
    assert result["passes"] > 0, "axe ran no rules"
    return list(result["violations"])


def fake(stack: DevStack, control: str, **body: Any) -> None:
    """One of the local Dee Wan's development controls (`/__fake/...`)."""
    httpx.post(f"{stack.core_origin}/__fake/{control}", json=body, timeout=10).raise_for_status()


def seed(stack: DevStack, *contents: tuple[str, str]) -> None:
    """More content items (id, title) in the local Dee Wan."""
    fake(stack, "seed", contents=[{"id": cid, "title": title} for cid, title in contents])


def open_home(page: Page, stack: DevStack) -> None:
    page.goto(f"{stack.core_origin}/")
    assert page.get_by_role("heading", name="Local Dee Wan").is_visible()


def launch(
    page: Page, stack: DevStack, content_id: str | None = None, person: str | None = None
) -> PageResponse:
    """Use Dee Wan's Schedule button on a content row (or, as a site admin, its Scheduling
    button to manage)."""
    open_home(page, stack)
    ins = str(stack.installation["id"])
    if person is None:
        person = PERSON if content_id is not None else ADMIN
    if content_id is None:
        label, where = f"Scheduling ({ins})", page.locator("form")
    else:
        row = page.locator("tr").filter(has=page.get_by_role("cell", name=content_id, exact=True))
        label, where = f"Schedule ({ins})", row.locator("form")
    form = where.filter(has=page.get_by_role("button", name=label))
    form.get_by_role("combobox", name="as person").select_option(label=person)
    button = form.get_by_role("button", name=label)
    # The launch's page, addressed by its handle: a launch per tab.
    landing = re.compile(re.escape(f"{stack.plugin_origin}/installations/{ins}?tab=") + ".{12}$")
    with page.expect_navigation(url=landing) as landed:
        button.click()
    response = landed.value
    assert response is not None
    assert response.status == 200
    assert "dee_wan_launch" not in page.url
    assert page.get_by_text(f"Opened from Dee Wan by {person}").is_visible()
    return response

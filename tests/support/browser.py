"""Headless Chromium against the real dev stack: what the browser tests share.

Debian's Chromium (never `playwright install`) and axe-core from
tests/browser/node_modules: `bash tests/browser/setup.sh` installs both.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
from playwright.sync_api import Locator, Page

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

"""Issue 38: every page leads somewhere. One test per friction the walk after round four
found (the browser walk has their pictures)."""

from __future__ import annotations

import html
import re

import pytest

from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock
from tests.support.world import Browser, World


@pytest.fixture
def world(db: SqliteDatabase, clock: FakeClock) -> World:
    return World(db, clock)


def words(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def next_steps(page: str) -> dict[str, str]:
    return {
        name: html.unescape(href)
        for href, name in re.findall(r'<a [^>]*href="([^"]+)" data-next="([^"]+)"', page)
    }


# -- 1. the chat message's link, opened without a session ------------------------------------


async def test_a_chat_link_without_a_session_leads_somewhere_without_naming_dee_wan(
    world: World,
) -> None:
    installation = await world.install()
    stranger = Browser(world.app)
    page = f"/installations/{installation.id}"
    refused = await stranger.get(page)
    assert refused.status == 401
    shown = refused.body.decode()
    assert next_steps(shown) == {"retry": page, "about": "/"}
    assert "Open Scheduling from Dee Wan in this browser first" in words(shown)
    assert world.core.base_url not in shown
    # Once opened from Dee Wan in that browser, the same link shows the page.
    launch = world.core.issue_launch(installation.id, "usr_editor", {"kind": "manage"})
    assert (await stranger.get(launch.url)).status == 303
    assert (await stranger.get(page)).status == 200
    # The page it leads to says how Scheduling is opened.
    about = await stranger.get("/")
    assert "open the content item in Dee Wan" in words(about.body.decode())


# -- 5. a reloaded refused form ----------------------------------------------------------------


async def test_a_get_of_the_schedules_address_leads_to_the_page(world: World) -> None:
    installation = await world.install()
    page = f"/installations/{installation.id}"
    for address in (
        f"{page}/schedules",
        f"{page}/schedules/sch_x/retry",
        f"{page}/schedules/sch_x/dismiss",
        f"{page}/notifications",
    ):
        answer = await Browser(world.app).get(address)
        assert answer.status == 303, address
        assert answer.header("location") == page
    odd = await Browser(world.app).get("/installations/not%20an%20id/schedules")
    assert odd.status == 404


# -- 8. smaller ones ---------------------------------------------------------------------------


async def test_the_favicon_is_not_a_404(world: World) -> None:
    answer = await Browser(world.app).get("/favicon.ico")
    assert answer.status == 204
    assert answer.body == b""

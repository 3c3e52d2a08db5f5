"""The local Dee Wan's "Fail on purpose" switches (issue 27, item 7), pressed on its home page as
a newcomer does, each seen through the plugin's own pages: down for a while, the next change
refused, garbage for an answer, slow answers, and back to normal."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import urlencode

import pytest

from fake_core.app import FakeCoreApp
from fake_core.testing import ORIGIN
from tests.support.world import MINUTE, World, row, schedule, tick_at

HOST = "127.0.0.1:8787"


@pytest.fixture
def home(world: World) -> FakeCoreApp:
    return FakeCoreApp(world.core, plugin_origin=ORIGIN)


async def press(home: FakeCoreApp, action: str, form: dict[str, str] | None = None) -> str:
    """A switch's form, posted from the page; the notice it leaves."""
    headers = {
        "Host": HOST,
        "Origin": f"http://{HOST}",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    body = urlencode(form or {}).encode()
    reply = await home.dispatch("POST", f"/ui/{action}", headers, body)
    assert (reply.status, reply.headers["location"]) == (303, "/")
    found = re.search(r'<p class="notice" role="status">(.*?)</p>', await page(home), re.S)
    assert found is not None
    return unescape(found.group(1))


async def page(home: FakeCoreApp) -> str:
    reply = await home.dispatch("GET", "/", {"Host": HOST}, b"")
    assert reply.status == 200
    return reply.body.decode()


def now_state(html: str) -> str:
    found = re.search(r"<p data-failures>(.*?)</p>", html, re.S)
    assert found is not None
    return unescape(found.group(1))


async def test_the_switches_are_on_the_page_named_as_the_walkthrough_names_them(
    home: FakeCoreApp,
) -> None:
    html = await page(home)
    assert '<h2 id="failures">Fail on purpose</h2>' in html
    for label in ("Be down", "Refuse the next change", "Answer garbage", "Answer slowly"):
        assert f"<button>{label}</button>" in html
    assert "<button>Back to normal</button>" in html
    assert now_state(html) == "Now: Dee Wan answers normally."


async def test_down_for_two_minutes_then_up_again(world: World, home: FakeCoreApp) -> None:
    installation = await world.install()
    editor = await world.open_page(installation)
    notice = await press(home, "fail-down", {"minutes": "2"})
    assert notice.startswith("Dee Wan is down for 2 minutes, until 1 Jul 2026, 10:02:00 UTC")
    assert now_state(await page(home)).startswith("Down until 1 Jul 2026, 10:02:00 UTC")
    down = await editor.get(f"/installations/{installation.id}")
    assert 'data-unread="dee_wan_unavailable"' in down.body.decode()
    world.clock.advance(2 * MINUTE)
    up = await editor.get(f"/installations/{installation.id}")
    assert "data-unread" not in up.body.decode()
    assert now_state(await page(home)) == "Now: Dee Wan answers normally."


async def test_refuse_the_next_change(world: World, home: FakeCoreApp) -> None:
    installation = await world.install()
    made = await schedule(world, installation)
    assert "refused (422 transition_refused)" in await press(home, "fail-refuse")
    assert now_state(await page(home)) == "The next change command gets 422 transition_refused."
    await tick_at(world, made["due_at"])
    assert (await row(world, made["id"]))["result_code"] == "transition_refused"
    editor = await world.open_page(installation)
    assert f'data-retry-of="{made["id"]}"' in editor.page()


async def test_answer_garbage_to_the_next_content_read(world: World, home: FakeCoreApp) -> None:
    installation = await world.install()
    editor = await world.open_page(installation)
    await press(home, "fail-garbage", {"endpoint": "content"})
    garbled = await editor.get(f"/installations/{installation.id}")
    assert 'data-unread="untrusted_response"' in garbled.body.decode()
    again = await editor.get(f"/installations/{installation.id}")
    assert "data-unread" not in again.body.decode()  # once


async def test_answer_slowly_then_back_to_normal(home: FakeCoreApp) -> None:
    notice = await press(home, "fail-slow", {"seconds": "12"})
    assert "12 s late (more than 10 s is a timeout for the plugin)" in notice
    assert home.core.faults.latency_s == {"*": 12.0}
    await press(home, "fail-refuse")
    assert now_state(await page(home)) == (
        "Every answer comes 12 s late. The next change command gets 422 transition_refused."
    )
    assert (await press(home, "fail-normal")).startswith("Back to normal")
    assert now_state(await page(home)) == "Now: Dee Wan answers normally."
    assert home.core.faults.pending() == []


@pytest.mark.parametrize(
    ("action", "form"),
    [
        ("fail-down", {"minutes": "0"}),
        ("fail-down", {"minutes": "61"}),
        ("fail-down", {"minutes": "soon"}),
        ("fail-slow", {"seconds": "31"}),
        ("fail-garbage", {"endpoint": "exchange"}),
    ],
)
async def test_a_switch_out_of_range_says_so_and_changes_nothing(
    home: FakeCoreApp, action: str, form: dict[str, str]
) -> None:
    notice = await press(home, action, form)
    assert notice.startswith(("The ", "Choose a ")), notice
    assert now_state(await page(home)) == "Now: Dee Wan answers normally."

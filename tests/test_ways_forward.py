"""Issue 38: every page leads somewhere. One test per friction the walk after round four
found (the browser walk has their pictures)."""

from __future__ import annotations

import html
import re

from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock
from tests.support.world import Browser, World, next_steps, words

# -- 5. a reloaded refused form ----------------------------------------------------------------


async def test_a_get_of_the_schedules_address_leads_to_the_page(world: World) -> None:
    installation = await world.install()
    page = f"/installations/{installation.id}"
    for address in (
        f"{page}/schedules",
        f"{page}/schedules/sch_x/retry",
        f"{page}/schedules/sch_x/dismiss",
        f"{page}/calendar/feed",
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


# -- 2. opening Scheduling while Dee Wan is down -------------------------------------------------


async def test_a_launch_while_dee_wan_is_down_says_to_open_it_again_with_no_launch_code(
    world: World,
) -> None:
    """Issue 45, item 12: its Try again link carried the `dwl_` launch code, a secret no
    page or URL may carry (protocol §1)."""
    installation = await world.install()
    launch = world.core.issue_launch(installation.id, "usr_editor", {"kind": "manage"})
    world.core.faults.down_for(0.25, world.clock.now_ms())
    stranger = Browser(world.app)
    down = await stranger.get(launch.url)
    assert down.status == 503
    shown = down.body.decode()
    steps = next_steps(shown)
    assert steps["about"] == "/"
    assert "retry" not in steps
    assert "dee-wan" not in steps
    assert "dwl_" not in shown
    assert "dee_wan_launch" not in shown
    assert world.core.base_url not in shown
    assert "waiting schedules are still sent at their time" in words(shown)
    assert "Open Scheduling again from Dee Wan" in words(shown)
    # Dee Wan answers again: a new launch from Dee Wan opens the page.
    world.clock.advance(20_000)
    again = world.core.issue_launch(installation.id, "usr_editor", {"kind": "manage"})
    opened = await stranger.get(again.url)
    assert opened.status == 303
    assert (await stranger.follow(opened)).status == 200


async def test_a_launch_while_down_in_a_browser_with_a_session_leads_to_its_schedules(
    world: World,
) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    launch = world.core.issue_launch(installation.id, "usr_editor", {"kind": "manage"})
    world.core.faults.down_for(2, world.clock.now_ms())
    down = await browser.get(launch.url)
    assert down.status == 503
    steps = next_steps(down.body.decode())
    assert steps["back"] == f"/installations/{installation.id}"
    assert steps["dee-wan"] == world.core.base_url


# -- 3. a refused card during an outage blames the outage, not the person's rights --------------


async def test_a_refused_card_during_an_outage_names_the_outage(world: World) -> None:
    from fake_core.faults import Fault
    from tests.support.world import schedule, tick_at

    installation = await world.install()
    made = await schedule(world, installation)
    world.core.faults.push(Fault.respond(422, "transition_refused"))
    await tick_at(world, made["due_at"])
    browser = await world.open_page(installation)
    world.core.faults.down_for(5, world.clock.now_ms())
    shown = (await browser.get(f"/installations/{installation.id}")).body.decode()
    assert "data-unread=" in shown
    said = words(shown)
    assert "Dee Wan is not answering, so it cannot be tried again until it does" in said
    assert "You may not make this change now" not in said


# -- 4. a way back to Dee Wan, within a session only ---------------------------------------------


async def test_the_header_leads_back_to_dee_wan_within_a_session(world: World) -> None:
    installation = await world.install()
    editor = await world.open_page(installation)
    page = f"/installations/{installation.id}"
    shown = (await editor.get(page)).body.decode()
    back = re.search(r'<header class="top">.*?</header>', shown, re.S)
    assert back
    assert f'<a href="{world.core.base_url}" data-dee-wan>Back to Dee Wan</a>' in back.group(0)
    manage = await world.browser_for(installation, content_id=None)
    assert "data-dee-wan" in (await manage.get(page)).body.decode()
    # Without a session no page names it (the 401 page, the home page).
    for address in (page, "/", f"{page}/schedules/sch_x/cancel"):
        answer = await Browser(world.app).get(address)
        assert world.core.base_url not in answer.body.decode(), address


# -- 7. the manage view says which zone it shows, and why ---------------------------------------


async def test_the_manage_view_says_its_zone_when_dee_wan_does_not(world: World) -> None:
    from fake_core.faults import Fault

    installation = await world.install()
    editor = await world.open_page(installation)
    made = await editor.create(installation.id, timezone="Asia/Tokyo")
    assert made.status == 303
    manage = await world.browser_for(installation, content_id=None)
    page = f"/installations/{installation.id}"
    read = (await manage.get(page)).body.decode()
    assert 'data-zone="Europe/Paris"' in read  # the site's zone, as Dee Wan reports it
    assert "data-zone-note" not in read
    # Dee Wan does not answer the reads: the zone is the latest schedule's, and said so.
    world.core.faults.push(Fault.respond(503, "unavailable"), endpoint="content", times=5)
    slow = (await manage.get(page)).body.decode()
    assert 'data-zone="Asia/Tokyo"' in slow
    note = re.search(r"<span data-zone-note>([^<]+)</span>", slow)
    assert note
    assert "Times are in Asia/Tokyo, the zone of the latest schedule listed" in note.group(1)
    assert "Dee Wan did not say the site's zone in time" in html.unescape(note.group(1))


async def test_the_zone_list_offers_no_factory_nor_old_aliases(world: World) -> None:
    installation = await world.install()
    editor = await world.open_page(installation)
    shown = editor.page()
    offered = set(re.findall(r'<option value="([^"]+)">', shown))
    assert {"Europe/Paris", "Asia/Kolkata", "Europe/Kyiv", "UTC"} <= offered
    assert not offered & {"Factory", "Asia/Calcutta", "Europe/Kiev", "US/Eastern"}
    # An old alias typed by hand is still understood.
    made = await editor.create(installation.id, timezone="Asia/Calcutta")
    assert made.status == 303


async def test_the_endpoint_hint_names_the_local_origins_in_development(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    from tests.support.app import base_env

    for env, said in (
        (base_env(), False),
        (base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS="http://localhost:8787"), True),
    ):
        world = World(db, clock, env=env)
        installation = await world.install()
        manage = await world.browser_for(installation, content_id=None)
        shown = (await manage.get(f"/installations/{installation.id}/notifications")).body.decode()
        hint = re.search(r'<p class="hint" id="endpoint-url-hint">(.*?)</p>', shown, re.S)
        assert hint
        assert ("in development also an address on http://localhost:8787" in words(hint[1])) == said

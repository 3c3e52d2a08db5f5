"""An editor works on many contents at once (issue 48 items 1, 2, 5, 6), through the pages:
a launch per tab, the installation's rooms and one navigation, the calendar and its feed,
and what happened since the last visit. The browser's own walk is tests/test_editors_browser.py.
"""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime

import icalendar
import pytest

from fake_core import Fault
from scheduling.repository import people
from tests.support.runtimes import Runtime
from tests.support.world import MINUTE, Browser, World, next_steps, schedule, tick_at, words

DAY = 86_400_000


def rooms_of(page: str) -> dict[str, str]:
    """The navigation's rooms: name -> address."""
    found = re.findall(r'<a href="([^"]+)" data-room="([a-z]+)"', page)
    return {name: html.unescape(href) for href, name in found}


def opened_for(page: str) -> str:
    found = re.search(r'name="opened_for" value="([^"]*)"', page)
    assert found, "no form on the page"
    return found.group(1)


async def launch_in_a_tab(
    world: World, browser: Browser, installation_id: str, **context: str
) -> str:
    """Dee Wan opens Scheduling in a new tab of the same browser: the tab's page address."""
    kind = {"kind": "content", **context} if context else {"kind": "manage"}
    launch = world.core.issue_launch(installation_id, "usr_editor", kind)
    answer = await browser.get(launch.url)
    assert answer.status == 303, answer.body[:300]
    return answer.header("location") or ""


# -- a launch per tab ------------------------------------------------------------------------


async def test_two_contents_in_two_tabs_each_show_and_act_on_their_own_content(
    world: World,
) -> None:
    installation = await world.install()
    browser = Browser(world.app)  # one browser, one cookie jar
    first = await launch_in_a_tab(world, browser, installation.id, content_id="cnt_en")
    second = await launch_in_a_tab(world, browser, installation.id, content_id="cnt_pub")
    assert first != second
    assert "?tab=" in first

    made = {}
    for tab, content in ((first, "cnt_en"), (second, "cnt_pub")):
        page = (await browser.get(tab)).body.decode()  # reloaded after the other's launch
        assert opened_for(page) == content
        tab_field = re.findall(r'name="tab" value="([^"]+)"', page)
        assert tab_field
        assert set(tab_field) == {tab.rsplit("=", 1)[1]}
        assert all("tab=" in href for href in rooms_of(page).values())
        fields = {**browser.create_form(), "tab": tab_field[0], "opened_for": content}
        if content == "cnt_pub":
            fields["transition"] = "unpublish:draft"
        created = await browser.post(f"/installations/{installation.id}/schedules", fields)
        assert created.status == 303, created.body[:500]  # never `session_replaced`
        receipt = created.header("location") or ""
        assert receipt.startswith(tab + "&created=")
        made[content] = receipt.rsplit("=", 1)[1]
    for tab, content in ((first, "cnt_en"), (second, "cnt_pub")):
        page = (await browser.get(tab)).body.decode()
        assert opened_for(page) == content
        assert f'data-schedule-id="{made[content]}"' in page
        other = made["cnt_pub" if content == "cnt_en" else "cnt_en"]
        assert f'data-schedule-id="{other}"' not in page
    rows = await world.db.prepare("SELECT id, content_id FROM schedules").all()
    assert {r["id"]: r["content_id"] for r in rows.results} == {
        made["cnt_en"]: "cnt_en",
        made["cnt_pub"]: "cnt_pub",
    }
    # An address without a handle is the latest launch's, as before handles.
    latest = (await browser.get(f"/installations/{installation.id}")).body.decode()
    assert opened_for(latest) == "cnt_pub"
    assert 'name="tab"' not in latest


async def test_a_tab_whose_launch_ended_says_so_and_never_shows_another_launch(
    world: World,
) -> None:
    installation = await world.install()
    browser = Browser(world.app)
    first = await launch_in_a_tab(world, browser, installation.id, content_id="cnt_en")
    tab = first.rsplit("=", 1)[1]
    await launch_in_a_tab(world, browser, installation.id, content_id="cnt_pub")
    del browser.cookies[f"__Host-scheduling_tab_{tab}"]  # its cookie expired
    gone = await browser.get(first)
    assert gone.status == 401
    assert 'data-error-code="session_expired"' in gone.body.decode()
    for strange in ("x", "../../etc", "A" * 13):
        refused = await browser.get(f"/installations/{installation.id}?tab={strange}")
        assert refused.status == 401


async def test_a_refused_forms_way_back_stays_in_its_tab(world: World) -> None:
    installation = await world.install()
    browser = Browser(world.app)
    first = await launch_in_a_tab(world, browser, installation.id, content_id="cnt_en")
    await launch_in_a_tab(world, browser, installation.id, content_id="cnt_pub")
    await browser.get(first)
    refused = await browser.post(
        f"/installations/{installation.id}/schedules/sch_nope/cancel",
        {"csrf_token": browser.csrf(), "opened_for": "cnt_en", "tab": first.rsplit("=", 1)[1]},
    )
    assert refused.status == 404
    assert next_steps(refused.body.decode())["back"] == first


# -- rooms and one navigation ------------------------------------------------------------


async def test_each_room_is_one_subject_and_the_navigation_is_what_the_launch_allows(
    world: World,
) -> None:
    installation = await world.install()
    browser = Browser(world.app)
    manage = await launch_in_a_tab(world, browser, installation.id)
    page = (await browser.get(manage)).body.decode()
    rooms = rooms_of(page)
    assert list(rooms) == ["schedules", "releases", "calendar", "notifications", "agents"]
    assert 'data-room="schedules" aria-current="page"' in page
    assert "data-endpoint-id" not in page
    assert "agent-keys" not in page
    for name, href in rooms.items():
        shown = await browser.get(href)
        assert shown.status == 200, (name, shown.body[:300])
        assert f'data-room="{name}" aria-current="page"' in shown.body.decode()
    assert "data-releases-empty" in (await browser.get(rooms["releases"])).body.decode()
    assert (
        'data-form="notification-endpoint"'
        in (await browser.get(rooms["notifications"])).body.decode()
    )

    content = await launch_in_a_tab(world, browser, installation.id, content_id="cnt_en")
    page = (await browser.get(content)).body.decode()
    assert list(rooms_of(page)) == ["schedules", "releases", "calendar", "agents"]
    assert "Agent keys" not in page
    forbidden = await browser.get(f"/installations/{installation.id}/notifications")
    assert forbidden.status == 403


async def test_the_content_page_says_when_an_agent_proposes_for_it_and_leads_to_agents(
    world: World,
) -> None:
    from tests.support.agents import mint_key, propose

    installation = await world.install()
    key = await mint_key(world, installation, content_id="cnt_en")
    proposal_id = await propose(world, key)
    browser = Browser(world.app)
    tab = await launch_in_a_tab(world, browser, installation.id, content_id="cnt_en")
    page = (await browser.get(tab)).body.decode()
    assert "data-proposals-waiting" in page
    assert proposal_id not in page
    agents = re.findall(r'data-proposals-waiting><a href="([^"]+)"', page)[0]
    shown = (await browser.get(html.unescape(agents))).body.decode()
    assert f'data-proposal-id="{proposal_id}"' in shown
    assert 'data-proposal-action="confirm"' in shown


# -- the calendar ----------------------------------------------------------------------------


async def test_the_calendar_lists_waiting_changes_by_day_in_time_order_across_contents(
    world: World,
) -> None:
    installation = await world.install()
    # 2026-07-01T10:00Z is a Wednesday: today, with Monday 29 June to Sunday 5 July its week.
    later = await schedule(world, installation, "cnt_page", in_minutes=26 * 60)
    sooner = await schedule(world, installation, "cnt_en", in_minutes=60)
    next_week = await schedule(world, installation, "cnt_pub", in_minutes=8 * 24 * 60,
                               transition="unpublish:draft")  # fmt: skip
    browser = Browser(world.app)
    tab = await launch_in_a_tab(world, browser, installation.id, content_id="cnt_en")
    calendar = rooms_of((await browser.get(tab)).body.decode())["calendar"]
    page = (await browser.get(calendar)).body.decode()
    days = re.findall(r'data-day="([0-9-]+)"', page)
    assert days == [
        f"2026-0{m}-{d:02d}" for m, d in ((6, 29), (6, 30), *((7, n) for n in range(1, 6)))
    ]
    today = page.split('data-day="2026-07-01"', 1)[1].split('data-day="2026-07-02"', 1)[0]
    assert 'aria-current="date"' in today
    assert sooner["id"] in today
    listed = re.findall(r'data-schedule-id="([^"]+)"', page)
    assert listed == [sooner["id"], later["id"]]
    assert next_week["id"] not in page
    said = words(page)
    assert "Publish “Spring launch”" in said
    assert "Publish “About”" in said
    assert sooner["version_id"] not in page  # no pin on the calendar
    # Their own content links to its card in this tab; another content's has no page here.
    assert f'href="{html.escape(tab)}#schedule-{sooner["id"]}"' in page
    entry = page.split(f'data-schedule-id="{later["id"]}"', 1)[1].split("</li>", 1)[0]
    assert "<a href" not in entry
    nxt = re.findall(r'<a href="([^"]+)" data-calendar-link="next"', page)[0]
    week_after = (await browser.get(html.unescape(nxt))).body.decode()
    assert re.findall(r'data-schedule-id="([^"]+)"', week_after) == [next_week["id"]]
    as_list = re.findall(r'<a href="([^"]+)" data-calendar-link="list"', page)[0]
    listing = (await browser.get(html.unescape(as_list))).body.decode()
    assert re.findall(r'data-schedule-id="([^"]+)"', listing) == [
        sooner["id"],
        later["id"],
        next_week["id"],
    ]


async def test_the_calendar_is_in_the_zone_chosen_and_flags_collisions(world: World) -> None:
    installation = await world.install()
    world.core.state.edit("cnt_pub")  # a newer draft: both changes offered
    unpublish = await schedule(world, installation, "cnt_pub", in_minutes=60,
                               transition="unpublish:draft")  # fmt: skip
    publish = await schedule(world, installation, "cnt_pub", in_minutes=120)
    browser = await world.browser_for(installation, content_id=None)
    page = (await browser.get(f"/installations/{installation.id}/calendar?zone=Asia/Tokyo")).body
    text = page.decode()
    assert 'data-zone="Asia/Tokyo"' in text
    assert re.findall(r'data-schedule-id="([^"]+)"[^>]*data-flagged="true"', text) == [
        unpublish["id"],
        publish["id"],
    ]
    assert "20:00 JST" in words(text)  # 11:00 UTC
    # A manage launch links each change to its card in the manage view.
    assert f"schedule={unpublish['id']}" in text
    typo = (await browser.get(f"/installations/{installation.id}/calendar?zone=Mars/Base")).body
    assert 'data-error-code="unknown_timezone"' in typo.decode()


# -- the calendar feed -----------------------------------------------------------------------


def feed_url(page: str) -> str:
    found = re.search(r"data-calendar-feed>([^<]+)<", page)
    assert found, "no feed address shown"
    return html.unescape(found.group(1))


async def make_feed(world: World, installation_id: str, person_tab: str, browser: Browser) -> str:
    page = (await browser.get(person_tab.replace("?", "/calendar?", 1))).body.decode()
    made = await browser.post(
        f"/installations/{installation_id}/calendar/feed",
        {"csrf_token": browser.csrf(), "opened_for": opened_for(page),
         "tab": person_tab.rsplit("=", 1)[1]},
    )  # fmt: skip
    assert made.status == 201, made.body[:500]
    return feed_url(made.body.decode())


async def test_a_feed_is_rfc_5545_of_the_waiting_changes_and_holds_no_pin_or_secret(
    world: World,
) -> None:
    installation = await world.install()
    first = await schedule(world, installation, "cnt_en", in_minutes=60)
    second = await schedule(world, installation, "cnt_page", in_minutes=3 * 60)
    done = await schedule(world, installation, "cnt_pub", in_minutes=2,
                          transition="unpublish:draft")  # fmt: skip
    await tick_at(world, done["due_at"])
    browser = Browser(world.app)
    tab = await launch_in_a_tab(world, browser, installation.id)
    url = await make_feed(world, installation.id, tab, browser)
    assert re.fullmatch(
        r"https://scheduling\.example/calendar-feeds/dwc_[A-Za-z0-9_-]{43}\.ics", url
    )
    again = (await browser.get(tab.replace("?", "/calendar?", 1))).body.decode()
    assert url not in again
    assert "data-calendar-feed-made" in again

    stranger = Browser(world.app)  # a calendar client: no session
    answer = await stranger.get(url.removeprefix("https://scheduling.example"))
    assert answer.status == 200
    assert answer.header("content-type") == "text/calendar; charset=utf-8"
    body = answer.body
    assert all(len(line) <= 75 for line in body.split(b"\r\n"))
    parsed = icalendar.Calendar.from_ical(body)
    events = list(parsed.walk("VEVENT"))
    assert [str(e["UID"]).split("@")[0] for e in events] == [first["id"], second["id"]]
    start = events[0].decoded("DTSTART")
    assert start == datetime.fromtimestamp(first["due_at"] / 1000, UTC)
    assert str(events[0]["SUMMARY"]) == "Publish “Spring launch”"
    assert str(events[0]["URL"]) == f"https://scheduling.example/installations/{installation.id}"
    for secret in (first["version_id"], second["version_id"], "dwp_", "dwd_", "dwc_", "tab="):
        assert secret.encode() not in body


async def test_a_feed_answers_plainly_when_malformed_unknown_revoked_or_ended(
    world: World,
) -> None:
    installation = await world.install()
    browser = Browser(world.app)
    tab = await launch_in_a_tab(world, browser, installation.id, content_id="cnt_en")
    url = (await make_feed(world, installation.id, tab, browser)).removeprefix(
        "https://scheduling.example"
    )
    client = Browser(world.app)
    assert (await client.get(url)).status == 200
    for wrong in ("/calendar-feeds/x.ics", "/calendar-feeds/dwc_" + "A" * 43 + ".ics"):
        answer = await client.get(wrong)
        assert answer.status == 404
        assert b"not_found" in answer.body
    world.clock.advance(people.FEED_DAYS * DAY)  # no launch for 30 days
    assert (await client.get(url)).status == 410
    tab = await launch_in_a_tab(world, browser, installation.id, content_id="cnt_en")  # renewed
    assert (await client.get(url)).status == 200
    page = (await browser.get(tab.replace("?", "/calendar?", 1))).body.decode()
    revoked = await browser.post(
        f"/installations/{installation.id}/calendar/feed/revoke",
        {
            "csrf_token": browser.csrf(),
            "opened_for": opened_for(page),
            "tab": tab.rsplit("=", 1)[1],
        },
    )
    assert revoked.status == 303
    assert "revoked" in words((await browser.follow(revoked)).body.decode())
    assert (await client.get(url)).status == 404


async def test_a_feed_of_an_uninstalled_installation_ends(world: World) -> None:
    installation = await world.install()
    await schedule(world, installation, "cnt_en", in_minutes=2)
    browser = Browser(world.app)
    tab = await launch_in_a_tab(world, browser, installation.id)
    url = (await make_feed(world, installation.id, tab, browser)).removeprefix(
        "https://scheduling.example"
    )
    world.core.uninstall(installation.id)
    await tick_at(world, world.clock.now_ms() + 2 * MINUTE)  # refused plugin_unauthorized
    assert (await Browser(world.app).get(url)).status == 410


async def test_a_content_launchs_feed_names_only_what_its_person_could_see(world: World) -> None:
    """A feed is read with no delegation: it names a content by the title its schedule keeps
    only where its person saw it (their own schedule), or for a site admin's feed."""
    installation = await world.install()
    mine = await schedule(world, installation, "cnt_en", in_minutes=60)
    browser = Browser(world.app)
    launch = world.core.issue_launch(
        installation.id, "usr_viewer", {"kind": "content", "content_id": "cnt_page"}
    )
    tab = (await browser.get(launch.url)).header("location") or ""
    url = (await make_feed(world, installation.id, tab, browser)).removeprefix(
        "https://scheduling.example"
    )
    parsed = icalendar.Calendar.from_ical((await Browser(world.app).get(url)).body)
    [event] = list(parsed.walk("VEVENT"))
    assert mine["id"] in str(event["UID"])
    assert str(event["SUMMARY"]) == "Publish content cnt_en"


# -- what happened since the last visit ------------------------------------------------------


async def test_a_launch_says_once_what_became_of_the_persons_schedules_since_the_last(
    world: World,
) -> None:
    installation = await world.install()
    done = await schedule(world, installation, "cnt_en", in_minutes=2)
    refused = await schedule(world, installation, "cnt_page", in_minutes=3)
    await tick_at(world, done["due_at"])
    world.core.faults.push(Fault.respond(422, "transition_refused"), endpoint="transitions")
    await tick_at(world, refused["due_at"])
    browser = Browser(world.app)
    tab = await launch_in_a_tab(world, browser, installation.id, content_id="cnt_en")
    page = (await browser.get(tab)).body.decode()
    news = page.split('class="notice news"', 1)[1].split("</section>", 1)[0]
    outcomes = dict(re.findall(r'data-news-of="([^"]+)" data-news-outcome="([a-z]+)"', news))
    assert outcomes == {done["id"]: "done", refused["id"]: "refused"}
    said = words(news)
    assert "Publish version" in said
    assert "“Spring launch”" in said
    assert "“About”" in said
    # Its own content's card is on this page; another content's is not reachable from here.
    assert f'href="{html.escape(tab)}#schedule-{done["id"]}"' in news
    assert "Open it from Dee Wan" in said
    again = (await browser.get(tab)).body.decode()
    assert "data-news-of" not in again  # once
    head = await browser.get(tab)
    assert "data-news-of" not in head.body.decode()


async def test_a_head_or_a_first_launch_uses_no_news_up(world: World) -> None:
    installation = await world.install()
    browser = Browser(world.app)
    first = await launch_in_a_tab(world, browser, installation.id, content_id="cnt_en")
    assert "data-news-of" not in (await browser.get(first)).body.decode()  # never launched
    made = await schedule(world, installation, "cnt_en", in_minutes=2)
    await tick_at(world, made["due_at"])
    tab = await launch_in_a_tab(world, browser, installation.id, content_id="cnt_en")
    await browser._send("HEAD", tab, {})
    assert f'data-news-of="{made["id"]}"' in (await browser.get(tab)).body.decode()


# -- both runtimes serve every new route -------------------------------------------------


@pytest.mark.parametrize("room", ["calendar", "releases", "agents", "notifications"])
async def test_every_new_room_is_served_on_both_runtimes(runtime: Runtime, room: str) -> None:
    installation_id = await runtime.install()
    visitor = await runtime.open_page(installation_id)
    page = await visitor.get(f"/installations/{installation_id}/{room}")
    assert page.status_code == 200, page.text[:2000]
    assert f'data-room="{room}" aria-current="page"' in page.text


async def test_the_feed_is_served_on_both_runtimes(runtime: Runtime) -> None:
    installation_id = await runtime.install()
    visitor = await runtime.open_page(installation_id)
    await visitor.get(f"/installations/{installation_id}/calendar")
    made = await visitor.post_form(
        f"/installations/{installation_id}/calendar/feed",
        {"csrf_token": visitor.csrf, "opened_for": "manage"},
    )
    assert made.status_code == 201, made.text[:2000]
    url = feed_url(made.text)
    answer = await runtime.http().get(url.removeprefix(runtime.origin))
    assert answer.status_code == 200, runtime.log_text()[-3000:]
    assert icalendar.Calendar.from_ical(answer.content)["VERSION"] == "2.0"
    assert (await runtime.http().get("/calendar-feeds/dwc_nope.ics")).status_code == 404

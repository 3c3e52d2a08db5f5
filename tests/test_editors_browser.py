"""An editor works on many contents at once, in a real browser (issues 47 and 48): two contents in
two tabs of one browser, each scheduling, reloaded and acting on its own content; the rooms, the
calendar (a week, a list, at 1280 and 390 px), the feed made and read by an iCalendar parser,
what happened since the last visit, and a release made from content pages, reordered, checked,
re-pinned and sent in order. Every new page and state: axe-core 0 violations at
1280 and 390 px. Headless Debian Chromium against `scripts.devstack` (tests/support/browser.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import icalendar
import pytest
from playwright.sync_api import Browser, BrowserContext, Page
from playwright.sync_api import Response as PageResponse

from scripts.devstack import DevStack
from tests.support.browser import (
    DESKTOP,
    PHONE,
    axe_violations,
    confirmed_id,
    installed_stack,
    launch,
    minutes_ahead,
    missing_pieces,
    run_tick,
    schedule_item,
    seed,
)
from tests.support.doc_pictures import picture
from tests.support.time_format import raw_times

RELEASED = ("Landing", "Article", "Menu")  # the release's contents, in the order added

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(missing_pieces() is not None, reason=missing_pieces() or ""),
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    with installed_stack(tmp_path_factory.mktemp("devstack")) as dev:
        contents = [("cnt_alpha", "Alpha news"), ("cnt_beta", "Beta page"), ("cnt_gamma", "Gamma")]
        contents += [(f"cnt_{name.lower()}", name) for name in RELEASED]
        seed(dev, *contents)
        yield dev


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(locale="en-US", viewport=DESKTOP)
    yield ctx
    ctx.close()


def follow(page: Page, target: str) -> PageResponse:
    with page.expect_navigation() as navigated:
        page.locator(target).first.click()
    assert navigated.value is not None
    return navigated.value


def audit(page: Page, state: str, shots: Path) -> None:
    """Time written one way, no sideways scrolling, and axe 0, at 1280 and then 390 px."""
    for size in (DESKTOP, PHONE):
        page.set_viewport_size(size)
        assert raw_times(page.content()) == [], f"{state} writes time in a raw format"
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{state} scrolls sideways by {overflow}px at {size['width']} px"
        page.screenshot(path=str(shots / f"editors-{state}-{size['width']}.png"), full_page=True)
        violations = axe_violations(page)
        assert not violations, f"axe on {state} at {size['width']} px:\n" + "\n".join(violations)
    page.set_viewport_size(DESKTOP)


def schedule_here(page: Page, local: str, zone: str) -> str:
    page.locator("#local_time").fill(local)
    page.locator("#timezone").fill(zone)
    with page.expect_navigation():
        page.get_by_role("button", name="Schedule", exact=True).click()
    return confirmed_id(page)


def test_two_contents_in_two_tabs_of_one_browser_each_keep_their_own(
    stack: DevStack, context: BrowserContext, shots: Path
) -> None:
    first, second = context.new_page(), context.new_page()
    launch(first, stack, "cnt_alpha")
    launch(second, stack, "cnt_beta")  # the second tab's launch comes after the first's
    alpha = schedule_here(first, minutes_ahead("Europe/Paris", 90)[0], "Europe/Paris")
    beta = schedule_here(second, minutes_ahead("Europe/Paris", 120)[0], "Europe/Paris")
    tabs = ((first, "Alpha news", alpha, beta), (second, "Beta page", beta, alpha))
    for page, title, mine, other in tabs:
        page.reload()
        assert page.get_by_role("heading", level=1).inner_text() == f"Schedule “{title}”"
        assert schedule_item(page, mine).is_visible()
        assert schedule_item(page, other).count() == 0
    audit(first, "tab-content", shots)
    picture(first, "tab-content", shots, width=1280)
    # The first tab acts on its own content: its Cancel… and the confirmation stay in its launch.
    follow(first, f'li.schedule[data-schedule-id="{alpha}"] a.cancel')
    follow(first, "button.danger")
    assert first.locator(f'[data-cancelled="{alpha}"]').is_visible()
    assert first.get_by_role("heading", level=1).inner_text() == "Schedule “Alpha news”"
    second.reload()
    assert schedule_item(second, beta).get_attribute("data-status") == "pending"


def test_the_rooms_the_calendar_and_its_feed(
    stack: DevStack, context: BrowserContext, shots: Path
) -> None:
    page = context.new_page()
    launch(page, stack, "cnt_gamma")
    due = schedule_here(page, minutes_ahead("UTC", 60 * 24)[0], "UTC")
    launch(page, stack)  # the site admin
    for room in ("releases", "notifications", "agents"):
        follow(page, f'nav.rooms [data-room="{room}"]')
        assert page.locator(f'nav.rooms [data-room="{room}"][aria-current="page"]').count() == 1
        audit(page, f"room-{room}", shots)
    follow(page, 'nav.rooms [data-room="calendar"]')
    assert page.locator(f'[data-schedule-id="{due}"]').count() in (0, 1)  # maybe next week
    if page.locator(f'[data-schedule-id="{due}"]').count() == 0:
        follow(page, '[data-calendar-link="next"]')
    change = page.locator(f'li.calendar-change[data-schedule-id="{due}"]')
    assert "Publish “Gamma”" in change.inner_text()
    assert page.locator('li.calendar-day[aria-current="date"]').count() <= 1
    audit(page, "calendar-week", shots)
    picture(page, "calendar-week", shots, width=1280)
    follow(page, '[data-calendar-link="list"]')
    assert page.locator(f'li.calendar-change[data-schedule-id="{due}"]').is_visible()
    audit(page, "calendar-list", shots)

    follow(page, "form[action$='/calendar/feed'] button")
    address = page.locator("[data-calendar-feed]").inner_text()
    audit(page, "calendar-feed-made", shots)
    feed = httpx.get(address, timeout=10)  # as a calendar client fetches it
    assert feed.status_code == 200
    events = list(icalendar.Calendar.from_ical(feed.content).walk("VEVENT"))
    uids = [str(e["UID"]).split("@")[0] for e in events]
    assert due in uids  # with the other tests' waiting changes
    summary = next(str(e["SUMMARY"]) for e in events if str(e["UID"]).startswith(due))
    assert summary == "Publish “Gamma”"
    follow(page, 'nav.rooms [data-room="calendar"]')  # shown once
    assert page.locator("[data-calendar-feed]").count() == 0
    follow(page, "form[action$='/calendar/feed/revoke'] button")
    assert httpx.get(address, timeout=10).status_code == 404
    audit(page, "calendar-feed-revoked", shots)


def test_the_first_page_after_a_launch_says_what_happened_since_once(
    stack: DevStack, context: BrowserContext, shots: Path
) -> None:
    page = context.new_page()
    launch(page, stack, "cnt_alpha")
    local, due_ms = minutes_ahead("Europe/Paris", 2)
    made = schedule_here(page, local, "Europe/Paris")
    run_tick(stack.plugin_origin, due_ms + 1000)
    launch(page, stack, "cnt_alpha")
    news = page.locator(f'[data-news-of="{made}"]')
    assert news.get_attribute("data-news-outcome") == "done"
    audit(page, "news", shots)
    page.reload()
    assert page.locator("[data-news-of]").count() == 0


def release_items(page: Page) -> list[str]:
    """The release page's items, in send order."""
    cards = page.locator("ol.release-items li.schedule")
    return [str(cards.nth(n).get_attribute("data-schedule-id")) for n in range(cards.count())]


def add_to_release(page: Page, stack: DevStack, content_id: str, release: str) -> str:
    """From a content's page: its publish added to a waiting release (its time is used)."""
    launch(page, stack, content_id)
    page.get_by_label("Release", exact=True).select_option(release)
    with page.expect_navigation():
        page.get_by_role("button", name="Schedule", exact=True).click()
    return confirmed_id(page)


def test_a_release_is_made_reordered_checked_repinned_and_sent_in_order(
    stack: DevStack, context: BrowserContext, shots: Path
) -> None:
    landing, article, menu = (f"cnt_{name.lower()}" for name in RELEASED)
    page = context.new_page()
    launch(page, stack, landing)
    local, due_ms = minutes_ahead("Europe/Paris", 10)  # a tick is at most 15 min ahead
    page.locator("#local_time").fill(local)
    page.locator("#timezone").fill("Europe/Paris")
    page.get_by_label("Release", exact=True).select_option("new")
    page.get_by_label("Name of a new release").fill("Autumn launch")
    picture(page, "release-form", shots, width=1280, show="#new-heading")
    with page.expect_navigation():
        page.get_by_role("button", name="Schedule", exact=True).click()
    first = confirmed_id(page)
    named = schedule_item(page, first).locator(".release-of")
    release = str(named.get_attribute("data-release-id"))
    assert named.get_attribute("data-release-status") == "waiting"
    audit(page, "release-made", shots)
    second = add_to_release(page, stack, article, release)
    third = add_to_release(page, stack, menu, release)

    # The item's card leads to the release's page, within the launch's tab.
    tab = page.url.split("tab=", 1)[1].split("&", 1)[0]
    follow(page, f'li.schedule[data-schedule-id="{third}"] .release-of a')
    assert page.url.endswith(f"/releases/{release}?tab={tab}")
    assert release_items(page) == [first, second, third]
    # A site admin, who may act on every item, finds it in the Releases room and reorders it.
    launch(page, stack)
    follow(page, 'nav.rooms [data-room="releases"]')
    line = page.locator(f'li.release-line[data-release-id="{release}"]')
    assert line.get_attribute("data-release-status") == "waiting"
    assert "“Autumn launch”: 3 items, at " in line.inner_text()
    audit(page, "releases-room", shots)
    follow(page, f'li.release-line[data-release-id="{release}"] a')
    follow(page, f'li[data-order-of="{first}"] button:has-text("Down")')
    assert release_items(page) == [second, first, third]
    audit(page, "release-page", shots)

    # Someone saves a new version of the menu in Dee Wan: Check now finds the conflict.
    httpx.post(
        f"{stack.core_origin}/__fake/content",
        json={"content_id": menu, "action": "edit"},
        timeout=10,
    ).raise_for_status()
    follow(page, "button:has-text('Check now')")
    section = page.locator("section.release")
    assert section.get_attribute("data-release-status") == "conflict"
    assert schedule_item(page, third).get_attribute("data-pin-stale") == "true"
    audit(page, "release-conflict", shots)
    picture(page, "release-page", shots, width=1280)

    # The menu's page re-pins it in one step: the new item keeps its place.
    launch(page, stack, menu)
    follow(page, f'li.schedule[data-schedule-id="{third}"] form.repin button')
    repinned = confirmed_id(page)
    follow(page, f'li.schedule[data-schedule-id="{repinned}"] .release-of a')
    assert release_items(page) == [second, first, repinned]
    assert page.locator("section.release").get_attribute("data-release-status") == "waiting"

    # At its time the three are applied, one at a time, in the order shown.
    since = httpx.get(f"{stack.core_origin}/__fake/calls", timeout=10).json()["calls"]
    run_tick(stack.plugin_origin, due_ms + 1000)
    page.reload()
    assert page.locator("section.release").get_attribute("data-release-status") == "completed"
    statuses = page.locator("ol.release-items li.schedule")
    assert [statuses.nth(n).get_attribute("data-status") for n in range(3)] == ["completed"] * 3
    calls = httpx.get(
        f"{stack.core_origin}/__fake/calls",
        params={"endpoint": "transitions", "since": str(max((c["seq"] for c in since), default=0))},
        timeout=10,
    ).json()["calls"]
    sent = [(c["body"]["content_id"], c["code"]) for c in calls]
    assert sent == [(c, "transition_applied") for c in (article, landing, menu)]
    audit(page, "release-completed", shots)

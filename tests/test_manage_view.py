"""The manage view for hundreds of schedules: pages of 50, agenda order, filters, live titles."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

import pytest

from fake_core import Fault
from fake_core.state import Installation
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import START_MS, FakeClock, base_env
from tests.support.in_flight import InFlight
from tests.support.world import Browser, World, local, path_of, schedules_on

HALF_HOUR = 30 * 60_000
FIRST_DUE = START_MS + 14 * 3_600_000  # 2026-07-02 00:00 UTC
COUNT = 130
# One editor makes every schedule of the seed within the same minute.
SEEDING = {"MAX_CREATES_PER_MINUTE": str(COUNT)}
# Statuses given after creation, by content number: the rest stay pending.
RETRYING, REFUSED, COMPLETED, CANCELLED = range(0, 3), range(3, 8), range(8, 28), range(28, 38)


@pytest.fixture
def world(db: SqliteDatabase, clock: FakeClock) -> World:
    return World(db, clock, env=base_env(**SEEDING))


def content(i: int) -> str:
    return f"cnt_m{i:03d}"


async def seed(world: World, installation: Installation, count: int = COUNT) -> dict[str, str]:
    """`count` contents, each with a publish made through its page: content -> schedule id."""
    made = {}
    for i in range(count):
        world.core.state.add_content(content(i), f"Item {i}")
        browser = await world.browser_for(installation, content_id=content(i))
        await browser.get(f"/installations/{installation.id}")
        due = local(FIRST_DUE + i * HALF_HOUR)
        response = await browser.create(installation.id, local_time=due, timezone="UTC")
        assert response.status == 303, response.body[:300]
        made[content(i)] = (response.header("location") or "").rsplit("=", 1)[1]
    db = world.db
    for numbers, sql in (
        (RETRYING, "status = 'retrying', result_code = 'server_error', attempt_count = 1"),
        (
            REFUSED,
            "status = 'refused', result_code = 'scheduled_target_stale', next_attempt_at = NULL",
        ),
        (
            COMPLETED,
            "status = 'completed', result_code = 'transition_applied', next_attempt_at = NULL",
        ),
        (CANCELLED, "status = 'cancelled', next_attempt_at = NULL"),
    ):
        for i in (n for n in numbers if n < count):
            await (
                db.prepare(f"UPDATE schedules SET {sql}, updated_at = ? WHERE id = ?")
                .bind(START_MS + i, made[content(i)])
                .run()
            )
    return made


async def manager(world: World, installation: Installation, person: str = "usr_editor") -> Browser:
    """A manage launch whose first page (with what happened since the last launch) was shown."""
    browser = await world.browser_for(installation, person=person, content_id=None)
    await browser.get(f"/installations/{installation.id}")
    return browser


def link(html: str, rel: str) -> str | None:
    found = re.search(rf'<a rel="{rel}" href="([^"]+)"', html)
    return found.group(1).replace("&amp;", "&") if found else None


def statuses(world_rows: list[dict[str, Any]]) -> Counter[str]:
    return Counter(str(r["status"]) for r in world_rows)


async def test_every_schedule_is_reachable_in_pages_of_50(world: World) -> None:
    installation = await world.install()
    made = await seed(world, installation)
    browser = await manager(world, installation)
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    assert link(html, "prev") is None
    seen: list[str] = []
    sizes = []
    while True:
        items = schedules_on(html)
        sizes.append(len(items))
        seen += [item["schedule-id"] for item in items]
        following = link(html, "next")
        if following is None:
            break
        html = (await browser.get(following)).body.decode()
        assert link(html, "prev") is not None
    assert sizes == [50, 50, 30]
    assert sorted(seen) == sorted(made.values())
    assert "Showing 101–130 of 130, page 3 of 3." in html
    back = (await browser.get(link(html, "prev") or "")).body.decode()
    assert "Showing 51–100 of 130, page 2 of 3." in back


async def test_needs_attention_first_then_the_agenda_then_finished(world: World) -> None:
    installation = await world.install()
    made = await seed(world, installation)
    by_id = {sid: int(cid.removeprefix("cnt_m")) for cid, sid in made.items()}
    browser = await manager(world, installation)
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    order: list[dict[str, str]] = []
    while True:
        order += schedules_on(html)
        following = link(html, "next")
        if following is None:
            break
        html = (await browser.get(following)).body.decode()
    numbers = [by_id[item["schedule-id"]] for item in order]
    assert numbers[:3] == list(RETRYING)  # retrying, by due time
    assert numbers[3:8] == sorted(REFUSED, reverse=True)  # refused, the latest first
    upcoming = [n for n in numbers[8:] if n >= 38]
    assert numbers[8 : 8 + len(upcoming)] == upcoming == sorted(upcoming)  # by due time
    finished = numbers[8 + len(upcoming) :]
    assert sorted(finished) == [*COMPLETED, *CANCELLED]
    assert [item["status"] for item in order[-len(finished) :]].count("pending") == 0


async def test_the_agenda_groups_upcoming_by_day_in_the_chosen_zone(world: World) -> None:
    installation = await world.install()
    await seed(world, installation)
    browser = await manager(world, installation)
    for zone in ("UTC", "America/Los_Angeles", "Asia/Tokyo"):
        html = (
            await browser.get(f"/installations/{installation.id}?show=upcoming&zone={zone}")
        ).body.decode()
        assert f'data-zone="{zone}"' in html
        days = re.findall(
            r'<h3 class="day" id="day-([\d-]+)" data-day="[\d-]+">([^<]+)</h3>(.*?)</ul>',
            html,
            re.S,
        )
        assert days, zone
        for key, label, cards in days:
            assert datetime.strptime(key, "%Y-%m-%d").strftime("%A") in label
            for sid in re.findall(r'data-schedule-id="([^"]+)"', cards):
                due = (
                    await world.db.prepare("SELECT due_at FROM schedules WHERE id = ?")
                    .bind(sid)
                    .first()
                    or {}
                )
                moment = datetime.fromtimestamp(due["due_at"] / 1000, UTC).astimezone(
                    ZoneInfo(zone)
                )
                assert moment.strftime("%Y-%m-%d") == key, (zone, sid)
    # The first upcoming one is due at 19:00 UTC on 2 July: already 3 July in Tokyo.
    first_day = {}
    for zone in ("UTC", "Asia/Tokyo"):
        html = (
            await browser.get(f"/installations/{installation.id}?show=upcoming&zone={zone}")
        ).body.decode()
        first_day[zone] = re.findall(r'data-day="[\d-]+">([^<]+)<', html)[0]
    assert first_day == {"UTC": "Thursday 2 July 2026", "Asia/Tokyo": "Friday 3 July 2026"}


async def test_filters_with_counts_narrow_to_one_group(world: World) -> None:
    installation = await world.install()
    await seed(world, installation)
    browser = await manager(world, installation)
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    counts = dict(re.findall(r'data-filter="(\w+)" data-count="(\d+)"', html))
    rows = (await world.db.prepare("SELECT status FROM schedules").all()).results
    by_status = statuses(rows)
    assert counts == {
        "all": str(COUNT),
        "attention": str(by_status["retrying"] + by_status["refused"]),
        "upcoming": str(by_status["pending"] + by_status["running"]),
        "finished": str(by_status["completed"] + by_status["cancelled"] + by_status["superseded"]),
    }
    assert re.search(r'data-filter="all" data-count="\d+" aria-current="page"', html)
    for name, wanted in (
        ("attention", {"retrying", "refused"}),
        ("finished", {"completed", "cancelled"}),
    ):
        href = re.search(rf'href="([^"]+)" data-filter="{name}"', html)
        assert href
        shown = (await browser.get(href.group(1).replace("&amp;", "&"))).body.decode()
        assert re.search(rf'data-filter="{name}" data-count="\d+" aria-current="page"', shown)
        assert {item["status"] for item in schedules_on(shown)} == wanted
        assert len(schedules_on(shown)) == int(counts[name])


async def test_titles_are_read_live_with_the_manage_delegation_and_never_stored(
    world: World,
) -> None:
    installation = await world.install()
    await seed(world, installation, count=12)
    world.core.state.contents[content(5)].title = "Renamed in Dee Wan"
    browser = await manager(world, installation)  # a site admin: Dee Wan offers Manage to them
    before = len(world.core.calls.calls)
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    reads = world.core.calls.calls[before:]
    assert sorted(c.path.rsplit("/", 1)[1] for c in reads) == [content(i) for i in range(12)]
    people = {
        world.core.state.delegations[c.header("Dee-Wan-Delegation") or ""].person_id for c in reads
    }
    assert people == {"usr_editor"}
    # The title alone heads the card; the id is data.
    assert re.search(
        rf'data-content-id="{content(3)}">\s*<div class="card-head">\s*<h3>'
        rf"Publish version <code>[^<]+</code> of “Item 3”</h3>",
        html,
    )
    assert "of “Renamed in Dee Wan”</h3>" in html
    assert f"(<code>{content(3)}</code>)" not in html
    dump = "\n".join(world.db.connection.iterdump())
    assert "Item 3" not in dump
    assert "Renamed in Dee Wan" not in dump


async def test_a_failed_title_read_shows_the_id_alone(world: World) -> None:
    installation = await world.install()
    await seed(world, installation, count=4)
    browser = await manager(world, installation)
    world.core.faults.push(
        Fault.respond(404, "content_not_found"), endpoint="content", content_id=content(2)
    )
    world.core.faults.push(Fault.timeout(), endpoint="content", content_id=content(3))
    response = await browser.get(f"/installations/{installation.id}")
    assert response.status == 200
    html = response.body.decode()
    assert f"of content <code>{content(2)}</code>" in html
    assert f"of content <code>{content(3)}</code>" in html
    assert "of “Item 1”</h3>" in html
    # The page says why two cards show ids: one read timed out (fake_core's timeout fault
    # is a transport timeout), one was refused.
    assert 'data-titles-missing="2"' in html
    assert "Dee Wan did not answer in time for 1 content (it is slow or not answering" in html
    assert "Dee Wan did not give the title of 1 content, so their ids" in html


async def test_titles_are_read_concurrently_within_the_send_concurrency_cap(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    world = World(db, clock, env=base_env(SEND_CONCURRENCY="3", **SEEDING))
    installation = await world.install()
    await seed(world, installation, count=10)
    browser = await manager(world, installation)
    counting = world.http.handler = InFlight(world.http.handler)
    world.core.faults.set_latency(0.01, "content")
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    assert html.count("of “Item ") == 10
    assert counting.peak_total == 3  # several at once, never more than the cap


async def test_an_unknown_zone_is_said_and_the_site_zone_used(world: World) -> None:
    installation = await world.install()
    await seed(world, installation, count=2)
    browser = await manager(world, installation)
    html = (await browser.get(f"/installations/{installation.id}?zone=Mars/Base")).body.decode()
    assert 'data-error-code="unknown_timezone"' in html
    assert "“Mars/Base” is not a time zone name this plugin knows; showing Europe/Paris." in html
    assert 'data-zone="Europe/Paris"' in html
    assert 'value="Mars/Base"' in html


async def test_cancel_from_a_page_returns_to_that_page_and_filter(world: World) -> None:
    installation = await world.install()
    made = await seed(world, installation, count=90)  # 52 upcoming: two pages
    browser = await manager(world, installation)
    html = (
        await browser.get(f"/installations/{installation.id}?show=upcoming&zone=Asia/Tokyo")
    ).body.decode()
    page_two = link(html, "next")
    assert page_two is not None
    html = (await browser.get(page_two)).body.decode()
    sid = schedules_on(html)[0]["schedule-id"]
    # The card's Cancel leads to the confirmation page, carrying the view along.
    found = re.search(rf'href="([^"]*/schedules/{sid}/cancel[^"]*)"', html)
    assert found
    back = found.group(1).replace("&amp;", "&").split("/cancel", 1)[1]
    assert back == "?page=2&show=upcoming&zone=Asia%2FTokyo"
    confirm = (
        await browser.get(f"/installations/{installation.id}/schedules/{sid}/cancel{back}")
    ).body.decode()
    form = confirm.split('class="cancel-confirm"', 1)[1].split("</form>", 1)[0]
    fields = dict(re.findall(r'name="(page|show|zone)" value="([^"]+)"', form))
    assert fields == {"page": "2", "show": "upcoming", "zone": "Asia/Tokyo"}
    response = await browser.cancel(installation.id, sid, back)
    assert response.status == 303
    assert path_of(response.header("location") or "") == (
        f"/installations/{installation.id}?cancelled={sid}&show=upcoming&page=2&zone=Asia%2FTokyo"
    )
    after = (await browser.follow(response)).body.decode()
    # The message names what was cancelled (was: "The schedule was cancelled.").
    assert f'data-cancelled="{sid}"' in after
    assert re.search(
        r"Cancelled: the schedule to publish version \S+ of “Item \d+” at \w{3} ", after
    )
    assert 'data-page="2"' in after
    assert sid in made.values()


async def test_a_page_past_the_end_shows_the_last_page_and_says_so(world: World) -> None:
    installation = await world.install()
    await seed(world, installation, count=3)
    browser = await manager(world, installation)
    html = (await browser.get(f"/installations/{installation.id}?page=9")).body.decode()
    # The last page, said, in the site's zone.
    assert len(schedules_on(html)) == 3
    assert 'data-notice="page_corrected"' in html
    assert "There is no page 9: there is only one page." in html
    assert 'data-zone="Europe/Paris"' in html


async def test_a_stale_pin_is_flagged_on_the_manage_view_too(world: World) -> None:
    installation = await world.install()
    made = await seed(world, installation, count=40)  # the last two stay pending
    world.core.state.edit(content(39))
    browser = await manager(world, installation)
    html = (await browser.get(f"/installations/{installation.id}?show=upcoming")).body.decode()
    flagged = [
        item["schedule-id"] for item in schedules_on(html) if item.get("pin-stale") == "true"
    ]
    assert flagged == [made[content(39)]]
    assert "repin_of" not in html  # a manage launch cannot create


async def test_a_hanging_dee_wan_costs_the_page_its_title_budget_only(
    db: SqliteDatabase, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scheduling.pages import manage

    world = World(db, clock, env=base_env(SEND_CONCURRENCY="1", **SEEDING))
    installation = await world.install()
    await seed(world, installation, count=8)
    browser = await manager(world, installation)
    monkeypatch.setattr(manage, "TITLES_BUDGET_S", 0.2)
    world.core.faults.set_latency(0.08, "content")  # one read at a time: three fit in the budget
    response = await browser.get(f"/installations/{installation.id}")
    assert response.status == 200
    html = response.body.decode()
    titled = html.count("of “Item ")
    assert 1 <= titled < 8
    assert html.count("of content <code>cnt_m") == 8 - titled


@pytest.mark.parametrize(
    "number", ["²", "①", "٣", "\uff13", "1" * 5000, "-1", "+2", " 2", "2 ", "0"]
)
async def test_a_page_number_that_is_not_ascii_digits_shows_the_first_page(
    world: World, number: str
) -> None:
    """`isdigit()` takes `²`, `①` and `٣`, which `int()` refuses: that was a 500."""
    installation = await world.install()
    await seed(world, installation, count=3)
    browser = await manager(world, installation)
    response = await browser.get(
        f"/installations/{installation.id}?" + urlencode({"page": number, "show": "all"})
    )
    assert response.status == 200, response.body[:300]
    html = response.body.decode()
    assert 'data-page="1"' in html
    assert len(schedules_on(html)) == 3


@pytest.mark.parametrize("number", ["²", "①", "٣"])
async def test_a_cancel_posted_with_a_strange_page_number_is_answered_and_written_once(
    world: World, number: str
) -> None:
    """It was written, then answered 500 (the way back was built after the write)."""
    installation = await world.install()
    made = await seed(world, installation, count=3)
    browser = await manager(world, installation)
    await browser.get(f"/installations/{installation.id}")
    sid = made[content(0)]
    await browser.get(f"/installations/{installation.id}/schedules/{sid}/cancel")  # its form
    response = await browser.post(
        f"/installations/{installation.id}/schedules/{sid}/cancel",
        {"csrf_token": browser.csrf(), "page": number, "show": "upcoming"},
    )
    assert response.status == 303, response.body[:300]
    assert path_of(response.header("location") or "") == (
        f"/installations/{installation.id}?cancelled={sid}&show=upcoming"
    )
    row = await world.db.prepare("SELECT status FROM schedules WHERE id = ?").bind(sid).first()
    assert row is not None
    assert row["status"] == "cancelled"

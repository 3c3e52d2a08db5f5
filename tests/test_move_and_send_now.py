"""Issue 48 items 3 and 4: a waiting schedule's card moves it to a new time, or sends it now,
in one step. Each makes a new schedule from the old one through the create's own path (the
content read again, the pin the page showed checked, the time rules, a new revision and key,
the old one replaced), keeps the one-live rule, the collision warnings and the lateness cap,
and a refusal shows the form again as it was sent."""

from __future__ import annotations

import re
from typing import Any

from fake_core.state import Installation
from tests.support.world import MINUTE, Browser, World, card, local, row, schedule, sends, tick_at


async def card_form(
    world: World, installation: Installation, content_id: str = "cnt_en"
) -> Browser:
    browser = await world.open_page(installation, content_id)
    return browser


async def move(
    browser: Browser, installation: Installation, schedule_id: str, **fields: str
) -> Any:
    sent = {"csrf_token": browser.csrf(), **browser.shown(), "timezone": "UTC", **fields}
    return await browser.post(
        f"/installations/{installation.id}/schedules/{schedule_id}/move", sent
    )


async def send_now(browser: Browser, installation: Installation, schedule_id: str) -> Any:
    sent = {"csrf_token": browser.csrf(), **browser.shown()}
    path = f"/installations/{installation.id}/schedules/{schedule_id}/send-now"
    return await browser.post(path, sent)


def made_id(response: Any) -> str:
    location = response.header("location") or ""
    found = re.search(r"created=(sch_[A-Za-z0-9_-]+)", location)
    assert found, location
    return found.group(1)


async def test_a_move_makes_a_new_schedule_at_the_new_time_replacing_the_old(
    world: World,
) -> None:
    installation = await world.install()
    old = await schedule(world, installation, in_minutes=60)
    browser = await card_form(world, installation)
    later = (world.clock.now_ms() // MINUTE + 90) * MINUTE
    moved = await move(browser, installation, old["id"], local_time=local(later))
    assert moved.status == 303, moved.body[:2000]
    new = await row(world, made_id(moved))
    assert (new["due_at"], new["local_time"], new["timezone"]) == (later, local(later), "UTC")
    assert (new["replaces"], new["replaced_as"], new["revision"]) == (old["id"], "moved", 2)
    assert new["idempotency_key"].endswith(":r2")
    assert new["idempotency_key"] != old["idempotency_key"]
    assert (new["status"], new["version_id"]) == ("pending", old["version_id"])
    assert (await row(world, old["id"]))["status"] == "superseded"  # one live, still
    receipt = (await browser.follow(moved)).body.decode()
    assert f'data-replaced="{old["id"]}"' in receipt
    await tick_at(world, later)
    assert (await row(world, new["id"]))["status"] == "completed"
    assert [s.header("Idempotency-Key") for s in sends(world, new)] == [new["idempotency_key"]]
    assert sends(world, old) == []


async def test_a_move_to_a_past_time_is_refused_with_the_form_as_sent(world: World) -> None:
    installation = await world.install()
    old = await schedule(world, installation, in_minutes=60)
    browser = await card_form(world, installation)
    past = local(world.clock.now_ms() - 5 * MINUTE)
    refused = await move(browser, installation, old["id"], local_time=past)
    assert refused.status == 422
    page = refused.body.decode()
    assert 'data-error-code="past_time"' in page
    assert f'value="{past}"' in page  # kept
    assert (await row(world, old["id"]))["status"] == "pending"  # nothing changed


async def test_a_move_after_the_content_changed_since_the_page_is_refused(world: World) -> None:
    installation = await world.install()
    old = await schedule(world, installation, in_minutes=60)
    browser = await card_form(world, installation)
    world.core.state.edit("cnt_en")  # a new version since the page was shown
    later = local((world.clock.now_ms() // MINUTE + 90) * MINUTE)
    refused = await move(browser, installation, old["id"], local_time=later)
    assert refused.status == 409
    page = refused.body.decode()
    assert 'data-error-code="content_changed"' in page
    assert "The content changed since this page was shown" in page
    assert (await row(world, old["id"]))["status"] == "pending"


async def test_send_now_is_due_at_once_and_the_next_tick_sends_it(world: World) -> None:
    installation = await world.install()
    old = await schedule(world, installation, in_minutes=60)
    browser = await card_form(world, installation)
    world.clock.advance(17_000)
    now = world.clock.now_ms()
    sent = await send_now(browser, installation, old["id"])
    assert sent.status == 303, sent.body[:2000]
    assert "sent_now=tick" in (sent.header("location") or "")
    new = await row(world, made_id(sent))
    assert (new["due_at"], new["next_attempt_at"], new["replaced_as"]) == (now, now, "sent_now")
    assert new["local_time"] == local(now)  # its minute, in its zone
    receipt = (await browser.follow(sent)).body.decode()
    assert 'data-sent-now="tick"' in receipt
    assert "the runner's next tick sends it" in receipt
    await tick_at(world, (now // MINUTE + 1) * MINUTE)
    assert (await row(world, new["id"]))["status"] == "completed"
    assert (await row(world, old["id"]))["status"] == "superseded"


async def test_send_now_keeps_the_lateness_cap_from_the_moment_it_was_sent(world: World) -> None:
    installation = await world.install()
    old = await schedule(world, installation, in_minutes=60)
    browser = await card_form(world, installation)
    sent = await send_now(browser, installation, old["id"])
    new = await row(world, made_id(sent))
    await tick_at(world, new["due_at"] + 16 * MINUTE)  # past the 15-minute cap
    ended = await row(world, new["id"])
    assert (ended["status"], ended["result_code"], ended["ended_by"]) == (
        "refused",
        "retry_exhausted",
        "lateness",
    )
    assert sends(world, new) == []


async def test_a_moved_publish_warns_of_its_collision_on_the_receipt(world: World) -> None:
    installation = await world.install()
    world.core.state.edit("cnt_pub")
    publish = await schedule(world, installation, "cnt_pub", in_minutes=60)
    await schedule(world, installation, "cnt_pub", in_minutes=30, transition="unpublish:draft")
    browser = await card_form(world, installation, "cnt_pub")
    earlier = local((world.clock.now_ms() // MINUTE + 10) * MINUTE)
    moved = await move(browser, installation, publish["id"], local_time=earlier)
    receipt = (await browser.follow(moved)).body.decode()
    assert re.search(r'data-confirmation="[^"]+".*?data-conflict="makes-stale"', receipt, re.S)


async def test_a_releases_item_is_not_moved_or_sent_alone(world: World) -> None:
    installation = await world.install()
    browser = await card_form(world, installation)
    due = local((world.clock.now_ms() // MINUTE + 60) * MINUTE)
    made = await browser.create(
        installation.id, local_time=due, timezone="UTC", release="new", release_name="Launch"
    )
    assert made.status == 303, made.body[:2000]
    item = made_id(made)
    await browser.get(f"/installations/{installation.id}")
    for refused in (
        await move(browser, installation, item, local_time=due),
        await send_now(browser, installation, item),
    ):
        assert refused.status == 409
        assert 'data-error-code="release_item_alone"' in refused.body.decode()
    assert (await row(world, item))["status"] == "pending"


async def test_only_a_waiting_schedule_of_this_content_is_moved(world: World) -> None:
    installation = await world.install()
    other = await schedule(world, installation, "cnt_page", in_minutes=60)
    mine = await schedule(world, installation, in_minutes=60)
    browser = await card_form(world, installation)
    later = local((world.clock.now_ms() // MINUTE + 90) * MINUTE)
    assert (await move(browser, installation, other["id"], local_time=later)).status == 403
    cancelled = await browser.cancel(installation.id, mine["id"])
    assert cancelled.status == 303
    await browser.get(f"/installations/{installation.id}")
    refused = await send_now(browser, installation, mine["id"])
    assert refused.status == 409
    assert 'data-error-code="not_repinnable"' in refused.body.decode()


def card_forms(page: str, schedule_id: str) -> dict[str, dict[str, str]]:
    """The forms a schedule's card offers, by what they do, with the fields each sends."""
    found = {}
    for action, form in re.findall(
        rf'<form method="post" action="[^"]*/schedules/{schedule_id}/([a-z-]+)"(.*?)</form>',
        card(page, schedule_id),
        re.S,
    ):
        found[action] = dict(re.findall(r'<input [^>]*name="([^"]+)"[^>]*value="([^"]*)"', form))
    return found


async def test_a_waiting_cards_own_forms_move_it_and_send_it_now(world: World) -> None:
    installation = await world.install()
    old = await schedule(world, installation, in_minutes=60)
    browser = await card_form(world, installation)
    forms = card_forms(browser.page(), old["id"])
    assert set(forms) == {"move", "send-now"}
    move_fields = forms["move"]
    assert (move_fields["local_time"], move_fields["timezone"]) == (old["local_time"], "UTC")
    later = (world.clock.now_ms() // MINUTE + 90) * MINUTE
    path = f"/installations/{installation.id}/schedules/{old['id']}"
    moved = await browser.post(f"{path}/move", {**move_fields, "local_time": local(later)})
    assert moved.status == 303, moved.body[:2000]
    new = await row(world, made_id(moved))
    assert (new["due_at"], new["replaces"]) == (later, old["id"])
    page = (await browser.follow(moved)).body.decode()
    assert card_forms(page, old["id"]) == {}  # replaced: no longer moved or sent
    sent = await browser.post(f"{path.rsplit('/', 1)[0]}/{new['id']}/send-now",
                              card_forms(page, new["id"])["send-now"])  # fmt: skip
    assert sent.status == 303, sent.body[:2000]
    assert (await row(world, made_id(sent)))["replaced_as"] == "sent_now"

"""Issue 38: a publish and an unpublish of one content, both waiting, collide: whichever runs
second is refused `scheduled_target_stale`. The form says so before Schedule is pressed, both
cards after, and once the first is done the second says at once that it needs a new pin (in
Needs attention, and to the notification endpoints)."""

from __future__ import annotations

import re

from fake_core.state import Installation
from tests.support.runtimes import Runtime, added_endpoint
from tests.support.webhooks import signed_by
from tests.support.world import MINUTE, World, card, local, row, schedule, schedules_on, tick_at


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


async def both(world: World, installation: Installation) -> tuple[dict, dict]:  # type: ignore[type-arg]
    """A publish due in 5 minutes, then an unpublish of the same content due in 10."""
    world.core.state.edit("cnt_pub")  # a draft newer than the published version: both offered
    publish = await schedule(world, installation, "cnt_pub", in_minutes=5)
    unpublish = await schedule(
        world, installation, "cnt_pub", in_minutes=10, transition="unpublish:draft"
    )
    return publish, unpublish


async def page(world: World, installation: Installation, content_id: str = "cnt_pub") -> str:
    browser = await world.open_page(installation, content_id)
    return (await browser.get(f"/installations/{installation.id}")).body.decode()


async def test_the_form_warns_before_schedule_is_pressed(world: World) -> None:
    installation = await world.install()
    world.core.state.edit("cnt_pub")
    publish = await schedule(world, installation, "cnt_pub", in_minutes=5)
    html = await page(world, installation)
    warning = re.search(r'<p class="hint collides"[^>]*data-for="unpublish:draft">.*?</p>', html)
    assert warning, "no collision warning beside the unpublish choice"
    said = text(warning.group(0))
    assert f'data-collides-with="{publish["id"]}"' in warning.group(0)
    assert f"The publish of version {publish['version_id']} at" in said
    assert "UTC" in said  # the one time language: local with its zone, and UTC
    assert "Whichever of the two runs second will be refused" in said
    # The publish choice itself replaces, it does not collide.
    assert 'data-for="publish:published"><strong>Collision' not in html


async def test_both_cards_and_the_receipt_say_which_will_be_refused(world: World) -> None:
    installation = await world.install()
    publish, unpublish = await both(world, installation)
    html = await page(world, installation)
    by_id = {c["schedule-id"]: c for c in schedules_on(html)}
    assert by_id[publish["id"]]["conflict"] == "makes-stale"
    assert by_id[unpublish["id"]]["conflict"] == "stale-after"
    assert by_id[unpublish["id"]]["conflict-with"] == publish["id"]
    later = text(card(html, unpublish["id"]))
    assert "Will be refused unless pinned again" in later
    assert f"the publish of version {publish['version_id']} at" in later
    earlier = text(card(html, publish["id"]))
    assert f"makes the unpublish of version {unpublish['version_id']} at" in earlier
    assert "card says what to do" in earlier
    assert "cancel one of them" in later
    # Cancel one: the warning goes.
    browser = await world.open_page(installation, "cnt_pub")
    await browser.get(f"/installations/{installation.id}")
    assert (await browser.cancel(installation.id, unpublish["id"])).status == 303
    html = await page(world, installation)
    assert "data-conflict" not in html


async def test_the_receipt_names_the_collision(world: World) -> None:
    installation = await world.install()
    world.core.state.edit("cnt_pub")
    await schedule(world, installation, "cnt_pub", in_minutes=10, transition="unpublish:draft")
    browser = await world.open_page(installation, "cnt_pub")
    await browser.get(f"/installations/{installation.id}")
    due = (world.clock.now_ms() // MINUTE + 5) * MINUTE
    response = await browser.post(
        f"/installations/{installation.id}/schedules",
        {
            "csrf_token": browser.csrf(),
            **browser.shown(),
            "transition": "publish:published",
            "local_time": local(due),
            "timezone": "UTC",
        },
    )
    receipt = (await browser.follow(response)).body.decode()
    notice = re.search(
        r'<div class="notice" role="status" data-confirmation.*?</div>', receipt, re.S
    )
    assert notice
    assert 'data-conflict="makes-stale"' in notice.group(0)


async def test_once_the_first_is_done_the_second_needs_a_new_pin_at_once(world: World) -> None:
    installation = await world.install()
    publish, unpublish = await both(world, installation)
    await tick_at(world, publish["due_at"])
    assert (await row(world, publish["id"]))["status"] == "completed"
    later = await row(world, unpublish["id"])
    assert later["status"] == "pending"
    assert later["made_stale_by"] == publish["id"]
    # The manage view: in Needs attention, saying why and what to do.
    manage = await world.browser_for(installation, content_id=None)
    html = (await manage.get(f"/installations/{installation.id}")).body.decode()
    shown = card(html, unpublish["id"])
    assert 'data-needs-repin="true"' in shown
    assert "Needs a new pin" in text(shown)
    assert "pin it again" in text(shown)
    attention = (await manage.get(f"/installations/{installation.id}?show=attention")).body.decode()
    assert unpublish["id"] in attention
    upcoming = (await manage.get(f"/installations/{installation.id}?show=upcoming")).body.decode()
    assert f'id="schedule-{unpublish["id"]}"' not in upcoming
    # The content page offers the one-step re-pin.
    html = await page(world, installation)
    shown = card(html, unpublish["id"])
    assert 'data-needs-repin="true"' in shown
    assert "data-conflict" not in shown


async def test_an_endpoint_hears_at_once_of_the_one_a_done_publish_made_stale(
    runtime: Runtime,
) -> None:
    """On both runtimes (the Worker's: the settle's trigger in D1 marks the waiting unpublish,
    and the same batch writes its `schedule.stale` event): told, signed, with what to do."""
    installation_id = await runtime.install()
    for action in ("publish", "edit"):  # a published version and a newer draft: both offered
        runtime.change_content(runtime.content, action)
    with runtime.receiver() as receiver:
        _, secret = await added_endpoint(runtime, installation_id, receiver.url)
        editor = await runtime.open_page(installation_id, content_id=runtime.content)
        due = runtime.minute_ahead(2)
        await editor.create(installation_id, local(due), timezone="UTC")
        unpublish = await editor.create(
            installation_id, runtime.noon(200), transition="unpublish:draft"
        )
        await runtime.tick(due)
        sql = "SELECT status, made_stale_by FROM schedules WHERE id = ?"
        [later] = await runtime.rows(sql, unpublish)
        assert later["status"] == "pending"
        assert later["made_stale_by"] is not None
        [delivery] = receiver.received
        assert signed_by(secret, delivery)
        data = delivery.event["data"]
        assert (delivery.event["type"], data["schedule_id"]) == ("schedule.stale", unpublish)
        assert data["status"] == "pending"
        assert "Needs a new pin" in data["message"]


async def test_two_due_at_the_same_minute_say_either_may_be_refused(world: World) -> None:
    installation = await world.install()
    world.core.state.edit("cnt_pub")
    publish = await schedule(world, installation, "cnt_pub", in_minutes=7)
    unpublish = await schedule(
        world, installation, "cnt_pub", in_minutes=7, transition="unpublish:draft"
    )
    html = await page(world, installation)
    roles = {c["schedule-id"]: c.get("conflict") for c in schedules_on(html)}
    assert sorted(r for r in roles.values() if r) == ["makes-stale", "stale-after"]
    for sid in (publish["id"], unpublish["id"]):
        assert "Both are due at the same minute" in text(card(html, sid))


def test_a_chat_line_says_a_stale_schedule_needs_a_new_pin() -> None:
    from scheduling.channels.chat import event_line
    from scheduling.domain.notifications import STALE, ScheduleEvent
    from scheduling.domain.outcomes import Status
    from scheduling.domain.schedules import needs_repin_said

    done_at = 1_782_900_000_000
    body = ScheduleEvent(
        type=STALE,
        at=done_at,
        installation_id="ins_1",
        schedule_id="sch_2",
        content_id="cnt_1",
        kind="unpublish",
        to_state="draft",
        version_id="ver_1",
        due_at=done_at + 86_400_000,
        local_time="2026-07-02T12:00",
        timezone="UTC",
        status=Status.PENDING,
        result_code=None,
        attempts=0,
        outcome_unknown=False,
        message=needs_repin_said("unpublish", done_at, "UTC"),
    ).body("https://scheduling.example")
    line = event_line(ScheduleEvent.read(body), "Spring sale")
    assert line.startswith("Out of date: the schedule to unpublish “Spring sale” (ver_1) at ")
    assert "Needs a new pin: a publish of this content was done at" in line


async def test_a_page_explains_a_collision_once_and_quotes_no_code(world: World) -> None:
    """Issue 45 item 15: the receipt of the second schedule of a collision explained it five
    times (the receipt, both cards, the form's two warnings) and put the code
    `scheduled_target_stale` in its sentences. The card of the one to be refused explains it
    with the ways out; the rest point to it; a code is only for support."""
    installation = await world.install()
    world.core.state.edit("cnt_pub")
    await schedule(world, installation, "cnt_pub", in_minutes=10, transition="unpublish:draft")
    browser = await world.open_page(installation, "cnt_pub")
    await browser.get(f"/installations/{installation.id}")
    due = (world.clock.now_ms() // MINUTE + 5) * MINUTE
    fields = {"csrf_token": browser.csrf(), **browser.shown(), "transition": "publish:published"}
    made = await browser.post(
        f"/installations/{installation.id}/schedules",
        {**fields, "local_time": local(due), "timezone": "UTC"},
    )
    said = text((await browser.follow(made)).body.decode())
    assert said.count("Either cancel one of them") == 1
    assert said.count("runs second will be refused") <= 2  # the form's warning per choice
    assert "scheduled_target_stale" not in said
    assert "card below says what to do" in said  # the receipt points to the card


async def test_cards_of_one_content_in_two_zones_are_written_in_one_too(world: World) -> None:
    """Issue 45 item 15: a publish at 16:00 in Paris and an unpublish at 09:00 in New York
    (14:00 and 13:00 UTC) read "16:00 … 09:00", out of order. Cards in more than one zone are
    also written in the page's zone, each with the time it was entered as."""
    installation = await world.install()
    world.core.state.edit("cnt_pub")
    browser = await world.open_page(installation, "cnt_pub")
    for transition, local_time, zone in (
        ("publish:published", "2026-07-02T16:00", "Europe/Paris"),
        ("unpublish:draft", "2026-07-02T09:00", "America/New_York"),
    ):
        made = await browser.create(
            installation.id, transition=transition, local_time=local_time, timezone=zone
        )
        assert made.status == 303, made.body[:300]
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    shown = [text(card(html, c["schedule-id"])) for c in schedules_on(html)]
    whens = [re.search(r"When (.*?) (Pinned|Status|Requested)", said) for said in shown]
    firsts = [w.group(1) for w in whens if w]
    assert firsts == [
        "Thu 2 Jul 2026, 15:00 CEST (Europe/Paris; 13:00 UTC);"
        " entered as Thu 2 Jul 2026, 09:00 EDT (America/New_York)",
        "Thu 2 Jul 2026, 16:00 CEST (Europe/Paris; 14:00 UTC)",
    ]

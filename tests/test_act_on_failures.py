"""Every failure can be finished where it is seen (issue 27), through the pages as a person uses
them: Needs attention that resolves (a later schedule done, or Dismiss), Try again from a
refused card by the create's rules, which limit ended a `retry_exhausted` schedule, and the
confirmations before an endpoint's secret is rotated or the endpoint deleted."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from fake_core import Fault
from fake_core.state import Installation
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock, base_env
from tests.support.webhooks import Receiver, add_endpoint, with_receivers
from tests.support.world import (
    MINUTE,
    Browser,
    World,
    next_steps,
    row,
    schedule,
    schedules_on,
    session_csrf,
    tick_at,
    words,
)


def card(page: str, schedule_id: str) -> str:
    """One card's HTML (its attempts are a list of their own: it ends after its support line)."""
    start = page.index(f'<li class="schedule" id="schedule-{schedule_id}"')
    end = page.index('<p class="support">For support: schedule', start)
    return page[start : page.index("</li>", end)]


def counts(page: str) -> dict[str, int]:
    """The manage view's filters and their counts."""
    return {name: int(n) for name, n in re.findall(r'data-filter="(\w+)" data-count="(\d+)"', page)}


async def refused(world: World, installation: Installation, fault: Fault) -> dict[str, Any]:
    """A publish of cnt_en that Dee Wan refuses with `fault` when it falls due."""
    made = await schedule(world, installation)
    world.core.faults.push(fault)
    await tick_at(world, made["due_at"])
    ended = await row(world, made["id"])
    assert ended["status"] == "refused", ended
    return ended


async def press(browser: Browser, installation_id: str, schedule_id: str, action: str) -> Any:
    """Press a card's button (`retry`: Try again, `dismiss`: Dismiss) as the last page shows."""
    path = f"/installations/{installation_id}/schedules/{schedule_id}/{action}"
    form = browser.page().split(f'{path}"', 1)[1].split("</form>", 1)[0]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))
    return await browser.post(path, {name: html.unescape(value) for name, value in fields.items()})


async def retry(browser: Browser, installation_id: str, schedule_id: str) -> Any:
    return await press(browser, installation_id, schedule_id, "retry")


async def dismiss(browser: Browser, installation_id: str, schedule_id: str) -> Any:
    return await press(browser, installation_id, schedule_id, "dismiss")


# -- 1 and 2: refused → Try again → done, and it no longer needs attention ---------------------


async def test_refused_then_tried_again_then_done_no_longer_needs_attention(world: World) -> None:
    installation = await world.install()
    first = await refused(world, installation, Fault.respond(422, "transition_refused"))
    manage = await world.browser_for(installation, person="usr_editor", content_id=None)
    page = (await manage.get(f"/installations/{installation.id}")).body.decode()
    assert counts(page)["attention"] == 1
    said = words(card(page, first["id"]))
    assert "Dee Wan's workflow rules did not allow this change when it was sent" in said
    # The manage launch cannot create: it says how to try again instead.
    assert "To try again, open “Spring launch” in Dee Wan and press Schedule." in said
    assert "/retry" not in card(page, first["id"])

    # On the content's page, Try again: a new schedule of the same change and pin, at the
    # next minute, with its own id and key.
    editor = await world.open_page(installation)
    assert "Try again" in words(card(editor.page(), first["id"]))
    world.clock.advance(7 * MINUTE + 20_000)
    tried = await retry(editor, installation.id, first["id"])
    assert tried.status == 303, tried.body[:500]
    second_id = (tried.header("location") or "").rsplit("=", 1)[1]
    second = await row(world, second_id)
    assert second_id != first["id"]
    assert second["idempotency_key"] != first["idempotency_key"]
    assert (second["kind"], second["version_id"]) == (first["kind"], first["version_id"])
    assert second["due_at"] == (world.clock.now // MINUTE + 1) * MINUTE
    assert second["status"] == "pending"
    receipt = (await editor.follow(tried)).body.decode()
    assert f'data-confirmation="{second_id}"' in receipt

    await tick_at(world, second["due_at"])
    assert (await row(world, second_id))["status"] == "completed"
    page = (await manage.get(f"/installations/{installation.id}")).body.decode()
    assert counts(page)["attention"] == 0
    assert counts(page)["finished"] == 2
    [item] = [s for s in schedules_on(page) if s["schedule-id"] == first["id"]]
    assert (item["settled"], item["resolved-by"]) == ("true", second_id)
    assert "A later schedule of the same change was done" in words(card(page, first["id"]))
    assert 'data-group="attention"' not in page
    only_attention = await manage.get(f"/installations/{installation.id}?show=attention")
    assert schedules_on(only_attention.body.decode()) == []


async def test_a_dismissed_refusal_no_longer_needs_attention(world: World) -> None:
    installation = await world.install()
    first = await refused(world, installation, Fault.respond(409, "workflow_conflict"))
    manage = await world.browser_for(installation, person="usr_editor", content_id=None)
    page = (await manage.get(f"/installations/{installation.id}?show=attention")).body.decode()
    assert counts(page)["attention"] == 1
    world.clock.advance(3 * MINUTE)
    done = await dismiss(manage, installation.id, first["id"])
    assert done.status == 303, done.body[:500]
    assert "show=attention" in (done.header("location") or "")  # back to the same view
    after = (await manage.follow(done)).body.decode()
    assert counts(after)["attention"] == 0
    assert f'data-dismissed="{first["id"]}"' in after
    assert "Dismissed: the schedule to publish version" in words(after)
    assert schedules_on(after) == []  # not under Needs attention any more

    finished = (await manage.get(f"/installations/{installation.id}?show=finished")).body.decode()
    said = words(card(finished, first["id"]))
    assert (
        "Not done. Dismissed by Ada Lovelace at Wed 1 Jul 2026, 12:08:00 CEST"
        " (Europe/Paris; 10:08:00 UTC)" in said
    )
    assert "/dismiss" not in card(finished, first["id"])  # once
    stored = await row(world, first["id"])
    assert (stored["dismissed_by"], stored["status"]) == ("usr_editor", "refused")

    # Twice is refused, and so is a content launch's dismiss.
    fields = {"csrf_token": manage.csrf(), "opened_for": "manage"}
    again = await manage.post(
        f"/installations/{installation.id}/schedules/{first['id']}/dismiss", fields
    )
    assert again.status == 409
    assert 'data-error-code="not_dismissable"' in again.body.decode()
    editor = await world.open_page(installation)
    other = await editor.post(
        f"/installations/{installation.id}/schedules/{first['id']}/dismiss",
        {"csrf_token": editor.csrf(), "opened_for": "cnt_en"},
    )
    assert other.status == 403
    assert 'data-error-code="dismiss_from_manage"' in other.body.decode()


async def test_only_a_refused_schedule_still_needing_attention_offers_dismiss(world: World) -> None:
    installation = await world.install()
    waiting = await schedule(world, installation, "cnt_page")
    manage = await world.browser_for(installation, content_id=None)
    page = (await manage.get(f"/installations/{installation.id}")).body.decode()
    assert "/dismiss" not in page
    await manage.get(f"/installations/{installation.id}/notifications")  # a form's token
    refused_ = await manage.post(
        f"/installations/{installation.id}/schedules/{waiting['id']}/dismiss",
        {"csrf_token": manage.csrf(), "opened_for": "manage"},
    )
    assert refused_.status == 409
    assert (await row(world, waiting["id"]))["dismissed_at"] is None


# -- 2: Try again, by the same rules as a create -----------------------------------------------


async def test_try_again_pins_the_current_version_when_the_refused_pin_is_out_of_date(
    world: World,
) -> None:
    installation = await world.install()
    made = await schedule(world, installation)
    world.core.state.edit("cnt_en")  # a new version: the pin is stale
    await tick_at(world, made["due_at"])
    assert (await row(world, made["id"]))["result_code"] == "scheduled_target_stale"
    current = world.core.state.group_of("cnt_en").current_version_id
    editor = await world.open_page(installation)
    said = words(card(editor.page(), made["id"]))
    assert f"Try again with {current}" in said
    assert f"pinned to {current}: Dee Wan reports it now instead of {made['version_id']}" in said
    tried = await retry(editor, installation.id, made["id"])
    assert tried.status == 303
    new = await row(world, (tried.header("location") or "").rsplit("=", 1)[1])
    assert new["version_id"] == current


async def test_try_again_refused_when_the_content_changed_since_the_page_was_shown(
    world: World,
) -> None:
    installation = await world.install()
    first = await refused(world, installation, Fault.respond(422, "transition_refused"))
    editor = await world.open_page(installation)
    world.core.state.edit("cnt_en")  # after the page was shown
    stale = await retry(editor, installation.id, first["id"])
    assert stale.status == 409
    page = stale.body.decode()
    assert 'data-error-code="content_changed"' in page
    assert "then press Try again." in words(page)
    assert await _count(world) == 1  # nothing stored
    # One step from there: the refusal's own Try again carries what the page shows now.
    form = page.split('class="retry">', 1)[1].split("</form>", 1)[0]
    assert f'data-retry-of="{first["id"]}"' in form
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form))
    again = await editor.post(
        f"/installations/{installation.id}/schedules/{first['id']}/retry", fields
    )
    assert again.status == 303
    assert await _count(world) == 2


async def test_try_again_counts_with_the_persons_creates_a_minute(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    """A Try again reads Dee Wan as a create does: past MAX_CREATES_PER_MINUTE it is 429 with
    `Retry-After`, nothing read or stored, and its form kept to send again."""
    world = World(db, clock, env=base_env(MAX_CREATES_PER_MINUTE="1"))
    installation = await world.install()
    first = await refused(world, installation, Fault.respond(422, "transition_refused"))
    clock.advance(MINUTE)
    editor = await world.open_page(installation)
    assert (await retry(editor, installation.id, first["id"])).status == 303
    await editor.get(f"/installations/{installation.id}")
    reads = len(world.core.calls.of("content"))
    held = await retry(editor, installation.id, first["id"])
    assert held.status == 429
    assert held.header("retry-after") == "60"
    page = held.body.decode()
    assert 'data-error-code="too_many_creates"' in page
    assert len(world.core.calls.of("content")) == reads  # Dee Wan was not read
    assert await _count(world) == 2  # the refused one and its first try again


async def test_try_again_says_beforehand_what_it_replaces_and_replaces_it(world: World) -> None:
    installation = await world.install()
    first = await refused(world, installation, Fault.respond(422, "transition_refused"))
    waiting = await schedule(world, installation, in_minutes=60)
    editor = await world.open_page(installation)
    said = words(card(editor.page(), first["id"]))
    assert f"Trying again replaces the waiting one of version {waiting['version_id']} for " in said
    assert 'aria-describedby="retry-' in card(editor.page(), first["id"])
    tried = await retry(editor, installation.id, first["id"])
    assert tried.status == 303
    assert (await row(world, waiting["id"]))["status"] == "superseded"
    receipt = (await editor.follow(tried)).body.decode()
    assert f'data-replaced="{waiting["id"]}"' in receipt


async def test_try_again_while_one_is_being_sent_is_409_and_stores_nothing(world: World) -> None:
    installation = await world.install()
    first = await refused(world, installation, Fault.respond(422, "transition_refused"))
    waiting = await schedule(world, installation, in_minutes=60)
    editor = await world.open_page(installation)
    await (
        world.db.prepare(
            "UPDATE schedules SET status = 'running', next_attempt_at = NULL, lease_token = 'l',"
            " lease_until = ? WHERE id = ?"
        )
        .bind(world.clock.now + MINUTE, waiting["id"])
        .run()
    )
    busy = await retry(editor, installation.id, first["id"])
    assert busy.status == 409
    assert 'data-error-code="execution_in_progress"' in busy.body.decode()
    assert await _count(world) == 2


async def test_who_may_try_again(world: World) -> None:
    installation = await world.install()
    first = await refused(world, installation, Fault.respond(422, "transition_refused"))
    path = f"/installations/{installation.id}/schedules/{first['id']}/retry"

    # A person Dee Wan lets make no change sees no Try again, and a posted one is refused.
    viewer = await world.open_page(installation, person="usr_viewer")
    assert "/retry" not in viewer.page()
    assert "it cannot be tried again from here" in words(card(viewer.page(), first["id"]))
    shown = {"version_id": first["version_id"], "published_version_id": ""}
    csrf = await session_csrf(world, "usr_viewer")  # her page has no form to take it from
    refused_ = await viewer.post(path, {"csrf_token": csrf, **shown})
    assert refused_.status == 422
    assert 'data-error-code="transition_not_allowed"' in refused_.body.decode()

    # The manage launch is told where to do it.
    manage = await world.open_page(installation, None)
    from_manage = await manage.post(
        path, {"csrf_token": manage.csrf(), "opened_for": "manage", **shown}
    )
    assert from_manage.status == 403
    assert 'data-error-code="retry_from_content"' in from_manage.body.decode()

    # Only a refused schedule is tried again; one of another content is not reached.
    editor = await world.open_page(installation)
    waiting = await schedule(world, installation, in_minutes=60)
    again = await editor.post(
        f"/installations/{installation.id}/schedules/{waiting['id']}/retry",
        {"csrf_token": editor.csrf(), **editor.shown()},
    )
    assert again.status == 409
    assert 'data-error-code="not_retryable"' in again.body.decode()
    other = await schedule(world, installation, "cnt_page", in_minutes=60)
    elsewhere = await editor.post(
        f"/installations/{installation.id}/schedules/{other['id']}/retry",
        {"csrf_token": editor.csrf(), **editor.shown()},
    )
    assert elsewhere.status == 403
    assert await _count(world) == 3


async def _count(world: World) -> int:
    found = await world.db.prepare("SELECT count(*) AS n FROM schedules").first()
    assert found is not None
    return int(found["n"])


# -- 3: which limit ended it ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "faults", "late_ms", "ended_by", "sentence"),
    [
        (
            {"MAX_ATTEMPTS": "1"},
            [Fault.respond(503, "busy")],
            0,
            "attempts",
            "Dee Wan did not accept it in 1 try, so the plugin stopped trying.",
        ),
        (
            {},
            [Fault.respond(503, "busy")],
            895_000,
            "lateness",
            "It was still not sent 15 minutes after its time had passed, so the plugin"
            " stopped trying: nothing is sent later than that.",
        ),
        (
            {},
            [Fault.respond(429, "slow_down", retry_after=3600)],
            0,
            "retry_after",
            "Dee Wan asked to wait past the limit before the next try, so the plugin stopped"
            " trying.",
        ),
    ],
    ids=["attempts", "lateness", "retry_after"],
)
async def test_a_card_says_which_limit_ended_it(
    db: SqliteDatabase,
    clock: FakeClock,
    env: dict[str, str],
    faults: list[Fault],
    late_ms: int,
    ended_by: str,
    sentence: str,
) -> None:
    world = World(db, clock, env=base_env(**env))
    installation = await world.install()
    made = await schedule(world, installation)
    for fault in faults:
        world.core.faults.push(fault)
    await tick_at(world, made["due_at"] + late_ms)
    stored = await row(world, made["id"])
    assert (stored["result_code"], stored["ended_by"]) == ("retry_exhausted", ended_by)
    editor = await world.open_page(installation)
    [item] = schedules_on(editor.page())
    assert item["ended-by"] == ended_by
    assert f"Result {sentence}" in words(card(editor.page(), made["id"]))


# -- 5: confirm what cannot be undone; deliveries name their schedules ---------------------------


async def _endpoint_with_a_delivery(world: World) -> tuple[Installation, Browser, str, str]:
    installation = await world.install()
    receiver = Receiver()
    with_receivers(world, receiver)
    manage = await world.browser_for(installation, content_id=None)
    secret = await add_endpoint(manage, installation.id)
    made = await schedule(world, installation)
    world.core.faults.push(Fault.respond(422, "transition_refused"))
    await tick_at(world, made["due_at"])
    assert len(receiver.received) == 1
    return installation, manage, secret, made["id"]


async def test_a_delivery_names_its_schedule_and_links_to_its_card(world: World) -> None:
    installation, manage, _, schedule_id = await _endpoint_with_a_delivery(world)
    page = (
        await manage.get(f"/installations/{installation.id}/notifications?zone=Europe/Paris")
    ).body.decode()
    delivery = page.split("data-delivery-id=", 1)[1].split("</tr>", 1)[0]
    assert f'data-schedule-id="{schedule_id}"' in delivery
    said = words(delivery)
    assert "Publish version ver_" in said
    assert "of “Spring launch”, due Wed 1 Jul 2026, 12:05 CEST (Europe/Paris; 10:05 UTC)" in said
    href = html.unescape(re.findall(r'<a href="([^"]+)">Publish version', delivery)[0])
    assert href == (
        f"/installations/{installation.id}?schedule={schedule_id}&zone=Europe%2FParis"
        f"#schedule-{schedule_id}"
    )
    await schedule(world, installation, "cnt_page", in_minutes=90)  # another, not shown there
    linked = (await manage.get(href.split("#")[0])).body.decode()
    assert [s["schedule-id"] for s in schedules_on(linked)] == [schedule_id]
    assert 'data-notice="one_schedule"' in linked
    assert "Show all schedules" in linked


async def test_delete_asks_first_naming_the_endpoint_and_its_deliveries(world: World) -> None:
    installation, manage, _, schedule_id = await _endpoint_with_a_delivery(world)
    page = (
        await manage.get(f"/installations/{installation.id}/notifications?zone=UTC")
    ).body.decode()
    endpoint_id = re.findall(r'data-endpoint-id="([^"]+)"', page)[0]
    link = f"/installations/{installation.id}/notifications/{endpoint_id}/delete?zone=UTC"
    assert html.escape(link) in page or link in page
    assert f'/notifications/{endpoint_id}/delete"' not in page  # no one-click delete form
    asked = await manage.get(link)
    assert asked.status == 200
    said = words(asked.body.decode())
    assert "Delete this endpoint?" in said
    assert "https://hooks.example/scheduling" in said
    assert "removes the endpoint and its delivery from Scheduling for good" in said
    assert f'data-schedule-id="{schedule_id}"' in asked.body.decode()  # the delivery, listed
    assert await _endpoints(world) == 1  # asking deletes nothing

    form = asked.body.decode().split('class="endpoint-confirm">', 1)[1].split("</form>", 1)[0]
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form))
    done = await manage.post(
        f"/installations/{installation.id}/notifications/{endpoint_id}/delete", fields
    )
    assert done.status == 303
    assert done.header("location") == f"/installations/{installation.id}/notifications?zone=UTC"
    after = (await manage.follow(done)).body.decode()
    assert await _endpoints(world) == 0
    assert (
        "Deleted the endpoint https://hooks.example/scheduling. Its 1 delivery was deleted with"
        " it; nothing more is sent to it." in words(after)
    )
    again = (await manage.get(f"/installations/{installation.id}/notifications")).body.decode()
    assert "Deleted the endpoint" not in again  # said once


async def test_rotate_asks_first_and_says_the_receiver_needs_the_new_secret(world: World) -> None:
    installation, manage, secret, _ = await _endpoint_with_a_delivery(world)
    page = (await manage.get(f"/installations/{installation.id}/notifications")).body.decode()
    endpoint_id = re.findall(r'data-endpoint-id="([^"]+)"', page)[0]
    asked = await manage.get(f"/installations/{installation.id}/notifications/{endpoint_id}/rotate")
    assert asked.status == 200
    said = words(asked.body.decode())
    assert "Rotate the signing secret?" in said
    assert "The receiver cannot verify them until you paste the new secret into it" in said
    assert secret not in asked.body.decode()
    form = asked.body.decode().split('class="endpoint-confirm">', 1)[1].split("</form>", 1)[0]
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form))
    done = await manage.post(
        f"/installations/{installation.id}/notifications/{endpoint_id}/rotate", fields
    )
    assert done.status == 303
    after = (await manage.follow(done)).body.decode()
    new = re.findall(r"data-signing-secret>(whsec_[^<]+)<", after)[0]
    assert new != secret
    assert "paste this one into the receiver now" in words(after)


async def test_a_content_launch_is_not_shown_the_confirmations(world: World) -> None:
    installation, _, _, _ = await _endpoint_with_a_delivery(world)
    endpoint_id = (await world.db.prepare("SELECT id FROM notification_endpoints").first() or {})[
        "id"
    ]
    editor = await world.open_page(installation)
    for action in ("rotate", "delete"):
        shown = await editor.get(
            f"/installations/{installation.id}/notifications/{endpoint_id}/{action}"
        )
        assert shown.status == 403
        assert 'data-error-code="manage_only"' in shown.body.decode()


async def _endpoints(world: World) -> int:
    found = await world.db.prepare("SELECT count(*) AS n FROM notification_endpoints").first()
    assert found is not None
    return int(found["n"])


# -- 4: no dead ends ---------------------------------------------------------------------------


async def test_every_error_page_has_a_next_step(world: World) -> None:
    installation = await world.install()
    editor = await world.open_page(installation)
    base = f"/installations/{installation.id}"

    # A page refused: the same page again, and the installation's Dee Wan.
    missing = await editor.get(f"{base}/schedules/sch_gone/cancel?page=2")
    assert missing.status == 404
    assert next_steps(missing.body.decode()) == {
        "retry": f"{base}/schedules/sch_gone/cancel?page=2",
        "dee-wan": world.core.base_url,
    }

    # A form refused: back to the page it came from (posting again is not offered).
    made = await schedule(world, installation)
    await tick_at(world, made["due_at"])
    late = await editor.post(f"{base}/schedules/{made['id']}/cancel", {"csrf_token": editor.csrf()})
    assert late.status == 409
    assert next_steps(late.body.decode()) == {"back": base, "dee-wan": world.core.base_url}

    # A session that has ended still says where its Dee Wan is; a reload would not help.
    world.clock.advance(24 * 60 * MINUTE)
    ended = await editor.get(base)
    assert ended.status == 401
    assert next_steps(ended.body.decode()) == {"dee-wan": world.core.base_url}
    assert "Open Scheduling again from Dee Wan" in words(ended.body.decode())


async def test_an_error_page_names_no_dee_wan_to_a_stranger(world: World) -> None:
    installation = await world.install()
    other = await world.install()
    stranger = Browser(world.app)
    refused = await stranger.get(f"/installations/{installation.id}")
    assert refused.status == 401
    # Issue 38: it still leads somewhere, by the plugin's own addresses only.
    assert next_steps(refused.body.decode()) == {
        "retry": f"/installations/{installation.id}",
        "about": "/",
    }
    assert world.core.base_url not in refused.body.decode()
    assert "Open Scheduling from Dee Wan in this browser first" in words(refused.body.decode())
    # Nor to a session of another installation.
    elsewhere = await world.open_page(other)
    wrong = await elsewhere.get(f"/installations/{installation.id}")
    assert wrong.status == 403
    assert "dee-wan" not in next_steps(wrong.body.decode())
    # A used launch link is not offered again.
    launch = world.core.issue_launch(installation.id, "usr_editor", {"kind": "manage"})
    assert (await stranger.get(launch.url)).status == 303
    # Once opened from Dee Wan in that browser, the same link (a chat message's) shows the page.
    assert (await stranger.get(f"/installations/{installation.id}")).status == 200
    about = await stranger.get("/")  # the page it led to says how Scheduling is opened
    assert "open the content item in Dee Wan" in words(about.body.decode())
    used = await Browser(world.app).get(launch.url)
    assert used.status == 401
    assert "retry" not in next_steps(used.body.decode())


async def test_try_again_refused_while_dee_wan_is_down_keeps_its_button(world: World) -> None:
    installation = await world.install()
    first = await refused(world, installation, Fault.respond(422, "transition_refused"))
    editor = await world.open_page(installation)
    world.core.faults.push(Fault.timeout(), endpoint="content")
    down = await retry(editor, installation.id, first["id"])
    assert down.status == 503
    assert down.header("retry-after") == "60"
    page = down.body.decode()
    assert 'data-unread="dee_wan_unavailable"' in page
    assert 'data-error-code="dee_wan_unavailable"' in page
    assert "press Try again on it in a minute" in words(page)
    assert await _count(world) == 1
    # Its button is back on its card; pressed once Dee Wan answers, it is made.
    assert f'data-retry-of="{first["id"]}"' in card(page, first["id"])
    again = await retry(editor, installation.id, first["id"])
    assert again.status == 303
    assert await _count(world) == 2


# -- 6: the smaller frictions --------------------------------------------------------------------


async def test_every_time_on_the_manage_page_is_in_the_chosen_zone(world: World) -> None:
    installation = await world.install()
    tried = await refused(world, installation, Fault.respond(422, "transition_refused"))
    waiting = await schedule(world, installation, "cnt_page", in_minutes=60)
    manage = await world.browser_for(installation, content_id=None)
    cancelled = await manage.cancel(installation.id, waiting["id"], "?zone=Asia/Tokyo")
    page = (await manage.follow(cancelled)).body.decode()
    # The message after the cancel, the canceller's time and the attempts: all in Tokyo's.
    flash = words(page.split('data-cancelled="', 1)[1].split("</div>", 1)[0])
    assert "at Wed 1 Jul 2026, 20:05 JST (Asia/Tokyo; 11:05 UTC)" in flash
    said = words(card(page, waiting["id"]))
    assert "Cancelled by Ada Lovelace at Wed 1 Jul 2026, 19:05:00 JST (Asia/Tokyo;" in said
    attempts = words(card(page, tried["id"]).split('class="attempts"', 1)[1])
    assert "Started Wed 1 Jul 2026, 19:05:00 JST (Asia/Tokyo; 10:05:00 UTC)" in attempts


async def test_a_garbled_first_read_is_said_in_plain_words_with_next_steps(world: World) -> None:
    installation = await world.install()
    editor = await world.browser_for(installation)  # launched; its page not shown yet
    world.core.faults.push(Fault.bad_json(200), endpoint="content")
    garbled = await editor.get(f"/installations/{installation.id}")
    assert garbled.status == 502
    page = garbled.body.decode()
    assert 'data-error-code="untrusted_response"' in page
    said = words(page)
    assert "in a way its plugin protocol does not allow (a garbled or unexpected answer)" in said
    assert "could not be trusted" not in said
    assert next_steps(page) == {
        "retry": f"/installations/{installation.id}",
        "dee-wan": world.core.base_url,
    }
    assert (await editor.get(f"/installations/{installation.id}")).status == 200

"""The editor's content page: pin what you saw, stale pins and re-pin, who may cancel.

Everything goes through the public surface: the form as a page sends it, the
status codes, and the `data-*` attributes and words of the pages.
"""

from __future__ import annotations

import json
import re

import pytest

from fake_core.transport import MockTransport
from scheduling.http.responses import Response
from scheduling.repository import schedules
from tests.support.app import FakeClock, no_network
from tests.support.records import new_schedule
from tests.support.runtimes import Runtime
from tests.support.world import (
    MINUTE,
    World,
    card,
    local,
    schedules_on,
    session_csrf,
    stored,
    words,
)

# -- pin what you saw -------------------------------------------------------------------


async def test_the_form_carries_the_versions_it_shows(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation, "cnt_pub")
    group = world.core.state.group_of("cnt_pub")
    assert browser.shown() == {
        "version_id": group.current_version_id,
        "published_version_id": group.published_version_id,
    }
    draft = await world.open_page(installation, "cnt_en")
    assert draft.shown() == {
        "version_id": world.core.state.group_of("cnt_en").current_version_id,
        "published_version_id": "",
    }


async def test_a_version_saved_after_the_page_was_shown_is_409_and_nothing_is_stored(
    world: World,
) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    seen = browser.shown()["version_id"]
    newer = world.core.state.edit("cnt_en")  # a colleague saves while the editor reads
    response = await browser.create(installation.id, fold="")
    assert response.status == 409
    html = response.body.decode()
    assert 'data-error-code="content_changed"' in html
    assert f"you saw the current version {seen}, and the current version is {newer} now" in html
    assert await stored(world) == []
    # The page again, with the new version and the entered time kept.
    assert browser.shown()["version_id"] == newer
    assert f"Publish version {newer}" in html
    assert 'value="2026-07-02T09:00"' in html
    assert 'value="Europe/Paris"' in html
    again = await browser.create(installation.id)
    assert again.status == 303
    assert [r["version_id"] for r in await stored(world)] == [newer]


async def test_unpublish_checks_the_published_version_it_showed(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation, "cnt_pub")
    state = world.core.state
    state.edit("cnt_pub")
    state.publish_now("cnt_pub", world.clock.now_ms())  # another version went out meanwhile
    response = await browser.create(installation.id, transition="unpublish:draft")
    assert response.status == 409
    assert 'data-error-code="content_changed"' in response.body.decode()
    assert await stored(world) == []


async def test_a_change_that_keeps_the_pin_is_not_a_conflict(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    revision = world.core.state.bump_revision("cnt_en")
    assert (await browser.create(installation.id)).status == 303
    assert (await stored(world))[0]["workflow_revision"] == revision  # pinned as read at submit


@pytest.mark.parametrize(
    "versions",
    [
        {},
        {"version_id": ""},
        {"version_id": "not an id"},
        {"version_id": "ver_1", "published_version_id": "a b"},
    ],
)
async def test_a_form_without_the_shown_version_is_400_invalid_request(
    world: World, versions: dict[str, str]
) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    reads_before = len(world.core.calls.of("content"))
    sent = {k: v for k, v in browser.create_form().items() if "version_id" not in k}
    response = await browser.post(f"/installations/{installation.id}/schedules", sent | versions)
    assert response.status == 400
    assert 'data-error-code="invalid_request"' in response.body.decode()
    assert await stored(world) == []
    assert len(world.core.calls.of("content")) == reads_before  # refused before asking Dee Wan


# -- stale pins and re-pin ------------------------------------------------------------------


async def test_a_waiting_schedule_whose_pin_moved_is_flagged_with_a_sentence(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    assert (await browser.create(installation.id)).status == 303
    sid = str((await stored(world))[0]["id"])
    pinned = str((await stored(world))[0]["version_id"])
    fresh = (await browser.get(f"/installations/{installation.id}")).body.decode()
    assert "pin-stale" not in schedules_on(fresh)[0]
    assert "data-stale-count" not in fresh
    newer = world.core.state.edit("cnt_en")
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    assert schedules_on(html)[0]["pin-stale"] == "true"
    assert f"It will be refused: it pins {pinned}; the current version is {newer} now." in card(
        html, sid
    )
    assert 'data-stale-count="1"' in html
    assert f'name="repin_of" value="{sid}"' in card(html, sid)


async def test_stale_reasons_for_unpublish_and_for_a_new_workflow_revision(world: World) -> None:
    installation = await world.install()
    pub = await world.open_page(installation, "cnt_pub")
    assert (await pub.create(installation.id, transition="unpublish:draft")).status == 303
    en = await world.open_page(installation, "cnt_en")
    assert (await en.create(installation.id)).status == 303
    by_content = {r["content_id"]: r for r in await stored(world)}
    state = world.core.state
    state.unpublish_now("cnt_pub", world.clock.now_ms())
    html = (await pub.get(f"/installations/{installation.id}")).body.decode()
    unpublish = card(html, str(by_content["cnt_pub"]["id"]))
    assert 'data-pin-stale="true"' in unpublish
    assert f"it pins {by_content['cnt_pub']['version_id']}; nothing is published now." in unpublish
    # Unpublish is no longer offered, so it cannot be pinned again from here.
    assert "repin_of" not in unpublish
    assert "cannot be pinned again" in unpublish

    state.bump_revision("cnt_en")
    html = (await en.get(f"/installations/{installation.id}")).body.decode()
    publish = card(html, str(by_content["cnt_en"]["id"]))
    revision = by_content["cnt_en"]["workflow_revision"]
    assert f"it was made at workflow revision {revision}; the content is at revision" in publish
    assert "repin_of" in publish


async def test_re_pin_replaces_it_at_the_same_local_time_zone_and_fold(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    made = await browser.create(
        installation.id, local_time="2026-10-25T02:30", timezone="Europe/Berlin", fold="later"
    )
    assert made.status == 303
    old = (await stored(world))[0]
    newer = world.core.state.edit("cnt_en")
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    assert f"Pin {newer} instead, same time" in card(html, str(old["id"]))
    response = await browser.post(
        f"/installations/{installation.id}/schedules",
        {"csrf_token": browser.csrf(), **browser.shown(), "repin_of": str(old["id"])},
    )
    assert response.status == 303
    first, second = await stored(world)
    assert (first["id"], first["status"]) == (old["id"], "superseded")
    assert (second["version_id"], second["status"], second["revision"]) == (newer, "pending", 2)
    kept = ("local_time", "timezone", "fold", "due_at", "kind", "to_state")
    assert {k: second[k] for k in kept} == {k: old[k] for k in kept}
    receipt = (await browser.follow(response)).body.decode()
    # The receipt names what it replaced, by its time (was: "It replaces the earlier schedule.").
    assert f'data-replaced="{old["id"]}"' in receipt
    assert (
        f"It replaces the schedule of version {old['version_id']} for Sun 25 Oct 2026, 02:30 CET"
        " (Europe/Berlin; 01:30 UTC),"
        " which will not be sent" in words(receipt)
    )
    assert "pin-stale" not in schedules_on(receipt)[0]


async def test_re_pin_follows_the_rules_of_a_create(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    assert (await browser.create(installation.id)).status == 303
    sid = str((await stored(world))[0]["id"])
    world.core.state.edit("cnt_en")
    await browser.get(f"/installations/{installation.id}")
    shown = browser.shown()

    async def repin(of: str, versions: dict[str, str] | None = None) -> Response:
        return await browser.post(
            f"/installations/{installation.id}/schedules",
            {"csrf_token": browser.csrf(), **(versions or shown), "repin_of": of},
        )

    world.core.state.edit("cnt_en")  # moved again after this page was shown
    changed = await repin(sid)
    assert changed.status == 409
    assert 'data-error-code="content_changed"' in changed.body.decode()
    assert (await repin("sch_nope")).status == 404
    other = await world.open_page(installation, "cnt_page")
    assert (await other.create(installation.id)).status == 303
    other_id = next(str(r["id"]) for r in await stored(world) if r["content_id"] == "cnt_page")
    await browser.get(f"/installations/{installation.id}")
    assert (await repin(other_id, browser.shown())).status == 403
    cancel = await browser.post(
        f"/installations/{installation.id}/schedules/{sid}/cancel", {"csrf_token": browser.csrf()}
    )
    assert cancel.status == 303
    ended = await repin(sid, browser.shown())
    assert ended.status == 409
    assert 'data-error-code="not_repinnable"' in ended.body.decode()
    assert [r["status"] for r in await stored(world) if r["content_id"] == "cnt_en"] == [
        "cancelled"
    ]


# -- who may cancel -------------------------------------------------------------------------


async def test_cancel_records_who_and_when_and_the_card_says_so(
    world: World, clock: FakeClock
) -> None:
    installation = await world.install()
    editor = await world.open_page(installation)
    assert (await editor.create(installation.id)).status == 303
    sid = str((await stored(world))[0]["id"])
    # A manage launch cancels any schedule. Dee Wan offers it to site admins, who need no
    # right to publish themselves.
    world.core.state.add_person("usr_admin", "Mary Admin", set(), role="admin")
    manager = await world.open_page(installation, None, person="usr_admin")
    clock.advance(5_000)
    response = await manager.cancel(installation.id, sid)
    assert response.status == 303
    row = (await stored(world))[0]
    assert (row["status"], row["cancelled_by"], row["cancelled_by_name"], row["cancelled_at"]) == (
        "cancelled",
        "usr_admin",
        "Mary Admin",
        clock.now_ms(),
    )
    html = (await editor.get(f"/installations/{installation.id}")).body.decode()
    cancelled = "Cancelled by Mary Admin at Wed 1 Jul 2026, 12:00:05 CEST"
    assert f"{cancelled} (Europe/Paris; 10:00:05 UTC)" in words(card(html, sid))


async def test_who_may_cancel_is_decided_without_calling_dee_wan_even_when_it_is_down(
    world: World,
) -> None:
    installation = await world.install()
    editor = await world.open_page(installation)
    assert (await editor.create(installation.id)).status == 303
    sid = str((await stored(world))[0]["id"])
    html = (await editor.get(f"/installations/{installation.id}")).body.decode()
    assert f"/schedules/{sid}/cancel" in card(html, sid)
    viewer = await world.open_page(installation, person="usr_viewer")
    assert "You may not publish or unpublish this content now" in viewer.page()
    assert schedules_on(viewer.page())[0]["status"] == "pending"
    assert "/cancel" not in card(viewer.page(), sid)
    viewer.csrf_token = await session_csrf(world, "usr_viewer")
    down = MockTransport(no_network)  # Dee Wan cannot be reached: every request fails
    world.app.services.http = down
    # The rights the page was shown with decide, for the button and the post alike.
    refused = await viewer.post(
        f"/installations/{installation.id}/schedules/{sid}/cancel", {"csrf_token": viewer.csrf()}
    )
    assert refused.status == 403
    assert 'data-error-code="cancel_not_allowed"' in refused.body.decode()
    assert (await stored(world))[0]["status"] == "pending"
    response = await editor.post(
        f"/installations/{installation.id}/schedules/{sid}/cancel", {"csrf_token": editor.csrf()}
    )
    assert response.status == 303
    assert down.sent == []
    row = (await stored(world))[0]
    assert (row["status"], row["cancelled_by"]) == ("cancelled", "usr_editor")
    # The page after it reads Dee Wan's content once (below: what it shows then).
    after = await editor.follow(response)
    assert after.status == 200
    assert len(down.sent) == 1
    cancelled = "Cancelled by Ada Lovelace at Wed 1 Jul 2026, 12:00:00 CEST"
    assert cancelled in words(card(after.body.decode(), sid))


async def test_the_page_after_a_cancel_is_shown_while_dee_wan_is_down(runtime: Runtime) -> None:
    """Issue 26, item 9 and issue 27, item 4, with Dee Wan's own switch: the page after the
    cancel shows it done, from the database, says Dee Wan is not answering, and offers no
    create form (was 503 "Nothing was changed", although the cancel was done); a create sent
    meanwhile comes back 503 with the form as entered."""
    installation_id = await runtime.install()
    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    due = (runtime.now_ms() // MINUTE + 90) * MINUTE
    fields = {
        **editor.shown,
        "csrf_token": editor.csrf,
        "transition": "publish:published",
        "local_time": local(due),
        "timezone": "UTC",
    }
    made = await editor.post_form(f"/installations/{installation_id}/schedules", fields)
    assert made.status_code == 303, made.text
    sid = made.headers["location"].split("created=", 1)[1]
    # The rights the page was shown with are kept with the session: the cancel needs no call.
    sql = "SELECT offered_transitions FROM sessions WHERE installation_id = ?"
    [session] = await runtime.rows(sql, installation_id)
    assert json.loads(session["offered_transitions"]) == [["publish", "published"]]
    with runtime.dee_wan_down(5):
        cancel = f"/installations/{installation_id}/schedules/{sid}/cancel"
        cancelled = await editor.post_form(cancel, {"csrf_token": editor.csrf})
        assert cancelled.status_code == 303, cancelled.text
        after = await editor.get(cancelled.headers["location"])
        assert after.status_code == 200, after.text[:2000]
        shown = after.text
        assert 'data-unread="dee_wan_unavailable"' in shown
        assert "Dee Wan is not answering right now, so this page shows the schedules" in shown
        assert f'data-cancelled="{sid}"' in shown
        assert schedules_on(shown)[0]["status"] == "cancelled"
        assert 'class="schedule-form"' not in shown
        assert f'href="{runtime.dee_wan_url}">Back to Dee Wan</a>' in shown
        assert await runtime.rows("SELECT status FROM schedules WHERE id = ?", sid) == [
            {"status": "cancelled"}
        ]

        again = await editor.post_form(f"/installations/{installation_id}/schedules", fields)
        assert again.status_code == 503
        assert again.headers["retry-after"] == "60"
        assert 'data-error-code="dee_wan_unavailable"' in again.text
        assert f'value="{local(due)}"' in again.text
        assert "the form keeps what you entered" in again.text
        assert await runtime.count("schedules", installation_id) == 1


async def test_every_schedule_of_a_content_is_reachable_from_its_page(world: World) -> None:
    installation = await world.install()
    made = set()
    for n in range(230):  # each supersedes the one before: one pending, 229 superseded
        due = world.clock.now_ms() + 3_600_000
        new = new_schedule(id=f"sch_{n:03d}", installation_id=installation.id, due_at=due)
        world.clock.advance(1)
        await schedules.create(world.db, new, world.clock.now_ms())
        made.add(new.id)
    browser = await world.open_page(installation)
    seen: list[str] = []
    pages = 0
    html = browser.page()
    assert "Showing 1–50 of 230, page 1 of 5." in html
    assert 'rel="prev"' not in html
    while True:
        pages += 1
        listed = [item["schedule-id"] for item in schedules_on(html)]
        assert 0 < len(listed) <= 50
        seen += listed
        found = re.search(r'<a rel="next" href="([^"]+)"', html)
        if found is None:
            break
        html = (await browser.get(found.group(1).replace("&amp;", "&"))).body.decode()
        assert 'rel="prev"' in html
    assert pages == 5
    assert len(seen) == len(set(seen)) == 230
    assert set(seen) == made
    assert seen[0] == "sch_229"  # newest first

"""A release's forms on its page (issue 47 item 2 and 4), through HTTP on CPython: the check
on opening marks an item whose pin moved, which is then held at its time rather than sent;
reorder, rename, move (all or nothing), cancel (what it may, saying what it could not),
resume as it is or without the item not done; each refusal plain, nothing changed."""

from __future__ import annotations

import re
from typing import Any

from fake_core import Fault
from fake_core.state import Installation
from scheduling.domain.times import instant_text
from tests.support.world import MINUTE, Browser, World, card, local, tick_at, words

BOTH = ("cnt_en", "cnt_page")


async def a_release(
    world: World, installation: Installation, contents: tuple[str, ...] = BOTH, minutes: int = 60
) -> tuple[str, list[str], int]:
    """A release made from the first content's page, the others added from theirs."""
    due = (world.clock.now_ms() // MINUTE + minutes) * MINUTE
    items, release = [], "new"
    for content_id in contents:
        browser = await world.open_page(installation, content_id)
        change = "unpublish:draft" if content_id == "cnt_pub" else "publish:published"
        made = await browser.create(
            installation.id, local_time=local(due), timezone="UTC", release=release,
            release_name="Spring launch", transition=change,
        )  # fmt: skip
        assert made.status == 303, made.body[:2000]
        sid = (made.header("location") or "").split("created=")[1].split("&")[0]
        items.append(sid)
        if release == "new":
            found = (
                await world.db.prepare("SELECT release_id FROM schedules WHERE id = ?")
                .bind(sid)
                .first()
            )
            assert found is not None
            release = str(found["release_id"])
    return release, items, due


async def statuses(world: World, release_id: str) -> list[tuple[str, str, int]]:
    found = (
        await world.db.prepare(
            "SELECT id, status, release_position FROM schedules WHERE release_id = ?"
            " ORDER BY release_position, created_at, rowid"
        )
        .bind(release_id)
        .all()
    )
    return [(r["id"], r["status"], r["release_position"]) for r in found.results]


async def act(
    browser: Browser, installation: Installation, release_id: str, verb: str, **fields: str
) -> Any:
    path = f"/installations/{installation.id}/releases/{release_id}/{verb}"
    return await browser.post(path, {"csrf_token": browser.csrf(), **fields})


async def manager(world: World, installation: Installation, release_id: str) -> Browser:
    browser = await world.open_page(installation, None)
    page = await browser.get(f"/installations/{installation.id}/releases/{release_id}")
    assert page.status == 200, page.body[:2000]
    return browser


def release_status(page: str) -> str:
    found = re.search(r'data-release-status="([a-z]+)"', page)
    assert found
    return found.group(1)


async def test_opening_the_page_checks_and_an_item_still_stale_is_held_not_sent(
    world: World,
) -> None:
    installation = await world.install()
    release_id, (_, second), due = await a_release(world, installation)
    world.core.state.edit("cnt_page")  # the second item's pin moves
    browser = await world.open_page(installation, None)
    page = (await browser.get(f"/installations/{installation.id}/releases/{release_id}")).body
    assert release_status(page.decode()) == "conflict"
    assert "by Ada Lovelace" in words(page.decode())  # when and by whom it was checked
    conflict = (
        await world.db.prepare("SELECT conflict FROM schedules WHERE id = ?").bind(second).first()
    )
    assert conflict == {"conflict": "version_moved"}
    await tick_at(world, due)
    assert [s for _, s, _ in await statuses(world, release_id)] == ["completed", "held"]
    result = (
        await world.db.prepare("SELECT result_code FROM schedules WHERE id = ?")
        .bind(second)
        .first()
    )
    assert result == {"result_code": "held_conflict"}
    sent = [c.body["content_id"] for c in world.core.calls.of("transitions")]
    assert sent == ["cnt_en"]  # the stale one was never sent to be refused


async def test_reorder_rename_and_move_the_release(world: World) -> None:
    installation = await world.install()
    release_id, (first, second), due = await a_release(world, installation)
    browser = await manager(world, installation, release_id)
    assert (await act(browser, installation, release_id, "down", schedule_id=first)).status == 303
    assert await statuses(world, release_id) == [(second, "pending", 1), (first, "queued", 2)]
    refused = await act(browser, installation, release_id, "down", schedule_id=first)
    assert refused.status == 409  # already last
    assert 'data-error-code="not_reorderable"' in refused.body.decode()
    renamed = await act(browser, installation, release_id, "rename", name="  Summer launch ")
    assert renamed.status == 303
    later = due + 30 * MINUTE
    moved = await act(
        browser, installation, release_id, "move", local_time=local(later), timezone="UTC"
    )
    assert moved.status == 303, moved.body[:2000]
    found = await world.db.prepare("SELECT name, due_at FROM releases").first()
    assert found == {"name": "Summer launch", "due_at": later}
    now = [(sid, s) for sid, s, _ in await statuses(world, release_id) if s != "superseded"]
    assert [s for _, s in now] == ["pending", "queued"]
    fresh = (
        await world.db.prepare(
            "SELECT replaces, replaced_as, due_at, revision FROM schedules"
            " WHERE release_id = ? AND status <> 'superseded' ORDER BY release_position"
        )
        .bind(release_id)
        .all()
    )
    made = [(r["replaces"], r["replaced_as"], r["due_at"], r["revision"]) for r in fresh.results]
    assert made == [(second, "moved", later, 2), (first, "moved", later, 2)]
    past = await act(
        browser,
        installation,
        release_id,
        "move",
        local_time=local(due - 2 * 3_600_000),
        timezone="UTC",
    )
    assert past.status == 422
    assert 'data-error-code="past_time"' in past.body.decode()


async def test_an_editor_cancels_what_they_may_and_is_told_what_they_could_not(
    world: World,
) -> None:
    installation = await world.install()
    release_id, (_, theirs), _ = await a_release(world, installation)
    editor = await world.open_page(installation, "cnt_en")  # a content launch of the first
    await editor.get(f"/installations/{installation.id}/releases/{release_id}")
    answer = await act(editor, installation, release_id, "cancel")
    assert answer.status == 200
    page = answer.body.decode()
    assert f'data-untouched="{theirs}"' in page
    assert "belongs to other content" in words(page)
    assert [s for _, s, _ in await statuses(world, release_id)] == ["cancelled", "pending"]
    assert release_status(page) == "waiting"  # what is left of it still waits
    # A move is all or nothing: this editor may not move the other content's item.
    refused = await act(
        editor, installation, release_id, "move", local_time="2026-07-03T09:00", timezone="UTC"
    )
    assert refused.status == 403
    assert f"{theirs}:" in words(refused.body.decode())


async def test_resume_without_the_item_not_done_sends_the_rest_now(world: World) -> None:
    installation = await world.install()
    release_id, items, due = await a_release(world, installation, ("cnt_en", "cnt_page", "cnt_pub"))
    world.core.state.edit("cnt_en")  # the first is refused at its time: the rest held
    await tick_at(world, due)
    assert [s for _, s, _ in await statuses(world, release_id)] == ["refused", "held", "held"]
    browser = await manager(world, installation, release_id)
    resumed = await act(browser, installation, release_id, "resume", how="remove")
    assert resumed.status == 303, resumed.body[:2000]
    out = (
        await world.db.prepare("SELECT release_id, dismissed_by_name FROM schedules WHERE id = ?")
        .bind(items[0])
        .first()
    )
    assert out == {"release_id": None, "dismissed_by_name": "Ada Lovelace"}
    await tick_at(world, world.clock.now_ms() + MINUTE)
    fresh = [(sid, s) for sid, s, _ in await statuses(world, release_id) if sid not in items]
    assert [s for _, s in fresh] == ["completed", "completed"]
    assert (await world.db.prepare("SELECT status FROM releases").first()) == {
        "status": "completed"
    }
    again = await act(browser, installation, release_id, "resume", how="as_is")
    assert again.status == 409
    assert 'data-error-code="not_resumable"' in again.body.decode()


async def test_resuming_as_it_is_sends_the_same_pin_again_now(world: World) -> None:
    installation = await world.install()
    release_id, (_, second), due = await a_release(world, installation)
    world.core.faults.push(
        Fault.respond(409, "workflow_conflict"),
        endpoint="transitions",
        content_id="cnt_page",
    )
    await tick_at(world, due)
    assert [s for _, s, _ in await statuses(world, release_id)] == ["completed", "refused"]
    browser = await manager(world, installation, release_id)
    assert (await act(browser, installation, release_id, "resume", how="as_is")).status == 303
    now = world.clock.now_ms()
    await tick_at(world, now + MINUTE)
    fresh = (
        await world.db.prepare(
            "SELECT status, version_id, replaced_as, due_at FROM schedules WHERE replaces = ?"
        )
        .bind(second)
        .first()
    )
    old = (
        await world.db.prepare("SELECT version_id FROM schedules WHERE id = ?").bind(second).first()
    )
    assert fresh is not None
    assert old is not None
    assert (fresh["status"], fresh["replaced_as"], fresh["version_id"]) == (
        "completed", "resumed", old["version_id"],
    )  # fmt: skip
    assert fresh["due_at"] == now  # a fresh lateness window from the resume


async def test_a_form_without_its_token_is_refused_on_the_error_page(world: World) -> None:
    installation = await world.install()
    release_id, _, _ = await a_release(world, installation)
    browser = await manager(world, installation, release_id)
    path = f"/installations/{installation.id}/releases/{release_id}/cancel"
    refused = await browser.post(path, {"csrf_token": "x" * 43})
    assert refused.status == 403
    assert 'data-error-code="csrf_failed"' in refused.body.decode()
    assert "data-release-id" not in refused.body.decode()  # not the release's page
    assert [s for _, s, _ in await statuses(world, release_id)] == ["pending", "queued"]


async def test_the_content_form_offers_the_waiting_releases_and_an_item_names_its_own(
    world: World,
) -> None:
    installation = await world.install()
    release_id, (first, _), due = await a_release(world, installation)
    browser = await world.open_page(installation, "cnt_pub")
    form = browser.page().split('class="schedule-form"', 1)[1].split("</form>", 1)[0]
    choice = form.split('<select id="release" name="release"', 1)[1].split("</select>", 1)[0]
    offered = re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', choice)
    assert [value for value, _ in offered] == ["", release_id, "new"]
    at = instant_text(due, "UTC")
    assert words(offered[1][1]) == f"Add it to the release “Spring launch”, at {at}"
    assert 'name="release_name"' in form
    added = await browser.create(installation.id, transition="unpublish:draft", release=release_id)
    receipt = (await browser.follow(added)).body.decode()
    notice = receipt.split("data-confirmation=", 1)[1].split("</div>", 1)[0]
    assert f'data-release-id="{release_id}"' in notice  # queued behind the others, at its time
    assert f"Scheduled: unpublish the pinned version ver_2 at {at}." in words(notice)
    # The item's own content page names its release (the browser walk: within its tab).
    page = (await world.open_page(installation, "cnt_en")).page()
    item = card(page, first)
    named = re.search(r'data-release-id="([^"]+)" data-release-status="([a-z]+)"', item)
    assert named is not None
    assert named.groups() == (release_id, "waiting")
    assert f'href="/installations/{installation.id}/releases/{release_id}"' in item
    assert "/send-now" not in item  # sent (or moved) with its release only


async def test_the_releases_room_lists_each_release_with_its_status_and_items(
    world: World,
) -> None:
    installation = await world.install()
    browser = await world.open_page(installation, None)
    room = f"/installations/{installation.id}/releases"
    assert "data-releases-empty" in (await browser.get(room)).body.decode()
    waiting, _, due = await a_release(world, installation)
    later, _, _ = await a_release(world, installation, ("cnt_pub",), minutes=120)
    world.core.state.edit("cnt_page")  # the first release's second pin moves
    await browser.get(f"/installations/{installation.id}/releases/{waiting}")  # checked
    page = (await browser.get(room)).body.decode()
    lines = re.findall(r'<li class="release-line" data-release-id="([^"]+)"'
                       r' data-release-status="([a-z]+)">(.*?)</li>', page, re.S)  # fmt: skip
    assert [(rid, status) for rid, status, _ in lines] == [
        (waiting, "conflict"),
        (later, "waiting"),
    ]
    said = words(lines[0][2])
    assert said.startswith(f"“Spring launch”: 2 items, at {instant_text(due, 'UTC')}.")
    assert "Waiting, with an item Dee Wan would refuse" in said
    assert "data-releases-empty" not in page


async def test_a_content_launch_re_pins_its_own_item_from_the_release_page(world: World) -> None:
    installation = await world.install()
    release_id, (first, second), _ = await a_release(world, installation)
    world.core.state.edit("cnt_en")  # both pins move
    world.core.state.edit("cnt_page")
    browser = await world.open_page(installation, "cnt_en")
    shown = await browser.get(f"/installations/{installation.id}/releases/{release_id}")
    assert shown.status == 200, shown.body[:2000]
    page = shown.body.decode()
    assert 'class="repin"' not in card(page, second)  # another content's: from its own page
    assert "use Schedule on this content in Dee Wan" in words(card(page, second))
    form = card(page, first).split('class="repin"', 1)[1].split("</form>", 1)[0]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))
    repinned = await browser.post(f"/installations/{installation.id}/schedules", fields)
    assert repinned.status == 303, repinned.body[:2000]
    found = await statuses(world, release_id)
    assert [(status, place) for _, status, place in found if status != "superseded"] == [
        ("pending", 1),
        ("queued", 2),
    ]  # the new pin keeps the first place

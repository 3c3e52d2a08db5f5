"""Issue 47 through the public surface, on CPython and under Pyodide with Miniflare's D1: a
release of three contents' changes made from their content pages, sent in order at its time.
A refusal in the middle: item 1 applied, item 2 refused, item 3 never sent (Dee Wan receives
no command for it), the release held and `release.held` delivered once; Resume after a re-pin
sends item 2 then item 3; Cancel the rest never calls Dee Wan."""

from __future__ import annotations

import base64
import re
from typing import Any

from tests.support.app import ADMIN_SECRET, call
from tests.support.metrics import parse, value
from tests.support.runtimes import CpythonRuntime, PyodideRuntime, Runtime, Visitor
from tests.support.waiting import until
from tests.support.world import MINUTE, World, local, tick_at

# Per runtime: two drafts to publish and a published content to unpublish (Dee Wan's sample).
CONTENTS = {
    "cpython": ("cnt_en", "cnt_page", "cnt_pub"),
    "pyodide": ("cnt_spring", "cnt_news", "cnt_about"),
}
CHANGES = ("publish:published", "publish:published", "unpublish:draft")
OUTCOMES = ("completed", "held", "cancelled")


# -- what only each runtime's Dee Wan double can do, behind one name each ------------------


def edit(runtime: Runtime, content_id: str) -> None:
    """Someone edits the content in Dee Wan: a new version, a new workflow revision."""
    if isinstance(runtime, CpythonRuntime):
        runtime.world.core.state.edit(content_id)
    else:
        assert isinstance(runtime, PyodideRuntime)
        runtime.core.control("POST", "content", {"action": "edit", "content_id": content_id})


def commands(runtime: Runtime) -> list[tuple[str, str | None]]:
    """Every transition command Dee Wan received: its idempotency key and what it answered."""
    if isinstance(runtime, CpythonRuntime):
        calls = runtime.world.core.calls.of("transitions")
        return [(str(c.header("Idempotency-Key")), c.code) for c in calls]
    assert isinstance(runtime, PyodideRuntime)
    found = runtime.core.control("GET", "calls", endpoint="transitions")["calls"]
    return [(_header(c["headers"], "idempotency-key"), c["code"]) for c in found]


def _header(headers: dict[str, str], name: str) -> str:
    return next(value for key, value in headers.items() if key.lower() == name)


# -- the pages a person uses ----------------------------------------------------------------


async def schedule(
    runtime: Runtime, installation_id: str, content_id: str, change: str, due: int, **more: str
) -> tuple[Visitor, str]:
    """The content's page opened from Dee Wan and its form sent: the schedule made."""
    editor = await runtime.open_page(installation_id, content_id=content_id)
    fields = {
        **editor.shown,
        "csrf_token": editor.csrf,
        "transition": change,
        "local_time": local(due),
        "timezone": "UTC",
        **more,
    }
    made = await editor.post_form(f"/installations/{installation_id}/schedules", fields)
    assert made.status_code == 303, made.text[:3000]
    return editor, made.headers["location"].split("created=", 1)[1].split("&", 1)[0]


async def release_of_three(
    runtime: Runtime, installation_id: str, due: int
) -> tuple[str, list[str]]:
    """A release made from the first content's page, the other two added from theirs."""
    first, *others = CONTENTS[runtime.name]
    _, made = await schedule(
        runtime, installation_id, first, CHANGES[0], due, release="new", release_name="Spring"
    )
    [row] = await runtime.rows("SELECT release_id FROM schedules WHERE id = ?", made)
    release_id = str(row["release_id"])
    assert re.fullmatch(r"rel_[A-Za-z0-9_-]{22}", release_id)
    items = [made]
    for content_id, change in zip(others, CHANGES[1:], strict=True):
        # The form's time is ignored: an item takes its release's time.
        _, added = await schedule(
            runtime, installation_id, content_id, change, due + 3_600_000, release=release_id
        )
        items.append(added)
    return release_id, items


async def items_of(runtime: Runtime, release_id: str) -> list[dict[str, Any]]:
    return await runtime.rows(
        "SELECT id, status, result_code, release_position, due_at, idempotency_key, replaces"
        " FROM schedules WHERE release_id = ? ORDER BY release_position, created_at, rowid",
        release_id,
    )


async def release_row(runtime: Runtime, release_id: str) -> dict[str, Any]:
    [row] = await runtime.rows("SELECT * FROM releases WHERE id = ?", release_id)
    return row


async def add_endpoint(runtime: Runtime, installation_id: str, url: str) -> Visitor:
    manager = await runtime.open_page(installation_id)
    await manager.get(f"/installations/{installation_id}/notifications")
    fields = {
        "csrf_token": manager.csrf,
        "opened_for": "manage",
        "url": url,
        "events": ["release.held", "release.completed"],
    }
    added = await manager.post_form(f"/installations/{installation_id}/notifications", fields)
    assert added.status_code == 303, added.text[:2000]
    return manager


def keys(items: list[dict[str, Any]]) -> dict[str, str]:
    return {str(i["id"]): str(i["idempotency_key"]) for i in items}


async def test_three_items_are_sent_in_order_at_the_releases_time(runtime: Runtime) -> None:
    installation_id = await runtime.install()
    due = runtime.minute_ahead(6)
    release_id, made = await release_of_three(runtime, installation_id, due)
    items = await items_of(runtime, release_id)
    assert [i["id"] for i in items] == made
    assert [i["status"] for i in items] == ["pending", "queued", "queued"]
    assert {i["due_at"] for i in items} == {due}
    manager = await runtime.open_page(installation_id)
    shown = await manager.get(f"/installations/{installation_id}/releases/{release_id}")
    assert shown.status_code == 200, shown.text[:2000]
    assert f'data-release-id="{release_id}" data-release-status="waiting"' in shown.text
    listed = re.findall(r'data-schedule-id="(sch_[^"]+)" data-status="([a-z]+)"', shown.text)
    assert listed == [(made[0], "pending"), (made[1], "queued"), (made[2], "queued")]

    await runtime.tick(due)
    items = await items_of(runtime, release_id)
    assert [i["status"] for i in items] == ["completed"] * 3
    sent = [key for key, _ in commands(runtime)]
    assert sent == [keys(items)[sid] for sid in made]  # one each, in order
    assert (await release_row(runtime, release_id))["status"] == "completed"


async def outcomes(runtime: Runtime) -> dict[str, float]:
    """What /admin/metrics says of releases: held now, and each outcome counted so far."""
    async with runtime.http() as http:
        scraped = await http.get("/admin/metrics", headers=runtime.operator)
    assert scraped.status_code == 200, scraped.text[:500]
    _, samples = parse(scraped.text)
    said = {o: value(samples, "scheduling_release_outcomes_total", outcome=o) for o in OUTCOMES}
    return {**said, "held now": value(samples, "scheduling_releases", status="held")}


async def test_a_refusal_in_the_middle_holds_the_rest_and_resume_sends_it_in_order(
    runtime: Runtime,
) -> None:
    installation_id = await runtime.install()
    due = runtime.minute_ahead(6)
    before = await outcomes(runtime)
    with runtime.receiver() as hooks:
        await add_endpoint(runtime, installation_id, hooks.url)
        release_id, made = await release_of_three(runtime, installation_id, due)
        second = CONTENTS[runtime.name][1]
        edit(runtime, second)  # item 2's pin is out of date now: Dee Wan will refuse it
        first_keys = keys(await items_of(runtime, release_id))

        await runtime.tick(due)
        items = await items_of(runtime, release_id)
        assert [(i["status"], i["result_code"]) for i in items] == [
            ("completed", "transition_applied"),
            ("refused", "scheduled_target_stale"),
            ("held", "release_held"),
        ]
        assert commands(runtime) == [
            (first_keys[made[0]], "transition_applied"),
            (first_keys[made[1]], "scheduled_target_stale"),
        ]  # item 3: no command at all
        release = await release_row(runtime, release_id)
        assert (release["status"], release["held_by"]) == ("held", made[1])
        assert release["held_code"] == "scheduled_target_stale"
        await until(lambda: hooks.received, "release.held delivered")
        [held] = [d for d in hooks.received if d.event["type"] == "release.held"]
        data = held.event["data"]
        assert (data["release_id"], data["schedule_id"]) == (release_id, made[1])
        assert (data["applied"], data["held"]) == ([made[0]], [made[2]])
        assert "stays applied" in data["message"]
        held_now = await outcomes(runtime)
        assert (held_now["held now"], held_now["held"] - before["held"]) == (1, 1)

        # The page says so, and Resume re-pins item 2 to what Dee Wan reports now.
        manager = await runtime.open_page(installation_id)
        page = await manager.get(f"/installations/{installation_id}/releases/{release_id}")
        assert f'data-release-id="{release_id}" data-release-status="held"' in page.text
        listed = re.findall(r'data-schedule-id="(sch_[^"]+)" data-status="([a-z]+)"', page.text)
        assert listed == [(made[0], "completed"), (made[1], "refused"), (made[2], "held")]
        assert "stays applied" in page.text
        shown = dict(re.findall(r'name="((?:published_)?version_id)" value="([^"]*)"', page.text))
        resume = f"/installations/{installation_id}/releases/{release_id}/resume"
        resumed = await manager.post_form(
            resume, {"csrf_token": manager.csrf, "opened_for": "manage", "how": "repin", **shown}
        )
        assert resumed.status_code == 303, resumed.text[:3000]
        now = runtime.now_ms()
        await runtime.tick(now)
        items = await items_of(runtime, release_id)
        fresh = [i for i in items if i["replaces"] is not None]
        assert [i["replaces"] for i in fresh] == [made[1], made[2]]
        assert [i["status"] for i in fresh] == ["completed", "completed"]
        assert all(i["due_at"] >= now - runtime.slack_ms for i in fresh)  # a fresh window
        second_round = [key for key, _ in commands(runtime)][2:]
        assert second_round == [str(i["idempotency_key"]) for i in fresh]  # 2, then 3
        assert (await release_row(runtime, release_id))["status"] == "completed"
        after = await outcomes(runtime)
        assert (after["held now"], after["completed"] - before["completed"]) == (0, 1)
    # Dee Wan told once: one release.held, then one release.completed.
    types = [d.event["type"] for d in hooks.received]
    assert types.count("release.held") == 1
    assert types.count("release.completed") <= 1


async def test_cancel_the_rest_of_a_held_release_never_calls_dee_wan(runtime: Runtime) -> None:
    installation_id = await runtime.install()
    due = runtime.minute_ahead(6)
    release_id, _made = await release_of_three(runtime, installation_id, due)
    edit(runtime, CONTENTS[runtime.name][1])
    await runtime.tick(due)
    assert (await release_row(runtime, release_id))["status"] == "held"
    before = len(commands(runtime))
    manager = await runtime.open_page(installation_id)
    cancel = f"/installations/{installation_id}/releases/{release_id}/cancel"
    answer = await manager.post_form(cancel, {"csrf_token": manager.csrf, "opened_for": "manage"})
    assert answer.status_code == 200, answer.text[:2000]
    assert 'data-release-status="cancelled"' in answer.text
    assert "nothing was sent to Dee Wan" in answer.text
    await runtime.tick(runtime.now_ms())
    assert len(commands(runtime)) == before
    items = await items_of(runtime, release_id)
    assert [i["status"] for i in items] == ["completed", "refused", "held"]
    release = await release_row(runtime, release_id)
    assert (release["status"], release["held_by"]) == ("cancelled", None)


async def test_the_operator_page_counts_releases_and_lists_the_held_ones(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    due = (world.clock.now_ms() // MINUTE + 6) * MINUTE
    made = await browser.create(
        installation.id, local_time=local(due), timezone="UTC", release="new", release_name="Q3"
    )
    assert made.status == 303, made.body[:2000]
    world.core.state.edit("cnt_en")  # its pin is out of date at its time
    await tick_at(world, due)
    [release] = (await world.db.prepare("SELECT id, held_by FROM releases").all()).results
    secret = base64.b64encode(f"operator:{ADMIN_SECRET}".encode()).decode()
    headers = {"authorization": f"Basic {secret}", "accept": "text/html"}
    page = (await call(world.app, "GET", "/admin", headers=headers)).body.decode()
    assert "0 waiting, 1 held, 0 completed, 0 cancelled" in page
    row = re.search(
        rf'<tr data-release-id="{release["id"]}" data-release-status="held">.*?</tr>', page, re.S
    )
    assert row, page[-3000:]
    assert "“Q3”" in row.group(0)
    assert release["held_by"] in row.group(0)
    assert "scheduled_target_stale" in row.group(0)

"""Issue 47 item 5 and issue 48 item 4, for agents, through the official MCP client (which
checks each answer against its tool's output schema): a release read with `get_release`, its
items naming it in `list_schedules`, a change proposed into a waiting release, a waiting
schedule proposed moved or sent now; a person confirms each on the content's page."""

from __future__ import annotations

import re
from typing import Any

from mcp import Client

from tests.support.agents import official_client
from tests.support.runtimes import Runtime, Visitor
from tests.support.world import local

MINUTE = 60_000


async def mint(runtime: Runtime, installation_id: str) -> str:
    manager = await runtime.open_page(installation_id)
    await manager.get(f"/installations/{installation_id}/agents")
    minted = await manager.post_form(
        f"/installations/{installation_id}/agent-keys",
        {"csrf_token": manager.csrf, "opened_for": "manage", "name": "Launch bot", "days": "7"},
    )
    assert minted.status_code == 201, minted.text[:2000]
    found = re.search(r'value="(dwk_[^"]+)" size="50" data-agent-key', minted.text)
    assert found
    return found.group(1)


async def editor(runtime: Runtime, installation_id: str) -> Visitor:
    return await runtime.open_page(installation_id, content_id=runtime.content)


async def confirm(runtime: Runtime, installation_id: str, proposal_id: str) -> str:
    person = await editor(runtime, installation_id)
    await person.get(f"/installations/{installation_id}/agents")
    assert proposal_id in person.page
    confirmed = await person.post_form(
        f"/installations/{installation_id}/proposals/{proposal_id}/confirm",
        {"csrf_token": person.csrf, "opened_for": runtime.content, **person.shown},
    )
    assert confirmed.status_code == 303, confirmed.text[:2000]
    return confirmed.headers["location"].split("created=")[1].split("&")[0]


async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict), result.content
    return result.structured_content


async def test_agents_read_a_release_and_propose_into_it_moves_and_sends_now(
    runtime: Runtime,
) -> None:
    installation_id = await runtime.install()
    key = await mint(runtime, installation_id)
    person = await editor(runtime, installation_id)
    due = runtime.minute_ahead(12)
    made = await person.post_form(
        f"/installations/{installation_id}/schedules",
        {**person.shown, "csrf_token": person.csrf, "transition": "publish:published",
         "local_time": local(due), "timezone": "UTC", "release": "new", "release_name": "Spring"},
    )  # fmt: skip
    assert made.status_code == 303, made.text[:2000]
    item = made.headers["location"].split("created=")[1]
    [found] = await runtime.rows("SELECT release_id FROM schedules WHERE id = ?", item)
    release_id = found["release_id"]
    async with official_client(runtime, key) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"get_release", "propose_change"} <= names

        release = await call(session, "get_release", {"release_id": release_id})
        assert (release["name"], release["status"], release["held_by"]) == (
            "Spring",
            "waiting",
            None,
        )
        assert [i["id"] for i in release["items"]] == [item]
        listed = await call(session, "list_schedules", {})
        [shown] = listed["schedules"]
        ref = {"id": release_id, "name": "Spring", "position": 1, "status": "waiting"}
        assert shown["release"] == ref

        # Into the release: the time given is not used, the release's is.
        proposed = await call(session, "propose_schedule", {
            "content_id": runtime.content, "change": "unpublish", "local_time": "2031-01-01T00:00",
            "timezone": "UTC", "release": release_id,
        })  # fmt: skip
        assert proposed["proposal"]["release_id"] == release_id
        assert proposed["proposal"]["due_at"] == release["due_at"]

        # A waiting schedule of its own, moved and then sent now by proposals a person confirms.
        alone = runtime.minute_ahead(30)
        person = await editor(runtime, installation_id)
        other = await person.post_form(
            f"/installations/{installation_id}/schedules",
            {**person.shown, "csrf_token": person.csrf, "transition": "publish:published",
             "local_time": local(alone), "timezone": "UTC"},
        )  # fmt: skip
        # (a publish already waits in the release: a schedule of its own replaces that item)
        assert other.status_code == 303, other.text[:2000]
        sid = other.headers["location"].split("created=")[1]
        later = local(alone + 60 * MINUTE)
        moved = await call(session, "propose_change", {"schedule_id": sid, "local_time": later})
        assert (moved["proposal"]["changes"], moved["proposal"]["changes_as"]) == (sid, "moved")
        refused = await session.call_tool("propose_change", {"schedule_id": sid})
        assert refused.is_error  # neither a time nor send_now
        new_id = await confirm(runtime, installation_id, moved["proposal"]["id"])
        rows = await runtime.rows(
            "SELECT status, replaces, replaced_as, due_at FROM schedules WHERE id = ?", new_id
        )
        assert rows == [
            {
                "status": "pending",
                "replaces": sid,
                "replaced_as": "moved",
                "due_at": alone + 3_600_000,
            }
        ]
        now = await call(session, "propose_change", {"schedule_id": new_id, "send_now": True})
        sent_id = await confirm(runtime, installation_id, now["proposal"]["id"])
        [sent] = await runtime.rows(
            "SELECT replaced_as, due_at FROM schedules WHERE id = ?", sent_id
        )
        assert sent["replaced_as"] == "sent_now"
        assert sent["due_at"] <= runtime.now_ms()
        got = await call(session, "get_schedule", {"schedule_id": sent_id})
        assert any("sent now by" in line for line in got["history"])

"""The agents' endpoint holds its lines: a key sees nothing of another installation, ends at
once when it expires or is revoked, never does more than its person, leaves no key or note in
the logs, and strangers' bytes get bounded answers."""

from __future__ import annotations

import json
import logging

import pytest

from scheduling.mcp.endpoint import CALLS, MAX_BODY_BYTES
from tests.support.agents import call_tool, mint_key, post_mcp, proposal, stateless
from tests.support.app import ADMIN_SECRET, call
from tests.support.metrics import scrape, value
from tests.support.webhooks import (
    CHAT_URL,
    Receiver,
    add_chat_endpoint,
    add_endpoint,
    signed_by,
    with_receivers,
)
from tests.support.world import World, schedule, tick_at

DAY_MS = 86_400_000


async def test_a_key_of_one_installation_sees_nothing_of_another(world: World) -> None:
    a, b = await world.install(), await world.install()
    made = await schedule(world, b)
    key_a = await mint_key(world, a)
    listed = await call_tool(world, key_a, "list_schedules", {})
    assert listed["structuredContent"]["schedules"] == []
    got = await call_tool(world, key_a, "get_schedule", {"schedule_id": made["id"]})
    assert got["_meta"]["code"] == "schedule_not_found"
    key_b = await mint_key(world, b)
    proposed = await call_tool(world, key_b, "propose_schedule", proposal())
    theirs = {"proposal_id": proposed["structuredContent"]["proposal"]["id"]}
    withdrawn = await call_tool(world, key_a, "withdraw_proposal", theirs)
    assert withdrawn["_meta"]["code"] == "proposal_not_found"
    agenda = await call_tool(world, key_a, "agenda", {})
    assert agenda["structuredContent"]["items"] == []


async def test_a_content_key_reaches_its_content_only(world: World) -> None:
    installation = await world.install()
    other = await schedule(world, installation, "cnt_pub", transition="unpublish:draft")
    key = await mint_key(world, installation, content_id="cnt_en")
    got = await call_tool(world, key, "get_schedule", {"schedule_id": other["id"]})
    assert got["_meta"]["code"] == "schedule_not_found"
    refused = await call_tool(world, key, "propose_schedule", proposal("cnt_pub"))
    assert refused["_meta"]["code"] == "other_content"


async def test_an_expired_or_revoked_key_is_refused_at_once(world: World) -> None:
    installation = await world.install()
    key = await mint_key(world, installation, days="1")
    assert (await post_mcp(world, key, stateless("tools/list"))).status == 200
    world.clock.now += DAY_MS
    expired = await post_mcp(world, key, stateless("tools/list"))
    assert expired.status == 401
    assert expired.header("www-authenticate") == 'Bearer realm="scheduling-mcp"'

    other = await mint_key(world, installation, name="Chat bot")
    browser = await world.browser_for(installation, content_id=None)
    page = (await browser.get(f"/installations/{installation.id}/agents")).body.decode()
    key_id = page.split('data-agent-key-id="', 1)[1].split('"', 1)[0]
    revoked = await browser.post(
        f"/installations/{installation.id}/agent-keys/{key_id}/revoke",
        {"csrf_token": browser.csrf(), "opened_for": "manage"},
    )
    assert revoked.status == 303
    assert (await post_mcp(world, other, stateless("tools/list"))).status == 401


async def test_keys_end_with_the_installations_data(world: World) -> None:
    installation = await world.install()
    key = await mint_key(world, installation)
    deleted = await call(
        world.app,
        "POST",
        f"/admin/installations/{installation.id}/delete-data",
        headers={"authorization": f"Bearer {ADMIN_SECRET}"},
    )
    assert deleted.status in (200, 204), deleted.body
    assert (await post_mcp(world, key, stateless("tools/list"))).status == 401
    for table in ("agent_keys", "proposals"):
        row = await world.db.prepare(f"SELECT count(*) AS n FROM {table}").first()
        assert row == {"n": 0}


async def test_a_viewers_key_reads_but_cannot_propose(world: World) -> None:
    installation = await world.install()
    key = await mint_key(world, installation, person="usr_viewer", content_id="cnt_en")
    listed = await call_tool(world, key, "list_schedules", {})
    assert listed["isError"] is False
    refused = await call_tool(world, key, "propose_schedule", proposal())
    assert refused["isError"] is True
    assert refused["_meta"]["code"] == "transition_not_allowed"
    count = await world.db.prepare("SELECT count(*) AS n FROM proposals").first()
    assert count == {"n": 0}


async def test_an_agent_cannot_cancel_what_a_person_scheduled(world: World) -> None:
    installation = await world.install()
    made = await schedule(world, installation)
    key = await mint_key(world, installation)
    refused = await call_tool(world, key, "cancel_schedule", {"schedule_id": made["id"]})
    assert refused["_meta"]["code"] == "cancel_not_allowed"


async def test_no_key_or_note_in_the_logs_and_a_hostile_note_is_escaped(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    installation = await world.install()
    hostile = '<script>alert("x")</script> secret-note-words'
    name = "<img src=x onerror=alert(1)>"
    key = await mint_key(world, installation, name=name)
    await call_tool(world, key, "propose_schedule", proposal(note=hostile))
    browser = await world.browser_for(installation)
    page = (await browser.get(f"/installations/{installation.id}/agents")).body.decode()
    assert "&lt;script&gt;" in page
    assert "<script>" not in page
    assert "<img src=x" not in page
    assert key not in caplog.text
    assert "secret-note-words" not in caplog.text


async def test_strangers_bytes_get_bounded_answers(world: World) -> None:
    installation = await world.install()
    key = await mint_key(world, installation)
    big = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"'
        + b"a" * MAX_BODY_BYTES
        + b'"}}'
    )
    assert (await post_mcp(world, key, big)).status == 413
    deep = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":'
        + b"[" * 5000
        + b"]" * 5000
        + b"}"
    )
    answer = await post_mcp(world, key, deep)
    assert answer.status == 400
    assert json.loads(answer.body)["error"]["code"] == -32700
    batch = await post_mcp(world, key, b"[" + json.dumps(stateless("tools/list")).encode() + b"]")
    assert batch.status == 400
    foreign = await post_mcp(
        world, key, stateless("tools/list"), headers={"origin": "https://evil.example"}
    )
    assert foreign.status == 403
    statuses = [
        (await post_mcp(world, key, stateless("tools/list"))).status
        for _ in range(CALLS.per_minute + 5)
    ]
    assert statuses.count(429) >= 5
    limited = await post_mcp(world, key, stateless("tools/list"))
    assert limited.header("retry-after") is not None


async def test_no_key_at_all_is_401(world: World) -> None:
    await world.install()
    for sent in (None, "dwk_short", "dwp_" + "a" * 43, "dwk_" + "a" * 43):
        refused = await post_mcp(world, sent, stateless("tools/list"))
        assert refused.status == 401
        assert json.loads(refused.body)["error"]["data"]["code"] == "unauthorized"
    # GET is not how MCP is spoken here (no stream is ever opened).
    assert (await call(world.app, "GET", "/mcp")).status == 405


async def test_agent_calls_are_counted_by_tool_and_outcome(world: World) -> None:
    installation = await world.install()
    key = await mint_key(world, installation)
    await call_tool(world, key, "list_schedules", {})
    await call_tool(world, key, "propose_schedule", proposal("cnt_en") | {"timezone": "Mars/Base"})
    await call_tool(world, key, "agenda", {"hours": 0})
    types, samples = await scrape(world.app)
    assert types["scheduling_agent_calls"] == "counter"
    name = "scheduling_agent_calls_total"
    assert value(samples, name, tool="list_schedules", outcome="ok") == 1
    assert value(samples, name, tool="propose_schedule", outcome="refused") == 1
    assert value(samples, name, tool="agenda", outcome="invalid") == 1
    assert value(samples, name, tool="cancel_schedule", outcome="ok") == 0


async def test_a_new_proposal_is_an_event_the_endpoints_hear(world: World) -> None:
    receiver, chat = Receiver(), Receiver(url=CHAT_URL)
    with_receivers(world, receiver, chat)
    installation = await world.install()
    manage = await world.browser_for(installation, content_id=None)
    secret = await add_endpoint(manage, installation.id, receiver.url, ("proposal.created",))
    await add_chat_endpoint(manage, installation.id, CHAT_URL, ("proposal.created",))
    key = await mint_key(world, installation, name="Release bot")
    made = await call_tool(world, key, "propose_schedule", proposal(note="secret-note-words"))
    await tick_at(world, world.clock.now_ms())
    [delivered] = receiver.received
    assert signed_by(secret, delivered)
    event = delivered.event
    assert event["type"] == "proposal.created"
    assert event["data"]["proposal_id"] == made["structuredContent"]["proposal"]["id"]
    assert event["data"]["proposed_by"] == "Release bot"
    assert b"secret-note-words" not in delivered.body
    [line] = chat.texts()
    assert "Release bot proposes to publish cnt_en at" in line


async def test_a_key_ended_a_month_ago_goes_with_the_ticks_purge(world: World) -> None:
    installation = await world.install()
    await mint_key(world, installation, name="Old bot", days="1")
    world.clock.now += 31 * DAY_MS  # a day to expire, and thirty more
    await mint_key(world, installation, name="New bot")
    await tick_at(world, world.clock.now_ms())
    assert await world.db.prepare("SELECT count(*) AS n FROM agent_keys").first() == {"n": 2}
    world.clock.now += DAY_MS
    await tick_at(world, world.clock.now_ms())
    names = await world.db.prepare("SELECT name FROM agent_keys").all()
    assert [row["name"] for row in names.results] == ["New bot"]


async def test_a_client_sending_wrong_keys_is_held_back(world: World) -> None:
    installation = await world.install()
    key = await mint_key(world, installation)
    statuses = [
        (await post_mcp(world, "dwk_" + f"{n:043d}", stateless("tools/list"))).status
        for n in range(15)
    ]
    assert statuses[0] == 401
    assert statuses[-1] == 429
    # Held back, even with a good key, until its minute has passed.
    assert (await post_mcp(world, key, stateless("tools/list"))).status == 429
    world.clock.now += 61_000
    assert (await post_mcp(world, key, stateless("tools/list"))).status == 200


async def test_a_proposal_is_declined_by_someone_who_could_make_it_and_ends_at_its_time(
    world: World,
) -> None:
    installation = await world.install()
    key = await mint_key(world, installation)
    first = await call_tool(world, key, "propose_schedule", proposal())
    first_id = first["structuredContent"]["proposal"]["id"]
    viewer = await world.browser_for(installation, person="usr_viewer")
    seen = (await viewer.get(f"/installations/{installation.id}/agents")).body.decode()
    assert first_id in seen
    assert 'data-proposal-action="decline"' not in seen  # a viewer is offered neither button
    path = f"/installations/{installation.id}/proposals/{first_id}/decline"
    fields = {"csrf_token": viewer.csrf(), "opened_for": "cnt_en"}
    assert (await viewer.post(path, fields)).status == 403
    editor = await world.open_page(installation)
    fields = {"csrf_token": editor.csrf(), "opened_for": "cnt_en"}
    assert (await editor.post(path, fields)).status == 303
    page = (await editor.get(f"/installations/{installation.id}/agents")).body.decode()
    assert first_id not in page
    again = await call_tool(world, key, "withdraw_proposal", {"proposal_id": first_id})
    assert again["_meta"]["code"] == "proposal_ended"

    second = await call_tool(world, key, "propose_schedule", proposal())
    second_id = second["structuredContent"]["proposal"]["id"]
    assert second_id in (await editor.get(f"/installations/{installation.id}/agents")).body.decode()
    world.clock.now += 2 * DAY_MS  # past its time: it expired
    editor = await world.browser_for(installation)
    shown = await editor.get(f"/installations/{installation.id}/agents")
    assert shown.status == 200
    assert second_id not in shown.body.decode()
    await world.browser_for(installation, content_id=None)  # its manage key renewed
    got = await call_tool(world, key, "withdraw_proposal", {"proposal_id": second_id})
    assert "time has passed" in got["content"][0]["text"]

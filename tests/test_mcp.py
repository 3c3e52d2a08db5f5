"""The agents' MCP endpoint, spoken to by the official MCP client (the `mcp` package, over
streamable HTTP) against the local server, and by hand for each revision's rules: agents
propose, people confirm on their page."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.support.agents import call_tool, mint_key, post_mcp, propose, stateless
from tests.support.runtimes import Runtime
from tests.support.world import World, schedule

DAY = 86_400_000
TOOLS = {
    "list_schedules",
    "get_schedule",
    "agenda",
    "propose_schedule",
    "withdraw_proposal",
    "cancel_schedule",
}


def proposal_ids(page: str) -> list[str]:
    return re.findall(r'data-proposal-id="([^"]+)"', page)


async def confirm_on_page(
    world: World, installation_id: str, proposal_id: str, **fields: str
) -> Any:
    """The person opens the content's page and presses Confirm on the proposal."""
    browser = await world.browser_for(await _installation(world, installation_id))
    page = await browser.get(f"/installations/{installation_id}")
    assert proposal_id in proposal_ids(page.body.decode())
    return browser, await browser.post(
        f"/installations/{installation_id}/proposals/{proposal_id}/confirm",
        {"csrf_token": browser.csrf(), "opened_for": "cnt_en", **browser.shown(), **fields},
    )


async def _installation(world: World, installation_id: str) -> Any:
    return world.core.state.installations[installation_id]


async def mint_on_page(runtime: Runtime, installation_id: str) -> str:
    """A key minted on the manage view's form, as a site admin mints one."""
    manager = await runtime.open_page(installation_id)
    minted = await manager.post_form(
        f"/installations/{installation_id}/agent-keys",
        {"csrf_token": manager.csrf, "opened_for": "manage", "name": "Release bot", "days": "7"},
    )
    assert minted.status_code == 201, minted.text[:2000]
    found = re.search(r'value="(dwk_[^"]+)" size="50" data-agent-key', minted.text)
    assert found
    return html.unescape(found.group(1))


async def confirm_as_editor(runtime: Runtime, installation_id: str, proposal_id: str) -> str:
    """The editor opens the content's page and presses Confirm: the schedule's id."""
    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    assert proposal_id in proposal_ids(editor.page)
    confirmed = await editor.post_form(
        f"/installations/{installation_id}/proposals/{proposal_id}/confirm",
        {"csrf_token": editor.csrf, "opened_for": runtime.content, **editor.shown},
    )
    assert confirmed.status_code == 303, confirmed.text[:2000]
    return confirmed.headers["location"].split("created=")[1]


def proposed_in_two_days(runtime: Runtime) -> tuple[dict[str, str], datetime]:
    """propose_schedule's arguments for 09:00 UTC the day after tomorrow, and that time."""
    day = runtime.now_ms() // DAY * DAY + 2 * DAY + 9 * 3_600_000
    when = datetime.fromtimestamp(day / 1000, UTC)
    asked = {"content_id": runtime.content, "change": "publish", "timezone": "UTC"}
    return {**asked, "local_time": when.strftime("%Y-%m-%dT%H:%M")}, when


async def test_the_official_client_lists_the_tools_and_calls_each(runtime: Runtime) -> None:
    installation_id = await runtime.install()
    key = await mint_on_page(runtime, installation_id)
    asked, when = proposed_in_two_days(runtime)
    async with (
        runtime.served() as base_url,
        httpx.AsyncClient(headers={"authorization": f"Bearer {key}"}, timeout=60) as http,
        streamable_http_client(f"{base_url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        initialized = await session.initialize()
        assert initialized.protocolVersion == "2025-11-25"
        listed = await session.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS
        assert all(tool.inputSchema and tool.outputSchema for tool in listed.tools)

        proposed = await session.call_tool("propose_schedule", {**asked, "note": "For the mail"})
        assert not proposed.isError, proposed.content
        made = proposed.structuredContent["proposal"]  # type: ignore[index]
        assert made["status"] == "pending"
        assert made["due_at"] == when.strftime("%Y-%m-%dT%H:%M:%SZ")

        agenda = await session.call_tool("agenda", {"hours": 72})
        assert [item["id"] for item in agenda.structuredContent["items"]] == [made["id"]]  # type: ignore[index]

        listed_before = await session.call_tool("list_schedules", {})
        assert listed_before.structuredContent == {"schedules": [], "more": False}

        # Nothing is scheduled until a person confirms it on their page.
        schedule_id = await confirm_as_editor(runtime, installation_id, made["id"])

        got = await session.call_tool("get_schedule", {"schedule_id": schedule_id})
        assert not got.isError, got.content
        history = got.structuredContent["history"]  # type: ignore[index]
        assert "Release bot" in history[0]
        assert "Ada Lovelace" in history[1]
        mine = await session.call_tool("list_schedules", {"content_id": runtime.content})
        assert schedule_id in str(mine.structuredContent)

        cancelled = await session.call_tool("cancel_schedule", {"schedule_id": schedule_id})
        assert cancelled.structuredContent["schedule"]["status"] == "cancelled"  # type: ignore[index]

        again = await session.call_tool("propose_schedule", asked)
        withdrawn = await session.call_tool(
            "withdraw_proposal",
            {"proposal_id": again.structuredContent["proposal"]["id"]},  # type: ignore[index]
        )
        assert withdrawn.structuredContent["proposal"]["status"] == "withdrawn"  # type: ignore[index]


async def test_a_confirmed_proposal_is_sent_pinned_and_requested_by_the_person(
    world: World,
) -> None:
    installation = await world.install()
    key = await mint_key(world, installation)
    proposal_id = await propose(world, key)
    browser, confirmed = await confirm_on_page(world, installation.id, proposal_id)
    schedule_id = confirmed.header("location").split("created=")[1]
    row = (
        await world.db.prepare("SELECT version_id, requested_by FROM schedules WHERE id = ?")
        .bind(schedule_id)
        .first()
    )
    assert row == {"version_id": browser.shown()["version_id"], "requested_by": "usr_editor"}
    page = (await browser.get(f"/installations/{installation.id}")).body.decode()
    assert proposal_id not in proposal_ids(page)  # confirmed: no longer proposed
    # Its card names the person who confirmed it and the agent that proposed it.
    assert (
        "Ada Lovelace, confirming the proposal of Release bot (an agent key of Ada Lovelace)"
        in page
    )


async def test_a_proposal_confirmed_after_the_content_changed_is_refused_as_the_form_is(
    world: World,
) -> None:
    installation = await world.install()
    key = await mint_key(world, installation)
    proposal_id = await propose(world, key)
    _, refused = await confirm_on_page(world, installation.id, proposal_id, version_id="ver_other")
    assert refused.status == 409
    assert b"content_changed" in refused.body
    count = await world.db.prepare("SELECT count(*) AS n FROM schedules").first()
    assert count == {"n": 0}


@pytest.mark.parametrize(
    ("local_time", "zone", "code"),
    [
        ("2026-03-29T02:30", "Europe/Paris", "nonexistent_local_time"),
        ("2026-10-25T02:30", "Europe/Paris", "ambiguous_local_time"),
        ("2026-07-02T08:30", "Europe/Pariss", "unknown_timezone"),
        ("2026-06-30T08:30", "Europe/Paris", "past_time"),
    ],
)
async def test_a_time_the_form_refuses_is_a_tool_error_with_its_code(
    world: World, local_time: str, zone: str, code: str
) -> None:
    installation = await world.install()
    key = await mint_key(world, installation)
    result = await call_tool(
        world,
        key,
        "propose_schedule",
        {"content_id": "cnt_en", "change": "publish", "local_time": local_time, "timezone": zone},
    )
    assert result["isError"] is True
    assert result["_meta"]["code"] == code
    assert f"(code: {code})" in result["content"][0]["text"]


async def test_server_discover_and_the_stateless_headers(world: World) -> None:
    installation = await world.install()
    key = await mint_key(world, installation)
    discovered = await post_mcp(world, key, stateless("server/discover"))
    result = json.loads(discovered.body)["result"]
    assert "2026-07-28" in result["supportedVersions"]
    assert result["resultType"] == "complete"
    # The headers must say what the body says.
    message = stateless("tools/call", {"name": "agenda", "arguments": {}})
    wrong_name = await post_mcp(world, key, message, headers={"mcp-name": "list_schedules"})
    assert wrong_name.status == 400
    wrong_method = await post_mcp(
        world, key, stateless("tools/list"), headers={"mcp-method": "tools/call"}
    )
    assert wrong_method.status == 400
    wrong_version = await post_mcp(
        world, key, stateless("tools/list"), headers={"mcp-protocol-version": "2025-11-25"}
    )
    assert wrong_version.status == 400
    unknown = stateless("tools/list")
    unknown["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2030-01-01"
    answered = await post_mcp(world, key, unknown, headers={"mcp-protocol-version": "2030-01-01"})
    assert answered.status == 400
    assert json.loads(answered.body)["error"]["data"]["supportedVersions"]
    for part in ("clientInfo", "clientCapabilities"):
        lacking = stateless("tools/list")
        del lacking["params"]["_meta"][f"io.modelcontextprotocol/{part}"]
        refused = await post_mcp(world, key, lacking)
        assert refused.status == 400
        assert json.loads(refused.body)["error"]["code"] == -32602


async def test_list_schedules_filters(world: World) -> None:
    installation = await world.install()
    made = await schedule(world, installation, in_minutes=90)
    key = await mint_key(world, installation)

    async def ids(**arguments: Any) -> list[str]:
        listed = await call_tool(world, key, "list_schedules", arguments)
        assert listed["isError"] is False, listed
        return [s["id"] for s in listed["structuredContent"]["schedules"]]

    assert await ids() == [made["id"]]
    assert await ids(status="pending", content_id="cnt_en") == [made["id"]]
    assert await ids(status="completed") == []
    assert await ids(content_id="cnt_pub") == []
    assert await ids(needs_attention=True) == []
    assert await ids(due_from="2026-07-01T11:00:00Z", due_to="2026-07-01T12:00:00Z") == [made["id"]]
    assert await ids(due_to="2026-07-01T11:00:00+00:00") == []
    refused = await call_tool(world, key, "list_schedules", {"status": "lost", "extra": 1})
    assert refused["isError"] is True
    assert refused["_meta"]["code"] == "invalid_arguments"
    assert "status" in refused["content"][0]["text"]


async def test_the_2025_11_25_handshake_by_hand(world: World) -> None:
    installation = await world.install()
    key = await mint_key(world, installation)
    legacy = {"mcp-protocol-version": "", "mcp-method": ""}  # no stateless headers
    hello = {
        "jsonrpc": "2.0",
        "id": "a",
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    answered = await post_mcp(world, key, hello, headers=legacy)
    assert json.loads(answered.body)["result"]["protocolVersion"] == "2025-11-25"
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    accepted = await post_mcp(
        world, key, initialized, headers={"mcp-protocol-version": "2025-11-25"}
    )
    assert accepted.status == 202
    assert accepted.body == b""
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    listed = await post_mcp(world, key, listing, headers={"mcp-protocol-version": "2025-11-25"})
    assert len(json.loads(listed.body)["result"]["tools"]) == len(TOOLS)
    wrong = await post_mcp(world, key, listing, headers={"mcp-protocol-version": "1999-01-01"})
    assert wrong.status == 400
    assert json.loads(wrong.body)["error"]["data"]["code"] == "unsupported_protocol_version"
    unknown = {"jsonrpc": "2.0", "id": 3, "method": "resources/list"}
    missing = await post_mcp(world, key, unknown, headers={"mcp-protocol-version": "2025-11-25"})
    assert json.loads(missing.body)["error"]["code"] == -32601


async def test_a_proposal_that_would_replace_a_waiting_schedule_says_so_before_confirm(
    world: World,
) -> None:
    installation = await world.install()
    waiting = await schedule(world, installation, in_minutes=90)
    key = await mint_key(world, installation)
    proposal_id = await propose(world, key)
    browser = await world.browser_for(installation)
    page = (await browser.get(f"/installations/{installation.id}")).body.decode()
    item = page.split(f'data-proposal-id="{proposal_id}"', 1)[1].split("</li>", 1)[0]
    assert 'data-warning="replace"' in item
    _, confirmed = await confirm_on_page(world, installation.id, proposal_id)
    assert confirmed.status == 303
    old = (
        await world.db.prepare("SELECT status FROM schedules WHERE id = ?")
        .bind(waiting["id"])
        .first()
    )
    assert old == {"status": "superseded"}


async def test_a_proposal_that_would_collide_with_the_other_kind_says_so_before_confirm(
    world: World,
) -> None:
    installation = await world.install()
    world.core.state.edit("cnt_pub")  # a draft newer than the published version: both offered
    unpublish = await schedule(
        world, installation, "cnt_pub", in_minutes=90, transition="unpublish:draft"
    )
    key = await mint_key(world, installation)
    proposal_id = await propose(world, key, "cnt_pub")
    browser = await world.browser_for(installation, content_id="cnt_pub")
    page = (await browser.get(f"/installations/{installation.id}")).body.decode()
    item = page.split(f'data-proposal-id="{proposal_id}"', 1)[1].split("</li>", 1)[0]
    assert 'data-warning="collision"' in item
    assert f"unpublish of version {unpublish['version_id']}" in item
    assert "Whichever of the two runs second will be refused" in item


async def test_an_agent_cancelling_a_schedule_being_sent_is_told_as_the_page_tells_it(
    world: World,
) -> None:
    installation = await world.install()
    key = await mint_key(world, installation)
    proposal_id = await propose(world, key)
    _, confirmed = await confirm_on_page(world, installation.id, proposal_id)
    schedule_id = confirmed.header("location").split("created=")[1]
    running = (
        "UPDATE schedules SET status = 'running', next_attempt_at = NULL,"
        " lease_token = 'lease_1', lease_until = due_at WHERE id = ?"
    )
    await world.db.prepare(running).bind(schedule_id).run()
    refused = await call_tool(world, key, "cancel_schedule", {"schedule_id": schedule_id})
    assert refused["isError"] is True
    assert refused["_meta"]["code"] == "execution_in_progress"
    row = (
        await world.db.prepare("SELECT status FROM schedules WHERE id = ?")
        .bind(schedule_id)
        .first()
    )
    assert row == {"status": "running"}


async def test_a_proposal_reads_as_its_change_and_a_key_is_listed_only_where_it_reaches(
    world: World,
) -> None:
    """Issue 45 item 15: a proposal read "Publish (to published)", and a key minted on one
    content was listed on another's page as a key "for this content"."""
    installation = await world.install()
    key = await mint_key(world, installation, content_id="cnt_en")
    proposal_id = await propose(world, key)
    on_en = await world.browser_for(installation, content_id="cnt_en")
    page = (await on_en.get(f"/installations/{installation.id}")).body.decode()
    item = page.split(f'data-proposal-id="{proposal_id}"', 1)[1].split("</li>", 1)[0]
    assert "</strong> proposes: Publish on " in item
    assert "(to published)" not in page
    assert page.count("data-agent-key-id=") == 1
    elsewhere = await world.browser_for(installation, content_id="cnt_page")
    other = (await elsewhere.get(f"/installations/{installation.id}")).body.decode()
    assert "data-agent-key-id=" not in other
    manage = await world.browser_for(installation, content_id=None)
    listed = (await manage.get(f"/installations/{installation.id}")).body.decode()
    assert listed.count("data-agent-key-id=") == 1

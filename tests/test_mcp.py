"""The agents' MCP endpoint, spoken to by the official MCP client (the `mcp` package, over
streamable HTTP) against the local server, and by hand for each revision's rules: agents
propose, people confirm on their page."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from tests.support.agents import (
    call_tool,
    confirm_on_page,
    mint_key,
    official_client,
    post_mcp,
    proposal_ids,
    propose,
    stateless,
)
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
    "get_release",
    "propose_change",
}


async def mint_on_page(runtime: Runtime, installation_id: str) -> str:
    """A key minted on the agents page's form, as a site admin mints one."""
    manager = await runtime.open_page(installation_id)
    await manager.get(f"/installations/{installation_id}/agents")
    minted = await manager.post_form(
        f"/installations/{installation_id}/agent-keys",
        {"csrf_token": manager.csrf, "opened_for": "manage", "name": "Release bot", "days": "7"},
    )
    assert minted.status_code == 201, minted.text[:2000]
    found = re.search(r'value="(dwk_[^"]+)" size="50" data-agent-key', minted.text)
    assert found
    return html.unescape(found.group(1))


async def confirm_as_editor(runtime: Runtime, installation_id: str, proposal_id: str) -> str:
    """The editor opens the content's agents page and presses Confirm: the schedule's id."""
    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    await editor.get(f"/installations/{installation_id}/agents")
    assert proposal_id in proposal_ids(editor.page)
    confirmed = await editor.post_form(
        f"/installations/{installation_id}/proposals/{proposal_id}/confirm",
        {"csrf_token": editor.csrf, "opened_for": runtime.content, **editor.shown},
    )
    assert confirmed.status_code == 303, confirmed.text[:2000]
    return confirmed.headers["location"].split("created=")[1].split("&")[0]


def proposed_in_two_days(runtime: Runtime) -> tuple[dict[str, str], datetime]:
    """propose_schedule's arguments for 09:00 UTC the day after tomorrow, and that time."""
    day = runtime.now_ms() // DAY * DAY + 2 * DAY + 9 * 3_600_000
    when = datetime.fromtimestamp(day / 1000, UTC)
    asked = {"content_id": runtime.content, "change": "publish", "timezone": "UTC"}
    return {**asked, "local_time": when.strftime("%Y-%m-%dT%H:%M")}, when


@pytest.mark.parametrize(("mode", "revision"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_the_official_client_lists_the_tools_and_calls_each(
    runtime: Runtime, mode: str, revision: str
) -> None:
    """The official client as an agent runs it: in its default mode (it discovers the server
    and speaks 2026-07-28) and in its legacy mode (the 2025-11-25 handshake). It checks every
    answer against its revision's schema and each tool's output against the tool's schema."""
    installation_id = await runtime.install()
    key = await mint_on_page(runtime, installation_id)
    asked, when = proposed_in_two_days(runtime)
    async with (
        runtime.served() as base_url,
        httpx2.AsyncClient(headers={"authorization": f"Bearer {key}"}, timeout=60) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=mode) as client,
    ):
        assert client.protocol_version == revision
        listed = await client.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS
        assert all(tool.input_schema and tool.output_schema for tool in listed.tools)

        proposed = await client.call_tool("propose_schedule", {**asked, "note": "For the mail"})
        assert not proposed.is_error, proposed.content
        made = structured(proposed)["proposal"]
        assert made["status"] == "pending"
        assert made["due_at"] == when.strftime("%Y-%m-%dT%H:%M:%SZ")

        agenda = await client.call_tool("agenda", {"hours": 72})
        assert [item["id"] for item in structured(agenda)["items"]] == [made["id"]]

        listed_before = await client.call_tool("list_schedules", {})
        assert structured(listed_before) == {"schedules": [], "more": False}

        # Nothing is scheduled until a person confirms it on their page.
        schedule_id = await confirm_as_editor(runtime, installation_id, made["id"])

        got = await client.call_tool("get_schedule", {"schedule_id": schedule_id})
        assert not got.is_error, got.content
        history = structured(got)["history"]
        assert "Release bot" in history[0]
        assert "Ada Lovelace" in history[1]
        mine = await client.call_tool("list_schedules", {"content_id": runtime.content})
        assert schedule_id in str(structured(mine))

        cancelled = await client.call_tool("cancel_schedule", {"schedule_id": schedule_id})
        assert structured(cancelled)["schedule"]["status"] == "cancelled"

        again = await client.call_tool("propose_schedule", asked)
        withdrawn = await client.call_tool(
            "withdraw_proposal", {"proposal_id": structured(again)["proposal"]["id"]}
        )
        assert structured(withdrawn)["proposal"]["status"] == "withdrawn"

        # A tool error is an answer of its revision too, in the page's words.
        refused = await client.call_tool("get_schedule", {"schedule_id": "sch_none"})
        assert refused.is_error
        assert "(code: schedule_not_found)" in str(refused.content)


def structured(result: CallToolResult) -> Any:
    assert isinstance(result.structured_content, dict), result.content
    return result.structured_content


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
    # (The other headers, the revisions and the capabilities: test_mcp_revisions.py.)
    # The client's info is asked for, not required.
    anonymous = stateless("tools/list")
    del anonymous["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]
    assert (await post_mcp(world, key, anonymous)).status == 200


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


async def test_a_proposal_that_would_replace_a_waiting_schedule_says_so_before_confirm(
    world: World,
) -> None:
    installation = await world.install()
    waiting = await schedule(world, installation, in_minutes=90)
    key = await mint_key(world, installation)
    proposal_id = await propose(world, key)
    browser = await world.browser_for(installation)
    page = (await browser.get(f"/installations/{installation.id}/agents")).body.decode()
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
    page = (await browser.get(f"/installations/{installation.id}/agents")).body.decode()
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


async def test_confirm_is_offered_the_first_time_an_editor_opens_the_content(
    runtime: Runtime,
) -> None:
    """The launch's first page judges the proposals by what its content read just said, as a
    reload does: the editor is offered Confirm at once."""
    installation_id = await runtime.install()
    key = await mint_on_page(runtime, installation_id)
    async with official_client(runtime, key) as client:
        proposed = await client.call_tool("propose_schedule", proposed_in_two_days(runtime)[0])
    proposal_id = structured(proposed)["proposal"]["id"]
    for _ in range(2):  # the agents page first after a launch, and a reload
        editor = await runtime.open_page(installation_id, content_id=runtime.content)
        agents = (await editor.get(f"/installations/{installation_id}/agents")).text
        item = agents.split(f'data-proposal-id="{proposal_id}"', 1)[1].split("</li>", 1)[0]
        assert 'data-proposal-action="confirm"' in item, item
        assert "does not let you make this change" not in item
        reloaded = await editor.get(f"/installations/{installation_id}/agents")
        assert 'data-proposal-action="confirm"' in reloaded.text


def mcp_error_codes(raised: BaseException) -> list[int]:
    """The JSON-RPC error codes the official client raised (within its task groups)."""
    if isinstance(raised, BaseExceptionGroup):
        return [code for inner in raised.exceptions for code in mcp_error_codes(inner)]
    return [raised.code] if isinstance(raised, MCPError) else []


async def calls_with_the_official_client(runtime: Runtime, key: str) -> list[str]:
    """The tools the official client lists with `key`."""
    async with official_client(runtime, key) as client:
        return [tool.name for tool in (await client.list_tools()).tools]


async def test_agent_keys_come_back_with_the_sessions_once_a_launch_works_again(
    runtime: Runtime,
) -> None:
    """Dee Wan refused the installation's token (`plugin_unauthorized`) after its last launch:
    its sessions and its agent keys are refused alike. A launch exchange that then succeeds
    with the same token proves Dee Wan accepts it again: both come back."""
    installation_id = await runtime.install()
    key = await mint_on_page(runtime, installation_id)
    manager = await runtime.open_page(installation_id)
    assert set(await calls_with_the_official_client(runtime, key)) == TOOLS
    # Its token set, then accepted by a launch, then refused to a call a moment ago.
    now = runtime.now_ms()
    await runtime.execute(
        "UPDATE installations SET token_rotated_at = ?, token_accepted_at = ?,"
        " unauthorized_at = ? WHERE id = ?",
        *(now - 3, now - 2, now - 1, installation_id),
    )
    assert (await manager.get(f"/installations/{installation_id}")).status_code == 401
    with pytest.raises(BaseExceptionGroup) as refused:
        await calls_with_the_official_client(runtime, key)
    assert mcp_error_codes(refused.value) == [-32001]  # 401: no live key
    await runtime.open_page(installation_id)  # a launch: its exchange succeeds
    assert (await manager.get(f"/installations/{installation_id}")).status_code == 200
    assert set(await calls_with_the_official_client(runtime, key)) == TOOLS


def test_the_agents_guide_gives_a_pinned_inspector_command_for_a_url_server() -> None:
    """A bare `npx @modelcontextprotocol/inspector` may run an old release from npm's cache
    that cannot reach a URL server: the guide pins a 2.x release (Streamable HTTP, both
    revisions) and gives its CLI flags for this endpoint, as checked against the registry
    and `serve`."""
    guide = (Path(__file__).parent.parent / "docs/admins/agents.md").read_text("utf-8")
    blocks = re.findall(r"```sh\n(npx[^`]*@modelcontextprotocol/inspector[^`]*)```", guide)
    assert len(blocks) == 1, blocks
    command = " ".join(blocks[0].replace("\\\n", " ").split())
    assert re.search(r"npx -y @modelcontextprotocol/inspector@2\.\d+\.\d+ --cli ", command)
    for flag in ("--transport http", "--protocol-era auto", '--header "Authorization: Bearer'):
        assert flag in command, command
    assert "https://scheduling.example.com/mcp" in command


async def test_a_proposal_reads_as_its_change_and_a_key_is_listed_only_where_it_reaches(
    world: World,
) -> None:
    """Issue 45 item 15: a proposal read "Publish (to published)", and a key minted on one
    content was listed on another's page as a key "for this content"."""
    installation = await world.install()
    key = await mint_key(world, installation, content_id="cnt_en")
    proposal_id = await propose(world, key)
    on_en = await world.browser_for(installation, content_id="cnt_en")
    page = (await on_en.get(f"/installations/{installation.id}/agents")).body.decode()
    item = page.split(f'data-proposal-id="{proposal_id}"', 1)[1].split("</li>", 1)[0]
    assert "</strong> proposes: Publish on " in item
    assert "(to published)" not in page
    assert page.count("data-agent-key-id=") == 1
    elsewhere = await world.browser_for(installation, content_id="cnt_page")
    other = (await elsewhere.get(f"/installations/{installation.id}/agents")).body.decode()
    assert "data-agent-key-id=" not in other
    manage = await world.browser_for(installation, content_id=None)
    listed = (await manage.get(f"/installations/{installation.id}/agents")).body.decode()
    assert listed.count("data-agent-key-id=") == 1

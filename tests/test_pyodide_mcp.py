"""The agents' endpoint through the real Worker entry under Pyodide: a key minted on the
manage view's form, then the official MCP client (streamable HTTP) lists the tools and calls
each one, and the proposal it made is confirmed on the content's page."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.pyodide_harness.harness import FakeCoreProcess, Harness
from tests.support.worker_browser import Browser, install, launch, remove_installation

pytestmark = pytest.mark.pyodide

TOOLS = {
    "list_schedules",
    "get_schedule",
    "agenda",
    "propose_schedule",
    "withdraw_proposal",
    "cancel_schedule",
}


@pytest.fixture
def core(harness: Harness) -> Iterator[FakeCoreProcess]:
    process = FakeCoreProcess(harness.origin, Path(harness.workdir) / "fake_core_mcp.log")
    process.control("POST", "seed", {"demo": True})
    yield process
    process.close()


def mint(browser: Browser, installation_id: str, csrf: str) -> str:
    minted = browser.post_form(
        f"/installations/{installation_id}/agent-keys",
        {"csrf_token": csrf, "opened_for": "manage", "name": "Release bot", "days": "7"},
    )
    assert minted.status_code == 201, minted.text[:2000]
    found = re.search(r'value="(dwk_[^"]+)" size="50" data-agent-key', minted.text)
    assert found
    return html.unescape(found.group(1))


async def test_the_official_client_calls_each_tool_through_the_worker_entry(
    harness: Harness, core: FakeCoreProcess
) -> None:
    dev = {"ENVIRONMENT": "development", "DEE_WAN_DEV_ORIGINS": core.base_url}
    with harness.vars(**dev), httpx.Client(base_url=harness.origin, timeout=60) as client:
        installation_id = install(core, client)["id"]
        try:
            manager = Browser(client, harness.origin)
            key = mint(manager, installation_id, launch(core, manager, installation_id))
            day = (datetime.now(UTC) + timedelta(days=2)).strftime("%Y-%m-%dT09:00")
            proposal = {
                "content_id": "cnt_spring",
                "change": "publish",
                "local_time": day,
                "timezone": "UTC",
                "note": "For the launch mail",
            }
            async with (
                httpx.AsyncClient(headers={"authorization": f"Bearer {key}"}, timeout=60) as http,
                streamable_http_client(f"{harness.origin}/mcp", http_client=http) as (r, w, _),
                ClientSession(r, w) as session,
            ):
                await session.initialize()
                listed = await session.list_tools()
                assert {tool.name for tool in listed.tools} == TOOLS
                made = await session.call_tool("propose_schedule", proposal)
                assert not made.isError, made.content
                proposal_id = made.structuredContent["proposal"]["id"]  # type: ignore[index]
                agenda = await session.call_tool("agenda", {"hours": 72})
                assert proposal_id in str(agenda.structuredContent)

                editor = Browser(client, harness.origin)
                csrf = launch(core, editor, installation_id, content_id="cnt_spring")
                confirmed = editor.post_form(
                    f"/installations/{installation_id}/proposals/{proposal_id}/confirm",
                    {"csrf_token": csrf, "opened_for": "cnt_spring", **editor.shown},
                )
                assert confirmed.status_code == 303, confirmed.text[:2000]
                schedule_id = confirmed.headers["location"].split("created=", 1)[1]

                got = await session.call_tool("get_schedule", {"schedule_id": schedule_id})
                assert not got.isError, got.content
                listed_now = await session.call_tool("list_schedules", {"content_id": "cnt_spring"})
                assert schedule_id in str(listed_now.structuredContent)
                cancelled = await session.call_tool("cancel_schedule", {"schedule_id": schedule_id})
                assert cancelled.structuredContent["schedule"]["status"] == "cancelled"  # type: ignore[index]
                again = await session.call_tool("propose_schedule", proposal)
                again_id = again.structuredContent["proposal"]["id"]  # type: ignore[index]
                withdrawn = await session.call_tool("withdraw_proposal", {"proposal_id": again_id})
                assert withdrawn.structuredContent["proposal"]["status"] == "withdrawn"  # type: ignore[index]
        finally:
            remove_installation(harness, installation_id)

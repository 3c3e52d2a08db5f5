"""Agent keys minted as a person mints them (their page's form), and MCP requests sent as a
client would send them to the App."""

from __future__ import annotations

import contextlib
import html
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from fake_core.state import Installation
from scheduling.http.responses import Response
from tests.support.app import call
from tests.support.runtimes import Runtime
from tests.support.world import Browser, World

STATELESS = "2026-07-28"
# 2026-07-01T10:00Z (the tests' clock) is noon in Paris: tomorrow morning is ahead.
TOMORROW = {"local_time": "2026-07-02T08:30", "timezone": "Europe/Paris"}


async def mint_key(
    world: World,
    installation: Installation,
    *,
    person: str = "usr_editor",
    content_id: str | None = None,
    name: str = "Release bot",
    days: str = "7",
) -> str:
    """A key minted on the person's agents page (of a manage launch, or a content launch)."""
    browser = await world.browser_for(installation, person=person, content_id=content_id)
    page = await browser.get(f"/installations/{installation.id}/agents")
    assert page.status == 200, page.body[:300]
    return await mint_with(browser, installation.id, name=name, days=days)


async def mint_with(browser: Browser, installation_id: str, *, name: str, days: str = "7") -> str:
    minted = await browser.post(
        f"/installations/{installation_id}/agent-keys",
        {
            "csrf_token": browser.csrf(),
            "opened_for": _opened_for(browser),
            "name": name,
            "days": days,
        },
    )
    assert minted.status == 201, minted.body[:500]
    found = re.search(r'value="(dwk_[^"]+)" size="50" data-agent-key', minted.body.decode())
    assert found, "the key is shown on its page"
    return html.unescape(found.group(1))


def _opened_for(browser: Browser) -> str:
    found = re.search(r'name="opened_for" value="([^"]*)"', browser.page())
    assert found
    return html.unescape(found.group(1))


def stateless(method: str, params: dict[str, Any] | None = None, ident: int = 1) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientInfo": {"name": "test-agent", "version": "1.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {
        "jsonrpc": "2.0",
        "id": ident,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }


async def post_mcp(
    world: World,
    key: str | None,
    message: dict[str, Any] | bytes,
    *,
    headers: dict[str, str] | None = None,
) -> Response:
    """One POST /mcp, with the stateless revision's headers taken from the message."""
    sent = dict(headers or {})
    if key is not None:
        sent["authorization"] = f"Bearer {key}"
    if isinstance(message, dict):
        sent.setdefault("mcp-protocol-version", STATELESS)
        sent.setdefault("mcp-method", message.get("method", ""))
        name = message.get("params", {}).get("name")
        if name:
            sent.setdefault("mcp-name", name)
        body = json.dumps(message).encode()
    else:
        body = message
    sent.setdefault("content-type", "application/json")
    sent.setdefault("accept", "application/json, text/event-stream")
    return await call(world.app, "POST", "/mcp", headers=sent, body=body)


async def call_tool(world: World, key: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tools/call in the stateless revision; its JSON-RPC result."""
    response = await post_mcp(
        world, key, stateless("tools/call", {"name": name, "arguments": arguments})
    )
    assert response.status == 200, response.body[:500]
    answer = json.loads(response.body)
    assert "result" in answer, answer
    return dict(answer["result"])


def proposal(content_id: str = "cnt_en", change: str = "publish", note: str = "") -> dict[str, str]:
    """propose_schedule's arguments: a change of `content_id` tomorrow morning in Paris."""
    return {"content_id": content_id, "change": change, "note": note, **TOMORROW}


async def propose(world: World, key: str, content_id: str = "cnt_en") -> str:
    """A publish of `content_id` proposed with `key`; the proposal's id."""
    made = await call_tool(world, key, "propose_schedule", proposal(content_id))
    return str(made["structuredContent"]["proposal"]["id"])


def proposal_ids(page: str) -> list[str]:
    return re.findall(r'data-proposal-id="([^"]+)"', page)


async def confirm_on_page(
    world: World, installation_id: str, proposal_id: str, **fields: str
) -> Any:
    """The editor opens the content's agents page and presses Confirm on the proposal."""
    browser = await world.browser_for(world.core.state.installations[installation_id])
    page = await browser.get(f"/installations/{installation_id}/agents")
    assert proposal_id in proposal_ids(page.body.decode())
    return browser, await browser.post(
        f"/installations/{installation_id}/proposals/{proposal_id}/confirm",
        {"csrf_token": browser.csrf(), "opened_for": "cnt_en", **browser.shown(), **fields},
    )


@contextlib.asynccontextmanager
async def official_client(runtime: Runtime, key: str) -> AsyncIterator[Client]:
    """The official client in its default mode, with `key`, on the plugin's real socket."""
    async with (
        runtime.served() as base_url,
        httpx2.AsyncClient(headers={"authorization": f"Bearer {key}"}, timeout=60) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        yield client

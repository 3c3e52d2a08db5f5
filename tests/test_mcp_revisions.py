"""Every answer `POST /mcp` gives, at each MCP revision it announces, is what that revision's
schema defines, as the official SDK's own types read it (`mcp_types`): each method's result,
each tool's answer and each tool error, and each JSON-RPC error. A result must also carry
nothing the revision does not define (the SDK's shaping of it for that revision leaves it
unchanged)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_types import JSONRPCError, UnsupportedProtocolVersionErrorData
from mcp_types.methods import serialize_server_result, validate_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from scheduling.mcp.tools import TOOLS
from tests.support.agents import confirm_on_page, mint_key, post_mcp, proposal, propose
from tests.support.world import World, schedule

CLIENT = {"name": "test-agent", "version": "1.0"}


def request(version: str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A request as a client of `version` writes it (the envelope in `_meta` from 2026-07-28)."""
    params = dict(params or {})
    if version in MODERN_PROTOCOL_VERSIONS:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": CLIENT,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}


async def ask(
    world: World, key: str | None, version: str, message: dict[str, Any], **headers: str
) -> tuple[int, dict[str, Any]]:
    """One POST at `version` (its `MCP-Protocol-Version`; the 2026-07-28 headers from the
    body); the status and the JSON answer."""
    response = await post_mcp(
        world, key, message, headers={"mcp-protocol-version": version, **headers}
    )
    return response.status, json.loads(response.body)


def of_revision(method: str, version: str, answer: dict[str, Any]) -> dict[str, Any]:
    """The result, checked against `version`'s schema for `method`."""
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    validate_server_result(method, version, result)
    assert serialize_server_result(method, version, result) == result, "fields of no revision"
    return result


# Each JSON-RPC code's words (`error.data.code`), unless the refusal has its own.
WORDS = {
    -32700: "invalid_json",
    -32600: "invalid_request",
    -32601: "unknown_method",
    -32602: "invalid_params",
    -32001: "unauthorized",
    -32020: "header_mismatch",
    -32022: "unsupported_protocol_version",
}


def an_error(answer: dict[str, Any], code: int, words: str | None = None) -> dict[str, Any]:
    JSONRPCError.model_validate(answer)
    assert answer["error"]["code"] == code, answer
    assert answer["error"]["data"]["code"] == (words or WORDS[code]), answer
    return dict(answer["error"])


async def announced(world: World, key: str) -> list[str]:
    """The revisions the endpoint announces: its `server/discover` answer's."""
    _, answer = await ask(world, key, "2026-07-28", request("2026-07-28", "server/discover"))
    versions: list[str] = of_revision("server/discover", "2026-07-28", answer)["supportedVersions"]
    return versions


async def tool_calls(world: World) -> tuple[str, list[tuple[str, dict[str, Any], str | None]]]:
    """A fresh installation's key and a call of each tool that it does, and of each way it
    refuses (with the code it refuses with)."""
    installation = await world.install()
    made = await schedule(world, installation, in_minutes=90)
    key = await mint_key(world, installation)
    _, confirmed = await confirm_on_page(world, installation.id, await propose(world, key))
    from_proposal = confirmed.header("location").split("created=")[1]
    to_withdraw = await propose(world, key)
    gap = {**proposal(), "local_time": "2027-03-28T02:30"}
    release_id = f"rel_{installation.id[-8:]}"
    await (
        world.db.prepare(
            "INSERT INTO releases (id, installation_id, name, due_at, timezone, local_time, status,"
            " created_by, created_by_name, created_at, updated_at)"
            " VALUES (?, ?, 'Spring', ?, 'UTC', '2030-01-01T09:00', 'waiting', 'usr_1', 'Ada',"
            " 0, 0)"
        )
        .bind(release_id, installation.id, made["due_at"])
        .run()
    )
    calls: list[tuple[str, dict[str, Any], str | None]] = [
        ("list_schedules", {}, None),
        ("list_schedules", {"status": "lost"}, "invalid_arguments"),
        ("list_schedules", {"due_from": "0001-01-01T00:00:00+14:00"}, "invalid_arguments"),
        ("get_schedule", {"schedule_id": made["id"]}, None),
        ("get_schedule", {"schedule_id": "sch_none"}, "schedule_not_found"),
        ("agenda", {"hours": 72, "timezone": "Europe/Paris"}, None),
        ("agenda", {"timezone": "Europe/Pariss"}, "unknown_timezone"),
        ("agenda", {"start": "9999-12-31T00:00:00Z"}, "invalid_arguments"),
        ("agenda", {"start": "0001-01-01T00:00:00+14:00"}, "invalid_arguments"),
        ("propose_schedule", proposal(), None),
        ("propose_schedule", gap, "nonexistent_local_time"),
        ("withdraw_proposal", {"proposal_id": to_withdraw}, None),
        ("withdraw_proposal", {"proposal_id": "prp_none"}, "proposal_not_found"),
        ("get_release", {"release_id": release_id}, None),
        ("get_release", {"release_id": "rel_none"}, "release_not_found"),
        ("propose_change", {"schedule_id": from_proposal, "send_now": True}, None),
        ("propose_change", {"schedule_id": from_proposal}, "invalid_change"),
        ("cancel_schedule", {"schedule_id": made["id"]}, "cancel_not_allowed"),
        ("cancel_schedule", {"schedule_id": from_proposal}, None),
    ]
    assert {name for name, _, _ in calls} == set(TOOLS)
    return key, calls


async def test_every_result_and_tool_error_is_of_its_revision(world: World) -> None:
    first = await mint_key(world, await world.install())
    versions = await announced(world, first)
    assert versions == ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
    for version in versions:
        key, calls = await tool_calls(world)
        methods = ["tools/list"]
        if version in MODERN_PROTOCOL_VERSIONS:
            methods.append("server/discover")
        else:
            hello = {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT}
            _, answer = await ask(world, key, version, request(version, "initialize", hello))
            assert of_revision("initialize", version, answer)["protocolVersion"] == version
            methods.append("ping")
        for method in methods:
            status, answer = await ask(world, key, version, request(version, method))
            assert status == 200
            of_revision(method, version, answer)
        for name, arguments, code in calls:
            asked = request(version, "tools/call", {"name": name, "arguments": arguments})
            status, answer = await ask(world, key, version, asked)
            result = of_revision("tools/call", version, answer)
            assert (status, result["isError"]) == (200, code is not None), (name, result)
            if code is not None:
                assert result["_meta"]["code"] == code, (version, name, result)
                assert f"(code: {code})" in result["content"][0]["text"]
            else:
                assert result["structuredContent"], (version, name, result)


async def test_every_refusal_is_a_json_rpc_error_of_its_revision(world: World) -> None:
    installation = await world.install()
    key = await mint_key(world, installation)
    for version in await announced(world, key):
        modern = version in MODERN_PROTOCOL_VERSIONS
        status, answer = await ask(world, key, version, request(version, "resources/list"))
        assert status == 404
        an_error(answer, -32601)
        other = "initialize" if modern else "server/discover"  # not of this revision
        status, answer = await ask(world, key, version, request(version, other))
        assert status == 404
        an_error(answer, -32601)
        unknown_tool = request(version, "tools/call", {"name": "publish_now", "arguments": {}})
        status, answer = await ask(world, key, version, unknown_tool)
        assert status == 400
        an_error(answer, -32602)
        # A name that is no string: the handshake's revisions are told it is no tool's name;
        # 2026-07-28's headers can never say it, so they differ from the body.
        odd_name = request(version, "tools/call", {"name": {"a": 1}, "arguments": {}})
        status, answer = await ask(world, key, version, odd_name, **{"mcp-name": "agenda"})
        assert status == 400
        an_error(answer, -32020 if modern else -32602)
        for body, code in ((b"{", -32700), (b"[]", -32600), (b'{"jsonrpc": "1.0"}', -32600)):
            response = await post_mcp(world, key, body, headers={"mcp-protocol-version": version})
            assert response.status == 400
            an_error(json.loads(response.body), code)
        status, answer = await ask(world, None, version, request(version, "tools/list"))
        assert status == 401
        an_error(answer, -32001)
        status, answer = await ask(
            world, key, version, request(version, "tools/list"), origin="https://elsewhere.example"
        )
        assert status == 403
        an_error(answer, -32600, "cross_site_request")

    # 2026-07-28's own: a header that differs from the body, a revision this server does not
    # speak (what it speaks in `data`), the client's capabilities missing.
    for header, value in (
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-method", "tools/call"),
    ):
        status, answer = await ask(
            world, key, "2026-07-28", request("2026-07-28", "tools/list"), **{header: value}
        )
        assert status == 400
        an_error(answer, -32020)
    later = request("2026-07-28", "tools/list")
    later["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2027-01-01"
    status, answer = await ask(world, key, "2027-01-01", later)
    assert status == 400
    data = UnsupportedProtocolVersionErrorData.model_validate(an_error(answer, -32022)["data"])
    assert (data.requested, data.supported[0]) == ("2027-01-01", "2026-07-28")
    bare = request("2026-07-28", "tools/list")
    del bare["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    status, answer = await ask(world, key, "2026-07-28", bare)
    assert status == 400
    an_error(answer, -32602)
    # The handshake's: a request after it that names a revision this server does not speak.
    plain = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    status, answer = await ask(world, key, "1999-01-01", plain)
    assert status == 400
    data = UnsupportedProtocolVersionErrorData.model_validate(an_error(answer, -32022)["data"])
    assert data.requested == "1999-01-01"


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_a_notification_is_accepted_and_left_unanswered(world: World, version: str) -> None:
    installation = await world.install()
    key = await mint_key(world, installation)
    for method in ("notifications/initialized", "notifications/cancelled", "tools/call"):
        message = request(version, method, {"name": "agenda", "arguments": {}})
        del message["id"]
        response = await post_mcp(world, key, message, headers={"mcp-protocol-version": version})
        assert (response.status, response.body) == (202, b"")
    assert await world.db.prepare("SELECT count(*) AS n FROM agent_calls").first() == {"n": 0}


async def test_the_tools_that_end_something_say_so(world: World) -> None:
    """`destructiveHint` is true for a tool that ends or undoes something (a schedule
    cancelled, a proposal withdrawn), false for one that only reads or adds."""
    installation = await world.install()
    key = await mint_key(world, installation)
    _, answer = await ask(world, key, "2026-07-28", request("2026-07-28", "tools/list"))
    hints = {
        tool["name"]: (tool["annotations"]["readOnlyHint"], tool["annotations"]["destructiveHint"])
        for tool in of_revision("tools/list", "2026-07-28", answer)["tools"]
    }
    assert hints == {
        "list_schedules": (True, False),
        "get_schedule": (True, False),
        "agenda": (True, False),
        "get_release": (True, False),
        "propose_schedule": (False, False),
        "propose_change": (False, False),
        "withdraw_proposal": (False, True),
        "cancel_schedule": (False, True),
    }

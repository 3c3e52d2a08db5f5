"""fake_core's server routes from one table: protocol, control API, home page, forms."""

from __future__ import annotations

import json

import pytest

from fake_core import parse_rfc3339
from fake_core.app import ROUTES, FakeCoreApp
from fake_core.routing import Route, find
from fake_core.testing import sample_core
from fake_core.wire import Reply

T0 = parse_rfc3339("2026-07-01T09:00:00Z") or 0


@pytest.fixture
def app() -> FakeCoreApp:
    return FakeCoreApp(sample_core(T0))


def code_of(reply: Reply) -> str:
    code = json.loads(reply.body)["code"]
    assert isinstance(code, str)
    return code


def test_each_method_and_path_is_routed_once() -> None:
    exact = [(route.method, route.path) for route in ROUTES if not route.prefix]
    assert len(exact) == len(set(exact))
    assert ("GET", "/") in exact
    assert ("POST", "/ui/launch") in exact
    assert ("DELETE", "/__fake/faults") in exact


@pytest.mark.parametrize(
    ("method", "path", "status", "allow"),
    [
        ("GET", "/__fake/reset", 405, "POST"),
        ("PUT", "/__fake/faults", 405, "GET, POST, DELETE"),
        ("GET", "/ui/launch", 405, "POST"),
        ("POST", "/", 405, "GET"),
        ("POST", "/__fake/nope", 404, None),
        ("POST", "/ui/nope", 404, None),
        ("GET", "/elsewhere", 404, None),
    ],
)
async def test_an_unknown_path_is_404_and_another_method_405_with_allow(
    app: FakeCoreApp, method: str, path: str, status: int, allow: str | None
) -> None:
    reply = await app.dispatch(method, path, {"Host": "127.0.0.1:8787"}, b"")
    assert reply.status == status
    assert code_of(reply) == ("not_found" if status == 404 else "method_not_allowed")
    assert reply.headers.get("allow") == allow


async def test_everything_under_api_is_the_protocols_to_route(app: FakeCoreApp) -> None:
    reply = await app.dispatch("GET", "/api/plugins/v1/transitions", {}, b"")
    assert (reply.status, code_of(reply)) == (405, "method_not_allowed")
    reply = await app.dispatch("GET", "/api/plugins/v2/x?y=1", {}, b"")
    assert (reply.status, code_of(reply)) == (404, "not_found")
    assert [call.path for call in app.core.calls.calls] == [
        "/api/plugins/v1/transitions",
        "/api/plugins/v2/x",
    ], "the core records what it was asked"


async def test_the_control_api_gets_the_query(app: FakeCoreApp) -> None:
    await app.dispatch("GET", "/api/plugins/v1/content/cnt_en", {}, b"")
    await app.dispatch("POST", "/api/plugins/v1/transitions", {}, b"")
    reply = await app.dispatch("GET", "/__fake/calls?endpoint=content", {}, b"")
    assert [call["endpoint"] for call in json.loads(reply.body)["calls"]] == ["content"]


def test_a_prefix_route_takes_any_method_under_it() -> None:
    async def endpoint(*_: object) -> Reply:
        return Reply(204)

    table = (Route("*", "/api/", endpoint, prefix=True), Route("GET", "/", endpoint))
    assert find(table, "PATCH", "/api/anything") is endpoint
    assert find(table, "GET", "/") is endpoint
    missing = find(table, "GET", "/ap")
    assert isinstance(missing, Reply)
    assert missing.status == 404

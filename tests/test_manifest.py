"""The manifest (protocol §2) and what every route answers, on both runtimes."""

from __future__ import annotations

import json

import httpx
import pytest

from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock, base_env, call, make_app
from tests.support.runtimes import Runtime


async def get(runtime: Runtime, path: str, method: str = "GET") -> httpx.Response:
    async with runtime.http() as http:
        return await http.request(method, path)


async def test_manifest_is_protocol_section_2_with_urls_from_public_origin(
    runtime: Runtime,
) -> None:
    response = await get(runtime, "/dee-wan/manifest.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    origin = runtime.origin
    assert response.json() == {
        "manifest_version": 1,
        "protocol": "v1",
        "id": "com.example.scheduling",
        "name": "Scheduling",
        "version": "0.1.0",
        "origin": origin,
        "activation_url": f"{origin}/dee-wan/activate",
        "launches": [
            {
                "kind": "content",
                "action": "schedule",
                "label": "Schedule",
                "url": f"{origin}/installations/{{installation_id}}",
            },
            {
                "kind": "manage",
                "label": "Scheduling",
                "url": f"{origin}/installations/{{installation_id}}",
            },
        ],
        "capabilities": ["content:read", "workflow:publish", "workflow:unpublish"],
    }


async def test_manifest_follows_another_origin(runtime: Runtime) -> None:
    with runtime.vars(PUBLIC_ORIGIN="http://localhost:8788"):
        body = (await get(runtime, "/dee-wan/manifest.json")).json()
    assert body["origin"] == "http://localhost:8788"
    assert body["activation_url"] == "http://localhost:8788/dee-wan/activate"
    assert (await get(runtime, "/dee-wan/manifest.json")).json()["origin"] == runtime.origin


async def test_every_response_carries_the_base_headers(runtime: Runtime) -> None:
    for path in ("/dee-wan/manifest.json", "/nowhere"):
        response = await get(runtime, path)
        assert response.headers["referrer-policy"] == "no-referrer"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["cache-control"] == "no-store"


async def test_unknown_route_404_and_wrong_method_405(runtime: Runtime) -> None:
    missing = await get(runtime, "/nowhere")
    assert (missing.status_code, missing.json()["code"]) == (404, "not_found")
    # PROPFIND, PURGE and QUERY have no name in the Workers SDK's method enum (a KeyError
    # there was a 500): the adapter reads the raw method.
    for method in ("POST", "PROPFIND", "PURGE", "QUERY", "PATCH"):
        response = await get(runtime, "/dee-wan/manifest.json", method)
        assert (response.status_code, response.json()["code"]) == (405, "method_not_allowed")
        assert response.headers["allow"] == "GET, HEAD"


async def test_head_has_no_body(runtime: Runtime) -> None:
    response = await get(runtime, "/dee-wan/manifest.json", "HEAD")
    assert (response.status_code, response.content) == (200, b"")


async def test_missing_public_origin_answers_misconfigured(
    db: SqliteDatabase, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(db, clock, env=base_env(PUBLIC_ORIGIN=None))
    response = await call(app, "GET", "/dee-wan/manifest.json")
    assert response.status == 500
    assert json.loads(response.body)["code"] == "misconfigured"
    assert "PUBLIC_ORIGIN" in caplog.text

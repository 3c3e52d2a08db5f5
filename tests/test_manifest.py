from __future__ import annotations

import json

import pytest

from scheduling.app import App
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock, base_env, call, make_app


async def test_manifest_is_protocol_section_2_with_urls_from_public_origin(app: App) -> None:
    response = await call(app, "GET", "/dee-wan/manifest.json")
    assert response.status == 200
    assert response.header("content-type") == "application/json"
    assert json.loads(response.body) == {
        "manifest_version": 1,
        "protocol": "v1",
        "id": "com.example.scheduling",
        "name": "Scheduling",
        "version": "0.1.0",
        "origin": "https://scheduling.example",
        "activation_url": "https://scheduling.example/dee-wan/activate",
        "launches": [
            {
                "kind": "content",
                "action": "schedule",
                "label": "Schedule",
                "url": "https://scheduling.example/installations/{installation_id}",
            },
            {
                "kind": "manage",
                "label": "Scheduling",
                "url": "https://scheduling.example/installations/{installation_id}",
            },
        ],
        "capabilities": ["content:read", "workflow:publish", "workflow:unpublish"],
    }


async def test_manifest_follows_another_origin(db: SqliteDatabase, clock: FakeClock) -> None:
    app = make_app(db, clock, env=base_env(PUBLIC_ORIGIN="http://localhost:8788"))
    body = json.loads((await call(app, "GET", "/dee-wan/manifest.json")).body)
    assert body["origin"] == "http://localhost:8788"
    assert body["activation_url"] == "http://localhost:8788/dee-wan/activate"


async def test_every_response_carries_the_base_headers(app: App) -> None:
    for path in ("/dee-wan/manifest.json", "/nowhere"):
        response = await call(app, "GET", path)
        assert response.header("referrer-policy") == "no-referrer"
        assert response.header("x-content-type-options") == "nosniff"
        assert response.header("cache-control") == "no-store"


async def test_unknown_route_404_and_wrong_method_405(app: App) -> None:
    assert (await call(app, "GET", "/nowhere")).status == 404
    response = await call(app, "POST", "/dee-wan/manifest.json")
    assert response.status == 405
    assert json.loads(response.body)["code"] == "method_not_allowed"


async def test_head_has_no_body(app: App) -> None:
    response = await call(app, "HEAD", "/dee-wan/manifest.json")
    assert response.status == 200
    assert response.body == b""


async def test_missing_public_origin_answers_misconfigured(
    db: SqliteDatabase, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(db, clock, env=base_env(PUBLIC_ORIGIN=None))
    response = await call(app, "GET", "/dee-wan/manifest.json")
    assert response.status == 500
    assert json.loads(response.body)["code"] == "misconfigured"
    assert "PUBLIC_ORIGIN" in caplog.text

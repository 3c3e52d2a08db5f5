"""fake_core's real HTTP server: sockets really drop and stall; control API; home page."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fake_core import FakeCore, parse_rfc3339
from fake_core.app import FakeCoreApp
from fake_core.server import bound_port, serve
from fake_core.testing import CODE, ORIGIN, FakePlugin, manifest, sample_core, transition_command

T0 = parse_rfc3339("2026-07-01T09:00:00Z") or 0


@pytest.fixture
async def server() -> AsyncIterator[tuple[FakeCore, httpx.AsyncClient]]:
    core = sample_core(T0)
    plugin = FakePlugin(manifest())
    app = FakeCoreApp(core, plugin_origin=ORIGIN, plugin_caller=plugin)
    app.stall_s = 5
    srv = await serve(app, "127.0.0.1", 0)
    core.base_url = plugin.base_url = f"http://127.0.0.1:{bound_port(srv)}"
    async with httpx.AsyncClient(base_url=core.base_url, timeout=5) as client:
        yield core, client
    srv.close()
    await srv.wait_closed()


async def control(client: httpx.AsyncClient, method: str, name: str, body: Any = None) -> Any:
    response = await client.request(method, f"/__fake/{name}", json=body)
    assert response.headers["content-type"] == "application/json"
    return response.status_code, response.json()


async def installed(core: FakeCore, client: httpx.AsyncClient) -> dict[str, Any]:
    status, data = await control(client, "POST", "install", {"code": CODE, "models": ["article"]})
    assert (status, data["code"]) == (201, "installed")
    installation: dict[str, Any] = data["installation"]
    return installation


async def test_control_api_install_launch_exchange_and_call_record(
    server: tuple[FakeCore, httpx.AsyncClient],
) -> None:
    core, client = server
    installation = await installed(core, client)
    status, data = await control(
        client,
        "POST",
        "launch",
        {"installation_id": installation["id"], "person_id": "usr_editor", "content_id": "cnt_en"},
    )
    assert status == 200
    assert data["url"].startswith(
        f"{ORIGIN}/installations/{installation['id']}?dee_wan_launch=dwl_"
    )
    auth = {"Authorization": f"Bearer {installation['token']}"}
    response = await client.post(
        "/api/plugins/v1/launch/exchange", headers=auth, json={"code": data["launch_code"]}
    )
    assert (response.status_code, response.json()["code"]) == (200, "launch_exchanged")
    response = await client.post(
        "/api/plugins/v1/launch/exchange", headers=auth, json={"code": data["launch_code"]}
    )
    assert (response.status_code, response.json()["code"]) == (404, "launch_not_found")

    _, record = await control(client, "GET", "calls?endpoint=exchange")
    first, second = record["calls"]
    assert first["headers"]["Authorization"] == auth["Authorization"]
    assert first["body"] == {"code": data["launch_code"]}
    assert (first["status"], second["code"]) == (200, "launch_not_found")

    assert (await control(client, "POST", "uninstall", {"installation_id": installation["id"]}))[
        0
    ] == 200
    response = await client.get("/api/plugins/v1/content/cnt_en", headers=auth)
    assert (response.status_code, response.json()["code"]) == (401, "plugin_unauthorized")


async def test_apply_then_drop_closes_the_socket_after_applying(
    server: tuple[FakeCore, httpx.AsyncClient],
) -> None:
    core, client = server
    ins = core.register_installation()
    await control(client, "POST", "faults", {"faults": [{"kind": "apply_then_drop"}]})
    headers, body = transition_command(core, ins)
    with pytest.raises(httpx.RemoteProtocolError):
        await client.post("/api/plugins/v1/transitions", headers=headers, json=body)
    assert [entry.kind for entry in core.state.log] == ["publish"]
    response = await client.post("/api/plugins/v1/transitions", headers=headers, json=body)
    assert response.json() == {"code": "idempotent_replay"}


async def test_timeout_fault_stalls_without_a_byte(
    server: tuple[FakeCore, httpx.AsyncClient],
) -> None:
    core, client = server
    ins = core.register_installation()
    await control(client, "POST", "faults", {"faults": [{"kind": "timeout"}]})
    headers, body = transition_command(core, ins)
    with pytest.raises(httpx.ReadTimeout):
        await client.post("/api/plugins/v1/transitions", headers=headers, json=body, timeout=0.3)
    assert core.state.log == []
    assert core.calls.calls[-1].outcome == "timed_out"


async def test_faked_status_latency_clock_and_reset(
    server: tuple[FakeCore, httpx.AsyncClient],
) -> None:
    core, client = server
    ins = core.register_installation()
    faults = {
        "faults": [
            {"kind": "respond", "status": 429, "code": "slow", "retry_after": "7"},
            {"kind": "html_5xx", "status": 503},
        ]
    }
    status, data = await control(client, "POST", "faults", faults)
    assert [entry["fault"]["kind"] for entry in data["pending"]] == ["respond", "html_5xx"]
    await control(client, "POST", "latency", {"seconds": 0.05})
    headers, body = transition_command(core, ins)
    first = await client.post("/api/plugins/v1/transitions", headers=headers, json=body)
    assert (first.status_code, first.headers["retry-after"]) == (429, "7")
    second = await client.post("/api/plugins/v1/transitions", headers=headers, json=body)
    assert (second.status_code, second.headers["content-type"]) == (503, "text/html")
    third = await client.post("/api/plugins/v1/transitions", headers=headers, json=body)
    assert third.json() == {"code": "transition_applied"}
    assert third.elapsed.total_seconds() >= 0.05

    _, clock = await control(client, "POST", "clock", {"advance_ms": 90_000})
    assert clock["now"] == "2026-07-01T09:01:30Z"
    status, bad = await control(client, "POST", "faults", {"faults": [{"kind": "nope"}]})
    assert (status, bad["code"]) == (400, "invalid_request")
    await control(client, "POST", "reset")
    _, state = await control(client, "GET", "state")
    assert (state["contents"], state["installations"]) == ([], [])


async def test_seed_and_home_page_escape_and_launch(
    server: tuple[FakeCore, httpx.AsyncClient],
) -> None:
    core, client = server
    await control(client, "POST", "reset")
    seed = {
        "timezone": "America/New_York",
        "persons": [{"id": "usr_a", "name": "<b>Ann</b>", "transitions": ["publish"]}],
        "contents": [
            {"id": "cnt_x", "title": "<script>alert(1)</script>"},
            {"id": "cnt_x_fr", "title": "X fr", "primary_id": "cnt_x", "locale": "fr"},
        ],
    }
    status, _ = await control(client, "POST", "seed", seed)
    assert status == 200
    ins = core.register_installation(ORIGIN)
    page = await client.get("/")
    assert "<script" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "&lt;b&gt;Ann&lt;/b&gt;" in page.text
    assert "script-src" not in page.headers["content-security-policy"]

    form = {"installation_id": ins.id, "person_id": "usr_a", "content_id": "cnt_x_fr"}
    response = await client.post("/ui/launch", data=form)
    assert response.status_code == 303
    location = response.headers["location"]
    assert location.startswith(f"{ORIGIN}/installations/{ins.id}?dee_wan_launch=dwl_")
    launch = core.state.launches[location.rsplit("=", 1)[1]]
    assert (launch.person_id, launch.context) == (
        "usr_a",
        {"kind": "content", "content_id": "cnt_x_fr"},
    )
    refused = await client.post("/ui/launch", data=form, headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403


def test_cli_serves_the_demo_seed() -> None:
    root = Path(__file__).resolve().parent.parent
    command = [sys.executable, "-m", "fake_core", "--port", "0", "--seed", "demo"]
    with subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            port = int(line.split("127.0.0.1:")[1].split()[0])
            assert f"base_url http://localhost:{port}" in line
            state = httpx.get(f"http://127.0.0.1:{port}/__fake/state").json()
            assert state["site"]["timezone"] == "Europe/Paris"
            translations = [c for c in state["contents"] if c["id"] != c["primary_id"]]
            assert [c["locale"] for c in translations] == ["fr"]
            assert any(g["published_version_id"] for g in state["groups"])
            roles = {p["id"]: p["role"] for p in state["persons"]}
            assert roles == {"usr_editor": "editor", "usr_viewer": "viewer", "usr_admin": "admin"}
        finally:
            process.terminate()
            process.wait(timeout=5)


async def test_control_api_roles_decide_who_may_open_manage(
    server: tuple[FakeCore, httpx.AsyncClient],
) -> None:
    core, client = server
    installation = await installed(core, client)
    status, data = await control(
        client,
        "POST",
        "seed",
        {"persons": [{"id": "usr_boss", "name": "Boss", "transitions": [], "role": "admin"}]},
    )
    assert status == 200
    assert {p["id"]: p["role"] for p in data["state"]["persons"]}["usr_boss"] == "admin"
    manage = {"installation_id": installation["id"]}
    status, data = await control(client, "POST", "launch", {**manage, "person_id": "usr_boss"})
    assert (status, data["code"]) == (200, "launch")
    status, data = await control(client, "POST", "launch", {**manage, "person_id": "usr_viewer"})
    assert (status, data["code"]) == (400, "invalid_request")
    assert data["message"] == "only a site admin is offered the Manage launch, not usr_viewer"

    # Seeding a person again replaces them: a demoted admin's open launch is not found.
    status, data = await control(client, "POST", "launch", {**manage, "person_id": "usr_boss"})
    demoted = {"id": "usr_boss", "name": "Boss", "transitions": [], "role": "editor"}
    assert (await control(client, "POST", "seed", {"persons": [demoted]}))[0] == 200
    auth = {"Authorization": f"Bearer {installation['token']}"}
    response = await client.post(
        "/api/plugins/v1/launch/exchange", headers=auth, json={"code": data["launch_code"]}
    )
    assert (response.status_code, response.json()["code"]) == (404, "launch_not_found")

    status, data = await control(
        client, "POST", "seed", {"persons": [{"id": "usr_x", "name": "X", "role": "owner"}]}
    )
    assert (status, data["code"]) == (400, "invalid_request")


def test_ctrl_c_with_a_connection_kept_open_stops_without_a_traceback() -> None:
    """A plugin's HTTP client keeps its connection open between calls; Ctrl-C then cancels
    the connection's task, which Python 3.11 used to log as an "Exception in callback"."""
    root = Path(__file__).resolve().parent.parent
    command = [sys.executable, "-m", "fake_core", "--port", "0"]
    with subprocess.Popen(
        command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            port = int(process.stdout.readline().split("127.0.0.1:")[1].split()[0])
            with socket.create_connection(("127.0.0.1", port), timeout=5) as kept:
                kept.sendall(b"GET /__fake/state HTTP/1.1\r\nHost: localhost\r\n\r\n")
                assert kept.recv(65536).startswith(b"HTTP/1.1 200 ")  # answered; left open
                process.send_signal(signal.SIGINT)
                _, err = process.communicate(timeout=10)
        finally:
            process.kill()  # a server that did not stop fails the test, not the whole run
    assert process.returncode == 0
    assert "Traceback" not in err, err

"""The local runtime's edge (issue 12): routing on the path sent, bodies, cookies, `/__scheduled`,
every answer's length and the server's lifespan, through the ASGI adapter and a real uvicorn
socket."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from scheduling.app import App
from scheduling.runtimes.cpython.asgi import AsgiApp, Message
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import (
    ADMIN_SECRET,
    ORIGIN,
    START_MS,
    FakeClock,
    base_env,
    call,
    make_app,
)
from tests.support.local_server import local_server
from tests.support.world import World

OPERATOR = {"authorization": f"Bearer {ADMIN_SECRET}"}


class Ticks:
    def __init__(self) -> None:
        self.at: list[int | None] = []

    async def __call__(self, when: int | None) -> dict[str, int]:
        self.at.append(when)
        return {"due": 0, "claimed": 0}


def client_for(asgi: AsgiApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=asgi), base_url="http://127.0.0.1:8788"
    )


def dev_app(db: SqliteDatabase, clock: FakeClock) -> App:
    return make_app(db, clock, env=base_env(ENVIRONMENT="development"))


@pytest.fixture
def ticks() -> Ticks:
    return Ticks()


@pytest.fixture
async def dev(
    db: SqliteDatabase, clock: FakeClock, ticks: Ticks
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the development app, its `/__scheduled` ticks recorded in `ticks`."""
    async with client_for(AsgiApp(dev_app(db, clock), ticks)) as client:
        yield client


async def asgi_call(
    asgi: AsgiApp,
    method: str,
    raw: bytes,
    receive: Any,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> list[Message]:
    """The messages `asgi` sends for one request whose raw path is `raw`."""
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    path = raw.decode("latin-1")
    scope = {"type": "http", "method": method, "path": path, "raw_path": raw, "query_string": b""}
    await asgi({**scope, "headers": headers or []}, receive, send)
    return sent


# -- routing on the path the request carries --------------------------------------------


async def test_the_host_header_does_not_choose_the_route(app: App) -> None:
    async with client_for(AsgiApp(app)) as client:
        response = await client.get("/dee-wan/manifest.json", headers={"host": "x/admin/status#"})
    assert response.status_code == 200
    assert response.json()["origin"] == ORIGIN
    assert "runner_status" not in response.text


@pytest.mark.parametrize(
    "path",
    [
        "/dee-wan%2Fmanifest.json",
        "/dee-wan%2fmanifest.json",
        "/admin%2Fstatus",
        "/installations/ins_1/schedules%2Fsch_1%2Fcancel",
    ],
)
async def test_an_encoded_slash_is_not_a_separator(app: App, path: str) -> None:
    async with client_for(AsgiApp(app)) as client:
        response = await client.get(path, headers=OPERATOR)
    assert response.status_code == 404


async def test_a_hash_or_raw_bytes_in_the_path_stay_in_the_path(app: App) -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    for raw in (
        b"/admin/status#/dee-wan/manifest.json",
        b"/dee-wan/manifest.json\xff",
        b"http://evil.example/dee-wan/manifest.json",
    ):
        sent = await asgi_call(AsgiApp(app), "GET", raw, receive, [(b"host", b"evil.example")])
        assert sent[0]["status"] == 404, raw


async def test_405_names_the_allowed_methods(app: App) -> None:
    async with client_for(AsgiApp(app)) as client:
        response = await client.put("/dee-wan/activate")
        assert response.status_code == 405
        assert response.headers["allow"] == "POST"
        assert response.json()["code"] == "method_not_allowed"
        response = await client.delete("/installations/ins_1")
        assert (response.status_code, response.headers["allow"]) == (405, "GET, HEAD")
        assert 'data-error-code="method_not_allowed"' in response.text


# -- bodies and cookies ------------------------------------------------------------------


async def test_a_body_over_64_kib_is_refused_without_reading_the_rest(
    app: App, db: SqliteDatabase
) -> None:
    chunks = [b"{" + b" " * 65_535, b" " * 10, b"}"]
    received: list[bytes] = []

    async def receive() -> dict[str, Any]:
        chunk = chunks.pop(0)
        received.append(chunk)
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    json_type = [(b"content-type", b"application/json")]
    sent = await asgi_call(AsgiApp(app), "POST", b"/dee-wan/activate", receive, json_type)
    assert sent[0]["status"] == 400
    assert json.loads(sent[1]["body"])["code"] == "invalid_request"
    assert (b"connection", b"close") in sent[0]["headers"]
    assert len(received) == 2  # the last chunk was never asked for


async def test_two_cookie_lines_keep_the_session(db: SqliteDatabase, clock: FakeClock) -> None:
    world = World(db, clock)
    installation = await world.install()
    browser = await world.browser_for(installation)
    session = browser.cookies["__Host-scheduling_session"]
    async with client_for(AsgiApp(world.app)) as client:
        response = await client.get(
            f"/installations/{installation.id}",
            headers=[
                ("cookie", "theme=dark"),
                ("cookie", f"__Host-scheduling_session={session}"),
                ("cookie", "other=1"),
            ],
        )
    assert response.status_code == 200, response.text[:300]
    assert "Spring launch" in response.text


# -- /__scheduled (development only) -----------------------------------------------------


async def test_scheduled_runs_one_tick_on_get_or_post(dev: httpx.AsyncClient, ticks: Ticks) -> None:
    assert (await dev.get("/__scheduled", params={"cron": "* * * * *"})).status_code == 200
    answer = await dev.post(
        "/__scheduled",
        params={"time": str(START_MS + 60_000)},
        headers={"sec-fetch-site": "same-origin"},
    )
    assert answer.status_code == 200
    assert answer.json()["code"] == "tick_finished"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["cache-control"] == "no-store"
    assert ticks.at == [None, START_MS + 60_000]


@pytest.mark.parametrize("method", ["PUT", "DELETE", "HEAD", "OPTIONS"])
async def test_scheduled_takes_get_and_post_only(
    dev: httpx.AsyncClient, ticks: Ticks, method: str
) -> None:
    answer = await dev.request(method, "/__scheduled")
    assert (answer.status_code, answer.headers["allow"]) == (405, "GET, POST")
    assert answer.headers["referrer-policy"] == "no-referrer"
    assert ticks.at == []


@pytest.mark.parametrize(
    "headers",
    [
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
        # A browser without Fetch Metadata (an older Safari) sends `Origin` alone.
        {"origin": "https://evil.example"},
        {"origin": "null"},  # a sandboxed frame, a file: page
        {"origin": "http://localhost:9999"},  # another port on this machine
        {"origin": "https://localhost:8788"},  # this port, but not the scheme it speaks
        {"origin": "http://scheduling.example"},  # PUBLIC_ORIGIN's host on plain HTTP
        {"origin": "https://scheduling.example.evil.example"},
    ],
)
async def test_scheduled_refuses_another_site_or_origin(
    dev: httpx.AsyncClient, ticks: Ticks, headers: dict[str, str]
) -> None:
    """A page of another site or origin must not run or move the development tick."""
    for method in ("GET", "POST"):
        answer = await dev.request(
            method, "/__scheduled", params={"time": START_MS}, headers=headers
        )
        assert (answer.status_code, answer.json()["code"]) == (403, "cross_site_request")
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert ticks.at == []


@pytest.mark.parametrize(
    "origin",
    ["http://localhost:8788", "http://127.0.0.1:8788", "http://[::1]:8788", ORIGIN, None],
)
async def test_scheduled_takes_its_own_origin_or_none(
    dev: httpx.AsyncClient, ticks: Ticks, origin: str | None
) -> None:
    answer = await dev.post("/__scheduled", headers={"origin": origin} if origin else {})
    assert answer.status_code == 200, answer.text
    assert ticks.at == [None]


DAY = 86_400_000


@pytest.mark.parametrize(
    "when",
    [
        "²",
        "١٧٨٢٩٠٠٠٠٠٠٠٠",
        "-1",
        "1e12",
        "",
        " 1782900000000",
        "17829000000000000000",
        str(START_MS + 15 * 60_000 + 1),  # more than 15 minutes ahead
        str(START_MS + 300 * DAY),  # the rebinding probe's tick, 300 days ahead
        str(START_MS - DAY - 1),  # more than a day behind
    ],
)
async def test_scheduled_time_is_ascii_digits_from_a_day_behind_to_15_minutes_ahead(
    dev: httpx.AsyncClient, ticks: Ticks, when: str
) -> None:
    answer = await dev.get("/__scheduled", params={"time": when})
    assert (answer.status_code, answer.json()["code"]) == (400, "invalid_request")
    assert answer.headers["cache-control"] == "no-store"
    for edge in (START_MS + 15 * 60_000, START_MS - DAY):
        assert (await dev.get("/__scheduled", params={"time": edge})).status_code == 200
    assert ticks.at == [START_MS + 15 * 60_000, START_MS - DAY]


async def test_scheduled_time_never_moves_a_tick_past_the_lateness_cap(
    db: SqliteDatabase, clock: FakeClock, ticks: Ticks
) -> None:
    """A tick moved ahead may send early, but never ends a schedule not yet due as too late."""
    app = make_app(db, clock, env=base_env(ENVIRONMENT="development", MAX_LATENESS_MS="60000"))
    async with client_for(AsgiApp(app, ticks)) as client:
        refused = await client.get("/__scheduled", params={"time": START_MS + 60_001})
        accepted = await client.get("/__scheduled", params={"time": START_MS + 60_000})
    assert (refused.status_code, accepted.status_code) == (400, 200)
    assert "60 s after now" in refused.json()["message"]
    assert ticks.at == [START_MS + 60_000]


@pytest.mark.parametrize(
    "host",
    [
        "rebind.example:8788",  # a name the attacker's DNS points at 127.0.0.1
        "rebind.example",
        "localhost:9999",  # another port than the one served
        "127.0.0.1:80",
        "localhost",
        "localhost.:8788",
        "127.0.0.1.nip.io:8788",
        "scheduling.example:8788",  # PUBLIC_ORIGIN's host on another port
        "evil.scheduling.example",
        "",
    ],
)
async def test_scheduled_refuses_a_host_it_is_not_known_by(
    dev: httpx.AsyncClient, ticks: Ticks, host: str
) -> None:
    """DNS rebinding: a page on rebind.example, once that name resolves to 127.0.0.1, is
    same-origin with the server. Only its Host gives it away."""
    answer = await dev.get(
        "/__scheduled",
        params={"cron": "* * * * *"},
        headers={"host": host, "sec-fetch-site": "same-origin"},
    )
    assert (answer.status_code, answer.json()["code"]) == (403, "host_not_allowed")
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert ticks.at == []


@pytest.mark.parametrize(
    "host",
    [
        "localhost:8788",
        "127.0.0.1:8788",
        "[::1]:8788",
        "LOCALHOST:8788",
        "scheduling.example",  # PUBLIC_ORIGIN (https://scheduling.example), through a proxy
        "scheduling.example:443",
    ],
)
async def test_scheduled_accepts_loopback_on_the_served_port_and_the_public_origin(
    dev: httpx.AsyncClient, ticks: Ticks, host: str
) -> None:
    answer = await dev.get("/__scheduled", headers={"host": host})
    assert answer.status_code == 200, answer.text
    assert ticks.at == [None]


async def test_a_failed_development_tick_is_a_500_with_its_code(
    db: SqliteDatabase, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    async def failing(when: int | None) -> dict[str, int]:
        raise RuntimeError("database is locked")

    async with client_for(AsgiApp(dev_app(db, clock), failing)) as client:
        answer = await client.get("/__scheduled")
    assert (answer.status_code, answer.json()["code"]) == (500, "internal_error")
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert [r.getMessage() for r in caplog.records if r.exc_info] == ["development tick failed"]


async def test_scheduled_is_not_found_outside_development(app: App, ticks: Ticks) -> None:
    async with client_for(AsgiApp(app, ticks)) as client:
        answer = await client.get("/__scheduled")
    assert (answer.status_code, answer.json()["code"]) == (404, "not_found")
    assert ticks.at == []


async def test_scheduled_with_a_bad_lateness_cap_is_misconfigured_naming_it(
    db: SqliteDatabase, clock: FakeClock, ticks: Ticks
) -> None:
    app = make_app(db, clock, env=base_env(ENVIRONMENT="development", MAX_LATENESS_MS="soon"))
    async with client_for(AsgiApp(app, ticks)) as client:
        answer = await client.get("/__scheduled", params={"time": START_MS})
    assert (answer.status_code, answer.json()["code"]) == (500, "misconfigured")
    assert "MAX_LATENESS_MS" in answer.json()["message"]
    assert ticks.at == []


# -- on a real socket: every answer's length, the lifespan ----------------------------------


def head_and_body(answer: bytes) -> tuple[dict[str, str], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")[1:]
    return {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}, body


async def test_every_answer_says_its_length_and_none_is_chunked(app: App) -> None:
    requests = {
        "GET /healthz": 200,
        "GET /static/app.css": 200,
        "GET /": 200,
        "GET /nowhere": 404,
        "HEAD /static/app.css": 200,
        "POST /dee-wan/activate": 400,
    }
    async with local_server(AsgiApp(app)) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        lengths = {}
        for request, status in requests.items():
            body = b"{" if request.startswith("POST") else b""
            writer.write(
                f"{request} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            headers, _ = head_and_body(head)
            assert head.startswith(f"HTTP/1.1 {status} ".encode()), (request, head[:80])
            assert "transfer-encoding" not in headers, request
            lengths[request] = int(headers["content-length"])
            if not request.startswith("HEAD"):
                await asyncio.wait_for(reader.readexactly(lengths[request]), 5)
        writer.close()
    # HEAD says the length its GET's body has, and sends none (the connection carried on).
    assert lengths["HEAD /static/app.css"] == lengths["GET /static/app.css"] > 0


async def test_the_lifespan_is_entered_before_the_first_request_and_left_at_the_stop(
    app: App,
) -> None:
    seen: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        seen.append("entered")
        yield
        seen.append("left")

    async with (
        local_server(AsgiApp(app, lifespan=lifespan)) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client,
    ):
        assert (await client.get("/healthz")).status_code == 200
        assert seen == ["entered"]
    assert seen == ["entered", "left"]


async def test_the_stylesheet_is_no_store_as_every_answer(app: App) -> None:
    async with client_for(AsgiApp(app)) as client:
        answer = await client.get("/static/app.css")
    assert answer.status_code == 200
    assert answer.headers["cache-control"] == "no-store"
    assert answer.headers["content-type"] == "text/css; charset=utf-8"


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("GET", "/dee-wan/manifest.json", {}),
        ("GET", "/nowhere", {"accept": "text/html"}),  # a refusal page
        ("POST", "/admin/activation-codes", {}),  # a JSON refusal
        ("HEAD", "/healthz", {}),
    ],
)
async def test_every_answer_carries_strict_transport_security_when_the_origin_is_https(
    db: SqliteDatabase, clock: FakeClock, method: str, path: str, headers: dict[str, str]
) -> None:
    """Issue 37, item 6: no answer said Strict-Transport-Security."""
    https = make_app(db, clock)
    answer = await call(https, method, path, headers=headers)
    assert answer.header("strict-transport-security") == "max-age=31536000"
    plain_env = base_env(ENVIRONMENT="development", PUBLIC_ORIGIN="http://localhost:8787")
    plain = make_app(db, clock, env=plain_env)
    answer = await call(plain, method, path, headers=headers, origin="http://localhost:8787")
    assert answer.header("strict-transport-security") is None

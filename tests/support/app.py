"""The CPython runtime of the app on an in-memory SQLite D1, as the tests drive it."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import random
from typing import Any

from fake_core.transport import MockTransport
from scheduling.app import App
from scheduling.config import Configuration
from scheduling.http.requests import Headers, Request
from scheduling.http.responses import Response
from scheduling.ports import Clock, HttpClient, OutboundRequest, OutboundResponse, TransportError
from scheduling.runtimes.cpython.adapters import CpythonCrypto
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from scheduling.services import Services

ORIGIN = "https://scheduling.example"
ADMIN_SECRET = "operator-secret-0123456789"
# Random-looking keys (config refuses a key whose bytes follow a pattern): sha256 of a phrase.
TOKEN_KEY = base64.b64encode(hashlib.sha256(b"scheduling tests: TOKEN_KEY").digest()).decode()
OTHER_TOKEN_KEY = base64.b64encode(
    hashlib.sha256(b"scheduling tests: another TOKEN_KEY").digest()
).decode()
START_MS = 1_782_900_000_000  # 2026-07-01T10:00:00Z
OPERATOR = {"authorization": f"Bearer {ADMIN_SECRET}", "content-type": "application/json"}


def base_env(**overrides: Any) -> dict[str, Any]:
    """The production env the tests run with; an override of None removes that variable."""
    env: dict[str, Any] = {
        "PUBLIC_ORIGIN": ORIGIN,
        "ENVIRONMENT": "production",
        "ADMIN_SECRET": ADMIN_SECRET,
        "TOKEN_KEY": TOKEN_KEY,
    }
    env.update(overrides)
    return {k: v for k, v in env.items() if v is not None}


class FakeClock:
    def __init__(self, now_ms: int = START_MS) -> None:
        self.now = now_ms

    def now_ms(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


class LoopClock(FakeClock):
    """Test time that is the event loop's, from `start_ms` (`now`) on.

    Under `looptime` the loop's time moves only when every task waits for a timer: the
    core's latency is the only time that passes, and the CPU work between (D1, the event
    loop itself) takes none, however loaded the machine is. The same waves land on the same
    milliseconds on every run.
    """

    def __init__(self, start_ms: int) -> None:
        super().__init__(start_ms)
        self.started = asyncio.get_running_loop().time()

    def now_ms(self) -> int:
        return self.now + int((asyncio.get_running_loop().time() - self.started) * 1000)


def no_network(request: OutboundRequest) -> OutboundResponse:
    """The default outbound port's handler in tests: any call fails, as with no network."""
    raise TransportError("no network in this test")


def memory_db() -> SqliteDatabase:
    """A fresh in-memory SQLite D1 with every migration applied."""
    database = SqliteDatabase(":memory:")
    apply_migrations(database.connection)
    return database


def make_app(
    db: SqliteDatabase,
    clock: Clock,
    *,
    http: HttpClient | None = None,
    env: dict[str, Any] | None = None,
    seed: int = 7,
) -> App:
    services = Services(
        config=Configuration.from_mapping(env if env is not None else base_env()),
        db=db,
        http=http or MockTransport(no_network),
        clock=clock,
        make_crypto=CpythonCrypto,
        rng=random.Random(seed),
    )
    return App(services)


async def call(
    app: App,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    origin: str = ORIGIN,
) -> Response:
    request = Request(method, f"{origin}{path}", Headers(headers or {}), body)
    return await app.handle(request)


def body(response: Response) -> Any:
    return json.loads(response.body)


async def runner_status(app: App, secret: str = ADMIN_SECRET) -> Any:
    """`GET /admin/status` as the operator; the parsed JSON."""
    response = await call(
        app, "GET", "/admin/status", headers={"authorization": f"Bearer {secret}"}
    )
    assert response.status == 200, response.body[:300]
    return body(response)


def event_lines(records: list[logging.LogRecord]) -> list[dict[str, Any]]:
    """The event lines (`ports.emit`) among captured log records, parsed, oldest first."""
    return [json.loads(r.getMessage()) for r in records if r.name == "scheduling.events"]

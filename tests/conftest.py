"""Shared fixtures: the CPython runtime of the app on an in-memory SQLite D1."""

from __future__ import annotations

import base64
import random
from collections.abc import Iterator
from typing import Any

import pytest

from scheduling.app import App
from scheduling.config import Configuration
from scheduling.http.requests import Headers, Request
from scheduling.http.responses import Response
from scheduling.ports import Database, HttpClient, OutboundRequest, OutboundResponse, TransportError
from scheduling.runtimes.cpython.crypto import CpythonCrypto
from scheduling.runtimes.cpython.migrations import apply_migrations
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from scheduling.services import Services

ORIGIN = "https://scheduling.example"
ADMIN_SECRET = "operator-secret-0123456789"
TOKEN_KEY = base64.b64encode(bytes(range(32))).decode()
START_MS = 1_782_900_000_000  # 2026-07-01T10:00:00Z


def base_env(**overrides: Any) -> dict[str, Any]:
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


class NoNetwork:
    """The default outbound port in tests: any call is a test failure waiting to be seen."""

    def __init__(self) -> None:
        self.sent: list[OutboundRequest] = []

    async def send(self, request: OutboundRequest) -> OutboundResponse:
        self.sent.append(request)
        raise TransportError("no network in this test")


@pytest.fixture
def db() -> Iterator[SqliteDatabase]:
    database = SqliteDatabase(":memory:")
    apply_migrations(database.connection)
    yield database
    database.close()


@pytest.fixture(params=["sqlite", pytest.param("d1", marks=pytest.mark.pyodide)])
def any_db(request: pytest.FixtureRequest) -> Iterator[Database]:
    """A migrated database: in-memory SQLite, then Miniflare's D1 through the Workers adapter.

    The D1 one is the shared Pyodide harness's, which lives for the whole session:
    use unique ids and remove the rows (or tables) a test creates.
    """
    if request.param == "sqlite":
        database = SqliteDatabase(":memory:")
        apply_migrations(database.connection)
        yield database
        database.close()
        return
    from tests.pyodide_harness.harness import node_path, shared_harness
    from tests.pyodide_harness.remote_d1 import RemoteD1Database

    if node_path() is None:
        pytest.skip("node is not installed: the Pyodide harness needs Node 20+")
    yield RemoteD1Database(shared_harness().control_url)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make_app(
    db: SqliteDatabase,
    clock: FakeClock,
    *,
    http: HttpClient | None = None,
    env: dict[str, Any] | None = None,
    seed: int = 7,
) -> App:
    services = Services(
        config=Configuration.from_mapping(env if env is not None else base_env()),
        db=db,
        http=http or NoNetwork(),
        clock=clock,
        make_crypto=CpythonCrypto,
        rng=random.Random(seed),
    )
    return App(services)


@pytest.fixture
def app(db: SqliteDatabase, clock: FakeClock) -> App:
    return make_app(db, clock)


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


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI (SCHEDULING_REQUIRE_ALL=1) a skipped test fails the run: nothing may quietly not run."""
    import os

    if not os.environ.get("SCHEDULING_REQUIRE_ALL"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped and session.exitstatus == 0:
        for report in skipped:
            print(f"\nskipped under SCHEDULING_REQUIRE_ALL: {report.nodeid}: {report.longrepr}")
        session.exitstatus = 1

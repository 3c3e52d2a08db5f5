"""An in-memory D1 (the CPython SQLite one, every migration applied) with installations and
due rows written straight into it, a Dee Wan whose answers a test chooses and a clock it
moves: the store the runner's unit suites (`test_send_work_units.py`, `test_alarm_units.py`,
`test_watchdog_units.py`) drive the engine's work on."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from fake_core.transport import MockTransport
from scheduling.channels.webhook import seal_secret
from scheduling.domain.secrets import seal_token
from scheduling.ports import LimitReached, OutboundRequest, OutboundResponse
from scheduling.repository.leases import Leases
from scheduling.repository.outbox import Outbox
from scheduling.repository.round_trips import RoundTrips
from scheduling.runner.engine import Budget, Engine, TickReport
from scheduling.runner.sends import DueRows, SendWork
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from scheduling.services import Services
from tests.support.app import FakeClock, base_env, make_app, memory_db
from tests.support.world import insert_due

DUE = 1_780_000_000_000
LATENESS = 900_000  # MAX_LATENESS_MS's default
BASE = "https://core.example"
JSON = {"content-type": "application/json"}


async def theirs(db: SqliteDatabase, schedule_id: str, until: int, claimed: str = "") -> None:
    """Another runner holds `schedule_id` under its lease until `until`."""
    sql = "UPDATE schedules SET status = 'running', next_attempt_at = NULL, {}"
    sql += " lease_token = 'theirs', lease_until = ? WHERE id = ?"
    await db.prepare(sql.format(claimed)).bind(until, schedule_id).run()


def applied() -> OutboundResponse:
    return OutboundResponse(200, JSON, json.dumps({"code": "transition_applied"}).encode())


def refused() -> OutboundResponse:
    return OutboundResponse(409, JSON, json.dumps({"code": "workflow_conflict"}).encode())


def unavailable() -> OutboundResponse:
    return OutboundResponse(503, JSON, b"{}")


@dataclass
class DeeWan:
    """The outbound port's handler: answers by content id (applied unless told), each `step`
    ms after it was asked; `refuse`: content ids whose request the platform refuses unmade
    (fetch's limit)."""

    clock: FakeClock
    answers: dict[str, OutboundResponse] = field(default_factory=dict)
    refuse: set[str] = field(default_factory=set)
    step: int = 0
    asked: list[OutboundRequest] = field(default_factory=list)
    hooks: list[OutboundRequest] = field(default_factory=list)  # to webhook endpoints
    order: list[str] = field(default_factory=list)  # content ids sent to, and "hook"s
    during: Any = None  # called with the request, as it is asked (another runner's move)

    async def __call__(self, request: OutboundRequest) -> OutboundResponse:
        if not request.url.startswith(BASE):  # a webhook endpoint's: it takes every event
            self.hooks.append(request)
            self.order.append("hook")
            return OutboundResponse(204, {}, b"")
        content = json.loads(request.body or b"{}")["content_id"]
        self.order.append(content)
        if content in self.refuse:
            raise LimitReached("subrequests")
        self.asked.append(request)
        if self.during is not None:
            await self.during(request)
        self.clock.now += self.step
        return self.answers.get(content, applied())


@dataclass
class Store:
    db: SqliteDatabase
    clock: FakeClock
    dee: DeeWan
    env: dict[str, str]

    def services(self) -> Services:
        """The services of one invocation: this store's D1, Dee Wan, clock and settings, in
        a process that found its database's migrations all known a moment ago (the downgrade
        guard's one read, tests/test_schema_guard.py, is in none of these units' counts)."""
        http = MockTransport(self.dee)
        services = make_app(self.db, self.clock, http=http, env=base_env(**self.env)).services
        services.schema_known_at = self.clock.now_ms()
        return services

    def engine(self, **budget: int) -> Engine:
        services = self.services()
        trips = RoundTrips(self.db)
        figures = {"ms": 60_000, "queries": 1_000, "sends": 1_000, **budget}
        return Engine(
            services,
            trips,
            TickReport(),
            self.clock.now_ms,
            now=self.clock.now,
            budget=Budget(**figures),
        )

    async def rows(self, *contents: str, installation: str = "ins_1", due_at: int = DUE) -> None:
        for content in contents:
            await insert_due(self.db, installation, content, due_at)

    async def subscribe(self, *events: str, installation: str = "ins_1") -> None:
        """A webhook endpoint of `installation` hearing of `events` (schedule.refused…)."""
        endpoint = f"end_{installation}"
        crypto = self.services().crypto
        sealed = await seal_secret(crypto, installation, endpoint, "whsec_" + "a2tr" * 10 + "a2s=")
        await (
            self.db.prepare(
                "INSERT INTO notification_endpoints (id, installation_id, url, secret_sealed,"
                " created_at, secret_rotated_at)"
                " VALUES (?, ?, 'https://hooks.example/in', ?, 0, 0)"
            )
            .bind(endpoint, installation, sealed)
            .run()
        )
        for event in events:
            await (
                self.db.prepare(
                    "INSERT INTO notification_subscriptions (endpoint_id, event_type) VALUES (?, ?)"
                )
                .bind(endpoint, event)
                .run()
            )

    async def events(self) -> list[dict[str, Any]]:
        """The outbox's events, oldest first: each body's type, timestamp and data."""
        result = await self.db.prepare(
            "SELECT payload FROM webhook_deliveries ORDER BY created_at, schedule_id"
        ).all()
        return [json.loads(row["payload"]) for row in result.results]

    async def row(self, content: str) -> dict[str, Any]:
        result = (
            await self.db.prepare("SELECT * FROM schedules WHERE id = ?")
            .bind(f"sch_{content}")
            .all()
        )
        return dict(result.results[0])

    async def run(
        self,
        engine: Engine,
        *,
        cap: int | None = None,
        last_sent_later: bool = False,
        source: Any = None,
    ) -> SendWork:
        leases = Leases(engine.trips, Outbox(engine.trips))
        work = SendWork(
            engine, leases, source or DueRows(leases), cap=cap, last_sent_later=last_sent_later
        )
        await engine.run(work)
        return work


async def store(*installations: str, **env: str) -> Store:
    db = memory_db()
    clock = FakeClock(DUE)
    s = Store(db, clock, DeeWan(clock), env)
    services = make_app(db, clock, env=base_env(**env)).services
    for installation in installations or ("ins_1",):
        sealed = await seal_token(services.crypto, installation, f"dwi_{installation}")
        await (
            db.prepare(
                "INSERT INTO installations (id, site_id, base_url, token_sealed, created_at,"
                " token_rotated_at) VALUES (?, 'site_1', ?, ?, 0, 0)"
            )
            .bind(installation, BASE, sealed)
            .run()
        )
    return s

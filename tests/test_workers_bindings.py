"""A Worker deployed without its D1 binding answers 500 `misconfigured` naming it, where needed.

`bindings.py` imports no Workers module, so this runs under CPython; the Pyodide
test (tests/test_pyodide_runtime.py) runs the real entry with the binding gone.
"""

from __future__ import annotations

import json
import logging
import random
from types import SimpleNamespace
from typing import Any

import pytest

from fake_core.transport import MockTransport
from scheduling.app import App
from scheduling.config import Configuration, Misconfigured
from scheduling.http.requests import Headers, Request
from scheduling.runtimes.cpython.adapters import CpythonCrypto
from scheduling.runtimes.workers.bindings import (
    DB_BINDING,
    SCHEDULE_CLOCK_BINDING,
    UnboundDatabase,
    bound,
    limit_of,
)
from scheduling.services import Services
from tests.support.app import TOKEN_KEY, no_network

ADMIN_SECRET = "operator-secret-0123456789"
ORIGIN = "https://scheduling.example"


class FakeD1:
    def prepare(self, sql: str) -> Any:
        raise AssertionError("not used")

    async def batch(self, statements: Any) -> Any:
        raise AssertionError("not used")


class Clock:
    def now_ms(self) -> int:
        return 1_782_900_000_000


@pytest.mark.parametrize(
    "env",
    [SimpleNamespace(), SimpleNamespace(PLUGIN_DB=None), SimpleNamespace(PLUGIN_DB="a string")],
    ids=["absent", "null", "not D1"],
)
def test_an_env_without_a_d1_binding_has_none(env: object) -> None:
    assert bound(env, DB_BINDING) is None


def test_a_d1_binding_is_taken_as_it_is() -> None:
    binding = FakeD1()
    assert bound(SimpleNamespace(PLUGIN_DB=binding), DB_BINDING) is binding
    assert DB_BINDING == "PLUGIN_DB"


def unbound_app() -> App:
    env = {"PUBLIC_ORIGIN": ORIGIN, "ADMIN_SECRET": ADMIN_SECRET, "TOKEN_KEY": TOKEN_KEY}
    return App(
        Services(
            config=Configuration.from_mapping(env),
            db=UnboundDatabase(),
            http=MockTransport(no_network),
            clock=Clock(),
            make_crypto=CpythonCrypto,
            rng=random.Random(0),
        )
    )


async def test_what_needs_the_database_answers_misconfigured_naming_the_binding(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = unbound_app()
    manifest = await app.handle(Request("GET", f"{ORIGIN}/dee-wan/manifest.json", Headers({})))
    assert manifest.status == 200
    operator = Headers({"authorization": f"Bearer {ADMIN_SECRET}"})
    with caplog.at_level(logging.ERROR, logger="scheduling"):
        status = await app.handle(Request("GET", f"{ORIGIN}/admin/status", operator))
    assert status.status == 500
    assert json.loads(status.body) == {
        "code": "misconfigured",
        "message": "PLUGIN_DB is not configured correctly",
    }
    assert "misconfigured: PLUGIN_DB is not bound" in caplog.text


async def test_a_tick_without_the_binding_fails_naming_it() -> None:
    with pytest.raises(Misconfigured, match="PLUGIN_DB"):
        await unbound_app().tick(Clock().now_ms())


def test_the_clocks_namespace_is_taken_only_when_it_names_objects() -> None:
    class DurableObjectNamespace:
        def getByName(self, name: str) -> Any:
            return None

    namespace = DurableObjectNamespace()
    assert bound(SimpleNamespace(SCHEDULE_CLOCK=namespace), SCHEDULE_CLOCK_BINDING) is namespace
    assert bound(SimpleNamespace(), SCHEDULE_CLOCK_BINDING) is None
    # The local runtime's SCHEDULE_CLOCK=1 is a variable: in a Worker it turns nothing on.
    assert bound(SimpleNamespace(SCHEDULE_CLOCK="1"), SCHEDULE_CLOCK_BINDING) is None


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("Error: Too many API requests by single Worker invocation.", "d1"),
        ("D1_ERROR: Too many API requests by single worker invocation.", "d1"),
        ("Error: Too many subrequests by single Worker invocation.", "subrequests"),
        (
            "Error: Too many subrequests by single Worker invocation. To configure this limit,"
            " refer to https://developers.cloudflare.com/workers/platform/limits/",
            "subrequests",
        ),
        ("Error: D1_ERROR: no such table: schedules", None),
        ("TypeError: fetch failed", None),
        ("Error: Too many requests", None),  # a service's throughput limit: not this invocation's
    ],
)
def test_the_platforms_limit_texts_are_recognised_and_nothing_else(
    message: str, kind: str | None
) -> None:
    limit = limit_of(message)
    assert (limit.kind if limit else None) == kind

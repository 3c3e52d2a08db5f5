"""One behaviour test, both runtimes: the `runtime` fixture (tests/conftest.py) hands a test
the plugin as a browser, Dee Wan and the edge see it, on CPython (the app in-process behind
the local runtime's ASGI adapter, an in-process fake Dee Wan, a test clock) or on Pyodide
(the real Worker entry in the shared harness, `python -m fake_core`, the wall clock).

A test speaks HTTP to `runtime.http(client=…)` and asks Dee Wan through the runtime; what
only one runtime can show (a clock moved by hand, an isolate's connections) stays in that
runtime's own tests.
"""

from __future__ import annotations

import contextlib
import html
import io
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

import httpx

from fake_core import Fault
from scheduling.app import App
from scheduling.failure_throttle import LAUNCH_FAILURES_PER_MINUTE, WINDOW_MS, MemoryRateLimiter
from scheduling.runtimes.cpython.asgi import AsgiApp
from scheduling.runtimes.workers.bindings import BindingRateLimiter
from tests.pyodide_harness.harness import ADMIN_SECRET as HARNESS_SECRET
from tests.pyodide_harness.harness import FakeCoreProcess, Harness
from tests.support.app import ADMIN_SECRET, ORIGIN, base_env, make_app
from tests.support.local_server import local_server
from tests.support.loopback_core import Received, loopback_receiver
from tests.support.webhooks import Receiver, with_receivers
from tests.support.world import World

# Where no test says who is asking: the local runtime's peer, and the harness's edge
# reporting the loopback peer, are both this address.
LOOPBACK = "127.0.0.1"


SESSION_COOKIE = "__Host-scheduling_session"


class Visitor:
    """A browser on the plugin's origin. It keeps the session's `__Host-` cookie by hand:
    http.cookiejar sends no `Secure` cookie over http://localhost, which browsers do."""

    def __init__(self, http: httpx.AsyncClient, origin: str) -> None:
        self.http, self.origin = http, origin
        self.cookie: str | None = None
        self.csrf = ""
        self.shown: dict[str, str] = {}  # the versions the last page's form carries
        self.page = ""  # the last answer's text

    async def get(self, url: str) -> httpx.Response:
        return self._keep(await self.http.get(url, headers=self._headers()))

    async def post_form(self, path: str, fields: dict[str, Any]) -> httpx.Response:
        """A same-origin form; a list value repeats its field (checkboxes)."""
        headers = {**self._headers(), "origin": self.origin, "sec-fetch-site": "same-origin"}
        return self._keep(await self.http.post(path, data=fields, headers=headers))

    async def create(self, installation_id: str, local_time: str, **fields: str) -> str:
        """Press Schedule on the content page last shown: a publish in Europe/Paris unless
        `fields` say otherwise. The new schedule's id, its receipt shown; or the refusal's
        status."""
        form = {**self.shown, "csrf_token": self.csrf, "transition": "publish:published",
                "timezone": "Europe/Paris", "fold": "", "local_time": local_time}  # fmt: skip
        form.update(fields)
        made = await self.post_form(f"/installations/{installation_id}/schedules", form)
        if made.status_code != 303:
            return str(made.status_code)
        await self.get(made.headers["location"])
        return made.headers["location"].rsplit("created=", 1)[1]

    def _headers(self) -> dict[str, str]:
        return {"cookie": f"{SESSION_COOKIE}={self.cookie}"} if self.cookie else {}

    def _keep(self, response: httpx.Response) -> httpx.Response:
        self.page = response.text
        for header in response.headers.get_list("set-cookie"):
            name, _, rest = header.partition("=")
            if name == SESSION_COOKIE:
                self.cookie = rest.split(";", 1)[0]
        found = re.search(r'name="csrf_token" value="([A-Za-z0-9_-]{43})"', response.text)
        if found:
            self.csrf = found.group(1)
        shown = re.findall(r'name="((?:published_)?version_id)" value="([^"]*)"', response.text)
        if shown:
            self.shown = dict(shown)
        return response


@dataclass
class Limiter:
    """A Rate Limiting binding's stand-in: every call so far (`{"key", "success"}`), and
    the end of its window."""

    calls: Callable[[], list[dict[str, Any]]]
    end_window: Callable[[], Any]


def context_of(context: dict[str, str]) -> dict[str, str]:
    return {"kind": "content", **context} if context else {"kind": "manage"}


class Ratelimit:
    """The shape of Workers' Rate Limiting binding: `limit({"key"})` answers `{"success"}`."""

    def __init__(self, limit: int) -> None:
        self.limit_value = limit
        self.counts: dict[str, int] = {}
        self.calls: list[dict[str, Any]] = []

    async def limit(self, options: dict[str, str]) -> dict[str, bool]:
        key = options["key"]
        success = self.counts.get(key, 0) < self.limit_value
        self.counts[key] = self.counts.get(key, 0) + success
        self.calls.append({"key": key, "success": success})
        return {"success": success}


class Receiving(Protocol):
    """An endpoint a test runs: where the plugin may send, and what it received there."""

    url: str
    received: list[Received]


class Runtime:
    """The contract both runtimes keep; each method says what it means once, here."""

    name: str
    origin: str
    content: str  # a content of Dee Wan's sample, with a draft to publish
    other_content: str  # another one, also with a draft
    dee_wan_url: str  # Dee Wan's own address, where the plugin's pages lead back to
    operator: dict[str, str]  # the operator's bearer header
    slack_ms = 0  # how far the plugin's clock may move between `now_ms()` and what follows

    def __init__(self) -> None:
        self.opened: list[httpx.AsyncClient] = []
        self.installed: list[str] = []  # installations to remove after the test, where shared

    def http(self, *, client: str | None = None) -> httpx.AsyncClient:
        """A client for the plugin's origin; `client` is the address the runtime reports for
        the caller (the local peer, or the Worker's `CF-Connecting-IP`)."""
        raise NotImplementedError

    def vars(self, **overrides: Any) -> contextlib.AbstractContextManager[None]:
        """Run with variables changed (None removes one)."""
        raise NotImplementedError

    async def install(self) -> str:
        """Dee Wan installs the plugin with a fresh activation code: the installation's id."""
        raise NotImplementedError

    def uninstall(self, installation_id: str) -> None:
        """Dee Wan uninstalls the plugin: the installation's token is answered
        `plugin_unauthorized` from now on."""
        raise NotImplementedError

    def launch_path(self, installation_id: str, person: str | None = None, **context: str) -> str:
        """A launch link Dee Wan issues to `person`: by default, a manage launch to a site
        admin, or a content launch (`content_id=…`) to an editor."""
        raise NotImplementedError

    def exchange_calls(self) -> int:
        """How many launch exchanges reached Dee Wan so far."""
        raise NotImplementedError

    def launch_limiter(self, limit: int) -> contextlib.AbstractContextManager[Limiter]:
        """Run with a Rate Limiting binding of `limit` per window bound."""
        raise NotImplementedError

    def now_ms(self) -> int:
        """The time the plugin reads now."""
        raise NotImplementedError

    def dee_wan_down(self, minutes: int) -> contextlib.AbstractContextManager[None]:
        """Run with Dee Wan answering every call 503 for `minutes` (its own switch)."""
        raise NotImplementedError

    def fault(self, fault: Fault, *, endpoint: str = "transitions", content_id: str = "") -> None:
        """Dee Wan answers its next call of `endpoint` (about `content_id`) with `fault`."""
        raise NotImplementedError

    def change_content(self, content_id: str, action: str) -> None:
        """Someone changes the content in Dee Wan itself: `publish`, `unpublish`, or `edit`
        (a newer draft)."""
        raise NotImplementedError

    def calls(self, endpoint: str | None = None) -> list[dict[str, Any]]:
        """The calls Dee Wan received so far (of `endpoint`), oldest first, as its control API
        lists them, header names in lower case."""
        raise NotImplementedError

    def receiver(self) -> contextlib.AbstractContextManager[Receiving]:
        """Run with an endpoint the plugin may be told to send webhooks and chat messages to."""
        raise NotImplementedError

    async def unsealed(self, sealed: str, context: str) -> str:
        """A value the plugin sealed (a token, a secret), opened with its key."""
        raise NotImplementedError

    async def rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        """A read of the plugin's database, for assertions."""
        raise NotImplementedError

    async def execute(self, sql: str, *params: Any) -> None:
        """A write to the plugin's database, to set up what no page can (a row in the past)."""
        raise NotImplementedError

    def served(self) -> contextlib.AbstractAsyncContextManager[str]:
        """The plugin on a real socket, for clients that make their own connections."""
        raise NotImplementedError

    async def tick(self, at: int, *, asked_now: bool = False) -> None:
        """The cron's tick for the minute `at` (a failed one raises), delivered now if `at` is
        past: the plugin's clock never goes back. `asked_now`: a tick for `at` asked for now,
        whatever `at` says (`wrangler dev --test-scheduled`, `/__scheduled?time=`)."""
        raise NotImplementedError

    def log_text(self) -> str:
        """What the plugin logged so far."""
        raise NotImplementedError

    def noon(self, days_ahead: int, zone: str = "Europe/Paris") -> str:
        """Noon in `zone` some days from now, as the form takes it (never in a gap or a fold)."""
        today = datetime.fromtimestamp(self.now_ms() / 1000, ZoneInfo(zone)).date()
        return f"{(today + timedelta(days=days_ahead)).isoformat()}T12:00"

    def minute_ahead(self, minutes: int = 6) -> int:
        """A whole minute some minutes from now (a tick may stand for at most 15 ahead)."""
        return (self.now_ms() // 60_000 + minutes) * 60_000

    async def count(self, table: str, installation_id: str) -> int:
        """Rows of `table` for one installation."""
        sql = f"SELECT count(*) AS n FROM {table} WHERE installation_id = ?"
        [row] = await self.rows(sql, installation_id)
        return int(row["n"])

    async def open_page(self, installation_id: str, **context: str) -> Visitor:
        """A person opens Scheduling from Dee Wan (`launch_path`'s launch) and is shown its
        page: a visitor with its session, CSRF token and the versions shown."""
        self.opened.append(self.http())
        visitor = Visitor(self.opened[-1], self.origin)
        exchanged = await visitor.get(self.launch_path(installation_id, **context))
        assert exchanged.status_code == 303, exchanged.text
        page = await visitor.get(exchanged.headers["location"])
        assert page.status_code == 200, page.text[:2000]
        return visitor

    async def close(self) -> None:
        for http in self.opened:
            await http.aclose()


class CpythonRuntime(Runtime):
    """The app in-process behind the local runtime's ASGI adapter, sample_core, a test clock."""

    name, origin, content, other_content = "cpython", ORIGIN, "cnt_en", "cnt_page"

    def __init__(self, world: World) -> None:
        super().__init__()
        self.world = world
        self.dee_wan_url = world.core.base_url
        self.operator = {"authorization": f"Bearer {ADMIN_SECRET}"}
        self.log = io.StringIO()
        self.handler = logging.StreamHandler(self.log)
        logging.getLogger("scheduling").addHandler(self.handler)
        self.events = logging.getLogger("scheduling.events")
        self.events_level = self.events.level
        self.events.setLevel(logging.INFO)  # the event lines, as the Worker's log has them

    def http(self, *, client: str | None = None) -> httpx.AsyncClient:
        async def current(scope: Any, receive: Any, send: Any) -> None:
            await AsgiApp(self.world.app)(scope, receive, send)  # the app `vars` set

        transport = httpx.ASGITransport(app=current, client=(client or LOOPBACK, 50_000))
        return httpx.AsyncClient(transport=transport, base_url=self.origin)

    @contextlib.contextmanager
    def vars(self, **overrides: Any) -> Iterator[None]:
        world, before = self.world, self.world.app
        world.app = make_app(world.db, world.clock, http=world.http, env=base_env(**overrides))
        try:
            yield
        finally:
            world.app = before

    async def install(self) -> str:
        return (await self.world.install()).id

    def uninstall(self, installation_id: str) -> None:
        self.world.core.uninstall(installation_id)

    def launch_path(self, installation_id: str, person: str | None = None, **context: str) -> str:
        # sample_core's editor is its site admin too.
        person = person or "usr_editor"
        launch = self.world.core.issue_launch(installation_id, person, context_of(context))
        return launch.url.removeprefix(self.origin)

    def exchange_calls(self) -> int:
        return sum(1 for call in self.world.core.calls.calls if call.endpoint == "exchange")

    @contextlib.contextmanager
    def launch_limiter(self, limit: int) -> Iterator[Limiter]:
        before, binding = self.world.app, Ratelimit(limit)
        fallback = MemoryRateLimiter(LAUNCH_FAILURES_PER_MINUTE, WINDOW_MS, self.world.clock)
        limiter = BindingRateLimiter(binding, fallback)
        self.world.app = App(replace(before.services, rate_limiter=limiter))  # a fresh isolate's
        try:
            yield Limiter(calls=lambda: list(binding.calls), end_window=binding.counts.clear)
        finally:
            self.world.app = before

    def now_ms(self) -> int:
        return self.world.clock.now_ms()

    @contextlib.contextmanager
    def dee_wan_down(self, minutes: int) -> Iterator[None]:
        self.world.core.faults.down_for(minutes, self.now_ms())
        try:
            yield
        finally:
            self.world.core.faults.clear()

    def fault(self, fault: Fault, *, endpoint: str = "transitions", content_id: str = "") -> None:
        self.world.core.faults.push(fault, endpoint=endpoint, content_id=content_id or None)

    def change_content(self, content_id: str, action: str) -> None:
        state = self.world.core.state
        if action == "edit":
            state.edit(content_id)
        else:
            getattr(state, f"{action}_now")(content_id, self.now_ms())

    def calls(self, endpoint: str | None = None) -> list[dict[str, Any]]:
        made = (c.to_json() for c in self.world.core.calls.calls if endpoint in (None, c.endpoint))
        return [{**c, "headers": {k.lower(): v for k, v in c["headers"].items()}} for c in made]

    @contextlib.contextmanager
    def receiver(self) -> Iterator[Receiving]:
        receiver = Receiver()
        with_receivers(self.world, receiver)
        yield receiver

    async def unsealed(self, sealed: str, context: str) -> str:
        return await self.world.app.services.crypto.open(sealed, context)

    async def rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        return (await self.world.db.prepare(sql).bind(*params).all()).results

    async def execute(self, sql: str, *params: Any) -> None:
        await self.world.db.prepare(sql).bind(*params).run()

    async def tick(self, at: int, *, asked_now: bool = False) -> None:
        if not asked_now:
            self.world.clock.now = max(self.world.clock.now, at)
        await self.world.app.tick(at)

    def log_text(self) -> str:
        return self.log.getvalue()

    async def close(self) -> None:
        logging.getLogger("scheduling").removeHandler(self.handler)
        self.events.setLevel(self.events_level)
        await super().close()

    @contextlib.asynccontextmanager
    async def served(self) -> AsyncIterator[str]:
        async with local_server(AsgiApp(self.world.app)) as port:
            yield f"http://127.0.0.1:{port}"


class PyodideRuntime(Runtime):
    """The real Worker entry in the shared harness, in development mode (fake core's base
    URL is http://localhost), with `python -m fake_core` and the wall clock."""

    name, content, other_content = "pyodide", "cnt_spring", "cnt_news"
    slack_ms = 60_000  # the wall clock, while the harness answers

    def __init__(self, harness: Harness, core: FakeCoreProcess) -> None:
        super().__init__()
        self.harness, self.core = harness, core
        self.origin, self.dee_wan_url = harness.origin, core.base_url
        self.operator = {"authorization": f"Bearer {HARNESS_SECRET}"}

    @property
    def development(self) -> dict[str, str]:
        return {"ENVIRONMENT": "development", "DEE_WAN_DEV_ORIGINS": self.core.base_url}

    def http(self, *, client: str | None = None) -> httpx.AsyncClient:
        headers = {"cf-connecting-ip": client} if client else {}
        return httpx.AsyncClient(base_url=self.origin, headers=headers, timeout=60)

    def set_vars(self, **overrides: Any) -> None:
        changed = {**self.harness.base_vars, **self.development, **overrides}
        self.harness.set_vars({name: value for name, value in changed.items() if value is not None})

    @contextlib.contextmanager
    def vars(self, **overrides: Any) -> Iterator[None]:
        self.set_vars(**overrides)
        try:
            yield
        finally:
            self.set_vars()

    async def install(self) -> str:
        async with self.http() as http:
            minted = await http.post("/admin/activation-codes", headers=self.operator, json={})
        assert minted.status_code == 201, minted.text
        answer = self.core.control("POST", "install", {"code": minted.json()["code"]})
        assert answer["code"] == "installed", answer
        installation_id: str = answer["installation"]["id"]
        self.installed.append(installation_id)
        return installation_id

    def uninstall(self, installation_id: str) -> None:
        self.core.control("POST", "uninstall", {"installation_id": installation_id})

    def launch_path(self, installation_id: str, person: str | None = None, **context: str) -> str:
        person = person or ("usr_editor" if context else "usr_admin")  # the demo's people
        body = {"installation_id": installation_id, "person_id": person, **context}
        url: str = self.core.control("POST", "launch", body)["url"]
        return url.removeprefix(self.origin)

    def exchange_calls(self) -> int:
        return len(self.core.control("GET", "calls", endpoint="exchange")["calls"])

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    @contextlib.contextmanager
    def dee_wan_down(self, minutes: int) -> Iterator[None]:
        form = {"content-type": "application/x-www-form-urlencoded"}
        pressed = self.core.client.post("/ui/fail-down", content=f"minutes={minutes}", headers=form)
        assert pressed.status_code == 303, pressed.text
        try:
            yield
        finally:
            self.core.control("DELETE", "faults")

    def fault(self, fault: Fault, *, endpoint: str = "transitions", content_id: str = "") -> None:
        entry = {**fault.to_json(), "endpoint": endpoint, "content_id": content_id or None}
        self.core.control("POST", "faults", {"faults": [entry]})

    def change_content(self, content_id: str, action: str) -> None:
        self.core.control("POST", "content", {"content_id": content_id, "action": action})

    def calls(self, endpoint: str | None = None) -> list[dict[str, Any]]:
        made = self.core.control("GET", "calls", **({"endpoint": endpoint} if endpoint else {}))
        return [
            {**c, "headers": {k.lower(): v for k, v in c["headers"].items()}} for c in made["calls"]
        ]

    @contextlib.contextmanager
    def receiver(self) -> Iterator[Receiving]:
        with loopback_receiver() as receiver:
            self.set_vars(DEE_WAN_DEV_ORIGINS=f"{self.core.base_url},{receiver.base_url}")
            try:
                yield receiver
            finally:
                self.set_vars()

    async def unsealed(self, sealed: str, context: str) -> str:
        return str(self.harness.open(sealed, context)["plaintext"])

    async def rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        return list(self.harness.sql(sql, *params))

    async def execute(self, sql: str, *params: Any) -> None:
        self.harness.execute((sql, list(params)))

    async def tick(self, at: int, *, asked_now: bool = False) -> None:
        self.harness.scheduled(at)  # the wall clock: always asked now

    def log_text(self) -> str:
        return self.harness.log_tail(400)

    @contextlib.asynccontextmanager
    async def served(self) -> AsyncIterator[str]:
        yield self.origin

    @contextlib.contextmanager
    def launch_limiter(self, limit: int) -> Iterator[Limiter]:
        with self.harness.launch_limiter(limit):
            yield Limiter(
                calls=lambda: list(self.harness.rate_limiter()["calls"]),
                end_window=lambda: self.harness.rate_limiter(reset=True),
            )


async def added_endpoint(
    runtime: Runtime, installation_id: str, url: str, kind: str = "webhook"
) -> tuple[str, str]:
    """A site admin adds an endpoint hearing of refusals through the Notifications page's form: its
    id, and what the page showed once (a webhook's signing secret, a chat's URL)."""
    manage = await runtime.open_page(installation_id)
    notifications = f"/installations/{installation_id}/notifications"
    await manage.get(notifications)
    fields = {"csrf_token": manage.csrf, "opened_for": "manage", "kind": kind, "url": url,
              "events": ["schedule.refused"]}  # fmt: skip
    added = await manage.post_form(notifications, fields)
    assert added.status_code == 303, added.text
    page = (await manage.get(added.headers["location"])).text
    shown = re.search(r"data-(?:signing-secret|secret-url)>([^<]+)<", page)
    assert shown, page[-3000:]
    assert shown.group(1) not in (await manage.get(notifications)).text
    [endpoint_id] = re.findall(r'data-endpoint-id="([^"]+)"', page)
    return endpoint_id, html.unescape(shown.group(1))


@contextlib.asynccontextmanager
async def pyodide_runtime(harness: Harness, core: FakeCoreProcess) -> AsyncIterator[Runtime]:
    """The harness as a runtime for one test, in development mode with `core` (reset to the
    demo site); every installation the test made removed after it."""
    from tests.support.worker_browser import remove_installation

    runtime = PyodideRuntime(harness, core)
    runtime.set_vars()
    try:
        yield runtime
    finally:
        await runtime.close()
        for installation_id in runtime.installed:
            remove_installation(harness, installation_id)
        harness.set_vars(harness.base_vars)

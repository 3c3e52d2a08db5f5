"""The plugin and a fake Dee Wan wired together in-process, plus a tiny cookie-keeping browser."""

from __future__ import annotations

import asyncio
import html
import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from fake_core.core import FakeCore
from fake_core.state import Installation
from fake_core.testing import sample_core
from fake_core.transport import MockTransport, core_handler
from scheduling.app import App
from scheduling.http.requests import Headers, Request
from scheduling.http.responses import Response
from scheduling.repository.history import REPORT_COLUMNS
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.activation import mint
from tests.support.app import ORIGIN, FakeClock, make_app
from tests.support.time_format import assert_one_time_format
from tests.support.waiting import until

CORE_URL = "https://cms.example"
EDITOR_PAGES = "/installations/"  # the pages people open from Dee Wan
MINUTE = 60_000


class World:
    def __init__(self, db: SqliteDatabase, clock: FakeClock, **app_options: Any) -> None:
        self.db = db
        self.clock = clock
        self.core: FakeCore = sample_core(clock.now_ms(), CORE_URL)
        self.core.clock = type(self.core.clock)(clock.now_ms)  # follow the test clock
        self.core.plugin_caller = self.plugin_caller
        # The plugin's outbound port: the fake Dee Wan, unless a test wraps or swaps its handler.
        self.http = MockTransport(core_handler(self.core))
        self.app: App = make_app(db, clock, http=self.http, **app_options)

    async def plugin_caller(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, dict[str, str], bytes]:
        response = await self.app.handle(Request(method, url, Headers(headers), body or b""))
        return response.status, dict(response.headers), response.body

    async def install(self, **options: Any) -> Installation:
        return await self.core.install(ORIGIN, await mint(self.app), **options)

    async def browser_for(
        self,
        installation: Installation,
        person: str = "usr_editor",
        content_id: str | None = "cnt_en",
    ) -> Browser:
        context = (
            {"kind": "content", "content_id": content_id} if content_id else {"kind": "manage"}
        )
        launch = self.core.issue_launch(installation.id, person, context)
        browser = Browser(self.app)
        response = await browser.get(launch.url)
        assert response.status == 303, response.body[:500]
        return browser

    async def open_page(
        self,
        installation: Installation,
        content_id: str | None = "cnt_en",
        person: str = "usr_editor",
    ) -> Browser:
        """A content launch (`None`: a manage launch) for `person`, its page opened (its CSRF
        token and shown fields ready for a form)."""
        browser = await self.browser_for(installation, person=person, content_id=content_id)
        await browser.get(f"/installations/{installation.id}")
        return browser


class Browser:
    """Keeps cookies and sends what a same-origin page's form would send. Every page it is
    shown must write time one way (`checks_time_format`; off where Dee Wan's own text, such
    as a fuzzed title, may be anything)."""

    checks_time_format = True

    def __init__(self, app: App, client: str | None = None) -> None:
        self.app = app
        self.client = client  # the peer address the runtime's adapter would report
        self.cookies: dict[str, str] = {}
        self.last: Response | None = None
        self.csrf_token: str | None = None
        self.pins: dict[str, str] = {}

    def _headers(self, extra: dict[str, str] | None = None) -> Headers:
        headers = dict(extra or {})
        if self.cookies:
            headers["cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        return Headers(headers)

    async def _send(
        self, method: str, url: str, headers: dict[str, str], body: bytes = b""
    ) -> Response:
        if url.startswith("/"):
            url = ORIGIN + url
        response = await self.app.handle(
            Request(method, url, self._headers(headers), body, client=self.client)
        )
        for name, value in response.headers:
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key] = rest.split(";", 1)[0]
        self.last = response
        if (
            self.checks_time_format
            and urlsplit(url).path.startswith(EDITOR_PAGES)
            and (response.header("content-type") or "").startswith("text/html")
        ):
            # Every page an editor is shown writes time one way (tests/support/time_format.py).
            assert_one_time_format(response.body.decode(), f"{method} {url}")
        found = re.search(rb'name="csrf_token" value="([^"]+)"', response.body)
        if found:
            self.csrf_token = found.group(1).decode()
        pins: dict[str, str] = {}  # the create form's, before any re-pin form
        for name, value in re.findall(
            rb'name="((?:published_)?version_id)" value="([^"]*)"', response.body
        ):
            pins.setdefault(name.decode(), value.decode())
        if pins:
            self.pins = pins
        return response

    async def get(self, url: str) -> Response:
        return await self._send("GET", url, {"sec-fetch-site": "none"})

    async def post(
        self,
        url: str,
        fields: dict[str, str],
        *,
        origin: str | None = "null",
        site: str | None = "same-origin",
    ) -> Response:
        return await self.post_pairs(url, list(fields.items()), origin=origin, site=site)

    def create_form(self, **fields: str) -> dict[str, str]:
        """The content page's create form as last shown: a publish on Thu 2 Jul 2026, 09:00
        Paris time, with `fields` instead."""
        defaults = {"transition": "publish:published", "local_time": "2026-07-02T09:00"}
        sent = {"csrf_token": self.csrf(), **self.pins, **defaults, "timezone": "Europe/Paris"}
        return {**sent, **fields}

    async def create(self, installation_id: str, **fields: str) -> Response:
        """Press Schedule on the content page (`create_form` with `fields`)."""
        url = f"/installations/{installation_id}/schedules"
        return await self.post(url, self.create_form(**fields))

    async def post_pairs(
        self,
        url: str,
        fields: list[tuple[str, str]],
        *,
        origin: str | None = "null",
        site: str | None = "same-origin",
    ) -> Response:
        """A form whose fields may repeat (a group of checkboxes)."""
        headers = {"content-type": "application/x-www-form-urlencoded"}
        if origin is not None:
            headers["origin"] = origin
        if site is not None:
            headers["sec-fetch-site"] = site
        return await self._send("POST", url, headers, urlencode(fields).encode())

    async def cancel(self, installation_id: str, schedule_id: str, back: str = "") -> Response:
        """Cancel as a person does: the card's Cancel link leads to the confirmation page
        (`back`: the view's query, as the link carries it), whose form posts the cancel."""
        base = f"/installations/{installation_id}/schedules/{schedule_id}/cancel"
        confirm = await self.get(base + back)
        assert confirm.status == 200, confirm.body[:500]
        form = confirm.body.decode().split('class="cancel-confirm"', 1)[1].split("</form>", 1)[0]
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))
        return await self.post(base, {k: html.unescape(v) for k, v in fields.items()})

    async def follow(self, response: Response) -> Response:
        location = response.header("location")
        assert location, "not a redirect"
        return await self.get(location)

    def page(self) -> str:
        assert self.last is not None
        return self.last.body.decode()

    def shown(self) -> dict[str, str]:
        """The versions the last content page showed, as its create form sends them."""
        assert self.pins, "no content page with a create form seen yet"
        return dict(self.pins)

    def csrf(self) -> str:
        """The CSRF token of the last page that had a form."""
        assert self.csrf_token, "no page with a form seen yet"
        return self.csrf_token


def schedules_on(html: str) -> list[dict[str, str]]:
    """Each listed schedule's data attributes."""
    items = []
    for tag in re.findall(r"<li class=\"schedule[^\"]*\"[^>]*>", html):
        attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', tag))
        items.append(attrs)
    return items


def card(html: str, schedule_id: str) -> str:
    """One schedule's card on a page."""
    found = re.search(rf'<li class="schedule[^"]*" id="schedule-{schedule_id}".*?</li>', html, re.S)
    assert found, f"no card for {schedule_id}"
    return found.group(0)


def words(page: str) -> str:
    """What a person reads: tags dropped, entities decoded, white space folded."""
    said = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
    return re.sub(r" ([.,;:)])", r"\1", said)


def next_steps(page: str) -> dict[str, str]:
    """An error page's ways on (`retry`, `back`, `dee-wan`, `about`) → where each leads."""
    found = re.findall(r'<a [^>]*href="([^"]+)" data-next="([^"]+)"', page)
    return {name: html.unescape(href) for href, name in found}


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


# -- schedules made through the page's form, and ticks at chosen instants ----------


def local(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M")


async def schedule(
    world: World,
    installation: Installation,
    content_id: str = "cnt_en",
    *,
    in_minutes: int = 5,
    transition: str = "publish:published",
) -> dict[str, Any]:
    """Create a schedule through the page's form, due `in_minutes` from now (whole minutes, UTC)."""
    browser = await world.browser_for(installation, content_id=content_id)
    await browser.get(f"/installations/{installation.id}")
    due = (world.clock.now_ms() // MINUTE + in_minutes) * MINUTE
    browser.shown()  # the page's form was seen
    fields = {"transition": transition, "local_time": local(due), "timezone": "UTC"}
    response = await browser.create(installation.id, **fields)
    assert response.status == 303, response.body[:400]
    sid = (response.header("location") or "").rsplit("=", 1)[1]
    return await row(world, sid)


async def stored(world: World) -> list[dict[str, Any]]:
    """Every schedule row, oldest first."""
    found = await world.db.prepare("SELECT * FROM schedules ORDER BY created_at, revision").all()
    return found.results


async def row(world: World, sid: str) -> dict[str, Any]:
    found = await world.db.prepare("SELECT * FROM schedules WHERE id = ?").bind(sid).first()
    assert found is not None
    return found


async def session_csrf(world: World, person_id: str) -> str:
    """The CSRF token of `person_id`'s session, for posting where the page offers no form."""
    found = (
        await world.db.prepare("SELECT csrf_token FROM sessions WHERE person_id = ?")
        .bind(person_id)
        .first()
    )
    assert found is not None, f"no session for {person_id}"
    return str(found["csrf_token"])


async def attempts(world: World, sid: str) -> list[dict[str, Any]]:
    result = (
        await world.db.prepare(
            "SELECT attempt, started_at, finished_at, code, http_status FROM schedule_attempts"
            " WHERE schedule_id = ? ORDER BY attempt"
        )
        .bind(sid)
        .all()
    )
    return result.results


def sends(world: World, schedule_row: dict[str, Any]) -> list[Any]:
    return [
        c
        for c in world.core.calls.of("transitions")
        if c.header("Idempotency-Key") == schedule_row["idempotency_key"]
    ]


async def bulk_due(
    world: World, installation: Installation, count: int, due_at: int, prefix: str
) -> None:
    """Many due rows for one installation (each on its own content in fake_core), straight
    into the table."""
    for i in range(count):
        content_id = f"{prefix}{i}"
        world.core.state.add_content(content_id, f"Item {i}")
        group = world.core.state.group_of(content_id)
        await insert_due(
            world.db,
            installation.id,
            content_id,
            due_at,
            version_id=group.current_version_id,
            workflow_revision=group.revision,
        )


async def insert_due(
    db: Any,
    installation_id: str,
    content_id: str,
    due_at: int,
    *,
    version_id: str = "ver_1",
    workflow_revision: int = 1,
) -> None:
    """One pending publish due at `due_at`, straight into the table."""
    await (
        db.prepare(
            "INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,"
            " workflow_revision, revision, idempotency_key, due_at, timezone, local_time, status,"
            " next_attempt_at, requested_by, requested_by_name, created_at, updated_at)"
            " VALUES (?, ?, ?, 'publish', 'published', ?, ?, 1, ?, ?, 'UTC', '2026-07-01T10:05',"
            " 'pending', ?, 'usr_editor', 'Ada', 0, 0)"
        )
        .bind(
            f"sch_{content_id}",
            installation_id,
            content_id,
            version_id,
            workflow_revision,
            f"sched:{installation_id}:sch_{content_id}:r1",
            due_at,
            due_at,
        )
        .run()
    )


async def tick_at(world: World, ms: int) -> dict[str, int]:
    world.clock.now = ms
    return await world.app.tick(ms)


async def until_sent(world: World, *, before: asyncio.Future[Any] | None = None) -> None:
    """Return once core has received a transition command (see `waiting.until`)."""
    await until(
        lambda: world.core.calls.of("transitions"), "a command reaching Dee Wan", before=before
    )


async def tick_until_sent(world: World, at: int) -> asyncio.Task[dict[str, int]]:
    """Start a tick and return once core has received its first command."""
    world.clock.now = at
    tick = asyncio.create_task(world.app.tick(at))
    await until_sent(world, before=tick)
    return tick


async def crash_during_send(world: World, at: int) -> None:
    """The runner dies after its claim committed and its command left: no settle happens."""
    tick = await tick_until_sent(world, at)
    tick.cancel()
    with pytest.raises(asyncio.CancelledError):
        await tick


def cron_tick_row(at: int) -> tuple[str, int]:
    """A good cron tick recorded at `at` (every count 0): the cron's last sign of life."""
    columns = ", ".join(REPORT_COLUMNS)
    values = ", ".join("0" for _ in REPORT_COLUMNS)
    sql = (
        f"INSERT INTO tick_history (at, kind, error, duration_ms, backlog, {columns})"
        f" VALUES (?, 'tick', NULL, 0, 0, {values})"
    )
    return sql, at

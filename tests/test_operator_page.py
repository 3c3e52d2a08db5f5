"""`GET /admin`, the operator page (issue 21): who may open it, over what, and what it shows
after a day of ticks (charts with text equivalents, the latest refusals, installations).

In-process; tests/test_browser_walk.py walks it in Chromium with axe at 1280 and 390 px.
"""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

import httpx
import pytest

from fake_core.transport import Handler, answered
from scheduling.domain.times import instant_text
from scheduling.domain.wording import explain
from scheduling.http.responses import BASE_HEADERS
from scheduling.ports import OutboundRequest, OutboundResponse, TransportError
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import ADMIN_SECRET, ORIGIN, FakeClock, base_env, body, call, make_app
from tests.support.day import DAY_MINUTES, FAILED, GAP, day_world, minute, play_day
from tests.support.runtimes import Runtime
from tests.support.world import MINUTE, World, bulk_due, row, tick_at

REALM = 'Basic realm="Scheduling operator", charset="UTF-8"'


def basic(password: str, user: str = "operator") -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"authorization": f"Basic {token}"}


BROWSER = {"accept": "text/html,application/xhtml+xml"}


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({}, "no Authorization header"),
        (basic("not-the-operator-secret"), "a wrong password"),
        (basic(ADMIN_SECRET[:-1]), "the secret less its last character"),
        ({"authorization": f"Bearer {ADMIN_SECRET}"}, "the bearer form"),
        (
            {"authorization": "Basic " + base64.b64encode(ADMIN_SECRET.encode()).decode()},
            "no colon",
        ),
        ({"authorization": "Basic !!!not-base64!!!"}, "not base64"),
        ({"authorization": "Basic " + base64.b64encode(b"op:\xff\xfe").decode()}, "not UTF-8"),
        ({"authorization": "Basic " + "QUFB" * 400}, "a header past its size"),
    ],
)
async def test_bad_or_missing_credentials_are_refused_with_a_basic_challenge(
    db: SqliteDatabase, clock: FakeClock, headers: dict[str, str], why: str
) -> None:
    app = make_app(db, clock)
    response = await call(app, "GET", "/admin", headers=headers)
    assert response.status == 401, why
    assert body(response)["code"] == "unauthorized"
    assert response.header("www-authenticate") == REALM
    page = await call(app, "GET", "/admin", headers={**headers, **BROWSER})
    assert page.status == 401
    assert 'data-error-code="unauthorized"' in page.body.decode()
    assert page.header("www-authenticate") == REALM
    assert ADMIN_SECRET not in page.body.decode()


async def test_any_user_name_with_the_secret_opens_the_page(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    app = make_app(db, clock)
    for user in ("operator", "", "ops@example.org", "Zoë"):
        response = await call(app, "GET", "/admin", headers=basic(ADMIN_SECRET, user))
        assert response.status == 200, user
    assert response.header("content-type") == "text/html; charset=utf-8"
    csp = response.header("content-security-policy") or ""
    assert "default-src 'none'" in csp
    assert "script-src" not in csp
    assert all(response.header(name) == value for name, value in BASE_HEADERS)
    html = response.body.decode()
    assert "<script" not in html
    assert ' style="' not in html  # no inline style: the CSP would refuse it
    assert ADMIN_SECRET not in html
    head = await call(app, "HEAD", "/admin", headers=basic(ADMIN_SECRET))
    assert (head.status, head.body) == (200, b"")


async def test_basic_over_plain_http_is_refused_outside_development(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    """Before any challenge: a browser is never asked for the secret over plain HTTP."""
    app = make_app(db, clock)
    for headers in ({}, basic(ADMIN_SECRET), basic("wrong")):
        response = await call(
            app, "GET", "/admin", headers=headers, origin="http://scheduling.example"
        )
        assert response.status == 403
        assert body(response)["code"] == "https_required"
        assert response.header("www-authenticate") is None
    assert "change ADMIN_SECRET" in body(response)["message"]  # it crossed unencrypted
    page = await call(app, "GET", "/admin", headers=BROWSER, origin="http://scheduling.example")
    assert 'data-error-code="https_required"' in page.body.decode()
    development = make_app(db, clock, env=base_env(ENVIRONMENT="development"))
    plain = await call(
        development, "GET", "/admin", headers=basic(ADMIN_SECRET), origin="http://localhost:8788"
    )
    assert plain.status == 200


async def test_a_plain_http_socket_is_refused_outside_development_whatever_the_headers_say(
    runtime: Runtime,
) -> None:
    """The local server's socket, or the Worker reached at http://localhost: plain HTTP,
    whatever a client claims in forwarding headers, so outside development the page is
    refused before any challenge; in development the Basic secret opens it."""
    claims = {"x-forwarded-proto": "https", "cf-visitor": '{"scheme":"https"}',
              "forwarded": "proto=https"}  # fmt: skip
    with runtime.vars(ENVIRONMENT="production", DEE_WAN_DEV_ORIGINS=None):
        async with runtime.served() as base, httpx.AsyncClient(base_url=base) as client:
            plain = await client.get("/admin", headers={**basic(ADMIN_SECRET), **claims})
    assert (plain.status_code, plain.json()["code"]) == (403, "https_required"), plain.text
    assert "www-authenticate" not in plain.headers
    with runtime.vars(ENVIRONMENT="development", ADMIN_SECRET=ADMIN_SECRET):
        async with runtime.served() as base, httpx.AsyncClient(base_url=base) as client:
            asked = await client.get("/admin", headers=BROWSER)
            assert (asked.status_code, asked.headers["www-authenticate"]) == (401, REALM)
            page = await client.get("/admin", headers={**basic(ADMIN_SECRET), **claims})
            assert page.status_code == 200, page.text[:300]
            assert page.text.count('role="img"') == 8
            assert "default-src 'none'" in page.headers["content-security-policy"]
            assert (await client.get("/admin", headers=basic("wrong"))).status_code == 401


async def test_a_misconfigured_secret_lets_nobody_in(db: SqliteDatabase, clock: FakeClock) -> None:
    app = make_app(db, clock, env=base_env(ADMIN_SECRET=None))
    response = await call(app, "GET", "/admin", headers=basic(""))
    assert (response.status, body(response)["code"]) == (500, "misconfigured")


class Page(HTMLParser):
    """The ids, the SVG charts and the tables of a page, as a screen reader meets them."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.ids: dict[str, str] = {}
        self.svgs: list[dict[str, str]] = []
        self.tables: list[str] = []
        self._id_stack: list[str | None] = []
        self._text: dict[str, list[str]] = {}
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "svg" and found.get("role") == "img":
            self.svgs.append(found)
        if tag == "table":
            self.tables.append(found.get("data-table", ""))
        if "id" in found:
            self._text[found["id"]] = []
        self._id_stack.append(found.get("id"))

    def handle_endtag(self, tag: str) -> None:
        if self._id_stack:
            ident = self._id_stack.pop()
            if ident is not None:
                self.ids[ident] = " ".join("".join(self._text.pop(ident)).split())

    def handle_data(self, data: str) -> None:
        for parts in self._text.values():
            parts.append(data)


def every_chart_is_named_and_described(page: Page) -> None:
    """Two windows of four charts, each an <svg role="img"> named and described by text."""
    names = [svg["aria-labelledby"] for svg in page.svgs]
    assert names == [
        f"{window}-{chart}-title"
        for window in ("day", "week")
        for chart in ("lateness", "backlog", "sends", "cron")
    ]
    for svg in page.svgs:
        assert page.ids[svg["aria-labelledby"]]
        summary = page.ids[svg["aria-describedby"]]
        assert len(summary) > 20, summary
    assert page.ids["day-lateness-title"] == "Send lateness"
    assert (
        "The lateness cap is 5 min. 1 failed tick, marked in red."
        in page.ids["day-lateness-summary"]
    )
    assert "At most" in page.ids["day-backlog-summary"]
    assert page.ids["day-sends-summary"].startswith(
        "126 commands sent: 122 completed, 3 to be retried, 1 refused."
    )
    assert "10 minutes had no tick" in page.ids["day-cron-summary"]
    assert "up to 20 s late" in page.ids["day-cron-summary"]


def the_latest_refusals_and_the_installations(html: str) -> None:
    """The latest refusals, newest first: words first, the code after them for support, and
    which limit ended a retry_exhausted one; the installations, the shop first."""
    rows_ = re.findall(r'<tr data-code="([a-z_]+)"([^>]*)>(.*?)</tr>', html)
    assert [code for code, _, _ in rows_] == ["retry_exhausted", "scheduled_target_stale"]
    assert 'data-ended-by="lateness"' in rows_[0][1]
    exhausted = rows_[0][2]
    why = '<td class="why" data-label="Why">'
    assert f"{why}It was still not sent 5 minutes after its time had passed" in exhausted
    assert "(code retry_exhausted)" in exhausted
    assert f"{why}{explain('scheduled_target_stale')}" in rows_[1][2]
    assert "The latest 2 schedules refused, across installations, newest first" in html
    assert re.search(
        r'<td class="when" data-label="Refused at">Wed 1 Jul 2026, \d\d:\d\d:\d\d UTC</td>', html
    )
    # Installations: the shop (a live schedule, two refusals) first.
    rows = re.findall(r'<tr data-installation="([^"]+)">(.*?)</tr>', html)
    assert len(rows) == 2
    assert re.findall(r"<td>(\d+)</td><td>(\d+)</td>", rows[0][1]) == [("1", "2")]
    assert "2026-07-01 15:10 UTC" in rows[0][1]  # its last send, the gap's second schedule


async def test_after_a_day_the_page_shows_every_chart_with_its_text_and_the_tables(
    db: SqliteDatabase,
) -> None:
    world = day_world(db)
    await play_day(world)
    world.clock.now = minute(DAY_MINUTES) + 30_000
    response = await call(world.app, "GET", "/admin", headers=basic(ADMIN_SECRET))
    assert response.status == 200
    html = response.body.decode()
    page = Page(html)

    every_chart_is_named_and_described(page)
    # The failed tick and the gap are drawn in both windows.
    assert html.count('class="failed"') >= 2
    assert html.count('<rect class="gap"') >= 2
    # The same numbers as tables: the failed tick's slot and the gap's are rows.
    assert page.tables == [
        "refusals",
        "installations",
        "day-slots",
        "day-lateness",
        "week-slots",
        "week-lateness",
    ]
    # (a slot's label is its UTC start: the day starts at 10:00)
    assert minute(FAILED) == minute(0) + 200 * 60_000
    assert re.search(r'<tr class="failed-row"><th scope="row">2026-07-01 13:20</th>', html)
    assert re.search(
        r"<th scope=\"row\">2026-07-01 15:00</th><td>0</td><td>0</td><td>10</td>", html
    )
    assert minute(GAP[0]) == minute(0) + 300 * 60_000  # 15:00, the shaded slot above

    the_latest_refusals_and_the_installations(html)


async def test_a_new_plugin_shows_empty_charts_that_say_so(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    app = make_app(db, clock)
    response = await call(app, "GET", "/admin", headers=basic(ADMIN_SECRET))
    html = response.body.decode()
    assert "No tick has run yet; nothing is due." in html
    assert "Nothing was sent." in html
    assert "No tick was recorded." in html
    assert "No schedule has been refused." in html
    assert "No installation yet." in html
    assert ORIGIN not in html


def down_for(world: World, installation_id: str) -> Handler:
    """The fake Dee Wan, refusing every connection of one installation's sends."""
    core, down = world.http.handler, f"sched:{installation_id}:"

    async def answer(request: OutboundRequest) -> OutboundResponse:
        if request.headers.get("idempotency-key", "").startswith(down):
            raise TransportError("connection refused")
        return await answered(core, request)

    return answer


async def test_an_installations_dee_wan_down_is_shown_first_since_when_with_its_retries(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    """Issue 45 item 16: with one installation's Dee Wan down, the page said Running and
    counted "1 retrying". It says whose Dee Wan is failing and since when, with each schedule
    that will try again, its next try and its last try's answer, before any chart."""
    world = World(db, clock)
    shop, blog = await world.install(), await world.install()
    core = world.http.handler
    world.http.handler = down_for(world, blog.id)
    due = clock.now_ms() + MINUTE
    await bulk_due(world, blog, 2, due, "blog")
    await bulk_due(world, shop, 1, due, "shop")
    await tick_at(world, due)
    retry = await row(world, "sch_blog0")
    assert retry["status"] == "retrying"
    await tick_at(world, retry["next_attempt_at"])
    world.clock.now = due + MINUTE  # the ticks go on, every minute
    response = await call(world.app, "GET", "/admin", headers=basic(ADMIN_SECRET))
    html = response.body.decode()
    runner = re.search(r"<dt>Runner</dt><dd>(.*?)</dd>", html)
    assert runner is not None
    assert runner.group(1) == (
        "Running, but the Dee Wan of 1 installation is failing: see Needs attention, below."
    )
    [(failing, block)] = re.findall(
        r'<div class="failing" data-failing="([^"]+)">(.*?)</div>', html, re.S
    )
    assert failing == blog.id
    words = " ".join(re.sub(r"<[^>]+>", "", block).split())
    assert (
        f"its Dee Wan has failed since {instant_text(due, 'UTC', seconds=True)} (1 min ago)"
        in words
    )
    assert "2 schedules will try again:" in words
    items = re.findall(r'<li data-schedule="([^"]+)">(.*?)</li>', block, re.S)
    assert [sid for sid, _ in items] == ["sch_blog0", "sch_blog1"]
    for sid, item in items:
        told = " ".join(re.sub(r"<[^>]+>", "", item).split())
        stored = await row(world, sid)
        next_try = instant_text(stored["next_attempt_at"], "UTC", seconds=True)
        assert told.startswith(f"Publish version {stored['version_id']} of content {sid[4:]}, due")
        assert (
            f"; try 3 at {next_try}. Last try: {explain('network_error')} (code network_error)"
            in told
        )
    assert html.index('id="attention"') < html.index("data-chart=")
    assert html.index('id="refusals"') < html.index("data-chart=")
    assert "No installation's Dee Wan is failing" not in html
    # Once it answers again, nothing is failing.
    world.http.handler = core
    retries = [(await row(world, sid))["next_attempt_at"] for sid in ("sch_blog0", "sch_blog1")]
    await tick_at(world, max(retries))
    html = (await call(world.app, "GET", "/admin", headers=basic(ADMIN_SECRET))).body.decode()
    assert "No installation's Dee Wan is failing: every schedule's last try was answered." in html
    assert "<dt>Runner</dt><dd>Running.</dd>" in html

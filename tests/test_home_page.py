"""The plugin's own `/`: what it is and where to go, with no session, no secret, no data."""

from __future__ import annotations

import re

import httpx

from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import ADMIN_SECRET, ORIGIN, TOKEN_KEY, FakeClock
from tests.support.runtimes import Runtime
from tests.support.world import World

CORE = "http://localhost:8787"
PRODUCTION = {"ENVIRONMENT": "production", "DEE_WAN_DEV_ORIGINS": None}


async def home(runtime: Runtime, method: str = "GET", accept: str = "text/html") -> httpx.Response:
    async with runtime.http() as http:
        return await http.request(method, "/", headers={"accept": accept})


async def test_it_says_what_this_is_and_where_to_go(runtime: Runtime) -> None:
    with runtime.vars(**PRODUCTION):
        response = await home(runtime)
    assert response.status_code == 200
    html = response.text
    assert "<h1>Scheduling for Dee Wan</h1>" in html
    assert "There is nothing at this address" not in html
    assert "press <strong>Schedule</strong>" in html
    assert "a site admin opens <strong>Scheduling</strong>" in html
    assert "<code>GET /admin/status</code>" in html
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    # A deployment names no local Dee Wan.
    assert "In development" not in html


async def test_it_carries_the_security_headers_and_no_script(runtime: Runtime) -> None:
    response = await home(runtime)
    headers = response.headers
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["content-security-policy"].startswith("default-src 'none';")
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["cache-control"] == "no-store"
    assert "set-cookie" not in headers
    assert "<script" not in response.text


async def test_head_answers_without_a_body_and_post_is_refused(runtime: Runtime) -> None:
    head = await home(runtime, "HEAD")
    assert (head.status_code, head.content) == (200, b"")
    posted = await home(runtime, "POST", accept="application/json")
    assert (posted.status_code, posted.headers.get("allow")) == (405, "GET, HEAD")


async def test_in_development_it_links_the_local_dee_wan(runtime: Runtime) -> None:
    with runtime.vars(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=f"{CORE},http://127.0.0.1:9"):
        html = (await home(runtime)).text
    links = re.findall(r'<a href="([^"]+)">', html)
    assert links == [f"{CORE}/", "http://127.0.0.1:9/"]
    assert "In development, the local Dee Wan:" in html


async def test_it_shows_nothing_of_an_installation_or_a_secret(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    world = World(db, clock)
    installation = await world.install()
    browser = await world.browser_for(installation)  # a session exists: the page ignores it
    response = await browser.get(f"{ORIGIN}/")
    html = response.body.decode()
    assert response.status == 200
    for private in (installation.id, installation.token, ADMIN_SECRET, TOKEN_KEY, "Spring launch"):
        shown = private in html  # a bare bool: a failure must not print a secret
        assert not shown
    assert "Opened from Dee Wan by" not in html

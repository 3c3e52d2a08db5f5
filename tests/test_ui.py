"""The management pages end to end against fake_core: launch, page, create, supersede, cancel,
manage."""

from __future__ import annotations

import hashlib
import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from scheduling.domain.secrets import delegation
from tests.support.app import ORIGIN, OTHER_TOKEN_KEY, FakeClock
from tests.support.runtimes import Runtime
from tests.support.world import Browser, World, schedules_on, session_csrf, words

# -- launch ----------------------------------------------------------------


async def test_launch_sets_a_host_cookie_and_stores_only_hashes_and_sealed_values(
    runtime: Runtime,
) -> None:
    installation_id = await runtime.install()
    path = runtime.launch_path(installation_id, content_id=runtime.content)
    async with runtime.http() as http:
        response = await http.get(path)
    assert response.status_code == 303
    # The launch's page, addressed by its public handle (a tab of its own), and two cookies
    # of one value: the latest launch's and the one named for the handle.
    location = response.headers["location"]
    tab = location.removeprefix(f"/installations/{installation_id}?tab=")
    assert re.fullmatch(r"[A-Za-z0-9_-]{12}", tab), location
    cookies = response.headers.get_list("set-cookie")
    assert [c.split("=", 1)[0] for c in cookies] == [
        "__Host-scheduling_session",
        f"__Host-scheduling_tab_{tab}",
    ]
    assert len({c.split("=", 1)[1].split(";")[0] for c in cookies}) == 1
    code = parse_qs(urlsplit(path).query)["dee_wan_launch"][0]
    for cookie in cookies:
        for attribute in ("Path=/", "Secure", "HttpOnly", "SameSite=Lax"):
            assert attribute in cookie
        assert "Domain" not in cookie
        assert code not in cookie
    assert response.headers["referrer-policy"] == "no-referrer"
    raw = cookies[0].split(";", 1)[0].split("=", 1)[1]
    id_hash = hashlib.sha256(raw.encode()).hexdigest()
    [row] = await runtime.rows("SELECT * FROM sessions WHERE installation_id = ?", installation_id)
    assert (row["id_hash"], row["context_kind"]) == (id_hash, "content")
    assert (row["content_id"], row["person_id"]) == (runtime.content, "usr_editor")
    assert raw not in json.dumps(row)
    assert "dwd_" not in json.dumps(row)
    context = delegation(installation_id, id_hash)
    assert (await runtime.unsealed(row["delegation_sealed"], context)).startswith("dwd_")


async def test_a_launch_code_works_once(world: World) -> None:
    installation = await world.install()
    launch = world.core.issue_launch(installation.id, "usr_editor", {"kind": "manage"})
    assert (await Browser(world.app).get(launch.url)).status == 303
    again = await Browser(world.app).get(launch.url)
    assert again.status == 401
    assert launch.code not in again.body.decode()
    assert 'data-error-code="launch_not_found"' in again.body.decode()
    assert again.header("set-cookie") is None


@pytest.mark.parametrize("code", ["dwl_short", "nope", "dwl_" + "a" * 42 + "!"])
async def test_malformed_launch_codes_are_refused_before_any_call(world: World, code: str) -> None:
    installation = await world.install()
    calls_before = len(world.core.calls.calls)
    response = await Browser(world.app).get(
        f"/installations/{installation.id}?dee_wan_launch={code}"
    )
    assert response.status == 400
    assert code not in response.body.decode()
    assert len(world.core.calls.calls) == calls_before


async def test_expired_launch_code_gives_an_error_page_and_no_session(
    world: World, clock: FakeClock
) -> None:
    installation = await world.install()
    launch = world.core.issue_launch(installation.id, "usr_editor", {"kind": "manage"})
    clock.advance(61_000)
    response = await Browser(world.app).get(launch.url)
    assert response.status == 401
    assert response.header("set-cookie") is None
    assert await world.db.prepare("SELECT count(*) AS n FROM sessions").first() == {"n": 0}


async def test_launch_for_another_installation_is_refused(world: World) -> None:
    first = await world.install()
    second = await world.install()
    launch = world.core.issue_launch(first.id, "usr_editor", {"kind": "manage"})
    response = await Browser(world.app).get(
        f"/installations/{second.id}?dee_wan_launch={launch.code}"
    )
    assert response.status == 401
    assert response.header("set-cookie") is None


async def test_unreadable_token_is_explained(world: World, clock: FakeClock) -> None:
    from tests.support.app import base_env, make_app

    installation = await world.install()
    other_key = OTHER_TOKEN_KEY
    world.app = make_app(world.db, clock, env=base_env(TOKEN_KEY=other_key))
    launch = world.core.issue_launch(installation.id, "usr_editor", {"kind": "manage"})
    response = await Browser(world.app).get(launch.url)
    assert response.status == 503
    assert 'data-error-code="token_unreadable"' in response.body.decode()
    assert "rotate it in Dee Wan" in response.body.decode()


# -- the content page ----------------------------------------------------------


async def test_content_page_shows_content_pins_form_and_headers(world: World) -> None:
    installation = await world.install()
    browser = await world.browser_for(installation)
    page = await browser.get(f"/installations/{installation.id}")
    assert page.status == 200
    html = page.body.decode()
    group = world.core.state.group_of("cnt_en")
    assert "Spring launch" in html
    assert f"Publish version {group.current_version_id}" in html
    assert 'name="local_time"' in html
    assert 'value="Europe/Paris"' in html
    csp = page.header("content-security-policy") or ""
    assert "frame-ancestors 'none'" in csp
    assert "script-src" not in csp
    assert "default-src 'none'" in csp
    assert page.header("cache-control") == "no-store"
    assert page.header("x-content-type-options") == "nosniff"
    assert "<script" not in html


async def test_no_expired_or_foreign_session_asks_to_relaunch(
    world: World, clock: FakeClock
) -> None:
    first = await world.install()
    second = await world.install()
    assert (await Browser(world.app).get(f"/installations/{first.id}")).status == 401
    browser = await world.browser_for(first)
    foreign = await browser.get(f"/installations/{second.id}")
    assert foreign.status == 403
    assert "Open Scheduling again from Dee Wan" in foreign.body.decode()
    clock.advance(30 * 60 * 1000)
    assert (await browser.get(f"/installations/{first.id}")).status == 401


async def test_title_with_markup_is_escaped(world: World) -> None:
    world.core.state.add_content("cnt_xss", "<script>alert(1)</script>", model="article")
    installation = await world.install()
    browser = await world.browser_for(installation, content_id="cnt_xss")
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


# -- creating: every row of the Time table through the form -----------------------


# A created time is confirmed in the one way of writing an instant.
TIME_CASES = [
    (
        {"local_time": "2026-07-01T09:00", "timezone": "America/New_York"},
        303,
        "Wed 1 Jul 2026, 09:00 EDT (America/New_York; 13:00 UTC)",
    ),
    (
        {"local_time": "2026-03-29T02:30", "timezone": "Europe/Berlin"},
        422,
        "nonexistent_local_time",
    ),
    ({"local_time": "2026-10-25T02:30", "timezone": "Europe/Berlin"}, 422, "ambiguous_local_time"),
    (
        {"local_time": "2026-10-25T02:30", "timezone": "Europe/Berlin", "fold": "earlier"},
        303,
        "Sun 25 Oct 2026, 02:30 CEST (Europe/Berlin; 00:30 UTC)",
    ),
    (
        {"local_time": "2026-10-25T02:30", "timezone": "Europe/Berlin", "fold": "later"},
        303,
        "Sun 25 Oct 2026, 02:30 CET (Europe/Berlin; 01:30 UTC)",
    ),
    ({"local_time": "2026-07-01T09:00", "timezone": "Mars/Base"}, 422, "unknown_timezone"),
    ({"local_time": "2025-12-31T23:59", "timezone": "UTC"}, 422, "past_time"),
    ({"local_time": "tomorrow", "timezone": "UTC"}, 422, "invalid_local_time"),
]


@pytest.mark.parametrize(("fields", "status", "expected"), TIME_CASES)
async def test_time_table_through_the_form(
    world: World, fields: dict[str, str], status: int, expected: str
) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    response = await browser.create(installation.id, **fields)
    assert response.status == status, response.body[:300]
    if status == 303:
        page = await browser.follow(response)
        html = page.body.decode()
        assert "data-confirmation" in html
        assert expected in html
        # After a create, the form offers the zone just used.
        assert re.search(rf'name="timezone"[^>]*value="{fields["timezone"]}"', html)
    else:
        html = response.body.decode()
        assert f'data-error-code="{expected}"' in html
        assert f'value="{fields["local_time"]}"' in html  # the input is kept
        assert 'aria-invalid="true"' in html or 'aria-describedby="form-error"' in html
        assert await world.db.prepare("SELECT count(*) AS n FROM schedules").first() == {"n": 0}


async def test_created_schedule_stores_pins_revision_and_key(world: World) -> None:
    installation = await world.install()
    browser = await world.browser_for(installation, content_id="cnt_fr")  # a translation
    await browser.get(f"/installations/{installation.id}")
    response = await browser.create(
        installation.id, local_time="2026-07-01T09:00", timezone="America/New_York"
    )
    assert response.status == 303
    row = await world.db.prepare("SELECT * FROM schedules").first()
    assert row is not None
    group = world.core.state.group_of("cnt_en")
    assert row["content_id"] == "cnt_en"  # stored against the primary
    assert row["version_id"] == group.current_version_id
    assert row["workflow_revision"] == group.revision
    assert row["revision"] == 1
    assert row["idempotency_key"] == f"sched:{installation.id}:{row['id']}:r1"
    assert (row["timezone"], row["local_time"], row["fold"]) == (
        "America/New_York",
        "2026-07-01T09:00",
        None,
    )
    assert row["due_at"] == 1_782_910_800_000
    assert (row["status"], row["requested_by"]) == ("pending", "usr_editor")


async def test_unpublish_pins_the_published_version(world: World) -> None:
    installation = await world.install()
    browser = await world.browser_for(installation, content_id="cnt_pub")
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    group = world.core.state.group_of("cnt_pub")
    assert f"Unpublish published version {group.published_version_id}" in html
    response = await browser.create(installation.id, transition="unpublish:draft")
    assert response.status == 303
    row = await world.db.prepare("SELECT kind, to_state, version_id FROM schedules").first()
    assert row == {
        "kind": "unpublish",
        "to_state": "draft",
        "version_id": group.published_version_id,
    }


async def test_transition_must_be_one_the_person_may_take(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    for value in ("unpublish:draft", "publish:archived", "delete:gone", ""):
        response = await browser.create(installation.id, transition=value)
        assert response.status == 422
        assert 'data-error-code="transition_not_allowed"' in response.body.decode()
    viewer = await world.browser_for(installation, person="usr_viewer")
    html = (await viewer.get(f"/installations/{installation.id}")).body.decode()
    assert "nothing to schedule" in html
    viewer.csrf_token = await session_csrf(world, "usr_viewer")
    viewer.pins = browser.shown()  # what the editor's page showed: the same content
    response = await viewer.create(installation.id)
    assert response.status == 422


async def test_a_running_schedule_blocks_a_new_one(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    await browser.create(installation.id)
    await world.db.prepare(
        "UPDATE schedules SET status = 'running', next_attempt_at = NULL,"
        " lease_token = 'l', lease_until = 1"
    ).run()
    said = words((await browser.get(f"/installations/{installation.id}")).body.decode())
    assert "is being sent to Dee Wan right now; a new one can be made once it is done" in said
    response = await browser.create(installation.id, local_time="2026-07-05T09:00")
    assert response.status == 409
    assert 'data-error-code="execution_in_progress"' in response.body.decode()
    rows = (await world.db.prepare("SELECT status FROM schedules").all()).results
    assert rows == [{"status": "running"}]


async def test_manage_session_cannot_create(world: World) -> None:
    installation = await world.install()
    editor = await world.open_page(installation)
    assert (await editor.create(installation.id)).status == 303
    await world.db.prepare("DELETE FROM schedules").run()
    browser = await world.browser_for(installation, content_id=None)
    page = await browser.get(f"/installations/{installation.id}")
    assert 'name="local_time"' not in page.body.decode()
    browser.csrf_token = (
        await world.db.prepare(
            "SELECT csrf_token FROM sessions WHERE context_kind = 'manage'"
        ).first()
        or {}
    )["csrf_token"]
    response = await browser.create(installation.id)
    assert response.status == 403
    assert 'data-error-code="manage_cannot_create"' in response.body.decode()
    assert await world.db.prepare("SELECT count(*) AS n FROM schedules").first() == {"n": 0}


# -- CSRF and origin ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("origin", "site", "token_ok", "allowed"),
    [
        (ORIGIN, "same-origin", True, True),
        ("null", "same-origin", True, True),  # what Chromium sends under no-referrer
        (ORIGIN, None, True, True),
        ("https://evil.example", "cross-site", True, False),
        ("null", "cross-site", True, False),
        ("null", None, True, False),
        (None, None, True, False),
        ("https://evil.example", None, True, False),
        (ORIGIN, "same-site", True, False),
        (ORIGIN, "same-origin", False, False),
    ],
)
async def test_posts_need_our_origin_and_the_session_csrf_token(
    world: World, origin: str | None, site: str | None, token_ok: bool, allowed: bool
) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    fields = browser.create_form()
    if not token_ok:
        fields["csrf_token"] = "x" * 43
    response = await browser.post(
        f"/installations/{installation.id}/schedules", fields, origin=origin, site=site
    )
    assert (response.status == 303) is allowed, (response.status, response.body[:200])
    if not allowed:
        assert response.status == 403
    if not token_ok:  # a stale token (the session's is another): asked to reload
        assert "<title>Please reload the page" in response.body.decode()


# -- cancel -----------------------------------------------------------------------------


async def test_cancel_pending_and_retrying_only(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    await browser.create(installation.id)
    sid = (await world.db.prepare("SELECT id FROM schedules").first() or {})["id"]
    page = await browser.get(f"/installations/{installation.id}")
    assert f"/schedules/{sid}/cancel" in page.body.decode()
    calls_before = len(world.core.calls.calls)
    response = await browser.post(
        f"/installations/{installation.id}/schedules/{sid}/cancel", {"csrf_token": browser.csrf()}
    )
    assert response.status == 303
    html = (await browser.follow(response)).body.decode()
    assert schedules_on(html)[0]["status"] == "cancelled"
    # Cancelling calls nothing but the content read of the page shown afterwards.
    assert all(c.endpoint == "content" for c in world.core.calls.calls[calls_before:])
    again = await browser.post(
        f"/installations/{installation.id}/schedules/{sid}/cancel", {"csrf_token": browser.csrf()}
    )
    assert again.status == 409
    assert 'data-error-code="not_cancellable"' in again.body.decode()


async def test_cancel_running_is_409_and_other_installation_404(world: World) -> None:
    installation = await world.install()
    other = await world.install()
    browser = await world.open_page(installation)
    await browser.create(installation.id)
    sid = (await world.db.prepare("SELECT id FROM schedules").first() or {})["id"]
    await world.db.prepare(
        "UPDATE schedules SET status = 'running', next_attempt_at = NULL,"
        " lease_token = 'l', lease_until = 1"
    ).run()
    response = await browser.post(
        f"/installations/{installation.id}/schedules/{sid}/cancel", {"csrf_token": browser.csrf()}
    )
    assert response.status == 409
    assert 'data-error-code="execution_in_progress"' in response.body.decode()
    other_browser = await world.open_page(other, None)
    other_browser.csrf_token = (
        await world.db.prepare("SELECT csrf_token FROM sessions WHERE installation_id = ?")
        .bind(other.id)
        .first()
        or {}
    )["csrf_token"]
    response = await other_browser.post(
        f"/installations/{other.id}/schedules/{sid}/cancel", {"csrf_token": other_browser.csrf()}
    )
    assert response.status == 404


async def test_content_session_cannot_cancel_other_contents_schedule(world: World) -> None:
    installation = await world.install()
    pub = await world.open_page(installation, "cnt_pub")
    assert (await pub.create(installation.id, transition="unpublish:draft")).status == 303
    sid = (await world.db.prepare("SELECT id FROM schedules").first() or {})["id"]
    en = await world.open_page(installation, "cnt_en")
    response = await en.post(
        f"/installations/{installation.id}/schedules/{sid}/cancel", {"csrf_token": en.csrf()}
    )
    assert response.status == 403


async def test_list_items_carry_data_attributes_and_plain_language(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    await browser.create(installation.id)
    await world.db.prepare(
        "UPDATE schedules SET status = 'refused', result_code = 'token_unreadable',"
        " next_attempt_at = NULL"
    ).run()
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    item = schedules_on(html)[0]
    assert (item["status"], item["result-code"]) == ("refused", "token_unreadable")
    assert "rotate it in Dee Wan" in html
    # The words first; the code only for support.
    words = "The installation&#39;s token can no longer be read — rotate it in Dee Wan."
    assert f"<dd>{words}</dd>" in html
    assert "code token_unreadable.</p>" in html
    assert "Thu 2 Jul 2026, 09:00 CEST (Europe/Paris; 07:00 UTC)" in html


@pytest.mark.parametrize(
    ("endpoint", "fault", "status", "code"),
    [
        ("exchange", "bad_json", 401, "untrusted_response"),
        ("exchange", "mismatch", 401, "untrusted_response"),
        # Dee Wan down or slow is temporary: 503 `dee_wan_unavailable`, never `untrusted_response`.
        ("exchange", "timeout", 503, "dee_wan_unavailable"),
        ("exchange", "server_error", 503, "dee_wan_unavailable"),
        ("content", "bad_json", 502, "untrusted_response"),
        ("content", "mismatch", 502, "untrusted_response"),
        ("content", "timeout", 503, "dee_wan_unavailable"),
        ("content", "server_error", 503, "dee_wan_unavailable"),
        ("content", "rate_limited", 503, "dee_wan_unavailable"),
    ],
)
async def test_untrusted_or_missing_answers_from_core_are_explained(
    world: World, endpoint: str, fault: str, status: int, code: str
) -> None:
    from fake_core import Fault

    installation = await world.install()
    faults = {
        "bad_json": Fault.bad_json(200),
        "mismatch": Fault.respond(403, "launch_exchanged"),
        "timeout": Fault.timeout(),
        "server_error": Fault.respond(503, "unavailable"),
        "rate_limited": Fault.respond(429, "rate_limited"),
    }
    launch = world.core.issue_launch(
        installation.id, "usr_editor", {"kind": "content", "content_id": "cnt_en"}
    )
    browser = Browser(world.app)
    if endpoint == "content":
        assert (await browser.get(launch.url)).status == 303
    world.core.faults.push(faults[fault], endpoint=endpoint)
    response = await browser.get(
        launch.url if endpoint == "exchange" else f"/installations/{installation.id}"
    )
    assert response.status == status
    assert f'data-error-code="{code}"' in response.body.decode()
    if endpoint == "exchange":
        assert response.header("set-cookie") is None


async def test_exchange_answer_for_another_installation_is_untrusted(world: World) -> None:
    from fake_core import Fault

    installation = await world.install()
    launch = world.core.issue_launch(installation.id, "usr_editor", {"kind": "manage"})
    forged = {
        "code": "launch_exchanged",
        "installation_id": "ins_other",
        "person": {"id": "usr_editor", "name": "Ada"},
        "context": {"kind": "manage"},
        "delegation": {"token": "dwd_" + "a" * 43, "expires_at": "2026-07-01T10:30:00Z"},
    }
    world.core.faults.push(
        Fault.respond(200, "launch_exchanged", body=json.dumps(forged).encode()),
        endpoint="exchange",
    )
    response = await Browser(world.app).get(launch.url)
    assert response.status == 401
    assert 'data-error-code="untrusted_response"' in response.body.decode()
    assert await world.db.prepare("SELECT count(*) AS n FROM sessions").first() == {"n": 0}


async def test_a_launch_in_another_tab_is_explained_not_blamed_on_csrf(world: World) -> None:
    installation = await world.install()
    browser = await world.browser_for(installation, content_id="cnt_en")
    page = (await browser.get(f"/installations/{installation.id}")).body.decode()
    assert 'name="opened_for" value="cnt_en"' in page
    fields = browser.create_form(opened_for="cnt_en")
    other = world.core.issue_launch(
        installation.id, "usr_editor", {"kind": "content", "content_id": "cnt_page"}
    )
    assert (await browser.get(other.url)).status == 303  # the second tab took the one cookie
    response = await browser.post(f"/installations/{installation.id}/schedules", fields)
    assert response.status == 409
    assert 'data-error-code="session_replaced"' in response.body.decode()
    assert await world.db.prepare("SELECT count(*) AS n FROM schedules").first() == {"n": 0}

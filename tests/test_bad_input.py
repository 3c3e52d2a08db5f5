"""Issue 12's reproductions through the public surface: each bad input gets a clear 4xx with a
code, and nothing is stored or consumed. (Base URLs are in test_activation.py; the local
runtime's Host, %2F, slow clients and /__scheduled in test_asgi.py.)"""

from __future__ import annotations

import json
import logging
import secrets
from typing import Any

import pytest

from scheduling.app import App
from scheduling.http.requests import Headers
from scheduling.http.responses import Response
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.activation import activation
from tests.support.app import OPERATOR, ORIGIN, body, call
from tests.support.runtimes import Runtime
from tests.support.scripted_core import ScriptedCore, answer, content_answer, exchange_answer
from tests.support.world import Browser, World

DEEP_ARRAY = b"[" * 20_000 + b"]" * 20_000
JSON = {"content-type": "application/json"}


async def count(db: SqliteDatabase, table: str) -> int:
    row = await db.prepare(f"SELECT count(*) AS n FROM {table}").first()
    return int(row["n"]) if row else 0


async def stored(db: SqliteDatabase) -> dict[str, int]:
    tables = ("installations", "activation_codes", "sessions", "schedules", "schedule_attempts")
    return {table: await count(db, table) for table in tables}


def code_of(response: Response) -> str:
    """The refusal's code, from the JSON body or the error page."""
    if (response.header("content-type") or "").startswith("application/json"):
        return str(body(response)["code"])
    text = response.body.decode()
    marker = 'data-error-code="'
    assert marker in text, text[:300]
    return text.split(marker, 1)[1].split('"', 1)[0]


# -- bodies ------------------------------------------------------------------------------


async def test_bodies_too_deep_or_over_64_kib_are_refused_and_use_up_no_code(
    runtime: Runtime,
) -> None:
    async with runtime.http() as http:
        minted = await http.post("/admin/activation-codes", headers=runtime.operator)
        runtime.installed.append(f"ins_{secrets.token_hex(6)}")
        payload = json.dumps(
            activation(minted.json()["code"], installation_id=runtime.installed[-1])
        )
        padded = payload.encode()[:-1] + b" " * (64 * 1024 - len(payload) + 1) + b"}"
        assert len(padded) == 64 * 1024 + 1
        for raw, says in (
            (DEEP_ARRAY, "nested deeper"),
            (b'{"a":' * 40 + b"1" + b"}" * 40, "nested deeper"),
            (b'{"protocol": "v1", "x": ' + b"[" * 33 + b"]" * 33 + b"}", "nested deeper"),
            (padded, "larger than 65536 bytes"),
        ):
            refused = await http.post("/dee-wan/activate", content=raw, headers=JSON)
            assert (refused.status_code, refused.json()["code"]) == (400, "invalid_request")
            assert says in refused.json()["message"]
        installed = "SELECT id FROM installations WHERE id = ?"
        assert await runtime.rows(installed, runtime.installed[-1]) == []
        # The code minted before is still unused, and 64 KiB exactly is fine.
        taken = await http.post("/dee-wan/activate", content=padded[:-2] + b"}", headers=JSON)
        assert taken.status_code == 201, taken.text


async def test_deep_json_is_refused_on_mint(app: App, db: SqliteDatabase) -> None:
    response = await call(app, "POST", "/admin/activation-codes", headers=OPERATOR, body=DEEP_ARRAY)
    assert (response.status, body(response)["code"]) == (400, "invalid_request")
    assert await count(db, "activation_codes") == 0


# -- the schedule form -------------------------------------------------------------------


def form(browser: Browser, **fields: str) -> dict[str, str]:
    return browser.create_form(opened_for="cnt_en", **fields)


async def content_browser(world: World) -> tuple[Browser, str]:
    installation = await world.install()
    browser = await world.open_page(installation)
    return browser, installation.id


async def test_a_form_with_more_than_50_fields_is_400_and_stores_nothing(world: World) -> None:
    browser, installation_id = await content_browser(world)
    fields = form(browser)
    fields.update({f"extra{n}": "x" for n in range(50 - len(fields))})
    assert len(fields) == 50
    before = await stored(world.db)
    response = await browser.post(
        f"/installations/{installation_id}/schedules", {**fields, "extra45": "x"}
    )
    assert response.status == 400
    assert code_of(response) == "invalid_request"
    assert "more than 50 fields" in response.body.decode()
    assert await stored(world.db) == before
    ok = await browser.post(f"/installations/{installation_id}/schedules", fields)
    assert ok.status == 303


async def test_a_query_with_more_than_50_fields_is_400(world: World) -> None:
    browser, installation_id = await content_browser(world)
    fields = "&".join(f"f{n}=x" for n in range(49))
    ok = await browser.get(f"/installations/{installation_id}?{fields}&zone=UTC")
    assert ok.status == 200
    response = await browser.get(f"/installations/{installation_id}?{fields}&zone=UTC&x=1")
    assert response.status == 400
    assert code_of(response) == "invalid_request"
    assert "more than 50 fields" in response.body.decode()


async def test_form_fields_are_decoded_as_browsers_encode_them(world: World) -> None:
    """The form reader decodes percent-escapes itself (in C passes): a zone's `%2F`, and `+`
    for a space (here a trailing one, which the form then strips)."""
    browser, installation_id = await content_browser(world)
    before = await stored(world.db)
    response = await browser.post(
        f"/installations/{installation_id}/schedules",
        form(browser, local_time="2026-07-02T09:00 ", timezone="Europe/Paris"),
    )
    assert response.status == 303, response.body[:300]
    location = response.header("location") or ""
    created = location.split("created=", 1)[1]
    row = (
        await world.db.prepare("SELECT timezone, local_time FROM schedules WHERE id = ?")
        .bind(created)
        .first()
    )
    assert row == {"timezone": "Europe/Paris", "local_time": "2026-07-02T09:00"}
    assert await count(world.db, "schedules") == before["schedules"] + 1


@pytest.mark.parametrize(
    ("local_time", "zone"),
    [
        ("0001-01-01T00:00", "Asia/Tokyo"),
        ("9999-12-31T23:59", "America/New_York"),
        ("2200-01-01T00:00", "UTC"),
        ("1969-12-31T23:59", "UTC"),
        ("２０２６-07-02T09:00", "UTC"),
        ("٢٠٢٦-٠٧-٠٢T٠٩:٠٠", "Europe/Paris"),
        ("2026-07-02T09:00²", "UTC"),
    ],
)
async def test_local_times_out_of_range_or_not_ascii_are_422(
    world: World, local_time: str, zone: str
) -> None:
    browser, installation_id = await content_browser(world)
    before = await stored(world.db)
    response = await browser.post(
        f"/installations/{installation_id}/schedules",
        form(browser, local_time=local_time, timezone=zone),
    )
    assert response.status == 422
    assert code_of(response) == "invalid_local_time"
    assert await stored(world.db) == before


async def test_the_last_accepted_year_is_2199(world: World) -> None:
    browser, installation_id = await content_browser(world)
    response = await browser.post(
        f"/installations/{installation_id}/schedules",
        form(browser, local_time="2199-12-31T23:59", timezone="Pacific/Kiritimati"),
    )
    assert response.status == 303


# -- launch, routes, errors --------------------------------------------------------------


async def test_head_on_a_launch_url_consumes_nothing(world: World) -> None:
    installation = await world.install()
    launch = world.core.issue_launch(
        installation.id, "usr_editor", {"kind": "content", "content_id": "cnt_en"}
    )
    browser = Browser(world.app)
    head = await browser._send("HEAD", launch.url, {})
    assert (head.status, head.body) == (401, b"")  # as the page answers without a session
    assert head.header("set-cookie") is None
    assert world.core.calls.of("exchange") == []
    assert await count(world.db, "sessions") == 0
    assert (await browser.get(launch.url)).status == 303  # the code still works
    again = await browser._send("HEAD", launch.url, {})
    assert (again.status, again.body) == (200, b"")  # now with the session, still no exchange
    assert len(world.core.calls.of("exchange")) == 1


async def test_not_found_is_a_page_for_browsers_and_json_for_clients(runtime: Runtime) -> None:
    async with runtime.http() as http:
        for path, accept, page in (
            ("/dee-wan%2Fmanifest.json", "*/*", False),  # %2F is no separator
            ("/installations/ins_1/nothing", "*/*", True),
            ("/installations", "text/html", True),
            ("/nothing.ico", "text/html,application/xhtml+xml", True),  # /favicon.ico: 204
            ("/nothing.ico", "*/*", False),
            ("/admin/nothing", "text/html", False),
            ("/dee-wan/nothing", "text/html", False),
        ):
            response = await http.get(path, headers={"accept": accept})
            assert response.status_code == 404, path
            is_page = response.headers["content-type"].startswith("text/html")
            assert is_page == page, path
            if page:
                assert 'data-error-code="not_found"' in response.text
                assert "<title>Not found · Scheduling</title>" in response.text
                assert response.headers["content-security-policy"]
            else:
                assert response.json()["code"] == "not_found"


async def test_anything_not_a_refusal_is_a_500_logged_once(
    world: World, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from scheduling.repository import schedules

    browser, installation_id = await content_browser(world)

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(schedules, "list_for", broken)
    with caplog.at_level(logging.ERROR, logger="scheduling"):
        response = await browser.get(f"/installations/{installation_id}")
    assert response.status == 500
    assert code_of(response) == "internal_error"
    assert "a bug" not in response.body.decode()
    assert [r.getMessage() for r in caplog.records if r.exc_info] == [
        f"unhandled error in GET /installations/{installation_id}"
    ]


def test_repeated_cookie_lines_join_with_semicolons() -> None:
    from scheduling.http.requests import Request

    headers = Headers(
        [("Cookie", "a=1"), ("cookie", "__Host-scheduling_session=s"), ("X-A", "1"), ("x-a", "2")]
    )
    request = Request("GET", f"{ORIGIN}/", headers)
    assert (request.cookie("a"), request.cookie("__Host-scheduling_session")) == ("1", "s")
    assert request.cookie("other") is None
    assert headers["x-a"] == "1, 2"


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("__Host-scheduling_session=s", "s"),
        ("a=1;__Host-scheduling_session=s ; b=2", "s"),
        ("  __Host-scheduling_session= s", " s"),
        ("__Host-scheduling_session=first; __Host-scheduling_session=second", "first"),
        ("x__Host-scheduling_session=no", None),
        ("a=x __Host-scheduling_session=no", None),
        ("a=x;__Host-scheduling_session", None),
        (";;;;" * 1000, None),
    ],
)
def test_the_session_cookie_is_read_as_browsers_write_it(header: str, value: str | None) -> None:
    from scheduling.http.requests import Request

    request = Request("GET", f"{ORIGIN}/", Headers({"cookie": header}))
    assert request.cookie("__Host-scheduling_session") == value


# -- Dee Wan's answers (checked in dee_wan.py): untrusted, and nothing stored --------------


async def scripted(world: World) -> ScriptedCore:
    script = world.http.handler = ScriptedCore(world.http.handler)
    return script


@pytest.mark.parametrize(
    "case",
    [
        "deep",
        "2027-02-30T00:00:00Z",
        "0000-01-01T00:00:00Z",
        "２０２７-01-01T00:00:00Z",
        "over_1_mib",
    ],
)
async def test_untrusted_exchange_answers_start_no_session(world: World, case: str) -> None:
    installation = await world.install()
    script = await scripted(world)
    good = exchange_answer(installation.id)
    if case == "deep":
        script.exchange = answer(DEEP_ARRAY)
    elif case == "over_1_mib":
        script.exchange = answer(json.dumps(good).encode() + b" " * (1 << 20))
    else:  # an `expires_at` of the right shape that is no instant
        script.exchange = answer(
            exchange_answer(installation.id, delegation={**good["delegation"], "expires_at": case})
        )
    response = await Browser(world.app).get(
        f"/installations/{installation.id}?dee_wan_launch=dwl_{'l' * 43}"
    )
    assert (response.status, code_of(response)) == (401, "untrusted_response")
    assert response.header("set-cookie") is None
    assert await count(world.db, "sessions") == 0


@pytest.mark.parametrize("case", ["deep", "revision_beyond_sqlite"])
async def test_untrusted_content_answers_store_nothing(world: World, case: str) -> None:
    browser, installation_id = await content_browser(world)
    script = await scripted(world)
    script.content = {
        "deep": answer(b'{"code": "content", "content": ' + DEEP_ARRAY + b"}"),
        "revision_beyond_sqlite": answer(
            content_answer(
                workflow={
                    "revision": 10**30,
                    "transitions": [{"kind": "publish", "to": "published"}],
                }
            )
        ),
    }[case]
    before = await stored(world.db)
    response = await browser.post(f"/installations/{installation_id}/schedules", form(browser))
    assert (response.status, code_of(response)) == (502, "untrusted_response")
    assert await stored(world.db) == before

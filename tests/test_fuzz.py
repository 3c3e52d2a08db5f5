"""Fuzzing the public surface with hypothesis (issue 12): whatever arrives, the plugin answers
with a refusal that has a code, or does what was asked; it never fails with a 5xx other than
the documented 502/503/504 for a Dee Wan it cannot reach or trust, and a refusal stores nothing.
Requests on every route, form values, Dee Wan's answers; derandomized, a fixed budget.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
import re
import string
from collections.abc import Coroutine, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from scheduling.app import ROUTES
from scheduling.domain.times import zone_names
from scheduling.http.requests import Headers, Request
from scheduling.http.responses import BASE_HEADERS, Response
from scheduling.ports import OutboundResponse
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.activation import mint
from tests.support.app import ADMIN_SECRET, ORIGIN, FakeClock, base_env
from tests.support.fuzzing import FUZZ, weighted
from tests.support.scripted_core import ScriptedCore, content_answer, exchange_answer
from tests.support.world import Browser, World, schedule

# Examples per suite: 4,400 cases, about 20 s on a two-core CI machine.
EXAMPLES = dict(requests=1600, form=800, exchange=800, content=800, operator=400, endpoint=400)
# Statuses the plugin may answer when Dee Wan is unreachable or untrusted (documented).
DEE_WAN_5XX = {502, 503, 504}
SESSION_COOKIE = "__Host-scheduling_session"

T = TypeVar("T")


class Stage:
    """One world for a whole suite, driven from hypothesis's synchronous examples."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.clients = 0
        self.db = SqliteDatabase(":memory:")
        apply_migrations(self.db.connection)
        # One person sends every form of a suite within the same minute.
        self.world = World(self.db, FakeClock(), env=base_env(MAX_CREATES_PER_MINUTE="10000"))
        self.installation = self.run(self.world.install())
        self.script = self.world.http.handler = ScriptedCore(self.world.http.handler)
        self.browser = self.run(self.world.browser_for(self.installation))
        # Fuzzed titles and names may look like anything, a raw date-time too.
        self.browser.checks_time_format = False
        page = self.run(self.browser.get(self.page_path))
        assert page.status == 200, page.body[:300]
        # Things a request can name for real: unused codes, schedules that exist.
        self.spare = self.run(self.world.install())
        self.codes = [self.run(mint(self.world.app)) for _ in range(3)]
        self.codes.append(self.run(mint(self.world.app, self.installation.id)))
        self.schedule_ids = [
            self.run(schedule(self.world, self.installation, in_minutes=m))["id"] for m in (30, 60)
        ]
        self.run(self.browser.get(self.page_path))  # the CSRF token of this session again
        # A manage launch of the same installation, for the Notifications forms.
        self.manage = self.run(self.world.browser_for(self.installation, content_id=None))
        self.run(self.manage.get(f"{self.page_path}/notifications"))  # the room with its forms

    @property
    def page_path(self) -> str:
        return f"/installations/{self.installation.id}"

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    def send(self, method: str, path: str, headers: Headers, body: bytes = b"") -> Response:
        request = Request(method, ORIGIN + path, headers, body, client=self.new_client())
        return self.run(self.world.app.handle(request))

    def new_client(self) -> str:
        """A different address for each case: failed launches are limited per client, and
        a case must reach the code it fuzzes rather than the 429 of the cases before it."""
        self.clients += 1
        return str(ipaddress.IPv4Address(0x0A000000 + self.clients))

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every table: a refusal must leave this as it was. (Not the calls
        counted for their limits: a create refused after it read Dee Wan made that call.)"""
        connection = self.db.connection
        tables = [
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                " AND name != 'throttle_slots'"
            )
        ]
        # Sorted here: a WITHOUT ROWID table (the running totals) has no rowid to order by.
        return {
            t: sorted((tuple(r) for r in connection.execute(f"SELECT * FROM {t}")), key=repr)
            for t in tables
        }

    def close(self) -> None:
        self.loop.close()
        self.db.close()


@pytest.fixture
def stage() -> Iterator[Stage]:
    made = Stage()
    yield made
    made.close()


def check_answer(
    request_method: str, response: Response, *, allow_dee_wan_5xx: bool = False
) -> None:
    """The properties every answer has."""
    event(f"{response.status} {_code_or_blank(response)}")
    allowed_5xx = DEE_WAN_5XX if allow_dee_wan_5xx else set()
    assert response.status < 500 or response.status in allowed_5xx, response.body[:500]
    present = {name.lower() for name, _ in response.headers}
    assert all(name in present for name, _ in BASE_HEADERS)
    if request_method == "HEAD":
        assert response.body == b""
    elif response.status >= 400:
        assert refusal_code(response)


def refusal_code(response: Response) -> str:
    content_type = response.header("content-type") or ""
    if content_type.startswith("application/json"):
        answer = json.loads(response.body)
        # A JSON-RPC error (POST /mcp) carries its code in words in `error.data.code`.
        code = answer["error"]["data"]["code"] if "jsonrpc" in answer else answer["code"]
        assert isinstance(code, str)
        assert code
        return code
    assert content_type.startswith("text/html"), content_type
    found = re.search(rb'data-error-code="([a-z_]+)"', response.body)
    assert found, response.body[:500]
    return found.group(1).decode()


# -- strategies ------------------------------------------------------------------------


latin1_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=40)
segment = st.one_of(
    st.text(string.ascii_letters + string.digits + "-_.~!$&'()*+,;=:@", max_size=12),
    st.binary(max_size=8).map(lambda raw: quote(raw, safe="")),
    st.sampled_from(["%2F", "%2f", "..", ".", "%00", "ins_1", "sch_1", "dee-wan", "admin"]),
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
base_urls = st.sampled_from(
    [
        "https://cms.example",
        "https://cms.example\x7f",
        "https://ex\u200bample.com",
        "https://cms.example:",
        "https://cms.example:0",
        "https://a..b",
        "https://169.254.169.254/x",
        "https://[::1]:22",
        "http://cms.example",
        "https://intranet",
        "https://vm:41853",
        "https://cms.local",
        "https://nas.home.arpa",
    ]
) | st.text(max_size=30).map("https://".__add__)


def secret_like(prefix: str) -> st.SearchStrategy[str]:
    return weighted(
        (
            2,
            st.text(string.ascii_letters + string.digits + "-_", min_size=43, max_size=43).map(
                prefix.__add__
            ),
        ),
        (1, st.text(max_size=60)),
    )


@st.composite
def paths(draw: st.DrawFn, stage: Stage) -> tuple[str, str]:
    """(method, path with query): mostly a route's own method and pattern, sometimes anything."""
    routes = [(route.method, route.pattern) for route in ROUTES]
    method, pattern = draw(st.sampled_from(routes))
    method = draw(
        weighted(
            (6, st.just(method)),
            (1, st.just("HEAD")),
            (
                2,
                st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
                | st.text(string.ascii_uppercase, min_size=1, max_size=8),
            ),
        )
    )
    # The stage's own installation is never deleted (it would end every later case early).
    own = [stage.spare.id] if "delete-data" in pattern else [stage.installation.id]
    ids = weighted((4, st.sampled_from([*own, *stage.schedule_ids, "sch_nope"])), (1, segment))
    path = draw(
        weighted(
            (4, st.just(pattern).map(lambda p: re.sub(r"\{\w+\}", lambda _: draw(ids) or "x", p))),
            (1, st.lists(segment, max_size=5).map(lambda parts: "/" + "/".join(parts))),
        )
    )
    query = draw(
        st.dictionaries(
            st.sampled_from(["dee_wan_launch", "created", "cancelled", "time", "cron"])
            | st.text(max_size=8),
            secret_like("dwl_") | st.sampled_from(stage.schedule_ids) | st.text(max_size=20),
            max_size=3,
        )
    )
    return method, path + ("?" + urlencode(query) if query else "")


def basic(password: str, user: str = "operator") -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@st.composite
def headers(draw: st.DrawFn, stage: Stage) -> Headers:
    session = stage.browser.cookies[SESSION_COOKIE]
    options = {
        "authorization": weighted(
            (3, st.just(f"Bearer {ADMIN_SECRET}")),
            (1, st.just(basic(ADMIN_SECRET))),
            (1, st.sampled_from(["Bearer", "Basic x"])),
            (1, latin1_text.map("Bearer ".__add__)),
            (1, latin1_text),
        ),
        "cookie": weighted(
            (3, st.just(f"{SESSION_COOKIE}={session}")),
            (1, st.just(f"{SESSION_COOKIE}={stage.manage.cookies[SESSION_COOKIE]}")),
            (1, st.just(f"{SESSION_COOKIE}=x; {SESSION_COOKIE}={session}")),
            (1, latin1_text),
        ),
        "content-type": st.sampled_from(["application/json", "application/x-www-form-urlencoded"])
        | latin1_text,
        "origin": weighted(
            (3, st.sampled_from([ORIGIN, "null"])),
            (1, st.just("https://evil.example")),
            (1, latin1_text),
        ),
        "sec-fetch-site": weighted(
            (3, st.just("same-origin")),
            (1, st.sampled_from(["same-site", "cross-site", "none"])),
            (1, latin1_text),
        ),
        "accept": st.sampled_from(["text/html", "*/*", "application/json"]) | latin1_text,
    }
    pairs = [
        (name, draw(strategy)) for name, strategy in options.items() if draw(st.integers(0, 2))
    ]
    pairs += draw(
        st.lists(
            st.tuples(st.text(string.ascii_letters + "-", min_size=1, max_size=12), latin1_text),
            max_size=3,
        )
    )
    return Headers(pairs)


@st.composite
def bodies(draw: st.DrawFn, stage: Stage) -> bytes:
    kind = draw(
        st.sampled_from(
            ["empty", "bytes", "json", "form", "form", "deep", "activation", "activation"]
        )
    )
    if kind == "empty":
        return b""
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "json":
        return json.dumps(
            draw(
                json_values
                | st.fixed_dictionaries(
                    {
                        "installation_id": st.sampled_from([stage.installation.id, "ins_none"])
                        | json_values
                    }
                )
            )
        ).encode()
    if kind == "deep":
        depth = draw(st.integers(30, 5000))
        return draw(st.sampled_from([b"[", b'{"a":'])) * depth
    if kind == "activation":
        fields = {
            "protocol": "v1",
            "action": draw(st.sampled_from(["activate", "activate", "rotate", "x"])),
            "code": draw(st.sampled_from(stage.codes) | secret_like("dwa_")),
            "installation_id": draw(
                st.sampled_from([stage.installation.id, "ins_new"]) | st.text(max_size=70)
            ),
            "site_id": "site_1",
            "base_url": draw(base_urls),
            "token": draw(secret_like("dwp_")),
        }
        dropped = draw(st.lists(st.sampled_from(sorted(fields)), unique=True, max_size=2))
        return json.dumps({k: v for k, v in fields.items() if k not in dropped}).encode()
    fields = draw(
        st.dictionaries(
            st.sampled_from(["opened_for", "transition", "local_time", "timezone", "fold"])
            | st.sampled_from(["url", "events"])
            | st.text(max_size=8),
            st.text(max_size=30),
            max_size=8,
        )
    )
    if draw(st.integers(0, 3)):
        fields["csrf_token"] = stage.browser.csrf()
    return urlencode(fields).encode()


def test_arbitrary_requests_on_every_route(stage: Stage) -> None:
    @settings(FUZZ, max_examples=EXAMPLES["requests"])
    @given(paths(stage), headers(stage), bodies(stage))
    def one(target: tuple[str, str], sent_headers: Headers, body: bytes) -> None:
        method, path = target
        before = stage.snapshot()
        response = stage.send(method, path, sent_headers, body)
        check_answer(method, response, allow_dee_wan_5xx=True)
        if response.status >= 400:
            assert stage.snapshot() == before, (method, path, response.status)

    one()


# -- the operator's routes: /healthz, /admin/metrics, /admin ----------------------------------

OPERATOR_PATHS = ("/healthz", "/admin/metrics", "/admin")
credentials = weighted(
    (3, st.just(basic(ADMIN_SECRET))),
    (2, st.just(f"Bearer {ADMIN_SECRET}")),
    (1, st.text(max_size=20).map(lambda user: basic(ADMIN_SECRET, user.replace(":", "")))),
    (1, latin1_text.map(basic)),
    (1, st.binary(max_size=40).map(lambda raw: "Basic " + base64.b64encode(raw).decode())),
    (1, latin1_text.map("Basic ".__add__)),
    (1, latin1_text),
)


def password_of(authorization: str | None) -> str | None:
    """What a browser's Basic header carries as the password (RFC 7617), decoded by hand."""
    if authorization is None or not authorization.startswith("Basic "):
        return None
    try:
        decoded = base64.b64decode(authorization[6:], validate=True).decode("utf-8")
    except ValueError:
        return None
    return decoded.split(":", 1)[1] if ":" in decoded else None


def operator_answer_holds(
    path: str, method: str, authorization: str | None, origin: str, response: Response
) -> None:
    """/healthz says only ok or stalled, /admin/metrics is for the bearer secret alone,
    /admin for the Basic secret alone over HTTPS; anything else is a refusal with its code."""
    present = {name.lower() for name, _ in response.headers}
    assert all(name in present for name, _ in BASE_HEADERS)
    if method == "HEAD":
        assert response.body == b""
    if method not in ("GET", "HEAD"):
        assert response.status == 405
    elif path == "/healthz":
        assert response.status in (200, 503)
        if method == "GET":
            status = "ok" if response.status == 200 else "stalled"
            assert json.loads(response.body) == {"status": status}
        return
    elif path == "/admin/metrics":
        allowed = authorization == f"Bearer {ADMIN_SECRET}"
        assert (response.status == 200) == allowed, response.status
        if allowed and method == "GET":
            families = list(text_string_to_metric_families(response.body.decode()))
            assert (
                len(families) == 24
            )  # three delivery families, their webhook names kept a release; two of releases
    else:
        secure = origin.startswith("https://")
        if not secure:
            assert response.status == 403
            assert response.header("www-authenticate") is None
        elif password_of(authorization) == ADMIN_SECRET:
            assert response.status == 200
        else:
            assert response.status == 401
            assert response.header("www-authenticate") is not None
    if response.status >= 400 and method == "GET":
        assert refusal_code(response)
    assert ADMIN_SECRET.encode() not in response.body


def test_arbitrary_requests_on_the_operator_routes(stage: Stage) -> None:
    """Any method, query, credentials, scheme and moment (stalled or not): /healthz says only
    ok or stalled, /admin/metrics is Prometheus text for the bearer secret alone, /admin a
    page for the Basic secret alone over HTTPS; anything else is a refusal with its code."""
    start = stage.world.clock.now

    @settings(FUZZ, max_examples=EXAMPLES["operator"])
    @given(
        st.sampled_from(OPERATOR_PATHS),
        weighted((6, st.sampled_from(["GET", "HEAD"])), (1, st.sampled_from(["POST", "PUT"]))),
        st.dictionaries(st.text(max_size=8), st.text(max_size=20), max_size=3),
        weighted((1, st.just(None)), (4, credentials)),
        st.sampled_from(["text/html", "*/*", "application/json", ""]),
        weighted((5, st.just(ORIGIN)), (1, st.just("http://scheduling.example"))),
        # Now, or later: the stage's schedules fall due at 30 and 60 minutes, with no tick.
        st.sampled_from([0, 10, 29, 31, 45, 90, 240]).map(lambda minutes: minutes * 60_000),
    )
    def one(
        path: str,
        method: str,
        query: dict[str, str],
        authorization: str | None,
        accept: str,
        origin: str,
        later_ms: int,
    ) -> None:
        stage.world.clock.now = start + later_ms
        sent = {"accept": accept} | ({"authorization": authorization} if authorization else {})
        before = stage.snapshot()
        request = Request(
            method,
            origin + path + ("?" + urlencode(query) if query else ""),
            Headers(sent),
            client=stage.new_client(),
        )
        response = stage.run(stage.world.app.handle(request))
        event(f"{path} {response.status}")
        assert stage.snapshot() == before  # reading never writes
        operator_answer_holds(path, method, authorization, origin, response)

    try:
        one()
    finally:
        stage.world.clock.now = start


# -- the schedule form -------------------------------------------------------------------

digits = st.text("0123456789", min_size=1, max_size=4)
local_times = weighted(
    (
        6,
        st.datetimes(datetime(2026, 7, 1), datetime(2199, 12, 31)).map(
            lambda d: d.strftime("%Y-%m-%dT%H:%M")
        ),
    ),
    (
        1,
        st.tuples(digits, digits, digits, digits, digits).map(
            lambda p: "{}-{}-{}T{}:{}".format(*p)
        ),
    ),
    (1, st.text(st.characters(categories=["Nd"]) | st.sampled_from("-T:"), max_size=16)),
    (
        1,
        st.sampled_from(
            ["0001-01-01T00:00", "9999-12-31T23:59", "2026-03-29T02:30", "2026-10-25T02:30"]
        ),
    ),
    (1, st.text(max_size=20)),
)
zones = weighted(
    (6, st.sampled_from(sorted(zone_names()))),
    (1, st.sampled_from(["", "UTC", "Mars/Base", "../etc"])),
    (1, st.text(max_size=30)),
)
folds = weighted(
    (6, st.just("")), (2, st.sampled_from(["earlier", "later"])), (1, st.text(max_size=10))
)
transitions = weighted(
    (5, st.just("publish:published")),
    (1, st.just("unpublish:draft")),
    (1, st.sampled_from(["publish:draft", "", "publish"])),
    (1, st.text(max_size=20)),
)


# Fields a form never has, now and then many of them.
extra_fields = weighted(
    (4, st.just({})),
    (1, st.dictionaries(st.text(min_size=1, max_size=6), st.text(max_size=10), max_size=50)),
)


def made_as_entered(stage: Stage, local_time: str) -> None:
    """The schedule just made keeps the wall time as entered, due ahead and before 2200."""
    made = stage.run(
        stage.db.prepare(
            "SELECT local_time, due_at FROM schedules ORDER BY created_at DESC, rowid DESC"
        ).first()
    )
    assert made is not None
    assert made["local_time"] == local_time.strip()
    assert made["local_time"].isascii()
    assert stage.world.clock.now_ms() < made["due_at"] < 7_258_204_800_000  # before 2200 UTC


def test_arbitrary_form_values_with_a_live_session(stage: Stage) -> None:
    browser = stage.browser
    path = f"{stage.page_path}/schedules"

    @settings(FUZZ, max_examples=EXAMPLES["form"])
    @given(
        transitions,
        local_times,
        zones,
        folds,
        extra_fields,
        weighted((6, st.just(True)), (1, st.just(False))),
    )
    def one(
        transition: str,
        local_time: str,
        zone: str,
        fold: str,
        extra: dict[str, str],
        with_versions: bool,
    ) -> None:
        # The versions the page showed (as the form sends them), or none: a 400.
        shown = dict(browser.pins) if with_versions else {}
        fields = {
            **extra,
            "csrf_token": browser.csrf(),
            "opened_for": "cnt_en",
            "transition": transition,
            "local_time": local_time,
            "timezone": zone,
            "fold": fold,
            **shown,
        }
        before = stage.snapshot()
        response = stage.run(browser.post(path, fields))
        check_answer("POST", response)
        if response.status != 303:
            assert response.status in (400, 409, 422), response.status
            assert stage.snapshot() == before
            return
        made_as_entered(stage, local_time)

    one()


# -- the Notifications form ---------------------------------------------------------------

endpoint_urls = weighted(
    (
        3,
        st.sampled_from(
            [
                "https://hooks.example/scheduling",
                "https://relay.example.org/in?team=7&x=%20",
                "https://10.0.0.7/hook",
                "https://2130706433/",
                "https://0x7f.1/",
                "https://[::1]/",
                "https://hooks.example.123/",
                "http://hooks.example/",
                "https://localhost/",
                "https://intranet/",
                "https://a.local/",
                "https://u:p@hooks.example/",
                "https://hooks.example/#x",
                "https://hooks.example:99999/",
                "https://xn--/",
                "https://hooks.example/%zz",
            ]
        ),
    ),
    (2, st.text(max_size=60).map("https://".__add__)),
    (1, st.text(max_size=80)),
    (1, st.integers(2030, 2060).map(lambda n: "https://hooks.example/" + "a" * (n - 22))),
)
endpoint_events = st.lists(
    st.sampled_from(
        ["schedule.refused", "schedule.completed", "schedule.retrying", "test", "", "schedule.x"]
    )
    | st.text(max_size=20),
    max_size=5,
)


endpoint_kinds = (
    st.none() | st.sampled_from(["webhook", "chat", "", "Chat", "sms"]) | st.text(max_size=8)
)


def endpoint_kept_as_sent(stage: Stage, url: str, events: list[str], kind: str) -> str:
    """The endpoint just added, as the form sent it (a chat's URL sealed: only its host and
    last 4 kept plain), with its events; its id."""
    from scheduling.channels.chat import shown_url
    from scheduling.domain.addresses import endpoint_url_problem
    from scheduling.domain.notifications import EVENT_TYPES

    stored = stage.db.connection.execute(
        "SELECT id, url, kind, secret_sealed FROM notification_endpoints"
        " ORDER BY created_at DESC, rowid DESC"
    ).fetchall()
    assert len(stored) <= 5
    endpoint_id, kept, kept_kind, sealed = stored[0]
    assert kept_kind == kind
    assert endpoint_url_problem(url.strip(), stage.world.app.services.config) is None
    if kept_kind == "chat":
        assert kept == shown_url(url.strip())
        assert url.strip() not in sealed
    else:
        assert kept == url.strip()
    subscribed = stage.db.connection.execute(
        "SELECT event_type FROM notification_subscriptions WHERE endpoint_id = ?",
        (endpoint_id,),
    ).fetchall()
    assert {e for (e,) in subscribed} == set(events) <= set(EVENT_TYPES)
    return str(endpoint_id)


def test_arbitrary_endpoint_forms_with_a_live_manage_session(stage: Stage) -> None:
    browser = stage.manage
    path = f"{stage.page_path}/notifications"

    @settings(FUZZ, max_examples=EXAMPLES["endpoint"])
    @given(
        endpoint_urls,
        endpoint_events,
        endpoint_kinds,
        st.lists(st.tuples(st.text(min_size=1, max_size=6), st.text(max_size=10)), max_size=40),
    )
    def one(url: str, events: list[str], kind: str | None, extra: list[tuple[str, str]]) -> None:
        fields = [*extra, ("csrf_token", browser.csrf()), ("opened_for", "manage"), ("url", url)]
        fields += [("events", event) for event in events]
        fields += [] if kind is None else [("kind", kind)]
        before = stage.snapshot()
        response = stage.run(browser.post_pairs(path, fields))
        check_answer("POST", response)
        if response.status != 303:
            assert response.status in (400, 409, 422), response.status
            assert stage.snapshot() == before
            return
        endpoint_id = endpoint_kept_as_sent(stage, url, events, "webhook" if kind is None else kind)
        # Take it away again through its own form, so the next case has room.
        page = stage.run(browser.follow(response))
        assert page.status == 200
        gone = stage.run(
            browser.post(
                f"{path}/{endpoint_id}/delete",
                {"csrf_token": browser.csrf(), "opened_for": "manage"},
            )
        )
        assert gone.status == 303

    one()


# -- Dee Wan's answers -------------------------------------------------------------------


# Instants, and strings of an instant's shape that are none (2027-02-30, year 0, other digits).
instants = st.datetimes(datetime(1970, 1, 1), datetime(9999, 12, 31)).map(
    lambda d: d.replace(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
) | st.from_regex(r"\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z")


def mutated(template: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """The template with a few of its fields replaced, removed or of another type."""

    def leaves(value: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        if isinstance(value, dict):
            found = [path] if path else []
            for key, inner in value.items():
                found += leaves(inner, (*path, key))
            return found
        return [path]

    spots = leaves(template)

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(json.dumps(template))
        for spot in draw(
            weighted((1, st.just([])), (3, st.lists(st.sampled_from(spots), max_size=2)))
        ):
            parent: Any = data
            for key in spot[:-1]:
                parent = parent.get(key) if isinstance(parent, dict) else None
            if not isinstance(parent, dict):
                continue
            if draw(st.booleans()):
                parent[spot[-1]] = draw(json_values | instants)
            else:
                parent.pop(spot[-1], None)
        return data

    return build()


def answers(template: dict[str, Any]) -> st.SearchStrategy[OutboundResponse]:
    statuses = weighted(
        (6, st.just(200)),
        (2, st.sampled_from([201, 204, 302, 400, 401, 403, 404, 409, 429, 500])),
        (1, st.integers(100, 599)),
    )
    response_headers = st.dictionaries(
        st.sampled_from(["content-type", "retry-after", "location", "content-length"]),
        latin1_text,
        max_size=3,
    )
    body = weighted(
        (6, mutated(template).map(lambda data: json.dumps(data).encode())),
        (1, json_values.map(lambda data: json.dumps(data).encode())),
        (
            1,
            st.sampled_from(
                [
                    "invalid_request",
                    "plugin_unauthorized",
                    "launch_not_found",
                    "content_not_found",
                    "requester_unauthorized",
                    "capability_refused",
                    "nope",
                ]
            ).map(lambda code: json.dumps({"code": code}).encode()),
        ),
        (1, st.binary(max_size=200)),
        # Too deep, or the right answer past the 1 MiB limit.
        (
            1,
            st.sampled_from(
                [b"[" * 20_000 + b"]" * 20_000, json.dumps(template).encode() + b" " * (1 << 20)]
            ),
        ),
    )
    return st.builds(OutboundResponse, statuses, response_headers, body)


def test_arbitrary_exchange_answers(stage: Stage) -> None:
    template = exchange_answer(stage.installation.id)
    template["delegation"]["expires_at"] = "2026-07-01T10:20:00Z"

    @settings(FUZZ, max_examples=EXAMPLES["exchange"])
    @given(answers(template), secret_like("dwl_").filter(lambda c: c.startswith("dwl_")))
    def one(answer: OutboundResponse, code: str) -> None:
        stage.script.exchange = answer
        before = stage.snapshot()
        response = stage.run(
            Browser(stage.world.app, stage.new_client()).get(
                f"{stage.page_path}?{urlencode({'dee_wan_launch': code})}"
            )
        )
        check_answer("GET", response, allow_dee_wan_5xx=True)
        if response.status == 303:
            assert (response.header("set-cookie") or "").startswith(SESSION_COOKIE)
            return
        assert response.header("set-cookie") is None
        assert stage.snapshot() == before

    one()


def test_arbitrary_content_answers(stage: Stage) -> None:
    browser = stage.browser

    @settings(FUZZ, max_examples=EXAMPLES["content"])
    @given(answers(content_answer()), st.sampled_from(["publish:published", "unpublish:draft"]))
    def one(answer: OutboundResponse, transition: str) -> None:
        stage.script.content = answer
        page = stage.run(browser.get(stage.page_path))
        check_answer("GET", page, allow_dee_wan_5xx=True)
        before = stage.snapshot()
        fields = {
            "csrf_token": browser.csrf(),
            "opened_for": "cnt_en",
            "transition": transition,
            "local_time": "2026-07-02T09:00",
            "timezone": "UTC",
            "fold": "",
            **browser.pins,
        }
        created = stage.run(browser.post(f"{stage.page_path}/schedules", fields))
        check_answer("POST", created, allow_dee_wan_5xx=True)
        if created.status != 303:
            assert stage.snapshot() == before

    one()


def _code_or_blank(response: Response) -> str:
    found = re.search(rb'"code":"([a-z_]+)"|data-error-code="([a-z_]+)"', response.body)
    return (found.group(1) or found.group(2)).decode() if found else ""

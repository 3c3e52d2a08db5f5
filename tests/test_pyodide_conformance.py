"""Conformance scenarios through the real Worker entry, under Pyodide with Miniflare's D1:
HTTP at its PUBLIC_ORIGIN, cron ticks through `scheduled()`, Dee Wan a loopback recorder or
`python -m fake_core`; every test starts from an empty database.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from scheduling.domain import associated_data
from tests.pyodide_harness.harness import (
    FakeCoreProcess,
    Harness,
    free_port,
)
from tests.support.d1_rows import due_soon, installation_row, rfc3339, schedule_row
from tests.support.worker_browser import (
    OPERATOR,
    Browser,
    csrf_of,
    install,
    launch,
    mint_code,
)

pytestmark = pytest.mark.pyodide

OTHER_KEY = "ZGlmZmVyZW50IGtleSBkaWZmZXJlbnQga2V5IDEyMzQ="  # 32 bytes, not TOKEN_KEY


@pytest.fixture
def client(worker: Harness) -> Iterator[httpx.Client]:
    with worker.client(follow_redirects=False) as http:
        yield http


# -- what exists for any deployment -------------------------------------------


# The manifest, HEAD, 404 and 405 (methods the SDK has no name for included):
# tests/test_manifest.py, on both runtimes.


def test_refusals_at_the_edge_of_the_worker(client: httpx.Client) -> None:
    """Issue 12 through the real entry: %2F is no separator, browsers get the 404 page,
    bodies are bounded and deep JSON is refused, each with its code."""
    assert client.get("/dee-wan%2Fmanifest.json").status_code == 404
    page = client.get("/installations/ins_1/nothing")
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")
    assert 'data-error-code="not_found"' in page.text
    for body in (b"{" + b" " * 70_000 + b"}", b"[" * 20_000 + b"]" * 20_000):
        refused = client.post(
            "/dee-wan/activate", content=body, headers={"content-type": "application/json"}
        )
        assert (refused.status_code, refused.json()["code"]) == (400, "invalid_request")


# A bad TOKEN_KEY or ADMIN_SECRET: tests/test_activation.py, on both runtimes.


def test_scheduled_tick_on_an_empty_database(worker: Harness) -> None:
    assert worker.scheduled(due_soon())["outcome"] == "ok"
    assert worker.sql("SELECT count(*) AS n FROM schedules") == [{"n": 0}]


# -- the runner against a recording core on loopback ---------------------------


@dataclass
class Recorder:
    """A minimal core on 127.0.0.1: records each request, answers from a script per content id."""

    answers: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)  # content id -> Location
    stall_s: dict[str, float] = field(
        default_factory=dict
    )  # content id -> silence before answering
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    record = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            data = json.loads(body)
            record.requests.append(
                {
                    "path": self.path,
                    "headers": {name.lower(): value for name, value in self.headers.items()},
                    "body": data,
                }
            )
            time.sleep(record.stall_s.get(data["content_id"], 0))
            status, answer = record.answers.get(data["content_id"], (500, {"code": "unset"}))
            payload = json.dumps(answer).encode()
            self.send_response(status)
            if data["content_id"] in record.redirects:
                self.send_header("location", record.redirects[data["content_id"]])
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:  # only a followed redirect would arrive here
            record.requests.append({"path": self.path, "headers": {}, "body": None})
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    record.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield record
    server.shutdown()
    server.server_close()


def seed_five_rows(worker: Harness, recorder: Recorder, due: int, token: str) -> None:
    """Due now: one the recorder applies, one it finds busy, one stale, one of an installation
    whose token does not open; one due an hour later."""
    sealed = worker.seal(token, associated_data.installation_token("ins_rec"))
    unreadable = worker.seal(
        "dwp_" + "u" * 43, associated_data.installation_token("ins_lost"), OTHER_KEY
    )
    recorder.answers = {
        "cnt_ok": (200, {"code": "transition_applied"}),
        "cnt_busy": (503, {"code": "unavailable"}),
        "cnt_stale": (409, {"code": "scheduled_target_stale"}),
    }
    worker.execute(
        installation_row("ins_rec", recorder.base_url, sealed),
        installation_row("ins_lost", recorder.base_url, unreadable),
        schedule_row("sch_ok", "ins_rec", "cnt_ok", due_at=due),
        schedule_row("sch_busy", "ins_rec", "cnt_busy", due_at=due),
        schedule_row(
            "sch_stale", "ins_rec", "cnt_stale", due_at=due, kind="unpublish", version_id="ver_1"
        ),
        schedule_row("sch_later", "ins_rec", "cnt_later", due_at=due + 3_600_000),
        schedule_row("sch_lost", "ins_lost", "cnt_lost", due_at=due),
    )


def assert_status_after_the_tick(status: dict[str, Any], tick: int) -> None:
    """Recorded in D1 with the settles. The route's clock is the real one, before this tick's
    instant, so nothing is overdue yet and the rows just finished count as recent."""
    last = status["last_tick"]
    assert last["at"] == rfc3339(tick)
    assert last["cron_delay_ms"] == 0
    assert (last["due"], last["claimed"]) == (4, 3)
    assert last["outcomes"] == {"completed": 1, "refused": 1, "retrying": 1}
    assert (last["refused_unsent"], last["lost_claim"]) == (1, 0)
    # due; claim (refusal, claim, which opens its attempts); due again; settle, finish
    # attempts and the installation's last send; the retention purge's step (three
    # statements, nothing past the window); the record (history row, totals, pruning)
    assert last["d1"] == {"statements": 13, "round_trips": 6}
    assert status["schedules"] == {"pending": 1, "retrying": 1, "queued": 0, "running": 0}
    assert status["finished_last_24h"] == dict(
        completed=1, refused=2, cancelled=0, superseded=0, held=0
    )
    assert (status["due_backlog"], status["stalled"], status["oldest_overdue"]) == (0, False, None)


def assert_sent_on_the_wire(recorder: Recorder, token: str, due: int) -> None:
    sent = {request["body"]["content_id"]: request for request in recorder.requests}
    assert sorted(sent) == ["cnt_busy", "cnt_ok", "cnt_stale"]  # not later, not unreadable
    ok = sent["cnt_ok"]
    assert ok["path"] == "/api/plugins/v1/transitions"
    assert ok["headers"]["authorization"] == f"Bearer {token}"
    assert ok["headers"]["idempotency-key"] == "sched:ins_rec:sch_ok:r1"
    assert ok["headers"]["content-type"] == "application/json"
    assert ok["body"] == {
        "content_id": "cnt_ok",
        "kind": "publish",
        "to": "published",
        "version_id": "ver_2",
        "workflow_revision": 3,
        "requested_by": "usr_editor",
        "due_at": rfc3339(due),
    }


def assert_settled_in_d1(worker: Harness, tick: int) -> None:
    rows = {
        row["id"]: row
        for row in worker.sql(
            "SELECT id, status, result_code, attempt_count, next_attempt_at, lease_token"
            " FROM schedules ORDER BY id"
        )
    }
    # (status, result_code, attempt_count, next_attempt_at, lease_token) per schedule
    read = {sid: tuple(row.values())[1:] for sid, row in rows.items()}
    assert read["sch_ok"] == ("completed", "transition_applied", 1, None, None)
    assert read["sch_stale"][:2] == ("refused", "scheduled_target_stale")
    assert read["sch_busy"][0] == "retrying"
    assert rows["sch_busy"]["next_attempt_at"] > tick
    assert read["sch_later"][:3] == ("pending", None, 0)
    assert read["sch_lost"][:2] == ("refused", "token_unreadable")
    attempts = worker.sql(
        "SELECT schedule_id, attempt, code, http_status, started_at, finished_at"
        " FROM schedule_attempts ORDER BY schedule_id"
    )
    assert [(a["schedule_id"], a["attempt"], a["code"], a["http_status"]) for a in attempts] == [
        ("sch_busy", 1, "unavailable", 503),
        ("sch_ok", 1, "transition_applied", 200),
        ("sch_stale", 1, "scheduled_target_stale", 409),
    ]
    # started_at is when the request left: the tick instant advanced by real time.
    assert all(tick <= a["started_at"] <= a["finished_at"] for a in attempts)


def test_tick_sends_due_transitions_and_settles_each_in_d1(
    worker: Harness, recorder: Recorder, client: httpx.Client
) -> None:
    due = due_soon()
    token = "dwp_" + "t" * 43
    seed_five_rows(worker, recorder, due, token)

    tick = due + 30_000  # ahead of the real clock: the tick runs at exactly this instant
    worker.scheduled(tick)
    assert_status_after_the_tick(client.get("/admin/status", headers=OPERATOR).json(), tick)
    assert_sent_on_the_wire(recorder, token, due)
    assert_settled_in_d1(worker, tick)

    # A second tick at the same instant finds nothing due: every claim was settled.
    recorder.requests.clear()
    worker.scheduled(tick)
    assert recorder.requests == []
    # The entry sends the app's INFO lines to the Worker's log, never a token. Each tick is
    # one bare JSON line (the harness prefixes what the Worker prints).
    ticks = worker.events("runner_tick")
    assert [(t["at"], t["due"], t["claimed"]) for t in ticks[-2:]] == [
        (rfc3339(tick), 4, 3),
        (rfc3339(tick), 0, 0),
    ]
    log = worker.log_tail(400)
    assert "WARNING scheduling: installation ins_lost: token does not open" in log
    assert token not in log


def test_tick_never_follows_a_redirect_and_retries_an_unreachable_core(
    worker: Harness, recorder: Recorder
) -> None:
    due = due_soon()
    token = "dwp_" + "r" * 43
    recorder.answers = {"cnt_moved": (302, {"code": "transition_applied"})}
    recorder.redirects = {"cnt_moved": "/followed"}
    unreachable = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    worker.execute(
        installation_row(
            "ins_moved", recorder.base_url, worker.seal(token, "installation-token:ins_moved")
        ),
        installation_row(
            "ins_down", unreachable, worker.seal(token, "installation-token:ins_down")
        ),
        schedule_row("sch_moved", "ins_moved", "cnt_moved", due_at=due),
        schedule_row("sch_down", "ins_down", "cnt_down", due_at=due),
    )
    worker.scheduled(due + 1_000)

    assert [request["path"] for request in recorder.requests] == ["/api/plugins/v1/transitions"]
    rows = {
        row["id"]: row
        for row in worker.sql(
            "SELECT s.id, s.status, s.result_code, a.code, a.http_status"
            " FROM schedules s JOIN schedule_attempts a ON a.schedule_id = s.id"
        )
    }
    assert rows["sch_moved"] == {
        "id": "sch_moved",
        "status": "refused",
        "result_code": "untrusted_response",
        "code": "untrusted_response",
        "http_status": 302,
    }
    assert rows["sch_down"] == {
        "id": "sch_down",
        "status": "retrying",
        "result_code": "network_error",
        "code": "network_error",
        "http_status": None,
    }


# -- end to end with fake_core --------------------------------------------------


@pytest.fixture
def dev_worker(worker: Harness, core: FakeCoreProcess) -> Iterator[Harness]:
    """Development mode, so the Worker accepts fake core's http://localhost base URL."""
    with worker.vars(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core.base_url):
        yield worker


def test_fake_core_installs_the_worker_and_its_token_is_sealed_in_d1(
    dev_worker: Harness, core: FakeCoreProcess, client: httpx.Client
) -> None:
    installation = install(core, client)
    installation_id = installation["id"]
    rows = dev_worker.sql("SELECT * FROM installations WHERE id = ?", installation_id)
    assert len(rows) == 1
    row = rows[0]
    assert (row["site_id"], row["base_url"]) == ("site_demo", core.base_url)
    assert row["token_sealed"].startswith("v1.")
    assert installation["token"] not in json.dumps(row)
    context = associated_data.installation_token(installation_id)
    assert dev_worker.open(row["token_sealed"], context) == {"plaintext": installation["token"]}
    codes = dev_worker.sql("SELECT kind, used_at FROM activation_codes")
    assert [(c["kind"], c["used_at"] is not None) for c in codes] == [("activate", True)]

    # Rotation through core: a new token replaces the sealed one.
    rotated = core.control(
        "POST",
        "rotate",
        {"installation_id": installation_id, "code": mint_code(client, installation_id)},
    )["installation"]
    sealed = dev_worker.sql("SELECT token_sealed FROM installations")[0]["token_sealed"]
    assert dev_worker.open(sealed, context) == {"plaintext": rotated["token"]}
    assert rotated["token"] != installation["token"]


# -- the whole journey: install, launch, schedule, tick, cancel, delete ---------------


def wall_time(days_ahead: int, zone: str) -> str:
    """Noon local time some days ahead (noon is never in a DST gap or fold)."""
    day = datetime.now(ZoneInfo(zone)).date() + timedelta(days=days_ahead)
    return f"{day.isoformat()}T12:00"


def assert_the_session_is_stored_as_hashes(
    worker: Harness, core: FakeCoreProcess, browser: Browser, installation_id: str
) -> None:
    """The content launch's session: hashes and ciphertext only; Dee Wan's content read once."""
    assert browser.cookie is not None
    id_hash = hashlib.sha256(browser.cookie.encode()).hexdigest()
    sessions = worker.sql("SELECT * FROM sessions")
    assert [(s["id_hash"], s["context_kind"], s["content_id"]) for s in sessions] == [
        (id_hash, "content", "cnt_spring")
    ]
    assert browser.cookie not in json.dumps(sessions)
    delegation = worker.open(
        sessions[0]["delegation_sealed"], associated_data.delegation(installation_id, id_hash)
    )
    assert delegation["plaintext"].startswith("dwd_")
    reads = core.control("GET", "calls", endpoint="content")["calls"]
    assert [(c["status"], c["code"]) for c in reads] == [(200, "content")]


def schedule_on_form(browser: Browser, installation_id: str, fields: dict[str, str]) -> str:
    """The new schedule's id; the page it leads to is shown (its receipt)."""
    made = browser.post_form(f"/installations/{installation_id}/schedules", fields)
    assert made.status_code == 303, made.text
    browser.receipt = browser.get(made.headers["location"]).text
    return str(made.headers["location"].rsplit("created=", 1)[1])


def cancel_from_manage(
    core: FakeCoreProcess, browser: Browser, installation_id: str, sid: str
) -> None:
    launch(core, browser, installation_id)  # (its forms are the Notifications section's)
    confirm = browser.get(f"/installations/{installation_id}/schedules/{sid}/cancel")
    assert confirm.status_code == 200, confirm.text
    cancelled = browser.post_form(
        f"/installations/{installation_id}/schedules/{sid}/cancel",
        {"csrf_token": csrf_of(confirm.text)},
    )
    assert cancelled.status_code == 303, cancelled.text


def assert_sent_once_due(
    worker: Harness, core: FakeCoreProcess, sid: str, due: dict[str, Any]
) -> None:
    """Nothing is sent before it is due; after, the tick sends it to core and settles it. A
    tick stands for at most 15 minutes ahead of the wall clock: the schedule is moved in D1
    to a minute a few minutes ahead."""
    soon = due_soon()
    worker.execute(
        ("UPDATE schedules SET due_at = ?1, next_attempt_at = ?1 WHERE id = ?2", [soon, sid])
    )
    core.control("DELETE", "calls")
    worker.scheduled(soon - 60_000)
    assert core.control("GET", "calls", endpoint="transitions")["calls"] == []
    worker.scheduled(soon + 30_000)
    calls = core.control("GET", "calls", endpoint="transitions")["calls"]
    assert [(c["status"], c["code"]) for c in calls] == [(200, "transition_applied")]
    assert calls[0]["headers"]["idempotency-key"] == due["idempotency_key"]
    assert calls[0]["body"]["version_id"] == due["version_id"]
    settled = worker.sql(
        "SELECT s.status, s.result_code, a.attempt, a.code, a.http_status"
        " FROM schedules s JOIN schedule_attempts a ON a.schedule_id = s.id"
    )
    completed = ("completed", "transition_applied", 1, "transition_applied", 200)
    assert [tuple(row.values()) for row in settled] == [completed]
    group = next(
        g for g in core.control("GET", "state")["groups"] if g["primary_id"] == "cnt_spring"
    )
    assert group["published_version_id"] == due["version_id"]
    assert [entry["idempotency_key"] for entry in group["log"]] == [due["idempotency_key"]]


def assert_deleted(
    worker: Harness, client: httpx.Client, browser: Browser, installation_id: str
) -> None:
    """The operator deletes the installation's data: every row goes, sessions too."""
    deleted = client.post(f"/admin/installations/{installation_id}/delete-data", headers=OPERATOR)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"code": "deleted", "installation_id": installation_id}
    for table in ("schedule_attempts", "schedules", "sessions", "installations"):
        assert worker.sql(f"SELECT count(*) AS n FROM {table}") == [{"n": 0}], table
    codes = worker.sql("SELECT installation_id FROM activation_codes")
    assert codes == [{"installation_id": None}]  # only the used activate code, bound to no one
    assert browser.get(f"/installations/{installation_id}").status_code in (401, 404)


def test_install_launch_schedule_tick_cancel_and_delete(
    dev_worker: Harness, core: FakeCoreProcess, client: httpx.Client
) -> None:
    installation_id = install(core, client)["id"]
    browser = Browser(client, dev_worker.origin)
    csrf = launch(core, browser, installation_id, content_id="cnt_spring")
    assert_the_session_is_stored_as_hashes(dev_worker, core, browser, installation_id)

    # Schedule through the form, then reschedule: the first is superseded.
    zone = "Europe/Paris"  # the demo site's zone
    fields = {"transition": "publish:published", "timezone": zone, "fold": "", **browser.shown}
    first_id = schedule_on_form(
        browser, installation_id, {**fields, "csrf_token": csrf, "local_time": wall_time(3, zone)}
    )
    second_id = schedule_on_form(
        browser, installation_id, {**fields, "csrf_token": csrf, "local_time": wall_time(2, zone)}
    )
    assert f'data-confirmation="{second_id}"' in browser.receipt

    # Without the CSRF token, or from another site, nothing is created.
    forged = browser.post_form(
        f"/installations/{installation_id}/schedules",
        {**fields, "csrf_token": "x" * 43, "local_time": wall_time(4, zone)},
    )
    assert forged.status_code == 403

    # A second content launch schedules other content; a manage launch cancels it.
    news_csrf = launch(core, browser, installation_id, content_id="cnt_news")
    news = {**fields, **browser.shown, "csrf_token": news_csrf, "local_time": wall_time(2, zone)}
    news_id = schedule_on_form(browser, installation_id, news)
    cancel_from_manage(core, browser, installation_id, news_id)

    rows = {
        row["id"]: row
        for row in dev_worker.sql(
            "SELECT id, content_id, status, revision, due_at, idempotency_key, version_id"
            " FROM schedules"
        )
    }
    assert {key: (row["content_id"], row["status"]) for key, row in rows.items()} == {
        first_id: ("cnt_spring", "superseded"),
        second_id: ("cnt_spring", "pending"),
        news_id: ("cnt_news", "cancelled"),
    }
    due = rows[second_id]
    assert due["revision"] == 2
    assert due["idempotency_key"] == f"sched:{installation_id}:{second_id}:r2"
    expected_due = datetime.fromisoformat(wall_time(2, zone)).replace(tzinfo=ZoneInfo(zone))
    assert due["due_at"] == int(expected_due.timestamp() * 1000)

    assert_sent_once_due(dev_worker, core, second_id, due)
    page = browser.get(f"/installations/{installation_id}")
    assert page.status_code == 200
    assert 'data-status="cancelled"' in page.text  # the manage page lists every schedule
    assert f'id="schedule-{second_id}" data-schedule-id="{second_id}" data-status="completed"' in (
        page.text
    )
    assert_deleted(dev_worker, client, browser, installation_id)


# One way of writing an instant: `Thu 2 Jul 2026, 12:00 CEST (Europe/Paris; 10:00 UTC)`.
INSTANT = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d"


def assert_a_refusal_offers_the_fix(browser: Browser, base: str, fields: dict[str, str]) -> None:
    """A time the clocks skip is refused with the first minute after the jump, and a zone
    misspelt with the one meant, one click away."""
    skipped = browser.post_form(
        f"{base}/schedules",
        {**fields, "timezone": "Europe/Berlin", "local_time": "2027-03-28T02:30"},
    )
    assert skipped.status_code == 422
    assert 'data-retry-local-time="2027-03-28T03:00"' in skipped.text
    assert "the clocks jump from 02:00 to 03:00" in skipped.text
    unknown = browser.post_form(
        f"{base}/schedules",
        {**fields, "timezone": "Europe/Berln", "local_time": wall_time(2, "Europe/Paris")},
    )
    assert unknown.status_code == 422
    assert 'data-retry-timezone="Europe/Berlin"' in unknown.text


def test_the_content_page_speaks_plainly_under_pyodide(
    dev_worker: Harness, core: FakeCoreProcess, client: httpx.Client
) -> None:
    """The editor's page through the real entry: the replace warning and receipt, the deadline
    with its date, zone and RFC 3339 instant, folded history, zone names in any case, the first
    minute after a gap, the cancel confirmation, and no raw date-time anywhere."""
    from tests.support.time_format import raw_times

    installation_id = install(core, client)["id"]
    browser = Browser(client, dev_worker.origin)
    csrf = launch(core, browser, installation_id, content_id="cnt_spring")
    fields = {"transition": "publish:published", "fold": "", "csrf_token": csrf, **browser.shown}
    base = f"/installations/{installation_id}"
    first_id = schedule_on_form(
        browser,
        installation_id,
        {**fields, "timezone": "europe/paris", "local_time": wall_time(3, "Europe/Paris")},
    )
    assert dev_worker.sql("SELECT timezone FROM schedules") == [{"timezone": "Europe/Paris"}]

    # The form now says, on the publish choice, what a new schedule would replace.
    form = browser.get(base).text
    assert f'data-replaces="{first_id}"' in form
    assert re.search(
        rf"A new schedule replaces the waiting one of version \S+ for {INSTANT} CES?T", form
    )

    second_id = schedule_on_form(
        browser,
        installation_id,
        {**fields, "timezone": "Europe/Paris", "local_time": wall_time(2, "Europe/Paris")},
    )
    receipt = browser.receipt
    assert f'data-replaced="{first_id}"' in receipt
    deadline = re.search(r'<p data-deadline="([^"]+)">', receipt)
    assert deadline
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:00Z", deadline.group(1))
    assert re.search(
        rf"nothing is sent after <time [^>]+>{INSTANT} CES?T \(Europe/Paris; ", receipt
    )
    assert 'data-history-count="1" data-replaced-count="1"' in receipt
    assert raw_times(receipt) == []

    assert_a_refusal_offers_the_fix(browser, base, fields)

    # Cancel asks first, naming the content by its title.
    confirm = browser.get(f"{base}/schedules/{second_id}/cancel")
    assert confirm.status_code == 200, confirm.text
    assert f'data-cancel-confirmation="{second_id}"' in confirm.text
    assert "“Spring launch”" in confirm.text
    assert raw_times(confirm.text) == []
    cancelled = browser.post_form(f"{base}/schedules/{second_id}/cancel", {"csrf_token": csrf})
    assert cancelled.status_code == 303
    after = browser.get(cancelled.headers["location"]).text
    assert f'data-cancelled="{second_id}"' in after
    assert re.search(rf"Cancelled: the schedule to publish version \S+ at {INSTANT}", after)


def test_tick_gives_up_on_a_silent_core_after_ten_seconds(
    worker: Harness, recorder: Recorder
) -> None:
    """WorkersFetch's AbortSignal.timeout fires and maps to TransportTimeout (code `timeout`)."""
    recorder.answers = {"cnt_silent": (200, {"code": "transition_applied"})}
    recorder.stall_s = {"cnt_silent": 12.0}
    due = due_soon()
    sealed = worker.seal("dwp_" + "s" * 43, "installation-token:ins_silent")
    worker.execute(
        installation_row("ins_silent", recorder.base_url, sealed),
        schedule_row("sch_silent", "ins_silent", "cnt_silent", due_at=due),
    )
    started = time.monotonic()
    worker.scheduled(due + 1_000)
    assert 9.5 <= time.monotonic() - started < 12.0
    rows = worker.sql(
        "SELECT s.status, s.result_code, a.code, a.http_status,"
        " a.finished_at - a.started_at AS took"
        " FROM schedules s JOIN schedule_attempts a ON a.schedule_id = s.id"
    )
    assert len(rows) == 1
    assert (rows[0]["status"], rows[0]["code"], rows[0]["http_status"]) == (
        "retrying",
        "timeout",
        None,
    )
    assert rows[0]["took"] >= 10_000  # finished = the tick's instant advanced by real time

"""Webhooks from the real Worker entry under Pyodide: the endpoint added through the manage
page (its secret made and sealed with WebCrypto), the event written in D1 with the settle, the
delivery signed with WebCrypto's HMAC and sent with the Worker's fetch to a receiver on
loopback, and its signature verified here, on CPython, with the official `standardwebhooks`."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import httpx
import pytest

from scheduling.channels import chat, webhook_signing
from tests.pyodide_harness.harness import FakeCoreProcess, Harness
from tests.support.loopback_core import Loopback, loopback_receiver
from tests.support.webhooks import SECRET_VALUE, verify
from tests.support.worker_browser import Browser, install, launch, remove_installation

pytestmark = pytest.mark.pyodide

MINUTE = 60_000


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (b"\x0b" * 20, b"Hi There"),  # RFC 4231 test case 1
        (b"Jefe", b"what do ya want for nothing?"),  # test case 2
        (bytes(range(32)), b"msg_1.1782900000.{}"),
        (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First"),  # case 6
    ],
)
def test_webcrypto_hmac_is_the_standard_librarys(
    harness: Harness, key: bytes, message: bytes
) -> None:
    assert harness.hmac_sha256(key, message) == hmac.digest(key, message, hashlib.sha256)


@pytest.fixture
def receiver() -> Iterator[Loopback]:
    with loopback_receiver() as running:
        yield running


@contextmanager
def _installed(
    harness: Harness, core: FakeCoreProcess, receiver: Loopback
) -> Iterator[tuple[str, Browser]]:
    """An installation, Dee Wan and the receiver development origins; removed after."""
    origin = receiver.base_url
    dev = {"ENVIRONMENT": "development", "DEE_WAN_DEV_ORIGINS": f"{core.base_url},{origin}"}
    with harness.vars(**dev), httpx.Client(base_url=harness.origin, timeout=60) as client:
        installation_id = install(core, client)["id"]
        try:
            yield installation_id, Browser(client, harness.origin)
        finally:
            remove_installation(harness, installation_id)


@contextmanager
def _refusal_due(
    harness: Harness, core: FakeCoreProcess, receiver: Loopback, kind: str = "webhook"
) -> Iterator[tuple[str, str, int]]:
    """An installation with one endpoint of `kind` (the receiver) and a publish due at the
    next whole minute but one, which Dee Wan will refuse (409); yields the installation's id,
    the endpoint's secret (a chat's: its URL) and the due instant, and removes them after."""
    with _installed(harness, core, receiver) as (installation_id, browser):
        add = _add_chat_endpoint if kind == "chat" else _add_endpoint
        secret = add(harness, core, browser, installation_id, receiver.url)
        due = _schedule_soon(core, browser, installation_id)
        refuse = {"kind": "respond", "status": 409, "code": "workflow_conflict"}
        core.control("POST", "faults", {"faults": [refuse]})
        yield installation_id, secret, due


def test_a_refusal_is_told_signed_with_webcrypto_and_verifies_on_cpython(
    harness: Harness, core: FakeCoreProcess, receiver: Loopback
) -> None:
    with _refusal_due(harness, core, receiver) as (installation_id, secret, due):
        harness.scheduled(due)
        [delivery] = receiver.received
        event = verify(secret, delivery)  # standardwebhooks, its time window included
        assert event["type"] == "schedule.refused"
        assert event["data"]["result_code"] == "workflow_conflict"
        assert event["data"]["installation_id"] == installation_id
        assert delivery.headers["content-type"] == "application/json"
        [row] = harness.sql(
            "SELECT id, status, attempt_count, last_http_status, last_error"
            " FROM webhook_deliveries WHERE installation_id = ?",
            installation_id,
        )
        assert row == {
            "id": delivery.headers["webhook-id"],
            "status": "delivered",
            "attempt_count": 1,
            "last_http_status": 204,  # no body: JS null, which the fetch adapter reads
            "last_error": None,
        }
        harness.scheduled(due + MINUTE)
        assert len(receiver.received) == 1  # delivered once


def test_with_the_clocks_the_alarm_that_settles_a_refusal_tells_it(
    harness: Harness, core: FakeCoreProcess, receiver: Loopback
) -> None:
    """`SCHEDULE_CLOCK` bound: the installation's clock's `alarm()` sends, settles and then
    delivers the event its settle wrote, in the same invocation, signed with WebCrypto."""
    with _refusal_due(harness, core, receiver) as (installation_id, secret, _):
        soon = int(time.time() * 1000) + 2_000  # its second, moved near
        harness.execute(
            (
                "UPDATE schedules SET due_at = ?1, next_attempt_at = ?1 WHERE installation_id = ?2",
                [soon, installation_id],
            )
        )
        alarms = len(harness.events("runner_alarm"))
        with harness.bound_clock():
            harness.clock(tell=[installation_id])
            time.sleep(max(0.0, soon / 1000 + 1 - time.time()))
            harness.clock(wait=True)
        [delivery] = receiver.received
        event = verify(secret, delivery)
        assert event["type"] == "schedule.refused"
        assert event["data"]["result_code"] == "workflow_conflict"
        [settling] = [line for line in harness.events("runner_alarm")[alarms:] if line["refused"]]
        assert settling["delivery_events"] == settling["deliveries_delivered"] == 1


def test_a_refusal_is_one_line_of_a_chat_message_its_url_sealed_with_webcrypto(
    harness: Harness, core: FakeCoreProcess, receiver: Loopback
) -> None:
    with _refusal_due(harness, core, receiver, kind="chat") as (installation_id, url, due):
        harness.scheduled(due)
        [message] = receiver.received
        assert message.headers["content-type"] == "application/json"
        text = json.loads(message.body)["text"]
        [line, tail] = text.split("\n")
        assert line.startswith("• Could not publish “Spring launch” (")  # its title, sealed in D1
        # The card's own sentence for Dee Wan's 409 `workflow_conflict`.
        assert ": Dee Wan's workflow does not allow this change from the content" in line
        assert line.endswith("so it was not applied. Check the content in Dee Wan, then try again.")
        assert tail.endswith(f"/installations/{installation_id}")
        [row] = harness.sql(
            "SELECT status, last_http_status FROM webhook_deliveries WHERE installation_id = ?",
            installation_id,
        )
        assert row == {"status": "delivered", "last_http_status": 204}
        harness.scheduled(due + MINUTE)
        assert len(receiver.received) == 1  # told once
        assert url not in "".join(json.dumps(e) for e in harness.events("runner_tick"))


def _post_endpoint(
    core: FakeCoreProcess, browser: Browser, installation_id: str, url: str, *, kind: str
) -> httpx.Response:
    """The Notifications form, from a manage launch, hearing of refusals."""
    csrf = launch(core, browser, installation_id)
    fields = {"csrf_token": csrf, "opened_for": "manage", "kind": kind, "url": url}
    form = {**fields, "events": ["schedule.refused"]}
    return browser.post_form(f"/installations/{installation_id}/notifications", form)


def _add_chat_endpoint(
    harness: Harness, core: FakeCoreProcess, browser: Browser, installation_id: str, url: str
) -> str:
    """Through the manage page's form with kind `chat`: the URL is shown once, D1 holds it
    sealed (WebCrypto) and, in plain, only its host and last 4 characters."""
    added = _post_endpoint(core, browser, installation_id, url, kind="chat")
    assert added.status_code == 303, added.text
    page = browser.get(f"/installations/{installation_id}").text
    assert f"data-secret-url>{url}<" in page, page[-3000:]
    assert url not in browser.get(f"/installations/{installation_id}").text  # once
    [endpoint_id] = re.findall(r'data-endpoint-id="([^"]+)"', page)
    [row] = harness.sql(
        "SELECT url, secret_sealed FROM notification_endpoints WHERE id = ?", endpoint_id
    )
    assert row["url"] == f"127.0.0.1:{url.split(':')[2].split('/')[0]} …{url[-4:]}"
    assert url not in row["secret_sealed"]
    context = chat.url_context(installation_id, endpoint_id)
    assert harness.open(row["secret_sealed"], context) == {"plaintext": url}
    return url


def _add_endpoint(
    harness: Harness, core: FakeCoreProcess, browser: Browser, installation_id: str, url: str
) -> str:
    """Through the manage page's form; the secret is shown once, and D1 holds it sealed."""
    added = _post_endpoint(core, browser, installation_id, url, kind="webhook")
    assert added.status_code == 303, added.text
    page = browser.get(f"/installations/{installation_id}").text
    found = SECRET_VALUE.search(page)
    assert found, page[-3000:]
    secret = found.group(1)
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    assert secret not in browser.get(f"/installations/{installation_id}").text  # once
    [endpoint_id] = re.findall(r'data-endpoint-id="([^"]+)"', page)
    [row] = harness.sql(
        "SELECT secret_sealed FROM notification_endpoints WHERE id = ?", endpoint_id
    )
    assert secret not in row["secret_sealed"]
    context = webhook_signing.secret_context(installation_id, endpoint_id)
    assert harness.open(row["secret_sealed"], context) == {"plaintext": secret}
    return secret


def _schedule(
    core: FakeCoreProcess, browser: Browser, installation_id: str, transition: str, local: str
) -> str:
    """A schedule of cnt_spring through the content page's form, in UTC; its id."""
    csrf = launch(core, browser, installation_id, content_id="cnt_spring")
    fields = {"csrf_token": csrf, "transition": transition, "local_time": local, "timezone": "UTC"}
    made = browser.post_form(
        f"/installations/{installation_id}/schedules", {**browser.shown, **fields, "fold": ""}
    )
    assert made.status_code == 303, made.text
    return str(made.headers["location"].rsplit("=", 1)[1])


def _schedule_soon(core: FakeCoreProcess, browser: Browser, installation_id: str) -> int:
    """A publish due at the next whole minute but one; that instant."""
    due = (int(time.time() * 1000) // MINUTE + 2) * MINUTE
    local = datetime.fromtimestamp(due / 1000, UTC).strftime("%Y-%m-%dT%H:%M")
    _schedule(core, browser, installation_id, "publish:published", local)
    return due


def test_a_completion_tells_at_once_of_the_schedule_it_put_out_of_date(
    harness: Harness, core: FakeCoreProcess, receiver: Loopback
) -> None:
    """Issue 38 in the real D1: the settle's trigger marks the waiting unpublish the done
    publish put out of date, and the same batch writes its `schedule.stale` event."""
    with _installed(harness, core, receiver) as (installation_id, browser):
        secret = _add_endpoint(harness, core, browser, installation_id, receiver.url)
        core.control("POST", "content", {"content_id": "cnt_spring", "action": "publish"})
        core.control("POST", "content", {"content_id": "cnt_spring", "action": "edit"})
        due = _schedule_soon(core, browser, installation_id)
        next_summer = f"{datetime.now(UTC).year + 1}-07-01T09:00"
        unpublish = _schedule(core, browser, installation_id, "unpublish:draft", next_summer)
        harness.scheduled(due)
        [row] = harness.sql("SELECT status, made_stale_by FROM schedules WHERE id = ?", unpublish)
        assert row["status"] == "pending"
        assert row["made_stale_by"] is not None
        [delivery] = receiver.received
        event = verify(secret, delivery)
        assert event["type"] == "schedule.stale"
        assert event["data"]["schedule_id"] == unpublish
        assert "Needs a new pin" in event["data"]["message"]

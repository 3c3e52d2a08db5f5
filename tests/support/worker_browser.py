"""A browser and an operator for the Worker under the Pyodide harness, with fake_core as the
Dee Wan that installs and launches it (`python -m fake_core`, `FakeCoreProcess`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.pyodide_harness.harness import ADMIN_SECRET, FakeCoreProcess, Harness

OPERATOR = {"authorization": f"Bearer {ADMIN_SECRET}"}


def mint_code(client: httpx.Client, installation_id: str | None = None) -> str:
    body = {} if installation_id is None else {"installation_id": installation_id}
    response = client.post("/admin/activation-codes", headers=OPERATOR, json=body)
    assert response.status_code == 201, response.text
    code = response.json()["code"]
    assert isinstance(code, str)
    return code


def install(core: FakeCoreProcess, client: httpx.Client) -> dict[str, Any]:
    answer = core.control("POST", "install", {"code": mint_code(client)})
    assert answer["code"] == "installed", answer
    installation: dict[str, Any] = answer["installation"]
    return installation


SESSION_COOKIE = "__Host-scheduling_session"


@dataclass
class Browser:
    """A browser on the Worker's origin; keeps the `__Host-` cookie by hand.

    http.cookiejar will not send a `Secure` cookie over http://, while browsers
    treat http://localhost as a secure context and do.
    """

    http: httpx.Client
    origin: str
    cookie: str | None = None
    shown: dict[str, str] = field(default_factory=dict)  # the versions the last page's form carries
    receipt: str = ""  # the page a schedule's create led to

    def get(self, url: str) -> httpx.Response:
        response = self.http.get(url, headers=self._headers())
        self._keep(response)
        return response

    def post_form(self, path: str, fields: dict[str, Any]) -> httpx.Response:
        """A same-origin form; a list value repeats its field (checkboxes)."""
        headers = {**self._headers(), "origin": self.origin, "sec-fetch-site": "same-origin"}
        response = self.http.post(path, data=fields, headers=headers)
        self._keep(response)
        return response

    def _headers(self) -> dict[str, str]:
        return {"cookie": f"{SESSION_COOKIE}={self.cookie}"} if self.cookie else {}

    def _keep(self, response: httpx.Response) -> None:
        for header in response.headers.get_list("set-cookie"):
            name, _, rest = header.partition("=")
            if name == SESSION_COOKIE:
                self.cookie = rest.split(";", 1)[0]


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([A-Za-z0-9_-]{43})"', page)
    assert found, page[:2000]
    return found.group(1)


def launch(core: FakeCoreProcess, browser: Browser, installation_id: str, **context: str) -> str:
    """Open the Worker from core's launch URL; returns the session's CSRF token (a manage
    launch's from its Notifications page; its cancels ask first, on a page with its own form).
    Manage (no content) is opened by the demo's site admin: Dee Wan offers it to admins only."""
    person = "usr_editor" if context else "usr_admin"
    issued = core.control(
        "POST", "launch", {"installation_id": installation_id, "person_id": person, **context}
    )
    url = issued["url"]
    assert url.startswith(f"{browser.origin}/installations/{installation_id}?dee_wan_launch=dwl_")
    exchanged = browser.get(url)
    assert exchanged.status_code == 303, exchanged.text
    # The launch's page, by its handle (a tab of its own).
    assert exchanged.headers["location"].startswith(f"/installations/{installation_id}?tab=")
    cookie = exchanged.headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=")
    for attribute in ("Path=/", "Secure", "HttpOnly", "SameSite=Lax"):
        assert attribute in cookie
    assert issued["launch_code"] not in exchanged.headers["location"] + cookie
    page = browser.get(exchanged.headers["location"])
    assert page.status_code == 200, page.text
    assert page.headers["content-type"].startswith("text/html")
    browser.shown = dict(
        re.findall(r'name="((?:published_)?version_id)" value="([^"]*)"', page.text)
    )
    if not context:  # the schedules of a manage launch carry no form
        page = browser.get(f"/installations/{installation_id}/notifications")
    return csrf_of(page.text)


def remove_installation(harness: Harness, installation_id: str) -> None:
    """Everything a test made for one installation in the shared harness's D1, removed."""
    endpoints = "(SELECT id FROM notification_endpoints WHERE installation_id = ?)"
    harness.execute(
        ("DELETE FROM webhook_deliveries WHERE installation_id = ?", [installation_id]),
        (
            f"DELETE FROM notification_subscriptions WHERE endpoint_id IN {endpoints}",
            [installation_id],
        ),
        ("DELETE FROM notification_endpoints WHERE installation_id = ?", [installation_id]),
        (
            "DELETE FROM schedule_attempts WHERE schedule_id IN"
            " (SELECT id FROM schedules WHERE installation_id = ?)",
            [installation_id],
        ),
        ("DELETE FROM schedules WHERE installation_id = ?", [installation_id]),
        ("DELETE FROM releases WHERE installation_id = ?", [installation_id]),
        ("DELETE FROM sessions WHERE installation_id = ?", [installation_id]),
        ("DELETE FROM people WHERE installation_id = ?", [installation_id]),
        ("DELETE FROM proposals WHERE installation_id = ?", [installation_id]),
        ("DELETE FROM agent_keys WHERE installation_id = ?", [installation_id]),
        ("DELETE FROM activation_codes WHERE installation_id = ?", [installation_id]),
        ("DELETE FROM installations WHERE id = ?", [installation_id]),
    )

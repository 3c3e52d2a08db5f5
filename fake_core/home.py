"""`GET /`: a local Dee Wan for humans — installations, content, launch buttons, a log.

This module gathers what the page shows; `templates.HOME` lays it out, with
every value escaped by jinja2. Its forms post to /ui/* (see `ui`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from fake_core.clock import rfc3339
from fake_core.context import Context
from fake_core.record import Call
from fake_core.routing import Request
from fake_core.state import CoreState, Installation
from fake_core.templates import STYLE
from fake_core.wire import Reply, bearer

CSP = "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'"
LOG_LIMIT = 50  # transition commands shown, newest first
STALE_NOTE = (
    "“New version” makes a new current version, as an editor saving in Dee Wan "
    "would. A schedule pinned to an older version will be refused as stale "
    "(409 scheduled_target_stale): see the log of transitions below."
)
_KEY_INSTALLATION = re.compile(r"sched:([A-Za-z0-9_-]{1,64}):")  # protocol v1 §6 key shape


@dataclass(frozen=True)
class InstallationRow:
    id: str
    plugin_origin: str
    status: str
    capabilities: str
    models: str
    active: bool
    one_click: bool  # "Rotate token": the operator secret is for this plugin


@dataclass(frozen=True)
class ContentRow:
    id: str
    title: str
    model: str
    locale: str
    primary_id: str
    current: str
    published: str
    revision: int


async def show(ctx: Context, request: Request) -> Reply:
    state = ctx.core.state
    one_click = ctx.plugin_admin_secret is not None
    calls = ctx.core.calls.of("transitions")
    html = ctx.templates.get_template("home.html").render(
        site=state.site,
        base_url=ctx.core.base_url,
        notice=ctx.take_notice(),
        plugin_origin=ctx.plugin_origin,
        one_click=one_click,
        installations=[
            _installation_row(i, one_click and i.plugin_origin == ctx.plugin_origin)
            for i in state.installations.values()
        ],
        active=[i.id for i in state.installations.values() if not i.revoked],
        persons=list(state.persons.values()),
        contents=_content_rows(state),
        stale_note=STALE_NOTE,
        log=[_log_row(state, call) for call in calls[::-1][:LOG_LIMIT]],
        log_total=len(calls),
    )
    headers = {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": CSP,
        "cache-control": "no-store",
    }
    return Reply(200, headers, html.encode())


async def style(ctx: Context, request: Request) -> Reply:
    return Reply(200, {"content-type": "text/css"}, STYLE)


def _installation_row(installation: Installation, one_click: bool) -> InstallationRow:
    models = installation.models
    return InstallationRow(
        installation.id,
        installation.plugin_origin,
        "revoked" if installation.revoked else "active",
        ", ".join(sorted(installation.capabilities)),
        "all" if models is None else ", ".join(sorted(models)),
        active=not installation.revoked,
        one_click=one_click and not installation.revoked,
    )


def _content_rows(state: CoreState) -> list[ContentRow]:
    rows = []
    for item in state.contents.values():
        group = state.groups[item.primary_id]
        rows.append(
            ContentRow(
                item.id,
                item.title,
                item.model,
                item.locale,
                item.primary_id,
                group.current_version_id,
                group.published_version_id or "—",
                group.revision,
            )
        )
    return rows


# -- the log of transition commands --------------------------------------------


def _log_row(state: CoreState, call: Call) -> tuple[str, ...]:
    """time, content, title, kind, pinned version, answer, applied, installation."""
    body = call.body if isinstance(call.body, dict) else {}
    content_id = body.get("content_id")
    item = state.contents.get(content_id) if isinstance(content_id, str) else None
    return (
        rfc3339(call.at_ms),
        _text(content_id),
        item.title if item is not None else "—",
        _text(body.get("kind")),
        _text(body.get("version_id")),
        _answer(call),
        "yes" if call.applied else "no",
        _sender(state, call),
    )


def _text(value: object) -> str:
    if value is None:
        return "—"
    return value if isinstance(value, str) else json.dumps(value)


def _answer(call: Call) -> str:
    if call.outcome == "timed_out":
        return "no answer (held until the plugin gave up; not processed)"
    if call.outcome == "dropped":
        return "no answer (connection dropped after processing)"
    answer = f"{call.status} {call.code or '(no code)'}"
    if call.fault is not None and call.fault.fakes_response:
        answer += f" (injected {call.fault.kind} fault; not processed)"
    if call.outcome == "client_gave_up":
        answer += " (the plugin stopped waiting)"
    return answer


def _sender(state: CoreState, call: Call) -> str:
    """The installation whose token it was, else the one its Idempotency-Key names."""
    token = bearer(call.headers)
    for installation in state.installations.values():
        if token is not None and installation.token == token:
            return installation.id
    match = _KEY_INSTALLATION.match(call.header("Idempotency-Key") or "")
    if match is not None and match.group(1) in state.installations:
        return match.group(1)
    return "—"

"""`GET /`: a local Dee Wan for humans — installations, content, launch buttons, a log.

Manage is offered to site admins only, as Dee Wan does; "Run the tick now"
only when the server was told the plugin's development tick trigger.

This module gathers what the page shows; `templates.HOME` lays it out, with
every value escaped by jinja2. Its forms post to /ui/* (see `ui`).
"""

from __future__ import annotations

from dataclasses import dataclass

from fake_core import chat
from fake_core.clock import readable
from fake_core.context import Context
from fake_core.routing import Request
from fake_core.state import CoreState, Installation, ReceivedTransition, ReceivedWebhook
from fake_core.templates import STYLE
from fake_core.wire import Reply

CSP = "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'"
LOG_LIMIT = 50  # transition commands shown, newest first
LOG_HEADINGS = (
    "time (UTC)",
    "content",
    "title",
    "kind",
    "pinned version",
    "answer",
    "applied",
    "installation",
)
STALE_NOTE = (
    "“New version” makes a new current version, as an editor saving in Dee Wan "
    "would. A schedule pinned to an older version will be refused as stale "
    "(409 scheduled_target_stale): see the log of transitions below."
)


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


def failure_state(ctx: Context) -> list[str]:
    """The failure switches now, in words (empty: Dee Wan answers normally)."""
    faults, now = ctx.core.faults, ctx.core.now_ms()
    said = []
    if faults.is_down(now) and faults.down_until_ms is not None:
        said.append(f"Down until {readable(faults.down_until_ms)} UTC: every call gets 503.")
    slow = faults.latency_s.get("*", 0.0)
    if slow:
        said.append(f"Every answer comes {slow:g} s late.")
    for entry in faults.pending():
        what = {"content": "content read", "transitions": "change command"}.get(
            entry["endpoint"], f"{entry['endpoint']} call"
        )
        fault = entry["fault"]
        answer = (
            f"{fault.get('status', '')} {fault.get('code') or ''}".strip()
            if fault["kind"] == "respond"
            else fault["kind"].replace("_", " ")
        )
        said.append(f"The next {what} gets {answer}.")
    return said


async def show(ctx: Context, request: Request) -> Reply:
    state = ctx.core.state
    one_click = ctx.plugin_admin_secret is not None
    received = state.received
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
        admins=[person for person in state.persons.values() if person.is_admin],
        contents=_content_rows(state),
        stale_note=STALE_NOTE,
        tick=ctx.plugin_tick_url is not None,
        log_headings=LOG_HEADINGS,
        log=[_log_row(state, entry) for entry in received[::-1][:LOG_LIMIT]],
        log_total=len(received),
        webhook_url=f"{ctx.core.base_url}/webhooks",
        secrets_kept=len(state.webhook_secrets),
        webhooks=[_webhook_row(entry) for entry in state.webhooks[::-1]],
        failures=failure_state(ctx),
        chat_url=f"{ctx.core.base_url}/chat/scheduling",
        chat_messages=[chat.shown(message) for message in state.chat_messages],
    )
    headers = {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": CSP,
        "cache-control": "no-store",
    }
    return Reply(200, headers, html.encode())


async def style(ctx: Context, request: Request) -> Reply:
    return Reply(200, {"content-type": "text/css"}, STYLE)


def _webhook_row(entry: ReceivedWebhook) -> tuple[str, str, str, str, str]:
    verified = "verified" if entry.verified else f"not verified: {entry.finding}"
    return (readable(entry.at_ms), entry.event_type, entry.webhook_id, entry.summary, verified)


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


def _log_row(state: CoreState, entry: ReceivedTransition) -> tuple[str, ...]:
    """time, content, title, kind, pinned version, answer, applied, installation."""
    item = state.contents.get(entry.content_id)
    return (
        readable(entry.at_ms),
        entry.content_id,
        item.title if item is not None else "—",
        entry.kind,
        entry.version_id,
        entry.answer,
        "yes" if entry.applied else "no",
        entry.installation_id or "—",
    )

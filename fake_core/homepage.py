"""`GET /`: a local Dee Wan for humans — installations, content, launch buttons, a log.

Every value is escaped; the page has no script at all. Forms post to /ui/*,
which answer 303 (to the plugin's launch URL, or back here with a notice).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

import httpx

from fake_core.clock import rfc3339
from fake_core.install import InstallError
from fake_core.record import Call
from fake_core.wire import Reply, bearer, has_shape, is_id, parse_json_object
from scheduling.ports import TransportError

if TYPE_CHECKING:
    from fake_core.app import FakeCoreApp

CSP = "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'"
STYLE = b"""body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}
table{border-collapse:collapse;margin-bottom:1.5rem}td,th{border:1px solid #ccc;padding:.3rem .5rem}
form{display:inline-block;margin:.15rem .3rem .15rem 0}label{margin-right:.3rem}
button,select,input{min-height:26px;min-width:26px}
.notice{background:#ffd;padding:.5rem;border:1px solid #cc9}.log td:first-child{white-space:nowrap}
"""
LOG_LIMIT = 50  # transition commands shown, newest first
STALE_NOTE = (
    "“New version” makes a new current version, as an editor saving in Dee Wan "
    "would. A schedule pinned to an older version will be refused as stale "
    "(409 scheduled_target_stale): see the log of transitions below."
)
# What a failed call to the plugin raises: the socket (OSError), httpx, or the in-process port.
UNREACHABLE = (OSError, httpx.HTTPError, httpx.InvalidURL, TransportError)
_KEY_INSTALLATION = re.compile(r"sched:([A-Za-z0-9_-]{1,64}):")  # protocol v1 §6 key shape


class Refusal(Exception):
    """A plain-language reason an action did nothing; becomes the notice."""


def page(app: FakeCoreApp) -> Reply:
    state, notice = app.core.state, app.take_notice()
    persons = "".join(
        f'<option value="{escape(p.id)}">{escape(p.name)}</option>' for p in state.persons.values()
    )
    active = [i for i in state.installations.values() if not i.revoked]
    one_click = app.plugin_admin_secret is not None
    rows = []
    for i in state.installations.values():
        models = "all" if i.models is None else ", ".join(sorted(i.models))
        action = ""
        if not i.revoked:
            action = _form("/ui/uninstall", "Uninstall", installation_id=i.id)
            if one_click and i.plugin_origin == app.plugin_origin:
                action += _form("/ui/rotate-now", "Rotate token", installation_id=i.id)
            action += (
                '<form method="post" action="/ui/rotate">'
                f'<input type="hidden" name="installation_id" value="{escape(i.id)}">'
                f"<label>Rotation code for {escape(i.id)} "
                '<input name="code" required autocomplete="off"></label>'
                "<button>Rotate with code</button></form>"
            )
        rows.append(
            _row(
                i.id,
                i.plugin_origin,
                "revoked" if i.revoked else "active",
                ", ".join(sorted(i.capabilities)),
                models,
                raw=action,
            )
        )
    contents = []
    for item in state.contents.values():
        group = state.groups[item.primary_id]
        buttons = "".join(
            _form(
                "/ui/launch",
                f"Schedule ({i.id})",
                persons,
                installation_id=i.id,
                content_id=item.id,
            )
            for i in active
        )
        buttons += _form("/ui/edit", "New version", content_id=item.id)
        contents.append(
            _row(
                item.id,
                item.title,
                item.model,
                item.locale,
                item.primary_id,
                group.current_version_id,
                group.published_version_id or "—",
                str(group.revision),
                raw=buttons,
            )
        )
    manage = "".join(
        _form("/ui/launch", f"Scheduling ({i.id})", persons, installation_id=i.id) for i in active
    )
    mint_install = (
        f"<p>Or, as the operator of the plugin at {escape(app.plugin_origin)}: "
        + _form("/ui/mint-install", "Mint a code and install")
        + "</p>"
        if one_click
        else ""
    )
    html = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Local Dee Wan (fake core)</title><link rel="stylesheet" href="/style.css"></head><body><main>
<h1>Local Dee Wan</h1>
<p>Site {escape(state.site.id)}, time zone {escape(state.site.timezone)}.
Core base URL {escape(app.core.base_url)}.</p>
{f'<p class="notice" role="status">{escape(notice)}</p>' if notice else ""}
<h2>Installations</h2>
<p>Rotating gives the installation a new token; the old one stops working at once.
A rotation code (dwa_…) is minted by the plugin's operator for that installation.</p>
<table><tr><th>id</th><th>plugin</th><th>status</th><th>capabilities</th><th>models</th>
<th>actions</th></tr>{"".join(rows)}</table>
<form method="post" action="/ui/install">
<label>Plugin origin <input name="plugin_origin" value="{escape(app.plugin_origin)}"></label>
<label>Activation code <input name="code" required autocomplete="off"></label>
<button>Install</button></form>
{mint_install}
<h2>Manage</h2><p>{manage or "No active installation."}</p>
<h2>Content</h2>
<p>{escape(STALE_NOTE)}</p>
<table><tr><th>id</th><th>title</th><th>model</th><th>locale</th><th>primary</th>
<th>current</th><th>published</th><th>revision</th><th>actions</th></tr>{"".join(contents)}</table>
<h2>Transitions received</h2>
{_transitions_log(app)}
</main></body></html>"""
    return Reply(
        200,
        {
            "content-type": "text/html; charset=utf-8",
            "content-security-policy": CSP,
            "cache-control": "no-store",
        },
        html.encode(),
    )


def style() -> Reply:
    return Reply(200, {"content-type": "text/css"}, STYLE)


# -- the log of transition commands --------------------------------------------


def _transitions_log(app: FakeCoreApp) -> str:
    calls = app.core.calls.of("transitions")
    if not calls:
        return "<p>No transition command received yet.</p>"
    shown = calls[::-1][:LOG_LIMIT]
    intro = (
        "<p>Every transition command the plugin sent, newest first"
        + (f" (the last {LOG_LIMIT} of {len(calls)})" if len(calls) > LOG_LIMIT else "")
        + ". Times are UTC.</p>"
    )
    head = (
        '<table class="log"><tr><th scope="col">time (UTC)</th><th scope="col">content</th>'
        '<th scope="col">title</th><th scope="col">kind</th><th scope="col">pinned version</th>'
        '<th scope="col">answer</th><th scope="col">applied</th>'
        '<th scope="col">installation</th></tr>'
    )
    return intro + head + "".join(_log_row(app, call) for call in shown) + "</table>"


def _log_row(app: FakeCoreApp, call: Call) -> str:
    body = call.body if isinstance(call.body, dict) else {}
    content_id = body.get("content_id")
    item = app.core.state.contents.get(content_id) if isinstance(content_id, str) else None
    return _row(
        rfc3339(call.at_ms),
        _text(content_id),
        item.title if item is not None else "—",
        _text(body.get("kind")),
        _text(body.get("version_id")),
        _answer(call),
        "yes" if call.applied else "no",
        _sender(app, call),
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


def _sender(app: FakeCoreApp, call: Call) -> str:
    """The installation whose token it was, else the one its Idempotency-Key names."""
    installations = app.core.state.installations
    token = bearer(call.headers)
    for installation in installations.values():
        if token is not None and installation.token == token:
            return installation.id
    match = _KEY_INSTALLATION.match(call.header("Idempotency-Key") or "")
    if match is not None and match.group(1) in installations:
        return match.group(1)
    return "—"


# -- /ui/* actions ---------------------------------------------------------------

Form = dict[str, str]
Action = Callable[["FakeCoreApp", Form], Awaitable[str | Reply]]


async def action(app: FakeCoreApp, name: str, body: bytes) -> Reply:
    handler = _ACTIONS.get(name)
    if handler is None:
        return Reply(404, {"content-type": "text/plain"}, b"not found")
    parsed = _parse_form(body)
    try:
        result = await handler(app, parsed)
        if isinstance(result, Reply):
            return result
        app.notice = result
    except Refusal as exc:
        app.notice = str(exc)
    except InstallError as exc:
        app.notice = _install_failed(name, exc)
    except (KeyError, ValueError) as exc:
        app.notice = f"Refused: {exc.args[0] if exc.args else exc}."
    except UNREACHABLE as exc:  # the plugin is not reachable
        app.notice = f"Could not reach the plugin ({type(exc).__name__}: {exc})."
    return _see_other("/")


async def _launch(app: FakeCoreApp, form: Form) -> str | Reply:
    context = (
        {"kind": "content", "content_id": form["content_id"]}
        if form.get("content_id")
        else {"kind": "manage"}
    )
    launch = app.core.issue_launch(
        _field(form, "installation_id"), _field(form, "person_id"), context
    )
    return _see_other(launch.url)


async def _install(app: FakeCoreApp, form: Form) -> str | Reply:
    origin = form.get("plugin_origin", "").strip() or app.plugin_origin
    installation = await app.core.install(origin, _field(form, "code"))
    return f"Installed {installation.id}."


async def _mint_install(app: FakeCoreApp, form: Form) -> str | Reply:
    code = await mint_code(app, None)
    installation = await app.core.install(app.plugin_origin, code)
    return f"Minted an activation code at the plugin and installed {installation.id}."


async def _rotate(app: FakeCoreApp, form: Form) -> str | Reply:
    installation_id = _active_installation(app, form)
    await app.core.rotate(installation_id, _field(form, "code"))
    return f"Rotated the token of {installation_id}; the old token no longer works."


async def _rotate_now(app: FakeCoreApp, form: Form) -> str | Reply:
    installation_id = _active_installation(app, form)
    origin = app.core.state.installations[installation_id].plugin_origin
    if origin != app.plugin_origin:
        raise Refusal(
            f"One-click rotation only talks to the plugin at {app.plugin_origin}; "
            f"{installation_id} belongs to {origin}: paste a rotation code instead."
        )
    code = await mint_code(app, installation_id)
    await app.core.rotate(installation_id, code)
    return (
        f"Minted a rotation code at the plugin and rotated the token of {installation_id}; "
        "the old token no longer works."
    )


async def _uninstall(app: FakeCoreApp, form: Form) -> str | Reply:
    installation_id = _active_installation(app, form)
    app.core.uninstall(installation_id)
    return f"Uninstalled {installation_id}; its token is revoked."


async def _edit(app: FakeCoreApp, form: Form) -> str | Reply:
    content_id = _field(form, "content_id")
    if content_id not in app.core.state.contents:
        raise Refusal(f"There is no content {content_id}.")
    version = app.core.state.edit(content_id)
    return (
        f"New version {version} of {content_id}. "
        "A schedule pinned to an older version will be refused as stale."
    )


_ACTIONS: dict[str, Action] = {
    "launch": _launch,
    "install": _install,
    "mint-install": _mint_install,
    "rotate": _rotate,
    "rotate-now": _rotate_now,
    "uninstall": _uninstall,
    "edit": _edit,
}


async def mint_code(app: FakeCoreApp, installation_id: str | None) -> str:
    """Mint a one-time code as the plugin's operator: activation, or rotation for an id.

    `POST {plugin_origin}/admin/activation-codes` with the operator's bearer secret;
    every failure is a Refusal in plain words that never carries the secret.
    """
    secret, origin = app.plugin_admin_secret, app.plugin_origin
    if secret is None:
        raise Refusal(
            "One-click codes need FAKE_CORE_PLUGIN_ADMIN_SECRET when the fake core starts; "
            "paste a code instead."
        )
    caller = app.admin_caller or app.core.plugin_caller
    if caller is None:
        raise Refusal("This fake core has no way to call the plugin.")
    headers = {"authorization": f"Bearer {secret}"}
    body = None
    if installation_id is not None:
        headers["content-type"] = "application/json"
        body = json.dumps({"installation_id": installation_id}).encode()
    try:
        status, _, answer = await caller("POST", f"{origin}/admin/activation-codes", headers, body)
    except UNREACHABLE as exc:
        raise Refusal(
            f"Could not reach the plugin at {origin} to mint a code ({type(exc).__name__})."
        ) from None
    data = parse_json_object(answer)
    code = data.get("code") if data is not None else None
    if status in (200, 201) and has_shape("activation_code", code):
        assert isinstance(code, str)
        return code
    # An error code is an id; anything else (a code of the wrong kind, text) is not shown.
    shown = f", code {code}" if is_id(code) and not str(code).startswith("dw") else ""
    if status in (401, 403):
        raise Refusal(
            f"The plugin at {origin} refused the operator secret (status {status}{shown}); "
            "check FAKE_CORE_PLUGIN_ADMIN_SECRET."
        )
    if status in (200, 201):
        raise Refusal(f"The plugin at {origin} answered {status} without an activation code.")
    raise Refusal(f"The plugin at {origin} did not mint a code (status {status}{shown}).")


def _install_failed(name: str, exc: InstallError) -> str:
    what = "Rotation" if name.startswith("rotate") else "Install"
    reason = exc.reason
    if reason in ("activate_refused", "rotate_refused"):
        if exc.status is None:
            detail = "the plugin did not answer"
        else:
            code = exc.code or "no code"
            detail = f"the plugin answered {exc.status} ({code})"
    elif reason == "manifest_unavailable":
        detail = f"the plugin's manifest could not be read (status {exc.status})"
    elif reason == "not_rotatable":
        detail = "this installation was not installed through a plugin, so it has no one to ask"
    elif reason == "capability_not_offered":
        detail = "a capability asked for is not offered by the plugin's manifest"
    else:
        detail = f"the plugin's manifest is not acceptable ({reason})"
    return f"{what} failed: {detail}. Nothing changed."


def _parse_form(body: bytes) -> Form:
    parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {key: values[0] for key, values in parsed.items()}


def _field(form: Form, name: str) -> str:
    value = form.get(name, "").strip()
    if not value:
        raise Refusal(f"The form did not say which {name.replace('_', ' ')}.")
    return value


def _active_installation(app: FakeCoreApp, form: Form) -> str:
    installation_id = _field(form, "installation_id")
    installation = app.core.state.installations.get(installation_id)
    if installation is None:
        raise Refusal(f"There is no installation {installation_id}.")
    if installation.revoked:
        raise Refusal(f"Installation {installation_id} is uninstalled.")
    return installation_id


def _see_other(location: str) -> Reply:
    return Reply(303, {"location": location, "content-type": "text/plain"}, b"")


def _row(*cells: str, raw: str | None = None) -> str:
    """Escaped cells, then `raw` markup (buttons) in a last cell when given."""
    end = "" if raw is None else f"<td>{raw}</td>"
    return "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + end + "</tr>"


def _form(target: str, label: str, persons: str = "", **fields: str) -> str:
    hidden = "".join(
        f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in fields.items()
    )
    who = f'<select name="person_id" aria-label="as person">{persons}</select>' if persons else ""
    return f'<form method="post" action="{target}">{hidden}{who}<button>{escape(label)}</button></form>'

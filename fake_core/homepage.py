"""`GET /`: a local Dee Wan for humans — installations, content, launch buttons.

Every value is escaped; the page has no script at all. Forms post to /ui/*,
which answer 303 (to the plugin's launch URL, or back here).
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from fake_core.install import InstallError
from fake_core.wire import Reply

if TYPE_CHECKING:
    from fake_core.app import FakeCoreApp

CSP = "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'"
STYLE = b"""body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}
table{border-collapse:collapse;margin-bottom:1.5rem}td,th{border:1px solid #ccc;padding:.3rem .5rem}
form{display:inline}.notice{background:#ffd;padding:.5rem;border:1px solid #cc9}
"""


def page(app: FakeCoreApp) -> Reply:
    state, notice = app.core.state, app.take_notice()
    persons = "".join(
        f'<option value="{escape(p.id)}">{escape(p.name)}</option>' for p in state.persons.values()
    )
    active = [i for i in state.installations.values() if not i.revoked]
    rows = []
    for i in state.installations.values():
        models = "all" if i.models is None else ", ".join(sorted(i.models))
        action = "" if i.revoked else _form("/ui/uninstall", "Uninstall", installation_id=i.id)
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
    html = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Local Dee Wan (fake core)</title><link rel="stylesheet" href="/style.css"></head><body>
<h1>Local Dee Wan</h1>
<p>Site {escape(state.site.id)}, time zone {escape(state.site.timezone)}.
Core base URL {escape(app.core.base_url)}.</p>
{f'<p class="notice">{escape(notice)}</p>' if notice else ""}
<h2>Installations</h2>
<table><tr><th>id</th><th>plugin</th><th>status</th><th>capabilities</th><th>models</th>
<th></th></tr>{"".join(rows)}</table>
<form method="post" action="/ui/install">
<label>Plugin origin <input name="plugin_origin" value="{escape(app.plugin_origin)}"></label>
<label>Activation code <input name="code" required autocomplete="off"></label>
<button>Install</button></form>
<h2>Manage</h2><p>{manage or "No active installation."}</p>
<h2>Content</h2>
<table><tr><th>id</th><th>title</th><th>model</th><th>locale</th><th>primary</th>
<th>current</th><th>published</th><th>revision</th><th></th></tr>{"".join(contents)}</table>
</body></html>"""
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


async def action(app: FakeCoreApp, name: str, body: bytes) -> Reply:
    form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
    core = app.core
    try:
        if name == "launch":
            context = (
                {"kind": "content", "content_id": form["content_id"]}
                if form.get("content_id")
                else {"kind": "manage"}
            )
            launch = core.issue_launch(form["installation_id"], form["person_id"], context)
            return _see_other(launch.url)
        if name == "install":
            installation = await core.install(
                form.get("plugin_origin") or app.plugin_origin, form["code"]
            )
            app.notice = f"Installed {installation.id}."
        elif name == "uninstall":
            core.uninstall(form["installation_id"])
            app.notice = f"Uninstalled {form['installation_id']}; its token is revoked."
        elif name == "edit":
            app.notice = f"New version {core.state.edit(form['content_id'])}."
        else:
            return Reply(404, {"content-type": "text/plain"}, b"not found")
    except InstallError as exc:
        app.notice = f"Install failed: {exc.reason} (status {exc.status}, code {exc.code})."
    except (KeyError, ValueError) as exc:
        app.notice = f"Refused: {exc}"
    except OSError as exc:  # the plugin is not reachable
        app.notice = f"Could not reach the plugin: {exc}"
    return _see_other("/")


def _see_other(location: str) -> Reply:
    return Reply(303, {"location": location, "content-type": "text/plain"}, b"")


def _row(*cells: str, raw: str = "") -> str:
    return "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + f"<td>{raw}</td></tr>"


def _form(target: str, label: str, persons: str = "", **fields: str) -> str:
    hidden = "".join(
        f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in fields.items()
    )
    who = f'<select name="person_id" aria-label="as person">{persons}</select>' if persons else ""
    return f'<form method="post" action="{target}">{hidden}{who}<button>{escape(label)}</button></form>'

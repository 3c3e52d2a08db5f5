"""The home page's forms: POST /ui/<action>, same origin only, then 303 back with a notice.

Each action says in plain words what it did; what it could not do becomes
the notice too. A launch for Manage is issued to a site admin only, as Dee Wan
does. A launch answers 303 to the plugin's launch URL instead.
The routes are the `ROUTES` table at the end.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import parse_qs, urlsplit

from fake_core.clock import readable
from fake_core.context import Context
from fake_core.faults import Fault
from fake_core.install import InstallError
from fake_core.operator_codes import UNREACHABLE, CodeNotMinted, mint_code
from fake_core.plugin_tick import TickNotRun, run_tick
from fake_core.routing import Endpoint, Request, Route
from fake_core.webhooks import keep_secret
from fake_core.wire import Reply, error, header

Form = dict[str, str]
Action = Callable[[Context, Form], Awaitable[str | Reply]]


class Refusal(Exception):
    """A plain-language reason an action did nothing; becomes the notice."""


def _form_endpoint(name: str, act: Action) -> Endpoint:
    async def endpoint(ctx: Context, request: Request) -> Reply:
        if not _same_origin(request.headers):
            return error(403, "cross_origin_form")
        try:
            result = await act(ctx, _parse_form(request.body))
            if isinstance(result, Reply):
                return result
            ctx.notice = result
        except (Refusal, CodeNotMinted, TickNotRun) as exc:
            ctx.notice = str(exc)
        except InstallError as exc:
            ctx.notice = _install_failed(name, exc)
        except (KeyError, ValueError) as exc:
            ctx.notice = f"Refused: {exc.args[0] if exc.args else exc}."
        except UNREACHABLE as exc:  # the plugin is not reachable
            ctx.notice = f"Could not reach the plugin ({type(exc).__name__}: {exc})."
        return _see_other("/")

    return endpoint


def _same_origin(headers: Mapping[str, str]) -> bool:
    """Forms change state: refuse a post another site's page made."""
    origin = header(headers, "origin")
    host = header(headers, "host")
    return origin is None or (host is not None and urlsplit(origin).netloc == host)


async def _launch(ctx: Context, form: Form) -> str | Reply:
    context = (
        {"kind": "content", "content_id": form["content_id"]}
        if form.get("content_id")
        else {"kind": "manage"}
    )
    launch = ctx.core.issue_launch(
        _field(form, "installation_id"), _field(form, "person_id"), context
    )
    return _see_other(launch.url)


async def _install(ctx: Context, form: Form) -> str | Reply:
    origin = form.get("plugin_origin", "").strip() or ctx.plugin_origin
    installation = await ctx.core.install(origin, _field(form, "code"))
    return f"Installed {installation.id}."


async def _mint_install(ctx: Context, form: Form) -> str | Reply:
    code = await mint_code(ctx, None)
    installation = await ctx.core.install(ctx.plugin_origin, code)
    return f"Minted an activation code at the plugin and installed {installation.id}."


async def _rotate(ctx: Context, form: Form) -> str | Reply:
    installation_id = _active_installation(ctx, form)
    await ctx.core.rotate(installation_id, _field(form, "code"))
    return f"Rotated the token of {installation_id}; the old token no longer works."


async def _rotate_now(ctx: Context, form: Form) -> str | Reply:
    installation_id = _active_installation(ctx, form)
    origin = ctx.core.state.installations[installation_id].plugin_origin
    if origin != ctx.plugin_origin:
        raise Refusal(
            f"One-click rotation only talks to the plugin at {ctx.plugin_origin}; "
            f"{installation_id} belongs to {origin}: paste a rotation code instead."
        )
    code = await mint_code(ctx, installation_id)
    await ctx.core.rotate(installation_id, code)
    return (
        f"Minted a rotation code at the plugin and rotated the token of {installation_id}; "
        "the old token no longer works."
    )


async def _uninstall(ctx: Context, form: Form) -> str | Reply:
    installation_id = _active_installation(ctx, form)
    ctx.core.uninstall(installation_id)
    return f"Uninstalled {installation_id}; its token is revoked."


async def _edit(ctx: Context, form: Form) -> str | Reply:
    content_id = _field(form, "content_id")
    if content_id not in ctx.core.state.contents:
        raise Refusal(f"There is no content {content_id}.")
    version = ctx.core.state.edit(content_id)
    return (
        f"New version {version} of {content_id}. "
        "A schedule pinned to an older version will be refused as stale."
    )


async def _tick(ctx: Context, form: Form) -> str | Reply:
    return await run_tick(ctx)


async def _webhook_secret(ctx: Context, form: Form) -> str | Reply:
    try:
        keep_secret(ctx, _field(form, "secret"))
    except ValueError as exc:
        raise Refusal(f"Not kept: {exc}.") from None
    return (
        "Signing secret kept. Webhooks signed with it are now verified "
        "(one that was refused is tried again by the plugin)."
    )


# -- failures on purpose: each failure path of the plugin in a minute ---------------------------

MAX_DOWN_MINUTES = 60
MAX_SLOW_S = 30.0
GARBLED = {"content": "content read", "transitions": "change command"}


async def _down(ctx: Context, form: Form) -> str | Reply:
    minutes = _number(form, "minutes", 1, MAX_DOWN_MINUTES)
    until = ctx.core.faults.down_for(minutes, ctx.core.now_ms())
    return (
        f"Dee Wan is down for {_minutes(minutes)}, until {readable(until)} UTC: every call of the"
        " plugin gets 503. Its pages say Dee Wan is not answering, and a change that falls due"
        " meanwhile is tried again. Back to normal ends it now."
    )


async def _refuse_next(ctx: Context, form: Form) -> str | Reply:
    ctx.core.faults.push(Fault.respond(422, "transition_refused"), endpoint="transitions")
    return (
        "The next change the plugin sends is refused (422 transition_refused): its schedule"
        " ends not done, and its card offers Try again."
    )


async def _garbage(ctx: Context, form: Form) -> str | Reply:
    endpoint = form.get("endpoint", "content")
    if endpoint not in GARBLED:
        raise Refusal(f"Choose a {' or a '.join(GARBLED.values())}.")
    ctx.core.faults.push(Fault.bad_json(200), endpoint=endpoint)
    return (
        f"The next {GARBLED[endpoint]} is answered with garbage (a JSON body cut short),"
        " which the plugin does not trust."
    )


async def _slow(ctx: Context, form: Form) -> str | Reply:
    seconds = _number(form, "seconds", 0, MAX_SLOW_S)
    ctx.core.faults.set_latency(seconds, "*")
    if not seconds:
        return "Dee Wan answers at once again."
    return (
        f"Every answer to the plugin now comes {seconds:g} s late (more than 10 s is a timeout"
        " for the plugin). Set 0 to stop."
    )


async def _normal(ctx: Context, form: Form) -> str | Reply:
    ctx.core.faults.clear()
    return "Back to normal: Dee Wan answers at once, and no failure is waiting."


def _number(form: Form, name: str, low: float, high: float) -> float:
    try:
        value = float(_field(form, name))
    except ValueError:
        raise Refusal(f"The {name} must be a number from {low:g} to {high:g}.") from None
    if not low <= value <= high:
        raise Refusal(f"The {name} must be from {low:g} to {high:g}.")
    return value


def _minutes(minutes: float) -> str:
    return f"{minutes:g} minute{'' if minutes == 1 else 's'}"


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


def _active_installation(ctx: Context, form: Form) -> str:
    installation_id = _field(form, "installation_id")
    installation = ctx.core.state.installations.get(installation_id)
    if installation is None:
        raise Refusal(f"There is no installation {installation_id}.")
    if installation.revoked:
        raise Refusal(f"Installation {installation_id} is uninstalled.")
    return installation_id


def _see_other(location: str) -> Reply:
    return Reply(303, {"location": location, "content-type": "text/plain"}, b"")


ROUTES = tuple(
    Route("POST", f"/ui/{name}", _form_endpoint(name, act))
    for name, act in (
        ("launch", _launch),
        ("install", _install),
        ("mint-install", _mint_install),
        ("rotate", _rotate),
        ("rotate-now", _rotate_now),
        ("uninstall", _uninstall),
        ("edit", _edit),
        ("tick", _tick),
        ("webhook-secret", _webhook_secret),
        ("fail-down", _down),
        ("fail-refuse", _refuse_next),
        ("fail-garbage", _garbage),
        ("fail-slow", _slow),
        ("fail-normal", _normal),
    )
)

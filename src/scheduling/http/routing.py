"""Routes: the table as data (method and path pattern to handler), and who may use a route:
the operator's secret, as a bearer token or the operator page's Basic login (wrong ones
counted per client); for the pages, the session cookie, the CSRF token and the origin.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from scheduling.domain.secrets import basic_password, bearer_token, has_shape, same_secret
from scheduling.domain.wording import Refusal
from scheduling.failure_throttle import WINDOW_MS, sign_in_key
from scheduling.http.requests import Request
from scheduling.http.responses import Response
from scheduling.repository.installations import Session, find_live_session
from scheduling.services import Services, log

# -- the route table -------------------------------------------------------------------------------

Handler = Callable[[Request, Any], Awaitable[Response]]
# A refused request's page shown again (a form with what was entered and why), or None when
# the refusal is not one its page shows: `App.handle` calls it with what the handler raised.
Again = Callable[[Request, Any, Refusal], Awaitable[Response | None]]

_PARAM = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Route:
    """A method and a path pattern, the handler that answers them and, for a form, how its
    page is shown again when it is refused (`again`)."""

    method: str
    pattern: str
    handler: Handler
    again: Again | None = None

    def compile(self) -> re.Pattern[str]:
        # `_PARAM.split` alternates the literal text and the parameters' names.
        parts = _PARAM.split(self.pattern)
        regex = "".join(f"(?P<{p}>[^/]+)" if n % 2 else re.escape(p) for n, p in enumerate(parts))
        return re.compile(f"^{regex}$")

    def methods(self) -> tuple[str, ...]:
        """A GET route answers HEAD too, without a body."""
        return (self.method, "HEAD") if self.method == "GET" else (self.method,)


class Router:
    def __init__(self, routes: Sequence[Route]) -> None:
        self._routes = [(route, route.compile()) for route in routes]

    def match(self, request: Request) -> tuple[Route | None, dict[str, str], tuple[str, ...]]:
        """(route, params, allowed methods). No route with some methods allowed means 405."""
        allowed: list[str] = []
        for route, regex in self._routes:
            found = regex.match(request.path)
            if not found:
                continue
            if request.method in route.methods():
                return route, found.groupdict(), route.methods()
            allowed.extend(m for m in route.methods() if m not in allowed)
        return None, {}, tuple(allowed)

    def route(self, request: Request) -> Route:
        """The route that answers `request`, its path's parameters set on it; refused 404 or
        405 when there is none."""
        route, params, allowed = self.match(request)
        if route is None:
            if allowed:
                raise Refusal(
                    405,
                    "method_not_allowed",
                    f"This address takes {' or '.join(allowed)} only.",
                    headers=[("allow", ", ".join(allowed))],
                )
            raise Refusal(404, "not_found", "There is nothing at this address.")
        request.path_params = params
        return route


# -- guards ----------------------------------------------------------------------------------------

SESSION_COOKIE = "__Host-scheduling_session"  # the latest launch's
TAB_COOKIE = "__Host-scheduling_tab_"  # + a launch's handle: that launch's
TAB = re.compile(r"[A-Za-z0-9_-]{12}")  # a launch's handle


def session_cookie(value: str, max_age_s: int, tab: str | None = None) -> str:
    name = SESSION_COOKIE if tab is None else TAB_COOKIE + tab
    return f"{name}={value}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age={max_age_s}"


async def require_operator(request: Request, services: Services) -> None:
    """Returns when the request carries ADMIN_SECRET as its bearer token; refuses with 401
    otherwise (500 `misconfigured` when ADMIN_SECRET is missing or short, never let in)."""
    await _operator_secret(
        request,
        services,
        bearer_token(request.headers.get("authorization")),
        Refusal(
            401,
            "unauthorized",
            "operator bearer token required",
            headers=[("www-authenticate", 'Bearer realm="scheduling-admin"')],
        ),
    )


OPERATOR_REALM = 'Basic realm="Scheduling operator", charset="UTF-8"'


async def require_operator_login(request: Request, services: Services) -> None:
    """The operator page's HTTP Basic login: any user name, ADMIN_SECRET as the password,
    compared in constant time. Outside development it is refused over plain HTTP before any
    challenge, so a browser is never asked to send the secret unencrypted. The scheme is
    the request URL's: on Workers the one the visitor used (Cloudflare's edge sets it, as
    it sets `cf-visitor`), on the local server the scheme of its own socket (it speaks
    plain HTTP); no forwarding header a client could write is believed.
    """
    services.config.admin_secret  # noqa: B018 - a bad ADMIN_SECRET is said first
    if not services.config.is_development and urlsplit(request.url).scheme != "https":
        message = "The operator page is served over HTTPS only: open its https:// address."
        if "authorization" in request.headers:
            message += " The password just crossed the network unencrypted: change ADMIN_SECRET."
        raise Refusal(403, "https_required", message, title="HTTPS required")
    await _operator_secret(
        request,
        services,
        basic_password(request.headers.get("authorization")),
        Refusal(
            401,
            "unauthorized",
            "Sign in with any user name and the operator secret (ADMIN_SECRET) as the password.",
            title="Operator sign-in required",
            headers=[("www-authenticate", OPERATOR_REALM)],
        ),
    )


async def _operator_secret(
    request: Request, services: Services, given: str | None, wrong: Refusal
) -> None:
    """The secret `given` is ADMIN_SECRET, or `wrong` is raised. A client that sent too many
    wrong ones lately is held back (429), its secret not even compared: as failed launch
    exchanges, counted per client (`failure_throttle.py`). A request without credentials
    (a browser before the challenge) counts for nothing."""
    expected = services.config.admin_secret
    throttle = services.failure_throttle
    key = sign_in_key(request.client)
    wait_s = throttle.retry_after_s(key)
    if wait_s is not None:
        raise Refusal.too_many(
            "too_many_attempts",
            "Too many wrong operator secrets came from your address in the last minute.",
            wait_s,
            title="Too many attempts",
        )
    if same_secret(given, expected):
        return
    if "authorization" in request.headers and await throttle.failed(key):
        log.warning(
            "operator sign-in: a client is held back for %d s after too many wrong secrets",
            WINDOW_MS // 1000,
        )
    raise wrong


def _session_secret(request: Request) -> tuple[str | None, str | None]:
    """The cookie of the launch the page was opened from (its handle, in the query or a
    form's `tab`: the cookie named for it, or the latest launch's when that is the same
    launch), and the handle; without a handle, the latest launch's."""
    tab = request.query.get("tab") or request.form().get("tab")
    if tab is None:
        return request.cookie(SESSION_COOKIE), None
    if not TAB.fullmatch(tab):
        return None, tab
    return request.cookie(TAB_COOKIE + tab) or request.cookie(SESSION_COOKIE), tab


async def require_session(request: Request, services: Services) -> Session:
    """The live session the cookie names, for the installation in the path; never another
    launch's than the page's: a page whose launch ended says so rather than show another."""
    raw, tab = _session_secret(request)
    if raw is None or not has_shape("session_id", raw):
        raise Refusal(
            401,
            "no_session",
            "Your Scheduling session has ended or was never started.",
            relaunch=True,
        )
    now = services.clock.now_ms()
    session = await find_live_session(services.db, await services.crypto.sha256_hex(raw), now)
    if session is None or (tab is not None and session.tab != tab):
        raise Refusal(401, "session_expired", "Your Scheduling session has ended.", relaunch=True)
    if session.installation_id != request.path_params["installation_id"]:
        raise Refusal(
            403,
            "wrong_installation",
            "This session was opened for another Dee Wan installation.",
            relaunch=True,
        )
    if session.installation_gone:
        # Dee Wan no longer accepts the installation: nothing more is shown or changed.
        raise Refusal.explained(401, "plugin_unauthorized", relaunch=True)
    # Asked for without a handle (an address from before handles): its links go on so.
    return session if tab is not None else replace(session, tab=None)


async def require_form_post(request: Request, services: Services) -> Session:
    """A form posted from the session's own page: the session, then the origin and CSRF token."""
    session = await require_session(request, services)
    require_same_origin_post(request, services, session)
    return session


def require_same_origin_post(request: Request, services: Services, session: Session) -> None:
    """CSRF defence in depth: the origin, Fetch Metadata, and the per-session token.

    Pages carry `Referrer-Policy: no-referrer`, under which browsers send
    `Origin: null` even for a same-origin form post (measured in Chromium). So
    `null` is accepted only when the browser also says `Sec-Fetch-Site:
    same-origin`, a header no page can forge.
    """
    origin = request.headers.get("origin")
    site = request.headers.get("sec-fetch-site")
    origin_ok = origin == services.config.public_origin or (
        origin in (None, "null") and site == "same-origin"
    )
    if not origin_ok or site not in (None, "same-origin", "none"):
        raise Refusal(
            403, "cross_site_request", "This form must be sent from the Scheduling page itself."
        )
    fields = request.form()
    if fields.get("opened_for", session.opened_for) != session.opened_for:
        # The one session cookie now belongs to a launch made in another tab.
        raise Refusal(
            409,
            "session_replaced",
            "Scheduling was opened for something else in another tab or window since this "
            "page was shown. Open it again from Dee Wan for this item.",
            relaunch=True,
        )
    token = fields.get("csrf_token")
    if not has_shape("csrf_token", token) or not same_secret(token, session.csrf_token):
        raise Refusal(403, "csrf_failed", "This form has expired. Reload the page and try again.")

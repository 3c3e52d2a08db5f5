"""Notification endpoints, managed from a manage launch: add one of any registered kind
(`channels/kinds.py`), rotate its secret when its kind rotates, delete one, send it a test
event; and what the manage page shows of them.

A content launch may not see or change them (403 `manage_only`). A new or
rotated secret, and a new URL that is its kind's secret, is
shown once: the session's next manage page reveals it, and takes the reveal so
no later page does. The plugin keeps it only sealed under TOKEN_KEY, bound to
the installation and the endpoint; a URL that is a secret is shown afterwards only as its
host and its last 4 characters.
Rotating and deleting cannot be undone, so each is asked first, on a page that
names the endpoint and what would be lost (`preview_endpoint`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from scheduling.actions.access import confirm_standing, open_access
from scheduling.actions.throttled import endpoint_calls, limited
from scheduling.actions.titles import Titles, read_titles
from scheduling.channels import kinds
from scheduling.channels.kinds import ChannelKind
from scheduling.domain.call_limits import seconds
from scheduling.domain.notification_events import EVENT_TYPES, MAX_ENDPOINTS
from scheduling.domain.refusals import Refusal
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.wording import explain
from scheduling.repository import notification_endpoints, sessions
from scheduling.repository.notification_endpoints import Endpoint
from scheduling.repository.sessions import Session
from scheduling.services import Services, log

# 22 base64url characters: 132 random bits.
_ID_CHARS = 22
# A confirmation names the deliveries' contents by title when Dee Wan gives them this fast.
TITLE_BUDGET_S = 2.0


@dataclass(frozen=True)
class EndpointForm:
    """What the Notifications form sent."""

    url: str = ""
    events: tuple[str, ...] = ()
    kind: str = field(default_factory=lambda: kinds.default().name)


class EndpointFormRefusal(Refusal):
    """A refused endpoint form: the manage page comes back, for `session`, with what was
    entered and why."""

    def __init__(
        self, status: int, code: str, message: str, form: EndpointForm, session: Session
    ) -> None:
        super().__init__(status, code, message)
        self.form = form
        self.session = session


@dataclass(frozen=True)
class NotificationsView:
    """What the notifications page shows: the endpoints, a secret just revealed, a refusal."""

    endpoints: tuple[Endpoint, ...]
    revealed: tuple[str, str] | None  # (endpoint id, its new secret or secret URL), shown once
    refused: EndpointFormRefusal | None = None
    # In development, the local origins an endpoint may also have (`DEE_WAN_DEV_ORIGINS`):
    # the form's hint names them rather than say https on the public internet only.
    dev_origins: tuple[str, ...] = ()

    @property
    def content_ids(self) -> set[str]:
        """The contents the listed deliveries tell of (their rows name them by title)."""
        return {
            d.schedule.content_id
            for e in self.endpoints
            for d in e.deliveries
            if d.schedule is not None
        }


@dataclass(frozen=True)
class EndpointPreview:
    """What rotating or deleting an endpoint would change, for the page that asks first."""

    endpoint: Endpoint
    titles: Titles
    now_ms: int


def require_manage(session: Session) -> None:
    if session.context_kind != "manage":
        raise Refusal.explained(403, "manage_only")


async def add_endpoint(services: Services, session: Session, form: EndpointForm) -> str:
    """Store a new endpoint with a fresh secret (or its URL, sealed, when that is its kind's
    secret); returns its id. Nothing is stored when refused."""
    require_manage(session)
    kind = _check(services, session, form)
    too_many = EndpointFormRefusal(
        409, "too_many_endpoints", explain("too_many_endpoints"), form, session
    )
    installation_id = session.installation_id
    if await notification_endpoints.count(services.db, installation_id) >= MAX_ENDPOINTS:
        raise too_many
    try:
        await confirm_standing(services, session)  # Dee Wan still accepts the token
    except Refusal as refused:
        if refused.code == "plugin_unauthorized":
            raise
        raise EndpointFormRefusal(
            refused.status, refused.code, refused.message, form, session
        ) from None
    endpoint_id = _new_id(services, "whe_")
    kept = await kind.keep(services.crypto, installation_id, endpoint_id, form.url)
    created = await notification_endpoints.create(
        services.db,
        endpoint_id=endpoint_id,
        installation_id=installation_id,
        kind=form.kind,
        url=kept.shown_url,
        events=tuple(event for event in EVENT_TYPES if event in form.events),
        secret_sealed=kept.sealed,
        now=services.clock.now_ms(),
    )
    if not created:
        raise too_many  # another request took the last place meanwhile
    await sessions.reveal_next(services.db, session.id_hash, endpoint_id)
    log.info("installation %s: notification endpoint %s added", installation_id, endpoint_id)
    return endpoint_id


def _check(services: Services, session: Session, form: EndpointForm) -> ChannelKind:
    """The form's kind (as registered), URL (by its kind's rule) and events, each refused
    with its own code."""
    kind = kinds.kind_of(form.kind)
    if kind is None:
        raise EndpointFormRefusal(
            422, "unknown_endpoint_kind", explain("unknown_endpoint_kind"), form, session
        )
    problem = kind.url_problem(form.url, services.config)
    if problem is not None:
        raise EndpointFormRefusal(422, "invalid_endpoint_url", f"The URL {problem}.", form, session)
    unknown = [event for event in form.events if event not in EVENT_TYPES]
    if unknown:
        raise EndpointFormRefusal(422, "unknown_event", explain("unknown_event"), form, session)
    if not form.events:
        raise EndpointFormRefusal(422, "no_events", explain("no_events"), form, session)
    return kind


async def rotate_secret(services: Services, session: Session, endpoint_id: str) -> None:
    """A new secret replaces the old at once: every later attempt is signed with it. A kind
    whose secret does not rotate (a URL that is the secret: delete it and add the new URL)
    is refused."""
    endpoint = await endpoint_of(services, session, endpoint_id)
    kind = kinds.kind_of(endpoint.kind)
    if kind is None or not kind.rotates:
        raise Refusal.explained(409, "chat_has_no_secret")
    kept = await kind.keep(services.crypto, endpoint.installation_id, endpoint.id, endpoint.url)
    sealed = kept.sealed
    now = services.clock.now_ms()
    if not await notification_endpoints.rotate(
        services.db, endpoint.installation_id, endpoint.id, sealed, now
    ):
        raise Refusal.explained(404, "endpoint_not_found")
    await sessions.reveal_next(services.db, session.id_hash, endpoint.id)
    log.info("installation %s: endpoint %s secret rotated", endpoint.installation_id, endpoint.id)


async def delete_endpoint(services: Services, session: Session, endpoint_id: str) -> None:
    """The endpoint, its subscriptions and its deliveries; the next manage page says so."""
    endpoint = await endpoint_of(services, session, endpoint_id)
    if not await notification_endpoints.delete(services.db, endpoint.installation_id, endpoint.id):
        raise Refusal.explained(404, "endpoint_not_found")
    await sessions.say_next(services.db, session.id_hash, deleted_words(endpoint))
    log.info("installation %s: endpoint %s deleted", endpoint.installation_id, endpoint.id)


def deleted_words(endpoint: Endpoint) -> str:
    count = endpoint.delivery_count
    deliveries = (
        "It had no deliveries"
        if count == 0
        else f"Its {count} deliver{'y was' if count == 1 else 'ies were'} deleted with it"
    )
    return f"Deleted the endpoint {endpoint.url}. {deliveries}; nothing more is sent to it."


async def preview_endpoint(
    services: Services, session: Session, endpoint_id: str
) -> EndpointPreview:
    """The endpoint a rotation or a delete would change, refused as they would be; its
    deliveries' contents by title when Dee Wan gives them in time (never waited on for
    the change itself)."""
    endpoint = await endpoint_of(services, session, endpoint_id)
    contents = {d.schedule.content_id for d in endpoint.deliveries if d.schedule is not None}
    titles = Titles({})
    if contents:
        try:
            access = await open_access(services, session)
        except Refusal:
            pass
        else:
            titles = await read_titles(services, access, contents, budget_s=TITLE_BUDGET_S)
    return EndpointPreview(endpoint, titles, services.clock.now_ms())


async def send_test(services: Services, session: Session, endpoint_id: str) -> str:
    """Deliver a `test` event now (one request, within this one, through the endpoint's kind's
    channel) and keep what came back with the endpoint: `200`, `410`, `timeout`, … . One at
    a time and five a minute per person, and a few at once per installation
    (`throttled.endpoint_calls`); beyond that 429 `too_many_tests`, nothing sent."""
    endpoint = await endpoint_of(services, session, endpoint_id)
    limits = endpoint_calls(session.installation_id, session.person_id)
    async with limited(services, limits, too_many(session)):
        return await _send_test(services.for_visitors(), endpoint)


def too_many(
    session: Session, code: str = "too_many_tests", title: str = "Too many test events"
) -> Callable[[int], Refusal]:
    """The refusal of a call to an endpoint past its limits: nothing sent."""

    def refusal(wait_ms: int) -> Refusal:
        return Refusal.too_many(
            code,
            explain(code),
            seconds(wait_ms),
            title=title,
            then="send it again",
            resend=[("csrf_token", session.csrf_token), ("opened_for", session.opened_for)],
        )

    return refusal


async def _send_test(services: Services, endpoint: Endpoint) -> str:
    now = services.clock.now_ms()
    channel = kinds.channels(services)[endpoint.kind]
    target = endpoint.target()
    opened = await channel.open(target)
    if opened is None:
        result = "secret_unreadable"
    else:
        event = channel.test_event(target, _new_id(services, "msg_"), now)
        attempt = await channel.deliver(opened, event, now)
        result = str(attempt.http_status) if attempt.http_status is not None else str(attempt.error)
    await notification_endpoints.record_test(
        services.db, endpoint.installation_id, endpoint.id, services.clock.now_ms(), result
    )
    return result


async def notifications_view(
    services: Services,
    session: Session,
    *,
    reveal: bool,
    refused: EndpointFormRefusal | None = None,
) -> NotificationsView:
    """The endpoints with their recent deliveries; with `reveal`, a secret waiting to be shown
    (then never again)."""
    require_manage(session)
    endpoints = await notification_endpoints.list_for(services.db, session.installation_id)
    revealed = None
    shown = await sessions.take_reveal(services.db, session) if reveal else None
    for endpoint in endpoints:
        kind = kinds.kind_of(endpoint.kind)
        if endpoint.id == shown and kind is not None:
            opened = await kind.channel(services).open(endpoint.target())
            if opened is not None:
                revealed = (endpoint.id, kind.revealed(opened))
    config = services.config
    dev_origins = config.dev_origins if config.is_development else ()
    return NotificationsView(tuple(endpoints), revealed, refused, dev_origins)


async def endpoint_of(services: Services, session: Session, endpoint_id: str) -> Endpoint:
    """The session's installation's endpoint, for a manage launch; 404 when there is none."""
    require_manage(session)
    endpoint = (
        await notification_endpoints.get(services.db, session.installation_id, endpoint_id)
        if is_id(endpoint_id)
        else None
    )
    if endpoint is None:
        raise Refusal.explained(404, "endpoint_not_found")
    return endpoint


def _new_id(services: Services, prefix: str) -> str:
    return prefix + services.crypto.random_token()[:_ID_CHARS]

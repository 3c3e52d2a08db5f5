"""Notification endpoints, from a manage launch only: add one of any registered kind, rotate
its secret, delete it (each of those two asked first), send it a test event; send a failed
delivery again, replay an endpoint's failures, enable a disabled one; and what the manage
page shows of them. A new secret is shown once and kept only sealed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from scheduling.actions.access import confirm_standing, endpoint_calls, limited, open_access
from scheduling.actions.listing import Titles, read_titles
from scheduling.channels import kinds
from scheduling.channels.kinds import ChannelKind
from scheduling.domain.notifications import (
    EVENT_TYPES,
    HOUR_MS,
    MAX_ENDPOINTS,
    REPLAY_SINCE_HOURS,
)
from scheduling.domain.secrets import is_id
from scheduling.domain.wording import Refusal, explain
from scheduling.limits import retry_after_seconds
from scheduling.repository import notification_endpoints, outbox
from scheduling.repository.installations import Session, reveal_next, say_next, take_reveal
from scheduling.repository.notification_endpoints import Endpoint
from scheduling.runner.deliveries import deliver_now
from scheduling.services import Services, log

# -- endpoints -------------------------------------------------------------------------------------

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
    entered and why (the code's plain words, unless `message` says more)."""

    def __init__(
        self, status: int, code: str, form: EndpointForm, session: Session, message: str = ""
    ) -> None:
        super().__init__(status, code, message or explain(code))
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
    too_many = EndpointFormRefusal(409, "too_many_endpoints", form, session)
    installation_id = session.installation_id
    if await notification_endpoints.count(services.db, installation_id) >= MAX_ENDPOINTS:
        raise too_many
    try:
        await confirm_standing(services, session)  # Dee Wan still accepts the token
    except Refusal as refused:
        if refused.code == "plugin_unauthorized":
            raise
        raise EndpointFormRefusal(
            refused.status, refused.code, form, session, refused.message
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
    await reveal_next(services.db, session.id_hash, endpoint_id)
    log.info("installation %s: notification endpoint %s added", installation_id, endpoint_id)
    return endpoint_id


def _check(services: Services, session: Session, form: EndpointForm) -> ChannelKind:
    """The form's kind (as registered), URL (by its kind's rule) and events, each refused
    with its own code."""
    kind = kinds.kind_of(form.kind)
    if kind is None:
        raise EndpointFormRefusal(422, "unknown_endpoint_kind", form, session)
    problem = kind.url_problem(form.url, services.config)
    if problem is not None:
        raise EndpointFormRefusal(422, "invalid_endpoint_url", form, session, f"The URL {problem}.")
    unknown = [event for event in form.events if event not in EVENT_TYPES]
    if unknown:
        raise EndpointFormRefusal(422, "unknown_event", form, session)
    if not form.events:
        raise EndpointFormRefusal(422, "no_events", form, session)
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
    await reveal_next(services.db, session.id_hash, endpoint.id)
    log.info("installation %s: endpoint %s secret rotated", endpoint.installation_id, endpoint.id)


async def delete_endpoint(services: Services, session: Session, endpoint_id: str) -> None:
    """The endpoint, its subscriptions and its deliveries; the next manage page says so."""
    endpoint = await endpoint_of(services, session, endpoint_id)
    if not await notification_endpoints.delete(services.db, endpoint.installation_id, endpoint.id):
        raise Refusal.explained(404, "endpoint_not_found")
    await say_next(services.db, session.id_hash, deleted_words(endpoint))
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
    (`access.endpoint_calls`); beyond that 429 `too_many_tests`, nothing sent."""
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
            retry_after_seconds(wait_ms),
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
    shown = await take_reveal(services.db, session) if reveal else None
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


# -- deliveries acted on ---------------------------------------------------------------------------


async def send_again(
    services: Services, session: Session, endpoint_id: str, delivery_id: str
) -> None:
    """The delivery (delivered or failed) is sent again now, with its id and body; its
    retries start again from now should this attempt fail."""
    endpoint = await endpoint_of(services, session, endpoint_id)
    refusal = too_many(session, "too_many_sends_again", "Too many deliveries sent again")
    limits = endpoint_calls(session.installation_id, session.person_id)
    async with limited(services, limits, refusal):
        now = services.clock.now_ms()
        if not is_id(delivery_id) or not await outbox.send_again(
            services.db, endpoint.installation_id, endpoint.id, delivery_id, now
        ):
            raise Refusal.explained(409, "not_sendable_again")
        report = await deliver_now(services.for_visitors(), [delivery_id])
    log.info(
        "installation %s: delivery %s sent again (%d request)",
        endpoint.installation_id,
        delivery_id,
        report.delivery_sends,
    )


async def replay_failures(
    services: Services, session: Session, endpoint_id: str, since_hours: str
) -> int:
    """The endpoint's failed deliveries of the last `since_hours` hours (one of
    `REPLAY_SINCE_HOURS`), sent again; how many."""
    endpoint = await endpoint_of(services, session, endpoint_id)
    if endpoint.disabled_at is not None:
        raise Refusal.explained(409, "endpoint_disabled")
    hours = next((h for h in REPLAY_SINCE_HOURS if str(h) == since_hours), None)
    if hours is None:
        raise Refusal.explained(422, "unknown_replay_window")
    now = services.clock.now_ms()
    ids = await outbox.replay_failures(
        services.db, endpoint.installation_id, endpoint.id, now - hours * HOUR_MS, now
    )
    log.info(
        "installation %s: endpoint %s: %d failed deliveries replayed",
        endpoint.installation_id,
        endpoint.id,
        len(ids),
    )
    return len(ids)


async def enable_endpoint(services: Services, session: Session, endpoint_id: str) -> None:
    endpoint = await endpoint_of(services, session, endpoint_id)
    if not await outbox.enable(services.db, endpoint.installation_id, endpoint.id):
        raise Refusal.explained(409, "endpoint_not_disabled")
    log.info("installation %s: endpoint %s enabled again", endpoint.installation_id, endpoint.id)

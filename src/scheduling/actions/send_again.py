"""A person acting on a delivery that failed, from the manage page: **Send again** one (the
same `webhook-id`, sent within the request), **Replay failures since …** an endpoint's (waiting
again, due now: the next tick sends them), and **Enable again** an endpoint disabled for
answering 410 Gone or for days of failing. A manage launch only, as for every endpoint action.
"""

from __future__ import annotations

from scheduling.actions.notifications import endpoint_of, too_many
from scheduling.actions.throttled import endpoint_calls, limited
from scheduling.domain.notification_events import REPLAY_SINCE_HOURS
from scheduling.domain.refusals import Refusal
from scheduling.domain.secret_shapes import is_id
from scheduling.repository import redelivery
from scheduling.repository.sessions import Session
from scheduling.runner.deliver_now import deliver_now
from scheduling.services import Services, log

HOUR_MS = 3_600_000


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
        if not is_id(delivery_id) or not await redelivery.send_again(
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
    ids = await redelivery.replay_failures(
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
    if not await redelivery.enable(services.db, endpoint.installation_id, endpoint.id):
        raise Refusal.explained(409, "endpoint_not_disabled")
    log.info("installation %s: endpoint %s enabled again", endpoint.installation_id, endpoint.id)

"""The outbox of notification deliveries: written in the settle's own batch, claimed under a lease,
settled like schedules are.

An event row is inserted in the same D1 batch (one transaction) as the
settle, or the unsent refusal, that causes it, and it selects the schedules
that statement really changed: those whose `settled_by` now holds this
batch's lease token. A settle that lost its lease changed nothing, so it
writes no event; a crash before the batch commits loses both. One row per
subscribed endpoint, its id the `webhook-id`.

A delivery is claimed by a compare-and-set (waiting and due, or sending
with an expired lease) that `RETURNING`s what it won, and settled only while
its lease token still holds, so two runners never send the same attempt and a
runner killed mid-delivery leaves it to be sent again, with the same id.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduling.domain.delivery_policy import ENDPOINT_GONE, DeliveryStatus
from scheduling.domain.outbox import ClaimedDelivery, DeliveryTarget, OutboxEvent, SettledDelivery
from scheduling.limits import EVENTS, SETTLE_DELIVERIES
from scheduling.ports import Result, Row, Statement
from scheduling.repository.round_trips import RoundTrips

# `?1` the batch's lease token (what its settle wrote into `settled_by`), `?2` the instant.
EVENTS_SQL = """INSERT INTO webhook_deliveries (id, endpoint_id, installation_id, schedule_id,
    event_type, payload, created_at, status, attempt_count, next_attempt_at)
SELECT ev.column1 || '_' || e.id, e.id, s.installation_id, s.id, ev.column3, ev.column4, ?2,
       'waiting', 0, ?2
  FROM (VALUES {values}) AS ev
  JOIN schedules s ON s.id = ev.column2 AND s.settled_by = ?1
  JOIN notification_endpoints e ON e.installation_id = s.installation_id AND e.disabled_at IS NULL
  JOIN notification_subscriptions sub ON sub.endpoint_id = e.id AND sub.event_type = ev.column3
RETURNING id"""

# Waiting ones whose time came and sending ones whose lease expired, oldest first: both
# halves read the partial indexes `webhook_deliveries_waiting` and `webhook_deliveries_leased`.
CLAIM_DELIVERIES_SQL = """UPDATE webhook_deliveries
   SET status = 'sending', lease_token = ?1, lease_until = ?2, next_attempt_at = NULL,
       attempt_count = attempt_count + 1
 WHERE id IN (
    SELECT id FROM (
        SELECT id, next_attempt_at AS ready_at FROM webhook_deliveries WHERE next_attempt_at <= ?3
        UNION ALL
        SELECT id, lease_until AS ready_at FROM webhook_deliveries WHERE lease_until <= ?3)
     ORDER BY ready_at, id LIMIT ?4)
RETURNING id, endpoint_id, installation_id, payload, created_at, attempt_count"""

CLAIMED_ENDPOINTS_SQL = """SELECT id, installation_id, url, secret_sealed, disabled_at
  FROM notification_endpoints
 WHERE id IN (SELECT endpoint_id FROM webhook_deliveries WHERE lease_until = ?2 AND lease_token = ?1)"""

# A delivery handed back unsent (`done.column8` = 1) keeps its last attempt and gives back
# the one its claim counted.
SETTLE_DELIVERIES_SQL = """UPDATE webhook_deliveries
   SET status = done.column2, next_attempt_at = done.column3, finished_at = done.column4,
       last_attempt_at = CASE WHEN done.column8 THEN last_attempt_at ELSE done.column5 END,
       last_http_status = CASE WHEN done.column8 THEN last_http_status ELSE done.column6 END,
       last_error = CASE WHEN done.column8 THEN last_error ELSE done.column7 END,
       attempt_count = attempt_count - done.column8,
       lease_token = NULL, lease_until = NULL
  FROM (VALUES {values}) AS done
 WHERE webhook_deliveries.id = done.column1 AND webhook_deliveries.lease_token = ?1
RETURNING id"""

# The endpoints of a settle, by id (`{ids}`): delivered to, failed, gone (410).
ENDPOINTS_DELIVERED_SQL = (
    "UPDATE notification_endpoints SET failing_since = NULL WHERE id IN ({ids})"
)
ENDPOINTS_FAILING_SQL = "UPDATE notification_endpoints SET failing_since = coalesce(failing_since, ?1) WHERE id IN ({ids})"
ENDPOINTS_GONE_SQL = (
    "UPDATE notification_endpoints SET disabled_at = ?1 WHERE id IN ({ids}) AND disabled_at IS NULL"
)
# What a disabled endpoint still had waiting will not be sent.
GONE_WAITING_SQL = """UPDATE webhook_deliveries
   SET status = 'failed', next_attempt_at = NULL, finished_at = ?1, last_error = 'endpoint_gone'
 WHERE status = 'waiting' AND endpoint_id IN ({ids})"""


# When the outbox next has a delivery due: its first retry, or its first lease to expire.
OUTBOX_NEXT_SQL = """SELECT min(at) AS next_at FROM (
    SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL
    UNION ALL
    SELECT min(lease_until) AS at FROM webhook_deliveries WHERE lease_until IS NOT NULL)"""


class Outbox:
    """The deliveries' store. It also keeps what the invocation learnt of the outbox: how many
    events its settles wrote (`events_written`) and when a delivery is next due (`next_at`,
    as of the last due query or dispatch that read it; None: nothing waits)."""

    def __init__(self, trips: RoundTrips) -> None:
        self.trips = trips
        self.events_written = 0
        self.next_at: int | None = None

    def due(self, now: int) -> bool:
        """This invocation's settles wrote events, or a delivery is due at `now`: an
        invocation with nothing to notify spends nothing on it."""
        return self.events_written > 0 or (self.next_at is not None and self.next_at <= now)

    def event_statements(
        self, lease_token: str, now: int, events: Sequence[OutboxEvent]
    ) -> list[Statement]:
        """The inserts of `events`, for the batch of the settle (or refusal) that raises them."""
        rows = [(e.id, e.schedule_id, e.type, e.body.decode("utf-8")) for e in events]
        return self.trips.values(EVENTS_SQL, EVENTS, (lease_token, now), rows)

    def written(self, results: Sequence[Result]) -> None:
        """Count the outbox rows the event inserts among `results` wrote."""
        self.events_written += sum(len(result.results) for result in results)

    async def claim(
        self, lease_token: str, now: int, lease_ms: int, limit: int
    ) -> tuple[list[ClaimedDelivery], dict[str, DeliveryTarget]]:
        """Claim up to `limit` deliveries due at `now` (waiting ones whose time came, sending
        ones whose lease expired), oldest first, under `lease_token` until `now + lease_ms`;
        with the endpoints they go to, read in the same batch."""
        lease_until = now + lease_ms
        db = self.trips.db
        claimed, targets = await self.trips.send(
            [
                db.prepare(CLAIM_DELIVERIES_SQL).bind(lease_token, lease_until, now, limit),
                db.prepare(CLAIMED_ENDPOINTS_SQL).bind(lease_token, lease_until),
            ]
        )
        endpoints = (delivery_target(row) for row in targets.results)
        return (
            sorted(
                (claimed_delivery(row) for row in claimed.results),
                key=lambda d: (d.created_at, d.id),
            ),
            {endpoint.id: endpoint for endpoint in endpoints},
        )

    async def settle(
        self, lease_token: str, settled: Sequence[SettledDelivery], now: int
    ) -> list[str]:
        """End deliveries claimed under `lease_token`; returns those whose lease was lost (left
        as they are: another runner has them). In the same batch, each endpoint is marked:
        failing since its first failed attempt, not failing once delivered to, and disabled
        (with what it still had waiting) when it answered 410 Gone."""
        if not settled:
            return []
        trips = self.trips
        statements = trips.values(
            SETTLE_DELIVERIES_SQL, SETTLE_DELIVERIES, (lease_token,), [_values(s) for s in settled]
        )
        settle_count = len(statements)
        delivered = {
            s.delivery.endpoint_id for s in settled if s.status == DeliveryStatus.DELIVERED
        }
        gone = {s.delivery.endpoint_id for s in settled if s.sent and s.error == ENDPOINT_GONE}
        failing = {s.delivery.endpoint_id for s in settled if s.sent and s.error} - delivered
        statements += trips.ids(ENDPOINTS_DELIVERED_SQL, (), delivered)
        statements += trips.ids(ENDPOINTS_FAILING_SQL, (now,), failing)
        statements += trips.ids(ENDPOINTS_GONE_SQL, (now,), gone)
        statements += trips.ids(GONE_WAITING_SQL, (now,), gone)
        results = await trips.send(statements)
        applied = {str(r["id"]) for result in results[:settle_count] for r in result.results}
        return [s.delivery.id for s in settled if s.delivery.id not in applied]


def claimed_delivery(row: Row) -> ClaimedDelivery:
    return ClaimedDelivery(
        id=row["id"],
        endpoint_id=row["endpoint_id"],
        installation_id=row["installation_id"],
        payload=str(row["payload"]).encode("utf-8"),
        created_at=int(row["created_at"]),
        attempt=int(row["attempt_count"]),
    )


def delivery_target(row: Row) -> DeliveryTarget:
    return DeliveryTarget(
        id=row["id"],
        installation_id=row["installation_id"],
        url=row["url"],
        secret_sealed=row["secret_sealed"],
        disabled=row["disabled_at"] is not None,
    )


def _values(settled: SettledDelivery) -> tuple[object, ...]:
    return (
        settled.delivery.id,
        settled.status.value,
        settled.next_attempt_at,
        settled.finished_at,
        settled.attempted_at,
        settled.http_status,
        settled.error,
        int(settled.handed_back),
    )

"""The outbox of webhook deliveries: written in the settle's own batch, claimed under a lease,
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

from dataclasses import dataclass

from scheduling.domain.delivery_policy import DeliveryStatus
from scheduling.ports import Row

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


@dataclass(frozen=True)
class ClaimedDelivery:
    id: str  # the webhook-id
    endpoint_id: str
    installation_id: str
    payload: bytes
    created_at: int  # the settle that wrote it
    attempt: int  # this claim's attempt number

    @classmethod
    def from_row(cls, row: Row) -> ClaimedDelivery:
        return cls(
            id=row["id"],
            endpoint_id=row["endpoint_id"],
            installation_id=row["installation_id"],
            payload=str(row["payload"]).encode("utf-8"),
            created_at=int(row["created_at"]),
            attempt=int(row["attempt_count"]),
        )


@dataclass(frozen=True)
class DeliveryTarget:
    """Where a claimed delivery goes, read in the claim's batch."""

    id: str
    installation_id: str
    url: str
    secret_sealed: str
    disabled: bool

    @classmethod
    def from_row(cls, row: Row) -> DeliveryTarget:
        return cls(
            id=row["id"],
            installation_id=row["installation_id"],
            url=row["url"],
            secret_sealed=row["secret_sealed"],
            disabled=row["disabled_at"] is not None,
        )


@dataclass(frozen=True)
class SettledDelivery:
    """How one claimed delivery ended this time."""

    delivery: ClaimedDelivery
    status: DeliveryStatus
    next_attempt_at: int | None
    finished_at: int | None
    attempted_at: int | None  # None: handed back unsent
    http_status: int | None
    error: str | None
    sent: bool  # a request left (False: the endpoint was gone or its secret unreadable)
    handed_back: bool = False  # claimed, never sent (a platform limit): waiting again, due now

    def values(self) -> tuple[object, ...]:
        return (
            self.delivery.id,
            self.status.value,
            self.next_attempt_at,
            self.finished_at,
            self.attempted_at,
            self.http_status,
            self.error,
            int(self.handed_back),
        )

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
runner killed mid-delivery leaves it to be sent again, with the same id. An endpoint
of a digest kind has its due deliveries claimed together, at most once its kind's
interval, and settled together: one message, a digest (`outbox_sql.py`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from scheduling.domain.deliveries import (
    ClaimedDelivery,
    DeliveryTarget,
    OutboxEvent,
    Pacing,
    SettledMessage,
)
from scheduling.domain.delivery_policy import (
    DISABLE_AFTER_FAILING_MS,
    ENDPOINT_GONE,
    DeliveryStatus,
)
from scheduling.limits import EVENTS, SETTLE_DELIVERIES
from scheduling.ports import Result, Row, Statement
from scheduling.repository.outbox_sql import (
    CLAIM_DELIVERIES_SQL,
    CLAIM_NAMED_SQL,
    CLAIMED_ENDPOINTS_SQL,
    CLAIMED_TITLES_SQL,
    DISABLED_WAITING_SQL,
    ENDPOINTS_DELIVERED_SQL,
    ENDPOINTS_EXPIRED_SQL,
    ENDPOINTS_FAILING_SQL,
    ENDPOINTS_GONE_SQL,
    EVENTS_SQL,
    NEXT_MESSAGE_SQL,
    SETTLE_DELIVERIES_SQL,
    SETTLE_DIGESTS_SQL,
)
from scheduling.repository.round_trips import RoundTrips


class Outbox:
    """The deliveries' store. It also keeps what the invocation learnt of the outbox: how many
    events its settles wrote (`events_written`) and when a delivery is next due (`next_at`,
    as of the last due query that read it; None: nothing waits)."""

    def __init__(self, trips: RoundTrips) -> None:
        self.trips = trips
        self.events_written = 0
        self.next_at: int | None = None
        self.fresh: list[str] = []  # written by this invocation, not yet delivered by name

    def take_fresh(self) -> list[str]:
        """The deliveries written since the last take (for the invocation to deliver)."""
        taken, self.fresh = self.fresh, []
        return taken

    def due(self, now: int) -> bool:
        """This invocation's settles wrote events, or a delivery is due at `now`: an
        invocation with nothing to notify spends nothing on it."""
        return self.events_written > 0 or (self.next_at is not None and self.next_at <= now)

    def event_statements(
        self, lease_token: str, now: int, events: Sequence[OutboxEvent]
    ) -> list[Statement]:
        """The inserts of `events`, for the batch of the settle (or refusal) that raises them."""
        raised: dict[str, list[list[str]]] = {}
        for e in events:
            raised.setdefault(e.settled_id, []).append(
                [e.id, e.schedule_id, e.type, e.body.decode("utf-8")]
            )
        rows = [(settled, _json_text(listed)) for settled, listed in raised.items()]
        return self.trips.values(EVENTS_SQL, EVENTS, (lease_token, now), rows)

    def written(self, results: Sequence[Result]) -> None:
        """Count (and keep) the outbox rows the event inserts among `results` wrote."""
        ids = [str(row["id"]) for result in results for row in result.results]
        self.events_written += len(ids)
        self.fresh += ids

    async def claim(
        self,
        lease_token: str,
        now: int,
        lease_ms: int,
        limit: int,
        pacing: Pacing,
        named: Sequence[str] | None = None,
    ) -> tuple[list[ClaimedDelivery], dict[str, DeliveryTarget]]:
        """Claim up to `limit` messages' deliveries due at `now` (waiting ones whose time
        came, sending ones whose lease expired; among `named` only, when given), oldest first,
        under `lease_token` until `now + lease_ms`; with the endpoints they go to, read in the
        same batch. How the kinds group and pace their messages is `pacing`: an endpoint of a
        paced kind claimed sends its next message that kind's interval later at the earliest."""
        lease_until = now + lease_ms
        db = self.trips.db
        lease = (lease_token, lease_until, now, limit, _json_text(list(pacing.digests)))
        claim = (
            db.prepare(CLAIM_DELIVERIES_SQL).bind(*lease)
            if named is None
            else db.prepare(CLAIM_NAMED_SQL).bind(*lease, json.dumps(list(named)))
        )
        intervals = _json_text(dict(pacing.intervals))
        claimed, _, targets, titles = await self.trips.send(
            [
                claim,
                db.prepare(NEXT_MESSAGE_SQL).bind(lease_token, lease_until, now, intervals),
                db.prepare(CLAIMED_ENDPOINTS_SQL).bind(lease_token, lease_until),
                db.prepare(CLAIMED_TITLES_SQL).bind(
                    lease_token, lease_until, _json_text(dict(pacing.titled))
                ),
            ]
        )
        sealed = {str(row["id"]): str(row["title_sealed"]) for row in titles.results}
        endpoints = (delivery_target(row) for row in targets.results)
        return (
            sorted(
                (claimed_delivery(row, sealed.get(row["id"])) for row in claimed.results),
                key=lambda d: (d.created_at, d.id),
            ),
            {endpoint.id: endpoint for endpoint in endpoints},
        )

    async def settle(
        self, lease_token: str, lease_until: int, settled: Sequence[SettledMessage], now: int
    ) -> list[str]:
        """End messages claimed under `lease_token`; returns the deliveries whose lease was
        lost (left as they are: another runner has them). In the same batch, each endpoint is
        marked: failing since its first failed attempt, not failing once delivered to, and
        disabled (with what it still had waiting) when it answered 410 Gone or has accepted
        nothing for DISABLE_AFTER_FAILING_MS."""
        if not settled:
            return []
        trips = self.trips
        fixed = (lease_token, lease_until)
        ones = [_values(s, s.message.id) for s in settled if not s.message.digest]
        digests = [_values(s, s.message.endpoint_id) for s in settled if s.message.digest]
        statements = trips.values(SETTLE_DELIVERIES_SQL, SETTLE_DELIVERIES, fixed, ones)
        statements += trips.values(SETTLE_DIGESTS_SQL, SETTLE_DELIVERIES, fixed, digests)
        settle_count = len(statements)
        statements += self._endpoint_statements(settled, now)
        results = await trips.send(statements)
        applied = {str(r["id"]) for result in results[:settle_count] for r in result.results}
        ids = (d.id for s in settled for d in s.message.deliveries)
        return [delivery_id for delivery_id in ids if delivery_id not in applied]

    def _endpoint_statements(self, settled: Sequence[SettledMessage], now: int) -> list[Statement]:
        trips = self.trips
        delivered = {s.message.endpoint_id for s in settled if s.status == DeliveryStatus.DELIVERED}
        gone = {s.message.endpoint_id for s in settled if s.sent and s.error == ENDPOINT_GONE}
        failing = {s.message.endpoint_id for s in settled if s.sent and s.error} - delivered
        expired_before = now - DISABLE_AFTER_FAILING_MS
        return [
            *trips.ids(ENDPOINTS_DELIVERED_SQL, (), delivered),
            *trips.ids(ENDPOINTS_FAILING_SQL, (now,), failing),
            *trips.ids(ENDPOINTS_GONE_SQL, (now,), gone),
            *trips.ids(ENDPOINTS_EXPIRED_SQL, (now, expired_before), failing),
            *trips.ids(DISABLED_WAITING_SQL, (now,), gone | failing),
        ]


def claimed_delivery(row: Row, title_sealed: str | None = None) -> ClaimedDelivery:
    return ClaimedDelivery(
        id=row["id"],
        endpoint_id=row["endpoint_id"],
        installation_id=row["installation_id"],
        payload=str(row["payload"]).encode("utf-8"),
        created_at=int(row["created_at"]),
        attempt=int(row["attempt_count"]),
        schedule_id=row["schedule_id"],
        title_sealed=title_sealed,
        tried_from=int(row["tried_from"]),
    )


def delivery_target(row: Row) -> DeliveryTarget:
    return DeliveryTarget(
        id=row["id"],
        installation_id=row["installation_id"],
        url=row["url"],
        secret_sealed=row["secret_sealed"],
        disabled=row["disabled_at"] is not None,
        kind=row["kind"],
    )


def _values(settled: SettledMessage, key: str) -> tuple[object, ...]:
    return (
        key,
        settled.status.value,
        settled.next_attempt_at,
        settled.finished_at,
        settled.attempted_at,
        settled.http_status,
        settled.error,
        int(settled.handed_back),
    )


def _json_text(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

"""The outbox of notification deliveries, settled as schedules are.

An event row is written in the settle's own batch, only for the schedules that settle really
changed, one row per subscribed endpoint. A delivery is claimed by a compare-and-set under a
lease and settled only while that lease holds, so no attempt is sent twice; a digest kind's
due deliveries are claimed together. A person's Send again or Replay puts deliveries back to
waiting, due now, with the same id and body.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from scheduling.domain.notifications import DISABLE_AFTER_FAILING_MS, ENDPOINT_GONE, DeliveryStatus
from scheduling.domain.records import (
    ClaimedDelivery,
    DeliveryTarget,
    OutboxEvent,
    Pacing,
    SettledMessage,
)
from scheduling.limits import EVENTS, SETTLE_DELIVERIES
from scheduling.ports import Database, Result, Row, Statement
from scheduling.repository.round_trips import RoundTrips

# -- the statements --------------------------------------------------------------------------------

# `?1` the batch's lease token (what its settle wrote into `settled_by`), `?2` the instant. A
# paced endpoint's row waits for the time its next message may leave.
# Each VALUES row: a settled schedule's id, and the JSON array of its events, each
# `[message id, schedule id, type, body]`. A stale notice (`schedule.stale`) names the other
# kind's schedule the settle's completion put out of date, and is written only when the
# trigger of migration 0017 marked it so; endpoints that hear of refusals hear of it. A
# release's notice (`release.held`, `release.completed`) is written only when its line's
# triggers (migration 0021) held or completed the release in this settle.
EVENTS_SQL = """INSERT INTO webhook_deliveries (id, endpoint_id, installation_id, schedule_id,
    event_type, payload, created_at, status, attempt_count, next_attempt_at)
SELECT json_extract(m.value, '$[0]') || '_' || e.id, e.id, s.installation_id,
       json_extract(m.value, '$[1]'), json_extract(m.value, '$[2]'),
       json_extract(m.value, '$[3]'), ?2, 'waiting', 0, max(?2, coalesce(e.next_message_at, 0))
  FROM (VALUES {values}) AS ev
  JOIN schedules s ON s.id = ev.column1 AND s.settled_by = ?1
  JOIN json_each(ev.column2) AS m
  JOIN notification_endpoints e ON e.installation_id = s.installation_id AND e.disabled_at IS NULL
  JOIN notification_subscriptions sub ON sub.endpoint_id = e.id
   AND sub.event_type = CASE json_extract(m.value, '$[2]')
                        WHEN 'schedule.stale' THEN 'schedule.refused'
                        ELSE json_extract(m.value, '$[2]') END
 WHERE CASE json_extract(m.value, '$[2]')
       WHEN 'schedule.stale' THEN EXISTS (SELECT 1 FROM schedules t
                WHERE t.id = json_extract(m.value, '$[1]') AND t.made_stale_by = s.id)
       WHEN 'release.held' THEN EXISTS (SELECT 1 FROM releases r
                WHERE r.id = s.release_id AND r.held_by = s.id AND r.held_at = ?2)
       WHEN 'release.completed' THEN EXISTS (SELECT 1 FROM releases r
                WHERE r.id = s.release_id AND r.status = 'completed' AND r.ended_at = ?2)
       ELSE json_extract(m.value, '$[1]') = s.id END
RETURNING id"""

# Waiting deliveries whose time came and sending ones whose lease expired, as up to ?4
# messages, oldest first: a delivery is a message of its own, but everything an endpoint of a
# digest kind (?5, a JSON array of the channel kinds that group) has due is one (claimed
# whole). An endpoint whose kind is paced waits for its next message's time (`next_message_at`
# is set for paced kinds alone). `?1` the lease token, `?2` its end, `?3` the instant.
_DUE_MESSAGES = """WITH due AS (
    SELECT id, endpoint_id, next_attempt_at AS ready_at FROM webhook_deliveries
     WHERE next_attempt_at <= ?3
    UNION ALL
    SELECT id, endpoint_id, lease_until AS ready_at FROM webhook_deliveries
     WHERE lease_until <= ?3
),
keyed AS (
    SELECT due.id, due.ready_at,
           CASE WHEN e.kind IN (SELECT value FROM json_each(?5)) THEN 'digest:' || e.id
                ELSE due.id END AS message
      FROM due LEFT JOIN notification_endpoints e ON e.id = due.endpoint_id
     WHERE coalesce(e.next_message_at, 0) <= ?3{among}
),
chosen AS (
    SELECT message FROM keyed GROUP BY message ORDER BY min(ready_at), message LIMIT ?4
)
"""
_CLAIM = """UPDATE webhook_deliveries
   SET status = 'sending', lease_token = ?1, lease_until = ?2, next_attempt_at = NULL,
       attempt_count = attempt_count + 1
 WHERE id IN (SELECT id FROM keyed WHERE message IN (SELECT message FROM chosen))
RETURNING id, endpoint_id, installation_id, schedule_id, payload, created_at, attempt_count,
          coalesce(retries_from, created_at) AS tried_from"""
CLAIM_DELIVERIES_SQL = _DUE_MESSAGES.format(among="") + _CLAIM
# The same among the deliveries named (a JSON array in ?6): an alarm's own events, a page's.
CLAIM_NAMED_SQL = (
    _DUE_MESSAGES.format(among="\n       AND due.id IN (SELECT value FROM json_each(?6))") + _CLAIM
)

# An endpoint of a paced kind claimed now (`?3`) sends its next message that kind's interval
# later at the earliest (`?4`, a JSON object: kind -> milliseconds).
NEXT_MESSAGE_SQL = """UPDATE notification_endpoints SET next_message_at = ?3 + pace.value
  FROM json_each(?4) AS pace
 WHERE pace.key = notification_endpoints.kind
   AND notification_endpoints.id IN (SELECT endpoint_id FROM webhook_deliveries WHERE lease_until = ?2 AND lease_token = ?1)"""

CLAIMED_ENDPOINTS_SQL = """SELECT id, installation_id, kind, url, secret_sealed, disabled_at
  FROM notification_endpoints
 WHERE id IN (SELECT endpoint_id FROM webhook_deliveries WHERE lease_until = ?2 AND lease_token = ?1)"""

# The sealed titles the first lines of a digest name, for the kinds whose lines name them
# (`?3`, a JSON object: kind -> how many lines).
CLAIMED_TITLES_SQL = """SELECT id, title_sealed FROM (
    SELECT d.id, s.title_sealed, titled.value AS lines,
           ROW_NUMBER() OVER (PARTITION BY d.endpoint_id ORDER BY d.created_at, d.id) AS line
      FROM webhook_deliveries d
      JOIN notification_endpoints e ON e.id = d.endpoint_id
      JOIN json_each(?3) AS titled ON titled.key = e.kind
      JOIN schedules s ON s.id = d.schedule_id
     WHERE d.lease_until = ?2 AND d.lease_token = ?1)
 WHERE line <= lines AND title_sealed IS NOT NULL"""

# A message settles its deliveries by id (one delivery) or by endpoint (a digest), under the
# batch's lease (`?1`, until `?2`). One handed back unsent (`done.column8` = 1) keeps its
# last attempt and gives back the one its claim counted.
_SETTLE = """UPDATE webhook_deliveries
   SET status = done.column2, next_attempt_at = done.column3, finished_at = done.column4,
       last_attempt_at = CASE WHEN done.column8 THEN last_attempt_at ELSE done.column5 END,
       last_http_status = CASE WHEN done.column8 THEN last_http_status ELSE done.column6 END,
       last_error = CASE WHEN done.column8 THEN last_error ELSE done.column7 END,
       attempt_count = attempt_count - done.column8,
       lease_token = NULL, lease_until = NULL
  FROM (VALUES {{values}}) AS done
 WHERE {key} = done.column1 AND webhook_deliveries.lease_until = ?2
   AND webhook_deliveries.lease_token = ?1
RETURNING id"""
SETTLE_DELIVERIES_SQL = _SETTLE.format(key="webhook_deliveries.id")
# By the lease's partial index, not the endpoint's whole history (`+` keeps the planner off it).
SETTLE_DIGESTS_SQL = _SETTLE.format(key="+webhook_deliveries.endpoint_id")

# The endpoints of a settle, by id (`{ids}`): delivered to, failed, gone (410), and failed
# with nothing accepted since `?2` (DISABLE_AFTER_FAILING_MS ago).
ENDPOINTS_DELIVERED_SQL = (
    "UPDATE notification_endpoints SET failing_since = NULL WHERE id IN ({ids})"
)
ENDPOINTS_FAILING_SQL = "UPDATE notification_endpoints SET failing_since = coalesce(failing_since, ?1) WHERE id IN ({ids})"
ENDPOINTS_GONE_SQL = "UPDATE notification_endpoints SET disabled_at = ?1, disabled_reason = 'gone' WHERE id IN ({ids}) AND disabled_at IS NULL"
ENDPOINTS_EXPIRED_SQL = """UPDATE notification_endpoints
   SET disabled_at = ?1, disabled_reason = 'failing'
 WHERE id IN ({ids}) AND disabled_at IS NULL AND failing_since <= ?2"""
# What an endpoint disabled (gone, or failing for days) still had waiting will not be sent.
DISABLED_WAITING_SQL = """UPDATE webhook_deliveries
   SET status = 'failed', next_attempt_at = NULL, finished_at = ?1,
       last_error = CASE (SELECT disabled_reason FROM notification_endpoints e
                           WHERE e.id = webhook_deliveries.endpoint_id)
                    WHEN 'failing' THEN 'endpoint_disabled' ELSE 'endpoint_gone' END
 WHERE status = 'waiting' AND endpoint_id IN ({ids})
   AND endpoint_id IN (SELECT id FROM notification_endpoints WHERE disabled_at IS NOT NULL)"""

# When the outbox next has a delivery due: its first retry, or its first lease to expire.
OUTBOX_NEXT_SQL = """SELECT min(at) AS next_at FROM (
    SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL
    UNION ALL
    SELECT min(lease_until) AS at FROM webhook_deliveries WHERE lease_until IS NOT NULL)"""


# -- the outbox ------------------------------------------------------------------------------------


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


# -- sent again on a person's word -----------------------------------------------------------------

# `?1` now. A paced kind's delivery waits for when its next message may leave.
_AGAIN = """UPDATE webhook_deliveries
   SET status = 'waiting', finished_at = NULL, attempt_count = 0, retries_from = ?1,
       next_attempt_at = max(?1, coalesce((SELECT e.next_message_at FROM notification_endpoints e
                                           WHERE e.id = webhook_deliveries.endpoint_id), 0))
 WHERE installation_id = ?2 AND endpoint_id = ?3
   AND endpoint_id IN (SELECT id FROM notification_endpoints
                        WHERE id = ?3 AND installation_id = ?2 AND disabled_at IS NULL)"""
SEND_AGAIN_SQL = _AGAIN + "\n   AND id = ?4 AND status IN ('delivered', 'failed')"
# Through the endpoint's history index (endpoint_id, created_at).
REPLAY_SQL = _AGAIN + "\n   AND created_at >= ?4 AND status = 'failed'\nRETURNING id"
ENABLE_SQL = """UPDATE notification_endpoints
   SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL
 WHERE id = ?1 AND installation_id = ?2 AND disabled_at IS NOT NULL"""


async def send_again(
    db: Database, installation_id: str, endpoint_id: str, delivery_id: str, now: int
) -> bool:
    """False when there is no such delivery that has ended, or its endpoint is disabled."""
    result = await (
        db.prepare(SEND_AGAIN_SQL).bind(now, installation_id, endpoint_id, delivery_id).run()
    )
    return result.meta.changes == 1


async def replay_failures(
    db: Database, installation_id: str, endpoint_id: str, since: int, now: int
) -> list[str]:
    """The failed deliveries of the endpoint whose event came at `since` or later, waiting
    again; their ids."""
    result = await db.prepare(REPLAY_SQL).bind(now, installation_id, endpoint_id, since).all()
    return [str(row["id"]) for row in result.results]


async def enable(db: Database, installation_id: str, endpoint_id: str) -> bool:
    result = await db.prepare(ENABLE_SQL).bind(endpoint_id, installation_id).run()
    return result.meta.changes == 1

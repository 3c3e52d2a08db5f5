"""The outbox's statements: events written with a settle, deliveries claimed as messages under
a lease, settled by id (one delivery) or by endpoint (a digest), and the endpoints marked.

Every claim and settle reads the partial indexes `webhook_deliveries_waiting` and
`webhook_deliveries_leased` (`tests/test_store_contract.py` reads their plans).
"""

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

"""The lease contract's statements: what is due, a claim (a compare-and-set on what the runner
observed), an unsent refusal, a settle, and the attempt rows they open and close.

`repository/leases.py` sends them; `tests/test_store_contract.py` reads their query plans
(only the partial indexes `schedules_waiting` and `schedules_leased`).
"""

from scheduling.repository.outbox_sql import OUTBOX_NEXT_SQL

# The two halves must match the partial indexes `schedules_waiting` and
# `schedules_leased` word for word, so their statuses are literal text here
# (tests/test_storage_cpython.py checks them against `statuses.WAITING`).
_DUE = """
WITH due AS (
    SELECT id, next_attempt_at AS ready_at FROM schedules
     WHERE status IN ('pending', 'retrying') AND next_attempt_at <= ?1
    UNION ALL
    SELECT id, lease_until AS ready_at FROM schedules
     WHERE status = 'running' AND lease_until <= ?1
),
"""
# Round-robin: every installation's first due row, then every second, and so on; each row
# carries the events its installation's endpoints hear of, what the plugin knows of its pin
# (a collision that ran, a check's conflict), and its release's line (what its events say).
_RANKED = """ranked AS (
    SELECT due.id, due.ready_at, s.installation_id,
           ROW_NUMBER() OVER (PARTITION BY s.installation_id
                              ORDER BY due.ready_at, due.id) AS turn
      FROM due JOIN schedules s ON s.id = due.id
),
chosen AS (
SELECT ranked.turn, ranked.ready_at, s.id, s.installation_id, s.content_id, s.kind,
       s.to_state, s.version_id, s.workflow_revision, s.idempotency_key, s.due_at, s.status,
       s.attempt_count, s.lease_token, s.requested_by, s.result_code, s.timezone, s.local_time,
       i.base_url, i.token_sealed,
       (SELECT group_concat(sub.event_type, ' ')
          FROM notification_endpoints e
          JOIN notification_subscriptions sub ON sub.endpoint_id = e.id
         WHERE e.installation_id = s.installation_id AND e.disabled_at IS NULL) AS subscribed,
       (SELECT json_object('id', o.id, 'kind', o.kind, 'to_state', o.to_state,
                           'version_id', o.version_id, 'due_at', o.due_at,
                           'timezone', o.timezone, 'local_time', o.local_time,
                           'attempt_count', o.attempt_count)
          FROM schedules o
         WHERE o.installation_id = s.installation_id AND o.content_id = s.content_id
           AND o.kind <> s.kind AND o.status IN ('pending', 'retrying', 'queued')
           AND o.made_stale_by IS NULL) AS collides,
       s.made_stale_by, s.conflict,
       (SELECT json_object('id', r.id, 'name', r.name, 'due_at', r.due_at,
                           'timezone', r.timezone,
                           'applied', json((SELECT json_group_array(id) FROM (
                                SELECT a.id FROM schedules a WHERE a.release_id = r.id
                                   AND a.status = 'completed' ORDER BY a.release_position))),
                           'behind', json((SELECT json_group_array(id) FROM (
                                SELECT q.id FROM schedules q WHERE q.release_id = r.id
                                   AND q.status = 'queued' ORDER BY q.release_position))))
          FROM releases r WHERE r.id = s.release_id) AS release
  FROM ranked
  JOIN schedules s ON s.id = ranked.id
  JOIN installations i ON i.id = s.installation_id
 WHERE ranked.turn <= ?2{shared}
 ORDER BY ranked.turn, ranked.ready_at, ranked.id
 LIMIT ?2
)
"""
# One row always comes back (with no schedule when none is due) to say when the outbox next
# has a delivery due, so a tick learns both in one statement and a tick with nothing to
# notify costs what it did. The installations in ?3 (a JSON array: those with sends waiting
# for their share of the slots) are left out, and each other takes at most ?4 rows (a wave)
# unless it alone has rows due; `due_now` counts every due row.
_SHARED = """
   AND ranked.installation_id NOT IN (SELECT value FROM json_each(?3))
   AND (ranked.turn <= ?4 OR (SELECT count(DISTINCT installation_id) FROM ranked) = 1)"""
DUE_SQL = (
    _DUE
    + _RANKED.format(shared=_SHARED)
    + f""",
outbox AS ({OUTBOX_NEXT_SQL})
SELECT chosen.*, outbox.next_at AS outbox_next_at, (SELECT count(*) FROM ranked) AS due_now
  FROM outbox LEFT JOIN chosen ON 1
 ORDER BY chosen.turn, chosen.ready_at, chosen.id
"""
)

# The same, for one installation (?3): its clock's alarm claims only its own rows, read from
# `schedules_waiting_by_installation` and `schedules_running_by_installation`.
DUE_FOR_SQL = (
    """
WITH due AS (
    SELECT id, next_attempt_at AS ready_at FROM schedules
     WHERE installation_id = ?3 AND status IN ('pending', 'retrying') AND next_attempt_at <= ?1
    UNION ALL
    SELECT id, lease_until AS ready_at FROM schedules
     WHERE installation_id = ?3 AND status = 'running' AND lease_until <= ?1
),
"""
    + _RANKED.format(shared="")
    + "\nSELECT * FROM chosen ORDER BY turn, ready_at, id\n"
)

# The releases' next items a settle made due (?3: a JSON array of release ids), read in the
# settle's own batch: a release's items follow one another with two round trips each.
DUE_NEXT_SQL = (
    """
WITH due AS (
    SELECT id, next_attempt_at AS ready_at FROM schedules
     WHERE release_id IN (SELECT value FROM json_each(?3))
       AND status = 'pending' AND next_attempt_at <= ?1
),
"""
    + _RANKED.format(shared="")
    + "\nSELECT * FROM chosen ORDER BY turn, ready_at, id\n"
)

# What the runner observed of a row, matched as a whole (a NULL lease token as '').
_SEEN = """
 WHERE schedules.id = seen.column1 AND schedules.status = seen.column2
   AND coalesce(schedules.lease_token, '') = seen.column3
   AND schedules.attempt_count = seen.column4"""

CLAIM_SQL = (
    """UPDATE schedules
   SET status = ?4, lease_token = ?1, lease_until = ?2,
       attempt_count = attempt_count + 1, next_attempt_at = NULL, updated_at = ?3
  FROM (VALUES {values}) AS seen"""
    + _SEEN
    + "\nRETURNING id, attempt_count"
)

# A claim under the per-installation cap (a clock's alarm, the watchdog): the same
# compare-and-set, and one installation's live claims (running under a lease that has not
# expired) never exceed ?5, counting those already held by any runner. The candidates are
# numbered per installation before any row changes, so one statement can never take an
# installation past the cap, and two claimers are serialised by D1's single writer.
CLAIM_WITHIN_SQL = """UPDATE schedules
   SET status = ?4, lease_token = ?1, lease_until = ?2,
       attempt_count = attempt_count + 1, next_attempt_at = NULL, updated_at = ?3
  FROM (SELECT s.id AS id,
               ROW_NUMBER() OVER (PARTITION BY s.installation_id
                                  ORDER BY coalesce(s.next_attempt_at, s.lease_until), s.id)
                 AS turn,
               (SELECT count(*) FROM schedules busy
                 WHERE busy.installation_id = s.installation_id AND busy.status = 'running'
                   AND busy.lease_until > ?3) AS busy
          FROM (VALUES {values}) AS seen
          JOIN schedules s ON s.id = seen.column1 AND s.status = seen.column2
           AND coalesce(s.lease_token, '') = seen.column3
           AND s.attempt_count = seen.column4) AS pick
 WHERE schedules.id = pick.id AND pick.busy + pick.turn <= ?5
RETURNING id, attempt_count"""

# How many live claims each installation holds (?2: a JSON array of installation ids), read
# in the claim's own transaction: a candidate left unclaimed where this left no room was
# held back by the cap, not lost to another runner.
BUSY_SQL = """SELECT installation_id, count(*) AS busy FROM schedules
 WHERE status = 'running' AND lease_until > ?1
   AND installation_id IN (SELECT value FROM json_each(?2))
 GROUP BY installation_id"""

# An unsent end: refused, or held (`seen.column7`, `release.unsent_status`).
REFUSE_UNSENT_SQL = (
    """UPDATE schedules
   SET status = seen.column7, result_code = seen.column5, ended_by = seen.column6,
       next_attempt_at = NULL, lease_token = NULL, lease_until = NULL, updated_at = ?1,
       settled_by = ?2
  FROM (VALUES {values}) AS seen"""
    + _SEEN
    + "\nRETURNING id"
)

SETTLE_SQL = """UPDATE schedules
   SET status = done.column2, result_code = coalesce(done.column3, schedules.result_code),
       ended_by = done.column6, next_attempt_at = done.column4,
       attempt_count = attempt_count - done.column5,
       lease_token = NULL, lease_until = NULL, updated_at = ?2, settled_by = ?1
  FROM (VALUES {values}) AS done
 WHERE schedules.id = done.column1 AND schedules.status = ?3
   AND schedules.lease_token = ?1
RETURNING id"""

FINISH_ATTEMPTS_SQL = """UPDATE schedule_attempts
   SET started_at = sent.column3, finished_at = sent.column4, code = sent.column5,
       http_status = sent.column6
  FROM (VALUES {values}) AS sent
 WHERE schedule_attempts.schedule_id = sent.column1 AND schedule_attempts.attempt = sent.column2
   AND schedule_attempts.finished_at IS NULL"""

DROP_ATTEMPTS_SQL = """DELETE FROM schedule_attempts
 WHERE finished_at IS NULL AND rowid IN (
    SELECT a.rowid FROM (VALUES {values}) AS unsent
      JOIN schedule_attempts a
        ON a.schedule_id = unsent.column1 AND a.attempt = unsent.column2)"""


# When the runner last sent for each installation (the operator page's list). Only ever moved
# forward: a slower batch settling after a later one leaves the later instant.
LAST_SENT_SQL = """UPDATE installations SET last_sent_at = sent.column2
  FROM (VALUES {values}) AS sent
 WHERE installations.id = sent.column1
   AND coalesce(installations.last_sent_at, 0) < sent.column2"""

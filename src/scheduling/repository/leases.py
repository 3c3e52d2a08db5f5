"""The schedules' leases: the lease contract, stated as the docstrings of its operations, its
statements, and when each installation next has something due.

Work grows with batches, not rows: each operation is one D1 round trip of a few multi-row
statements, and who won a claim or a settle is read from `RETURNING`. A claim's refusals and
a settle write their events into the outbox in the same batch. The statements read only the
partial indexes of live rows (`tests/test_store_contract.py` reads their plans).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import astuple, fields

from scheduling.domain.outcomes import Status
from scheduling.domain.records import Claim, DueRow, OutboxEvent, SettledClaim, Unsent, Waiting
from scheduling.domain.schedules import Command, ReleaseLine, unsent_status
from scheduling.limits import (
    CLAIM,
    CLAIM_WITHIN,
    DROP_ATTEMPTS,
    FINISH_ATTEMPTS,
    LAST_SENT,
    REFUSE_UNSENT,
    SETTLE,
)
from scheduling.ports import Database, Row, Statement
from scheduling.repository.outbox import OUTBOX_NEXT_SQL, Outbox
from scheduling.repository.round_trips import RoundTrips

# -- the statements --------------------------------------------------------------------------------

# The two halves must match the partial indexes `schedules_waiting` and
# `schedules_leased` word for word, so their statuses are literal text here
# (tests/test_storage_cpython.py checks them against `outcomes.WAITING`).
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

_CHOSEN = _RANKED.format(shared="") + "\nSELECT * FROM chosen ORDER BY turn, ready_at, id\n"

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
    + _CHOSEN
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
    + _CHOSEN
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
       next_attempt_at = done.column4, ended_by = done.column5,
       attempt_count = attempt_count - done.column6,
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


# -- the lease contract ----------------------------------------------------------------------------

_COMMAND_FIELDS = tuple(f.name for f in fields(Command))
_PARSED = ("status", "command", "subscribed", "collides", "release")
_AS_STORED = tuple(f.name for f in fields(DueRow) if f.name not in _PARSED)


def due_row(row: Row) -> DueRow:
    return DueRow(
        **{name: row[name] for name in _AS_STORED},
        status=Status(row["status"]),
        command=Command(**{name: row[name] for name in _COMMAND_FIELDS}),
        subscribed=frozenset((row["subscribed"] or "").split()),
        collides=Waiting(**json.loads(row["collides"])) if row["collides"] else None,
        release=_line(row["release"]),
    )


def _line(found: str | None) -> ReleaseLine | None:
    if not found:
        return None
    line = json.loads(found)
    applied, behind = tuple(line.pop("applied")), tuple(line.pop("behind"))
    return ReleaseLine(**line, applied=applied, behind=behind)


class Leases:
    def __init__(self, trips: RoundTrips, outbox: Outbox) -> None:
        self.trips = trips
        self.db = trips.db
        self.outbox = outbox
        self.next_up: list[DueRow] = []  # what the last settle made due (`settle`'s `follow`)
        self.due_now = 0  # rows due at the last `due`, left out or not

    async def due(
        self, now: int, limit: int, left_out: Sequence[str] = (), each: int | None = None
    ) -> list[DueRow]:
        """Up to `limit` due rows, round-robin across installations, oldest first in each:
        none of the installations `left_out`, and at most `each` of each other unless it
        alone has rows due (`due_now`: how many were due, left out or not).

        A row is due when it is pending or retrying with `next_attempt_at <= now`,
        or running with `lease_until <= now` (its runner died mid-claim). The same
        statement says when the outbox next has a delivery due (`Outbox.next_at`).
        """
        left = json.dumps(sorted(left_out))
        statement = self.db.prepare(DUE_SQL).bind(now, limit, left, each or limit)
        [result] = await self.trips.send([statement])
        rows = result.results
        self.outbox.next_at = rows[0]["outbox_next_at"] if rows else None
        self.due_now = int(rows[0]["due_now"]) if rows else 0
        return [due_row(row) for row in rows if row["id"] is not None]

    async def due_for(self, installation_id: str, now: int, limit: int) -> list[DueRow]:
        """Up to `limit` of one installation's rows due at `now`, oldest first."""
        statement = self.db.prepare(DUE_FOR_SQL).bind(now, limit, installation_id)
        [result] = await self.trips.send([statement])
        return [due_row(row) for row in result.results]

    async def claim(
        self,
        rows: Sequence[DueRow],
        refusals: Sequence[Unsent],
        lease_token: str,
        now: int,
        lease_ms: int,
        events: Sequence[OutboxEvent] = (),
    ) -> tuple[list[Claim], list[str]]:
        """Claim `rows` and refuse `refusals` unsent, each on what was observed of it.

        A claim is a compare-and-set on the row's status, lease token and attempt
        count as `due` returned them: it sets running, `lease_token`,
        `lease_until = now + lease_ms`, `attempt_count + 1`, and opens the
        attempt's row. Of two runners claiming the same observed row, one wins.
        A refusal (caps reached, token unreadable) ends the row refused, and a hold (its
        pin known stale) ends it held, on the same compare-and-set, without a claim, and
        writes `events` for those it ended. Returns the claims won and the ids refused.
        """
        won, refused, _ = await self.claim_within(
            rows, refusals, lease_token, now, lease_ms, None, events
        )
        return won, refused

    async def claim_within(
        self,
        rows: Sequence[DueRow],
        refusals: Sequence[Unsent],
        lease_token: str,
        now: int,
        lease_ms: int,
        cap: int | None,
        events: Sequence[OutboxEvent] = (),
        *,
        apart: bool = True,
    ) -> tuple[list[Claim], list[str], list[str]]:
        """As `claim`, but (unless `cap` is None) no installation ends up with more than `cap`
        live claims (rows running under a lease that has not expired), whoever holds them: a
        claim is an installation's send slot, taken by compare-and-set, freed by the settle,
        and gone with the lease. Returns the claims won, the ids refused, and the ids the cap
        held back (still due, for a later claim). Without `apart`, every row not won counts as
        held back (those another runner took too), and the claim costs a statement less.
        One round trip: the live claims counted, the refusals and their events, the claims."""
        values = self.trips.values
        busy: list[Statement] = []
        if rows and cap is not None and apart:
            installations = json.dumps(sorted({row.installation_id for row in rows}))
            busy.append(self.db.prepare(BUSY_SQL).bind(now, installations))
        seen = [(*row.observed(), code, by, unsent_status(code)) for row, code, by in refusals]
        refusing = values(REFUSE_UNSENT_SQL, REFUSE_UNSENT, (now, lease_token), seen)
        written = self.outbox.event_statements(lease_token, now, events) if refusing else []
        # Each claim opens its attempt's row (migration 0021's trigger).
        lease = (lease_token, now + lease_ms, now, Status.RUNNING)
        observed = [row.observed() for row in rows]
        if cap is None:
            claims = values(CLAIM_SQL, CLAIM, lease, observed)
        else:
            claims = values(CLAIM_WITHIN_SQL, CLAIM_WITHIN, (*lease, cap), observed)
        if not (refusing or claims):
            return [], [], []
        results = await self.trips.send([*busy, *refusing, *written, *claims])
        refused_at, events_at = len(busy), len(busy) + len(refusing)
        claims_at = events_at + len(written)
        refused = [str(r["id"]) for x in results[refused_at:events_at] for r in x.results]
        self.outbox.written(results[events_at:claims_at])
        # Won in the order asked (the due query's round-robin), never `RETURNING`'s.
        attempts = {
            str(r["id"]): int(r["attempt_count"])
            for result in results[claims_at:]
            for r in result.results
        }
        won = [Claim(row, attempts[row.id], now + lease_ms) for row in rows if row.id in attempts]
        if cap is None:
            return won, refused, []
        if busy:
            counted = {str(r["installation_id"]): int(r["busy"]) for r in results[0].results}
            return won, refused, _held_back(rows, won, counted, cap)
        won_ids = {claim.row.id for claim in won}
        return won, refused, [row.id for row in rows if row.id not in won_ids]

    async def settle(
        self,
        lease_token: str,
        settled: Sequence[SettledClaim],
        now: int,
        *,
        last_sent: bool = True,
        follow: Sequence[str] = (),
    ) -> list[str]:
        """End claims made under `lease_token`; returns the schedules whose lease was lost.
        With `follow` (release ids), the next items the settle made due are read in its batch
        (`next_up`), up to 20.

        A settle applies only while the row is still running under this claim's
        lease token; once the lease expired another runner may have reclaimed it,
        and then nothing of the row changes. Sent claims finish their attempt
        row; unsent ones drop it and give the attempt back. Each installation sent to
        keeps the instant of its latest send (`installations.last_sent_at`), unless
        `last_sent` is False (the caller notes it later: `note_last_sent`). The claims'
        events are written in the same batch, for the settles that applied only.
        """
        if not settled:
            return []
        values = self.trips.values
        # An unsent claim gives its attempt back.
        ends = [(s.claim.row.id, *astuple(s.settlement), 0 if s.attempt else 1) for s in settled]
        statements = values(SETTLE_SQL, SETTLE, (lease_token, now, Status.RUNNING), ends)
        settle_count = len(statements)
        events = [
            e for s in settled for e in (s.event, s.stale_event, s.release_event) if e is not None
        ]
        statements += self.outbox.event_statements(lease_token, now, events)
        event_end = len(statements)
        statements += self._attempt_statements(settled)
        if last_sent:
            statements += self._last_sent_statements(latest_sends(settled))
        if follow:
            next_up = json.dumps(sorted(set(follow)))
            statements.append(self.db.prepare(DUE_NEXT_SQL).bind(now, 20, next_up))
        results = await self.trips.send(statements)
        self.next_up = [due_row(row) for row in results[-1].results] if follow else []
        applied = {str(r["id"]) for result in results[:settle_count] for r in result.results}
        self.outbox.written(results[settle_count:event_end])
        return [s.claim.row.id for s in settled if s.claim.row.id not in applied]

    async def note_last_sent(self, latest: Mapping[str, int]) -> None:
        """Each installation in `latest` keeps that instant as its latest send, if later than
        the one it has (one statement for up to 50 installations)."""
        if latest:
            await self.trips.send(self._last_sent_statements(latest))

    def _last_sent_statements(self, latest: Mapping[str, int]) -> list[Statement]:
        return self.trips.values(LAST_SENT_SQL, LAST_SENT, (), sorted(latest.items()))

    def _attempt_statements(self, settled: Sequence[SettledClaim]) -> list[Statement]:
        """Sent claims finish their attempt row, unsent ones drop it."""
        sent = [
            (s.claim.row.id, a.number, a.started_at, a.finished_at, a.code, a.http_status)
            for s in settled
            if (a := s.attempt)
        ]
        unsent = [(s.claim.row.id, s.claim.attempt) for s in settled if not s.attempt]
        values = self.trips.values
        finished = values(FINISH_ATTEMPTS_SQL, FINISH_ATTEMPTS, (), sent)
        return finished + values(DROP_ATTEMPTS_SQL, DROP_ATTEMPTS, (), unsent)


def latest_sends(settled: Sequence[SettledClaim]) -> dict[str, int]:
    """Each installation sent to, and when its latest request of `settled` left."""
    latest: dict[str, int] = {}
    for s in settled:
        if s.attempt:
            installation = s.claim.row.installation_id
            latest[installation] = max(latest.get(installation, 0), s.attempt.started_at)
    return latest


def _held_back(
    rows: Sequence[DueRow], won: Sequence[Claim], busy: dict[str, int], cap: int
) -> list[str]:
    """The candidates the cap held back: of an installation whose claims filled the room
    it had, those not won (one another runner took first is counted here too, and found
    not due when it is tried again)."""
    wanted = Counter(row.installation_id for row in rows)
    taken = Counter(claim.row.installation_id for claim in won)
    won_ids = {claim.row.id for claim in won}
    full = {
        installation
        for installation in wanted
        if taken[installation] >= cap - busy.get(installation, 0)
    }
    return [row.id for row in rows if row.installation_id in full and row.id not in won_ids]


# -- wake-ups --------------------------------------------------------------------------------------

# One installation's next due instant (NULL: nothing live).
NEXT_DUE_SQL = """SELECT min(at) AS next_at FROM (
    SELECT min(next_attempt_at) AS at FROM schedules
     WHERE installation_id = ?1 AND status IN ('pending', 'retrying')
    UNION ALL
    SELECT min(lease_until) AS at FROM schedules
     WHERE installation_id = ?1 AND status = 'running')"""

# Every installation with something due by ?1, and the earliest it is due.
WAKE_UPS_SQL = """SELECT installation_id, min(at) AS next_at FROM (
    SELECT installation_id, next_attempt_at AS at FROM schedules
     WHERE status IN ('pending', 'retrying') AND next_attempt_at <= ?1
    UNION ALL
    SELECT installation_id, lease_until AS at FROM schedules
     WHERE status = 'running' AND lease_until <= ?1)
 GROUP BY installation_id ORDER BY next_at, installation_id"""


def read_next_due(db: Database, installation_id: str) -> Statement:
    return db.prepare(NEXT_DUE_SQL).bind(installation_id)


def next_due_from(rows: Sequence[Row]) -> int | None:
    value = rows[0]["next_at"] if rows else None
    return None if value is None else int(value)


async def next_due(db: Database, installation_id: str) -> int | None:
    """When the installation next has something due; None when nothing is live."""
    return next_due_from((await read_next_due(db, installation_id).all()).results)


def read_wake_ups(db: Database, until: int) -> Statement:
    return db.prepare(WAKE_UPS_SQL).bind(until)


def wake_ups_from(rows: Sequence[Row]) -> dict[str, int]:
    """installation -> the earliest it has something due."""
    return {str(row["installation_id"]): int(row["next_at"]) for row in rows}

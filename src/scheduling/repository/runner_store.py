"""The runner's store: the lease contract, stated as the docstrings of its operations.

Work grows with batches, not rows: each operation is one D1 round trip of a
few multi-row statements (`UPDATE … FROM (VALUES …)`), chunked under D1's
bound-parameter limit, and who won a claim or a settle is read from
`RETURNING`, never decoded from positions. `statements` and `round_trips`
count what this store sent, for the tick's report.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields

from scheduling.domain.delivery_policy import ENDPOINT_GONE, DeliveryStatus
from scheduling.domain.retry_policy import Settlement
from scheduling.domain.schedule import Attempt, Command
from scheduling.domain.statuses import Status
from scheduling.limits import (
    CLAIM,
    CLAIM_WITHIN,
    DROP_ATTEMPTS,
    ENDPOINT_IDS,
    EVENTS,
    FINISH_ATTEMPTS,
    LAST_SENT,
    REFUSE_UNSENT,
    SETTLE,
    SETTLE_DELIVERIES,
    StatementShape,
)
from scheduling.ports import Database, LimitReached, Result, Row, Statement
from scheduling.repository.outbox import (
    CLAIM_DELIVERIES_SQL,
    CLAIMED_ENDPOINTS_SQL,
    ENDPOINTS_DELIVERED_SQL,
    ENDPOINTS_FAILING_SQL,
    ENDPOINTS_GONE_SQL,
    EVENTS_SQL,
    GONE_WAITING_SQL,
    SETTLE_DELIVERIES_SQL,
    ClaimedDelivery,
    DeliveryTarget,
    SettledDelivery,
)

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
# carries the events its installation's endpoints hear of.
_RANKED = """ranked AS (
    SELECT due.id, due.ready_at,
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
         WHERE e.installation_id = s.installation_id AND e.disabled_at IS NULL) AS subscribed
  FROM ranked
  JOIN schedules s ON s.id = ranked.id
  JOIN installations i ON i.id = s.installation_id
 WHERE ranked.turn <= ?2
 ORDER BY ranked.turn, ranked.ready_at, ranked.id
 LIMIT ?2
)
"""
# When the outbox next has a delivery due: its first retry, or its first lease to expire.
OUTBOX_NEXT_SQL = """SELECT min(at) AS next_at FROM (
    SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL
    UNION ALL
    SELECT min(lease_until) AS at FROM webhook_deliveries WHERE lease_until IS NOT NULL)"""
# One row always comes back (with no schedule when none is due) to say when the outbox next
# has a delivery due, so a tick learns both in one statement and a tick with nothing to
# notify costs what it did.
DUE_SQL = (
    _DUE
    + _RANKED
    + f""",
outbox AS ({OUTBOX_NEXT_SQL})
SELECT chosen.*, outbox.next_at AS outbox_next_at
  FROM outbox LEFT JOIN chosen ON 1
 ORDER BY chosen.turn, chosen.ready_at, chosen.id
"""
)

# The same, among the ids a queue message named (a JSON array in ?3): a message only says
# what to try; what is due is decided here, on the rows as they are now.
DUE_AMONG_SQL = (
    """
WITH wanted AS (SELECT DISTINCT value AS id FROM json_each(?3)),
due AS (
    SELECT s.id, s.next_attempt_at AS ready_at FROM wanted JOIN schedules s ON s.id = wanted.id
     WHERE s.status IN ('pending', 'retrying') AND s.next_attempt_at <= ?1
    UNION ALL
    SELECT s.id, s.lease_until AS ready_at FROM wanted JOIN schedules s ON s.id = wanted.id
     WHERE s.status = 'running' AND s.lease_until <= ?1
),
"""
    + _RANKED
    + "\nSELECT * FROM chosen ORDER BY turn, ready_at, id\n"
)

# A tick with a queue marks what it puts in messages, round-robin across installations, and
# leaves a marked row to its message until ?2 (then dispatches it again: a message can be
# lost). ?3 rows at most. The mark is no ownership; a claim clears it.
DISPATCH_SQL = """
WITH due AS (
    SELECT id, next_attempt_at AS ready_at FROM schedules
     WHERE status IN ('pending', 'retrying') AND next_attempt_at <= ?1
       AND (dispatched_at IS NULL OR dispatched_at <= ?2)
    UNION ALL
    SELECT id, lease_until AS ready_at FROM schedules
     WHERE status = 'running' AND lease_until <= ?1
       AND (dispatched_at IS NULL OR dispatched_at <= ?2)
),
ranked AS (
    SELECT due.id, due.ready_at,
           ROW_NUMBER() OVER (PARTITION BY s.installation_id
                              ORDER BY due.ready_at, due.id) AS turn
      FROM due JOIN schedules s ON s.id = due.id
)
UPDATE schedules SET dispatched_at = ?1
 WHERE id IN (SELECT id FROM ranked ORDER BY turn, ready_at, id LIMIT ?3)
RETURNING id, installation_id,
          CASE WHEN status = 'running' THEN lease_until ELSE next_attempt_at END AS ready_at
"""

# Marks of a dispatch whose messages were not sent: due again for the next tick.
UNMARK_SQL = """UPDATE schedules SET dispatched_at = NULL
 WHERE id IN (SELECT value FROM json_each(?1)) AND dispatched_at = ?2"""

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

# A queue consumer's claim: the same compare-and-set, and one installation's live claims
# (running under a lease that has not expired) never exceed ?5, counting those already held
# by any runner. The candidates are numbered per installation before any row changes, so
# one statement can never take an installation past the cap, and two claimers are
# serialised by D1's single writer. A claim also ends the row's dispatch mark.
CLAIM_WITHIN_SQL = """UPDATE schedules
   SET status = ?4, lease_token = ?1, lease_until = ?2,
       attempt_count = attempt_count + 1, next_attempt_at = NULL, dispatched_at = NULL,
       updated_at = ?3
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

# Literal 'running': with a parameter the planner would scan instead of reading
# `schedules_leased`.
OPEN_ATTEMPTS_SQL = """INSERT INTO schedule_attempts (schedule_id, attempt, started_at)
SELECT id, attempt_count, ?3 FROM schedules
 WHERE status = 'running' AND lease_until = ?2 AND lease_token = ?1"""

REFUSE_UNSENT_SQL = (
    """UPDATE schedules
   SET status = ?2, result_code = seen.column5, ended_by = seen.column6, next_attempt_at = NULL,
       lease_token = NULL, lease_until = NULL, updated_at = ?1, settled_by = ?3
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


@dataclass(frozen=True)
class DueRow:
    """A due schedule as the runner sees it: what it observed (for the compare-and-set),
    its command, and its installation's base URL and sealed token."""

    id: str
    installation_id: str
    status: Status
    attempt_count: int
    lease_token: str | None
    base_url: str
    token_sealed: str
    command: Command
    result_code: str | None = None  # while retrying: the last attempt's code
    timezone: str = "UTC"
    local_time: str = ""
    subscribed: frozenset[str] = frozenset()  # the events its installation's endpoints hear of

    @property
    def due_at(self) -> int:
        return self.command.due_at

    @classmethod
    def from_row(cls, row: Row) -> DueRow:
        command = Command(**{name: row[name] for name in _COMMAND_FIELDS})
        return cls(
            id=row["id"],
            installation_id=row["installation_id"],
            status=Status(row["status"]),
            attempt_count=row["attempt_count"],
            lease_token=row["lease_token"],
            base_url=row["base_url"],
            token_sealed=row["token_sealed"],
            command=command,
            result_code=row["result_code"],
            timezone=row["timezone"],
            local_time=row["local_time"],
            subscribed=frozenset((row["subscribed"] or "").split()),
        )

    def observed(self) -> tuple[object, ...]:
        return (self.id, self.status, self.lease_token or "", self.attempt_count)


_COMMAND_FIELDS = tuple(field.name for field in fields(Command))


# A due row ended without a claim: its result code, and the cap that ended it (if one did).
Unsent = tuple[DueRow, str, str | None]


@dataclass(frozen=True)
class DispatchedRow:
    """A due row a tick put in a queue message."""

    id: str
    installation_id: str
    ready_at: int  # since when it is due (its retry time, or its expired lease)


def round_robin(rows: Sequence[DispatchedRow]) -> list[DispatchedRow]:
    """Each installation's oldest row, then each one's second, and so on."""
    turns: dict[str, int] = {}
    ranked = []
    for row in sorted(rows, key=lambda r: (r.installation_id, r.ready_at, r.id)):
        turns[row.installation_id] = turns.get(row.installation_id, 0) + 1
        ranked.append((turns[row.installation_id], row.ready_at, row.id, row))
    return [row for *_, row in sorted(ranked, key=lambda r: r[:3])]


@dataclass(frozen=True)
class Claim:
    """A due row this runner claimed, under its batch's lease token."""

    row: DueRow
    attempt: int  # this claim's attempt number (attempt_count after the claim)


@dataclass(frozen=True)
class SettledClaim:
    """How one claim ends: where its schedule goes, and the attempt when a request left
    (None: nothing was sent, so no attempt is counted); and the event it raises, when its
    installation's endpoints hear of it."""

    claim: Claim
    settlement: Settlement
    attempt: Attempt | None
    event: OutboxEvent | None = None

    @property
    def handed_back(self) -> bool:
        """Never sent and back to waiting (a platform limit), rather than ended."""
        return self.attempt is None and self.settlement.status in (
            Status.PENDING,
            Status.RETRYING,
        )


@dataclass(frozen=True)
class OutboxEvent:
    """An event for the outbox: written only if the settle (or refusal) of `schedule_id` in
    the same batch applies, once per subscribed endpoint."""

    id: str
    schedule_id: str
    type: str
    body: bytes

    def values(self) -> tuple[object, ...]:
        return (self.id, self.schedule_id, self.type, self.body.decode("utf-8"))


class RunnerStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.statements = 0
        self.round_trips = 0
        self.events_written = 0  # outbox rows this store's batches wrote
        # When the outbox next has a delivery due (None: nothing waits), as of the last `due`.
        self.outbox_next_at: int | None = None

    async def due(self, now: int, limit: int) -> list[DueRow]:
        """Up to `limit` due rows, round-robin across installations, oldest first in each.

        A row is due when it is pending or retrying with `next_attempt_at <= now`,
        or running with `lease_until <= now` (its runner died mid-claim). The same
        statement says when the outbox next has a delivery due (`outbox_next_at`).
        """
        [result] = await self._round_trip([self._due(now, limit)])
        rows = result.results
        self.outbox_next_at = rows[0]["outbox_next_at"] if rows else None
        return [DueRow.from_row(row) for row in rows if row["id"] is not None]

    async def due_among(self, ids: Sequence[str], now: int, limit: int) -> list[DueRow]:
        """Up to `limit` of the schedules `ids` that are due at `now`, taken as `due` takes
        them (round-robin across installations). Ids of rows that are not due, or no longer
        exist, are left out."""
        if not ids:
            return []
        statement = self.db.prepare(DUE_AMONG_SQL).bind(now, limit, json.dumps(list(ids)))
        [result] = await self._round_trip([statement])
        return [DueRow.from_row(row) for row in result.results]

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
        A refusal (caps reached, token unreadable) ends the row on the same
        compare-and-set, without a claim, and writes `events` (of refused rows) for
        those it ended. Returns the claims won and the ids refused.
        """
        won, refused, _ = await self._claim(
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
        cap: int,
        events: Sequence[OutboxEvent] = (),
    ) -> tuple[list[Claim], list[str], list[str]]:
        """As `claim`, but no installation ends up with more than `cap` live claims (rows
        running under a lease that has not expired), whoever holds them: a claim is an
        installation's send slot, taken by compare-and-set, freed by the settle, and gone
        with the lease. Returns the claims won, the ids refused, and the ids the cap held
        back (still due, for a later claim)."""
        return await self._claim(rows, refusals, lease_token, now, lease_ms, cap, events)

    async def _claim(
        self,
        rows: Sequence[DueRow],
        refusals: Sequence[Unsent],
        lease_token: str,
        now: int,
        lease_ms: int,
        cap: int | None,
        events: Sequence[OutboxEvent],
    ) -> tuple[list[Claim], list[str], list[str]]:
        observed = {row.id: row for row in rows}
        statements: list[Statement] = []
        if rows and cap is not None:
            installations = sorted({row.installation_id for row in rows})
            statements.append(self.db.prepare(BUSY_SQL).bind(now, json.dumps(installations)))
        busy_count = len(statements)
        if refusals:
            statements += self._values(
                REFUSE_UNSENT_SQL,
                REFUSE_UNSENT,
                (now, Status.REFUSED, lease_token),
                [(*row.observed(), code, by) for row, code, by in refusals],
            )
        refusal_end = len(statements)
        if refusals and events:
            statements += self._events(lease_token, now, events)
        event_end = len(statements)
        if rows:
            lease = (lease_token, now + lease_ms, now)
            seen = [row.observed() for row in rows]
            if cap is None:
                statements += self._values(CLAIM_SQL, CLAIM, (*lease, Status.RUNNING), seen)
            else:
                statements += self._values(
                    CLAIM_WITHIN_SQL, CLAIM_WITHIN, (*lease, Status.RUNNING, cap), seen
                )
        claim_end = len(statements)
        if rows:
            statements.append(self.db.prepare(OPEN_ATTEMPTS_SQL).bind(*lease))
        if not statements:
            return [], [], []
        results = await self._round_trip(statements)
        refused = [
            str(r["id"]) for result in results[busy_count:refusal_end] for r in result.results
        ]
        self.events_written += sum(len(r.results) for r in results[refusal_end:event_end])
        won = [
            Claim(observed[str(r["id"])], int(r["attempt_count"]))
            for result in results[event_end:claim_end]
            for r in result.results
        ]
        held: list[str] = []
        if cap is not None and rows:
            busy = {str(r["installation_id"]): int(r["busy"]) for r in results[0].results}
            held = _held_back(rows, won, busy, cap)
        return won, refused, held

    async def settle(
        self, lease_token: str, settled: Sequence[SettledClaim], now: int
    ) -> list[str]:
        """End claims made under `lease_token`; returns the schedules whose lease was lost.

        A settle applies only while the row is still running under this claim's
        lease token; once the lease expired another runner may have reclaimed it,
        and then nothing of the row changes. Sent claims finish their attempt
        row; unsent ones drop it and give the attempt back. Each installation sent to
        keeps the instant of its latest send (`installations.last_sent_at`). The claims'
        events are written in the same batch, for the settles that applied only.
        """
        if not settled:
            return []
        statements = self._values(
            SETTLE_SQL,
            SETTLE,
            (lease_token, now, Status.RUNNING),
            [
                (
                    s.claim.row.id,
                    s.settlement.status,
                    s.settlement.result_code,
                    s.settlement.next_attempt_at,
                    0 if s.attempt else 1,
                    s.settlement.ended_by,
                )
                for s in settled
            ],
        )
        settle_count = len(statements)
        events = [s.event for s in settled if s.event is not None]
        if events:
            statements += self._events(lease_token, now, events)
        event_end = len(statements)
        sent = [(s.claim.row.id, s.attempt) for s in settled if s.attempt]
        unsent = [(s.claim.row.id, s.claim.attempt) for s in settled if not s.attempt]
        if sent:
            statements += self._values(
                FINISH_ATTEMPTS_SQL,
                FINISH_ATTEMPTS,
                (),
                [
                    (sid, a.number, a.started_at, a.finished_at, a.code, a.http_status)
                    for sid, a in sent
                ],
            )
        if unsent:
            statements += self._values(DROP_ATTEMPTS_SQL, DROP_ATTEMPTS, (), unsent)
        last_sent: dict[str, int] = {}
        for s in settled:
            if s.attempt:
                installation = s.claim.row.installation_id
                last_sent[installation] = max(last_sent.get(installation, 0), s.attempt.started_at)
        if last_sent:
            statements += self._values(LAST_SENT_SQL, LAST_SENT, (), sorted(last_sent.items()))
        results = await self._round_trip(statements)
        applied = {str(r["id"]) for result in results[:settle_count] for r in result.results}
        self.events_written += sum(len(r.results) for r in results[settle_count:event_end])
        return [s.claim.row.id for s in settled if s.claim.row.id not in applied]

    def _events(self, lease_token: str, now: int, events: Sequence[OutboxEvent]) -> list[Statement]:
        return self._values(
            EVENTS_SQL, EVENTS, (lease_token, now), [event.values() for event in events]
        )

    async def claim_deliveries(
        self, lease_token: str, now: int, lease_ms: int, limit: int
    ) -> tuple[list[ClaimedDelivery], dict[str, DeliveryTarget]]:
        """Claim up to `limit` deliveries due at `now` (waiting ones whose time came, sending
        ones whose lease expired), oldest first, under `lease_token` until `now + lease_ms`;
        with the endpoints they go to, read in the same batch."""
        lease_until = now + lease_ms
        claimed, targets = await self._round_trip(
            [
                self.db.prepare(CLAIM_DELIVERIES_SQL).bind(lease_token, lease_until, now, limit),
                self.db.prepare(CLAIMED_ENDPOINTS_SQL).bind(lease_token, lease_until),
            ]
        )
        endpoints = (DeliveryTarget.from_row(row) for row in targets.results)
        return (
            sorted(
                (ClaimedDelivery.from_row(row) for row in claimed.results),
                key=lambda d: (d.created_at, d.id),
            ),
            {endpoint.id: endpoint for endpoint in endpoints},
        )

    async def settle_deliveries(
        self, lease_token: str, settled: Sequence[SettledDelivery], now: int
    ) -> list[str]:
        """End deliveries claimed under `lease_token`; returns those whose lease was lost (left
        as they are: another runner has them). In the same batch, each endpoint is marked:
        failing since its first failed attempt, not failing once delivered to, and disabled
        (with what it still had waiting) when it answered 410 Gone."""
        if not settled:
            return []
        statements = self._values(
            SETTLE_DELIVERIES_SQL, SETTLE_DELIVERIES, (lease_token,), [s.values() for s in settled]
        )
        settle_count = len(statements)
        delivered = {
            s.delivery.endpoint_id for s in settled if s.status == DeliveryStatus.DELIVERED
        }
        gone = {s.delivery.endpoint_id for s in settled if s.sent and s.error == ENDPOINT_GONE}
        failing = {s.delivery.endpoint_id for s in settled if s.sent and s.error} - delivered
        statements += self._ids(ENDPOINTS_DELIVERED_SQL, (), delivered)
        statements += self._ids(ENDPOINTS_FAILING_SQL, (now,), failing)
        statements += self._ids(ENDPOINTS_GONE_SQL, (now,), gone)
        statements += self._ids(GONE_WAITING_SQL, (now,), gone)
        results = await self._round_trip(statements)
        applied = {str(r["id"]) for result in results[:settle_count] for r in result.results}
        return [s.delivery.id for s in settled if s.delivery.id not in applied]

    def _ids(self, template: str, fixed: tuple[object, ...], ids: set[str]) -> list[Statement]:
        """`template` once per chunk of `ids` (its `{ids}` list), under the parameter limit."""
        ordered = sorted(ids)
        size = ENDPOINT_IDS.rows_per_statement()
        statements = []
        for start in range(0, len(ordered), size):
            chunk = ordered[start : start + size]
            first = len(fixed) + 1
            listed = ", ".join(f"?{first + i}" for i in range(len(chunk)))
            statements.append(self.db.prepare(template.format(ids=listed)).bind(*fixed, *chunk))
        return statements

    async def mark_dispatched(
        self, now: int, redispatch_before: int, limit: int
    ) -> list[DispatchedRow]:
        """Mark up to `limit` due rows as dispatched at `now` and return them, in the order
        `due` would take them. A row dispatched at `redispatch_before` or earlier and still
        unclaimed counts as not dispatched (its message was lost, or is still waiting). The
        same round trip says when the outbox next has a delivery due (`outbox_next_at`)."""
        statement = self.db.prepare(DISPATCH_SQL).bind(now, redispatch_before, limit)
        result, outbox = await self._round_trip([statement, self.db.prepare(OUTBOX_NEXT_SQL)])
        self.outbox_next_at = outbox.results[0]["next_at"] if outbox.results else None
        marked = [
            DispatchedRow(str(r["id"]), str(r["installation_id"]), int(r["ready_at"]))
            for r in result.results
        ]
        return round_robin(marked)

    async def unmark_dispatched(self, ids: Sequence[str], marked_at: int) -> None:
        """Take back the marks of a dispatch whose messages never left."""
        if ids:
            await self._round_trip(
                [self.db.prepare(UNMARK_SQL).bind(json.dumps(list(ids)), marked_at)]
            )

    async def record(self, build: Callable[[], Sequence[Statement]], statements: int) -> None:
        """One round trip carrying `statements` statements (the tick's record) that `build`
        makes once the trip is counted, so the record counts the trip that carries it."""
        self.statements += statements
        self.round_trips += 1
        made = build()
        assert len(made) == statements
        try:
            await self.db.batch(made)
        except LimitReached:
            self.statements -= statements
            self.round_trips -= 1
            raise

    def _due(self, now: int, limit: int) -> Statement:
        return self.db.prepare(DUE_SQL).bind(now, limit)

    def _values(
        self,
        template: str,
        shape: StatementShape,
        fixed: tuple[object, ...],
        rows: Sequence[tuple[object, ...]],
    ) -> list[Statement]:
        """`template` once per chunk of `rows`, each statement under D1's parameter limit."""
        width = shape.width
        assert len(fixed) == shape.fixed and all(len(row) == width for row in rows)
        statements = []
        for chunk in _chunks(rows, shape.rows_per_statement()):
            first = len(fixed) + 1
            values = ", ".join(
                "(" + ", ".join(f"?{first + i * width + j}" for j in range(width)) + ")"
                for i in range(len(chunk))
            )
            params = [value for row in chunk for value in row]
            statements.append(self.db.prepare(template.format(values=values)).bind(*fixed, *params))
        return statements

    async def _round_trip(self, statements: Sequence[Statement]) -> list[Result]:
        """One D1 batch. A batch the platform refused (`LimitReached`) ran nothing and is not
        counted."""
        self.statements += len(statements)
        self.round_trips += 1
        try:
            return await self.db.batch(statements)
        except LimitReached:
            self.statements -= len(statements)
            self.round_trips -= 1
            raise


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


def _chunks(
    rows: Sequence[tuple[object, ...]], size: int
) -> Iterator[Sequence[tuple[object, ...]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]

"""The schedules' leases: the lease contract, stated as the docstrings of its operations.

Work grows with batches, not rows: each operation is one D1 round trip of a few multi-row
statements (`UPDATE … FROM (VALUES …)`, `lease_sql.py`), and who won a claim or a settle is
read from `RETURNING`, never decoded from positions. A claim's refusals and a settle write
their events into the outbox in the same batch (`repository/outbox.py`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields

from scheduling.domain.claims import Claim, DueRow, SettledClaim, Unsent, Waiting
from scheduling.domain.deliveries import OutboxEvent
from scheduling.domain.release import ReleaseLine, unsent_status
from scheduling.domain.schedule import Command
from scheduling.domain.statuses import Status
from scheduling.limits import (
    CLAIM,
    CLAIM_WITHIN,
    DROP_ATTEMPTS,
    FINISH_ATTEMPTS,
    LAST_SENT,
    REFUSE_UNSENT,
    SETTLE,
)
from scheduling.ports import Result, Row, Statement
from scheduling.repository.lease_sql import (
    BUSY_SQL,
    CLAIM_SQL,
    CLAIM_WITHIN_SQL,
    DROP_ATTEMPTS_SQL,
    DUE_FOR_SQL,
    DUE_NEXT_SQL,
    DUE_SQL,
    FINISH_ATTEMPTS_SQL,
    LAST_SENT_SQL,
    REFUSE_UNSENT_SQL,
    SETTLE_SQL,
)
from scheduling.repository.outbox import Outbox
from scheduling.repository.round_trips import RoundTrips

_COMMAND_FIELDS = tuple(f.name for f in fields(Command))


def due_row(row: Row) -> DueRow:
    return DueRow(
        id=row["id"],
        installation_id=row["installation_id"],
        status=Status(row["status"]),
        attempt_count=row["attempt_count"],
        lease_token=row["lease_token"],
        base_url=row["base_url"],
        token_sealed=row["token_sealed"],
        command=Command(**{name: row[name] for name in _COMMAND_FIELDS}),
        result_code=row["result_code"],
        timezone=row["timezone"],
        local_time=row["local_time"],
        subscribed=frozenset((row["subscribed"] or "").split()),
        collides=Waiting(**json.loads(row["collides"])) if row["collides"] else None,
        made_stale_by=row["made_stale_by"],
        conflict=row["conflict"],
        release=_line(row["release"]),
    )


def _line(found: str | None) -> ReleaseLine | None:
    if not found:
        return None
    line = json.loads(found)
    applied, behind = tuple(line.pop("applied")), tuple(line.pop("behind"))
    return ReleaseLine(**line, applied=applied, behind=behind)


@dataclass(frozen=True)
class _ClaimAsk:
    """One claim round trip as asked: rows to claim (within `cap` live claims per installation,
    when given), and rows to refuse unsent with the events their refusals raise."""

    rows: Sequence[DueRow]
    refusals: Sequence[Unsent]
    lease_token: str
    now: int
    lease_ms: int
    cap: int | None
    events: Sequence[OutboxEvent]
    # Rows the cap held back told apart from those another runner took (one statement more).
    apart: bool = True


@dataclass
class _ClaimTrip:
    """One claim round trip's statements, and where each part's results start and end."""

    statements: list[Statement] = field(default_factory=list)
    marks: dict[str, int] = field(default_factory=dict)

    def mark(self, name: str) -> None:
        self.marks[name] = len(self.statements)

    def part(self, results: Sequence[Result], start: str, end: str) -> Sequence[Result]:
        return results[self.marks[start] : self.marks[end]]


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
        ask = _ClaimAsk(rows, refusals, lease_token, now, lease_ms, None, events)
        won, refused, _ = await self._claim(ask)
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
        *,
        apart: bool = True,
    ) -> tuple[list[Claim], list[str], list[str]]:
        """As `claim`, but no installation ends up with more than `cap` live claims (rows
        running under a lease that has not expired), whoever holds them: a claim is an
        installation's send slot, taken by compare-and-set, freed by the settle, and gone
        with the lease. Returns the claims won, the ids refused, and the ids the cap held
        back (still due, for a later claim). Without `apart`, every row not won counts as
        held back (those another runner took too), and the claim costs a statement less."""
        ask = _ClaimAsk(rows, refusals, lease_token, now, lease_ms, cap, events, apart)
        return await self._claim(ask)

    async def _claim(self, ask: _ClaimAsk) -> tuple[list[Claim], list[str], list[str]]:
        trip = self._claim_trip(ask)
        if not trip.statements:
            return [], [], []
        results = await self.trips.send(trip.statements)
        refused = [str(r["id"]) for x in trip.part(results, "busy", "refused") for r in x.results]
        self.outbox.written(trip.part(results, "refused", "events"))
        # Won in the order asked (the due query's round-robin), never `RETURNING`'s.
        attempts = {
            str(r["id"]): int(r["attempt_count"])
            for result in trip.part(results, "events", "claims")
            for r in result.results
        }
        until = ask.now + ask.lease_ms
        won = [Claim(row, attempts[row.id], until) for row in ask.rows if row.id in attempts]
        held: list[str] = []
        if ask.cap is not None and ask.rows and ask.apart:
            busy = {str(r["installation_id"]): int(r["busy"]) for r in results[0].results}
            held = _held_back(ask.rows, won, busy, ask.cap)
        elif ask.cap is not None:
            won_ids = {claim.row.id for claim in won}
            held = [row.id for row in ask.rows if row.id not in won_ids]
        return won, refused, held

    def _claim_trip(self, ask: _ClaimAsk) -> _ClaimTrip:
        """The busy count (with a cap), the refusals and their events, the claims, in that
        order."""
        rows, refusals, lease_token, now, cap = (
            ask.rows,
            ask.refusals,
            ask.lease_token,
            ask.now,
            ask.cap,
        )
        trip, values = _ClaimTrip(), self.trips.values
        if rows and cap is not None and ask.apart:
            installations = sorted({row.installation_id for row in rows})
            trip.statements.append(self.db.prepare(BUSY_SQL).bind(now, json.dumps(installations)))
        trip.mark("busy")
        if refusals:
            seen = [(*row.observed(), code, by, unsent_status(code)) for row, code, by in refusals]
            trip.statements += values(REFUSE_UNSENT_SQL, REFUSE_UNSENT, (now, lease_token), seen)
        trip.mark("refused")
        if refusals and ask.events:
            trip.statements += self.outbox.event_statements(lease_token, now, ask.events)
        trip.mark("events")
        lease = (lease_token, now + ask.lease_ms, now)
        if rows:
            seen = [row.observed() for row in rows]
            if cap is None:
                trip.statements += values(CLAIM_SQL, CLAIM, (*lease, Status.RUNNING), seen)
            else:
                capped = (*lease, Status.RUNNING, cap)
                trip.statements += values(CLAIM_WITHIN_SQL, CLAIM_WITHIN, capped, seen)
        trip.mark("claims")  # each claim opens its attempt's row (migration 0021's trigger)
        return trip

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
        ends = [
            (
                s.claim.row.id,
                s.settlement.status,
                s.settlement.result_code,
                s.settlement.next_attempt_at,
                0 if s.attempt else 1,
                s.settlement.ended_by,
            )
            for s in settled
        ]
        statements = values(SETTLE_SQL, SETTLE, (lease_token, now, Status.RUNNING), ends)
        settle_count = len(statements)
        events = [
            e for s in settled for e in (s.event, s.stale_event, s.release_event) if e is not None
        ]
        if events:
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
        if not latest:
            return []
        return self.trips.values(LAST_SENT_SQL, LAST_SENT, (), sorted(latest.items()))

    def _attempt_statements(self, settled: Sequence[SettledClaim]) -> list[Statement]:
        """Sent claims finish their attempt row, unsent ones drop it."""
        values = self.trips.values
        statements: list[Statement] = []
        sent = [
            (s.claim.row.id, a.number, a.started_at, a.finished_at, a.code, a.http_status)
            for s in settled
            if (a := s.attempt)
        ]
        unsent = [(s.claim.row.id, s.claim.attempt) for s in settled if not s.attempt]
        if sent:
            statements += values(FINISH_ATTEMPTS_SQL, FINISH_ATTEMPTS, (), sent)
        if unsent:
            statements += values(DROP_ATTEMPTS_SQL, DROP_ATTEMPTS, (), unsent)
        return statements


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

"""The engine's schedule sends: due rows from a source (a tick's, every due row; an alarm's,
its installation's), refused unsent or claimed under the batch's lease, each claim's command
sent to Dee Wan, and the batch settled with the events its ends raise for the endpoints that
hear of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from scheduling import dee_wan
from scheduling.domain.notifications import (
    REFUSED,
    RELEASE_HELD,
    STALE,
    ReleaseEvent,
    ScheduleEvent,
    event_type,
)
from scheduling.domain.outcomes import (
    REFUSED_LATE,
    RETRY_EXHAUSTED,
    Attempt,
    Caps,
    EndedBy,
    Settlement,
    Status,
    after_attempt,
    cap_reached,
    handed_back,
    too_late,
)
from scheduling.domain.records import Claim, DueRow, OutboxEvent, SettledClaim, Unsent
from scheduling.domain.schedules import (
    HOLD_CODES,
    completed_text,
    held_text,
    hold_code,
    needs_repin_said,
    release_event,
)
from scheduling.domain.secrets import TOKEN_UNREADABLE, open_token
from scheduling.domain.wording import explain_result, outcome_unknown
from scheduling.limits import LEASE_MARGIN_MS, REQUEST_TIMEOUT_MS, batch_cost
from scheduling.ports import LimitReached
from scheduling.repository.leases import Leases, latest_sends
from scheduling.runner.engine import Batch, Engine, OnEngine
from scheduling.services import Services, log

# -- the events a batch's settles raise ------------------------------------------------------------

# 22 base64url characters: 132 random bits.
_ID_CHARS = 22


class EventMaker:
    def __init__(self, services: Services) -> None:
        self.services = services

    def unsent(
        self,
        row: DueRow,
        code: str,
        at: int,
        *,
        ended_by: str | None = None,
    ) -> OutboxEvent | None:
        """A row refused without a send (caps, token unreadable, or too late for its slot):
        what the last real attempt said stands. A held one raises none of its own: its stale
        notice went out when the plugin learnt of it, and its release says the rest."""
        if REFUSED not in row.subscribed or code in HOLD_CODES:
            return None
        # Its last try, as the row tells it: a reclaimed row's never finished; a retrying
        # one's said the code the row keeps.
        finished = None if row.status == Status.RUNNING else at
        last = Attempt(row.attempt_count, at, finished, row.result_code, None)
        return self._event(
            row,
            REFUSED,
            at,
            status=Status.REFUSED,
            result_code=code,
            attempts=row.attempt_count,
            last=last if row.attempt_count else None,
            ended_by=ended_by,
        )

    def late(self, claim: Claim, at: int) -> OutboxEvent | None:
        """Claimed, but past the lateness cap when its slot came: the attempt is given back, so
        the row's count before the claim stands."""
        return self.unsent(claim.row, RETRY_EXHAUSTED, at, ended_by=EndedBy.LATENESS)

    def sent(self, claim: Claim, settlement: Settlement, attempt: Attempt) -> OutboxEvent | None:
        """A send answered: `attempt` is its try, finished."""
        kind = event_type(settlement.status)
        if kind is None or kind not in claim.row.subscribed:
            return None
        assert settlement.result_code is not None  # only a hand-back keeps the code it had
        assert attempt.finished_at is not None
        return self._event(
            claim.row,
            kind,
            attempt.finished_at,
            status=settlement.status,
            result_code=settlement.result_code,
            attempts=claim.attempt,
            last=attempt,
            next_attempt_at=settlement.next_attempt_at,
            ended_by=settlement.ended_by,
        )

    def stale(self, claim: Claim, settlement: Settlement, at: int) -> OutboxEvent | None:
        """A completion that puts the other kind's waiting schedule of its content out of date:
        that one's notice, now rather than at its time, to the endpoints that hear
        of refusals. Written only where the settle applied and the schedule was marked so."""
        row, other = claim.row, claim.row.collides
        if other is None or settlement.status != Status.COMPLETED or REFUSED not in row.subscribed:
            return None
        command = row.command
        event = ScheduleEvent(
            type=STALE,
            at=at,
            installation_id=row.installation_id,
            schedule_id=other.id,
            content_id=command.content_id,
            kind=other.kind,
            to_state=other.to_state,
            version_id=other.version_id,
            due_at=other.due_at,
            local_time=other.local_time,
            timezone=other.timezone,
            status=Status.PENDING,
            result_code=None,
            attempts=other.attempt_count,
            outcome_unknown=False,
            message=needs_repin_said(other.kind, at, other.timezone),
        )
        return self._written(event, other.id, raised_by=row.id)

    def released(
        self, row: DueRow, status: Status, code: str | None, at: int
    ) -> OutboxEvent | None:
        """Its release held (the item not done, the rest not sent) or completed by this end,
        to the endpoints that hear of it. Written only where the line's triggers did so."""
        line = row.release
        kind = release_event(status, line)
        if line is None or kind is None or kind not in row.subscribed:
            return None
        held = kind == RELEASE_HELD
        event = ReleaseEvent(
            type=kind,
            at=at,
            installation_id=row.installation_id,
            release_id=line.id,
            name=line.name,
            due_at=line.due_at,
            timezone=line.timezone,
            item_id=row.id,
            result_code=code if held else None,
            applied=line.applied if held else (*line.applied, row.id),
            held=line.behind if held else (),
            message=held_text(line, row.id, code, at) if held else completed_text(line, at),
        )
        return self._written(event, row.id)

    def _event(
        self,
        row: DueRow,
        kind: str,
        at: int,
        *,
        status: Status,
        result_code: str,
        attempts: int,
        last: Attempt | None,
        next_attempt_at: int | None = None,
        ended_by: str | None = None,
    ) -> OutboxEvent:
        command = row.command
        lateness_ms = self.services.config.max_lateness_ms
        said = explain_result(
            result_code, last, ended_by=ended_by, tries=attempts, lateness_ms=lateness_ms
        )
        event = ScheduleEvent(
            type=kind,
            at=at,
            installation_id=row.installation_id,
            schedule_id=row.id,
            content_id=command.content_id,
            kind=command.kind,
            to_state=command.to_state,
            version_id=command.version_id,
            due_at=command.due_at,
            local_time=row.local_time,
            timezone=row.timezone,
            status=status,
            result_code=result_code,
            attempts=attempts,
            outcome_unknown=outcome_unknown(last),
            message=said,
            next_attempt_at=next_attempt_at,
            ended_by=ended_by,
        )
        return self._written(event, row.id)

    def _written(
        self, event: ScheduleEvent | ReleaseEvent, schedule_id: str, raised_by: str | None = None
    ) -> OutboxEvent:
        """`event` as the outbox keeps it: a message id of its own, its body as sent."""
        message_id = "msg_" + self.services.crypto.random_token()[:_ID_CHARS]
        body = event.body(self.services.config.public_origin)
        return OutboxEvent(message_id, schedule_id, event.type, body, raised_by=raised_by)


# -- the work --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claimed:
    """What one claim round trip decided for a batch's rows."""

    won: list[Claim]
    refused: list[str]  # ended unsent before any claim (caps reached, token unreadable)
    held: list[str] = field(default_factory=list)  # left due by the per-installation cap


class RowSource(Protocol):
    """Where the sends' batches come from, and what it hears of them. `apart`: whether, under
    a cap, it needs the rows the cap held back told apart from those another runner took."""

    apart: bool

    async def next(self, now: int, limit: int, work: SendWork) -> list[DueRow] | None:
        """Up to `limit` rows to claim now; None ends the work, none asks again."""

    def claimed(self, rows: Sequence[DueRow], claimed: Claimed) -> None:
        """What the claim of `rows` decided."""
        return None

    def settled(self, claims: Sequence[SettledClaim]) -> None:
        """A batch's claims ended: settled, or left to their lease (D1 refused the settle)."""
        return None


class DueRows(RowSource):
    """A tick's source: every due row, round-robin across installations; with `lag_ms`, only
    those due that long (the clocks' watchdog leaves the rest to the clocks). While another
    installation has rows due, a batch takes at most a wave (SEND_CONCURRENCY) of one's rows,
    and none of one with sends waiting for its share of the slots (`engine.Slots`); when only
    such installations have rows due, it waits until one of them has none waiting."""

    apart = True

    def __init__(self, leases: Leases, *, lag_ms: int = 0) -> None:
        self.leases = leases
        self.lag_ms = lag_ms

    async def next(self, now: int, limit: int, work: SendWork) -> list[DueRow] | None:
        slots = work.engine.slots
        left_out = sorted(+slots.held_back)
        wave = work.services.config.send_concurrency
        rows = await self.leases.due(now - self.lag_ms, limit, left_out, wave)
        if rows or not (left_out and self.leases.due_now):
            return rows or None
        await slots.until_one_passes(left_out)
        return []


class SendWork(OnEngine):
    """Schedule sends from `source`, counted into the engine's report; every decision reads
    the engine's clock, and each installation's token is opened once per invocation.

    `cap` (an alarm's, the watchdog's) is MAX_IN_FLIGHT_PER_INSTALLATION enforced by the
    claim itself in D1, whoever holds the claims; a tick sending inline needs none: its
    SEND_CONCURRENCY slots bound it, and no other runner sends."""

    def __init__(
        self,
        engine: Engine,
        leases: Leases,
        source: RowSource,
        *,
        cap: int | None = None,
        last_sent_later: bool = False,
    ) -> None:
        config = engine.services.config
        self.engine = engine
        self.leases = leases
        self.source = source
        self.cap = cap
        # Each installation's latest send noted by the caller once it is done, not with each
        # batch's settle (`latest`: what it then notes).
        self.last_sent_later = last_sent_later
        self.latest: dict[str, int] = {}
        self.batch_size = config.max_rows_per_batch
        self.caps = Caps(
            max_attempts=config.max_attempts,
            max_lateness_ms=config.max_lateness_ms,
            max_retry_after_ms=config.max_retry_after_ms,
            lease_ms=config.lease_ms,
        )
        self.events = EventMaker(engine.services)
        self._tokens: dict[str, str | None] = {}
        self._leading = 0  # claims in flight whose settle makes their release's next item due
        self._only_lines = False  # the last read found nothing but releases' heads
        self._next_up: list[DueRow] = []  # releases' next items, read by their settle

    def cost(self) -> int:
        return batch_cost(self.batch_size, capped=self.cap is not None)

    def _next_rows(self) -> list[DueRow]:
        """Up to a batch of the releases' next items its settles read, but none of an
        installation whose sends wait for its share of the slots: the due query finds those
        once it has none waiting (`DueRows`)."""
        held_back = self.engine.slots.held_back
        ready = [row for row in self._next_up if not held_back[row.installation_id]]
        rows, self._next_up = ready[: self.batch_size], ready[self.batch_size :]
        return rows

    def follows(self) -> bool:
        """A release's item in flight: once it settles, the next one may be due at once."""
        return self._leading > 0

    async def claim(self, engine: Engine) -> Batch[Claim] | None:
        """The next rows, decided: None when there are none, or when another runner changed
        every row first (the rest is left to it); an empty batch when the source asks to be
        asked again."""
        # The next items a settle read in its own batch first; else the source, unless all it
        # had were releases' heads in flight (theirs come with a settle).
        rows = self._next_rows()
        if not rows:
            if self._only_lines and self._leading:
                return None
            found = await self.source.next(self.clock(), self.batch_size, self)
            if found == []:
                self._only_lines = False
                return Batch([], "")  # nothing to claim yet: asked again
            rows = found or []
        self._only_lines = len(rows) < self.batch_size and all(row.leads for row in rows)
        if not rows:
            return None
        self.report.batches += 1
        self.report.due += len(rows)
        lease_token = self.services.crypto.random_token()  # TOKEN_KEY read only when needed
        claimed = await self._claim(rows, lease_token)
        self._leading += sum(1 for won in claimed.won if won.row.leads)
        self.source.claimed(rows, claimed)
        if not claimed.won and not claimed.refused and not claimed.held:
            return None
        return Batch(claimed.won, lease_token)

    async def _claim(self, rows: Sequence[DueRow], lease_token: str) -> Claimed:
        """Decide each row before any send: hold it (known stale) or refuse it unsent, or
        claim it."""
        at = self.clock()
        refusals: list[Unsent] = []
        wanted: list[DueRow] = []
        for row in rows:
            hold = hold_code(row.status, row.made_stale_by, row.conflict)
            if hold is not None:
                refusals.append((row, hold, None))
                continue
            cap = cap_reached(
                attempts_so_far=row.attempt_count, due_at=row.due_at, now=at, caps=self.caps
            )
            if cap is not None:
                refusals.append((row, RETRY_EXHAUSTED, cap))
            elif await self._token(row) is None:
                refusals.append((row, TOKEN_UNREADABLE, None))
            else:
                wanted.append(row)
        made = (
            event
            for row, code, by in refusals
            for event in (
                self.events.unsent(row, code, at, ended_by=by),
                self.events.released(row, Status.REFUSED, code, at),  # its release is held
            )
        )
        events = [event for event in made if event is not None]
        won, refused, held = await self.leases.claim_within(
            wanted, refusals, lease_token, at, self.caps.lease_ms, self.cap, events,
            apart=self.cap is None or self.source.apart,
        )  # fmt: skip
        self.report.refused_unsent += len(refused)
        codes = {row.id: code for row, code, _ in refusals}
        for schedule_id in refused:
            self.report.refused_with(codes[schedule_id])
        self.report.claimed += len(won)
        self.report.held_back += len(held)
        self.report.lost_claim += len(wanted) - len(won) - len(held)
        return Claimed(won, refused, held)

    async def unslotted(self, item: Claim) -> SettledClaim | None:
        return None  # every claim has a command to send

    def share_of(self, item: Claim) -> str:
        return item.row.installation_id

    def ready(self, item: Claim, at: int) -> SettledClaim | None:
        """The last checks, once it holds its slot: past the lateness cap, nothing is sent;
        with too little of its lease left for an answer and the settle, it is handed back
        unsent (so no other runner can claim it while it is in flight)."""
        if too_late(due_at=item.row.due_at, now=at, caps=self.caps):
            self.report.refused_unsent_late += 1
            released = self.events.released(item.row, Status.REFUSED, RETRY_EXHAUSTED, at)
            late = self.events.late(item, at)
            return SettledClaim(item, REFUSED_LATE, None, late, release_event=released)
        if at + REQUEST_TIMEOUT_MS + LEASE_MARGIN_MS > item.lease_until:
            return self.handed_back(item, at)
        return None

    def handed_back(self, item: Claim, at: int) -> SettledClaim:
        self.report.handed_back += 1
        return SettledClaim(item, handed_back(item.row.status, at), None)

    async def send(self, item: Claim, at: int) -> SettledClaim:
        """The command, and the schedule's next step planned from the answer."""
        row = item.row
        token = self._tokens[row.installation_id]
        assert token is not None  # claimed only when it opened
        self.report.sent(at - row.due_at)
        try:
            outcome = await dee_wan.send_transition(
                self.services.http, row.base_url, row.command, token, self.clock
            )
        except LimitReached:
            self.report.withdrawn(at - row.due_at)
            raise
        finished = self.clock()
        settlement = after_attempt(
            outcome,
            attempt=item.attempt,
            due_at=row.due_at,
            now=finished,
            caps=self.caps,
            rng=self.services.rng,
        )
        self.report.ended(settlement.status)
        attempt = Attempt(item.attempt, at, finished, outcome.code, outcome.http_status)
        event = self.events.sent(item, settlement, attempt)
        stale = self.events.stale(item, settlement, finished)
        code = settlement.result_code
        released = self.events.released(row, settlement.status, code, finished)
        return SettledClaim(item, settlement, attempt, event, stale, released)

    async def settle(self, batch: Batch[Claim], done: list[SettledClaim]) -> None:
        """Every claim under the batch's lease, in one round trip; a release's next item is
        due once it is written (its line's triggers)."""
        try:
            await self._settle(batch, done)
        finally:
            self._leading -= sum(1 for end in done if end.claim.row.leads)

    async def _settle(self, batch: Batch[Claim], done: list[SettledClaim]) -> None:
        # A batch of releases' items (one after another, a statement saved each) notes its
        # installation's latest send once the run is done, as an alarm's batches do.
        later = self.last_sent_later or all(end.claim.row.release for end in done)
        follow = [
            end.claim.row.release.id
            for end in done
            if end.claim.row.release
            and end.claim.row.leads
            and end.settlement.status == Status.COMPLETED
        ]
        try:
            lost = await self.leases.settle(
                batch.lease_token, done, self.clock(), last_sent=not later, follow=follow
            )
            self._next_up += self.leases.next_up
        except LimitReached as limit:
            self.engine.reached(limit)
            self.report.unsettled += len(done)
            log.warning(
                "%d claims could not be settled (D1 refused): their lease runs out and they are"
                " claimed again, with the same idempotency key",
                len(done),
            )
            self.source.settled(done)
            return
        self.report.lost_lease += len(lost)
        if later:
            for installation, at in latest_sends(done).items():
                self.latest[installation] = max(self.latest.get(installation, 0), at)
        kept = {end.claim.row.id for end in done} - set(lost)
        for end in done:
            code = end.settlement.result_code
            if end.settlement.status == Status.REFUSED and end.claim.row.id in kept and code:
                self.report.refused_with(code)
        for schedule_id in lost:
            log.warning(
                "schedule %s: lease lost before settle; left to its new runner", schedule_id
            )
        self.source.settled(done)

    async def _token(self, row: DueRow) -> str | None:
        """The installation's token, opened once; None when TOKEN_KEY cannot open it."""
        if row.installation_id not in self._tokens:
            self._tokens[row.installation_id] = await open_token(
                self.services.crypto, row.installation_id, row.token_sealed
            )
        return self._tokens[row.installation_id]

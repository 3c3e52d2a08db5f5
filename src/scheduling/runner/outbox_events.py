"""The events a batch's settles raise, built before the settle so they travel in its batch.

Only for installations whose endpoints hear of that event (`DueRow.subscribed`,
read with the due rows); the outbox insert itself keeps them only where the
settle applied, once per subscribed endpoint.
"""

from __future__ import annotations

from scheduling.domain.claims import Claim, DueRow
from scheduling.domain.collisions import needs_repin_said
from scheduling.domain.deliveries import OutboxEvent
from scheduling.domain.notification_events import (
    REFUSED,
    RELEASE_HELD,
    STALE,
    ReleaseEvent,
    ScheduleEvent,
    event_type,
)
from scheduling.domain.outcomes import RETRY_EXHAUSTED, EndedBy
from scheduling.domain.release import HOLD_CODES, completed_text, held_text, release_event
from scheduling.domain.retry_policy import Settlement
from scheduling.domain.schedule import Attempt
from scheduling.domain.statuses import Status
from scheduling.domain.wording import explain_result, outcome_unknown
from scheduling.services import Services

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
        attempts: int | None = None,
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
            attempts=row.attempt_count if attempts is None else attempts,
            last=last if row.attempt_count else None,
            ended_by=ended_by,
        )

    def late(self, claim: Claim, at: int) -> OutboxEvent | None:
        """Claimed, but past the lateness cap when its slot came: the attempt is given back."""
        return self.unsent(
            claim.row, RETRY_EXHAUSTED, at, attempts=claim.attempt - 1, ended_by=EndedBy.LATENESS
        )

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
        """A completion that puts the other kind's waiting schedule of its content out of date
        (issue 38): that one's notice, now rather than at its time, to the endpoints that hear
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
        return self._written(event, raised_by=row.id)

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
        message_id = "msg_" + self.services.crypto.random_token()[:_ID_CHARS]
        body = event.body(self.services.config.public_origin)
        return OutboxEvent(message_id, row.id, kind, body)

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
        return self._written(event)

    def _written(self, event: ScheduleEvent, raised_by: str | None = None) -> OutboxEvent:
        """`event` as the outbox keeps it: a message id of its own, its body as sent."""
        message_id = "msg_" + self.services.crypto.random_token()[:_ID_CHARS]
        body = event.body(self.services.config.public_origin)
        return OutboxEvent(message_id, event.schedule_id, event.type, body, raised_by=raised_by)

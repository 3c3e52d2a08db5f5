"""What agents propose: kept until a person confirms or declines it, the agent withdraws it,
or its time passes (a pending proposal whose `due_at` is past reads as expired)."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.ports import Database, Row

PENDING = "pending"
CONFIRMED = "confirmed"
DECLINED = "declined"
WITHDRAWN = "withdrawn"
EXPIRED = "expired"  # read, never stored: pending past its time


@dataclass(frozen=True)
class Proposal:
    """An agent's proposal, as stored."""

    id: str
    installation_id: str
    key_id: str
    key_name: str
    person_name: str  # whom the key acts for
    content_id: str
    kind: str
    to_state: str | None
    local_time: str
    timezone: str
    fold: str | None
    due_at: int
    note: str
    status: str
    schedule_id: str | None
    decided_by_name: str | None
    created_at: int
    release_id: str | None = None  # join this waiting release (its time)
    changes: str | None = None  # … or this waiting schedule, `changes_as` moved or sent_now
    changes_as: str | None = None

    def status_at(self, now: int) -> str:
        return EXPIRED if self.status == PENDING and self.due_at <= now else self.status


_COLUMNS = (
    "id, installation_id, key_id, key_name, person_name, content_id, kind, to_state,"
    " local_time, timezone, fold, due_at, note, status, schedule_id, decided_by_name, created_at,"
    " release_id, changes, changes_as"
)


def _proposal(row: Row) -> Proposal:
    return Proposal(**{name: row[name] for name in _COLUMNS.replace(" ", "").split(",")})


# The event of a new proposal, one delivery per enabled endpoint that hears of it (`?1` the
# proposal's id, also the delivery's `schedule_id`: what it is about). A digest kind's row
# waits for the minute its next message may leave, as a settle's events do.
_EVENTS = """INSERT INTO webhook_deliveries (id, endpoint_id, installation_id, schedule_id,
    event_type, payload, created_at, status, attempt_count, next_attempt_at)
SELECT ?1 || '_' || e.id, e.id, e.installation_id, ?1, 'proposal.created', ?3, ?4, 'waiting', 0,
       max(?4, coalesce(e.next_message_at, 0))
  FROM notification_endpoints e
  JOIN notification_subscriptions sub
    ON sub.endpoint_id = e.id AND sub.event_type = 'proposal.created'
 WHERE e.installation_id = ?2 AND e.disabled_at IS NULL"""


async def insert(db: Database, proposal: Proposal, event_body: bytes) -> None:
    """The proposal, and its `proposal.created` event for the endpoints that hear of it, in
    one batch."""
    names = _COLUMNS.replace(" ", "").split(",")
    await db.batch(
        [
            db.prepare(
                f"INSERT INTO proposals ({_COLUMNS}) VALUES ({', '.join('?' * len(names))})"
            ).bind(*(getattr(proposal, name) for name in names)),
            db.prepare(_EVENTS).bind(
                proposal.id,
                proposal.installation_id,
                event_body.decode("utf-8"),
                proposal.created_at,
            ),
        ]
    )


async def get(db: Database, installation_id: str, proposal_id: str) -> Proposal | None:
    row = await (
        db.prepare(f"SELECT {_COLUMNS} FROM proposals WHERE installation_id = ? AND id = ?")
        .bind(installation_id, proposal_id)
        .first()
    )
    return None if row is None else _proposal(row)


async def pending(
    db: Database, installation_id: str, content_id: str | None, now: int, limit: int = 20
) -> list[Proposal]:
    """The pending proposals still ahead of their time, soonest first: of one content, or of
    the whole installation."""
    scope = "" if content_id is None else " AND content_id = ?3"
    rows = await (
        db.prepare(
            f"SELECT {_COLUMNS} FROM proposals WHERE installation_id = ?1 AND status = 'pending'"
            f" AND due_at > ?2{scope} ORDER BY due_at LIMIT {int(limit)}"
        )
        .bind(*(installation_id, now, *(() if content_id is None else (content_id,))))
        .all()
    )
    return [_proposal(row) for row in rows.results]


@dataclass(frozen=True)
class Made:
    """What an installation's agents have made: proposals waiting now, and proposals made
    since a moment (any status), all of them and those made with one person's keys."""

    pending: int
    since: int
    since_by_person: int


MADE_SQL = """SELECT
  (SELECT count(*) FROM proposals INDEXED BY proposals_pending
    WHERE installation_id = ?1 AND status = 'pending' AND due_at > ?2) AS pending,
  (SELECT count(*) FROM proposals WHERE installation_id = ?1 AND created_at > ?3) AS since,
  (SELECT count(*) FROM proposals WHERE installation_id = ?1 AND created_at > ?3
      AND key_id IN (SELECT id FROM agent_keys WHERE installation_id = ?1 AND person_id = ?4)
  ) AS since_by_person"""


async def made(db: Database, installation_id: str, person_id: str, now: int, since: int) -> Made:
    [row] = (await db.prepare(MADE_SQL).bind(installation_id, now, since, person_id).all()).results
    return Made(row["pending"], row["since"], row["since_by_person"])


async def of_schedule(db: Database, installation_id: str, schedule_id: str) -> Proposal | None:
    row = await (
        db.prepare(
            f"SELECT {_COLUMNS} FROM proposals WHERE installation_id = ? AND schedule_id = ?"
        )
        .bind(installation_id, schedule_id)
        .first()
    )
    return None if row is None else _proposal(row)


async def decide(
    db: Database,
    installation_id: str,
    proposal_id: str,
    status: str,
    now: int,
    *,
    by_name: str | None = None,
    schedule_id: str | None = None,
    key_id: str | None = None,
) -> bool:
    """End a pending proposal still ahead of its time (only the key's own, with `key_id`);
    False when it was not pending any more."""
    mine = "" if key_id is None else " AND key_id = ?7"
    result = await (
        db.prepare(
            "UPDATE proposals SET status = ?1, decided_at = ?2, decided_by_name = ?3,"
            " schedule_id = ?4 WHERE installation_id = ?5 AND id = ?6 AND status = 'pending'"
            f" AND due_at > ?2{mine}"
        )
        .bind(
            status,
            now,
            by_name,
            schedule_id,
            installation_id,
            proposal_id,
            *(() if key_id is None else (key_id,)),
        )
        .run()
    )
    return result.meta.changes == 1

"""What agents do: proposals (kept until a person confirms or declines, the agent withdraws,
or the time passes), the schedules a key reaches (never a title), and agent calls counted by
tool and outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from scheduling.domain.outcomes import NOT_DONE, Status, sql_list
from scheduling.domain.schedules import Schedule
from scheduling.ports import Database, Row
from scheduling.repository.schedules import ATTEMPT_COLUMNS, SCHEDULE_COLUMNS, SETTLED_SQL
from scheduling.repository.schedules import _with_attempts as with_attempts

# -- proposals -------------------------------------------------------------------------------------

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


_NAMES = [field.name for field in fields(Proposal)]
_PROPOSAL_COLUMNS = ", ".join(_NAMES)


def _proposal(row: Row) -> Proposal:
    return Proposal(**{name: row[name] for name in _NAMES})


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


async def insert_proposal(db: Database, proposal: Proposal, event_body: bytes) -> None:
    """The proposal, and its `proposal.created` event for the endpoints that hear of it, in
    one batch."""
    await db.batch(
        [
            db.prepare(
                f"INSERT INTO proposals ({_PROPOSAL_COLUMNS}) VALUES ({', '.join('?' * len(_NAMES))})"
            ).bind(*(getattr(proposal, name) for name in _NAMES)),
            db.prepare(_EVENTS).bind(
                proposal.id,
                proposal.installation_id,
                event_body.decode("utf-8"),
                proposal.created_at,
            ),
        ]
    )


async def get(db: Database, installation_id: str, proposal_id: str) -> Proposal | None:
    return await _one_by(db, installation_id, "id", proposal_id)


async def of_schedule(db: Database, installation_id: str, schedule_id: str) -> Proposal | None:
    return await _one_by(db, installation_id, "schedule_id", schedule_id)


async def _one_by(db: Database, installation_id: str, column: str, value: str) -> Proposal | None:
    row = await (
        db.prepare(
            f"SELECT {_PROPOSAL_COLUMNS} FROM proposals WHERE installation_id = ? AND {column} = ?"
        )
        .bind(installation_id, value)
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
            f"SELECT {_PROPOSAL_COLUMNS} FROM proposals WHERE installation_id = ?1 AND status = 'pending'"
            f" AND due_at > ?2{scope} ORDER BY due_at LIMIT {int(limit)}"
        )
        .bind(*(installation_id, now, *(() if content_id is None else (content_id,))))
        .all()
    )
    return [_proposal(row) for row in rows.results]


MADE_SQL = """SELECT
  (SELECT count(*) FROM proposals INDEXED BY proposals_pending
    WHERE installation_id = ?1 AND status = 'pending' AND due_at > ?2) AS pending,
  (SELECT count(*) FROM proposals WHERE installation_id = ?1 AND created_at > ?3) AS since,
  (SELECT count(*) FROM proposals WHERE installation_id = ?1 AND created_at > ?3
      AND key_id IN (SELECT id FROM agent_keys WHERE installation_id = ?1 AND person_id = ?4)
  ) AS since_by_person"""


async def made(
    db: Database, installation_id: str, person_id: str, now: int, since: int
) -> tuple[int, int, int]:
    """What an installation's agents have made: proposals waiting now, and proposals made
    since a moment (any status), all of them and those made with one person's keys."""
    [row] = (await db.prepare(MADE_SQL).bind(installation_id, now, since, person_id).all()).results
    return row["pending"], row["since"], row["since_by_person"]


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
    result = await (
        db.prepare(
            "UPDATE proposals SET status = ?1, decided_at = ?2, decided_by_name = ?3,"
            " schedule_id = ?4 WHERE installation_id = ?5 AND id = ?6 AND status = 'pending'"
            " AND due_at > ?2 AND (?7 IS NULL OR key_id = ?7)"
        )
        .bind(status, now, by_name, schedule_id, installation_id, proposal_id, key_id)
        .run()
    )
    return result.meta.changes == 1


# -- agent calls -----------------------------------------------------------------------------------

OUTCOMES = ("ok", "refused", "invalid")


async def count_agent_call(db: Database, tool: str, outcome: str) -> None:
    await (
        db.prepare(
            "INSERT INTO agent_calls (tool, outcome, calls) VALUES (?, ?, 1)"
            " ON CONFLICT (tool, outcome) DO UPDATE SET calls = calls + 1"
        )
        .bind(tool, outcome)
        .run()
    )


async def totals(db: Database) -> dict[tuple[str, str], int]:
    rows = await db.prepare("SELECT tool, outcome, calls FROM agent_calls").all()
    return {(str(r["tool"]), str(r["outcome"])): int(r["calls"]) for r in rows.results}


# -- what a key reads ------------------------------------------------------------------------------

LIMIT = 50


@dataclass(frozen=True)
class Filters:
    content_id: str | None = None  # the key's own content, or one asked for
    status: str | None = None
    due_from: int | None = None
    due_to: int | None = None
    needs_attention: bool = False


async def listing(
    db: Database, installation_id: str, filters: Filters, limit: int = LIMIT
) -> tuple[list[Schedule], bool]:
    """Up to `limit` schedules, soonest due first, and whether there were more."""
    where: list[str] = []
    values: list[object] = []
    checks: list[tuple[object, str]] = [
        (filters.content_id, "content_id = ?"),
        (filters.status, "status = ?"),
        (filters.due_from, "due_at >= ?"),
        (filters.due_to, "due_at < ?"),
    ]
    for value, sql in checks:
        if value is not None:
            where.append(sql)
            values.append(value)
    if filters.needs_attention:
        where.append(
            f"(status = '{Status.RETRYING}' OR (status IN {sql_list(NOT_DONE)}"
            f" AND NOT {SETTLED_SQL}))"
        )
    found = await _with_attempts(db, installation_id, where, values, limit + 1)
    return found[:limit], len(found) > limit


async def one(db: Database, installation_id: str, schedule_id: str) -> Schedule | None:
    found = await _with_attempts(db, installation_id, ["id = ?"], [schedule_id], 1)
    return found[0] if found else None


async def _with_attempts(
    db: Database, installation_id: str, where: list[str], values: list[object], limit: int
) -> list[Schedule]:
    """The installation's schedules matching `where`, soonest due first, with their attempts."""
    chosen = (
        f"FROM schedules WHERE {' AND '.join(['installation_id = ?', *where])}"
        f" ORDER BY due_at, id LIMIT {limit}"
    )
    bound = [installation_id, *values]
    listed, attempts = await db.batch(
        [
            db.prepare(f"SELECT {SCHEDULE_COLUMNS} {chosen}").bind(*bound),
            db.prepare(
                f"SELECT {ATTEMPT_COLUMNS} FROM schedule_attempts"
                f" WHERE schedule_id IN (SELECT id {chosen}) ORDER BY attempt"
            ).bind(*bound),
        ]
    )
    return with_attempts(listed.results, attempts.results)

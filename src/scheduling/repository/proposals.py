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

    def status_at(self, now: int) -> str:
        return EXPIRED if self.status == PENDING and self.due_at <= now else self.status


_COLUMNS = (
    "id, installation_id, key_id, key_name, person_name, content_id, kind, to_state,"
    " local_time, timezone, fold, due_at, note, status, schedule_id, decided_by_name, created_at"
)


def _proposal(row: Row) -> Proposal:
    return Proposal(**{name: row[name] for name in _COLUMNS.replace(" ", "").split(",")})


async def insert(db: Database, proposal: Proposal) -> None:
    names = _COLUMNS.replace(" ", "").split(",")
    await (
        db.prepare(f"INSERT INTO proposals ({_COLUMNS}) VALUES ({', '.join('?' * len(names))})")
        .bind(*(getattr(proposal, name) for name in names))
        .run()
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


async def of_key(
    db: Database, installation_id: str, key_id: str, limit: int = 50
) -> list[Proposal]:
    rows = await (
        db.prepare(
            f"SELECT {_COLUMNS} FROM proposals WHERE installation_id = ? AND key_id = ?"
            f" ORDER BY created_at DESC LIMIT {int(limit)}"
        )
        .bind(installation_id, key_id)
        .all()
    )
    return [_proposal(row) for row in rows.results]


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

"""Management-page sessions. The cookie value is never stored, only its SHA-256 hash."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.ports import Database, Row


@dataclass(frozen=True)
class Session:
    id_hash: str
    installation_id: str
    csrf_token: str
    person_id: str
    person_name: str
    context_kind: str  # content | manage
    content_id: str | None
    content_primary_id: str | None
    delegation_sealed: str
    expires_at: int

    @classmethod
    def from_row(cls, row: Row) -> Session:
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})


async def create(
    db: Database,
    *,
    id_hash: str,
    installation_id: str,
    csrf_token: str,
    person_id: str,
    person_name: str,
    context_kind: str,
    content_id: str | None,
    delegation_sealed: str,
    delegation_expires_at: int,
    now: int,
    expires_at: int,
) -> None:
    """Insert the session; expired sessions go in the same batch, so delegations do not linger."""
    await db.batch(
        [
            db.prepare("DELETE FROM sessions WHERE expires_at <= ?").bind(now),
            db.prepare(
                "INSERT INTO sessions (id_hash, installation_id, csrf_token, person_id, person_name,"
                " context_kind, content_id, delegation_sealed, delegation_expires_at, created_at,"
                " expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            ).bind(
                id_hash,
                installation_id,
                csrf_token,
                person_id,
                person_name,
                context_kind,
                content_id,
                delegation_sealed,
                delegation_expires_at,
                now,
                expires_at,
            ),
        ]
    )


async def find_live(db: Database, id_hash: str, now: int) -> Session | None:
    row = (
        await db.prepare(
            "SELECT id_hash, installation_id, csrf_token, person_id, person_name, context_kind,"
            " content_id, content_primary_id, delegation_sealed, expires_at"
            " FROM sessions WHERE id_hash = ? AND expires_at > ?"
        )
        .bind(id_hash, now)
        .first()
    )
    return Session.from_row(row) if row else None


async def remember_primary(db: Database, id_hash: str, primary_id: str) -> None:
    await (
        db.prepare(
            "UPDATE sessions SET content_primary_id = ? WHERE id_hash = ? AND content_primary_id IS NULL"
        )
        .bind(primary_id, id_hash)
        .run()
    )

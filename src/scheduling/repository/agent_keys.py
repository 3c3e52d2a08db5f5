"""Agent keys: minted by a person, kept as their hash, listed with their last use, revoked."""

from __future__ import annotations

import json
from dataclasses import dataclass

from scheduling.domain.rights import Change, Rights
from scheduling.ports import Database, Row, Statement
from scheduling.repository.installations import GONE_SQL

# A manage launch's key: every change, as a manage session may cancel any schedule.
EVERY_CHANGE = "*"


@dataclass(frozen=True)
class AgentKey:
    """An agent key as the pages and tools read it: whose, for what, until when (never its secret)."""

    id: str
    installation_id: str
    name: str
    person_id: str
    person_name: str
    content_id: str | None  # None: the whole installation
    offered: frozenset[Change] | None  # None: every change (a manage launch's key)
    created_at: int
    expires_at: int
    revoked_at: int | None
    last_used_at: int | None

    @property
    def rights(self) -> Rights:
        if self.offered is None:
            return Rights.everything()
        return Rights.of_content(self.content_id, self.offered)

    def reaches(self, content_id: str) -> bool:
        return self.content_id is None or self.content_id == content_id


_COLUMNS = (
    "id, installation_id, name, person_id, person_name, content_id, offered_transitions,"
    " created_at, expires_at, revoked_at, last_used_at"
)


def _key(row: Row) -> AgentKey:
    offered = row["offered_transitions"]
    return AgentKey(
        id=row["id"],
        installation_id=row["installation_id"],
        name=row["name"],
        person_id=row["person_id"],
        person_name=row["person_name"],
        content_id=row["content_id"],
        offered=None
        if offered == EVERY_CHANGE
        else frozenset((str(k), str(t)) for k, t in json.loads(offered)),
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        revoked_at=row["revoked_at"],
        last_used_at=row["last_used_at"],
    )


# An ended key (expired or revoked) is kept this long, then goes with the next mint in its
# installation: the manage view no longer lists it, nothing reads it.
ENDED_KEPT_MS = 30 * 24 * 60 * 60 * 1000
_PRUNE = (
    "DELETE FROM agent_keys WHERE installation_id = ?1"
    " AND (expires_at < ?2 OR coalesce(revoked_at, ?2) < ?2)"
)


async def insert(db: Database, key: AgentKey, key_hash: str) -> None:
    """The new key, and the installation's keys ended over `ENDED_KEPT_MS` ago gone, in one
    batch."""
    offered = EVERY_CHANGE if key.offered is None else json.dumps(sorted(map(list, key.offered)))
    ended_before = key.created_at - ENDED_KEPT_MS
    await db.batch(
        [
            db.prepare(_PRUNE).bind(key.installation_id, ended_before),
            _insert(db, key, key_hash, offered),
        ]
    )


def _insert(db: Database, key: AgentKey, key_hash: str, offered: str) -> Statement:
    return db.prepare(
        f"INSERT INTO agent_keys ({_COLUMNS}, key_hash)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?)"
    ).bind(
        key.id,
        key.installation_id,
        key.name,
        key.person_id,
        key.person_name,
        key.content_id,
        offered,
        key.created_at,
        key.expires_at,
        key_hash,
    )


async def find_live(db: Database, key_hash: str, now: int) -> AgentKey | None:
    """The key with this hash, unless it expired or was revoked or its installation was
    uninstalled; its use noted (at most once a minute, so reads stay reads)."""
    columns = ", ".join(f"k.{name}" for name in _COLUMNS.split(", "))
    row = await (
        db.prepare(
            f"SELECT {columns} FROM agent_keys k JOIN installations i ON i.id = k.installation_id"
            f" WHERE k.key_hash = ? AND k.revoked_at IS NULL AND k.expires_at > ?"
            f" AND NOT ({GONE_SQL})"  # as its sessions end, while Dee Wan refuses it
        )
        .bind(key_hash, now)
        .first()
    )
    if row is None:
        return None
    key = _key(row)
    if key.last_used_at is None or key.last_used_at < now - 60_000:
        await (
            db.prepare("UPDATE agent_keys SET last_used_at = ? WHERE id = ?")
            .bind(now, key.id)
            .run()
        )
    return key


async def list_for(db: Database, installation_id: str, now: int) -> list[AgentKey]:
    """An installation's keys still usable, newest first."""
    rows = await (
        db.prepare(
            f"SELECT {_COLUMNS} FROM agent_keys WHERE installation_id = ? AND revoked_at IS NULL"
            " AND expires_at > ? ORDER BY created_at DESC LIMIT 100"
        )
        .bind(installation_id, now)
        .all()
    )
    return [_key(row) for row in rows.results]


async def revoke(db: Database, installation_id: str, key_id: str, now: int) -> bool:
    result = await (
        db.prepare(
            "UPDATE agent_keys SET revoked_at = ? WHERE installation_id = ? AND id = ?"
            " AND revoked_at IS NULL"
        )
        .bind(now, installation_id, key_id)
        .run()
    )
    return result.meta.changes == 1

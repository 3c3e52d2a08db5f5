"""Agent keys: minted by a person, kept as their hash, listed with their last use, revoked,
and usable only while Dee Wan has confirmed their person's rights within a day."""

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
    expires_at: int  # when it ends, or ended: revoked keys end when revoked
    revoked_at: int | None
    last_used_at: int | None
    checked_at: int  # when Dee Wan last confirmed its person's rights (`CHECKED_FOR_MS`)

    @property
    def rights(self) -> Rights:
        if self.offered is None:
            return Rights.everything()
        return Rights.of_content(self.content_id, self.offered)

    def reaches(self, content_id: str) -> bool:
        return self.content_id is None or self.content_id == content_id


_COLUMNS = (
    "id, installation_id, name, person_id, person_name, content_id, offered_transitions,"
    " created_at, expires_at, revoked_at, last_used_at, checked_at"
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
        checked_at=row["checked_at"],
    )


# A key whose person's rights Dee Wan has not confirmed for this long is not usable: keys
# carry no delegation, so only their person opening Scheduling again can renew them (`renew`).
CHECKED_FOR_MS = 24 * 60 * 60 * 1000
# An ended key (expired or revoked), and an ended proposal, is kept this long, then the
# retention purge takes it: nothing reads it by then (what a person's agents made in the last
# day is counted through their keys).
ENDED_KEPT_MS = 30 * 24 * 60 * 60 * 1000


def _offered_text(offered: frozenset[Change] | None) -> str:
    return EVERY_CHANGE if offered is None else json.dumps(sorted(map(list, offered)))


async def insert(db: Database, key: AgentKey, key_hash: str) -> None:
    await (
        db.prepare(
            f"INSERT INTO agent_keys ({_COLUMNS}, key_hash)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?)"
        )
        .bind(
            key.id,
            key.installation_id,
            key.name,
            key.person_id,
            key.person_name,
            key.content_id,
            _offered_text(key.offered),
            key.created_at,
            key.expires_at,
            key.checked_at,
            key_hash,
        )
        .run()
    )


def renew(
    db: Database,
    installation_id: str,
    person_id: str,
    now: int,
    content_id: str | None = None,
    offered: frozenset[Change] | None = None,
) -> Statement:
    """Dee Wan has just confirmed the person's rights where their keys were minted: a manage
    launch renews their manage keys; a read of a content (`content_id`, its primary id)
    renews their keys of it, with the changes it offered them now."""
    if content_id is None:
        return db.prepare(
            "UPDATE agent_keys SET checked_at = ?3 WHERE installation_id = ?1 AND person_id = ?2"
            " AND content_id IS NULL AND expires_at > ?3"
        ).bind(installation_id, person_id, now)
    return db.prepare(
        "UPDATE agent_keys SET checked_at = ?3, offered_transitions = ?5 WHERE installation_id = ?1"
        " AND person_id = ?2 AND content_id = ?4 AND expires_at > ?3"
    ).bind(installation_id, person_id, now, content_id, _offered_text(offered or frozenset()))


async def find_live(db: Database, key_hash: str, now: int) -> AgentKey | None:
    """The key with this hash, unless it ended (expired or revoked), its person's rights were
    not confirmed within `CHECKED_FOR_MS`, or its installation was uninstalled; its use noted
    (at most once a minute, so reads stay reads)."""
    columns = ", ".join(f"k.{name}" for name in _COLUMNS.split(", "))
    row = await (
        db.prepare(
            f"SELECT {columns} FROM agent_keys k JOIN installations i ON i.id = k.installation_id"
            " WHERE k.key_hash = ?1 AND k.revoked_at IS NULL AND k.expires_at > ?2"
            f" AND k.checked_at > ?2 - {CHECKED_FOR_MS}"
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
            "UPDATE agent_keys SET revoked_at = ?1, expires_at = min(expires_at, ?1)"
            " WHERE installation_id = ?2 AND id = ?3 AND revoked_at IS NULL"
        )
        .bind(now, installation_id, key_id)
        .run()
    )
    return result.meta.changes == 1

"""Installations and their activation/rotation codes.

A code is consumed in the same batch that creates or rotates the installation:
the consume is a compare-and-set that stamps a marker unique to this request,
and the installation write only happens where that marker is found. Either
both happen or neither does.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.statuses import Status
from scheduling.ports import Database, DatabaseError, Row, Statement


@dataclass(frozen=True)
class Installation:
    """An installation of the plugin on a Dee Wan site."""

    id: str
    site_id: str
    base_url: str
    token_sealed: str

    @classmethod
    def from_row(cls, row: Row) -> Installation:
        return cls(row["id"], row["site_id"], row["base_url"], row["token_sealed"])


@dataclass(frozen=True)
class ActivationCode:
    """A code the operator minted for activating or rotating an installation."""

    kind: str
    installation_id: str | None
    expires_at: int
    used_at: int | None

    def usable_for(self, action: str, installation_id: str, now: int) -> bool:
        if self.used_at is not None or now >= self.expires_at or self.kind != action:
            return False
        return self.kind == "activate" or self.installation_id == installation_id


async def get(db: Database, installation_id: str) -> Installation | None:
    row = (
        await db.prepare(
            "SELECT id, site_id, base_url, token_sealed FROM installations WHERE id = ?"
        )
        .bind(installation_id)
        .first()
    )
    return Installation.from_row(row) if row else None


# Whether Dee Wan said `plugin_unauthorized` for installation `i` since its token was last set
# and since a launch exchange last succeeded with it (which proves Dee Wan accepts it again; at
# the same millisecond the refusal wins): to a page's call (`i.unauthorized_at`), or to the
# runner (a schedule refused so, read through the partial index `schedules_unauthorized`).
# Only a 401 says it: a 5xx whose body names the code is a retry and locks nothing. Its sessions
# and its agent keys are refused alike while it holds.
GONE_SQL = """coalesce(i.unauthorized_at >= i.token_rotated_at
                AND i.unauthorized_at >= coalesce(i.token_accepted_at, -1), 0) OR EXISTS (
    SELECT 1 FROM schedules
     WHERE installation_id = i.id AND result_code = 'plugin_unauthorized' AND status = 'refused'
       AND updated_at >= i.token_rotated_at AND updated_at >= coalesce(i.token_accepted_at, -1))"""


async def mark_unauthorized(db: Database, installation_id: str, now: int) -> None:
    """Dee Wan answered `plugin_unauthorized` to a call with the installation's token: it no
    longer accepts the installation (uninstalled, or its token replaced). Written once, until
    a rotation gives it a new token or a launch exchange succeeds with it again."""
    await (
        db.prepare(
            "UPDATE installations SET unauthorized_at = ?2"
            " WHERE id = ?1 AND (coalesce(unauthorized_at, -1) < token_rotated_at"
            " OR unauthorized_at < coalesce(token_accepted_at, -1))"
        )
        .bind(installation_id, now)
        .run()
    )


async def insert_code(
    db: Database, code_hash: str, kind: str, installation_id: str | None, now: int, ttl_ms: int
) -> None:
    """Store a new code's hash; expired codes go in the same batch, so none linger."""
    await db.batch(
        [
            db.prepare("DELETE FROM activation_codes WHERE expires_at <= ?").bind(now),
            db.prepare(
                "INSERT INTO activation_codes (code_hash, kind, installation_id, created_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?)"
            ).bind(code_hash, kind, installation_id, now, now + ttl_ms),
        ]
    )


async def find_code(db: Database, code_hash: str) -> ActivationCode | None:
    row = (
        await db.prepare(
            "SELECT kind, installation_id, expires_at, used_at FROM activation_codes WHERE code_hash = ?"
        )
        .bind(code_hash)
        .first()
    )
    if row is None:
        return None
    return ActivationCode(row["kind"], row["installation_id"], row["expires_at"], row["used_at"])


def _consume(db: Database, code_hash: str, marker: str, now: int) -> Statement:
    return db.prepare(
        "UPDATE activation_codes SET used_at = ?, used_by = ?"
        " WHERE code_hash = ? AND used_at IS NULL AND expires_at > ?"
    ).bind(now, marker, code_hash, now)


_CONSUMED_BY_ME = "EXISTS (SELECT 1 FROM activation_codes WHERE code_hash = ? AND used_by = ?)"


class AlreadyExists(Exception):
    pass


async def activate(
    db: Database,
    *,
    code_hash: str,
    marker: str,
    installation_id: str,
    site_id: str,
    base_url: str,
    token_sealed: str,
    now: int,
) -> bool:
    """Consume the code and create the installation; False when the code was taken meanwhile."""
    try:
        results = await db.batch(
            [
                _consume(db, code_hash, marker, now),
                db.prepare(
                    "INSERT INTO installations"
                    " (id, site_id, base_url, token_sealed, created_at, token_rotated_at)"
                    f" SELECT ?, ?, ?, ?, ?, ? WHERE {_CONSUMED_BY_ME}"
                ).bind(
                    installation_id, site_id, base_url, token_sealed, now, now, code_hash, marker
                ),
            ]
        )
    except DatabaseError as exc:
        if exc.constraint:
            raise AlreadyExists(installation_id) from None
        raise
    return results[1].meta.changes == 1


async def rotate(
    db: Database, *, code_hash: str, marker: str, installation_id: str, token_sealed: str, now: int
) -> bool:
    """Consume the code and replace the token; False when the code was taken meanwhile."""
    results = await db.batch(
        [
            _consume(db, code_hash, marker, now),
            db.prepare(
                "UPDATE installations SET token_sealed = ?, token_rotated_at = ?"
                f" WHERE id = ? AND {_CONSUMED_BY_ME}"
            ).bind(token_sealed, now, installation_id, code_hash, marker),
        ]
    )
    return results[1].meta.changes == 1


_NONE_RUNNING = "NOT EXISTS (SELECT 1 FROM schedules WHERE installation_id = ?1 AND status = ?2)"


async def delete_all_data(db: Database, installation_id: str) -> bool:
    """Remove the installation and everything of it (its schedules and releases, sessions, what
    it keeps of its people, codes, agent keys and proposals, notification endpoints and their
    deliveries), unless a schedule is running.

    Each statement re-checks "none running", so a claim that lands between the
    caller's check and this batch leaves everything in place. Returns whether
    the installation was deleted.
    """
    endpoints = "(SELECT id FROM notification_endpoints WHERE installation_id = ?1)"
    statements = [
        "DELETE FROM webhook_deliveries WHERE installation_id = ?1",
        f"DELETE FROM notification_subscriptions WHERE endpoint_id IN {endpoints}",
        "DELETE FROM notification_endpoints WHERE installation_id = ?1",
        "DELETE FROM schedule_attempts WHERE schedule_id IN"
        " (SELECT id FROM schedules WHERE installation_id = ?1)",
        "DELETE FROM schedules WHERE installation_id = ?1",
        "DELETE FROM releases WHERE installation_id = ?1",
        "DELETE FROM schedule_revisions WHERE installation_id = ?1",
        "DELETE FROM sessions WHERE installation_id = ?1",
        "DELETE FROM people WHERE installation_id = ?1",
        "DELETE FROM proposals WHERE installation_id = ?1",
        "DELETE FROM agent_keys WHERE installation_id = ?1",
        "DELETE FROM activation_codes WHERE installation_id = ?1",
        "DELETE FROM installations WHERE id = ?1",
    ]
    results = await db.batch(
        [
            db.prepare(f"{sql} AND {_NONE_RUNNING}").bind(installation_id, Status.RUNNING)
            for sql in statements
        ]
    )
    return results[-1].meta.changes == 1


async def has_running_schedule(db: Database, installation_id: str) -> bool:
    row = (
        await db.prepare(
            "SELECT 1 AS running FROM schedules WHERE installation_id = ? AND status = ? LIMIT 1"
        )
        .bind(installation_id, Status.RUNNING)
        .first()
    )
    return row is not None

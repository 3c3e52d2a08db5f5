"""What Scheduling keeps about a person of an installation, and what is read for them: when
they last launched it (so their first page says what happened since), the installation's
waiting changes over a span of time (the calendar), and their calendar feed's token, hashed.

A feed lives while its person keeps launching Scheduling: `FEED_DAYS` past their latest
launch (which `installations.create` records), and not once the installation is gone (Dee Wan
answered `plugin_unauthorized`, as for sessions).
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.outcomes import LIVE, Status, sql_list
from scheduling.domain.schedules import Schedule
from scheduling.domain.times import DAY_MS
from scheduling.ports import Database
from scheduling.repository.installations import GONE_SQL
from scheduling.repository.schedules import SCHEDULE_COLUMNS, _schedule

FEED_DAYS = 30
# What the first page after a launch reports of a person's schedules: how they ended, and a
# waiting one another's change made stale.
NEWS_ENDINGS = (Status.COMPLETED, Status.REFUSED)


@dataclass(frozen=True)
class Listed:
    """A schedule as the calendar and the news read it, with its title as its editor saw it
    (sealed; None where none was kept)."""

    schedule: Schedule
    title_sealed: str | None


@dataclass(frozen=True)
class Feed:
    """A calendar feed found by its token: whose, and whether it may still be read."""

    installation_id: str
    person_id: str
    whole: bool  # made from a manage launch: every content is named by title
    live: bool  # its person launched within FEED_DAYS and the installation is not gone


_LISTED = f"SELECT {SCHEDULE_COLUMNS}, title_sealed FROM schedules"


WAITING_SQL = (
    f"{_LISTED} INDEXED BY schedules_one_live WHERE installation_id = ?1"
    f" AND status IN {sql_list(LIVE)} AND due_at >= ?2 AND due_at < ?3"
    " ORDER BY due_at, id LIMIT ?4"
)


async def news(
    db: Database, installation_id: str, person_id: str, since: int, limit: int
) -> list[Listed]:
    """The person's schedules that ended, or were made stale, after `since`: newest first."""
    rows = await (
        db.prepare(
            f"{_LISTED} WHERE installation_id = ?1 AND requested_by = ?2"
            f" AND ((status IN {sql_list(NEWS_ENDINGS)} AND updated_at > ?3)"
            f" OR (status = '{Status.PENDING}' AND made_stale_at > ?3))"
            " ORDER BY coalesce(made_stale_at, updated_at) DESC, id LIMIT ?4"
        )
        .bind(installation_id, person_id, since, limit)
        .all()
    )
    return [Listed(_schedule(row), row["title_sealed"]) for row in rows.results]


async def waiting(
    db: Database, installation_id: str, start: int, end: int, limit: int
) -> list[Listed]:
    """The installation's live changes due in [start, end), in time order (at most `limit`):
    read through the partial index of live rows, never the installation's history."""
    rows = await db.prepare(WAITING_SQL).bind(installation_id, start, end, limit).all()
    return [Listed(_schedule(row), row["title_sealed"]) for row in rows.results]


async def feed_made_at(db: Database, installation_id: str, person_id: str) -> int | None:
    """When the person's live feed was made (None: they have none)."""
    row = await (
        db.prepare(
            "SELECT feed_made_at FROM people WHERE installation_id = ? AND person_id = ?"
            " AND feed_hash IS NOT NULL"
        )
        .bind(installation_id, person_id)
        .first()
    )
    return int(row["feed_made_at"]) if row else None


async def set_feed(
    db: Database,
    installation_id: str,
    person_id: str,
    token_hash: str | None,
    now: int,
    *,
    whole: bool = False,
) -> None:
    """The person's feed is now the token of `token_hash` (None: revoked); the one before it
    is answered as unknown from now on."""
    await (
        db.prepare(
            "INSERT INTO people (installation_id, person_id, launched_at, feed_hash, feed_made_at,"
            " feed_whole) VALUES (?1, ?2, ?6, ?3, ?4, ?5) ON CONFLICT (installation_id, person_id)"
            " DO UPDATE SET feed_hash = ?3, feed_made_at = ?4, feed_whole = ?5"
        )
        .bind(installation_id, person_id, token_hash, now if token_hash else None, int(whole), now)
        .run()
    )


async def find_feed(db: Database, token_hash: str, now: int) -> Feed | None:
    row = await (
        db.prepare(
            "SELECT p.installation_id, p.person_id, p.feed_whole, p.launched_at,"
            f" {GONE_SQL} AS gone"
            " FROM people p JOIN installations i ON i.id = p.installation_id"
            " WHERE p.feed_hash = ?"
        )
        .bind(token_hash)
        .first()
    )
    if row is None:
        return None
    live = not row["gone"] and row["launched_at"] + FEED_DAYS * DAY_MS > now
    return Feed(row["installation_id"], row["person_id"], bool(row["feed_whole"]), live)

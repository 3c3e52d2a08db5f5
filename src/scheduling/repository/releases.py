"""Releases as the pages, the agents and the operator read and change them. A release's items
are schedules, written through `schedules.create_all` (a new release, a move, a resume go
first in its batch); its line is kept by migration 0021's triggers, so no statement here moves
an item to its turn.

An item of a release is its latest row at its place (`CURRENT_ITEM`): a re-pin, a move and a
resume make a new row at the same place, and a row replaced from outside the release left it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass, fields

from scheduling.domain.outcomes import LIVE, WAITING, Status, sql_list
from scheduling.domain.schedules import Release, ReleaseStatus
from scheduling.domain.times import ResolvedTime
from scheduling.ports import Database, Row, Statement
from scheduling.repository.schedules import SchedulePage, listing

_STORED = tuple(f.name for f in fields(Release) if f.name not in ("items", "live", "stale"))
# Each release with what its items say: how many, how many live, and how many waiting ones are
# known to be refused (a check found the pin moved, or a collision ran).
CURRENT_ITEM = (
    f"status <> '{Status.SUPERSEDED}' AND NOT EXISTS (SELECT 1 FROM schedules later"
    " WHERE later.release_id = schedules.release_id"
    " AND later.release_position = schedules.release_position"
    " AND (later.created_at, later.rowid) > (schedules.created_at, schedules.rowid))"
)
_COLUMNS = ", ".join(f"r.{name}" for name in _STORED) + (
    ", (SELECT count(*) FROM schedules WHERE schedules.release_id = r.id"
    f" AND {CURRENT_ITEM}) AS items,"
    " (SELECT count(*) FROM schedules i WHERE i.release_id = r.id"
    f" AND i.status IN {sql_list(LIVE)}) AS live,"
    " (SELECT count(*) FROM schedules i WHERE i.release_id = r.id"
    f" AND i.status IN {sql_list(WAITING)}"
    " AND (i.made_stale_by IS NOT NULL OR i.conflict IS NOT NULL)) AS stale"
)
_LISTED = f"SELECT {_COLUMNS} FROM releases r WHERE r.installation_id = ?1"
_ORDER = (
    " ORDER BY CASE r.status WHEN 'held' THEN 0 WHEN 'waiting' THEN 1 ELSE 2 END,"
    " CASE WHEN r.status IN ('held', 'waiting') THEN r.due_at ELSE -r.updated_at END, r.id"
)
# Releases a list shows at most (the waiting ones are bounded by MAX_WAITING_RELEASES).
LISTED = 200


def release_of(row: Row) -> Release:
    values = {name: row[name] for name in (*_STORED, "items", "live", "stale")}
    return Release(**{**values, "status": ReleaseStatus(values["status"])})


def insert(db: Database, release: Release) -> Statement:
    """A new release, waiting: the first statement of the batch that writes its first item."""
    marks = ", ".join("?" * len(_STORED))
    return db.prepare(f"INSERT INTO releases ({', '.join(_STORED)}) VALUES ({marks})").bind(
        *(getattr(release, name) for name in _STORED)
    )


async def get(db: Database, installation_id: str, release_id: str) -> Release | None:
    row = await db.prepare(f"{_LISTED} AND r.id = ?2").bind(installation_id, release_id).first()
    return release_of(row) if row else None


async def of_installation(
    db: Database, installation_id: str, *, open_only: bool = False
) -> list[Release]:
    """The installation's releases: held first, then waiting by time, then (unless
    `open_only`) the ended ones, newest first."""
    where = " AND r.status IN ('waiting', 'held')" if open_only else ""
    found = await db.prepare(f"{_LISTED}{where}{_ORDER} LIMIT {LISTED}").bind(installation_id).all()
    return [release_of(row) for row in found.results]


async def waiting_count(db: Database, installation_id: str) -> int:
    """How many of the installation's releases wait for their time or a person (held)."""
    row = await (
        db.prepare(
            "SELECT count(*) AS n FROM releases WHERE installation_id = ?1"
            " AND status IN ('waiting', 'held')"
        )
        .bind(installation_id)
        .first()
    )
    return int(row["n"]) if row else 0


async def items(
    db: Database, installation_id: str, release_id: str, page_number: int = 1
) -> SchedulePage:
    """A page of the release's items in send order, with their attempts."""
    return await listing(
        db,
        f"installation_id = ?1 AND release_id = ?2 AND {CURRENT_ITEM}",
        (installation_id, release_id),
        order="release_position",
        page_number=page_number,
    )


async def of_schedules(db: Database, release_ids: Sequence[str]) -> dict[str, Release]:
    """The releases of some items, by id (an agent's listing names each item's release)."""
    wanted = sorted({rid for rid in release_ids if rid})
    if not wanted:
        return {}
    found = await (
        db.prepare(
            f"SELECT {_COLUMNS} FROM releases r WHERE r.id IN (SELECT value FROM json_each(?1))"
        )
        .bind(json.dumps(wanted))
        .all()
    )
    return {str(row["id"]): release_of(row) for row in found.results}


async def rename(db: Database, release: Release, name: str, now: int) -> bool:
    result = await (
        db.prepare(
            "UPDATE releases SET name = ?1, updated_at = ?2 WHERE id = ?3 AND installation_id = ?4"
            " AND status IN ('waiting', 'held') RETURNING id"
        )
        .bind(name, now, release.id, release.installation_id)
        .all()
    )
    return len(result.results) == 1


async def reorder(db: Database, release: Release, order: Sequence[str], now: int) -> bool:
    """Give the waiting items of `order` the places 1, 2, … in that order, while the release
    waits for its time and none of its items is being sent; its line's trigger makes the new
    first one its head. False when it no longer may (nothing changed)."""
    placed = json.dumps([[schedule_id, n] for n, schedule_id in enumerate(order, start=1)])
    result = await (
        db.prepare(
            "UPDATE schedules SET release_position = json_extract(p.value, '$[1]'),"
            " updated_at = ?1"
            " FROM json_each(?2) AS p"
            " WHERE schedules.id = json_extract(p.value, '$[0]') AND schedules.release_id = ?3"
            f" AND schedules.status IN {sql_list(WAITING)}"
            " AND EXISTS (SELECT 1 FROM releases r WHERE r.id = ?3 AND r.status = 'waiting'"
            " AND r.due_at > ?1)"
            " AND NOT EXISTS (SELECT 1 FROM schedules busy WHERE busy.release_id = ?3"
            f" AND busy.status IN {sql_list((Status.RETRYING, Status.RUNNING))})"
            " RETURNING schedules.id"
        )
        .bind(now, placed, release.id)
        .all()
    )
    return len(result.results) == len(order)


def moved(db: Database, release: Release, when: ResolvedTime, now: int) -> Statement:
    """The release's new time, first in the batch that makes its live items again there."""
    return db.prepare(
        "UPDATE releases SET due_at = ?1, local_time = ?2, timezone = ?3, fold = ?4,"
        " updated_at = ?5 WHERE id = ?6 AND installation_id = ?7 AND status = 'waiting'"
    ).bind(*astuple(when), now, release.id, release.installation_id)


def resumed(db: Database, release: Release, now: int) -> Statement:
    """A held release waiting again, first in the batch that makes its rest again, due now."""
    return db.prepare(
        "UPDATE releases SET status = 'waiting', held_by = NULL, held_code = NULL,"
        " held_at = NULL, updated_at = ?1 WHERE id = ?2 AND installation_id = ?3"
        " AND status = 'held'"
    ).bind(now, release.id, release.installation_id)


def taken_out(
    db: Database, release: Release, schedule_id: str, person: tuple[str, str], now: int
) -> Statement:
    """An item not done, taken out of its release on a resume: it stands alone, dismissed
    (the person who resumed has seen to it)."""
    person_id, person_name = person
    return db.prepare(
        "UPDATE schedules SET release_id = NULL, release_position = NULL,"
        " dismissed_by = ?1, dismissed_by_name = ?2, dismissed_at = ?3"
        f" WHERE id = ?4 AND release_id = ?5 AND status IN {sql_list((Status.REFUSED, Status.HELD))}"
    ).bind(person_id, person_name, now, schedule_id, release.id)


async def cancel(
    db: Database,
    release: Release,
    schedule_ids: Sequence[str],
    *,
    whole: bool,
    person: tuple[str, str],
    now: int,
) -> list[str]:
    """Cancel the waiting items `schedule_ids` (never calls Dee Wan) and, when `whole`, the
    release itself (first, so its line moves no item to its turn meanwhile); returns the items
    cancelled."""
    person_id, person_name = person
    statements = []
    if whole:
        statements.append(
            db.prepare(
                "UPDATE releases SET status = 'cancelled', ended_at = ?1, updated_at = ?1,"
                " held_by = NULL, held_code = NULL, held_at = NULL, cancelled_by_name = ?2"
                " WHERE id = ?3 AND installation_id = ?4 AND status IN ('waiting', 'held')"
            ).bind(now, person_name, release.id, release.installation_id)
        )
    statements.append(
        db.prepare(
            "UPDATE schedules SET status = 'cancelled', next_attempt_at = NULL, updated_at = ?1,"
            " cancelled_by = ?2, cancelled_by_name = ?3, cancelled_at = ?1"
            " WHERE id IN (SELECT value FROM json_each(?4)) AND release_id = ?5"
            f" AND status IN {sql_list(WAITING)} RETURNING id"
        ).bind(now, person_id, person_name, json.dumps(list(schedule_ids)), release.id)
    )
    results = await db.batch(statements)
    return [str(row["id"]) for row in results[-1].results]


async def record_check(
    db: Database,
    release: Release,
    found: Mapping[str, str | None],
    checked_by_name: str,
    now: int,
) -> None:
    """What a check found of each item it read (`found`: schedule id → what moved, None while
    its pin is current), and when and by whom it was checked. Only waiting items change."""
    statements = [
        db.prepare("UPDATE releases SET checked_at = ?1, checked_by_name = ?2 WHERE id = ?3").bind(
            now, checked_by_name, release.id
        )
    ]
    if found:
        statements.append(
            db.prepare(
                "UPDATE schedules SET conflict = json_extract(c.value, '$[1]'),"
                " conflict_at = CASE WHEN json_extract(c.value, '$[1]') IS NULL THEN NULL"
                " ELSE coalesce(schedules.conflict_at, ?1) END"
                " FROM json_each(?2) AS c"
                " WHERE schedules.id = json_extract(c.value, '$[0]') AND schedules.release_id = ?3"
                f" AND schedules.status IN {sql_list(WAITING)}"
            ).bind(now, json.dumps([[sid, what] for sid, what in found.items()]), release.id)
        )
    await db.batch(statements)


# What /admin shows: the releases by status, and the held ones (the longest held first).
COUNTS_SQL = "SELECT status, count(*) AS n FROM releases GROUP BY status"
HELD_SQL = """SELECT id, installation_id, name, held_by, held_code, held_at
  FROM releases WHERE status = 'held' ORDER BY held_at, id LIMIT 50"""


def read_counts(db: Database) -> Statement:
    return db.prepare(COUNTS_SQL)


def read_held(db: Database) -> Statement:
    return db.prepare(HELD_SQL)


@dataclass(frozen=True)
class HeldRelease:
    """A held release, as the operator page lists it."""

    id: str
    installation_id: str
    name: str
    held_by: str
    held_code: str | None
    held_at: int


def held_from(rows: Sequence[Row]) -> tuple[HeldRelease, ...]:
    return tuple(HeldRelease(**row) for row in rows)


def counts_from(rows: Sequence[Row]) -> dict[str, int]:
    counted = {str(row["status"]): int(row["n"]) for row in rows}
    return {status.value: counted.get(status.value, 0) for status in ReleaseStatus}

"""Installations and what their people hold: activation and rotation codes, consumed in the
same batch that creates or rotates the installation; agent keys, kept as their hash, listed
with their last use, revoked, and renewed with their person's sessions; the management
pages' sessions, kept as their cookie's hash with what their content's last read offered;
and calls counted by key over a minute, for their limits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from urllib.parse import urlencode

from scheduling.domain.outcomes import Status
from scheduling.domain.schedules import Change, Rights
from scheduling.limits import WINDOW_MS, Call, CallLimit, wait_ms
from scheduling.ports import Database, DatabaseError, Row, Statement

# -- installations and their codes -----------------------------------------------------------------


@dataclass(frozen=True)
class Installation:
    """An installation of the plugin on a Dee Wan site."""

    id: str
    site_id: str
    base_url: str
    token_sealed: str


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
    return Installation(**row) if row else None


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
    return ActivationCode(**row) if row else None


# A change a code allows, made only where the code was consumed in the same batch.
_CONSUMED_BY_ME = "EXISTS (SELECT 1 FROM activation_codes WHERE code_hash = ? AND used_by = ?)"


async def _consuming(
    db: Database, code_hash: str, marker: str, now: int, change: Statement
) -> bool:
    """Consume the code (`marker` says by whom) and make `change`; False when the code was
    taken meanwhile."""
    consume = db.prepare(
        "UPDATE activation_codes SET used_at = ?, used_by = ?"
        " WHERE code_hash = ? AND used_at IS NULL AND expires_at > ?"
    ).bind(now, marker, code_hash, now)
    results = await db.batch([consume, change])
    return results[1].meta.changes == 1


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
    create = db.prepare(
        "INSERT INTO installations (id, site_id, base_url, token_sealed, created_at,"
        f" token_rotated_at) SELECT ?, ?, ?, ?, ?, ? WHERE {_CONSUMED_BY_ME}"
    ).bind(installation_id, site_id, base_url, token_sealed, now, now, code_hash, marker)
    try:
        return await _consuming(db, code_hash, marker, now, create)
    except DatabaseError as exc:
        if exc.constraint:
            raise AlreadyExists(installation_id) from None
        raise


async def rotate(
    db: Database, *, code_hash: str, marker: str, installation_id: str, token_sealed: str, now: int
) -> bool:
    """Consume the code and replace the token; False when the code was taken meanwhile."""
    replace_token = db.prepare(
        "UPDATE installations SET token_sealed = ?, token_rotated_at = ?"
        f" WHERE id = ? AND {_CONSUMED_BY_ME}"
    ).bind(token_sealed, now, installation_id, code_hash, marker)
    return await _consuming(db, code_hash, marker, now, replace_token)


_NONE_RUNNING = "NOT EXISTS (SELECT 1 FROM schedules WHERE installation_id = ?1 AND status = ?2)"


async def delete_all_data(db: Database, installation_id: str) -> bool:
    """Remove the installation and everything of it, unless a schedule is running; returns
    whether it was deleted. Each statement re-checks "none running", so a claim that lands
    between the caller's check and this batch leaves everything in place."""
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


# -- agent keys ------------------------------------------------------------------------------------

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


_KEY_FIELDS = tuple(f.name for f in fields(AgentKey) if f.name != "offered")
_KEY_COLUMNS = ", ".join((*_KEY_FIELDS, "offered_transitions"))


def _key(row: Row) -> AgentKey:
    offered = row["offered_transitions"]
    return AgentKey(
        **{name: row[name] for name in _KEY_FIELDS},
        offered=None if offered == EVERY_CHANGE else _changes(offered),
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


async def insert_key(db: Database, key: AgentKey, key_hash: str) -> None:
    values = (*(getattr(key, name) for name in _KEY_FIELDS), _offered_text(key.offered))
    marks = ", ".join("?" * (len(values) + 1))
    await (
        db.prepare(f"INSERT INTO agent_keys ({_KEY_COLUMNS}, key_hash) VALUES ({marks})")
        .bind(*values, key_hash)
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


async def find_live_key(db: Database, key_hash: str, now: int) -> AgentKey | None:
    """The key with this hash, unless it ended (expired or revoked), its person's rights were
    not confirmed within `CHECKED_FOR_MS`, or its installation was uninstalled; its use noted
    (at most once a minute, so reads stay reads)."""
    columns = ", ".join(f"k.{name}" for name in _KEY_COLUMNS.split(", "))
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
            f"SELECT {_KEY_COLUMNS} FROM agent_keys WHERE installation_id = ? AND revoked_at IS NULL"
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


# -- sessions --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Session:
    """A person's session, opened from a Dee Wan launch."""

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
    offered: frozenset[Change] | None  # None until a content page was shown
    # An endpoint whose new signing secret this session's next manage page shows, once.
    reveal_endpoint_id: str | None = None
    # Dee Wan answered `plugin_unauthorized` for the installation since its token was last
    # set: it was uninstalled, and the session may do nothing more.
    installation_gone: bool = False
    notice: str | None = None  # what its next manage page says, once
    tab: str | None = None  # the launch's public handle (None: opened before handles)
    news_since: int | None = None  # its first page says what happened since then (once)

    def href(self, sub: str = "", query: Iterable[tuple[str, str]] = ()) -> str:
        """The address of one of its installation's pages (`sub`: `/calendar`…), within this
        launch: its handle first, then `query`."""
        pairs = [*([("tab", self.tab)] if self.tab else []), *query]
        path = f"/installations/{self.installation_id}{sub}"
        return f"{path}?{urlencode(pairs)}" if pairs else path

    @property
    def opened_for(self) -> str:
        """What its page was opened for; forms carry it so a replaced session is told apart."""
        return self.content_id or "manage"

    def having_read(self, primary_id: str, offered: Iterable[Change]) -> Session:
        """The session as a read of its content leaves it (`remember_read` keeps the same)."""
        primary = self.content_primary_id or primary_id
        return replace(self, content_primary_id=primary, offered=frozenset(offered))

    @property
    def rights(self) -> Rights:
        """What this person may change, as Dee Wan listed it when their page was shown."""
        if self.context_kind == "manage":
            return Rights.everything()
        return Rights.of_content(self.content_primary_id, self.offered or ())


# Stored as they are read; `offered` is stored as JSON, `installation_gone` is computed.
_FIELDS = tuple(f.name for f in fields(Session) if f.name not in ("offered", "installation_gone"))
_COLUMNS = ", ".join((*_FIELDS, "offered_transitions"))


def _session(row: Row) -> Session:
    offered = row["offered_transitions"]
    return Session(
        **{name: row[name] for name in _FIELDS},
        offered=None if offered is None else _changes(offered),
        installation_gone=bool(row.get("installation_gone")),
    )


def _changes(text: str) -> frozenset[Change]:
    return frozenset((str(kind), str(to)) for kind, to in json.loads(text))


def _text(offered: Iterable[Change]) -> str:
    return json.dumps(sorted(offered), separators=(",", ":"))


# What a launch stores of its session, in the order `create` binds it (the rest comes later).
_LATER = ("content_primary_id", "reveal_endpoint_id", "notice", "news_since")
_OPENED = tuple(name for name in _FIELDS if name not in _LATER)


async def create(
    db: Database, session: Session, *, delegation_expires_at: int, now: int, forget_before: int = 0
) -> None:
    """Insert the session; expired sessions go in the same batch, so delegations do not linger.
    Its launch exchange just succeeded with the installation's token: Dee Wan accepts it, and
    on a manage launch it confirmed the person may manage still (their manage keys renewed).
    The person's previous launch is what its first page reports news since; this launch is
    their latest (a calendar feed of theirs lives on from it). People of any installation
    who last launched before `forget_before` (the retention window) are forgotten in the same
    batch, a bounded number at a time (`people_by_launch`), at no cost to the runner's ticks."""
    installation_id, person_id = session.installation_id, session.person_id
    manage = session.context_kind == "manage"
    renewed = [renew(db, installation_id, person_id, now)] if manage else []
    await db.batch(
        [
            *renewed,
            db.prepare("DELETE FROM sessions WHERE expires_at <= ?").bind(now),
            db.prepare(FORGET_PEOPLE_SQL).bind(forget_before),
            db.prepare("UPDATE installations SET token_accepted_at = ?2 WHERE id = ?1").bind(
                installation_id, now
            ),
            db.prepare(
                f"INSERT INTO sessions ({', '.join(_OPENED)}, delegation_expires_at, created_at,"
                " news_since) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,"
                " (SELECT launched_at FROM people WHERE installation_id = ?2 AND person_id = ?4))"
            ).bind(*(getattr(session, name) for name in _OPENED), delegation_expires_at, now),
            db.prepare(
                "INSERT INTO people (installation_id, person_id, launched_at) VALUES (?1, ?2, ?3)"
                " ON CONFLICT (installation_id, person_id) DO UPDATE SET launched_at = ?3"
            ).bind(installation_id, person_id, now),
        ]
    )


FORGET_PEOPLE_SQL = """DELETE FROM people WHERE rowid IN (
    SELECT rowid FROM people WHERE launched_at < ? LIMIT 100)"""


FIND_LIVE_SQL = (
    "SELECT "
    + ", ".join(f"s.{column}" for column in _COLUMNS.split(", "))
    + f", {GONE_SQL} AS installation_gone"
    " FROM sessions s JOIN installations i ON i.id = s.installation_id"
    " WHERE s.id_hash = ? AND s.expires_at > ?"
)


async def find_live_session(db: Database, id_hash: str, now: int) -> Session | None:
    """The live session of this hash, and whether its installation is gone (one statement)."""
    row = await db.prepare(FIND_LIVE_SQL).bind(id_hash, now).first()
    return _session(row) if row else None


async def installation_of(db: Database, id_hash: str) -> str | None:
    """The installation a session was opened for, whether or not it has ended (until it is
    deleted): an error page links back to that installation's Dee Wan."""
    row = (
        await db.prepare("SELECT installation_id FROM sessions WHERE id_hash = ?")
        .bind(id_hash)
        .first()
    )
    return str(row["installation_id"]) if row else None


async def remember_read(
    db: Database, session: Session, primary_id: str, offered: Iterable[Change], now: int
) -> None:
    """Keep what a content read said: its primary id (learnt once) and the changes offered,
    with the person's agent keys of that content (their rights just confirmed). Writes on a
    session's first read, and when what was offered changed."""
    changes = frozenset(offered)
    if session.content_primary_id is not None and session.offered == changes:
        return
    primary = session.content_primary_id or primary_id
    await db.batch(
        [
            db.prepare(
                "UPDATE sessions SET content_primary_id = ?, offered_transitions = ?"
                " WHERE id_hash = ?"
            ).bind(primary, _text(changes), session.id_hash),
            renew(db, session.installation_id, session.person_id, now, primary, changes),
        ]
    )


async def reveal_next(db: Database, id_hash: str, endpoint_id: str) -> None:
    """The session's next manage page shows this endpoint's signing secret (once)."""
    await (
        db.prepare("UPDATE sessions SET reveal_endpoint_id = ? WHERE id_hash = ?")
        .bind(endpoint_id, id_hash)
        .run()
    )


async def _take(db: Database, id_hash: str, column: str, value: str | int | None) -> bool:
    """Clear a once-shown `column` still holding `value`: True for the one page that took it
    (of two pages loaded at once, one)."""
    if value is None:
        return False
    taken = await (
        db.prepare(f"UPDATE sessions SET {column} = NULL WHERE id_hash = ? AND {column} = ?")
        .bind(id_hash, value)
        .run()
    )
    return taken.meta.changes == 1


async def take_reveal(db: Database, session: Session) -> str | None:
    """The endpoint whose secret to show now, taken so no later page shows it again."""
    found = await _take(db, session.id_hash, "reveal_endpoint_id", session.reveal_endpoint_id)
    return session.reveal_endpoint_id if found else None


async def say_next(db: Database, id_hash: str, notice: str) -> None:
    """The session's next manage page says `notice` (once): what an action did to something
    that is gone since (a deleted endpoint)."""
    await db.prepare("UPDATE sessions SET notice = ? WHERE id_hash = ?").bind(notice, id_hash).run()


async def take_notice(db: Database, session: Session) -> str | None:
    """The notice to show now, taken so no later page shows it again."""
    return session.notice if await _take(db, session.id_hash, "notice", session.notice) else None


async def take_news_since(db: Database, session: Session) -> int | None:
    """Since when its first page reports what happened (its person's previous launch), taken
    so no later page reports it again."""
    found = await _take(db, session.id_hash, "news_since", session.news_since)
    return session.news_since if found else None


# -- calls counted for their limits ----------------------------------------------------------------

# With no limit on calls at once, a count no key reaches.
_UNLIMITED = 1 << 30

_PRUNE = "DELETE FROM throttle_slots WHERE started_at <= ?1"
# ?1 key, ?2 token, ?3 now, ?4 busy until, ?5 per minute, ?6 at once.
_TAKE = """
INSERT INTO throttle_slots (key, token, started_at, busy_until)
SELECT ?1, ?2, ?3, ?4
 WHERE (SELECT count(*) FROM throttle_slots WHERE key = ?1) < ?5
   AND (SELECT count(*) FROM throttle_slots WHERE key = ?1 AND busy_until > ?3) < ?6
"""
_CALLS = "SELECT token, started_at, busy_until FROM throttle_slots WHERE key = ?1"


@dataclass(frozen=True)
class Taken:
    """A call counted against a throttle's limit."""

    key: str
    token: str


async def take(db: Database, key: str, limit: CallLimit, token: str, now: int) -> Taken | int:
    """A place for one call of `key` at `now`, or how many ms until there is one."""
    at_once = limit.at_once if limit.at_once is not None else _UNLIMITED
    place = (key, token, now, now + limit.hold_ms, limit.per_minute, at_once)
    _, taken, calls = await db.batch(
        [
            db.prepare(_PRUNE).bind(now - WINDOW_MS),
            db.prepare(_TAKE).bind(*place),
            db.prepare(_CALLS).bind(key),
        ]
    )
    if taken.meta.changes == 1:
        return Taken(key, token)
    rows = calls.results
    # Said by the rule over what the key holds now (never 0: it was just refused).
    return max(1, wait_ms(limit, (Call(r["started_at"], r["busy_until"]) for r in rows), now))


async def release(db: Database, taken: Taken, now: int) -> None:
    """The call has ended: no longer under way (it still counts for its minute)."""
    await (
        db.prepare("UPDATE throttle_slots SET busy_until = ?3 WHERE key = ?1 AND token = ?2")
        .bind(taken.key, taken.token, now)
        .run()
    )


async def give_back(db: Database, taken: Taken) -> None:
    """The call was not made after all (another limit refused it): it does not count."""
    await (
        db.prepare("DELETE FROM throttle_slots WHERE key = ?1 AND token = ?2")
        .bind(taken.key, taken.token)
        .run()
    )
